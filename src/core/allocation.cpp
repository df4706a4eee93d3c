// Multi-linear queries: the strategy names, the allocation entry point and per-cell noise plans.
// Constraint building lives in allocation_constraints.cpp, the heuristic strategies in
// allocation_heuristics.cpp and the exact solver in allocation_solver.cpp.
#include "core/allocation.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

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
	case AllocationStrategy::MinTotalVariance:
		return "min_total_variance";
	case AllocationStrategy::Relative:
		return "relative";
	}
	return "unknown";
}

// Strategy from its name (case-insensitive); "optimal" is the old name of min_total_variance.
bool
parse_strategy(const std::string &name, AllocationStrategy &out)
{
	std::string lower(name);
	for (char &ch : lower)
		ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
	if (lower == "optimal") {
		out = AllocationStrategy::MinTotalVariance;
		return true;
	}
	for (AllocationStrategy s : {AllocationStrategy::EqualSplit, AllocationStrategy::EqualScale,
	                             AllocationStrategy::BudgetDistribution, AllocationStrategy::MinTotalVariance,
	                             AllocationStrategy::Relative})
		if (lower == strategy_name(s)) {
			out = s;
			return true;
		}
	return false;
}

namespace {

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

// Rejects a malformed constraint set.
void
check_set(const ConstraintSet &c)
{
	if (c.cells == 0 || c.value_start.size() != c.index_start.size() || c.value_start.back() != c.values.size())
		throw CoreError(ErrorKind::Internal, "malformed constraint set");
}

// sum_k w_k b_k^2.
double
weighted_squares(const std::vector<double> &w, const std::vector<double> &b)
{
	double s = 0;
	for (std::size_t k = 0; k < b.size(); k++)
		s += w[k] * b[k] * b[k];
	return s;
}

// Whether b_k <= cap_k (up to 1e-9 relative) for every cell.
bool
within_caps(const std::vector<double> &b, const std::vector<double> &cap)
{
	for (std::size_t k = 0; k < b.size(); k++)
		if (b[k] > cap[k] * (1 + 1e-9))
			return false;
	return true;
}

// The constraints of c restricted to the cells of each part: part_of[k] is the part of cell k
// (kNone: in no part), local[k] its index inside the part. One pass over the rows; a row
// contributes its non-zero entries of a part to that part (stored sparse; rows without entries
// in a part are not stored for it).
std::vector<ConstraintSet>
restrict_parts(const ConstraintSet &c, const std::vector<std::size_t> &part_of, const std::vector<std::size_t> &local,
               std::size_t parts)
{
	std::vector<ConstraintSet> out(parts);
	for (std::size_t k = 0; k < c.cells; k++)
		if (part_of[k] != kNone)
			out[part_of[k]].cells = std::max(out[part_of[k]].cells, local[k] + 1);
	std::vector<std::size_t> touched;
	std::vector<char> open(parts, 0);
	for (std::size_t e = 0; e < c.count(); e++) {
		touched.clear();
		c.for_each(e, [&](std::size_t k, double v) {
			const std::size_t p = part_of[k];
			if (v == 0 || p == kNone)
				return;
			if (!open[p]) {
				open[p] = 1;
				touched.push_back(p);
			}
			out[p].values.push_back(v);
			out[p].indexes.push_back(static_cast<std::uint32_t>(local[k]));
		});
		for (std::size_t p : touched) { // entries arrive in ascending k, so local cells ascend too
			out[p].value_start.push_back(out[p].values.size());
			out[p].index_start.push_back(out[p].indexes.size());
			open[p] = 0;
		}
	}
	return out;
}

// Minimiser of sum_k w_k b_k^2 (w_k > 0 on the noisy cells) without caps: the best, by this
// objective, of the solver and the three heuristics (any number of cells, as before the split;
// the SQL side caps MinTotalVariance at kMaxExactCells cells).
std::vector<double>
min_weighted(const ConstraintSet &c, const std::vector<double> &w, double epsilon, AllocationStats *stats)
{
	std::vector<std::size_t> argmax;
	const std::vector<double> colmax = column_max(c, &argmax);
	const std::size_t n_active = count_noisy(colmax);
	if (n_active <= 1)
		return equal_split(colmax, n_active, epsilon);
	std::vector<std::size_t> binding;
	const std::vector<double> x3 = water_fill(c, colmax, epsilon, &binding);
	std::vector<double> best = scales_from_inverse(c, x3, epsilon);
	AllocationStrategy winner = AllocationStrategy::BudgetDistribution;
	for (auto [cand, who] : {std::make_pair(equal_split(colmax, n_active, epsilon), AllocationStrategy::EqualSplit),
	                         std::make_pair(equal_scale(c, colmax, epsilon), AllocationStrategy::EqualScale)})
		if (weighted_squares(w, cand) < weighted_squares(w, best)) {
			best = cand;
			winner = who;
		}
	const std::vector<double> x = weighted_inverse(c, colmax, argmax, w, {}, x3, binding, epsilon, stats);
	if (!x.empty()) {
		std::vector<double> b = scales_from_inverse(c, x, epsilon);
		if (weighted_squares(w, b) <= weighted_squares(w, best)) {
			best = b;
			winner = AllocationStrategy::MinTotalVariance;
		}
	}
	if (stats)
		stats->winner = winner;
	return best;
}

// Relative strategy on one budget (see allocate(request) in allocation.h).
std::vector<double>
allocate_relative(const ConstraintSet &c, const std::vector<Estimate> &estimates, double epsilon,
                  AllocationStats *stats)
{
	std::vector<std::size_t> argmax;
	const std::vector<double> colmax = column_max(c, &argmax);
	const std::size_t n_active = count_noisy(colmax);
	const std::vector<double> b_eq = equal_split(colmax, n_active, epsilon);
	if (n_active <= 1)
		return b_eq;
	const std::vector<double> w = relative_weights(c, estimates, epsilon);
	// Floors x_k >= 1/b_k^eq; the relative filling raises every y_k = x_k s_k / epsilon from 1/m_a
	// at the same speed.
	std::vector<double> floor_x(c.cells, 0), rate(c.cells, 0);
	for (std::size_t k = 0; k < c.cells; k++)
		if (colmax[k] > 0) {
			floor_x[k] = 1 / b_eq[k];
			rate[k] = 1 / colmax[k];
		}
	std::vector<std::size_t> binding;
	const std::vector<double> x_fill = water_fill(c, colmax, epsilon, &binding, &floor_x, &rate);
	std::vector<double> best = b_eq;
	AllocationStrategy winner = AllocationStrategy::EqualSplit;
	auto offer = [&](const std::vector<double> &b, AllocationStrategy who) {
		if (within_caps(b, b_eq) && weighted_squares(w, b) <= weighted_squares(w, best)) {
			best = b;
			winner = who;
		}
	};
	offer(scales_from_inverse(c, x_fill, epsilon), AllocationStrategy::Relative);
	offer(equal_scale(c, colmax, epsilon), AllocationStrategy::EqualScale);
	offer(scales_from_inverse(c, water_fill(c, colmax, epsilon, nullptr), epsilon),
	      AllocationStrategy::BudgetDistribution);
	if (n_active <= kMaxExactCells) {
		const std::vector<double> x =
		    weighted_inverse(c, colmax, argmax, w, floor_x, x_fill, binding, epsilon, stats);
		if (!x.empty())
			offer(scales_from_inverse(c, x, epsilon), AllocationStrategy::Relative);
	}
	if (stats)
		stats->winner = winner;
	return best;
}

// One budget: the strategy on all cells of c.
std::vector<double>
allocate_one(const ConstraintSet &c, AllocationStrategy s, const std::vector<Estimate> &estimates, double epsilon,
             AllocationStats *stats)
{
	std::vector<std::size_t> argmax;
	const std::vector<double> colmax = column_max(c, &argmax);
	const std::size_t n_active = count_noisy(colmax);
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
	case AllocationStrategy::MinTotalVariance:
		return min_weighted(c, std::vector<double>(c.cells, 1.0), epsilon, stats);
	case AllocationStrategy::Relative:
		return allocate_relative(c, estimates, epsilon, stats);
	}
	throw CoreError(ErrorKind::Internal, "unknown allocation strategy");
}

