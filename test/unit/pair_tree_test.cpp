// The pair tree (pair_tree.h) against the exhaustive scans it replaces: on random point sets
// (uniform, grid ties, near-duplicates, clusters, rounded coordinates; l1/l2/linf; 2-D, 3-D and
// 4-D; metric scales 1, 0.37, 1e-3) and weights (linear, affine in two coordinates, indicators,
// random, clamps, 1e12-scaled, cones, constants), the maximum is the same double for both pair
// expressions; generalized_sensitivity is bit-identical; and plan_multi_linear of queries with one
// varying cell (an average's sum and count) plans within 1e-12 of the stored reference, with
// privacy_ratio <= 1 + 1e-9 on the reference's full set of rounded rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/allocation.h"
#include "core/allocation_internal.h"
#include "core/domain.h"
#include "core/error.h"
#include "core/linear_query.h"
#include "core/metric.h"
#include "core/pair_tree.h"
#include "core/sensitivity.h"
#include "pair_fixtures.h"

namespace dxpriv {
namespace {

using Matrix = std::vector<std::vector<double>>;


TEST(PairTreeTest, MaximumIsTheScansDouble)
{
	std::mt19937_64 rng(63);
	int cases = 0;
	double tree_work = 0, scan_work = 0;
	for (int t = 0; t < 600; t++) {
		const std::size_t dims = 2 + static_cast<std::size_t>(t % 5 == 3) + 2 * static_cast<std::size_t>(t % 11 == 7);
		const std::size_t n = 150 + static_cast<std::size_t>(rng() % 500);
		const int shape = t % 5;
		const std::vector<double> c = testing::pair_test_points(rng, n, dims, shape, 2);
		const Domain dom = Domain::points(dims, c);
		const double scale = t % 3 == 0 ? 1.0 : t % 3 == 1 ? 0.37 : 1e-3;
		const int p = t % 3 == 2 ? 0 : (t / 3) % 3 == 1 ? 1 : 2;
		const ColumnMetric metric = ColumnMetric::lp(p, scale);
		for (int kind = 0; kind < 9; kind++) {
			const std::vector<double> q = testing::pair_test_weight(rng, c, n, dims, kind);
			for (PairExpr expr : {PairExpr::Raw, PairExpr::Metric}) {
				const PairMax ref = metric.pair_ratio_max(dom, q.data(), 1, expr, false, 1e18);
				const PairMax got = metric.pair_ratio_max(dom, q.data(), 1, expr, true, 1e18);
				const std::string what = "case " + std::to_string(t) + " weight " + std::to_string(kind) + " p " +
				                         std::to_string(p) + " dims " + std::to_string(dims) + " shape " +
				                         std::to_string(shape);
				ASSERT_TRUE(ref.finite && got.finite) << what;
				EXPECT_EQ(ref.value, got.value) << what;
				if (got.value > 0) { // the pair it names attains it
					ASSERT_LT(got.i, got.j);
					const double qi = q[got.i], qj = q[got.j];
					const double d = metric.distance(dom, got.i, got.j);
					if (expr == PairExpr::Metric)
						EXPECT_EQ(std::fabs(qi - qj) / d, got.value) << what;
				}
				// with a floor: the same maximum when it is above, none otherwise
				const double floor = ref.value * (t % 2 ? 0.999 : 1.0);
				const PairMax above = metric.pair_ratio_max(dom, q.data(), 1, expr, true, 1e18, floor);
				EXPECT_EQ(above.value, ref.value > floor ? ref.value : 0.0) << what << " floor";
				cases++;
				tree_work += got.work;
				scan_work += ref.work;
			}
		}
	}
	std::printf("%d maxima compared; tree work %.3g against %.3g pairs (%.1f%%)\n", cases, tree_work, scan_work,
	            100 * tree_work / scan_work);
}

TEST(PairTreeTest, SensitivityIsBitIdentical)
{
	testing::PairSwitchGuard guard;
	detail::set_pair_tree_min_points(2);
	std::mt19937_64 rng(7);
	for (int t = 0; t < 120; t++) {
		const std::size_t dims = 2 + static_cast<std::size_t>(t % 4 == 3);
		const std::size_t n = 200 + static_cast<std::size_t>(rng() % 400);
		const std::vector<double> c = testing::pair_test_points(rng, n, dims, t % 5, 2);
		SubUniverse sub;
		sub.domains.push_back(Domain::points(dims, c));
		sub.metrics.push_back(ColumnMetric::lp(t % 3 == 0 ? 1 : t % 3 == 1 ? 2 : 0, t % 2 ? 1.0 : 0.01));
		sub.presence = t % 4 == 0 ? kInfinity : 100.0;
		const std::vector<double> q = testing::pair_test_weight(rng, c, n, dims, t % 9);
		detail::set_pair_tree(false);
		const double ref = generalized_sensitivity(sub, q);
		detail::set_pair_tree(true);
		const double got = generalized_sensitivity(sub, q);
		EXPECT_EQ(ref, got) << "case " << t;
	}
}

// The weights rounded to the plan's grids, as plan_multi_linear sums them.
Matrix
tree_rounded(const Matrix &q, const MultiLinearPlan &plan)
{
	Matrix out = q;
	for (std::size_t k = 0; k < q.size(); k++) {
		const LinearNoisePlan &cell = plan.cells[k];
		if (cell.integer_weights && cell.grid == 1)
			continue;
		for (double &w : out[k])
			w = static_cast<double>(to_grid_units(w, cell.grid)) * cell.grid;
	}
	return out;
}

bool
tree_close(double a, double b)
{
	return a == b || std::fabs(a - b) <= 1e-12 * std::max(std::fabs(a), std::fabs(b));
}

TEST(PairTreeTest, OneVaryingCellPlansAsTheReference)
{
	testing::PairSwitchGuard guard;
	std::mt19937_64 rng(11);
	const AllocationStrategy strategies[] = {AllocationStrategy::Relative, AllocationStrategy::BudgetDistribution,
	                                         AllocationStrategy::MinTotalVariance, AllocationStrategy::EqualScale,
	                                         AllocationStrategy::EqualSplit};
	int cases = 0, identical = 0;
	for (int t = 0; t < 150; t++) {
		const std::size_t dims = 2 + static_cast<std::size_t>(t % 4 == 3);
		const std::size_t n = 210 + static_cast<std::size_t>(rng() % 200);
		const std::vector<double> c = testing::pair_test_points(rng, n, dims, t % 5, 2);
		SubUniverse sub;
		sub.domains.push_back(Domain::points(dims, c));
		sub.metrics.push_back(ColumnMetric::lp(t % 3 == 0 ? 1 : t % 3 == 1 ? 2 : 0, t % 7 == 0 ? 1e-3 : 1.0));
		sub.presence = t % 6 == 5 ? kInfinity : (t % 6 == 4 ? 0.01 : 1.0);
		// an average (sum of one weight, count) and sometimes further constant cells
		Matrix q;
		q.push_back(testing::pair_test_weight(rng, c, n, dims, t % 8));
		q.push_back(std::vector<double>(n, 1.0));
		for (int extra = 0; extra < t % 3; extra++)
			q.push_back(std::vector<double>(n, 2.5 * (extra + 1)));
		AllocationRequest request;
		request.strategy = strategies[t % 5];
		if (t % 5 == 0 && t % 2 == 0)
			request.estimates.push_back(Estimate{{0, 1}, {1.0, 400.0}});
		if (t % 10 == 3 && q.size() >= 3) {
			request.block_epsilon = {0.3, 0.7};
			request.block_of.assign(q.size(), 1);
			request.block_of[0] = 0;
		}
		const double epsilon = 1.0;
		MultiLinearPlan ref, got;
		ConstraintSet full;
		std::string ref_error, got_error;
		detail::set_pair_tree_min_points(2);
		detail::set_pair_tree(false);
		detail::set_pair_generation(false);
		try {
			ref = plan_multi_linear(sub, q, epsilon, request, &full);
		} catch (const CoreError &e) {
			ref_error = e.what();
		}
		detail::set_pair_tree(true);
		detail::set_pair_generation(true);
		try {
			got = plan_multi_linear(sub, q, epsilon, request, nullptr);
		} catch (const CoreError &e) {
			got_error = e.what();
		}
		const std::string what = "case " + std::to_string(t);
		EXPECT_EQ(ref_error, got_error) << what;
		if (!ref_error.empty() || !got_error.empty())
			continue;
		bool same = true;
		std::vector<double> scales;
		for (std::size_t k = 0; k < q.size(); k++) {
			const LinearNoisePlan &a = ref.cells[k], &b = got.cells[k];
			EXPECT_EQ(a.grid, b.grid) << what << " cell " << k;
			EXPECT_TRUE(tree_close(a.scale, b.scale)) << what << " cell " << k << ": " << a.scale << " vs " << b.scale;
			EXPECT_TRUE(tree_close(a.sensitivity, b.sensitivity)) << what << " cell " << k;
			EXPECT_TRUE(tree_close(ref.epsilon_share[k], got.epsilon_share[k])) << what << " cell " << k;
			same = same && a.scale == b.scale && a.sensitivity == b.sensitivity;
			scales.push_back(b.scale);
		}
		// the guarantee on the reference's full set of the rounded rows
		const ConstraintSet all = build_constraints(sub, tree_rounded(q, got));
		EXPECT_LE(privacy_ratio(all, scales, epsilon), 1 + 1e-9) << what;
		EXPECT_LE(privacy_ratio(full, scales, epsilon), 1 + 1e-9) << what;
		cases++;
		identical += same;
	}
	std::printf("%d plans compared, %d bit-identical\n", cases, identical);
	EXPECT_GT(cases, 100);
}

TEST(PairTreeTest, TwoVaryingCellsOverManyPairsArePlannedOrRefusedWithTheNumbers)
{
	testing::PairSwitchGuard guard;
	const std::size_t n = 12000; // 7.2e7 pairs: 2.3e9 units of work for the stored set, over the cap
	std::vector<double> c(2 * n);
	for (std::size_t i = 0; i < n; i++) {
		c[2 * i] = static_cast<double>(i % 120);
		c[2 * i + 1] = static_cast<double>(i / 120);
	}
	SubUniverse sub;
	sub.domains.push_back(Domain::points(2, c));
	sub.metrics.push_back(ColumnMetric::lp(2, 1.0));
	Matrix q(2, std::vector<double>(n));
	for (std::size_t i = 0; i < n; i++) {
		q[0][i] = c[2 * i];
		q[1][i] = c[2 * i + 1];
	}
	// two varying cells: the pair tree's row searches (pair_search_test compares them with the reference)
	const MultiLinearPlan two = plan_multi_linear(sub, q, 1.0, AllocationStrategy::Relative);
	EXPECT_GT(two.cells[0].scale, 0);
	EXPECT_GT(two.cells[1].scale, 0);
	// weights out of the tree's range (above 1e300): the search cannot settle the pairs, and the stored
	// set is refused at once with its numbers
	q[1][7] = 1e301;
	try {
		plan_multi_linear(sub, q, 1.0, AllocationStrategy::Relative);
		ADD_FAILURE() << "not refused";
	} catch (const CoreError &e) {
		EXPECT_EQ(e.kind(), ErrorKind::ProgramLimit);
		EXPECT_NE(std::string(e.what()).find("the 2 cells of this query need 7.2e+07 privacy constraints (2 of the "
		                                     "cells vary over the points) that the pair search could not settle"),
		          std::string::npos)
		    << e.what();
	}
	// one varying cell over the same points: planned by the tree
	q[1].assign(n, 1.0);
	const MultiLinearPlan plan = plan_multi_linear(sub, q, 1.0, AllocationStrategy::Relative);
	EXPECT_EQ(plan.cells[0].scale > 0, true);
}

TEST(PairTreeTest, AverageOverOneHundredThousandPoints)
{
	// the 10^5-point shape of analysis_bench.py (rounded pseudo-random points in the US box)
	std::mt19937_64 rng(2026);
	std::uniform_real_distribution<double> lon(-124.7, -67.0), lat(25.1, 49.4);
	const std::size_t n = 100000;
	std::vector<double> c;
	c.reserve(2 * n);
	std::vector<std::pair<double, double>> pts;
	while (pts.size() < n) {
		pts.emplace_back(std::round(lon(rng) * 1e4) / 1e4, std::round(lat(rng) * 1e4) / 1e4);
		if (pts.size() % 20000 == 0 || pts.size() == n) {
			std::sort(pts.begin(), pts.end());
			pts.erase(std::unique(pts.begin(), pts.end()), pts.end());
		}
	}
	for (const auto &p : pts) {
		c.push_back(p.first);
		c.push_back(p.second);
	}
	SubUniverse sub;
	sub.domains.push_back(Domain::points(2, c));
	sub.metrics.push_back(ColumnMetric::lp(2, 1.0));
	Matrix q(2, std::vector<double>(n, 1.0));
	for (std::size_t i = 0; i < n; i++)
		q[0][i] = c[2 * i + 1];
	const std::clock_t start = std::clock();
	const MultiLinearPlan plan = plan_multi_linear(sub, q, 0.1, AllocationStrategy::Relative);
	const double ms = 1000.0 * static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
	// one sum alone (generalized_sensitivity: the presence rows' maximum is the tree's floor), and the
	// bounded model (no floor: the whole Lipschitz maximum, twice: raw and grid-rounded weights)
	std::clock_t start_one = std::clock();
	const MultiLinearPlan one = plan_multi_linear(sub, Matrix{q[0]}, 0.1, AllocationStrategy::Relative);
	const double ms_one = 1000.0 * static_cast<double>(std::clock() - start_one) / CLOCKS_PER_SEC;
	SubUniverse bounded = sub;
	bounded.presence = kInfinity;
	start_one = std::clock();
	const MultiLinearPlan one_bounded = plan_multi_linear(bounded, Matrix{q[0]}, 0.1, AllocationStrategy::Relative);
	const double ms_bounded = 1000.0 * static_cast<double>(std::clock() - start_one) / CLOCKS_PER_SEC;
	std::printf("sum(lat) alone: %.1f ms CPU (scale %.17g); bounded model: %.1f ms CPU (scale %.17g)\n", ms_one,
	            one.cells[0].scale, ms_bounded, one_bounded.cells[0].scale);
	// (the scales are the sensitivities of the grid-rounded weights over epsilon 0.1)
	EXPECT_NEAR(one.cells[0].scale, 494.0, 1e-6);         // |lat| <= 49.4 at presence 1
	EXPECT_NEAR(one_bounded.cells[0].scale, 10.0, 1e-6);  // Lipschitz 1 under l2
	const std::clock_t start_max = std::clock();
	const PairMax lip = sub.metrics[0].pair_ratio_max(sub.domains[0], q[0].data(), 1, PairExpr::Metric, true, 2e9);
	const double ms_max = 1000.0 * static_cast<double>(std::clock() - start_max) / CLOCKS_PER_SEC;
	std::printf("avg(lat) over %zu l2 points: plan_multi_linear %.1f ms CPU; one pair maximum %.1f ms CPU (%.3g work, "
	            "value %.17g); scales %.17g %.17g\n",
	            n, ms, ms_max, lip.work, lip.value, plan.cells[0].scale, plan.cells[1].scale);
	EXPECT_GT(plan.cells[0].scale, 0);
	// the Lipschitz constant of lat under l2 (scale 1) is at most 1, attained by two points on a meridian
	EXPECT_LE(lip.value, 1.0);
	EXPECT_GT(lip.value, 0.999);
}

} // namespace
} // namespace dxpriv
