// Unit tests for multi-linear queries: constraints, Strategies 1-3, the optimal allocation and
// per-cell plans (MECHANISMS.md §3.6-3.8, §3.14 T3 and T4).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/allocation.h"
#include "core/error.h"
#include "core/linear_query.h"
#include "core/sensitivity.h"
#include "test_support.h"

using namespace dxpriv;

namespace {

using ::dxpriv::testing::error_kind;
using ::dxpriv::testing::record_metric;
using ::dxpriv::testing::random_plane_metric;
using ::dxpriv::testing::sample_sub_universes;

using Matrix = std::vector<std::vector<double>>;
const double kInf = std::numeric_limits<double>::infinity();
const AllocationStrategy kStrategies[] = {AllocationStrategy::EqualSplit, AllocationStrategy::EqualScale,
                                          AllocationStrategy::BudgetDistribution, AllocationStrategy::MinTotalVariance};
const AllocationStrategy kAllStrategies[] = {AllocationStrategy::EqualSplit, AllocationStrategy::EqualScale,
                                             AllocationStrategy::BudgetDistribution,
                                             AllocationStrategy::MinTotalVariance, AllocationStrategy::Relative};

// Line metric d(i,j) = |p_i - p_j|.
Matrix
line_metric(const std::vector<double> &p)
{
	Matrix d(p.size(), std::vector<double>(p.size()));
	for (std::size_t i = 0; i < p.size(); i++)
		for (std::size_t j = 0; j < p.size(); j++)
			d[i][j] = std::fabs(p[i] - p[j]);
	return d;
}

// m x n matrix of U[0,1] (binary = false) or fair {0,1} (binary = true) entries.
Matrix
random_cells(std::mt19937_64 &rng, std::size_t m, std::size_t n, bool binary)
{
	std::uniform_real_distribution<double> u(0, 1);
	Matrix q(m, std::vector<double>(n));
	for (auto &row : q)
		for (double &v : row)
			v = binary ? (u(rng) < 0.5 ? 0.0 : 1.0) : u(rng);
	return q;
}

// Sum of squared scales (the objective of §3.8).
double
sum_squares(const std::vector<double> &b)
{
	double s = 0;
	for (double v : b)
		s += v * v;
	return s;
}

// Geometric-mean improvement factor of the noisy cells against a baseline scale.
double
geo_if(const std::vector<double> &b, double baseline)
{
	double log_sum = 0;
	int n = 0;
	for (double v : b)
		if (v > 0) {
			log_sum += std::log(baseline / v);
			n++;
		}
	return n == 0 ? 1 : std::exp(log_sum / n);
}

// Dense copy of every row of a constraint set.
Matrix
dense_rows(const ConstraintSet &c)
{
	Matrix rows;
	for (std::size_t e = 0; e < c.count(); e++)
		rows.push_back(c.row(e));
	return rows;
}

// Literal Algorithm 3 of §3.8 (w_k ∝ s_k) on normalised rows, for `passes` iterations.
std::vector<double>
literal_algorithm3(const ConstraintSet &set, double epsilon, int passes)
{
	const std::size_t m = set.cells;
	const Matrix rows = dense_rows(set);
	struct {
		const Matrix &r;
		std::size_t count() const { return r.size(); }
		const std::vector<double> &row(std::size_t e) const { return r[e]; }
	} c{rows};
	std::vector<double> rem(c.count(), epsilon), E(m, 0);
	std::vector<char> active(m, 0);
	for (std::size_t e = 0; e < c.count(); e++)
		for (std::size_t k = 0; k < m; k++)
			if (c.row(e)[k] > 0)
				active[k] = 1;
	const double tau = 1e-12;
	for (int it = 0; it < passes; it++) {
		std::vector<double> s(m, 0);
		double total = 0;
		for (std::size_t k = 0; k < m; k++) {
			if (!active[k])
				continue;
			for (std::size_t e = 0; e < c.count(); e++)
				if (c.row(e)[k] > 0) {
					if (rem[e] <= tau * epsilon)
						active[k] = 0;
					s[k] = std::max(s[k], c.row(e)[k] / rem[e]);
				}
			if (active[k])
				total += s[k];
		}
		if (total == 0)
			break;
		for (std::size_t e = 0; e < c.count(); e++)
			for (std::size_t k = 0; k < m; k++)
				if (active[k])
					rem[e] -= c.row(e)[k] / total; // s'_k = s_k / w_k = total
		for (std::size_t k = 0; k < m; k++)
			if (active[k])
				E[k] += 1 / total;
	}
	std::vector<double> b(m, 0);
	for (std::size_t k = 0; k < m; k++)
		b[k] = E[k] > 0 ? 1 / E[k] : 0;
	return b;
}

// Brute-force optimum for m = 2: best boundary point over a fine grid of directions, refined.
double
brute_force_m2(const ConstraintSet &c, double epsilon)
{
	const Matrix rows = dense_rows(c);
	auto value = [&](double theta) {
		const double u = std::cos(theta), v = std::sin(theta);
		double worst = 0;
		for (const auto &r : rows)
			worst = std::max(worst, r[0] * u + r[1] * v);
		const double t = epsilon / worst; // x = t (u, v) touches the boundary
		return 1 / (t * u * t * u) + 1 / (t * v * t * v);
	};
	const int grid = 20000;
	const double step = (M_PI / 2) / grid;
	int best = 1;
	for (int i = 1; i < grid; i++)
		if (value(i * step) < value(best * step))
			best = i;
	double lo = (best - 1) * step, hi = (best + 1) * step;
	for (int it = 0; it < 200; it++) { // ternary search: convex near the optimum
		const double a = lo + (hi - lo) / 3, b = hi - (hi - lo) / 3;
		if (value(a) < value(b))
			hi = b;
		else
			lo = a;
	}
	return std::min(value(0.5 * (lo + hi)), value(best * step));
}

// Random cell weights over a sub-universe (real, integer or binary).
Matrix
random_sub_cells(std::mt19937_64 &rng, std::size_t m, std::size_t n, int kind)
{
	std::uniform_real_distribution<double> u(-3, 3);
	Matrix q(m, std::vector<double>(n));
	for (auto &row : q)
		for (double &v : row)
			v = kind == 0 ? u(rng) : kind == 1 ? std::round(u(rng)) : (u(rng) > 0 ? 1.0 : 0.0);
	return q;
}

} // namespace

