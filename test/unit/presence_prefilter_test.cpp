// The presence pre-filter of build_constraints (dominated presence rows skipped before hashing)
// gives exactly the exhaustive plans: same scales, sensitivities, grids and epsilon shares, on
// random policies and queries (sum/count/avg-like cells, FILTER ranges, clamped and signed weights).
#include <gtest/gtest.h>

#include <cmath>
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

// Restores the filter whatever the test does.
struct FilterGuard {
	~FilterGuard() { detail::set_presence_prefilter(true); }
};

// Plans q with and without the filter; every number must be identical, and so must be the error.
// Returns how many constraint rows the filter saved (0 when a plan failed).
std::size_t
expect_same_plans(const SubUniverse &sub, const Matrix &q, double epsilon, AllocationStrategy s)
{
	FilterGuard guard;
	auto run = [&](bool on, MultiLinearPlan &plan, ConstraintSet &set) -> int {
		detail::set_presence_prefilter(on);
		try {
			plan = plan_multi_linear(sub, q, epsilon, s, &set);
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
	EXPECT_EQ(fast.cells.size(), slow.cells.size());
	if (fast.cells.size() != slow.cells.size())
		return 0;
	EXPECT_LE(fast_set.count(), slow_set.count());
	for (std::size_t k = 0; k < fast.cells.size(); k++) {
		EXPECT_EQ(fast.cells[k].scale, slow.cells[k].scale) << "cell " << k;
		EXPECT_EQ(fast.cells[k].sensitivity, slow.cells[k].sensitivity) << "cell " << k;
		EXPECT_EQ(fast.cells[k].grid, slow.cells[k].grid) << "cell " << k;
		EXPECT_EQ(fast.cells[k].integer_weights, slow.cells[k].integer_weights) << "cell " << k;
	}
	EXPECT_EQ(fast.epsilon_share, slow.epsilon_share);
	// the scales are private against the exhaustive constraint set too
	std::vector<double> b;
	for (const LinearNoisePlan &c : fast.cells)
		b.push_back(c.scale);
	if (slow_set.cells > 0)
		EXPECT_NO_THROW(check_allocation(slow_set, b, epsilon * (1 + 1e-9)));
	return slow_set.count() - fast_set.count();
}

// Weights of one aggregate cell over a range column: value (sum), 1 (count), a clamp, a FILTER
// range, a sign flip, or a random weight.
std::vector<double>
random_cell(std::mt19937_64 &rng, const Domain &dom, std::size_t n, std::size_t stride, std::size_t col_size)
{
	std::uniform_int_distribution<int> kind(0, 5);
	std::uniform_int_distribution<std::size_t> pos(0, col_size - 1);
	std::size_t a = pos(rng), b = pos(rng);
	if (a > b)
		std::swap(a, b);
	const int k = kind(rng);
	std::uniform_real_distribution<double> uni(-3, 3);
	std::vector<double> w(n);
	for (std::size_t u = 0; u < n; u++) {
		const std::size_t i = (u / stride) % col_size;
		const double x = dom.ordinal(i);
		switch (k) {
		case 0: w[u] = x; break;                                   // sum
		case 1: w[u] = 1; break;                                   // count
		case 2: w[u] = std::min(std::max(x, dom.ordinal(a)), dom.ordinal(b)); break; // clamped sum
		case 3: w[u] = (i >= a && i <= b) ? 1 : 0; break;          // count FILTER (range)
		case 4: w[u] = (i >= a && i <= b) ? -x : 0; break;         // signed sum FILTER
		default: w[u] = std::round(uni(rng) * 4) / 4; break;       // arbitrary weight
		}
	}
	return w;
}

TEST(PresencePrefilterTest, RandomPoliciesGiveIdenticalPlans)
{
	std::mt19937_64 rng(20261128);
	const AllocationStrategy strategies[] = {AllocationStrategy::EqualSplit, AllocationStrategy::EqualScale,
	                                         AllocationStrategy::BudgetDistribution,
	                                         AllocationStrategy::MinTotalVariance, AllocationStrategy::Relative};
	std::uniform_int_distribution<int> cols(1, 2), cells(2, 6), size(2, 40), sidx(0, 4);
	std::uniform_real_distribution<double> scale(0.5, 20), presence(0.5, 4), eps(0.05, 2);
	int filtered = 0;
	for (int trial = 0; trial < 150; trial++) {
		SubUniverse sub;
		const int c = cols(rng);
		for (int j = 0; j < c; j++) {
			const int k = size(rng);
			sub.domains.push_back(Domain::range(0, k - 1, 1));
			sub.metrics.push_back(trial % 7 == 3 ? ColumnMetric::discrete(scale(rng)) : ColumnMetric::absolute(scale(rng)));
		}
		sub.presence = presence(rng);
		const std::size_t n = sub.size();
		// the aggregated column is column 0 (stride: the points of the columns after it)
		std::size_t stride = n / sub.domains[0].size();
		Matrix q;
		const int m = cells(rng);
		for (int k = 0; k < m; k++)
			q.push_back(random_cell(rng, sub.domains[0], n, stride, sub.domains[0].size()));
		SCOPED_TRACE(testing::Message() << "trial " << trial);
		filtered += expect_same_plans(sub, q, eps(rng), strategies[sidx(rng)]) > 0;
	}
	EXPECT_GT(filtered, 30); // the comparison is not vacuous: the filter dropped rows in many trials
}

// avg(income) over a 200,001-point absolute column: the filter keeps only the champion's
// presence row, with the exhaustive plan's exact numbers.
TEST(PresencePrefilterTest, AverageOverALargeDomain)
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
	EXPECT_GT(expect_same_plans(sub, q, 0.1, AllocationStrategy::Relative), 100000u);
	EXPECT_GT(expect_same_plans(sub, q, 0.1, AllocationStrategy::BudgetDistribution), 100000u);
}

} // namespace
} // namespace dxpriv
