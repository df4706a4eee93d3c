// Tests of the group release (core/group_release.h, issue 25): grouping, the exact column
// reduction behind each group's sensitivity, the budget accounting, and statistical privacy tests
// of one round (selection + measurement) on neighbouring tables: the empirical log ratio of the
// selection probabilities is bounded by select_epsilon * d(u, v) (with a confidence margin) and
// reaches a good part of it (the test has power), and the measurement noise has the plan's scale.
// Fixed seeds: deterministic.
#include "core/group_release.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <cstdint>
#include <vector>

#include "core/random.h"
#include "core/error.h"
#include "core/release_steps.h"

namespace dxpriv {
namespace {

SubUniverse
three_by_three(double presence)
{
	SubUniverse sub;
	sub.domains = {Domain::enumerated({"a", "b", "c"}), Domain::enumerated({"x", "y", "z"})};
	sub.metrics = {ColumnMetric::discrete(1), ColumnMetric::discrete(1)};
	sub.presence = presence;
	return sub;
}

TEST(GroupRelease, MarginalTablesAreGroups)
{
	SubUniverse sub = three_by_three(kInfinity);
	sub.domains.push_back(Domain::range(0, 3, 1));
	sub.metrics.push_back(ColumnMetric::absolute(1));
	const Workload w = marginal_workload(sub, {"p", "q", "r"}, 2);
	const auto g = workload_groups(w, nullptr);
	ASSERT_EQ(g.size(), 3u); // pq (9 cells), pr (12), qr (12)
	EXPECT_EQ(g[0].size(), 9u);
	EXPECT_EQ(g[1].size(), 12u);
	EXPECT_EQ(g[2].size(), 12u);
	std::vector<int> labels(w.queries.size(), 7);
	labels[0] = 1;
	const auto u = workload_groups(w, &labels);
	ASSERT_EQ(u.size(), 2u);
	EXPECT_EQ(u[0].size(), 1u);
	std::vector<int> wrong(3, 1);
	EXPECT_THROW(workload_groups(w, &wrong), CoreError);
}

// The sensitivity of a group computed on its reduced columns equals the one on the full universe.
TEST(GroupRelease, ReducedSensitivityIsExact)
{
	for (double presence : {kInfinity, 0.7}) {
		SubUniverse sub = three_by_three(presence);
		sub.domains.push_back(Domain::range(0, 3, 1));
		sub.metrics.push_back(ColumnMetric::absolute(0.5));
		const Workload w = marginal_workload(sub, {"p", "q", "r"}, 2);
		const GroupPlan plan = plan_group_release(sub, w, 1.0, 2, nullptr);
		for (std::size_t gi = 0; gi < plan.groups.size(); ++gi) {
			std::vector<std::vector<double>> cells;
			for (std::size_t k : plan.groups[gi])
				cells.push_back(w.dense(k));
			const ConstraintSet cs = build_constraints(sub, cells);
			double s = 0;
			for (std::size_t i = 0; i < cs.count(); ++i) {
				double row = 0;
				for (double v : cs.row(i))
					row += v;
				s = std::max(s, row);
			}
			EXPECT_NEAR(plan.group_sensitivity[gi], s, 1e-12 * s) << "group " << gi << " presence " << presence;
			// the measurement plan is private on the full universe's constraints
			std::vector<double> scales;
			for (const auto &c : plan.plans[gi].cells)
				scales.push_back(c.scale);
			EXPECT_LE(privacy_ratio(cs, scales, plan.measure_epsilon), 1 + 1e-9);
		}
	}
}

TEST(GroupRelease, BudgetAddsUp)
{
	for (double presence : {kInfinity, 1.0})
		for (int t : {0, 1, 2, 3}) {
			const SubUniverse sub = three_by_three(presence);
			const Workload w = marginal_workload(sub, {"p", "q"}, 1);
			const GroupPlan p = plan_group_release(sub, w, 0.8, t, nullptr);
			const double spent = p.joint ? p.count_epsilon + p.measure_epsilon * p.joint_ratio
			                             : p.count_epsilon + p.rounds * (p.select_epsilon + p.measure_epsilon);
			EXPECT_LE(spent, 0.8);
			EXPECT_GT(spent, 0.8 * (1 - 1e-9));
			if (std::isfinite(presence))
				EXPECT_EQ(p.joint_ratio, 2); // presence edges move both tables
			else
				EXPECT_EQ(p.joint_ratio, 1); // a column change moves one table
		}
	EXPECT_THROW(plan_group_release(three_by_three(1), marginal_workload(three_by_three(1), {"p", "q"}, 1), 0, 0, nullptr),
	             CoreError);
	EXPECT_THROW(plan_group_release(three_by_three(1), marginal_workload(three_by_three(1), {"p", "q"}, 1), 1, -1, nullptr),
	             CoreError);
}

// With the joint rule and one group (the cells of one GROUP BY), the release is the direct answer
// made consistent: on a large table its cells are close to the truth.
TEST(GroupRelease, OneGroupIsDirectAnswer)
{
	const SubUniverse sub = three_by_three(1.0);
	const Workload w = marginal_workload(sub, {"p", "q"}, 2);
	std::vector<std::int64_t> x = {500, 20, 0, 300, 300, 300, 7, 1000, 90};
	const GroupPlan p = plan_group_release(sub, w, 1.0, 0, nullptr);
	EXPECT_TRUE(p.joint);
	EXPECT_FALSE(p.count_measured); // a partition of the universe: the fit takes its total from it
	SeededRandom rng(5);
	double se = 0;
	for (int run = 0; run < 200; ++run) {
		const GroupReleaseResult r = run_group_release(sub, w, p, x, rng);
		for (std::size_t u = 0; u < x.size(); ++u)
			se += std::pow(r.histogram[u] - static_cast<double>(x[u]), 2);
	}
	const double rmse = std::sqrt(se / 200 / 9);
	const double b = p.query_scale[0];
	EXPECT_LT(rmse, 1.5 * std::sqrt(2.0) * b);
}

// Selection on neighbouring tables x, x' (one row moved from (a, x) to (b, x): d = 1): for every
// group, |ln P(g | x) - ln P(g | x')| <= select_epsilon * d plus a 5-sigma margin.
TEST(GroupReleaseStat, SelectionLogRatioIsBounded)
{
	const SubUniverse sub = three_by_three(kInfinity);
	const Workload w = marginal_workload(sub, {"p", "q"}, 1); // two tables: p (3 cells), q (3 cells)
	const GroupPlan p = plan_group_release(sub, w, 6.0, 1, nullptr);
	ASSERT_FALSE(p.joint);
	ASSERT_EQ(p.groups.size(), 2u);
	EXPECT_DOUBLE_EQ(p.select_sensitivity, 2.0); // a change of p moves two cells of table p
	// a: uniform with total n (the count is public); x puts the rows so that table p's score is
	// near table q's
	std::vector<std::int64_t> x = {4, 0, 0, 0, 2, 0, 0, 0, 3};
	std::vector<std::int64_t> y = x;
	y[0] -= 1; // (a, x) -> (b, x)
	y[3] += 1;
	const double bound = p.select_epsilon * 1.0;
	const int draws = 300000;
	SeededRandom rng(11);
	auto freq = [&](const std::vector<std::int64_t> &counts) {
		std::vector<double> f(2, 0);
		for (int i = 0; i < draws; ++i) {
			std::vector<__int128> exact(w.queries.size());
			for (std::size_t k = 0; k < exact.size(); ++k)
				exact[k] = w.exact_units(k, counts);
			const std::vector<double> a(sub.size(), 1.0);
			const std::size_t g = em_sample(rng, group_scores(w, p, exact, a), score_denominator(w.grid),
			                                em_beta(p.select_epsilon, p.select_sensitivity));
			f[g] += 1.0 / draws;
		}
		return f;
	};
	const auto fx = freq(x), fy = freq(y);
	double worst = 0;
	for (int g = 0; g < 2; ++g) {
		ASSERT_GT(fx[g], 0.01);
		ASSERT_GT(fy[g], 0.01);
		const double lr = std::fabs(std::log(fx[g] / fy[g]));
		// standard error of a log frequency ~ sqrt((1-f)/(f N))
		const double se = std::sqrt((1 - fx[g]) / (fx[g] * draws) + (1 - fy[g]) / (fy[g] * draws));
		EXPECT_LE(lr, bound + 5 * se) << "group " << g;
		worst = std::max(worst, lr);
	}
	EXPECT_GT(worst, 0.2 * bound); // the neighbour is visible: the test can fail
}

// Measurement of a selected group: each cell carries discrete Laplace noise of the plan's scale
// (mean absolute deviation within 5 sigma of its exact value), and that scale is the group's allocation at
// measure_epsilon (2 / measure_epsilon: an edge moves two cells of the table by 1, d = 1).
TEST(GroupReleaseStat, MeasurementNoiseHasThePlannedScale)
{
	const SubUniverse sub = three_by_three(kInfinity);
	const Workload w = marginal_workload(sub, {"p", "q"}, 1);
	const GroupPlan p = plan_group_release(sub, w, 3.0, 1, nullptr);
	for (std::size_t j = 0; j < 3; ++j)
		EXPECT_NEAR(p.plans[0].cells[j].scale, 2 / p.measure_epsilon, 1e-9 * 2 / p.measure_epsilon);
	const std::vector<std::int64_t> x = {4, 0, 0, 0, 2, 0, 0, 0, 3};
	SeededRandom rng(13);
	const int runs = 40000;
	double abs_sum = 0;
	int n = 0;
	for (int i = 0; i < runs; ++i) {
		const GroupReleaseResult r = run_group_release(sub, w, p, x, rng);
		const std::size_t g = r.chosen[0];
		for (std::size_t j = 0; j < p.groups[g].size(); ++j) {
			const double truth = static_cast<double>(w.exact_units(p.groups[g][j], x));
			abs_sum += std::fabs(r.measurements[0][j] - truth);
			++n;
		}
	}
	const double b = p.plans[0].cells[0].scale;
	ASSERT_EQ(p.plans[0].cells[0].grid, 1.0);
	// discrete Laplace on the integers: E|K| = 2r / (1 - r^2), r = exp(-1/b); sd of |K| <= b
	const double r = std::exp(-1 / b);
	EXPECT_NEAR(abs_sum / n, 2 * r / (1 - r * r), 5 * b / std::sqrt(static_cast<double>(n)));
}

TEST(GroupRelease, ProgressIsCalledEveryRoundAndMayAbort)
{
	const SubUniverse sub = three_by_three(kInfinity);
	const Workload w = marginal_workload(sub, {"p", "q"}, 1);
	const GroupPlan p = plan_group_release(sub, w, 1.0, 1, nullptr);
	const std::vector<std::int64_t> x = {4, 0, 0, 0, 2, 0, 0, 0, 3};
	SeededRandom rng(1);
	int calls = 0;
	run_group_release(sub, w, p, x, rng, [&](int done, int total) {
		++calls;
		EXPECT_EQ(total, 1);
		EXPECT_EQ(done, 1);
	});
	EXPECT_EQ(calls, 1);
	EXPECT_THROW(run_group_release(sub, w, p, x, rng, [](int, int) { throw std::runtime_error("cancel"); }),
	             std::runtime_error);
}

} // namespace
} // namespace dxpriv