// Strategy names are the SQL-facing ones and parse back (case-insensitively).
TEST(AllocationTest, StrategyNamesRoundTrip)
{
	for (AllocationStrategy s : kAllStrategies) {
		AllocationStrategy parsed = AllocationStrategy::EqualSplit;
		ASSERT_TRUE(parse_strategy(strategy_name(s), parsed));
		EXPECT_EQ(parsed, s);
	}
	AllocationStrategy out = AllocationStrategy::MinTotalVariance;
	EXPECT_TRUE(parse_strategy("ALGORITHM3", out));
	EXPECT_EQ(out, AllocationStrategy::BudgetDistribution);
	EXPECT_FALSE(parse_strategy("best", out));
	EXPECT_EQ(out, AllocationStrategy::BudgetDistribution);
	EXPECT_STREQ(strategy_name(AllocationStrategy::EqualSplit), "equal_split");
	EXPECT_STREQ(strategy_name(AllocationStrategy::EqualScale), "equal_scale");
	EXPECT_STREQ(strategy_name(AllocationStrategy::MinTotalVariance), "min_total_variance");
	EXPECT_STREQ(strategy_name(AllocationStrategy::Relative), "relative");
	// "optimal", the old name of min_total_variance, still parses (old sessions and scripts).
	EXPECT_TRUE(parse_strategy("Optimal", out));
	EXPECT_EQ(out, AllocationStrategy::MinTotalVariance);
	EXPECT_TRUE(parse_strategy("relative", out));
	EXPECT_EQ(out, AllocationStrategy::Relative);
}

// T3: points (0,1,3,6), Q = [[0,1,2,3],[0,0,1,1]].
TEST(AllocationTest, TestVectorT3)
{
	const Matrix d = line_metric({0, 1, 3, 6});
	const Matrix q = {{0, 1, 2, 3}, {0, 0, 1, 1}};
	const ConstraintSet c = build_constraints_dense(d, q);
	EXPECT_EQ(c.cells, 2u);
	const double base = plain_dp_scale_dense(d, q, 1);
	EXPECT_DOUBLE_EQ(base, 4);

	const auto s1 = allocate(c, AllocationStrategy::EqualSplit, 1);
	EXPECT_DOUBLE_EQ(s1[0], 2);
	EXPECT_DOUBLE_EQ(s1[1], 1);
	EXPECT_NEAR(geo_if(s1, base), std::sqrt(8.0), 1e-12);

	const auto s2 = allocate(c, AllocationStrategy::EqualScale, 1);
	EXPECT_DOUBLE_EQ(s2[0], 1);
	EXPECT_DOUBLE_EQ(s2[1], 1);
	EXPECT_NEAR(geo_if(s2, base), 4, 1e-12);

	const auto s3 = allocate(c, AllocationStrategy::BudgetDistribution, 1);
	EXPECT_NEAR(s3[0], 1, 1e-12);
	EXPECT_NEAR(s3[1], 1, 1e-12);

	// The literal iteration: (1.5, 1.5) after one pass, (1.125, 1.125) after two, limit (1, 1).
	auto one = literal_algorithm3(c, 1, 1), two = literal_algorithm3(c, 1, 2), many = literal_algorithm3(c, 1, 1000);
	EXPECT_NEAR(one[0], 1.5, 1e-12);
	EXPECT_NEAR(one[1], 1.5, 1e-12);
	EXPECT_NEAR(two[0], 1.125, 1e-12);
	EXPECT_NEAR(two[1], 1.125, 1e-12);
	EXPECT_NEAR(many[0], 1, 1e-9);
	EXPECT_NEAR(many[1], 1, 1e-9);

	AllocationStats stats;
	const auto opt = allocate(c, AllocationStrategy::MinTotalVariance, 1, &stats);
	EXPECT_LE(sum_squares(opt), 2 * (1 + 1e-12));
	EXPECT_NEAR(sum_squares(opt), 2, 1e-9); // (1, 1) is optimal (KKT with the multiplier on pair (1,2))
	for (AllocationStrategy s : kAllStrategies)
		EXPECT_LE(privacy_ratio(c, allocate(c, s, 1), 1), 1 + 1e-12) << strategy_name(s);

	// Epsilon scales every scale by 1/epsilon.
	const auto half = allocate(c, AllocationStrategy::EqualSplit, 0.5);
	EXPECT_DOUBLE_EQ(half[0], 4);
	EXPECT_DOUBLE_EQ(half[1], 2);
}