// Validates the estimates of a request against m cells (indices, weights, disjointness).
void
check_estimates(const std::vector<Estimate> &estimates, std::size_t m)
{
	std::vector<char> seen(m, 0);
	for (const Estimate &g : estimates) {
		if (g.cells.size() != g.weights.size() || g.cells.empty())
			throw CoreError(ErrorKind::Internal, "estimate has no cells or a different number of weights");
		for (std::size_t i = 0; i < g.cells.size(); i++) {
			if (g.cells[i] >= m || seen[g.cells[i]])
				throw CoreError(ErrorKind::Internal, "estimate names an unknown cell or a cell twice");
			if (!std::isfinite(g.weights[i]) || !(g.weights[i] >= 0))
				throw CoreError(ErrorKind::Internal, "estimate weight is negative or not finite");
			seen[g.cells[i]] = 1;
		}
	}
}

// Validates the budget blocks of a request against m cells and the total epsilon.
void
check_blocks(const AllocationRequest &r, std::size_t m, double epsilon)
{
	if (r.block_epsilon.empty()) {
		if (!r.block_of.empty())
			throw CoreError(ErrorKind::Internal, "budget blocks without epsilons");
		return;
	}
	if (r.block_of.size() != m)
		throw CoreError(ErrorKind::Internal, "budget blocks do not cover every cell");
	double total = 0;
	for (double e : r.block_epsilon) {
		check_epsilon(e);
		total += e;
	}
	if (std::fabs(total - epsilon) > 1e-9 * epsilon)
		throw CoreError(ErrorKind::Internal, "budget blocks do not add up to the query's epsilon");
	for (std::size_t b : r.block_of)
		if (b >= r.block_epsilon.size())
			throw CoreError(ErrorKind::Internal, "cell in an unknown budget block");
	for (const Estimate &g : r.estimates)
		for (std::size_t k : g.cells)
			if (r.block_of[k] != r.block_of[g.cells[0]])
				throw CoreError(ErrorKind::Internal, "estimate spans two budget blocks");
}

