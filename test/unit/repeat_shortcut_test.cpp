// The repeat shortcut of build_constraints (a row equal to the row offered just before it is
// dropped without hashing) gives exactly the exhaustive constraint sets and plans: same rows in
// the same order, same scales, sensitivities, grids and epsilon shares, on random policies and
// queries (sum/count/avg-like cells, clamps, FILTER ranges, GROUP BY indicators, dense weights).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/allocation.h"
#include "core/allocation_internal.h"
#include "core/domain.h"
#include "core/error.h"
#include "core/metric.h"
#include "core/sensitivity.h"

namespace dxpriv {
namespace {

using Matrix = std::vector<std::vector<double>>;

// Restores the shortcut whatever the test does.
struct ShortcutGuard {
	~ShortcutGuard() { detail::set_repeat_shortcut(true); }
};

// Builds and plans q with and without the shortcut: the sets must be equal entry for entry and
// every plan number identical (errors too). Returns the number of rows of the set (0 on error).
std::size_t
expect_same(const SubUniverse &sub, const Matrix &q, double epsilon, AllocationStrategy s)
{
	ShortcutGuard guard;
	auto run = [&](bool on, MultiLinearPlan &plan, ConstraintSet &set) -> int {
		detail::set_repeat_shortcut(on);
		try {
			set = build_constraints(sub, q);
			plan = plan_multi_linear(sub, q, epsilon, s, nullptr);
			return -1;
		} catch (const CoreError &e) {
			return static_cast<int>(e.kind());
		}
	};
	MultiLinearPlan fast, slow;
	ConstraintSet fast_set, slow_set;
	const int fast_error = run(true, fast, fast_set);
	const int slow_error = run(false, slow, slow_set);
	EXPECT_EQ(fast_error, slow_error);
	if (fast_error >= 0 || slow_error >= 0)
		return 0;
	EXPECT_EQ(fast_set.cells, slow_set.cells);
	EXPECT_EQ(fast_set.value_start, slow_set.value_start);
	EXPECT_EQ(fast_set.values, slow_set.values);
	EXPECT_EQ(fast_set.index_start, slow_set.index_start);
	EXPECT_EQ(fast_set.indexes, slow_set.indexes);
	EXPECT_EQ(fast.cells.size(), slow.cells.size());
	if (fast.cells.size() != slow.cells.size())
		return 0;
	for (std::size_t k = 0; k < fast.cells.size(); k++) {
		EXPECT_EQ(fast.cells[k].scale, slow.cells[k].scale) << "cell " << k;
		EXPECT_EQ(fast.cells[k].sensitivity, slow.cells[k].sensitivity) << "cell " << k;
		EXPECT_EQ(fast.cells[k].grid, slow.cells[k].grid) << "cell " << k;
	}
	EXPECT_EQ(fast.epsilon_share, slow.epsilon_share);
	return slow_set.count();
}

// Weights of one cell over column 0 (stride: points of the columns after it): value, 1, a clamp,
// a FILTER range, a signed FILTER sum, a piecewise-linear weight, a group indicator or a random weight.
std::vector<double>
random_cell(std::mt19937_64 &rng, const Domain &dom, std::size_t n, std::size_t stride, std::size_t col_size)
{
	std::uniform_int_distribution<int> kind(0, 7);
	std::uniform_int_distribution<std::size_t> pos(0, col_size - 1);
	std::size_t a = pos(rng), b = pos(rng);
	if (a > b)
		std::swap(a, b);
	const int k = kind(rng);
	std::uniform_real_distribution<double> uni(-3, 3);
	const double slope = std::round(uni(rng) * 4) / 4;
	std::vector<double> w(n);
	for (std::size_t u = 0; u < n; u++) {
		const std::size_t i = (u / stride) % col_size;
		const double x = dom.ordinal(i);
		switch (k) {
		case 0: w[u] = x; break;
		case 1: w[u] = 1; break;
		case 2: w[u] = std::min(std::max(x, dom.ordinal(a)), dom.ordinal(b)); break;
		case 3: w[u] = (i >= a && i <= b) ? 1 : 0; break;
		case 4: w[u] = (i >= a && i <= b) ? -x : 0; break;
		case 5: w[u] = i < a ? slope * x : slope * dom.ordinal(a) - (x - dom.ordinal(a)); break;
		case 6: w[u] = (u % stride) == a % stride ? 1 : 0; break; // indicator of the other columns
		default: w[u] = std::round(uni(rng) * 4) / 4; break;
		}
	}
	return w;
}

TEST(RepeatShortcutTest, RandomPoliciesGiveIdenticalSetsAndPlans)
{
	std::mt19937_64 rng(20261128);
	const AllocationStrategy strategies[] = {AllocationStrategy::EqualSplit, AllocationStrategy::EqualScale,
	                                         AllocationStrategy::BudgetDistribution,
	                                         AllocationStrategy::MinTotalVariance, AllocationStrategy::Relative};
	std::uniform_int_distribution<int> cols(1, 2), cells(1, 8), size(2, 60), sidx(0, 4);
	std::uniform_real_distribution<double> scale(0.5, 20), presence(0.5, 4), eps(0.05, 2);
	int nonempty = 0;
	for (int trial = 0; trial < 200; trial++) {
		SubUniverse sub;
		const int c = cols(rng);
		for (int j = 0; j < c; j++) {
			const int k = size(rng);
			sub.domains.push_back(Domain::range(0, k - 1, 1));
			sub.metrics.push_back(trial % 5 == 2 ? ColumnMetric::discrete(scale(rng)) : ColumnMetric::absolute(scale(rng)));
		}
		sub.presence = trial % 9 == 4 ? std::numeric_limits<double>::infinity() : presence(rng);
		const std::size_t n = sub.size();
		const std::size_t stride = n / sub.domains[0].size();
		Matrix q;
		const int m = cells(rng);
		for (int k = 0; k < m; k++)
			q.push_back(random_cell(rng, sub.domains[0], n, stride, sub.domains[0].size()));
		SCOPED_TRACE(testing::Message() << "trial " << trial);
		nonempty += expect_same(sub, q, eps(rng), strategies[sidx(rng)]) > 0;
	}
	EXPECT_GT(nonempty, 150); // the comparison is not vacuous
}

// avg(income) over a 200,001-point absolute column: one line of identical neighbour rows.
TEST(RepeatShortcutTest, AverageOverALargeDomain)
{
	SubUniverse sub;
	sub.domains.push_back(Domain::range(0, 200000, 1));
	sub.metrics.push_back(ColumnMetric::absolute(1000));
	sub.presence = 1;
	const std::size_t n = sub.size();
	Matrix q(2, std::vector<double>(n));
	for (std::size_t u = 0; u < n; u++) {
		q[0][u] = static_cast<double>(u);
		q[1][u] = 1;
	}
	EXPECT_GT(expect_same(sub, q, 0.1, AllocationStrategy::Relative), 0u);
}

} // namespace
} // namespace dxpriv