// Rows are a/d, without zero, duplicate or dominated single-entry rows; d = 0 with a != 0 is refused.
TEST(AllocationTest, ConstraintRowsAreNormalisedDeduplicatedAndPruned)
{
	const Matrix d = line_metric({0, 1, 3, 6});
	const ConstraintSet c = build_constraints_dense(d, {{0, 1, 2, 3}, {0, 0, 1, 1}});
	// Pairs (0,1)=(1,0), (0,2)=(2/3,1/3), (0,3)=(1/2,1/6), (1,2)=(1/2,1/2), (1,3)=(2/5,1/5);
	// (2,3)=(1/3,0) is a single-entry row below the column maximum 1: dominated, dropped.
	ASSERT_EQ(c.count(), 5u);
	EXPECT_DOUBLE_EQ(c.at(0, 0), 1);
	EXPECT_DOUBLE_EQ(c.at(0, 1), 0);
	EXPECT_FALSE(c.is_dense(0)); // one non-zero of two: sparse
	EXPECT_TRUE(c.is_dense(1));  // (2/3, 1/3)
	EXPECT_DOUBLE_EQ(c.at(1, 0), 2.0 / 3);
	EXPECT_DOUBLE_EQ(c.at(1, 1), 1.0 / 3);
	EXPECT_EQ(c.stored_entries(), 1u + 2 * 4);
	// Duplicate and zero rows are dropped: a constant cell and a duplicated point.
	// Points 1 and 2 coincide but carry equal weights: allowed; every non-zero row is (1, 0).
	const ConstraintSet dup = build_constraints_dense(line_metric({0, 1, 1, 2}), {{0, 1, 1, 2}, {5, 5, 5, 5}});
	EXPECT_EQ(dup.count(), 1u);
	EXPECT_EQ(error_kind([&] { build_constraints_dense(line_metric({0, 1, 1, 2}), {{0, 1, 2, 3}}); }),
	          ErrorKind::ProgramLimit); // distinct weights at distance 0: no finite scale
	EXPECT_EQ(dup.cells, 2u);
	for (std::size_t e = 0; e < dup.count(); e++)
		EXPECT_EQ(dup.row(e)[1], 0);
	// Single cell: only the maximal row survives.
	const ConstraintSet single = build_constraints_dense(line_metric({0, 1, 3, 6}), {{0, 1, 2, 3}});
	ASSERT_EQ(single.count(), 1u);
	EXPECT_DOUBLE_EQ(single.row(0)[0], 1);
	// The allocation of the constant cell is exact.
	const auto b = allocate(dup, AllocationStrategy::MinTotalVariance, 1);
	EXPECT_EQ(b[1], 0);
	EXPECT_GT(b[0], 0);
}

