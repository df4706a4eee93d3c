// The pair tree's row searches (PairSearch, pair_tree.h) and PairPlanner's generation with two or
// more cells varying over an l1/l2/linf points column, against the exhaustive references: the
// searches' kept values are the brute force's largest values above the threshold, on random point
// sets (2-4 dimensions, uniform, grid ties, near-duplicates, clusters, rounded) with random
// coefficients and budget-block rows; plan_multi_linear of 2-5 cells of several weight kinds
// (coordinates, affine, indicators, random, clamps, 1e12-scaled, cones, CASE, constants) under every
// strategy, estimates and budget blocks plans as the stored all-pairs reference (same errors, grids
// and integer flags; scales within 1e-9 relative), and its final scales satisfy privacy_ratio <=
// 1 + 1e-9 on the reference's full set of rounded rows. Larger sets (10^4 and 10^5 points) plan
// and print their CPU time; their privacy condition is checked by a scan of every pair.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
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
#include "core/point_set.h"
#include "pair_fixtures.h"

namespace dxpriv {
namespace {

using Matrix = std::vector<std::vector<double>>;


ColumnMetric
search_metric(int which, double scale)
{
	return which == 0 ? ColumnMetric::lp(1, scale) : which == 1 ? ColumnMetric::lp(2, scale) : ColumnMetric::lp(0, scale);
}

// PairSearch::top_rows keeps exactly the brute force's largest row values above the threshold
// (values compared as doubles: the same expression), and max_cell is pair_scan_max's double.
TEST(PairSearchTest, RowSearchesAreTheBruteForce)
{
	testing::PairSwitchGuard guard;
	detail::set_pair_tree_min_points(2);
	std::mt19937_64 rng(6901);
	std::uniform_real_distribution<double> unit(0, 1);
	int compared = 0;
	for (int t = 0; t < 240; t++) {
		const std::size_t dims = 2 + static_cast<std::size_t>(t % 3);
		const std::size_t n = 60 + static_cast<std::size_t>(rng() % 260);
		const std::vector<double> c = testing::pair_test_points(rng, n, dims, t % 5, 4);
		const Domain dom = Domain::points(dims, c);
		const double scale = t % 4 == 0 ? 0.37 : (t % 4 == 1 ? 1e-3 : 1.0);
		const ColumnMetric metric = search_metric(t % 3, scale);
		const std::size_t cells = 2 + static_cast<std::size_t>(rng() % 4);
		std::vector<double> w(n * cells);
		for (std::size_t k = 0; k < cells; k++) {
			const std::vector<double> q = testing::pair_test_weight(rng, c, n, dims, static_cast<int>(rng() % 9));
			for (std::size_t u = 0; u < n; u++)
				w[u * cells + k] = q[u];
		}
		const std::unique_ptr<PairSearch> search = metric.pair_search(dom, w.data(), cells, cells, 2e9);
		ASSERT_TRUE(search != nullptr);
		for (std::size_t k = 0; k < cells; k++) {
			const PairMax ref = metric.pair_ratio_max(dom, w.data() + k, cells, PairExpr::Metric, false, 2e9);
			const PairMax got = search->max_cell(k, PairExpr::Metric, 0);
			EXPECT_EQ(got.value, ref.value) << "case " << t << " cell " << k;
		}
		for (int qn = 0; qn < 4; qn++) {
			PairRowQuery query;
			query.rows = 1 + static_cast<std::size_t>(qn % 2) * 2; // the whole epsilon, or two blocks too
			query.coef.assign(query.rows * cells, 0.0);
			for (std::size_t k = 0; k < cells; k++) {
				query.coef[k] = (qn == 3 && k == 0) ? 0.0 : unit(rng) / (1 + std::fabs(w[k]));
				if (query.rows > 1)
					query.coef[(1 + k % 2) * cells + k] = query.coef[k] * 2.5;
			}
			// rows of the brute force: the same expression
			std::vector<double> all;
			for (std::size_t i = 0; i + 1 < n; i++)
				for (std::size_t j = i + 1; j < n; j++) {
					const double d = metric.distance(dom, i, j), inv_d = 1 / d;
					double v = 0;
					for (std::size_t r = 0; r < query.rows; r++) {
						double s = 0;
						for (std::size_t k = 0; k < cells; k++)
							s += std::fabs(w[i * cells + k] - w[j * cells + k]) * query.coef[r * cells + k];
						v = r == 0 ? s * inv_d : std::max(v, s * inv_d);
					}
					all.push_back(v);
				}
			std::sort(all.begin(), all.end(), std::greater<double>());
			query.keep = qn == 0 ? 1 : 1 + rng() % 40;
			query.threshold = qn >= 2 ? all[std::min(all.size() - 1, static_cast<std::size_t>(rng() % 200))] : 0;
			const PairRowResult got = search->top_rows(query);
			EXPECT_TRUE(got.finite);
			std::vector<double> want;
			for (double v : all)
				if (v > query.threshold && want.size() < query.keep)
					want.push_back(v);
			std::vector<double> values;
			for (const PairRow &r : got.rows) {
				values.push_back(r.value);
				EXPECT_LT(r.i, r.j);
			}
			std::sort(values.begin(), values.end(), std::greater<double>());
			EXPECT_EQ(values, want) << "case " << t << " query " << qn;
			compared++;
		}
	}
	EXPECT_EQ(compared, 960);
}

// The work cap is one budget for all the searches of a PairSearch: a second search of the same
// work passes a cap of 1.5 times the first's and is refused.
TEST(PairSearchTest, WorkCapCountsEverySearch)
{
	testing::PairSwitchGuard guard;
	detail::set_pair_tree_min_points(2);
	std::mt19937_64 rng(3);
	const std::size_t n = 3000; // about 4.5e6 pairs: the cap is checked every 2^20 units of work
	const std::vector<double> c = testing::pair_test_points(rng, n, 2, 3, 4);
	const Domain dom = Domain::points(2, c);
	const ColumnMetric metric = ColumnMetric::lp(2, 1.0);
	std::vector<double> w(2 * n);
	for (double &x : w)
		x = std::uniform_real_distribution<double>(0, 1)(rng);
	PairRowQuery every; // every pair is kept: nothing can be pruned
	every.coef = {1.0, 1.0};
	every.keep = n * n;
	double first = 0;
	{
		const std::unique_ptr<PairSearch> s = metric.pair_search(dom, w.data(), 2, 2, 2e9);
		first = s->top_rows(every).work;
		EXPECT_EQ(s->work(), first);
		EXPECT_GT(first, 3e6);
	}
	const std::unique_ptr<PairSearch> s = metric.pair_search(dom, w.data(), 2, 2, 1.5 * first);
	EXPECT_EQ(s->top_rows(every).work, first);
	try {
		s->top_rows(every);
		ADD_FAILURE() << "not refused";
	} catch (const CoreError &e) {
		EXPECT_EQ(e.kind(), ErrorKind::ProgramLimit);
	}
}

struct Outcome {
	MultiLinearPlan plan;
	std::string error;
};

// plan_multi_linear by the stored all-pairs reference (tree and generation off), by the tree, or by
// the pair generation's scans (generation on, tree off).
Outcome
plan_with(const SubUniverse &sub, const Matrix &q, double epsilon, const AllocationRequest &request, bool tree,
          bool generation)
{
	testing::PairSwitchGuard guard;
	detail::set_pair_tree_min_points(2);
	detail::set_pair_tree(tree);
	detail::set_pair_generation(generation);
	Outcome o;
	try {
		o.plan = plan_multi_linear(sub, q, epsilon, request, nullptr);
	} catch (const CoreError &e) {
		o.error = std::to_string(static_cast<int>(e.kind())) + e.what();
	}
	return o;
}

bool
near(double a, double b)
{
	return a == b || std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
}

Matrix
on_grids(const Matrix &q, const MultiLinearPlan &plan)
{
	Matrix out = q;
	for (std::size_t k = 0; k < q.size(); k++) {
		const LinearNoisePlan &c = plan.cells[k];
		if (c.integer_weights && c.grid == 1)
			continue;
		for (double &w : out[k])
			w = static_cast<double>(to_grid_units(w, c.grid)) * c.grid;
	}
	return out;
}

std::size_t
varying_cells(const Matrix &q)
{
	std::size_t v = 0;
	for (const auto &w : q)
		v += std::any_of(w.begin(), w.end(), [&w](double x) { return !(x == w[0]); });
	return v;
}

TEST(PairSearchTest, SeveralVaryingCellsPlanAsTheReference)
{
	std::mt19937_64 rng(69);
	const AllocationStrategy strategies[] = {AllocationStrategy::Relative, AllocationStrategy::BudgetDistribution,
	                                         AllocationStrategy::MinTotalVariance, AllocationStrategy::EqualScale,
	                                         AllocationStrategy::EqualSplit};
	int cases = 0, identical = 0, several = 0, other = 0, scans_plan = 0, by_tree = 0;
	for (int t = 0; t < 200; t++) {
		const std::size_t dims = 2 + static_cast<std::size_t>(t % 3);
		const std::size_t n = 120 + static_cast<std::size_t>(rng() % 180);
		const std::vector<double> c = testing::pair_test_points(rng, n, dims, t % 5, 4);
		SubUniverse sub;
		sub.domains.push_back(Domain::points(dims, c));
		const double scale = (t % 7 == 0) ? 1e-3 : (t % 7 == 1 ? 0.37 : 1.0);
		sub.metrics.push_back(search_metric(t % 3, scale));
		sub.presence = (t % 6 == 5) ? kInfinity : (t % 6 == 4 ? 0.01 : 1.0);
		const std::size_t m = 2 + static_cast<std::size_t>(rng() % 4);
		Matrix q(m);
		for (std::size_t k = 0; k < m; k++)
			q[k] = testing::pair_test_weight(rng, c, n, dims, k < 2 ? static_cast<int>(rng() % 8) : static_cast<int>(rng() % 9));
		AllocationRequest request;
		request.strategy = strategies[t % 5];
		if (t % 3 == 1)
			request.estimates.push_back(Estimate{{0, 1}, {1.0, 100.0}});
		if (t % 10 == 9 && m >= 3) {
			request.block_epsilon = {0.3, 0.7};
			request.block_of.assign(m, 1);
			request.block_of[0] = 0;
			request.estimates.clear();
		}
		const double epsilon = !request.block_epsilon.empty() ? 1.0 : t % 2 ? 0.1 : 2.0;
		several += varying_cells(q) >= 2;
		const std::string what = "case " + std::to_string(t);
		const Outcome ref = plan_with(sub, q, epsilon, request, false, false);
		const std::size_t before = detail::pair_tree_generations();
		const Outcome got = plan_with(sub, q, epsilon, request, true, true);
		by_tree += detail::pair_tree_generations() > before;
		cases++;
		EXPECT_EQ(ref.error, got.error) << what;
		if (!ref.error.empty() || !got.error.empty())
			continue;
		double ss_ref = 0, ss_got = 0;
		bool close = true, same = true;
		for (std::size_t k = 0; k < m; k++) {
			ss_ref += ref.plan.cells[k].scale * ref.plan.cells[k].scale;
			ss_got += got.plan.cells[k].scale * got.plan.cells[k].scale;
			close = close && near(ref.plan.cells[k].scale, got.plan.cells[k].scale);
		}
		// the pair generation's scans (allocation_pairs.cpp, pair_generation_test) may settle a heuristic's
		// tie otherwise than the stored reference: the tree then gives the scans' plan, bit for bit
		bool as_scans = !close;
		if (as_scans) {
			const Outcome scans = plan_with(sub, q, epsilon, request, false, true);
			for (std::size_t k = 0; k < m && as_scans; k++)
				as_scans = scans.error.empty() && scans.plan.cells[k].scale == got.plan.cells[k].scale;
		}
		if (request.strategy == AllocationStrategy::MinTotalVariance && !close && ss_got <= ss_ref * (1 + 1e-9)) {
			other++; // another minimiser of the same objective (a cell far smaller than another)
			same = false;
		} else if (as_scans) {
			scans_plan++;
			same = false;
			std::printf("%s: the pair generation's plan (not the stored reference's)\n", what.c_str());
		} else {
			for (std::size_t k = 0; k < m; k++) {
				const LinearNoisePlan &a = ref.plan.cells[k], &b = got.plan.cells[k];
				EXPECT_EQ(a.grid, b.grid) << what << " cell " << k;
				EXPECT_EQ(a.integer_weights, b.integer_weights) << what << " cell " << k;
				EXPECT_TRUE(near(a.scale, b.scale)) << what << " cell " << k << ": " << a.scale << " vs " << b.scale;
				EXPECT_TRUE(near(a.sensitivity, b.sensitivity)) << what << " cell " << k;
				EXPECT_TRUE(near(ref.plan.epsilon_share[k], got.plan.epsilon_share[k])) << what << " cell " << k;
				same = same && a.scale == b.scale && a.sensitivity == b.sensitivity &&
				       ref.plan.epsilon_share[k] == got.plan.epsilon_share[k];
			}
		}
		identical += same;
		std::vector<double> scales;
		for (const LinearNoisePlan &cell : got.plan.cells)
			scales.push_back(cell.scale);
		const ConstraintSet full = build_constraints(sub, on_grids(q, got.plan));
		EXPECT_LE(privacy_ratio(full, scales, epsilon), 1 + 1e-9) << what;
	}
	std::printf("pair search: %d plans, %d with two or more varying cells, %d planned by the tree's searches, %d "
	            "bit-identical, %d other minimisers, %d the pair generation's\n", cases, several, by_tree, identical,
	            other, scans_plan);
	EXPECT_EQ(by_tree, several);
	EXPECT_LE(scans_plan + other, 4);
	EXPECT_GT(several, 180);
	EXPECT_GE(identical, 175);
}

// Rounded pseudo-random points in the US box (analysis_bench.py's shape).
std::vector<double>
box_points(std::size_t n, unsigned seed)
{
	std::mt19937_64 rng(seed);
	std::uniform_real_distribution<double> lon(-124.7, -67.0), lat(25.1, 49.4);
	std::vector<std::pair<double, double>> pts;
	while (pts.size() < n) {
		pts.emplace_back(std::round(lon(rng) * 1e4) / 1e4, std::round(lat(rng) * 1e4) / 1e4);
		if (pts.size() % 20000 == 0 || pts.size() == n) {
			std::sort(pts.begin(), pts.end());
			pts.erase(std::unique(pts.begin(), pts.end()), pts.end());
		}
	}
	std::vector<double> c;
	for (const auto &p : pts) {
		c.push_back(p.first);
		c.push_back(p.second);
	}
	return c;
}

// privacy_ratio of the grid-rounded weights over every presence and pair row, by a scan.
double
scan_ratio(const SubUniverse &sub, const Matrix &q, const std::vector<double> &scales, double epsilon)
{
	const std::size_t n = q[0].size(), m = q.size();
	const Domain &dom = sub.domains[0];
	double worst = 0;
	for (std::size_t i = 0; i < n; i++) {
		double s = 0;
		for (std::size_t k = 0; k < m; k++)
			s += std::fabs(q[k][i]) / (scales[k] * epsilon);
		if (std::isfinite(sub.presence))
			worst = std::max(worst, s / sub.presence);
		for (std::size_t j = i + 1; j < n; j++) {
			double a = 0;
			for (std::size_t k = 0; k < m; k++)
				a += std::fabs(q[k][i] - q[k][j]) / (scales[k] * epsilon);
			worst = std::max(worst, a / sub.metrics[0].distance(dom, i, j));
		}
	}
	return worst;
}

// The benchmark shapes over 10^4 points (two and five aggregates, bounded and unbounded models):
// planned (the stored reference would need 5e7 pair rows, past the work cap), private on every
// pair. With DXPRIV_BIG_BENCH set, also 10^5 points (printed CPU times).
TEST(PairSearchTest, TenThousandPointsPlanWithSeveralVaryingCells)
{
	std::vector<std::size_t> sizes = {10000};
	if (std::getenv("DXPRIV_BIG_BENCH"))
		sizes.push_back(100000);
	for (std::size_t n0 : sizes) {
		const std::vector<double> c = box_points(n0, 2026);
		const std::size_t n = c.size() / 2;
		SubUniverse sub;
		sub.domains.push_back(Domain::points(2, c));
		sub.metrics.push_back(ColumnMetric::lp(2, 1.0));
		// avg(lat) + count(*) FILTER (WHERE lon < -100): sum(lat), count(*), the filtered count
		Matrix two(3, std::vector<double>(n, 1.0));
		// count(*), count FILTER lat > 40, sum(lat), avg(lon), count FILTER lon < -100 (analysis_bench's five)
		Matrix five(6, std::vector<double>(n, 1.0));
		for (std::size_t i = 0; i < n; i++) {
			const double x = c[2 * i], y = c[2 * i + 1];
			two[0][i] = y;
			two[2][i] = x < -100;
			five[1][i] = y > 40;
			five[2][i] = y;
			five[3][i] = x;
			five[5][i] = x < -100;
		}
		for (int bounded = 0; bounded < 2; bounded++) {
			sub.presence = bounded ? kInfinity : 1.0;
			for (const Matrix *q : {&two, &five}) {
				AllocationRequest request;
				if (q == &five)
					request.estimates.push_back(Estimate{{3, 4}, {1.0, 8100.0}});
				const std::size_t before = detail::pair_tree_generations();
				const std::clock_t start = std::clock();
				const MultiLinearPlan plan = plan_multi_linear(sub, *q, 0.1, request, nullptr);
				EXPECT_GT(detail::pair_tree_generations(), before);
				const double ms = 1000.0 * static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
				std::vector<double> scales;
				for (const LinearNoisePlan &cell : plan.cells)
					scales.push_back(cell.scale);
				std::printf("%zu points, %zu cells, %s: plan_multi_linear %.1f ms CPU; scales", n, q->size(),
				            bounded ? "bounded" : "unbounded", ms);
				for (double s : scales)
					std::printf(" %.6g", s);
				std::printf("\n");
				if (n <= 10000)
					EXPECT_LE(scan_ratio(sub, on_grids(*q, plan), scales, 0.1), 1 + 1e-9);
				if (std::getenv("DXPRIV_BIG_BENCH") && n <= 10000) { // before: the pair generation's scans
					testing::PairSwitchGuard guard;
					detail::set_pair_tree(false);
					const std::clock_t t0 = std::clock();
					const MultiLinearPlan scans = plan_multi_linear(sub, *q, 0.1, request, nullptr);
					const double ms_scans = 1000.0 * static_cast<double>(std::clock() - t0) / CLOCKS_PER_SEC;
					bool same = true;
					for (std::size_t k = 0; k < scales.size(); k++)
						same = same && scans.cells[k].scale == scales[k];
					std::printf("  the same by the pair generation's scans (no tree): %.1f ms CPU, %s\n", ms_scans,
					            same ? "the same scales" : "other scales");
				}
			}
		}
	}
}

} // namespace
} // namespace dxpriv
