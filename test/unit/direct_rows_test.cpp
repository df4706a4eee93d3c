// build_constraints' direct rows (a query of at most 16 cells: each row computed from the weights,
// assembled and hashed only where it differs from the previous edge's, i.e. at the breakpoints of
// piecewise-linear weights) give exactly the per-point reference: the same rows in the same order
// and the same scales, sensitivities, grids and epsilon shares (errors too), on hundreds of random
// policies (range steps, absolute/discrete/per-value/none/l1/l2 metrics, 1-3 columns, finite and
// infinite presence) and queries (values, clamps, FILTER ranges, slopes, indicators, tiny weights);
// the reference also inserts every hashed row at once (no lagged, prefetched insert).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
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

// Restores the default switches whatever the test does.
struct SwitchGuard {
	~SwitchGuard()
	{
		detail::set_direct_rows(true);
		detail::set_repeat_shortcut(true);
		detail::set_insert_lag(true);
	}
};

// Builds and plans q with the direct rows and with the per-point reference (the repeat shortcut
// on or off in both): identical sets entry for entry and identical plans. Returns the rows (0 on error).
std::size_t
expect_same(const SubUniverse &sub, const Matrix &q, double epsilon, const AllocationRequest &request, bool repeat)
{
	SwitchGuard guard;
	detail::set_repeat_shortcut(repeat);
	struct Outcome {
		ConstraintSet set;
		MultiLinearPlan plan;
		std::string set_error, plan_error; // empty: no error
	};
	auto run = [&](bool direct) { // the reference: per-point rows, each inserted at once
		detail::set_direct_rows(direct);
		detail::set_insert_lag(direct);
		Outcome o;
		try {
			o.set = build_constraints(sub, q);
		} catch (const CoreError &e) {
			o.set_error = std::to_string(static_cast<int>(e.kind())) + e.what();
		}
		try {
			o.plan = plan_multi_linear(sub, q, epsilon, request, nullptr);
		} catch (const CoreError &e) {
			o.plan_error = std::to_string(static_cast<int>(e.kind())) + e.what();
		}
		return o;
	};
	const Outcome fast = run(true), slow = run(false);
	EXPECT_EQ(fast.set_error, slow.set_error);
	EXPECT_EQ(fast.plan_error, slow.plan_error);
	if (!fast.set_error.empty() || !slow.set_error.empty())
		return 0;
	EXPECT_EQ(fast.set.cells, slow.set.cells);
	EXPECT_EQ(fast.set.value_start, slow.set.value_start);
	EXPECT_EQ(fast.set.values, slow.set.values);
	EXPECT_EQ(fast.set.index_start, slow.set.index_start);
	EXPECT_EQ(fast.set.indexes, slow.set.indexes);
	EXPECT_EQ(fast.plan.cells.size(), slow.plan.cells.size());
	if (fast.plan.cells.size() == slow.plan.cells.size())
		for (std::size_t k = 0; k < fast.plan.cells.size(); k++) {
			EXPECT_EQ(fast.plan.cells[k].scale, slow.plan.cells[k].scale) << "cell " << k;
			EXPECT_EQ(fast.plan.cells[k].sensitivity, slow.plan.cells[k].sensitivity) << "cell " << k;
			EXPECT_EQ(fast.plan.cells[k].grid, slow.plan.cells[k].grid) << "cell " << k;
		}
	EXPECT_EQ(fast.plan.epsilon_share, slow.plan.epsilon_share);
	return slow.set.count();
}

// A random column: a range with an integer, binary or decimal step, or 2-D points, and a metric.
void
random_column(std::mt19937_64 &rng, SubUniverse &sub, int max_size)
{
	std::uniform_int_distribution<int> size(2, max_size), shape(0, 9);
	std::uniform_real_distribution<double> scale(0.3, 30), uni(-50, 50);
	const int k = size(rng);
	const int s = shape(rng);
	if (s == 9) { // l1 or l2 on 2-D points: every pair is an edge
		std::vector<double> coords;
		for (int i = 0; i < std::min(k, 25); i++) {
			coords.push_back(std::round(uni(rng) * 8) / 8);
			coords.push_back(std::round(uni(rng) * 8) / 8 + i * 101);
		}
		sub.domains.push_back(Domain::points(2, coords));
		sub.metrics.push_back(ColumnMetric::lp(shape(rng) % 2 + 1, scale(rng)));
		return;
	}
	const double step = s < 4 ? 1 : s < 6 ? 0.25 : s == 6 ? 0.1 : 3;
	const double lo = std::round(uni(rng)) * step;
	sub.domains.push_back(Domain::range(lo, lo + (k - 1) * step, step));
	switch (shape(rng)) {
	case 0: sub.metrics.push_back(ColumnMetric::discrete(scale(rng))); break;
	case 1: sub.metrics.push_back(ColumnMetric::none()); break;
	case 2: {
		std::vector<double> w(sub.domains.back().size());
		for (double &x : w)
			x = scale(rng);
		sub.metrics.push_back(ColumnMetric::per_value(w));
		break;
	}
	case 3: sub.metrics.push_back(ColumnMetric::lp(2, scale(rng))); break;
	case 4: // distances of 1e300 (rows of subnormal weights underflow to 0) or 1e-300 (rows overflow)
		sub.metrics.push_back(ColumnMetric::absolute(k % 3 ? 1e-300 : 1e300));
		break;
	default: sub.metrics.push_back(ColumnMetric::absolute(scale(rng))); break;
	}
}

