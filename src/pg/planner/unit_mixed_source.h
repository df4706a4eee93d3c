// Privacy units: count_units mixed with other aggregates (or several grouped ones) through the unit
// profile: the kept rows, each unit's first counted row flagged by a window without a rank (unitmixed).
#pragma once

#include "pg/planner/unit_source.h"

#include <string>

namespace dxpriv::pg {

// True when spec has count_units aggregates whose flags the profile-bounded rows may carry instead of
// the hash pass: the profile applies to the rows (profile_bounding_applies with spec's count_units
// ignored), no flag columns (open keys), no grouping sets, not a Citus table. Every statement shape
// the hash pass serves is served (the source has the same columns and flags of the same meaning);
// unit_distinct_applies (one row per unit) is asked first and preferred.
bool unit_mixed_applies(Query *q, const UnitSource &spec);

// The SQL of the bounded rows under unit_mixed_applies. level0 is the innermost level, with the
// profile's keep qual and the columns dx_c<i>, dx_u, grouped dx_g, dx_w<j>. Every kept row is one
// output row with its columns dx_c<i> and flags dx_d<j>: flag j is true on exactly one kept row per
// unit (grouped: per unit and group dx_g) among those whose dx_w<j> is not NULL, the first in the
// window's order (count(dx_w<j>) OVER (PARTITION BY unit[, group] ROWS UNBOUNDED PRECEDING) = 1,
// one window, no ORDER BY: one sort of the kept rows by unit[, group]), on none of a unit without
// such a row. The hash pass flags its first such row in rank order, so every count_units answer is
// the same number (a NULL unit is one partition, one unit, as there). The table is read once (an
// analyst's statement reads one protected table).
std::string unit_mixed_sql(const std::string &level0, const UnitSource &spec);

} // namespace dxpriv::pg