// Index of every cell inside its block (block_of as in AllocationRequest).
std::vector<std::size_t>
local_indexes(const std::vector<std::size_t> &block_of, std::size_t blocks)
{
	std::vector<std::size_t> next(blocks, 0), local(block_of.size());
	for (std::size_t k = 0; k < block_of.size(); k++)
		local[k] = next[block_of[k]]++;
	return local;
}

} // namespace

// Relative objective weights of the cells (allocation.h).
std::vector<double>
relative_weights(const ConstraintSet &c, const std::vector<Estimate> &estimates, double epsilon)
{
	check_epsilon(epsilon);
	check_set(c);
	check_estimates(estimates, c.cells);
	const std::vector<double> colmax = column_max(c);
	std::vector<double> w(c.cells, 0);
	for (std::size_t k = 0; k < c.cells; k++)
		if (colmax[k] > 0)
			w[k] = (epsilon / colmax[k]) * (epsilon / colmax[k]);
	// Estimates with two or more noisy cells of positive weight: V° from their own constraints.
	std::vector<std::size_t> part_of(c.cells, kNone), local(c.cells, 0), solved;
	for (std::size_t g = 0; g < estimates.size(); g++) {
		const Estimate &est = estimates[g];
		std::size_t positive = 0, last = 0;
		for (std::size_t i = 0; i < est.cells.size(); i++)
			if (colmax[est.cells[i]] > 0 && est.weights[i] > 0) {
				positive++;
				last = i;
			}
		if (positive == 1) { // that cell alone; its zero-weight partners get 0
			for (std::size_t i = 0; i < est.cells.size(); i++)
				if (i != last)
					w[est.cells[i]] = 0;
		} else if (positive >= 2) {
			for (std::size_t i = 0; i < est.cells.size(); i++) {
				part_of[est.cells[i]] = solved.size();
				local[est.cells[i]] = i;
			}
			solved.push_back(g);
		}
	}
	if (solved.empty())
		return w;
	const std::vector<ConstraintSet> parts = restrict_parts(c, part_of, local, solved.size());
	for (std::size_t p = 0; p < solved.size(); p++) {
		const Estimate &est = estimates[solved[p]];
		std::vector<double> omega(est.cells.size(), 0);
		for (std::size_t i = 0; i < est.cells.size(); i++)
			omega[i] = colmax[est.cells[i]] > 0 ? est.weights[i] : 0;
		// Cells exact in c are exact in the part; a zero weight of a noisy cell still needs a
		// positive solver weight, so the part is solved with the noisy zero-weight cells at a
		// tiny weight (their V° contribution is negligible and only lowers V°, never raises it).
		std::vector<double> solve_w(omega);
		double largest = 0;
		for (std::size_t i = 0; i < omega.size(); i++)
			largest = std::max(largest, omega[i] * colmax[est.cells[i]] * colmax[est.cells[i]]);
		for (std::size_t i = 0; i < omega.size(); i++)
			if (colmax[est.cells[i]] > 0 && !(omega[i] > 0))
				solve_w[i] = 1e-12 * largest / (colmax[est.cells[i]] * colmax[est.cells[i]]);
		const std::vector<double> b = min_weighted(parts[p], solve_w, epsilon, nullptr);
		const double v0 = weighted_squares(omega, b);
		if (!(v0 > 0) || !std::isfinite(v0))
			throw CoreError(ErrorKind::Internal, "estimate has no positive single-estimate error");
		for (std::size_t i = 0; i < est.cells.size(); i++)
			w[est.cells[i]] = omega[i] / v0;
	}
	return w;
}