// One cell over the sub-universe: a function of one column's ordinal (value, clamp, FILTER range,
// slope change, indicator of another column, tiny or random weight) or a product of two.
std::vector<double>
random_cell(std::mt19937_64 &rng, const SubUniverse &sub)
{
	const std::size_t n = sub.size();
	std::uniform_int_distribution<std::size_t> col(0, sub.domains.size() - 1);
	const std::size_t c = col(rng);
	std::size_t stride = 1;
	for (std::size_t j = c + 1; j < sub.domains.size(); j++)
		stride *= sub.domains[j].size();
	const Domain &dom = sub.domains[c];
	const std::size_t k = dom.size();
	auto x_of = [&](std::size_t i) { return dom.coordinate(i, 0); };
	std::uniform_int_distribution<std::size_t> pos(0, k - 1);
	std::size_t a = pos(rng), b = pos(rng);
	if (a > b)
		std::swap(a, b);
	std::uniform_int_distribution<int> kind(0, 9);
	std::uniform_real_distribution<double> uni(-3, 3);
	const int t = kind(rng);
	const double slope = std::round(uni(rng) * 4) / 4;
	std::vector<double> w(n);
	for (std::size_t u = 0; u < n; u++) {
		const std::size_t i = (u / stride) % k;
		const double x = x_of(i);
		switch (t) {
		case 0: w[u] = x; break;
		case 1: w[u] = 1; break;
		case 2: w[u] = std::min(std::max(x, x_of(a)), x_of(b)); break;
		case 3: w[u] = (i >= a && i <= b) ? 1 : 0; break;
		case 4: w[u] = (i >= a && i <= b) ? -x : 0; break;
		case 5: w[u] = i < a ? slope * x : slope * x_of(a) - 0.5 * (x - x_of(a)); break;
		case 6: w[u] = (u % 3) == 0 ? 1 : 0; break; // depends on another column
		case 7: w[u] = i >= a && i <= b && i % 2 ? 1e-310 : 0; break; // subnormal weights
		case 8: w[u] = 0; break;                     // an exact cell
		default: w[u] = std::round(uni(rng) * 4) / 4; break;
		}
	}
	return w;
}

// Hundreds of random policies and queries, every strategy, with and without estimates and
// budget blocks, with the repeat shortcut on and off.
TEST(DirectRowsTest, RandomPoliciesGiveIdenticalSetsAndPlans)
{
	std::mt19937_64 rng(4723);
	const AllocationStrategy strategies[] = {AllocationStrategy::EqualSplit, AllocationStrategy::EqualScale,
	                                         AllocationStrategy::BudgetDistribution,
	                                         AllocationStrategy::MinTotalVariance, AllocationStrategy::Relative};
	std::uniform_int_distribution<int> cols(1, 3), cells(2, 16), sidx(0, 4);
	std::uniform_real_distribution<double> presence(0.3, 4), eps(0.05, 2);
	int nonempty = 0, trials = 0;
	for (int trial = 0; trial < 400; trial++) {
		SubUniverse sub;
		const int c = cols(rng);
		for (int j = 0; j < c; j++)
			random_column(rng, sub, c == 1 ? 400 : 30);
		sub.presence = trial % 7 == 3 ? std::numeric_limits<double>::infinity() : presence(rng);
		Matrix q;
		const int m = cells(rng);
		for (int k = 0; k < m; k++)
			q.push_back(random_cell(rng, sub));
		AllocationRequest request;
		request.strategy = strategies[sidx(rng)];
		const double epsilon = eps(rng);
		if (trial % 4 == 1 && m >= 2) { // an average: sum and count answer one estimate
			request.estimates.push_back(Estimate{{0, 1}, {1.0, 4.0}});
		} else if (trial % 4 == 2 && m >= 2) { // two aggregates with their own epsilons
			request.block_of.assign(m, 0);
			for (int k = m / 2; k < m; k++)
				request.block_of[k] = 1;
			request.block_epsilon = {epsilon * 0.3, epsilon * 0.7};
		}
		SCOPED_TRACE(testing::Message() << "trial " << trial << " cells " << m);
		nonempty += expect_same(sub, q, epsilon, request, trial % 2 == 0) > 0;
		trials++;
	}
	EXPECT_GT(nonempty, trials / 2); // the comparison is not vacuous
}

