// Privacy units: count_units through the unit profile, one row per unit (unitdistinct).
#pragma once

#include "pg/planner/unit_source.h"

#include <string>

namespace dxpriv::pg {

// True when spec's count_units flags may be computed from the profile-bounded rows without the hash
// pass: the profile applies to the rows (profile_bounding_applies with spec's count_units ignored),
// the statement is ungrouped, has count_units aggregates and no flag columns, and q (the statement
// being rewritten, its table still range table entry 1) reads no column of the table outside the
// bounded source (its target list, HAVING and WHERE hold only the flag placeholders): every
// aggregate is a count_units, whose answer depends only on the flags. Then, ungrouped, the
// hash pass's flag of unit u for aggregate j (true on u's first kept row, in rank order, whose
// dx_w<j> is not NULL) is true on exactly one row of u when u has a kept row with dx_w<j> not NULL,
// and on none otherwise: one row per unit carrying bool_or(dx_w<j> IS NOT NULL) gives every count
// exactly (a NULL unit is one unit, as in the hash pass).
bool unit_distinct_applies(Query *q, const UnitSource &spec);

// The SQL of the bounded source's rows under unit_distinct_applies: level0 is the innermost level
// with the profile's keep qual (columns dx_c<i>, dx_u, dx_w<j>); the result has the columns dx_c<i>
// (typed NULLs: nothing reads them) and dx_d<j>, one row per unit with a kept row whose dx_w<j> is
// not NULL for some j (one aggregate: DISTINCT ON (dx_u), a sort and a Unique; several: GROUP BY
// dx_u with bool_or).
std::string unit_distinct_sql(const std::string &level0, const UnitSource &spec);

} // namespace dxpriv::pg
