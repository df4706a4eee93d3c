// Attribute-private Markov quilt mechanism (MECHANISMS.md §6.6): the seed's Example 1 (Figure 1),
// quilt search on the moral graph, max-influence of a parameter table, and bad inputs.
#include "core/markov_quilt.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "test_support.h"

namespace dxpriv {
namespace {

using ::dxpriv::testing::expect_core_error;

// Figure 1: SAT s, height h, weight w, gender g, income i; income and gender influence SAT,
// gender influences height and weight, height influences weight.
enum { S = 0, H = 1, W = 2, G = 3, I = 4 };
AttributeNetwork figure1()
{
	return {{"sat", "height", "weight", "gender", "income"}, {{I, S}, {G, S}, {G, H}, {G, W}, {H, W}}};
}

// F counts rows satisfying a predicate on the queried attributes: changing any of them can move
// every one of the n rows, so Delta_S F = n whenever S is not empty.
ColumnSensitivity count_sensitivity(double n)
{
	return [n](const std::vector<int> &cols) { return cols.empty() ? 0.0 : n; };
}

TEST(MarkovQuilt, Example1TallStudentsNeedNoNoise)
{
	const double eps = 1.0, e_g = 0.3, n = 500;
	const QuiltInfluences infl = {{I, {{{G}, e_g}}}};
	const MarkovQuiltPlan p = plan_markov_quilt(figure1(), {I}, {H}, infl, count_sensitivity(n), eps);
	ASSERT_EQ(1u, p.choices.size());
	EXPECT_EQ(0.0, p.scale);
	EXPECT_EQ(std::vector<int>({G}), p.choices[0].quilt);
	EXPECT_EQ(std::vector<int>({S, I}), p.choices[0].nearby); // N = {i, s}, R = {h, w}
}

// Second query of Example 1 (tall AND SAT > 1300): A ∩ N = {s}, the quilt's bound is
// Delta_{s} F / (eps - e(g | i)) with Delta_{s} F = n for a count ([DERIVED]); Algorithm 3 keeps the
// smaller of it and the trivial Delta_A F / eps = n / eps, which for a count is the trivial one.
TEST(MarkovQuilt, Example1TallAndHighSatQuiltBound)
{
	const double eps = 1.0, e_g = 0.3, n = 500;
	const QuiltInfluences infl = {{I, {{{G}, e_g}}}};
	const MarkovQuiltPlan p = plan_markov_quilt(figure1(), {I}, {H, S}, infl, count_sensitivity(n), eps);
	EXPECT_DOUBLE_EQ(std::min(n / (eps - e_g), n / eps), p.scale);
	EXPECT_DOUBLE_EQ(n / eps, p.scale);
	// with a query whose full sensitivity is larger (tall students plus high-SAT students: every
	// row moves twice when both columns change) the quilt wins: Delta_{s} F / (eps - e) = n / 0.7
	const ColumnSensitivity two_counts = [n](const std::vector<int> &cols) { return n * cols.size(); };
	const MarkovQuiltPlan q = plan_markov_quilt(figure1(), {I}, {H, S}, infl, two_counts, eps);
	EXPECT_DOUBLE_EQ(n / (eps - e_g), q.scale);
	EXPECT_EQ(std::vector<int>({G}), q.choices[0].quilt);
	EXPECT_EQ(0, q.binding);
}

TEST(MarkovQuilt, UnusableQuiltFallsBackToTheTrivialBound)
{
	const double eps = 1.0, n = 500;
	// influence not below epsilon: the quilt cannot be used
	const QuiltInfluences infl = {{I, {{{G}, 1.0}}}};
	const MarkovQuiltPlan p = plan_markov_quilt(figure1(), {I}, {H}, infl, count_sensitivity(n), eps);
	EXPECT_DOUBLE_EQ(n / eps, p.scale);
	EXPECT_TRUE(p.choices[0].quilt.empty());
	// no declared influence at all: the same
	const MarkovQuiltPlan q = plan_markov_quilt(figure1(), {I}, {H}, {}, count_sensitivity(n), eps);
	EXPECT_DOUBLE_EQ(n / eps, q.scale);
}

TEST(MarkovQuilt, MoralGraphLinksCoParents)
{
	// without moralisation {G} would not separate I from H: I and G are co-parents of S, so
	// removing S alone leaves I connected to H only through the moral edge I - G
	const QuiltInfluences infl = {{I, {{{S}, 0.1}}}};
	const MarkovQuiltPlan p = plan_markov_quilt(figure1(), {I}, {H}, infl, count_sensitivity(10), 1.0);
	EXPECT_DOUBLE_EQ(10.0, p.scale); // {s} is no quilt that excludes h: N = {i, g, h, w}
}

TEST(MarkovQuilt, DisconnectedAttributesNeedNoNoise)
{
	const AttributeNetwork net{{"a", "b", "c"}, {{0, 1}}};
	const MarkovQuiltPlan p = plan_markov_quilt(net, {0}, {2}, {}, count_sensitivity(10), 0.5);
	EXPECT_EQ(0.0, p.scale); // the empty quilt (influence 0): c is in R
}

TEST(MarkovQuilt, MaxInfluenceOfAParameterTable)
{
	// P(phi_g | phi_i): two values of the income parameter
	const double e = max_influence({{0.5, 0.5}, {0.4, 0.6}});
	EXPECT_NEAR(std::log(0.5 / 0.4), e, 1e-15);
	EXPECT_TRUE(std::isinf(max_influence({{1, 0}, {0.5, 0.5}})));
	expect_core_error(ErrorKind::InvalidParameter, [] { max_influence({{1.0}}); });
}

TEST(MarkovQuilt, BadNetworks)
{
	expect_core_error(ErrorKind::InvalidParameter, [] { validate_network({{"a", "b"}, {{0, 1}, {1, 0}}}); });
	expect_core_error(ErrorKind::InvalidParameter, [] { validate_network({{"a", "a"}, {}}); });
	expect_core_error(ErrorKind::InvalidParameter, [] { validate_network({{"a"}, {{0, 3}}}); });
	expect_core_error(ErrorKind::InvalidParameter, [] { validate_network({{}, {}}); });
	expect_core_error(ErrorKind::InvalidParameter,
	                  [] { plan_markov_quilt(figure1(), {9}, {H}, {}, count_sensitivity(1), 1.0); });
	expect_core_error(ErrorKind::InvalidParameter,
	                  [] { plan_markov_quilt(figure1(), {I}, {H}, {}, count_sensitivity(1), 0.0); });
	expect_core_error(ErrorKind::InvalidParameter,
	                  [] { plan_markov_quilt(figure1(), {I}, {H}, {{I, {{{G}, -1.0}}}}, count_sensitivity(1), 1.0); });
}

} // namespace
} // namespace dxpriv
