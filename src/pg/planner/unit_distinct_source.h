// Privacy units: count_units through the unit profile, one row per unit (unitdistinct).
#pragma once

#include "pg/planner/unit_source.h"

#include <string>

namespace dxpriv::pg {

// True when spec's count_units flags may be computed from the profile-bounded rows without the hash
// pass: the profile applies to the rows (profile_bounding_applies with spec's count_units ignored),
// there are no flag columns (open keys), no grouping sets (on a Citus table: it is distributed by the
// unit column and the rows are bounded per shard, unit_shard_source.h, whose groups come from one
// state, without empty-group rows; the DISTINCT ON the unit runs in each shard's task), and every aggregate
// of q (the statement being rewritten, its table still range table entry 1) reads a count_units
// flag placeholder (so its answer depends only on the flags; a one-pass count(*) reads none).
// Ungrouped, q must read no column of the table outside the source: the hash pass's flag of unit u
// for aggregate j (true on u's first kept row, in rank order, whose dx_w<j> is not NULL) is true on
// exactly one row of u when u has a kept row with dx_w<j> not NULL, and on none otherwise, so one
// row per unit carrying bool_or(dx_w<j> IS NOT NULL) gives every count exactly (a NULL unit is one
// unit, as in the hash pass). Grouped (one count_units aggregate, with the empty-group rows): the
// same per (unit, group), one row carrying its own columns, from which q computes the group.
bool unit_distinct_applies(Query *q, const UnitSource &spec);

// The SQL of the bounded source's rows under unit_distinct_applies: level0 is the innermost level
// with the profile's keep qual (columns dx_c<i>, dx_u, grouped dx_g, dx_w<j>). Ungrouped, the result
// has the columns dx_c<i> (typed NULLs: nothing reads them) and dx_d<j>, one row per unit with a
// kept row whose dx_w<j> is not NULL for some j; grouped, DISTINCT ON (dx_u, dx_g) of the rows
// whose dx_w0 is not NULL, with their columns and dx_d0 = true (one aggregate: DISTINCT ON (dx_u), a sort and a Unique; several: GROUP BY
// dx_u with bool_or).
std::string unit_distinct_sql(const std::string &level0, const UnitSource &spec);

} // namespace dxpriv::pg
