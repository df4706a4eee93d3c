// plan_multi_linear_grouped (grouped_allocation.h) against the reference plan_multi_linear on
// random grouped policies: symmetric and not (per-group FILTERs, groups removed by a WHERE,
// per_value budgets), discrete / per_value / absolute group metrics, one or two other columns,
// finite and infinite presence, several aggregates (counts, sums, averages), every strategy and
// budget blocks. Scales and sensitivities agree within kTolerance, grids and exact cells exactly,
// and the fast plan satisfies every row of the reference's full constraint set (the all-pairs
// guarantee: max over rows of sum_k a_k / (b_k eps d) <= 1). Planted failures: generation switched
// off, and a scale lowered by 1%, are caught by the exact pair check.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/allocation.h"
#include "core/allocation_internal.h"
#include "core/domain.h"
#include "core/error.h"
#include "core/grouped_allocation.h"
#include "core/metric.h"
#include "core/sensitivity.h"

namespace dxpriv {
namespace {

using Matrix = std::vector<std::vector<double>>;

// Relative agreement of the fast plan's scales with the reference (solver tolerance: the solver
// certifies a relative objective gap of 1e-10, which allows ~1e-5 in a scale along flat directions).
constexpr double kTolerance = 1e-5;

// One random grouped statement: sub-universe (other columns first, the group column last), cells
// and request.
struct GroupedCase {
	SubUniverse sub;
	Matrix q;
	AllocationRequest request;
	double epsilon = 0.5;
	bool two_keys = false;
	std::string label;
};

GroupedCase
random_case(std::mt19937_64 &rng, int group_kind, bool symmetric)
{
	GroupedCase c;
	auto uni = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
	auto real = [&rng](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
	const int key_values = uni(2, 9);
	const int xs = uni(2, 7);
	const bool second = uni(0, 2) == 0;
	const int ys = second ? uni(2, 3) : 1;
	c.sub.domains.push_back(Domain::range(0, xs - 1, 1));
	c.sub.metrics.push_back(uni(0, 1) ? ColumnMetric::absolute(real(0.5, 4)) : ColumnMetric::none());
	if (second) {
		c.sub.domains.push_back(Domain::range(0, ys - 1, 1));
		c.sub.metrics.push_back(uni(0, 1) ? ColumnMetric::discrete(real(0.5, 3)) : ColumnMetric::absolute(1));
	}
	c.sub.domains.push_back(Domain::range(0, key_values - 1, 1));
	// GROUP BY y, g (two keys) when y is discrete: a group per (y, g)
	const bool two_keys = second && c.sub.metrics[1].kind() == MetricKind::Discrete && uni(0, 1);
	const int groups = key_values * (two_keys ? ys : 1);
	c.two_keys = two_keys;
	const double w = real(0.3, 3);
	if (group_kind == 0) {
		c.sub.metrics.push_back(ColumnMetric::discrete(w));
	} else if (group_kind == 1) {
		std::vector<double> budgets(static_cast<std::size_t>(key_values));
		for (double &b : budgets)
			b = symmetric ? w : (uni(0, 5) == 0 ? kInfinity : real(0.3, 3));
		if (!(budgets[0] < kInfinity))
			budgets[0] = w;
		c.sub.metrics.push_back(ColumnMetric::per_value(budgets));
	} else {
		c.sub.metrics.push_back(ColumnMetric::absolute(w));
	}
	const int presence_kind = uni(0, 3);
	c.sub.presence = presence_kind == 0 ? kInfinity : presence_kind == 1 ? w : real(0.2, 4);
	const std::size_t n = c.sub.size();
	// aggregates: 0 count, 1 sum(x), 2 avg(x) (sum and count), 3 sum(y * x - 2)
	const int aggs = uni(1, 3);
	std::vector<int> kind(static_cast<std::size_t>(aggs));
	std::vector<int> width(static_cast<std::size_t>(aggs));
	for (int j = 0; j < aggs; j++) {
		kind[static_cast<std::size_t>(j)] = uni(0, 3);
		width[static_cast<std::size_t>(j)] = kind[static_cast<std::size_t>(j)] == 2 ? 2 : 1;
	}
	std::vector<char> removed(static_cast<std::size_t>(groups), 0); // WHERE g <> ...
	if (!symmetric && uni(0, 1))
		removed[static_cast<std::size_t>(uni(0, groups - 1))] = 1;
	std::size_t per_group = 0;
	for (int wdt : width)
		per_group += static_cast<std::size_t>(wdt);
	const std::size_t m = per_group * static_cast<std::size_t>(groups);
	c.q.assign(m, std::vector<double>(n, 0.0));
	// FILTER (x >= cut) per aggregate, the same for every group (symmetric) or per group
	std::vector<std::vector<int>> cut(static_cast<std::size_t>(aggs), std::vector<int>(static_cast<std::size_t>(groups), 0));
	for (int j = 0; j < aggs; j++) {
		const int shared = uni(0, 1) ? uni(0, xs - 1) : 0;
		for (int g = 0; g < groups; g++)
			cut[static_cast<std::size_t>(j)][static_cast<std::size_t>(g)] = symmetric ? shared : uni(0, xs - 1);
	}
	for (std::size_t u = 0; u < n; u++) {
		const std::vector<std::size_t> at = c.sub.unflatten(u);
		const int x = static_cast<int>(at[0]), y = second ? static_cast<int>(at[1]) : 0;
		const int g = static_cast<int>(at.back()) + (two_keys ? key_values * y : 0);
		if (removed[static_cast<std::size_t>(g)])
			continue;
		std::size_t k = per_group * static_cast<std::size_t>(g);
		for (int j = 0; j < aggs; j++) {
			const bool in = x >= cut[static_cast<std::size_t>(j)][static_cast<std::size_t>(g)];
			switch (kind[static_cast<std::size_t>(j)]) {
			case 0:
				c.q[k++][u] = in ? 1 : 0;
				break;
			case 1:
				c.q[k++][u] = in ? x : 0;
				break;
			case 2:
				c.q[k++][u] = in ? x : 0;
				c.q[k++][u] = in ? 1 : 0;
				break;
			default:
				c.q[k++][u] = in ? 0.25 * (y + 1) * x - 2 : 0;
				break;
			}
		}
	}
	const int strategy = uni(0, 5);
	c.request.strategy = strategy <= 1 ? AllocationStrategy::Relative
	                     : strategy == 2 ? AllocationStrategy::MinTotalVariance
	                     : strategy == 3 ? AllocationStrategy::BudgetDistribution
	                     : strategy == 4 ? AllocationStrategy::EqualScale
	                                     : AllocationStrategy::EqualSplit;
	for (int g = 0; g < groups; g++) {
		std::size_t k = per_group * static_cast<std::size_t>(g);
		for (int j = 0; j < aggs; j++) {
			if (kind[static_cast<std::size_t>(j)] == 2)
				c.request.estimates.push_back(Estimate{{k, k + 1}, {1.0, 0.25 * xs * xs}});
			k += static_cast<std::size_t>(width[static_cast<std::size_t>(j)]);
		}
	}
	if (aggs >= 2 && uni(0, 3) == 0) { // dx.* (..., epsilon => ...) on every aggregate: budget blocks
		c.request.block_of.assign(m, 0);
		double total = 0;
		for (int j = 0; j < aggs; j++) {
			c.request.block_epsilon.push_back(real(0.1, 0.5));
			total += c.request.block_epsilon.back();
		}
		c.epsilon = total;
		for (int g = 0; g < groups; g++) {
			std::size_t k = per_group * static_cast<std::size_t>(g);
			for (int j = 0; j < aggs; j++)
				for (int t = 0; t < width[static_cast<std::size_t>(j)]; t++)
					c.request.block_of[k++] = static_cast<std::size_t>(j);
		}
	}
	c.label = std::string(two_keys ? "two keys, " : "") + "groups " + std::to_string(groups) + " x " + std::to_string(xs) + " y " + std::to_string(ys) +
	          " kind " + std::to_string(group_kind) + (symmetric ? " symmetric" : " asymmetric") + " presence " +
	          std::to_string(c.sub.presence) + " aggs " + std::to_string(aggs) + " strategy " +
	          strategy_name(c.request.strategy) + (c.request.block_epsilon.empty() ? "" : " blocks");
	return c;
}

// The reference's full constraint set on the weights the plan sums (grid-rounded).
ConstraintSet
summed_rows(const GroupedCase &c, const MultiLinearPlan &plan)
{
	Matrix r = c.q;
	for (std::size_t k = 0; k < r.size(); k++) {
		const LinearNoisePlan &cell = plan.cells[k];
		if (cell.integer_weights && cell.grid == 1)
			continue;
		for (double &v : r[k])
			v = static_cast<double>(to_grid_units(v, cell.grid)) * cell.grid;
	}
	return build_constraints(c.sub, r);
}

std::vector<double>
scales_of(const MultiLinearPlan &p)
{
	std::vector<double> s;
	for (const LinearNoisePlan &cell : p.cells)
		s.push_back(cell.scale);
	return s;
}

TEST(GroupedAllocation, RandomPoliciesMatchTheReference)
{
	std::mt19937_64 rng(20261128);
	std::size_t fast = 0, declined = 0, strategies_differ = 0, two_key_cases = 0;
	double worst_rel = 0;
	for (int iter = 0; iter < 600; iter++) {
		const int group_kind = iter % 3;
		const bool symmetric = (iter / 3) % 2 == 0;
		const GroupedCase c = random_case(rng, group_kind, symmetric);
		SCOPED_TRACE(std::to_string(iter) + ": " + c.label);
		ConstraintSet ref_rows;
		const MultiLinearPlan ref = plan_multi_linear(c.sub, c.q, c.epsilon, c.request, &ref_rows);
		GroupedStats st;
		const std::optional<MultiLinearPlan> got = plan_multi_linear_grouped(c.sub, c.q, c.epsilon, c.request, &st, 0);
		// an absolute group metric (adjacent groups only) is no key column; a discrete second key is
		const std::size_t keys = (group_kind == 2 ? 0u : 1u) + (c.two_keys ? 1u : 0u);
		EXPECT_EQ(st.key_columns, keys);
		if (keys == 0) {
			EXPECT_FALSE(got.has_value());
			continue;
		}
		two_key_cases += st.key_columns == 2;
		EXPECT_FALSE(st.fell_back);
		if (!got) {
			declined++;
			continue;
		}
		fast++;
		ASSERT_EQ(got->cells.size(), ref.cells.size());
		// the all-pairs guarantee, on the reference's own full set of the summed weights
		const std::vector<double> scales = scales_of(*got);
		const ConstraintSet full = summed_rows(c, *got);
		EXPECT_LE(privacy_ratio(full, scales, c.epsilon), 1 + 1e-9);
		EXPECT_NEAR(grouped_pair_ratio(c.sub, c.q, scales, c.epsilon, c.request), st.pair_ratio, 1e-12);
		// the same plan up to the solver's tolerance (the heuristics of algorithm3 may differ: counted)
		bool differs = false;
		for (std::size_t k = 0; k < ref.cells.size(); k++) {
			const double a = ref.cells[k].scale, b = got->cells[k].scale;
			EXPECT_EQ(a > 0, b > 0) << "cell " << k;
			const double rel = a > 0 ? std::fabs(a - b) / a : 0;
			if (c.request.strategy == AllocationStrategy::BudgetDistribution) {
				differs |= rel > kTolerance;
				continue;
			}
			worst_rel = std::max(worst_rel, rel);
			EXPECT_LE(rel, kTolerance) << "cell " << k << " reference " << a << " fast " << b;
			EXPECT_LE(std::fabs(ref.cells[k].sensitivity - got->cells[k].sensitivity),
			          kTolerance * ref.cells[k].sensitivity);
			EXPECT_EQ(ref.cells[k].grid, got->cells[k].grid);
			EXPECT_EQ(ref.cells[k].integer_weights, got->cells[k].integer_weights);
			EXPECT_LE(std::fabs(ref.epsilon_share[k] - got->epsilon_share[k]), kTolerance * ref.epsilon_share[k] + 1e-300);
		}
		strategies_differ += differs;
	}
	std::printf("grouped: %zu fast (%zu with two key columns), %zu declined, %zu algorithm3 plans differing beyond "
	            "%g, worst relative scale difference %.3g\n", fast, two_key_cases, declined, strategies_differ,
	            kTolerance, worst_rel);
	EXPECT_GT(fast, 300u);
	EXPECT_GT(two_key_cases, 5u);
}

// The dashboard's g73 tile on smaller domains: the statement is symmetric under permuting the
// groups, so every group gets the same scales; the fast plan hands the allocator O(points) rows.
TEST(GroupedAllocation, SymmetricTileGivesOneScalePerAggregate)
{
	SubUniverse sub;
	const std::size_t groups = 20, xs = 30;
	sub.domains = {Domain::range(0, xs - 1, 1), Domain::range(0, groups - 1, 1)};
	sub.metrics = {ColumnMetric::none(), ColumnMetric::discrete(1)};
	const std::size_t n = sub.size();
	Matrix q(3 * groups, std::vector<double>(n, 0.0));
	AllocationRequest request;
	for (std::size_t u = 0; u < n; u++) {
		const std::size_t g = u % groups;
		q[3 * g][u] = 1, q[3 * g + 1][u] = static_cast<double>(u / groups), q[3 * g + 2][u] = 1;
	}
	for (std::size_t g = 0; g < groups; g++)
		request.estimates.push_back(Estimate{{3 * g + 1, 3 * g + 2}, {1.0, 225.0}});
	ConstraintSet ref_rows;
	const MultiLinearPlan ref = plan_multi_linear(sub, q, 0.5, request, &ref_rows);
	GroupedStats st;
	const std::optional<MultiLinearPlan> got = plan_multi_linear_grouped(sub, q, 0.5, request, &st, 0);
	ASSERT_TRUE(got.has_value());
	EXPECT_EQ(st.pair_rows, static_cast<double>(n * (groups - 1)) / 2);
	EXPECT_LT(st.base_rows + st.generated_rows, ref_rows.count() / 4);
	for (std::size_t k = 0; k < ref.cells.size(); k++) {
		EXPECT_NEAR(got->cells[k].scale, ref.cells[k].scale, kTolerance * ref.cells[k].scale);
		EXPECT_NEAR(got->cells[k].scale, got->cells[k % 3].scale, kTolerance * got->cells[k % 3].scale);
	}
	EXPECT_LE(privacy_ratio(ref_rows, scales_of(*got), 0.5), 1 + 1e-9);
	std::printf("symmetric tile: %zu reference rows, %zu base + %zu generated rows, %zu allocations\n",
	            ref_rows.count(), st.base_rows, st.generated_rows, st.rounds);
}

// Planted failures: without constraint generation the allocation over the rows without pairs
// violates pair rows, and the exact check refuses it (nullopt: the caller runs the reference);
// a fast plan with one scale lowered by 1% is caught by the pair check and by the full set.
TEST(GroupedAllocation, PlantedViolationsAreCaught)
{
	std::mt19937_64 rng(7);
	std::size_t refused = 0, caught = 0, tried = 0;
	for (int iter = 0; iter < 200; iter++) {
		const GroupedCase c = random_case(rng, iter % 2, true);
		SCOPED_TRACE(std::to_string(iter) + ": " + c.label);
		if (c.request.strategy == AllocationStrategy::EqualSplit || !c.request.block_epsilon.empty())
			continue; // equal_split uses the column maxima only: pair rows never bind (blocks: per-block budgets)
		tried++;
		detail::set_grouped_generation(false);
		GroupedStats st;
		const std::optional<MultiLinearPlan> off = plan_multi_linear_grouped(c.sub, c.q, c.epsilon, c.request, &st, 0);
		detail::set_grouped_generation(true);
		if (!off) {
			EXPECT_TRUE(st.fell_back);
			refused++;
		} else { // pairs did not bind: the plan is private anyway
			EXPECT_LE(st.pair_ratio, 1 + 1e-9);
		}
		const std::optional<MultiLinearPlan> on = plan_multi_linear_grouped(c.sub, c.q, c.epsilon, c.request, &st, 0);
		ASSERT_TRUE(on.has_value());
		std::vector<double> scales = scales_of(*on);
		const ConstraintSet full = summed_rows(c, *on);
		// lower the scale of the cell with the largest load on the binding pair row
		std::size_t worst_row = 0;
		double worst = -1;
		std::vector<double> inv(scales.size(), 0);
		for (std::size_t k = 0; k < scales.size(); k++)
			inv[k] = scales[k] > 0 ? 1 / (scales[k] * c.epsilon) : 0;
		for (std::size_t e = 0; e < full.count(); e++) {
			double s = 0;
			full.for_each(e, [&](std::size_t k, double v) { s += v * inv[k]; });
			if (s > worst) {
				worst = s;
				worst_row = e;
			}
		}
		full.for_each(worst_row, [&](std::size_t k, double v) {
			if (v > 0 && scales[k] > 0)
				scales[k] *= 0.99;
		});
		const bool pair_caught = grouped_pair_ratio(c.sub, c.q, scales, c.epsilon, c.request) > 1 + 1e-9;
		EXPECT_GT(privacy_ratio(full, scales, c.epsilon), 1 + 1e-9);
		caught += pair_caught;
	}
	std::printf("planted: %zu of %zu refused without generation; %zu lowered scales caught by the pair check\n",
	            refused, tried, caught);
	EXPECT_GT(refused, tried / 3);
	EXPECT_GT(caught, tried / 3);
}

// Outside the shape: cells of one group at two points of a line (an expression key), one cell,
// an infinite discrete weight, and statements below the pair-row threshold keep the reference.
TEST(GroupedAllocation, DeclinesOutsideTheShape)
{
	SubUniverse sub;
	sub.domains = {Domain::range(0, 9, 1), Domain::range(0, 5, 1)};
	sub.metrics = {ColumnMetric::absolute(1), ColumnMetric::discrete(1)};
	const std::size_t n = sub.size();
	Matrix q(3, std::vector<double>(n, 0.0)); // GROUP BY g / 2: values 0-1, 2-3, 4-5
	for (std::size_t u = 0; u < n; u++)
		q[(u % 6) / 2][u] = 1;
	AllocationRequest r;
	GroupedStats st;
	EXPECT_FALSE(plan_multi_linear_grouped(sub, q, 0.5, r, &st, 0).has_value());
	EXPECT_EQ(st.key_columns, 0u);
	Matrix one(1, std::vector<double>(n, 1.0));
	EXPECT_FALSE(plan_multi_linear_grouped(sub, one, 0.5, r, &st, 0).has_value());
	Matrix by_g(6, std::vector<double>(n, 0.0));
	for (std::size_t u = 0; u < n; u++)
		by_g[u % 6][u] = 1;
	EXPECT_TRUE(plan_multi_linear_grouped(sub, by_g, 0.5, r, &st, 0).has_value());
	EXPECT_FALSE(plan_multi_linear_grouped(sub, by_g, 0.5, r, &st).has_value()); // 150 pair rows < threshold
	EXPECT_EQ(st.pair_rows, 150.0);
	sub.metrics[1] = ColumnMetric::discrete(kInfinity);
	EXPECT_FALSE(plan_multi_linear_grouped(sub, by_g, 0.5, r, &st, 0).has_value());
	EXPECT_EQ(st.key_columns, 0u);
}

} // namespace
} // namespace dxpriv
