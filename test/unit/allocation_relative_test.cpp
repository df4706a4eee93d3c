// Unit tests for the relative (default) allocation, estimates (AVG as one answer) and declared
// per-aggregate budgets: privacy, the equal_split caps, invariance to rescaling a cell, optimality
// against brute force for m = 2, single cells, and the issue-11 query shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "allocation_shapes.h"
#include "core/accuracy.h"
#include "core/allocation.h"
#include "core/error.h"
#include "core/linear_query.h"
#include "test_support.h"

using namespace dxpriv;

namespace {

using ::dxpriv::testing::allocation_shapes;
using ::dxpriv::testing::error_kind;
using ::dxpriv::testing::random_plane_metric;
using ::dxpriv::testing::sample_sub_universes;

using Matrix = std::vector<std::vector<double>>;
const double kInf = std::numeric_limits<double>::infinity();

// m x n weights: U[0,1] (kind 0), {0,1} (kind 1) or U[-3,3] integers (kind 2).
Matrix
random_cells(std::mt19937_64 &rng, std::size_t m, std::size_t n, int kind)
{
	std::uniform_real_distribution<double> u(0, 1), v(-3, 3);
	Matrix q(m, std::vector<double>(n));
	for (auto &row : q)
		for (double &x : row)
			x = kind == 0 ? u(rng) : kind == 1 ? (u(rng) < 0.5 ? 0.0 : 1.0) : std::round(v(rng));
	return q;
}

// sum_k w_k b_k^2.
double
objective(const std::vector<double> &w, const std::vector<double> &b)
{
	double s = 0;
	for (std::size_t k = 0; k < b.size(); k++)
		s += w[k] * b[k] * b[k];
	return s;
}

// Whether every cell is noisy.
bool
all_noisy(const std::vector<double> &b)
{
	return std::all_of(b.begin(), b.end(), [](double v) { return v > 0; });
}

// Brute force for m = 2: the minimum of w_1 b_1^2 + w_2 b_2^2 over private (b_1, b_2) with
// b_k <= cap_k (cap +inf: none). In x = 1/b the objective decreases in x_2, so for every x_1 the
// best x_2 is the largest feasible one; x_1 is searched on a 20,000-point grid of its feasible
// range, then refined by ternary search around the best grid point. +inf when infeasible.
double
brute_force_m2(const ConstraintSet &c, const std::vector<double> &w, const std::vector<double> &cap, double epsilon)
{
	std::vector<std::vector<double>> rows;
	for (std::size_t e = 0; e < c.count(); e++)
		rows.push_back(c.row(e));
	const double f1 = cap[0] < kInf ? 1 / cap[0] : 0, f2 = cap[1] < kInf ? 1 / cap[1] : 0;
	double x1_max = kInf;
	for (const auto &r : rows)
		if (r[0] > 0)
			x1_max = std::min(x1_max, (epsilon - r[1] * f2) / r[0]);
	auto value = [&](double x1) {
		double x2 = kInf;
		for (const auto &r : rows)
			if (r[1] > 0)
				x2 = std::min(x2, (epsilon - r[0] * x1) / r[1]);
		if (!(x2 >= f2 * (1 - 1e-12)) || !(x2 > 0))
			return kInf;
		return w[0] / (x1 * x1) + w[1] / (x2 * x2);
	};
	const double lo0 = f1 > 0 ? f1 : x1_max * 1e-6;
	if (!(x1_max >= lo0))
		return kInf;
	const int grid = 20000;
	const double step = (x1_max - lo0) / grid;
	int best = 0;
	for (int i = 1; i <= grid; i++)
		if (value(lo0 + i * step) < value(lo0 + best * step))
			best = i;
	double lo = lo0 + std::max(0, best - 1) * step, hi = lo0 + std::min(grid, best + 1) * step;
	for (int it = 0; it < 200; it++) { // convex in x_1
		const double a = lo + (hi - lo) / 3, b = hi - (hi - lo) / 3;
		if (value(a) < value(b))
			hi = b;
		else
			lo = a;
	}
	return std::min(value(0.5 * (lo + hi)), value(lo0 + best * step));
}

// Column maxima of a constraint set.
std::vector<double>
colmax_of(const ConstraintSet &c)
{
	std::vector<double> s(c.cells, 0);
	for (std::size_t e = 0; e < c.count(); e++)
		c.for_each(e, [&s](std::size_t k, double v) { s[k] = std::max(s[k], v); });
	return s;
}

// Request with the Relative strategy and the given estimates.
AllocationRequest
relative(std::vector<Estimate> estimates = {})
{
	AllocationRequest r;
	r.strategy = AllocationStrategy::Relative;
	r.estimates = std::move(estimates);
	return r;
}

} // namespace