// avg(income) over 200,001 points and a sum with two breakpoints (FILTER range) over 10^6 points.
TEST(DirectRowsTest, LargeLines)
{
	for (std::size_t size : {200001u, 1000000u}) {
		SubUniverse sub;
		sub.domains.push_back(Domain::range(0, static_cast<double>(size - 1), 1));
		sub.metrics.push_back(ColumnMetric::absolute(1000));
		sub.presence = 1;
		Matrix q(3, std::vector<double>(size));
		for (std::size_t u = 0; u < size; u++) {
			q[0][u] = static_cast<double>(u);
			q[1][u] = 1;
			q[2][u] = u > 20000 && u < 500000 ? static_cast<double>(u) : 0;
		}
		AllocationRequest request;
		request.estimates.push_back(Estimate{{0, 1}, {1.0, 1e10}});
		EXPECT_GT(expect_same(sub, q, 0.1, request, true), 0u);
	}
}

// A weight difference that underflows to 0 over a huge distance still gives a (zero) entry in
// the per-point path: the direct rows must not take it for a repeat of an all-zero row.
TEST(DirectRowsTest, UnderflowingEntryIsNotARepeat)
{
	SubUniverse sub;
	sub.domains.push_back(Domain::range(0, 9, 1));
	sub.metrics.push_back(ColumnMetric::absolute(1e-300));
	sub.presence = 1;
	Matrix q(4, std::vector<double>(10, 0));
	q[0][0] = 1;
	q[1][5] = 1e-310;
	EXPECT_GT(expect_same(sub, q, 0.5, AllocationRequest{}, true), 0u);
	EXPECT_GT(expect_same(sub, q, 0.5, AllocationRequest{}, false), 0u);
}

// Five aggregates over 950 l2 points (451,725 pairs, almost all rows distinct): the lagged,
// prefetched inserts store the same rows in the same order as inserting at once.
TEST(DirectRowsTest, FiveAggregatesOverL2Points)
{
	std::mt19937_64 rng(950);
	std::uniform_real_distribution<double> lon(-124.7, -67.0), lat(25.1, 49.4);
	std::vector<double> c;
	for (int i = 0; i < 950; i++) {
		c.push_back(std::round(lon(rng) * 1e4) / 1e4);
		c.push_back(std::round(lat(rng) * 1e4) / 1e4);
	}
	SubUniverse sub;
	sub.domains.push_back(Domain::points(2, c));
	sub.metrics.push_back(ColumnMetric::lp(2, 1));
	sub.presence = 1;
	Matrix q(6, std::vector<double>(950));
	for (std::size_t i = 0; i < 950; i++) {
		const double x = c[2 * i], y = c[2 * i + 1];
		q[0][i] = 1;
		q[1][i] = y > 40;
		q[2][i] = y;
		q[3][i] = x;
		q[4][i] = 1;
		q[5][i] = x < -100;
	}
	AllocationRequest request;
	request.estimates.push_back(Estimate{{3, 4}, {1.0, 8100.0}});
	EXPECT_GT(expect_same(sub, q, 0.1, request, true), 400000u);
}

// The edges of an absolute column carry exactly distance(i, i + 1) (each ordinal computed once).
TEST(DirectRowsTest, AbsoluteEdgesAreTheDistances)
{
	std::mt19937_64 rng(11);
	std::uniform_real_distribution<double> lo(-1e6, 1e6), scale(1e-3, 1e3);
	const double steps[] = {1, 0.1, 0.25, 3, 1e-7, 12345.678};
	for (int t = 0; t < 60; t++) {
		const double step = steps[t % 6];
		const double a = lo(rng) * step;
		const Domain dom = Domain::range(a, a + 997 * step, step);
		const ColumnMetric metric = ColumnMetric::absolute(scale(rng));
		std::size_t seen = 0;
		metric.for_each_edge(dom, [&](std::size_t i, std::size_t j, double d) {
			EXPECT_EQ(j, i + 1);
			EXPECT_EQ(d, metric.distance(dom, i, j)) << "edge " << i;
			seen++;
		});
		EXPECT_EQ(seen, dom.size() - 1);
	}
}

// A zero distance between two points with different weights is refused the same way.
TEST(DirectRowsTest, ErrorsAreTheSame)
{
	SubUniverse sub;
	sub.domains.push_back(Domain::range(0, 9, 1));
	sub.metrics.push_back(ColumnMetric::absolute(1));
	sub.presence = 1;
	Matrix q(2, std::vector<double>(10, 1));
	q[1][3] = std::numeric_limits<double>::infinity();
	EXPECT_EQ(expect_same(sub, q, 0.5, AllocationRequest{}, true), 0u);
}

} // namespace
} // namespace dxpriv
