// Unit tests for the joint allocation of GROUPING SETS / ROLLUP / CUBE: the cells of every grouping
// set of one statement (each point lies in exactly one group of each set) allocated together
// within the statement's epsilon. Privacy by brute force over all pairs of records, the epsilon
// actually spent, per-aggregate budgets, and the relative default against equal_split.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "core/allocation.h"
#include "core/domain.h"
#include "core/metric.h"
#include "core/sensitivity.h"
#include "test_support.h"

using namespace dxpriv;

namespace {

using ::dxpriv::testing::record_metric;
using Matrix = std::vector<std::vector<double>>;

// Two columns: a (3 values, discrete metric of weight 2) and b (0..4, absolute metric), presence 1.5.
SubUniverse
two_columns()
{
	SubUniverse sub;
	sub.domains = {Domain::enumerated({"a0", "a1", "a2"}), Domain::range(0, 4, 1)};
	sub.metrics = {ColumnMetric::discrete(2), ColumnMetric::absolute(1)};
	sub.presence = 1.5;
	return sub;
}

// A grouping set: which of the two columns it groups by.
struct Set {
	bool a, b;
};

// The cells of SELECT <keys>, count(*), avg(b) GROUP BY GROUPING SETS (sets) as the analyzer builds
// them: set after set, group after group, (count, avg's sum, avg's count) per group; each avg is one
// estimate with the domain centre of b as its mean proxy. block_of (when given) receives each
// cell's aggregate (0: count, 1: avg).
Matrix
grouping_set_cells(const SubUniverse &sub, const std::vector<Set> &sets, std::vector<Estimate> &estimates,
                   std::vector<std::size_t> *block_of = nullptr)
{
	const std::size_t n = sub.size();
	const std::size_t na = sub.domains[0].size(), nb = sub.domains[1].size();
	Matrix q;
	for (const Set &s : sets) {
		const std::size_t groups = (s.a ? na : 1) * (s.b ? nb : 1);
		const std::size_t first = q.size();
		q.resize(first + 3 * groups, std::vector<double>(n, 0));
		for (std::size_t u = 0; u < n; u++) {
			const auto idx = sub.unflatten(u);
			const std::size_t g = (s.a ? idx[0] : 0) * (s.b ? nb : 1) + (s.b ? idx[1] : 0);
			const std::size_t base = first + 3 * g;
			q[base][u] = 1;                                       // count(*)
			q[base + 1][u] = sub.domains[1].ordinal(idx[1]);      // avg(b): its sum
			q[base + 2][u] = 1;                                   // avg(b): its count
		}
		for (std::size_t g = 0; g < groups; g++) {
			const std::size_t base = first + 3 * g;
			estimates.push_back(Estimate{{base + 1, base + 2}, {1.0, 2.0 * 2.0}});
			if (block_of) {
				block_of->push_back(0);
				block_of->push_back(1);
				block_of->push_back(1);
			}
		}
	}
	return q;
}

// max over all pairs of records (⊥ included, q(⊥) = 0) of sum over `cells` of |q_k(i) - q_k(j)| /
// (b_k d(i, j)): the statement is private at epsilon iff this is <= epsilon. Computed from the
// closed record metric, independently of the constraint edges; +inf when an exact cell changes.
double
brute_force_ratio(const SubUniverse &sub, const Matrix &q, const std::vector<double> &b,
                  const std::vector<std::size_t> &cells)
{
	const Matrix d = record_metric(sub);
	const std::size_t n = sub.size();
	double worst = 0;
	for (std::size_t i = 0; i <= n; i++)
		for (std::size_t j = i + 1; j <= n; j++) {
			double sum = 0;
			for (std::size_t k : cells) {
				const double diff = std::fabs((i < n ? q[k][i] : 0) - (j < n ? q[k][j] : 0));
				if (diff == 0)
					continue;
				sum += b[k] > 0 ? diff / b[k] : HUGE_VAL;
			}
			if (sum > 0)
				worst = std::max(worst, sum / d[i][j]);
		}
	return worst;
}

// Every cell index of q.
std::vector<std::size_t>
all_cells(const Matrix &q)
{
	std::vector<std::size_t> k(q.size());
	for (std::size_t i = 0; i < k.size(); i++)
		k[i] = i;
	return k;
}

std::vector<double>
scales_of(const MultiLinearPlan &plan)
{
	std::vector<double> b;
	for (const LinearNoisePlan &c : plan.cells)
		b.push_back(c.scale);
	return b;
}

const std::vector<Set> kRollup = {{true, true}, {true, false}, {false, false}}; // ROLLUP (a, b)
const std::vector<Set> kCube = {{true, true}, {true, false}, {false, true}, {false, false}};

// The joint plan of a ROLLUP and a CUBE is private for the statement's epsilon by brute force over
// all pairs of records, for every strategy, and spends that epsilon (the worst pair binds): one
// epsilon for the statement, not one per set.
TEST(GroupingSetsAllocationTest, JointPlanIsPrivateAtTheStatementEpsilon)
{
	const SubUniverse sub = two_columns();
	const double eps = 0.7;
	for (const auto &sets : {kRollup, kCube}) {
		std::vector<Estimate> estimates;
		const Matrix q = grouping_set_cells(sub, sets, estimates);
		for (AllocationStrategy s : {AllocationStrategy::Relative, AllocationStrategy::EqualSplit,
		                             AllocationStrategy::EqualScale, AllocationStrategy::BudgetDistribution,
		                             AllocationStrategy::MinTotalVariance}) {
			AllocationRequest request;
			request.strategy = s;
			request.estimates = estimates;
			ConstraintSet checked;
			const MultiLinearPlan plan = plan_multi_linear(sub, q, eps, request, &checked);
			const std::vector<double> b = scales_of(plan);
			ASSERT_EQ(b.size(), q.size());
			for (std::size_t k = 0; k < q.size(); k++) // exact only where the weights are all 0
				EXPECT_EQ(b[k] > 0, std::any_of(q[k].begin(), q[k].end(), [](double w) { return w != 0; }));
			const double ratio = brute_force_ratio(sub, q, b, all_cells(q));
			EXPECT_LE(ratio, eps * (1 + 1e-9)) << strategy_name(s) << ", " << sets.size() << " sets";
			if (s != AllocationStrategy::EqualSplit) // (equal_split leaves budget unused by design)
				EXPECT_GE(ratio, eps * (1 - 1e-6)) << strategy_name(s) << ": the statement's epsilon is spent";
			EXPECT_NO_THROW(check_allocation(checked, b, eps));
		}
	}
}

// What the separate allocation (each set on its own at the full epsilon) spent over the
// statement's cells: well over the statement's epsilon (up to one per set); the joint plan spends one.
TEST(GroupingSetsAllocationTest, SeparateSetsWouldSpendMoreThanTheStatementEpsilon)
{
	const SubUniverse sub = two_columns();
	const double eps = 1;
	std::vector<Estimate> none;
	const Matrix q = grouping_set_cells(sub, kCube, none);
	std::vector<double> separate;
	std::size_t first = 0;
	for (const Set &s : kCube) {
		std::vector<Estimate> estimates;
		const Matrix one = grouping_set_cells(sub, {s}, estimates);
		AllocationRequest request;
		request.estimates = estimates;
		const std::vector<double> b = scales_of(plan_multi_linear(sub, one, eps, request));
		separate.insert(separate.end(), b.begin(), b.end());
		first += one.size();
	}
	ASSERT_EQ(first, q.size());
	const double ratio = brute_force_ratio(sub, q, separate, all_cells(q));
	EXPECT_GT(ratio, 2 * eps); // a record moves a cell of each of the four sets
	EXPECT_LE(ratio, 4 * eps * (1 + 1e-9));
}

// With declared epsilons per aggregate, each aggregate's cells in every set share that
// aggregate's epsilon (checked by brute force per aggregate), and the statement spends their sum.
TEST(GroupingSetsAllocationTest, DeclaredEpsilonsCoverEveryGroupingSet)
{
	const SubUniverse sub = two_columns();
	std::vector<Estimate> estimates;
	std::vector<std::size_t> block_of;
	const Matrix q = grouping_set_cells(sub, kRollup, estimates, &block_of);
	AllocationRequest request;
	request.estimates = estimates;
	request.block_epsilon = {0.5, 0.25};
	request.block_of = block_of;
	const std::vector<double> b = scales_of(plan_multi_linear(sub, q, 0.75, request));
	for (std::size_t block = 0; block < 2; block++) {
		std::vector<std::size_t> cells;
		for (std::size_t k = 0; k < q.size(); k++)
			if (block_of[k] == block)
				cells.push_back(k);
		const double ratio = brute_force_ratio(sub, q, b, cells);
		EXPECT_LE(ratio, request.block_epsilon[block] * (1 + 1e-9)) << "aggregate " << block;
		EXPECT_GE(ratio, request.block_epsilon[block] * (1 - 1e-6)) << "aggregate " << block;
	}
	EXPECT_LE(brute_force_ratio(sub, q, b, all_cells(q)), 0.75 * (1 + 1e-9));
}

// The relative default is never noisier than equal_split in any cell of the joint plan, and
// strictly less noisy in some.
TEST(GroupingSetsAllocationTest, RelativeNeverNoisierThanEqualSplitAcrossSets)
{
	const SubUniverse sub = two_columns();
	for (const auto &sets : {kRollup, kCube}) {
		std::vector<Estimate> estimates;
		const Matrix q = grouping_set_cells(sub, sets, estimates);
		AllocationRequest relative, equal;
		relative.estimates = equal.estimates = estimates;
		equal.strategy = AllocationStrategy::EqualSplit;
		const std::vector<double> r = scales_of(plan_multi_linear(sub, q, 1, relative));
		const std::vector<double> e = scales_of(plan_multi_linear(sub, q, 1, equal));
		std::size_t less_noisy = 0;
		for (std::size_t k = 0; k < q.size(); k++) {
			EXPECT_LE(r[k], e[k] * (1 + 1e-9)) << "cell " << k;
			less_noisy += r[k] < 0.99 * e[k];
		}
		EXPECT_GT(less_noisy, 0u);
	}
}

// A grouping set listed twice buys nothing: both copies share the epsilon, each at least twice as
// noisy as the set alone (averaging the two copies is worse than the set alone).
TEST(GroupingSetsAllocationTest, RepeatedSetGetsNoCheaperNoise)
{
	const SubUniverse sub = two_columns();
	std::vector<Estimate> e1, e2;
	const Matrix alone = grouping_set_cells(sub, {{true, false}}, e1);
	const Matrix twice = grouping_set_cells(sub, {{true, false}, {true, false}}, e2);
	AllocationRequest r1, r2;
	r1.estimates = e1;
	r2.estimates = e2;
	const std::vector<double> b1 = scales_of(plan_multi_linear(sub, alone, 1, r1));
	const std::vector<double> b2 = scales_of(plan_multi_linear(sub, twice, 1, r2));
	ASSERT_EQ(b2.size(), 2 * b1.size());
	for (std::size_t k = 0; k < b1.size(); k++) {
		const double copies = 1 / (1 / (b2[k] * b2[k]) + 1 / (b2[k + b1.size()] * b2[k + b1.size()]));
		EXPECT_GE(copies, b1[k] * b1[k] * (1 - 1e-6)) << "cell " << k << ": the copies combined beat the set alone";
		if (k % 3 == 0) // counts: symmetric copies, each exactly twice as noisy
			EXPECT_NEAR(b2[k], 2 * b1[k], 1e-4 * b1[k]);
	}
	EXPECT_LE(brute_force_ratio(sub, twice, b2, all_cells(twice)), 1 + 1e-9);
}

} // namespace