// The default of AllocationRequest is the relative strategy.
TEST(RelativeAllocationTest, IsTheDefault)
{
	EXPECT_EQ(AllocationRequest{}.strategy, AllocationStrategy::Relative);
}

// Random instances (explicit metrics and sub-universes): private, no cell above its equal_split
// scale, and no capped heuristic does better by the relative objective. Relative differs from
// equal_split on a good share of them (the test is not passed by returning equal_split).
TEST(RelativeAllocationTest, RandomInstancesArePrivateCappedAndBest)
{
	std::mt19937_64 rng(110011);
	std::uniform_int_distribution<int> pick_m(2, 8), pick_n(4, 20);
	int improved = 0, instances = 0;
	auto check = [&](const ConstraintSet &c, double epsilon, const std::string &what) {
		const std::vector<double> b = allocate(c, relative(), epsilon);
		const std::vector<double> eq = allocate(c, AllocationStrategy::EqualSplit, epsilon);
		EXPECT_LE(privacy_ratio(c, b, epsilon), 1 + 1e-9) << what;
		EXPECT_NO_THROW(check_allocation(c, b, epsilon)) << what;
		bool better = false;
		for (std::size_t k = 0; k < b.size(); k++) {
			EXPECT_LE(b[k], eq[k] * (1 + 1e-9)) << what << " cell " << k;
			EXPECT_EQ(b[k] > 0, eq[k] > 0) << what; // the same cells are exact
			better |= b[k] < 0.99 * eq[k];
		}
		improved += better;
		instances++;
		const std::vector<double> w = relative_weights(c, {}, epsilon);
		for (AllocationStrategy s : {AllocationStrategy::EqualSplit, AllocationStrategy::EqualScale,
		                             AllocationStrategy::BudgetDistribution, AllocationStrategy::MinTotalVariance}) {
			const std::vector<double> h = allocate(c, s, epsilon);
			bool capped = true;
			for (std::size_t k = 0; k < h.size(); k++)
				capped &= h[k] <= eq[k] * (1 + 1e-9);
			if (capped)
				EXPECT_LE(objective(w, b), objective(w, h) * (1 + 1e-9)) << what << " vs " << strategy_name(s);
		}
	};
	for (int inst = 0; inst < 150; inst++) {
		const std::size_t m = static_cast<std::size_t>(pick_m(rng)), n = static_cast<std::size_t>(pick_n(rng));
		const Matrix d = random_plane_metric(rng, n, 0.5 + inst % 4);
		const Matrix q = random_cells(rng, m, n, inst % 3);
		check(build_constraints_dense(d, q), inst % 2 ? 0.3 : 1.0, "dense " + std::to_string(inst));
	}
	int sub_index = 0;
	for (const SubUniverse &sub : sample_sub_universes()) {
		for (int t = 0; t < 12; t++) {
			const Matrix q = random_cells(rng, 2 + t % 5, sub.size(), t % 3);
			check(build_constraints(sub, q), 0.7, "sub " + std::to_string(sub_index) + "/" + std::to_string(t));
		}
		sub_index++;
	}
	EXPECT_GE(improved, instances / 2) << improved << " of " << instances;
}

