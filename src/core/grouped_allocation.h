// Multi-cell allocation for statements grouped by a column with an all-pairs metric (discrete,
// per_value): the rows between two groups are never built in full; they are generated where the
// allocation violates them and every one of them is checked exactly at the end (issue 23).
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "core/allocation.h"

namespace dxpriv {

// The reduction applies only when the reference would build at least this many rows between
// groups (below it the reference is cheap and is kept, bit for bit).
constexpr double kGroupedMinPairRows = 20000;

// What plan_multi_linear_grouped did (for tests, benchmarks and explain).
struct GroupedStats {
	std::size_t key_columns = 0;    // columns whose pair rows were not built
	double pair_rows = 0;           // rows the reference would have offered between groups
	std::size_t base_rows = 0;      // rows built without them (presence, other columns, singles)
	std::size_t generated_rows = 0; // pair rows added by constraint generation (raw + rounded)
	std::size_t rounds = 0;         // allocations run (raw + rounded)
	double pair_ratio = 0;          // final exact max over every pair row (see grouped_pair_ratio)
	bool fell_back = false;         // the exact check failed: nullopt was returned
};

// The same plan as plan_multi_linear(sub, q, epsilon, request) (allocation.h), computed without
// handing the allocator the rows between two points of a key column. A key column is one whose
// metric is Discrete or PerValue with L >= 2 points, all at finite positive distances of the form
// d(i, j) = min(e_i, e_j), on whose every line each cell is non-zero at one point at most (GROUP BY
// cells keyed on it). There the reference's row of the edge (u, v) is (|q(u)| + |q(v)|) / d(u, v):
// the two points' presence terms over the distance. The allocation is the optimum of a convex
// problem (min sum_k w_k b_k^2 over private scales, with the relative strategy's caps), so the
// same optimum over a relaxation that turns out feasible for every row is the same allocation up
// to the solver's tolerance. Steps: the rows of sub with the key columns' metric None (presence
// rows, other columns' edges) plus, per point, its presence term over its smallest key distance
// (the part of a pair row on one group: it keeps every column maximum, estimate error and cap of
// the reference exactly); allocate; for every line the pair of points with the largest
// (t_u + t_v) / d(u, v), t_u = sum_k |q_k(u)| / (b_k eps) (top two under a uniform distance, a
// sweep by e_i otherwise; per budget block too), added when it exceeds 1 + 1e-12; repeat. Grids as
// plan_multi_linear, on the grid-rounded weights again. Privacy never depends on the reduction:
// the final scales are checked against every pair row of every line exactly (O(points) per key
// column) and against the built rows (check_allocation); if either fails, or the statement is
// outside the shape (no key column, m < 2, fewer than min_pair_rows pair rows, a non-finite
// weight, sizes that do not match), nullopt is returned and the caller runs the reference.
// Throws like plan_multi_linear. `stats` (optional) is filled either way.
std::optional<MultiLinearPlan> plan_multi_linear_grouped(const SubUniverse &sub,
                                                         const std::vector<std::vector<double>> &q, double epsilon,
                                                         const AllocationRequest &request,
                                                         GroupedStats *stats = nullptr,
                                                         double min_pair_rows = kGroupedMinPairRows);

// Exact max over the rows between two points of a key column (as plan_multi_linear_grouped finds
// them) of sum_k r_k / (b_k * eps), and, with budget blocks, of each block's part over its own
// epsilon: <= 1 means every such row is satisfied. +inf when a row has a positive entry on a cell
// with scale 0. 0 when there is no key column. For tests (against privacy_ratio over
// build_constraints) and for the final check.
double grouped_pair_ratio(const SubUniverse &sub, const std::vector<std::vector<double>> &q,
                          const std::vector<double> &scales, double epsilon, const AllocationRequest &request);

namespace detail {
// Test switch: false stops constraint generation after the first allocation (the pair rows are
// then never added), so that the final exact check must catch the violation and fall back.
void set_grouped_generation(bool on);
} // namespace detail

} // namespace dxpriv
