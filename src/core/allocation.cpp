// Multi-linear queries: the strategy names, the allocation entry point and per-cell noise plans.
// Constraint building lives in allocation_constraints.cpp, the heuristic strategies in
// allocation_heuristics.cpp and the exact solver in allocation_solver.cpp.
#include "core/allocation.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "core/allocation_internal.h"
#include "core/error.h"

namespace dxpriv {

namespace detail {

// Rejects an epsilon that is not a positive finite number.
void
check_epsilon(double epsilon)
{
	if (!std::isfinite(epsilon) || !(epsilon > 0))
		throw CoreError(ErrorKind::InvalidParameter, "epsilon must be positive and finite",
		                "Give the query a positive privacy budget.");
}

} // namespace detail

using namespace detail;

// SQL-facing name of a strategy.
const char *
strategy_name(AllocationStrategy s)
{
	switch (s) {
	case AllocationStrategy::EqualSplit:
		return "equal_split";
	case AllocationStrategy::EqualScale:
		return "equal_scale";
	case AllocationStrategy::BudgetDistribution:
		return "algorithm3";
	case AllocationStrategy::Optimal:
		return "optimal";
	}
	return "unknown";
}

// Strategy from its name (case-insensitive).
bool
parse_strategy(const std::string &name, AllocationStrategy &out)
{
	std::string lower(name);
	for (char &ch : lower)
		ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
	for (AllocationStrategy s : {AllocationStrategy::EqualSplit, AllocationStrategy::EqualScale,
	                             AllocationStrategy::BudgetDistribution, AllocationStrategy::Optimal})
		if (lower == strategy_name(s)) {
			out = s;
			return true;
		}
	return false;
}

// Laplace scales of the cells under the chosen strategy.
std::vector<double>
allocate(const ConstraintSet &c, AllocationStrategy s, double epsilon, AllocationStats *stats)
{
	check_epsilon(epsilon);
	if (c.cells == 0 || c.value_start.size() != c.index_start.size() || c.value_start.back() != c.values.size())
		throw CoreError(ErrorKind::Internal, "malformed constraint set");
	if (stats)
		*stats = AllocationStats{};
	std::vector<std::size_t> argmax;
	const std::vector<double> colmax = column_max(c, &argmax);
	std::size_t n_active = 0;
	for (double v : colmax)
		n_active += v > 0;
	if (stats)
		stats->winner = s;
	if (n_active <= 1) // one noisy cell: s/epsilon is optimal for every strategy
		return equal_split(colmax, n_active, epsilon);

	switch (s) {
	case AllocationStrategy::EqualSplit:
		return equal_split(colmax, n_active, epsilon);
	case AllocationStrategy::EqualScale:
		return equal_scale(c, colmax, epsilon);
	case AllocationStrategy::BudgetDistribution:
		return scales_from_inverse(c, water_fill(c, colmax, epsilon, nullptr), epsilon);
	case AllocationStrategy::Optimal:
		break;
	}

	std::vector<std::size_t> binding;
	const std::vector<double> x3 = water_fill(c, colmax, epsilon, &binding);
	std::vector<double> best = scales_from_inverse(c, x3, epsilon);
	AllocationStrategy winner = AllocationStrategy::BudgetDistribution;
	for (auto [cand, who] : {std::make_pair(equal_split(colmax, n_active, epsilon), AllocationStrategy::EqualSplit),
	                         std::make_pair(equal_scale(c, colmax, epsilon), AllocationStrategy::EqualScale)})
		if (sum_squares(cand) < sum_squares(best)) {
			best = cand;
			winner = who;
		}
	const std::vector<double> x = optimal_inverse(c, colmax, argmax, x3, binding, epsilon, stats);
	if (!x.empty()) {
		std::vector<double> b = scales_from_inverse(c, x, epsilon);
		if (sum_squares(b) <= sum_squares(best)) {
			best = b;
			winner = AllocationStrategy::Optimal;
		}
	}
	if (stats)
		stats->winner = winner;
	return best;
}
// Calibrates several cells of one query together (grids as plan_linear_query, then allocation).
MultiLinearPlan
plan_multi_linear(const SubUniverse &sub, const std::vector<std::vector<double>> &q, double epsilon,
                  AllocationStrategy s, ConstraintSet *constraints)
{
	check_epsilon(epsilon);
	const std::size_t m = q.size();
	if (m == 1) { // one cell: the single-query calibration, without enumerating pair constraints
		MultiLinearPlan plan;
		plan.strategy = s;
		plan.cells.push_back(plan_linear_query(sub, q[0], epsilon));
		if (constraints)
			*constraints = ConstraintSet();
		return plan;
	}
	ConstraintSet raw = build_constraints(sub, q);
	const std::vector<double> raw_scales = allocate(raw, s, epsilon);
	std::vector<double> pre = raw_scales;
	// One noisy cell: its scale is S(q_k)/epsilon for every strategy; take S from
	// generalized_sensitivity so that the plan is bit-for-bit the one of plan_linear_query.
	if (count_noisy(pre) == 1)
		for (std::size_t k = 0; k < m; k++)
			if (pre[k] > 0)
				pre[k] = generalized_sensitivity(sub, q[k]) / epsilon;

	MultiLinearPlan plan;
	plan.strategy = s;
	plan.cells.resize(m);
	std::vector<std::vector<double>> q_grid(m);
	bool unchanged = true; // every weight already lies on its grid (e.g. integer weights, grid 1)
	for (std::size_t k = 0; k < m; k++) {
		LinearNoisePlan &cell = plan.cells[k];
		double t = pre[k];
		check_noise_scale(t);
		if (t > 0)
			t = std::max(t, std::numeric_limits<double>::min()); // never let a positive scale underflow to 0
		cell.grid = choose_grid(t, q[k], cell.integer_weights);
		q_grid[k].resize(q[k].size());
		for (std::size_t u = 0; u < q[k].size(); u++) {
			q_grid[k][u] = static_cast<double>(to_grid_units(q[k][u], cell.grid)) * cell.grid;
			unchanged &= q_grid[k][u] == q[k][u];
		}
	}

	// Calibrate on exactly what is summed: the grid-rounded weights (the raw constraints and
	// scales when rounding changed nothing).
	ConstraintSet rounded = unchanged ? std::move(raw) : build_constraints(sub, q_grid);
	const std::vector<double> fin = unchanged ? raw_scales : allocate(rounded, s, epsilon);
	const bool single = count_noisy(fin) == 1;
	for (std::size_t k = 0; k < m; k++) {
		LinearNoisePlan &cell = plan.cells[k];
		if (!(fin[k] > 0))
			continue; // constant on every finite-distance edge after rounding: exact answer
		if (single) {
			cell.sensitivity = generalized_sensitivity(sub, q_grid[k]);
			cell.scale = cell.sensitivity / epsilon;
		} else {
			cell.scale = fin[k];
			cell.sensitivity = cell.scale * epsilon;
		}
		cell.scale = std::max(cell.scale, std::numeric_limits<double>::min());
		check_noise_scale(cell.scale);
		check_grid_ratio(cell.scale, cell.grid);
	}
	std::vector<double> scales(m);
	for (std::size_t k = 0; k < m; k++)
		scales[k] = plan.cells[k].scale;
	check_allocation(rounded, scales, epsilon);
	if (constraints)
		*constraints = std::move(rounded);
	return plan;
}
} // namespace dxpriv