// m = 2: the solver's objective is the brute-force minimum over the capped feasible region, with
// single cells and with the two cells as one estimate of random weights.
TEST(RelativeAllocationTest, MatchesBruteForceForTwoCells)
{
	std::mt19937_64 rng(2024);
	std::uniform_int_distribution<int> pick_n(4, 16);
	std::uniform_real_distribution<double> pick_w(0.01, 100);
	int checked = 0, interior = 0;
	for (int inst = 0; inst < 120; inst++) {
		const std::size_t n = static_cast<std::size_t>(pick_n(rng));
		const Matrix d = random_plane_metric(rng, n, 1 + inst % 3);
		const Matrix q = random_cells(rng, 2, n, inst % 3);
		const ConstraintSet c = build_constraints_dense(d, q);
		const double epsilon = inst % 2 ? 0.5 : 2.0;
		std::vector<Estimate> est;
		if (inst % 3 == 1)
			est.push_back(Estimate{{0, 1}, {1.0, pick_w(rng)}});
		const std::vector<double> b = allocate(c, relative(est), epsilon);
		const std::vector<double> eq = allocate(c, AllocationStrategy::EqualSplit, epsilon);
		if (!all_noisy(b))
			continue;
		const std::vector<double> w = relative_weights(c, est, epsilon);
		const double brute = brute_force_m2(c, w, eq, epsilon);
		const double got = objective(w, b);
		EXPECT_LE(got, brute * (1 + 1e-9)) << "instance " << inst;
		EXPECT_NEAR(got, brute, 1e-6 * brute) << "instance " << inst;
		checked++;
		interior += b[0] < 0.999 * eq[0] && b[1] < 0.999 * eq[1];
	}
	EXPECT_GE(checked, 60);
	EXPECT_GE(interior, 20); // many optima lie strictly inside the caps
}

// The weight of a two-cell estimate is omega / V°, V° the brute-force minimum of its own error
// with the whole epsilon (no caps), whatever the third cell does.
TEST(RelativeAllocationTest, EstimateWeightsUseTheEstimatesOwnOptimum)
{
	std::mt19937_64 rng(77);
	std::uniform_real_distribution<double> pick_w(0.05, 20);
	for (int inst = 0; inst < 40; inst++) {
		const Matrix d = random_plane_metric(rng, 10, 1);
		const Matrix q = random_cells(rng, 3, 10, inst % 3);
		const ConstraintSet c = build_constraints_dense(d, q);
		const ConstraintSet pair = build_constraints_dense(d, {q[0], q[1]});
		const std::vector<double> s = colmax_of(c);
		if (!(s[0] > 0 && s[1] > 0 && s[2] > 0))
			continue;
		const double mu2 = pick_w(rng), epsilon = 0.8;
		const std::vector<double> w = relative_weights(c, {Estimate{{0, 1}, {1.0, mu2}}}, epsilon);
		const double v0 = brute_force_m2(pair, {1.0, mu2}, {kInf, kInf}, epsilon);
		EXPECT_NEAR(w[0], 1 / v0, 1e-6 / v0) << "instance " << inst;
		EXPECT_NEAR(w[1], mu2 / v0, 1e-6 * mu2 / v0) << "instance " << inst;
		EXPECT_DOUBLE_EQ(w[2], (epsilon / s[2]) * (epsilon / s[2])); // a cell alone: 1 / b°^2
	}
}

// Multiplying cell k's weights by c > 0 multiplies b_k by c and leaves every other scale unchanged
// (relative error), with and without an estimate (whose weights follow the rescaled column: an
// avg column rescaled by c rescales its mean proxy by c).
TEST(RelativeAllocationTest, InvariantToRescalingACell)
{
	std::mt19937_64 rng(4242);
	std::uniform_int_distribution<int> pick_m(2, 6), pick_n(5, 14);
	std::uniform_real_distribution<double> log_c(-3, 3);
	auto compare = [](const std::vector<double> &b, const std::vector<double> &b2, std::size_t k, double c,
	                  const std::string &what) {
		for (std::size_t j = 0; j < b.size(); j++) {
			const double expected = j == k ? c * b[j] : b[j];
			EXPECT_NEAR(b2[j], expected, 1e-6 * expected) << what << " cell " << j;
		}
	};
	for (int inst = 0; inst < 60; inst++) {
		const std::size_t m = static_cast<std::size_t>(pick_m(rng)), n = static_cast<std::size_t>(pick_n(rng));
		const Matrix d = random_plane_metric(rng, n, 1);
		const Matrix q = random_cells(rng, m, n, inst % 3);
		const double c = inst % 3 == 0 ? 100.0 : inst % 3 == 1 ? 1.0 / 37 : std::pow(10.0, log_c(rng));
		const std::size_t k = static_cast<std::size_t>(rng() % m);
		Matrix q2 = q;
		for (double &v : q2[k])
			v *= c;
		const ConstraintSet c1 = build_constraints_dense(d, q), c2 = build_constraints_dense(d, q2);
		const std::vector<double> b = allocate(c1, relative(), 0.6), b2 = allocate(c2, relative(), 0.6);
		compare(b, b2, k, c, "single cells, instance " + std::to_string(inst));
		// Cells 0 and 1 as an average (sum, count) with mean proxy mu.
		const double mu = 0.5;
		const std::vector<Estimate> e1{Estimate{{0, 1}, {1.0, mu * mu}}};
		std::vector<Estimate> e2 = e1;
		if (k == 0) // the sum's column rescaled: mu follows
			e2[0].weights[1] = (c * mu) * (c * mu);
		else if (k == 1) // the count rescaled: V = b_S^2 + (mu / c)^2 (c b_C)^2 is unchanged
			e2[0].weights[1] = (mu / c) * (mu / c);
		const std::vector<double> a = allocate(c1, relative(e1), 0.6), a2 = allocate(c2, relative(e2), 0.6);
		compare(a, a2, k, c, "estimate, instance " + std::to_string(inst));
	}
	// Over sub-universes (sparse GROUP BY-like rows).
	int sub_index = 0;
	for (const SubUniverse &sub : sample_sub_universes()) {
		const Matrix q = random_cells(rng, 4, sub.size(), sub_index % 3);
		Matrix q2 = q;
		for (double &v : q2[2])
			v *= 1000;
		const std::vector<double> b = allocate(build_constraints(sub, q), relative(), 1.3);
		const std::vector<double> b2 = allocate(build_constraints(sub, q2), relative(), 1.3);
		compare(b, b2, 2, 1000, "sub " + std::to_string(sub_index++));
	}
}

