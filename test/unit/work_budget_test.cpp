// The per-statement budget of pair-search work (core/work_budget.h, dxpriv.analysis_work_limit):
// one budget for every pair tree of a statement (separate trees and searches add up), a refusal
// within one leaf of the limit with the real numbers in the message, and, under the limit, the
// same maxima, pairs, work and plans as without a budget.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/allocation.h"
#include "core/allocation_internal.h"
#include "core/domain.h"
#include "core/error.h"
#include "core/metric.h"
#include "core/pair_tree.h"
#include "core/pair_tree_cost.h"
#include "core/upfront_work.h"
#include "core/point_set.h"
#include "core/work_budget.h"
#include "pair_fixtures.h"

namespace dxpriv {
namespace {

struct BudgetCase {
	std::size_t n;
	Domain dom;
	std::vector<double> w; // two cells, point-major
};

BudgetCase
budget_case(std::uint64_t seed, std::size_t n)
{
	std::mt19937_64 rng(seed);
	const std::vector<double> c = testing::pair_test_points(rng, n, 2, 0, 4);
	BudgetCase b{n, Domain::points(2, c), std::vector<double>(2 * n)};
	for (double &x : b.w)
		x = std::uniform_real_distribution<double>(0, 1)(rng); // random weights: the tree prunes little
	return b;
}

PairMax
cell_max(const BudgetCase &b, std::size_t cell)
{
	const ColumnMetric metric = ColumnMetric::lp(2, 1.0);
	return metric.pair_ratio_max(b.dom, b.w.data() + cell, 2, PairExpr::Metric, true, 2e9, 0);
}

// Without a budget nothing is charged; with one, every search adds its work.
TEST(WorkBudgetTest, ChargesAndRestores)
{
	EXPECT_TRUE(std::isinf(work_budget_charge(5)));
	EXPECT_EQ(work_budget_spent(), 0);
	EXPECT_EQ(work_budget_limit(7), 7);
	{
		WorkBudgetScope outer(100);
		EXPECT_EQ(work_budget_charge(30), 70);
		{
			WorkBudgetScope inner(10);
			EXPECT_EQ(work_budget_charge(11), -1);
			EXPECT_EQ(work_budget_limit(7), 10);
		}
		EXPECT_EQ(work_budget_spent(), 30);
		EXPECT_EQ(outer.spent(), 30);
	}
	EXPECT_EQ(work_budget_limit(7), 7);
}

// Under the limit: the same double, pair and work as without a budget, and the work is charged.
TEST(WorkBudgetTest, UnderTheLimitSameMaxima)
{
	testing::PairSwitchGuard guard;
	detail::set_pair_tree_min_points(2);
	for (int t = 0; t < 6; t++) {
		const BudgetCase b = budget_case(40 + t, 400 + 150 * t);
		const PairMax free = cell_max(b, t % 2);
		const double setup = pair_tree_setup_work(b.n, 2, 1); // charged before the tree is built
		WorkBudgetScope budget(setup + free.work + 1);
		const PairMax got = cell_max(b, t % 2);
		EXPECT_EQ(got.value, free.value);
		EXPECT_EQ(got.i, free.i);
		EXPECT_EQ(got.j, free.j);
		EXPECT_EQ(got.work, free.work);
		EXPECT_EQ(budget.spent(), setup + free.work);
	}
}

// A row search that keeps every pair (nothing can be pruned) on its own tree.
double
search_all(const BudgetCase &b)
{
	PairRowQuery every;
	every.coef = {1.0, 1.0};
	every.keep = b.n * b.n;
	const std::unique_ptr<PairSearch> s = ColumnMetric::lp(2, 1.0).pair_search(b.dom, b.w.data(), 2, 2, 2e9);
	return s->top_rows(every).work;
}

// Two separate trees (as an average's raw and rounded weights, or two plans of a statement) share
// one budget: each fits alone, both do not; the refusal comes within a leaf pair of the limit,
// with the numbers.
TEST(WorkBudgetTest, OneBudgetForEveryTreeOfAStatement)
{
	testing::PairSwitchGuard guard;
	detail::set_pair_tree_min_points(2);
	const BudgetCase b = budget_case(75, 3000);
	const double first = search_all(b);
	ASSERT_GT(first, 4e6);
	const double setup = pair_tree_setup_work(b.n, 2, 2);
	const double limit = 1.5 * (first + setup);
	WorkBudgetScope budget(limit);
	EXPECT_EQ(search_all(b), first);
	EXPECT_EQ(budget.spent(), first + setup);
	try {
		search_all(b);
		ADD_FAILURE() << "not refused";
	} catch (const CoreError &e) {
		EXPECT_EQ(e.kind(), ErrorKind::ProgramLimit);
		const std::string m = e.what();
		EXPECT_NE(m.find("more than " + std::string([&] {
			          char s[32];
			          std::snprintf(s, sizeof s, "%.3g", limit);
			          return std::string(s);
		          }())),
		          std::string::npos)
		    << m;
		EXPECT_NE(m.find("over 3000 points (4.5e+06 pairs"), std::string::npos) << m;
		EXPECT_NE(m.find("had settled"), std::string::npos) << m;
		EXPECT_NE(e.hint().find("dxpriv.analysis_work_limit"), std::string::npos) << e.hint();
		EXPECT_NE(e.hint().find("dx.explain"), std::string::npos) << e.hint();
	}
	EXPECT_GT(budget.spent(), limit);
	// checked where the budget runs out, not every 2^20 units: at most one leaf pair (64 point pairs) over
	EXPECT_LE(budget.spent(), limit + 64 * pair_tree_costs(2, 2, 2, 1, PairNorm::L2).rate);
}

// A small limit refuses a row search at once (within a leaf pair), whatever the tree's own cap.
TEST(WorkBudgetTest, SmallLimitRefusesRowSearchAtOnce)
{
	testing::PairSwitchGuard guard;
	detail::set_pair_tree_min_points(2);
	const BudgetCase b = budget_case(76, 3000);
	const ColumnMetric metric = ColumnMetric::lp(2, 1.0);
	PairRowQuery every;
	every.coef = {1.0, 1.0};
	every.keep = b.n * b.n;
	const double limit = pair_tree_setup_work(b.n, 2, 2) + 1e5;
	WorkBudgetScope budget(limit);
	const std::unique_ptr<PairSearch> s = metric.pair_search(b.dom, b.w.data(), 2, 2, 2e9);
	EXPECT_THROW(s->top_rows(every), CoreError);
	EXPECT_GT(budget.spent(), limit);
	EXPECT_LE(budget.spent(), limit + 64 * pair_tree_costs(2, 2, 2, 1, PairNorm::L2).rate);
}

// The tree's construction is charged before it is built: a budget it does not fit in refuses at
// once, with the numbers, and nothing is charged (l2refuse2).
TEST(WorkBudgetTest, ConstructionRefusedBeforeBuilding)
{
	testing::PairSwitchGuard guard;
	detail::set_pair_tree_min_points(2);
	const BudgetCase b = budget_case(78, 3000);
	const double setup = pair_tree_setup_work(b.n, 2, 2);
	ASSERT_GT(setup, 1e5);
	WorkBudgetScope budget(setup - 1);
	try {
		ColumnMetric::lp(2, 1.0).pair_search(b.dom, b.w.data(), 2, 2, 2e9);
		ADD_FAILURE() << "not refused";
	} catch (const CoreError &e) {
		EXPECT_EQ(e.kind(), ErrorKind::ProgramLimit);
		const std::string m = e.what();
		EXPECT_NE(m.find("building the pair tree over 3000 points (2 dimensions, 4.5e+06 pairs) with the weights of 2 "
		                 "cells"),
		          std::string::npos)
		    << m;
		EXPECT_NE(e.hint().find("dxpriv.analysis_work_limit"), std::string::npos) << e.hint();
	}
	EXPECT_EQ(budget.spent(), 0);
	// the units grow with the points, the dimensions and the cells
	EXPECT_LT(pair_tree_setup_work(3000, 2, 2), pair_tree_setup_work(6000, 2, 2));
	EXPECT_LT(pair_tree_setup_work(3000, 2, 2), pair_tree_setup_work(3000, 8, 2));
	EXPECT_LT(pair_tree_setup_work(3000, 2, 2), pair_tree_setup_work(3000, 2, 16));
	EXPECT_LT(pair_tree_costs(2, 2, 2, 1, PairNorm::L2).bound, pair_tree_costs(8, 2, 2, 1, PairNorm::L2).bound);
	EXPECT_LT(pair_tree_costs(2, 2, 1, 1, PairNorm::L2).bound, pair_tree_costs(2, 2, 2, 1, PairNorm::L2).bound);
}

// The statement's work before its first search (its evaluation at every point): refused before
// it runs when it does not fit, with the expressions, points, units and limit; else charged. A
// tree's construction is then checked by the tree (ConstructionRefusedBeforeBuilding).
TEST(WorkBudgetTest, UpFrontWorkRefusedFirst)
{
	testing::PairSwitchGuard guard;
	const BudgetCase b = budget_case(79, 3000);
	SubUniverse sub;
	sub.domains.push_back(b.dom);
	sub.metrics.push_back(ColumnMetric::lp(2, 1.0));
	detail::set_pair_tree(false); // dxpriv.exhaustive_analysis: no tree, nothing counted here
	EXPECT_FALSE(upfront_work(sub, 5, 2).applies);
	detail::set_pair_tree(true);
	const UpFrontWork v = upfront_work(sub, 5, 2);
	ASSERT_TRUE(v.applies);
	EXPECT_EQ(v.points, 3000);
	EXPECT_EQ(v.evaluation, 3000 * 5 * kEvaluationUnits);
	EXPECT_EQ(v.setup, pair_tree_setup_work(3000, 2, 1));
	EXPECT_FALSE(upfront_work(sub, 5, 17).applies); // more than 16 cells: no tree
	{
		WorkBudgetScope budget(v.evaluation - 1);
		try {
			charge_upfront_work(v, 5);
			ADD_FAILURE() << "not refused";
		} catch (const CoreError &e) {
			EXPECT_EQ(e.kind(), ErrorKind::ProgramLimit);
			const std::string m = e.what();
			EXPECT_NE(m.find("evaluating its 5 expressions at the 3000 points of its column takes 6e+04"),
			          std::string::npos)
			    << m;
			EXPECT_NE(m.find("and building a pair tree at least"), std::string::npos) << m;
		}
		EXPECT_EQ(budget.spent(), 0);
	}
	WorkBudgetScope budget(v.evaluation);
	charge_upfront_work(v, 5);
	EXPECT_EQ(budget.spent(), v.evaluation);
	charge_upfront_work(UpFrontWork{}, 5); // not under the tree: nothing
	EXPECT_EQ(budget.spent(), v.evaluation);
}

// plan_multi_linear (two cells varying over 3,000 l2 points, the row searches): the same plan under
// a budget it fits in, a ProgramLimit refusal under one it does not.
TEST(WorkBudgetTest, PlansUnderTheBudget)
{
	testing::PairSwitchGuard guard;
	const BudgetCase b = budget_case(77, 3000);
	SubUniverse sub;
	sub.domains.push_back(b.dom);
	sub.metrics.push_back(ColumnMetric::lp(2, 1.0));
	sub.presence = kInfinity;
	std::vector<std::vector<double>> q(2, std::vector<double>(b.n));
	for (std::size_t u = 0; u < b.n; u++) {
		q[0][u] = b.dom.coordinate(u, 0);             // a sum of the first coordinate
		q[1][u] = b.dom.coordinate(u, 1) > 0 ? 1 : 0; // a FILTERed count
	}
	const MultiLinearPlan free = plan_multi_linear(sub, q, 1.0, AllocationStrategy::BudgetDistribution);
	double needed = 0;
	{
		WorkBudgetScope budget(1e12);
		const MultiLinearPlan got = plan_multi_linear(sub, q, 1.0, AllocationStrategy::BudgetDistribution);
		needed = budget.spent();
		for (std::size_t k = 0; k < 2; k++)
			EXPECT_EQ(got.cells[k].scale, free.cells[k].scale);
	}
	ASSERT_GT(needed, 0);
	WorkBudgetScope budget(needed / 2);
	try {
		plan_multi_linear(sub, q, 1.0, AllocationStrategy::BudgetDistribution);
		ADD_FAILURE() << "not refused";
	} catch (const CoreError &e) {
		EXPECT_EQ(e.kind(), ErrorKind::ProgramLimit) << e.what();
	}
}

} // namespace
} // namespace dxpriv