// Laplace scales of the cells under the chosen strategy.
std::vector<double>
allocate(const ConstraintSet &c, AllocationStrategy s, double epsilon, AllocationStats *stats)
{
	AllocationRequest r;
	r.strategy = s;
	return allocate(c, r, epsilon, stats);
}

// Laplace scales of the cells under a request (estimates, budget blocks).
std::vector<double>
allocate(const ConstraintSet &c, const AllocationRequest &request, double epsilon, AllocationStats *stats)
{
	check_epsilon(epsilon);
	check_set(c);
	check_estimates(request.estimates, c.cells);
	check_blocks(request, c.cells, epsilon);
	if (stats)
		*stats = AllocationStats{};
	if (request.block_epsilon.empty())
		return allocate_one(c, request.strategy, request.estimates, epsilon, stats);
	const std::size_t blocks = request.block_epsilon.size();
	const std::vector<std::size_t> local = local_indexes(request.block_of, blocks);
	const std::vector<ConstraintSet> parts = restrict_parts(c, request.block_of, local, blocks);
	std::vector<std::vector<Estimate>> block_estimates(blocks);
	for (const Estimate &g : request.estimates) {
		Estimate mapped = g;
		for (std::size_t &k : mapped.cells)
			k = local[k];
		block_estimates[request.block_of[g.cells[0]]].push_back(std::move(mapped));
	}
	std::vector<std::vector<std::size_t>> members(blocks);
	for (std::size_t k = 0; k < c.cells; k++)
		members[request.block_of[k]].push_back(k);
	std::vector<double> b(c.cells, 0);
	for (std::size_t j = 0; j < blocks; j++) {
		if (members[j].empty())
			continue;
		ConstraintSet part = parts[j];
		part.cells = members[j].size(); // a block's last cells may have no entry at all
		AllocationStats block_stats;
		const std::vector<double> bj =
		    allocate_one(part, request.strategy, block_estimates[j], request.block_epsilon[j], &block_stats);
		for (std::size_t i = 0; i < members[j].size(); i++)
			b[members[j][i]] = bj[i];
		if (stats) {
			stats->rounds += block_stats.rounds;
			stats->newton_steps += block_stats.newton_steps;
			stats->working_rows = std::max(stats->working_rows, block_stats.working_rows);
			stats->relative_gap = std::max(stats->relative_gap, block_stats.relative_gap);
			stats->winner = block_stats.winner;
		}
	}
	return b;
}

// Calibrates several cells of one query together (grids as plan_linear_query, then allocation).
MultiLinearPlan
plan_multi_linear(const SubUniverse &sub, const std::vector<std::vector<double>> &q, double epsilon,
                  AllocationStrategy s, ConstraintSet *constraints)
{
	AllocationRequest r;
	r.strategy = s;
	return plan_multi_linear(sub, q, epsilon, r, constraints);
}

// Calibrates several cells of one query together under a request (estimates, budget blocks).
MultiLinearPlan
plan_multi_linear(const SubUniverse &sub, const std::vector<std::vector<double>> &q, double epsilon,
                  const AllocationRequest &request, ConstraintSet *constraints)
{
	return detail::plan_multi_linear(detail::DenseCellWeights(sub, q), epsilon, request, constraints);
}