// A single noisy cell gets exactly s/epsilon (its single-query scale), alone or beside exact cells.
TEST(RelativeAllocationTest, SingleCellGetsItsSingleQueryScale)
{
	std::mt19937_64 rng(5);
	for (int inst = 0; inst < 30; inst++) {
		const Matrix d = random_plane_metric(rng, 8, 1 + inst);
		Matrix q = random_cells(rng, 3, 8, inst % 3);
		q[0].assign(8, 2.5); // constant: exact
		q[2].assign(8, 0.0);
		const ConstraintSet c = build_constraints_dense(d, q);
		const double s = colmax_of(c)[1];
		if (!(s > 0))
			continue;
		for (double epsilon : {0.1, 1.0, 7.0}) {
			const std::vector<double> b = allocate(c, relative({Estimate{{0, 1}, {1, 4}}}), epsilon);
			EXPECT_EQ(b[0], 0);
			EXPECT_EQ(b[1], s / epsilon);
			EXPECT_EQ(b[2], 0);
		}
	}
	const ConstraintSet one = build_constraints_dense({{0, 2}, {2, 0}}, {{0, 3}});
	EXPECT_EQ(allocate(one, relative(), 0.5)[0], 1.5 / 0.5);
}

// Malformed estimates are internal errors.
TEST(RelativeAllocationTest, RejectsMalformedEstimates)
{
	const ConstraintSet c = build_constraints_dense({{0, 1}, {1, 0}}, {{0, 1}, {1, 0}});
	for (const std::vector<Estimate> &bad :
	     {std::vector<Estimate>{Estimate{{0, 2}, {1, 1}}}, std::vector<Estimate>{Estimate{{0, 1}, {1}}},
	      std::vector<Estimate>{Estimate{{0, 1}, {1, -1}}}, std::vector<Estimate>{Estimate{{0, 0}, {1, 1}}},
	      std::vector<Estimate>{Estimate{{0}, {1}}, Estimate{{0, 1}, {1, 1}}},
	      std::vector<Estimate>{Estimate{{0, 1}, {1, std::nan("")}}}})
		EXPECT_EQ(error_kind([&] { allocate(c, relative(bad), 1); }), ErrorKind::Internal);
}

