// (epsilon, delta) calibration of multi-linear queries: discrete Gaussian and truncated Laplace.
#include "core/approximate_dp.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <set>
#include <string>

#include "core/error.h"
#include "core/gaussian.h"
#include "core/truncated_laplace.h"

namespace dxpriv {

namespace {

// Distinct pair-union work above which max_pair_union falls back to the two largest sets.
constexpr std::size_t kMaxExactSupportSets = 512;
constexpr int kMaxGridRounds = 4;

// Weights of cell k rounded to its grid (what the aggregate sums).
std::vector<double>
rounded_cell_weights(const std::vector<double> &qk, double grid)
{
	std::vector<double> out(qk.size());
	for (std::size_t u = 0; u < qk.size(); u++)
		out[u] = static_cast<double>(to_grid_units(qk[u], grid)) * grid;
	return out;
}

// Per-cell value ranges and per-point supports of the noisy cells' rounded weights.
struct ChangeStructure {
	std::vector<double> range;                       // per cell: max - min over points (and ⊥ = 0); 0 if exact
	std::vector<std::vector<std::uint32_t>> supports; // distinct sets of noisy cells non-zero at a point, plus {}
};

ChangeStructure
change_structure(const std::vector<std::vector<double>> &qg, const std::vector<bool> &noisy, bool bottom)
{
	const std::size_t m = qg.size(), n = m ? qg[0].size() : 0;
	ChangeStructure cs;
	cs.range.assign(m, 0.0);
	for (std::size_t k = 0; k < m; k++) {
		if (!noisy[k])
			continue;
		double lo = bottom ? 0.0 : qg[k][0], hi = lo;
		for (double w : qg[k]) {
			lo = std::min(lo, w);
			hi = std::max(hi, w);
		}
		cs.range[k] = hi - lo;
	}
	std::set<std::vector<std::uint32_t>> distinct{{}}; // ⊥ (and any all-zero point): no cell
	std::vector<std::uint32_t> support;
	for (std::size_t u = 0; u < n; u++) {
		support.clear();
		for (std::size_t k = 0; k < m; k++)
			if (noisy[k] && qg[k][u] != 0)
				support.push_back(static_cast<std::uint32_t>(k));
		distinct.insert(support);
	}
	cs.supports.assign(distinct.begin(), distinct.end());
	return cs;
}

// max over pairs of support sets (S, S'), S == S' included, of sum_{k in S ∪ S'} weight[k]. Exact
// up to kMaxExactSupportSets distinct sets; above, the sum of the two largest set weights (an upper
// bound, since the union weighs at most the sum).
double
max_pair_union(const std::vector<std::vector<std::uint32_t>> &sets, const std::vector<double> &weight)
{
	std::vector<double> w(sets.size(), 0.0);
	for (std::size_t i = 0; i < sets.size(); i++)
		for (std::uint32_t k : sets[i])
			w[i] += weight[k];
	if (sets.size() > kMaxExactSupportSets) {
		std::vector<double> top = w;
		std::partial_sort(top.begin(), top.begin() + 2, top.end(), std::greater<double>());
		return top[0] + top[1];
	}
	double best = 0;
	for (std::size_t i = 0; i < sets.size(); i++) {
		best = std::max(best, w[i]);
		for (std::size_t j = i + 1; j < sets.size(); j++) {
			if (w[i] + w[j] <= best)
				continue;
			double sum = w[i] + w[j];
			// subtract the intersection (both lists ascending)
			std::size_t a = 0, b = 0;
			while (a < sets[i].size() && b < sets[j].size()) {
				if (sets[i][a] == sets[j][b]) {
					sum -= weight[sets[i][a]];
					a++;
					b++;
				} else if (sets[i][a] < sets[j][b]) {
					a++;
				} else {
					b++;
				}
			}
			best = std::max(best, sum);
		}
	}
	return best;
}

// max over the rows r(e) = a(e) / d(e) of ||r(e) / c||_2 over the noisy cells.
double
max_row_norm(const ConstraintSet &rows, const std::vector<double> &c, const std::vector<bool> &noisy)
{
	double best = 0;
	for (std::size_t i = 0; i < rows.count(); i++) {
		double sq = 0;
		bool unbounded = false;
		rows.for_each(i, [&](std::size_t k, double r) {
			if (r == 0)
				return;
			if (!noisy[k])
				unbounded = true; // an exact cell that changes on an edge: never produced by the allocation
			else
				sq += (r / c[k]) * (r / c[k]);
		});
		if (unbounded)
			throw CoreError(ErrorKind::Internal, "an exact cell changes on a finite-distance edge");
		best = std::max(best, std::sqrt(sq));
	}
	return best;
}

// L = max over edges of ||a(e) / c||_2 / d(e) for the rounded weights qg and shape c (noisy cells).
// laplace (optional): the Laplace plan, when qg is rounded to its grids; its S(q_k) (one noisy cell)
// and its constraint rows (laplace_rows, m > 1) are then reused instead of recomputed.
double
lipschitz_constant(const SubUniverse &sub, const std::vector<std::vector<double>> &qg, const std::vector<double> &c,
                   const std::vector<bool> &noisy, const MultiLinearPlan *laplace, const ConstraintSet &laplace_rows)
{
	const std::size_t m = qg.size();
	std::size_t noisy_count = 0, only = 0;
	for (std::size_t k = 0; k < m; k++)
		if (noisy[k]) {
			noisy_count++;
			only = k;
		}
	if (noisy_count == 1) // one cell: S(q_k) / c_k, without enumerating pair constraints
		return (laplace ? laplace->cells[only].sensitivity : generalized_sensitivity(sub, qg[only])) / c[only];
	if (laplace)
		return max_row_norm(laplace_rows, c, noisy);
	return max_row_norm(build_constraints(sub, qg), c, noisy);
}

// Gaussian: s from the worst pair, then every noisy cell's deviation s * c_k on its own grid.
// laplace_rows: the constraint rows of the Laplace plan (plan_multi_linear's, m > 1).
void
calibrate_gaussian(const SubUniverse &sub, const std::vector<std::vector<double>> &q, double epsilon, double delta,
                   const ConstraintSet &laplace_rows, MultiLinearPlan &plan, ApproximateCalibration &info)
{
	const std::size_t m = q.size();
	const MultiLinearPlan laplace = plan;
	std::vector<double> c(m, 0.0), grid(m, 1.0);
	std::vector<bool> noisy(m, false);
	for (std::size_t k = 0; k < m; k++) {
		c[k] = plan.cells[k].scale;
		grid[k] = plan.cells[k].grid;
		noisy[k] = c[k] > 0;
	}
	const bool bottom = std::isfinite(sub.presence);
	std::vector<double> sigma(m, 0.0);
	std::vector<std::vector<double>> qg(m);
	for (int round = 0;; round++) {
		for (std::size_t k = 0; k < m; k++)
			qg[k] = noisy[k] ? rounded_cell_weights(q[k], grid[k]) : std::vector<double>(q[k].size(), 0.0);
		const ChangeStructure cs = change_structure(qg, noisy, bottom);
		std::vector<double> sq(m, 0.0);
		for (std::size_t k = 0; k < m; k++)
			if (noisy[k])
				sq[k] = (cs.range[k] / c[k]) * (cs.range[k] / c[k]);
		info.max_change = std::sqrt(max_pair_union(cs.supports, sq));
		bool laplace_grids = true;
		for (std::size_t k = 0; k < m; k++)
			laplace_grids = laplace_grids && grid[k] == laplace.cells[k].grid;
		info.lipschitz = lipschitz_constant(sub, qg, c, noisy, laplace_grids ? &laplace : nullptr, laplace_rows);
		if (!(info.lipschitz > 0) || !(info.max_change > 0))
			throw CoreError(ErrorKind::Internal, "gaussian calibration found no change on a noisy cell");
		info.worst_distance = info.max_change / info.lipschitz;
		info.rho = zcdp_rho_for(epsilon * info.worst_distance, delta);
		const double s = info.max_change / std::sqrt(2.0 * info.rho);
		bool regrid = false;
		std::vector<double> next = grid;
		for (std::size_t k = 0; k < m; k++) {
			if (!noisy[k])
				continue;
			sigma[k] = std::max(s * c[k], std::numeric_limits<double>::min());
			check_noise_scale(sigma[k]);
			bool integer_weights;
			next[k] = choose_grid(sigma[k], q[k], integer_weights);
			plan.cells[k].integer_weights = integer_weights;
			regrid = regrid || next[k] != grid[k];
		}
		if (!regrid || round + 1 >= kMaxGridRounds)
			break; // sigma was computed on exactly these grids
		if (round + 2 >= kMaxGridRounds) // oscillating at a power-of-two boundary: keep the coarser grids
			for (std::size_t k = 0; k < m; k++)
				next[k] = std::max(next[k], grid[k]);
		grid = next;
	}
	for (std::size_t k = 0; k < m; k++) {
		if (!noisy[k])
			continue;
		LinearNoisePlan &cell = plan.cells[k];
		cell.family = NoiseFamily::Gaussian;
		cell.grid = grid[k];
		cell.scale = sigma[k];
		cell.sensitivity = c[k] * epsilon; // the Laplace-equivalent edge sensitivity of the shape
		check_grid_ratio(cell.scale, cell.grid);
	}
}

// Exact tail delta of the discrete truncated law with half-width `steps` grid steps.
double
tail_delta(double scale, double grid, double range, std::int64_t steps)
{
	const double bound = static_cast<double>(steps) * grid;
	return gtl_grid_privacy(GeneralizedTruncatedLaplace(scale, -bound, bound), range, grid).delta;
}

// Truncated Laplace: the Laplace plan's scales and grids, each noisy cell cut at the smallest
// half-width whose tail of width range_k holds at most delta / K.
void
calibrate_truncated(const std::vector<std::vector<double>> &q, bool bottom, double delta, MultiLinearPlan &plan,
                    ApproximateCalibration &info)
{
	const std::size_t m = q.size();
	std::vector<bool> noisy(m, false);
	std::vector<std::vector<double>> qg(m);
	for (std::size_t k = 0; k < m; k++) {
		noisy[k] = plan.cells[k].scale > 0;
		qg[k] = noisy[k] ? rounded_cell_weights(q[k], plan.cells[k].grid) : std::vector<double>(q[k].size(), 0.0);
	}
	const ChangeStructure cs = change_structure(qg, noisy, bottom);
	const std::vector<double> ones(noisy.begin(), noisy.end()); // weight 1 per noisy cell
	info.max_changed_cells = static_cast<int>(std::lround(max_pair_union(cs.supports, ones)));
	if (info.max_changed_cells < 1)
		throw CoreError(ErrorKind::Internal, "truncated laplace calibration found no change on a noisy cell");
	const double cell_delta = delta / info.max_changed_cells;
	for (std::size_t k = 0; k < m; k++) {
		if (!noisy[k])
			continue;
		LinearNoisePlan &cell = plan.cells[k];
		const double range = cs.range[k];
		if (!(range > 0))
			throw CoreError(ErrorKind::Internal, "truncated laplace calibration found no change on a noisy cell");
		const auto ok = [&](std::int64_t steps) { return tail_delta(cell.scale, cell.grid, range, steps) <= cell_delta; };
		const double guess = gtl_symmetric_bound(range, range / cell.scale, cell_delta) / cell.grid;
		const double range_steps = std::ceil(range / cell.grid);
		const auto too_wide = [] {
			return CoreError(ErrorKind::ProgramLimit, "truncated laplacian support is too wide for the grid",
			                 "Raise epsilon or use a coarser metric on the referenced columns.");
		};
		if (!(guess < 4e18) || !(range_steps < 4e18))
			throw too_wide();
		std::int64_t lo = static_cast<std::int64_t>(range_steps); // may fail (tail = whole width)
		std::int64_t hi = std::max(lo + 1, static_cast<std::int64_t>(std::ceil(guess)));
		while (!ok(hi)) {
			lo = hi;
			if (hi > (std::int64_t(1) << 61))
				throw too_wide();
			hi *= 2;
		}
		if (ok(lo))
			hi = lo;
		while (hi - lo > 1) { // invariant: ok(hi), and lo == hi or !ok(lo)
			const std::int64_t mid = lo + (hi - lo) / 2;
			(ok(mid) ? hi : lo) = mid;
		}
		cell.family = NoiseFamily::TruncatedLaplace;
		cell.bound = static_cast<double>(hi) * cell.grid;
	}
}

} // namespace

// See approximate_dp.h.
MultiLinearPlan
plan_multi_linear_noise(const SubUniverse &sub, const std::vector<std::vector<double>> &q, double epsilon,
                        double delta, NoiseFamily family, AllocationStrategy s, ApproximateCalibration *info)
{
	AllocationRequest r;
	r.strategy = s;
	return plan_multi_linear_noise(sub, q, epsilon, delta, family, r, info);
}

// See approximate_dp.h.
MultiLinearPlan
plan_multi_linear_noise(const SubUniverse &sub, const std::vector<std::vector<double>> &q, double epsilon,
                        double delta, NoiseFamily family, const AllocationRequest &request,
                        ApproximateCalibration *info)
{
	if (family != NoiseFamily::Laplace && !(delta > 0 && delta <= kMaxQueryDelta))
		throw CoreError(ErrorKind::InvalidParameter, "delta must lie in (0, 0.001] for (epsilon, delta) noise",
		                "The table owner sets the per-query delta with dx.set_delta.");
	ConstraintSet laplace_rows; // the Gaussian calibration reads the rows (Laplace needs none)
	MultiLinearPlan plan =
	    plan_multi_linear(sub, q, epsilon, request, family == NoiseFamily::Gaussian ? &laplace_rows : nullptr);
	ApproximateCalibration local;
	ApproximateCalibration &out = info ? *info : local;
	out = ApproximateCalibration();
	bool any_noisy = false;
	for (const LinearNoisePlan &cell : plan.cells)
		any_noisy = any_noisy || cell.scale > 0;
	if (family == NoiseFamily::Laplace || !any_noisy)
		return plan;
	if (family == NoiseFamily::Gaussian)
		calibrate_gaussian(sub, q, epsilon, delta, laplace_rows, plan, out);
	else
		calibrate_truncated(q, std::isfinite(sub.presence), delta, plan, out);
	return plan;
}

} // namespace dxpriv