// Bad shapes, non-finite weights, bad metrics and bad epsilons raise the documented error kinds.
TEST(AllocationTest, ValidatesInputs)
{
	const Matrix d = line_metric({0, 1, 3});
	EXPECT_EQ(error_kind([&] { build_constraints_dense(d, {}); }), ErrorKind::Internal);
	EXPECT_EQ(error_kind([&] { build_constraints_dense(d, {{0, 1}}); }), ErrorKind::Internal);
	EXPECT_EQ(error_kind([&] { build_constraints_dense(d, {{0, 1, kInf}}); }), ErrorKind::DataException);
	EXPECT_EQ(error_kind([&] { build_constraints_dense(d, {{0, 1, std::nan("")}}); }), ErrorKind::DataException);
	EXPECT_EQ(error_kind([&] { build_constraints_dense({{0, 1}, {2, 0}}, {{0, 1}}); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(error_kind([&] { build_constraints_dense({{0, -1}, {-1, 0}}, {{0, 1}}); }), ErrorKind::InvalidParameter);
	const ConstraintSet c = build_constraints_dense(d, {{0, 1, 2}});
	EXPECT_EQ(error_kind([&] { allocate(c, AllocationStrategy::MinTotalVariance, 0); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(error_kind([&] { allocate(c, AllocationStrategy::MinTotalVariance, kInf); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(error_kind([&] { privacy_ratio(c, {1, 2}, 1); }), ErrorKind::Internal);

	SubUniverse sub;
	sub.domains = {Domain::range(0, 3, 1)};
	sub.metrics = {ColumnMetric::absolute(1)};
	EXPECT_EQ(error_kind([&] { build_constraints(sub, {{0, 1, 2}}); }), ErrorKind::Internal);
	EXPECT_EQ(error_kind([&] { build_constraints(sub, {{0, 1, 2, std::nan("")}}); }), ErrorKind::DataException);
	sub.presence = 0;
	EXPECT_EQ(error_kind([&] { build_constraints(sub, {{0, 1, 2, 3}}); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(error_kind([&] { plan_multi_linear(sub, {{0, 1, 2, 3}}, 0, AllocationStrategy::MinTotalVariance); }),
	          ErrorKind::InvalidParameter);
}

// A sub-universe with billions of pair edges is refused before any enumeration, with a hint.
TEST(AllocationTest, WorkCapIsAProgramLimit)
{
	SubUniverse sub;
	sub.domains = {Domain::range(0, 69999, 1)}; // 70000 values: 2.4e9 pairs under a discrete metric
	sub.metrics = {ColumnMetric::discrete(1)};
	sub.presence = kInf;
	std::vector<double> q(70000, 0);
	try {
		build_constraints(sub, {q});
		FAIL() << "no error";
	} catch (const CoreError &e) {
		EXPECT_EQ(e.kind(), ErrorKind::ProgramLimit);
		EXPECT_FALSE(e.hint().empty());
	}
}

// T4 guard: privacy_ratio and check_allocation on feasible, infeasible and exact-cell scales.
TEST(AllocationTest, CheckAllocationRejectsInfeasibleScales)
{
	const Matrix d = line_metric({0, 1, 3, 6});
	const ConstraintSet c = build_constraints_dense(d, {{0, 1, 2, 3}, {0, 0, 1, 1}});
	EXPECT_NO_THROW(check_allocation(c, {1, 1}, 1));
	EXPECT_NO_THROW(check_allocation(c, {2, 1}, 1));
	try {
		check_allocation(c, {0.9, 1}, 1);
		FAIL() << "no error";
	} catch (const CoreError &e) {
		EXPECT_EQ(e.kind(), ErrorKind::Internal);
		EXPECT_STREQ(e.what(), "allocation violates the privacy condition");
	}
	EXPECT_THROW(check_allocation(c, {1, 1}, 0.99), CoreError);
	EXPECT_EQ(privacy_ratio(c, {1, 0}, 1), kInf);
	EXPECT_EQ(privacy_ratio(c, {1, std::nan("")}, 1), kInf);
	EXPECT_THROW(check_allocation(c, {1, 0}, 1), CoreError);
	EXPECT_DOUBLE_EQ(privacy_ratio(c, {2, 2}, 1), 0.5);
}

// Random instances: T4 for every strategy, Optimal never worse than a heuristic, literal
// Algorithm 3 converges to the progressive-filling limit, m = 2 matches a brute-force search.
TEST(AllocationTest, RandomInstancesOptimalDominatesAndIsPrivate)
{
	std::mt19937_64 rng(20240611);
	std::uniform_int_distribution<int> pick_m(1, 8), pick_n(4, 24);
	std::uniform_real_distribution<double> pick_scale(0.2, 5);
	int brute_checked = 0;
	for (int inst = 0; inst < 240; inst++) {
		const std::size_t m = static_cast<std::size_t>(pick_m(rng)), n = static_cast<std::size_t>(pick_n(rng));
		const bool binary = inst % 2 == 1;
		const double epsilon = inst % 3 == 0 ? 1.0 : 0.37;
		const Matrix d = random_plane_metric(rng, n, pick_scale(rng));
		const Matrix q = random_cells(rng, m, n, binary);
		const ConstraintSet c = build_constraints_dense(d, q);
		std::vector<std::vector<double>> b;
		for (AllocationStrategy s : kStrategies) {
			b.push_back(allocate(c, s, epsilon));
			EXPECT_LE(privacy_ratio(c, b.back(), epsilon), 1 + 1e-9) << "instance " << inst << " " << strategy_name(s);
			EXPECT_NO_THROW(check_allocation(c, b.back(), epsilon));
		}
		const double opt = sum_squares(b[3]);
		for (int s = 0; s < 3; s++)
			EXPECT_LE(opt, sum_squares(b[s]) * (1 + 1e-12)) << "instance " << inst << " strategy " << s;
		// Algorithm 3 (literal iteration) approaches the progressive-filling limit from above.
		const auto lit = literal_algorithm3(c, epsilon, 3000);
		for (std::size_t k = 0; k < m; k++) {
			EXPECT_GE(lit[k], b[2][k] * (1 - 1e-9)) << "instance " << inst;
			EXPECT_NEAR(lit[k], b[2][k], 1e-6 * b[2][k] + 1e-300) << "instance " << inst;
		}
		// Strategy 3 is never worse than Strategy 2 (same first freeze point).
		for (std::size_t k = 0; k < m; k++)
			EXPECT_LE(b[2][k], b[1][k] * (1 + 1e-12));
		if (m == 2 && c.count() > 0 && b[3][0] > 0 && b[3][1] > 0) {
			const double brute = brute_force_m2(c, epsilon);
			EXPECT_NEAR(opt, brute, 1e-6 * brute) << "instance " << inst;
			EXPECT_LE(opt, brute * (1 + 1e-9)) << "instance " << inst;
			brute_checked++;
		}
	}
	EXPECT_GE(brute_checked, 15);
}

// The optimum certifies its own gap and beats the heuristics on a larger instance.
TEST(AllocationTest, OptimalCertifiesGapOnLargerInstances)
{
	std::mt19937_64 rng(7);
	for (bool binary : {false, true}) {
		const Matrix d = random_plane_metric(rng, 120, 1);
		const Matrix q = random_cells(rng, 20, 120, binary);
		const ConstraintSet c = build_constraints_dense(d, q);
		AllocationStats stats;
		const auto b = allocate(c, AllocationStrategy::MinTotalVariance, 1, &stats);
		EXPECT_LE(privacy_ratio(c, b, 1), 1 + 1e-12);
		EXPECT_LE(stats.relative_gap, 1e-9);
		EXPECT_GE(stats.rounds, 1u);
		for (AllocationStrategy s : {AllocationStrategy::EqualSplit, AllocationStrategy::EqualScale,
		                             AllocationStrategy::BudgetDistribution})
			EXPECT_LE(sum_squares(b), sum_squares(allocate(c, s, 1)) * (1 + 1e-12));
		// Any feasible perturbation is no better (local optimality probe).
		std::uniform_real_distribution<double> u(-1e-3, 1e-3);
		for (int t = 0; t < 50; t++) {
			std::vector<double> p(b);
			for (double &v : p)
				v *= 1 + u(rng);
			const double ratio = privacy_ratio(c, p, 1);
			for (double &v : p)
				v *= std::max(ratio, 0.0); // scale to the boundary
			EXPECT_GE(sum_squares(p), sum_squares(b) * (1 - 1e-9));
		}
	}
}

// Qualitative check of §3.8 on binary matrices: Strategy 3 >= 2 >= 1 in mean IF; Optimal >= 3.
TEST(AllocationTest, StrategyOrderingOnBinaryMatrices)
{
	std::mt19937_64 rng(12345);
	const Matrix d = random_plane_metric(rng, 60, 1);
	double mean[4] = {0, 0, 0, 0};
	const int trials = 30;
	for (int t = 0; t < trials; t++) {
		const Matrix q = random_cells(rng, 6, 60, true);
		const ConstraintSet c = build_constraints_dense(d, q);
		const double base = plain_dp_scale_dense(d, q, 1);
		for (int s = 0; s < 4; s++)
			mean[s] += geo_if(allocate(c, kStrategies[s], 1), base) / trials;
	}
	EXPECT_GE(mean[2], mean[1]);
	EXPECT_GE(mean[1], mean[0]);
	EXPECT_GE(mean[3], mean[2] * (1 - 1e-12));
	EXPECT_GE(mean[0], 1.0); // never worse than plain DP
}

// build_constraints over a sub-universe is equivalent to all pairs of the closed record metric.
TEST(AllocationTest, SubUniverseMatchesDenseRecordMetric)
{
	std::mt19937_64 rng(99);
	std::uniform_real_distribution<double> u(0.1, 3);
	int sub_index = 0;
	for (const SubUniverse &sub : sample_sub_universes()) {
		const std::size_t n = sub.size();
		const Matrix full = record_metric(sub);
		for (int kind = 0; kind < 3; kind++) {
			const std::size_t m = 1 + static_cast<std::size_t>(kind) * 2;
			Matrix q = random_sub_cells(rng, m, n, kind);
			Matrix q_ext = q;
			for (auto &row : q_ext)
				row.push_back(0); // q(⊥) = 0
			const ConstraintSet c = build_constraints(sub, q);
			const ConstraintSet dense = build_constraints_dense(full, q_ext);
			EXPECT_LE(c.count(), dense.count());
			for (int t = 0; t < 20; t++) {
				std::vector<double> b(m);
				for (double &v : b)
					v = u(rng);
				const double r1 = privacy_ratio(c, b, 1), r2 = privacy_ratio(dense, b, 1);
				EXPECT_NEAR(r1, r2, 1e-12 * r2) << "sub " << sub_index << " kind " << kind;
			}
			for (AllocationStrategy s : kAllStrategies) {
				const auto b1 = allocate(c, s, 0.8), b2 = allocate(dense, s, 0.8);
				EXPECT_LE(privacy_ratio(dense, b1, 0.8), 1 + 1e-9);
				// The optimum is unique but only its objective is converged to ~1e-10; the scales
				// themselves agree to about the square root of that.
				const double tol =
				    s == AllocationStrategy::MinTotalVariance || s == AllocationStrategy::Relative ? 1e-4 : 1e-7;
				for (std::size_t k = 0; k < m; k++)
					EXPECT_NEAR(b1[k], b2[k], tol * b2[k]) << "sub " << sub_index << " " << strategy_name(s);
				EXPECT_NEAR(sum_squares(b1), sum_squares(b2), 1e-9 * sum_squares(b2));
			}
			// The plain-DP baseline agrees with the dense one over the same records.
			Matrix dd = full;
			Matrix qq = q_ext;
			if (!std::isfinite(sub.presence)) { // bounded model: ⊥ is not a record
				dd.pop_back();
				for (auto &row : dd)
					row.pop_back();
				for (auto &row : qq)
					row.pop_back();
			}
			EXPECT_NEAR(plain_dp_scale(sub, q, 0.8), plain_dp_scale_dense(dd, qq, 0.8),
			            1e-12 * plain_dp_scale_dense(dd, qq, 0.8));
		}
		sub_index++;
	}
}

// The plain-DP baseline: all-pairs Delta Q, presence, sign-vector scan and edge fallback.
TEST(AllocationTest, PlainDpScale)
{
	SubUniverse sub;
	sub.domains = {Domain::range(0, 10, 1)};
	sub.metrics = {ColumnMetric::absolute(1)};
	sub.presence = kInf;
	std::vector<double> q(11);
	for (std::size_t i = 0; i < q.size(); i++)
		q[i] = static_cast<double>(i);
	EXPECT_DOUBLE_EQ(plain_dp_scale(sub, {q}, 1), 10); // Delta q = 10 over all pairs, eps_min = 1
	EXPECT_DOUBLE_EQ(plain_dp_scale(sub, {q}, 2), 5);
	sub.presence = 0.5;
	EXPECT_DOUBLE_EQ(plain_dp_scale(sub, {q}, 1), 20); // eps_min = presence
	EXPECT_DOUBLE_EQ(plain_dp_scale(sub, {std::vector<double>(11, 0)}, 1), 0);

	// Large universe: the sign-vector scan (n^2 m / 2 > cap) gives the same exact L1 diameter.
	SubUniverse big;
	big.domains = {Domain::range(0, 69999, 1)};
	big.metrics = {ColumnMetric::absolute(1)};
	big.presence = kInf;
	std::vector<double> a(70000), b(70000);
	for (std::size_t i = 0; i < a.size(); i++) {
		a[i] = static_cast<double>(i % 7);
		b[i] = static_cast<double>(i % 5) * 2;
	}
	bool exact = false;
	EXPECT_DOUBLE_EQ(plain_dp_scale(big, {a, b}, 1, &exact), 14); // (6,0) vs (0,8)
	EXPECT_TRUE(exact);

	// Neither scan affordable (m > 30): the maximum over the constraint edges, a lower bound.
	Matrix many(31, std::vector<double>(70000, 0));
	for (std::size_t i = 0; i < 70000; i++)
		many[0][i] = static_cast<double>(i % 10);
	const double fallback = plain_dp_scale(big, many, 1, &exact);
	EXPECT_FALSE(exact);
	EXPECT_DOUBLE_EQ(fallback, 9); // the 9 -> 0 step at i = 10j; the true all-pairs value is also 9
}

// m = 1: plan_multi_linear reproduces plan_linear_query bit for bit, for every strategy.
TEST(AllocationTest, SingleCellPlanEqualsPlanLinearQuery)
{
	std::mt19937_64 rng(5);
	std::vector<std::vector<double>> qs;
	for (const SubUniverse &sub : sample_sub_universes()) {
		const std::size_t n = sub.size();
		qs.clear();
		for (int kind = 0; kind < 3; kind++)
			qs.push_back(random_sub_cells(rng, 1, n, kind)[0]);
		std::vector<double> big(n), tiny(n), zero(n, 0);
		for (std::size_t u = 0; u < n; u++) {
			big[u] = 1e13 * static_cast<double>(u % 5);  // integer weights, scale above 2^40
			tiny[u] = 1e-7 * static_cast<double>(u % 3) + 0.1;
		}
		qs.push_back(big);
		qs.push_back(tiny);
		qs.push_back(zero);
		for (double epsilon : {1.0, 0.01, 3.5})
			for (const auto &q : qs) {
				LinearNoisePlan ref;
				try {
					ref = plan_linear_query(sub, q, epsilon);
				} catch (const CoreError &e) {
					for (AllocationStrategy s : kAllStrategies)
						EXPECT_EQ(error_kind([&] { plan_multi_linear(sub, {q}, epsilon, s); }), e.kind());
					continue;
				}
				for (AllocationStrategy s : kAllStrategies) {
					const MultiLinearPlan plan = plan_multi_linear(sub, {q}, epsilon, s);
					ASSERT_EQ(plan.cells.size(), 1u);
					EXPECT_EQ(plan.strategy, s);
					EXPECT_EQ(plan.cells[0].scale, ref.scale) << strategy_name(s);
					EXPECT_EQ(plan.cells[0].sensitivity, ref.sensitivity);
					EXPECT_EQ(plan.cells[0].grid, ref.grid);
					EXPECT_EQ(plan.cells[0].integer_weights, ref.integer_weights);
					// Two cells, one of them identically zero: the noisy one is still calibrated
					// exactly like a single query (through the constraint path).
					const MultiLinearPlan two = plan_multi_linear(sub, {zero, q}, epsilon, s);
					EXPECT_EQ(two.cells[1].scale, ref.scale) << strategy_name(s);
					EXPECT_EQ(two.cells[1].sensitivity, ref.sensitivity);
					EXPECT_EQ(two.cells[1].grid, ref.grid);
					EXPECT_EQ(two.cells[0].scale, 0);
				}
			}
	}
}

// Several cells: per-cell grids follow the single-query rule and the final allocation is private
// for the rounded weights; a constant cell stays exact; strategies are ordered by sum of b^2.
TEST(AllocationTest, MultiCellPlan)
{
	std::mt19937_64 rng(11);
	for (const SubUniverse &sub : sample_sub_universes()) {
		const std::size_t n = sub.size();
		Matrix q = random_sub_cells(rng, 4, n, 0);
		q[1] = random_sub_cells(rng, 1, n, 1)[0]; // integer cell
		q[2].assign(n, 0);                          // exact cell
		double previous = kInf;
		for (AllocationStrategy s : {AllocationStrategy::EqualSplit, AllocationStrategy::MinTotalVariance}) {
			const MultiLinearPlan plan = plan_multi_linear(sub, q, 0.5, s);
			ASSERT_EQ(plan.cells.size(), 4u);
			EXPECT_EQ(plan.cells[2].scale, 0);
			EXPECT_EQ(plan.cells[2].sensitivity, 0);
			EXPECT_TRUE(plan.cells[1].integer_weights);
			EXPECT_EQ(plan.cells[1].grid, 1);
			EXPECT_FALSE(plan.cells[0].integer_weights);
			Matrix q_grid = q;
			std::vector<double> scales;
			double ss = 0;
			for (std::size_t k = 0; k < 4; k++) {
				const LinearNoisePlan &cell = plan.cells[k];
				EXPECT_GT(cell.grid, 0);
				EXPECT_EQ(cell.grid, std::exp2(std::ilogb(cell.grid))); // a power of two
				if (cell.scale > 0) {
					EXPECT_NEAR(cell.sensitivity, cell.scale * 0.5, 1e-15 * cell.sensitivity);
					if (!cell.integer_weights) { // documented rule: scale / grid in [2^40, 2^41) up to re-allocation
						EXPECT_LT(cell.scale / cell.grid, std::exp2(43));
					}
				}
				for (double &w : q_grid[k])
					w = static_cast<double>(to_grid_units(w, cell.grid)) * cell.grid;
				scales.push_back(cell.scale);
				ss += cell.scale * cell.scale;
			}
			EXPECT_LE(privacy_ratio(build_constraints(sub, q_grid), scales, 0.5), 1 + 1e-9);
			EXPECT_LE(ss, previous * (1 + 1e-9));
			previous = ss;
		}
	}
}

// Integer cells (grid 1): rounding changes nothing, so the plan's scales are the allocation of
// the raw constraints, for every strategy.
TEST(AllocationTest, IntegerCellsPlanUsesRawAllocation)
{
	std::mt19937_64 rng(17);
	for (const SubUniverse &sub : sample_sub_universes()) {
		const Matrix q = random_sub_cells(rng, 3, sub.size(), 2);
		const ConstraintSet c = build_constraints(sub, q);
		for (AllocationStrategy s : kAllStrategies) {
			const MultiLinearPlan plan = plan_multi_linear(sub, q, 0.7, s);
			const std::vector<double> b = allocate(c, s, 0.7);
			for (std::size_t k = 0; k < 3; k++) {
				EXPECT_EQ(plan.cells[k].grid, 1);
				EXPECT_TRUE(plan.cells[k].integer_weights);
				if (std::count_if(b.begin(), b.end(), [](double v) { return v > 0; }) > 1) {
					EXPECT_EQ(plan.cells[k].scale, b[k]) << strategy_name(s);
				} else { // a single noisy cell takes S from generalized_sensitivity
					EXPECT_NEAR(plan.cells[k].scale, b[k], 1e-15 * b[k]);
				}
			}
		}
	}
}

// GROUP BY cells (SUM and COUNT per group of a discrete column): sparse rows, the same privacy
// condition as the closed record metric, and an optimum that beats Strategy 3.
TEST(AllocationTest, GroupByCellsAreSparseAndExact)
{
	SubUniverse sub;
	sub.domains = {Domain::enumerated({"g0", "g1", "g2", "g3", "g4", "g5"}), Domain::range(0, 4, 1)};
	sub.metrics = {ColumnMetric::discrete(1), ColumnMetric::absolute(2)};
	sub.presence = 1.5;
	const std::size_t n = sub.size(), groups = 6, m = 2 * groups;
	Matrix q(m, std::vector<double>(n, 0));
	for (std::size_t u = 0; u < n; u++) {
		const auto idx = sub.unflatten(u);
		q[2 * idx[0]][u] = sub.domains[1].ordinal(idx[1]); // SUM(value) of the group
		q[2 * idx[0] + 1][u] = 1;                         // COUNT(*) of the group
	}
	const ConstraintSet c = build_constraints(sub, q);
	std::size_t sparse_rows = 0;
	for (std::size_t e = 0; e < c.count(); e++) {
		std::size_t nnz = 0;
		c.for_each(e, [&nnz](std::size_t, double v) { nnz += v != 0; });
		EXPECT_LE(nnz, 4u); // an edge touches the cells of at most two groups
		sparse_rows += !c.is_dense(e);
	}
	EXPECT_EQ(sparse_rows, c.count());

	Matrix q_ext = q;
	for (auto &row : q_ext)
		row.push_back(0);
	const ConstraintSet dense = build_constraints_dense(record_metric(sub), q_ext);
	std::mt19937_64 rng(3);
	std::uniform_real_distribution<double> u(0.5, 4);
	for (int t = 0; t < 20; t++) {
		std::vector<double> b(m);
		for (double &v : b)
			v = u(rng);
		EXPECT_NEAR(privacy_ratio(c, b, 1), privacy_ratio(dense, b, 1), 1e-12);
	}
	AllocationStats stats;
	const auto opt = allocate(c, AllocationStrategy::MinTotalVariance, 1, &stats);
	const auto s3 = allocate(c, AllocationStrategy::BudgetDistribution, 1);
	EXPECT_LE(privacy_ratio(dense, opt, 1), 1 + 1e-9);
	EXPECT_LT(sum_squares(opt), sum_squares(s3) * 0.99); // SUM and COUNT need different scales
	EXPECT_LE(stats.relative_gap, 1e-9);
	EXPECT_NEAR(sum_squares(opt), sum_squares(allocate(dense, AllocationStrategy::MinTotalVariance, 1)), 1e-9 * sum_squares(opt));
	// Symmetric groups get the same scales.
	for (std::size_t g = 1; g < groups; g++) {
		EXPECT_NEAR(opt[2 * g], opt[0], 1e-4 * opt[0]);
		EXPECT_NEAR(opt[2 * g + 1], opt[1], 1e-4 * opt[1]);
	}
}

// Row storage is canonical: dense iff more than 2m/3 non-zeros, whichever builder path is used.
TEST(AllocationTest, RowStorageIsCanonical)
{
	const Matrix d = line_metric({0, 1, 2, 3});
	// m = 3 and at most 2 non-zero cells per point (the sparse builder path); pair (2,3) differs
	// in all three cells (a dense row), pair (0,1) in one (a sparse row).
	const Matrix q = {{0, 1, 0, 5}, {0, 0, 0, 5}, {0, 0, 2, 0}};
	const ConstraintSet c = build_constraints_dense(d, q);
	std::size_t dense_rows = 0;
	for (std::size_t e = 0; e < c.count(); e++) {
		std::size_t nnz = 0;
		for (double v : c.row(e))
			nnz += v != 0;
		EXPECT_EQ(c.is_dense(e), 3 * nnz > 2 * 3) << "row " << e;
		dense_rows += c.is_dense(e);
	}
	EXPECT_GT(dense_rows, 0u);
	EXPECT_LT(dense_rows, c.count());
	// The same rows through the dense-weight path (an extra constant cell makes every point dense).
	Matrix q2 = q;
	q2.push_back({7, 7, 7, 7});
	const ConstraintSet c2 = build_constraints_dense(d, q2);
	ASSERT_EQ(c2.count(), c.count());
	for (std::size_t e = 0; e < c.count(); e++) {
		auto r2 = c2.row(e);
		r2.pop_back();
		EXPECT_EQ(r2, c.row(e));
	}
}