// AVG in the setting: its count part is no longer crushed (the old optimum gave it a scale
// thousands of times its equal_split scale), and income in cents changes only the sum's scale.
TEST(RelativeAllocationTest, AverageCountIsNotCrushedAndCentsChangeNothing)
{
	for (const auto &shape : allocation_shapes(3)) {
		if (shape.name != "avg" && shape.name != "group_by_sex_avg")
			continue;
		const ConstraintSet c = build_constraints(shape.sub, shape.q);
		const double epsilon = 0.1;
		const std::vector<double> b = allocate(c, relative(shape.estimates), epsilon);
		const std::vector<double> eq = allocate(c, AllocationStrategy::EqualSplit, epsilon);
		const std::vector<double> old = allocate(c, AllocationStrategy::MinTotalVariance, epsilon);
		for (std::size_t k = 1; k < b.size(); k += 2) { // count parts
			EXPECT_LE(b[k], eq[k] * (1 + 1e-9)) << shape.name;
			EXPECT_GT(old[k], 1000 * b[k]) << shape.name;
		}
		check_allocation(c, b, epsilon);
		// Cents: every sum cell x 100, the mean proxy x 100.
		std::vector<std::vector<double>> cents = shape.q;
		std::vector<Estimate> est = shape.estimates;
		for (Estimate &g : est) {
			for (double &v : cents[g.cells[0]])
				v *= 100;
			g.weights[1] *= 100.0 * 100.0;
		}
		const std::vector<double> b2 = allocate(build_constraints(shape.sub, cents), relative(est), epsilon);
		for (std::size_t k = 0; k < b.size(); k++) {
			const double expected = k % 2 == 0 ? 100 * b[k] : b[k];
			EXPECT_NEAR(b2[k], expected, 1e-9 * expected) << shape.name << " cell " << k;
		}
	}
}

// The shapes: under the default, no cell's 95% half-width exceeds its equal_split one.
TEST(RelativeAllocationTest, ShapesNeverWorseThanEqualSplit)
{
	for (const auto &shape : allocation_shapes(50)) {
		const double epsilon = 0.1;
		AllocationRequest eq;
		eq.strategy = AllocationStrategy::EqualSplit;
		ConstraintSet rows;
		const MultiLinearPlan p_rel = plan_multi_linear(shape.sub, shape.q, epsilon, relative(shape.estimates), &rows);
		const MultiLinearPlan p_eq = plan_multi_linear(shape.sub, shape.q, epsilon, eq);
		std::vector<double> scales;
		for (std::size_t k = 0; k < shape.q.size(); k++) {
			const double h_rel = confidence_half_width(p_rel.cells[k]), h_eq = confidence_half_width(p_eq.cells[k]);
			EXPECT_LE(h_rel, h_eq * (1 + 1e-9)) << shape.name << " " << shape.labels[k];
			EXPECT_GT(h_rel, 0) << shape.name << " " << shape.labels[k];
			scales.push_back(p_rel.cells[k].scale);
		}
		EXPECT_NO_THROW(check_allocation(rows, scales, epsilon)) << shape.name;
	}
}

// Declared epsilons: each block is allocated within its own epsilon. count(1, 0.9) + sum(x, 0.1)
// gives each cell its single-query scale at its own epsilon, for every strategy, and
// epsilon_share reports exactly those epsilons.
TEST(RelativeAllocationTest, DeclaredEpsilonsAreHonoured)
{
	const auto shapes = allocation_shapes(2);
	const auto &shape = *std::find_if(shapes.begin(), shapes.end(), [](const auto &s) { return s.name == "count+sum"; });
	for (AllocationStrategy s : {AllocationStrategy::EqualSplit, AllocationStrategy::EqualScale,
	                             AllocationStrategy::BudgetDistribution, AllocationStrategy::MinTotalVariance,
	                             AllocationStrategy::Relative}) {
		AllocationRequest r;
		r.strategy = s;
		r.block_epsilon = {0.9, 0.1};
		r.block_of = {0, 1};
		const MultiLinearPlan p = plan_multi_linear(shape.sub, shape.q, 1.0, r);
		EXPECT_EQ(p.cells[0].scale, 1 / 0.9) << strategy_name(s);
		EXPECT_EQ(p.cells[1].scale, 200000 / 0.1) << strategy_name(s);
		EXPECT_EQ(p.epsilon_share[0], 0.9);
		EXPECT_EQ(p.epsilon_share[1], 0.1);
		EXPECT_EQ(p.cells[0].scale, plan_linear_query(shape.sub, shape.q[0], 0.9).scale);
	}
	// Pooled (no blocks): equal_split shares 1.0 as 0.5 / 0.5, and says so.
	const MultiLinearPlan pooled = plan_multi_linear(shape.sub, shape.q, 1.0, AllocationStrategy::EqualSplit);
	EXPECT_NEAR(pooled.epsilon_share[0], 0.5, 1e-12);
	EXPECT_NEAR(pooled.epsilon_share[1], 0.5, 1e-12);
	EXPECT_NEAR(pooled.cells[0].scale, 2.0, 1e-12);
}

