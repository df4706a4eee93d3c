// Dropping output groups that no declared point passing WHERE falls in (group_pruning.h).
#include "pg/planner/group_pruning.h"

#include "pg/guard.h"

namespace dxpriv::pg {

// See group_pruning.h.
size_t
prune_groups_without_rows(GroupKeys &keys, std::vector<std::vector<double>> &q_cells, int cells_per_group,
                          const std::vector<size_t> &group_of, const std::vector<double> &where)
{
	const size_t groups = keys.groups;
	if (group_of.size() != where.size() || keys.representative.size() != groups ||
	    q_cells.size() != groups * static_cast<size_t>(cells_per_group))
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv: group pruning received inconsistent groups");
	std::vector<char> live(groups, 0);
	for (size_t u = 0; u < where.size(); ++u)
		if (where[u] != 0 && group_of[u] < groups)
			live[group_of[u]] = 1;
	std::vector<size_t> renumber(groups, 0);
	size_t kept = 0;
	for (size_t g = 0; g < groups; ++g)
		if (live[g])
			renumber[g] = kept++;
	if (kept == 0 || kept == groups)
		return 0;
	std::vector<std::vector<double>> cells;
	cells.reserve(kept * static_cast<size_t>(cells_per_group));
	std::vector<size_t> representative;
	for (size_t g = 0; g < groups; ++g) {
		if (!live[g])
			continue;
		representative.push_back(keys.representative[g]);
		for (int c = 0; c < cells_per_group; ++c)
			cells.push_back(std::move(q_cells[g * static_cast<size_t>(cells_per_group) + static_cast<size_t>(c)]));
	}
	for (size_t k = 0; k < keys.value.size(); ++k) {
		std::vector<Datum> value;
		std::vector<char> is_null;
		for (size_t g = 0; g < groups; ++g)
			if (live[g]) {
				value.push_back(keys.value[k][g]);
				is_null.push_back(keys.is_null[k][g]);
			}
		keys.value[k] = std::move(value);
		keys.is_null[k] = std::move(is_null);
	}
	for (size_t &g : keys.group_of_point)
		g = g < groups && live[g] ? renumber[g] : 0;
	keys.representative = std::move(representative);
	keys.groups = kept;
	q_cells = std::move(cells);
	return groups - kept;
}

} // namespace dxpriv::pg
