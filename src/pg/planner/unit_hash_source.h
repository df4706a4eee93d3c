// Privacy units: the SQL of the sort-free bounding (one hash pass per statement, parallel).
#pragma once

#include "pg/planner/unit_source.h"

#include <string>

namespace dxpriv::pg {

// The bounded rows of `level0` (the SQL of replace_with_unit_source's innermost level: columns
// dx_c<i>, the unit dx_u, the rank dx_h, grouped dx_g, and per count_units aggregate dx_w<j>) by
// dx._unit_bound (executor/unit_bound.cpp: each unit keeps its spec.bound.max_rows rows of smallest
// dx_h, exactly the rows of the window-function plan) and dx._unit_rows: a SELECT whose columns are
// dx_c<i> (the kept rows' values, their types unchanged) and dx_d<j> (the count_units flags: true on
// the unit's first kept row, in rank order, whose dx_w<j> is not NULL, within its group dx_g when
// grouped), one row per kept row.
std::string hash_bounded_sql(const std::string &level0, const UnitSource &spec);

} // namespace dxpriv::pg