// Random budget blocks: every block is private within its own epsilon, the whole at the total,
// and a block's scales are the strategy's allocation of that block alone.
TEST(RelativeAllocationTest, RandomBlocksArePrivatePerBlock)
{
	std::mt19937_64 rng(31337);
	for (int inst = 0; inst < 60; inst++) {
		const std::size_t m = 2 + static_cast<std::size_t>(inst % 5), n = 10;
		const Matrix d = random_plane_metric(rng, n, 1);
		const Matrix q = random_cells(rng, m, n, inst % 3);
		const ConstraintSet c = build_constraints_dense(d, q);
		AllocationRequest r = relative();
		const std::size_t blocks = 1 + static_cast<std::size_t>(rng() % 3);
		std::uniform_real_distribution<double> u(0.1, 1);
		double total = 0;
		for (std::size_t j = 0; j < blocks; j++) {
			r.block_epsilon.push_back(u(rng));
			total += r.block_epsilon.back();
		}
		for (std::size_t k = 0; k < m; k++)
			r.block_of.push_back(k < blocks ? k : static_cast<std::size_t>(rng() % blocks));
		const std::vector<double> b = allocate(c, r, total);
		EXPECT_LE(privacy_ratio(c, b, total), 1 + 1e-9);
		for (std::size_t j = 0; j < blocks; j++) {
			Matrix qj;
			std::vector<double> bj;
			for (std::size_t k = 0; k < m; k++)
				if (r.block_of[k] == j) {
					qj.push_back(q[k]);
					bj.push_back(b[k]);
				}
			if (qj.empty())
				continue; // a block without cells
			const ConstraintSet cj = build_constraints_dense(d, qj);
			EXPECT_LE(privacy_ratio(cj, bj, r.block_epsilon[j]), 1 + 1e-9) << "instance " << inst << " block " << j;
			const std::vector<double> alone = allocate(cj, relative(), r.block_epsilon[j]);
			for (std::size_t i = 0; i < bj.size(); i++)
				EXPECT_NEAR(bj[i], alone[i], 1e-6 * alone[i]) << "instance " << inst << " block " << j;
		}
	}
	// Malformed blocks: epsilons not adding up, an unknown block, an estimate across blocks.
	const ConstraintSet c = build_constraints_dense({{0, 1}, {1, 0}}, {{0, 1}, {1, 0}});
	AllocationRequest r = relative();
	r.block_epsilon = {0.5, 0.4};
	r.block_of = {0, 1};
	EXPECT_EQ(error_kind([&] { allocate(c, r, 1.0); }), ErrorKind::Internal);
	r.block_of = {0, 2};
	EXPECT_EQ(error_kind([&] { allocate(c, r, 0.9); }), ErrorKind::Internal);
	r.block_of = {0, 1};
	r.estimates = {Estimate{{0, 1}, {1, 1}}};
	EXPECT_EQ(error_kind([&] { allocate(c, r, 0.9); }), ErrorKind::Internal);
}

// Above kMaxExactCells noisy cells the solver is skipped: the relative progressive filling keeps
// the promises (private, no cell above equal_split) and still beats equal_split on GROUP BY counts.
TEST(RelativeAllocationTest, ManyCellsUseTheRelativeFilling)
{
	const std::size_t groups = kMaxExactCells + 10;
	std::vector<std::string> keys;
	for (std::size_t g = 0; g < groups; g++)
		keys.push_back("g" + std::to_string(g));
	SubUniverse sub;
	sub.domains = {Domain::enumerated(keys)};
	sub.metrics = {ColumnMetric::discrete(1)};
	sub.presence = 1;
	Matrix q(groups, std::vector<double>(groups, 0.0));
	for (std::size_t g = 0; g < groups; g++)
		q[g][g] = 1; // count per group
	const ConstraintSet c = build_constraints(sub, q);
	AllocationStats stats;
	const std::vector<double> b = allocate(c, relative(), 1.0, &stats);
	const std::vector<double> eq = allocate(c, AllocationStrategy::EqualSplit, 1.0);
	EXPECT_EQ(stats.rounds, 0u); // no solver round
	EXPECT_LE(privacy_ratio(c, b, 1.0), 1 + 1e-9);
	for (std::size_t k = 0; k < groups; k++) {
		EXPECT_LE(b[k], eq[k] * (1 + 1e-9));
		EXPECT_NEAR(b[k], 2.0, 1e-9); // every group count at 1/2: a move between two groups binds
	}
}