namespace detail {

// See allocation_internal.h.
LinearNoisePlan
DenseCellWeights::single(double epsilon) const
{
	return plan_linear_query(sub_, q_[0], epsilon);
}

// See allocation_internal.h.
ConstraintSet
DenseCellWeights::constraints() const
{
	return build_constraints(sub_, q_);
}

// See allocation_internal.h.
double
DenseCellWeights::sensitivity(std::size_t k) const
{
	return generalized_sensitivity(sub_, q_[k]);
}

// See allocation_internal.h.
double
DenseCellWeights::grid(std::size_t k, double t, bool &integer_weights) const
{
	return choose_grid(t, q_[k], integer_weights);
}

// See allocation_internal.h.
std::vector<std::vector<double>>
weights_on_grids(const std::vector<std::vector<double>> &q, const std::vector<LinearNoisePlan> &cells)
{
	const std::size_t m = q.size();
	std::vector<std::vector<double>> q_grid(m);
	bool unchanged = true; // every weight already lies on its grid (e.g. integer weights, grid 1)
	for (std::size_t k = 0; k < m; k++) {
		const LinearNoisePlan &cell = cells[k];
		if (cell.integer_weights && cell.grid == 1) // integers below 2^53 lie on the unit grid
			continue;
		q_grid[k].resize(q[k].size());
		for (std::size_t u = 0; u < q[k].size(); u++) {
			q_grid[k][u] = static_cast<double>(to_grid_units(q[k][u], cell.grid)) * cell.grid;
			unchanged &= q_grid[k][u] == q[k][u];
		}
	}
	if (unchanged)
		return {};
	for (std::size_t k = 0; k < m; k++) // the rounded set is built on whole vectors: copy the cells rounding kept
		if (q_grid[k].empty())
			q_grid[k] = q[k];
	return q_grid;
}

// See allocation_internal.h.
std::unique_ptr<CellWeights>
DenseCellWeights::rounded(const std::vector<LinearNoisePlan> &cells) const
{
	std::vector<std::vector<double>> q_grid = weights_on_grids(q_, cells);
	if (q_grid.empty())
		return nullptr;
	return std::make_unique<DenseCellWeights>(sub_, std::move(q_grid));
}

// See allocation_internal.h.
MultiLinearPlan
plan_multi_linear(const CellWeights &q, double epsilon, const AllocationRequest &request, ConstraintSet *constraints)
{
	check_epsilon(epsilon);
	const std::size_t m = q.cells();
	check_estimates(request.estimates, m);
	check_blocks(request, m, epsilon);
	const AllocationStrategy s = request.strategy;
	if (m == 1) { // one cell: the single-query calibration, without enumerating pair constraints
		MultiLinearPlan plan;
		plan.strategy = s;
		plan.cells.push_back(q.single(epsilon));
		plan.epsilon_share.push_back(plan.cells[0].scale > 0 ? epsilon : 0.0);
		if (constraints)
			*constraints = ConstraintSet();
		return plan;
	}
	// The epsilon each cell is allocated within (its block's, or the query's).
	const bool blocked = !request.block_epsilon.empty();
	auto budget_of = [&](std::size_t k) { return blocked ? request.block_epsilon[request.block_of[k]] : epsilon; };
	auto block_key = [&](std::size_t k) { return blocked ? request.block_of[k] : 0; };
	// Cells that are the only noisy cell of their block: S(q_k)/eps_block for every strategy.
	auto lone_cells = [&](const std::vector<double> &b) {
		std::vector<std::size_t> noisy(blocked ? request.block_epsilon.size() : 1, 0);
		for (std::size_t k = 0; k < m; k++)
			noisy[block_key(k)] += b[k] > 0;
		std::vector<char> lone(m, 0);
		for (std::size_t k = 0; k < m; k++)
			lone[k] = b[k] > 0 && noisy[block_key(k)] == 1;
		return lone;
	};

	// All pairs of points by constraint generation (PairPlanner; not when the caller wants the set):
	// each allocation on a working set, the final check over every row. When it gives up, the
	// reference set is built and used for the rest of the plan.
	std::unique_ptr<PairPlanner> pairs = constraints ? nullptr : PairPlanner::make(q);
	std::vector<double> pair_colmax;
	auto generated = [&](const CellWeights &w) {
		bool complete = false;
		std::vector<double> b = pairs->allocate(w, request, epsilon, pair_colmax, complete);
		if (!complete)
			pairs.reset();
		return b;
	};
	std::vector<double> raw_scales;
	ConstraintSet raw;
	if (pairs)
		raw_scales = generated(q);
	if (!pairs) {
		raw = q.constraints();
		raw_scales = q.allocation(raw, request, epsilon);
	}
	std::vector<double> pre = raw_scales;
	// A lone noisy cell: take S from generalized_sensitivity so that its plan is bit-for-bit the
	// one of plan_linear_query at its epsilon.
	const std::vector<char> lone_pre = lone_cells(pre);
	for (std::size_t k = 0; k < m; k++)
		if (lone_pre[k])
			pre[k] = q.sensitivity(k) / budget_of(k);

	MultiLinearPlan plan;
	plan.strategy = s;
	plan.cells.resize(m);
	plan.epsilon_share.assign(m, 0.0);
	for (std::size_t k = 0; k < m; k++) {
		LinearNoisePlan &cell = plan.cells[k];
		double t = pre[k];
		check_noise_scale(t);
		if (t > 0)
			t = std::max(t, std::numeric_limits<double>::min()); // never let a positive scale underflow to 0
		cell.grid = q.grid(k, t, cell.integer_weights);
	}
	// the grid-rounded weights (nullptr: rounding changed no weight, e.g. integer weights on grid 1)
	const std::unique_ptr<CellWeights> grid_q = q.rounded(plan.cells);
	const bool unchanged = !grid_q;
	const CellWeights &rounded_q = unchanged ? q : *grid_q;

	// Calibrate on exactly what is summed: the grid-rounded weights (the raw constraints and
	// scales when rounding changed nothing).
	std::vector<double> fin = unchanged ? raw_scales : std::vector<double>();
	if (pairs && !unchanged)
		fin = generated(rounded_q);
	ConstraintSet rounded;
	if (!pairs) {
		rounded = unchanged && raw.cells > 0 ? std::move(raw) : rounded_q.constraints();
		if (!unchanged || raw_scales.empty())
			fin = rounded_q.allocation(rounded, request, epsilon);
	}
	const std::vector<char> lone = lone_cells(fin);
	const std::vector<double> colmax = pairs ? pair_colmax : column_max(rounded);
	for (std::size_t k = 0; k < m; k++) {
		LinearNoisePlan &cell = plan.cells[k];
		if (!(fin[k] > 0))
			continue; // constant on every finite-distance edge after rounding: exact answer
		if (lone[k]) {
			cell.sensitivity = rounded_q.sensitivity(k);
			cell.scale = cell.sensitivity / budget_of(k);
		} else {
			cell.scale = fin[k];
			cell.sensitivity = cell.scale * budget_of(k);
		}
		cell.scale = std::max(cell.scale, std::numeric_limits<double>::min());
		check_noise_scale(cell.scale);
		check_grid_ratio(cell.scale, cell.grid);
		plan.epsilon_share[k] = lone[k] ? budget_of(k) : colmax[k] / cell.scale;
	}
	std::vector<double> scales(m);
	for (std::size_t k = 0; k < m; k++)
		scales[k] = plan.cells[k].scale;
	if (pairs) { // over every presence and pair row (check_allocation's test)
		if (pairs->verified(rounded_q, scales, epsilon)) // the last rating was against these scales
			return plan;
		if (!(pairs->ratio(rounded_q, scales, epsilon, nullptr) <= 1 + 1e-9))
			throw CoreError(ErrorKind::Internal, "allocation violates the privacy condition");
		if (blocked)
			for (std::size_t j = 0; j < request.block_epsilon.size(); j++) {
				std::vector<std::size_t> members;
				for (std::size_t k = 0; k < m; k++)
					if (request.block_of[k] == j)
						members.push_back(k);
				if (!members.empty() &&
				    !(pairs->ratio(rounded_q, scales, request.block_epsilon[j], &members) <= 1 + 1e-9))
					throw CoreError(ErrorKind::Internal, "allocation violates the privacy condition");
			}
		return plan;
	}
	check_allocation(rounded, scales, epsilon);
	if (blocked) { // every block within its own epsilon
		const std::size_t blocks = request.block_epsilon.size();
		const std::vector<std::size_t> local = local_indexes(request.block_of, blocks);
		std::vector<ConstraintSet> parts = restrict_parts(rounded, request.block_of, local, blocks);
		std::vector<std::vector<double>> block_scales(blocks);
		for (std::size_t k = 0; k < m; k++)
			block_scales[request.block_of[k]].push_back(scales[k]);
		for (std::size_t j = 0; j < blocks; j++)
			if (!block_scales[j].empty()) {
				parts[j].cells = block_scales[j].size();
				check_allocation(parts[j], block_scales[j], request.block_epsilon[j]);
			}
	}
	if (constraints)
		*constraints = std::move(rounded);
	return plan;
}

} // namespace detail

} // namespace dxpriv
