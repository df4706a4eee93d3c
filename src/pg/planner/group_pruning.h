// Groups that cannot have rows: output groups of a GROUP BY on declared keys that no declared
// point passing WHERE falls in are dropped at analysis (a data-independent decision: the domains and
// the WHERE clause only), under dxpriv.postprocess. A 7-day WHERE grouped by day returns 7 groups,
// not 366 of which 359 are noise around an exact 0.
#pragma once

#include "pg/planner/group_keys.h"

#include <vector>

namespace dxpriv::pg {

// where: per point of the release's sub-universe, non-zero when WHERE holds there; group_of: per
// such point, its output group. Renumbers keys (groups, representative, value, is_null and
// group_of_point, where a point of a dropped group goes to group 0: its rows fail WHERE, so they
// add nothing) and keeps only the live groups' cells in q_cells (cell g * cells_per_group + c), in
// their order. Drops nothing when no group is live. Returns the number of groups dropped.
size_t prune_groups_without_rows(GroupKeys &keys, std::vector<std::vector<double>> &q_cells, int cells_per_group,
                                 const std::vector<size_t> &group_of, const std::vector<double> &where);

} // namespace dxpriv::pg
