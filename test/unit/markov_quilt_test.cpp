// Attribute-private Markov quilt mechanism (MECHANISMS.md §6.6): the seed's Example 1 (Figure 1),
// quilt search on the moral graph, max-influence of a parameter table, and bad inputs.
#include "core/markov_quilt.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "core/wasserstein.h"
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

TEST(MarkovQuilt, Example1TallStudentsNeedNoNoise)
{
	const double eps = 1.0, e_g = 0.3, n = 500;
	const QuiltInfluences infl = {{I, {{{G}, e_g}}}};
	const MarkovQuiltPlan p = plan_markov_quilt(figure1(), {I}, {H}, infl, count_sensitivity({H}, n), eps);
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
	const MarkovQuiltPlan p = plan_markov_quilt(figure1(), {I}, {H, S}, infl, count_sensitivity({H, S}, n), eps);
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
	const MarkovQuiltPlan p = plan_markov_quilt(figure1(), {I}, {H}, infl, count_sensitivity({H}, n), eps);
	EXPECT_DOUBLE_EQ(n / eps, p.scale);
	EXPECT_TRUE(p.choices[0].quilt.empty());
	// no declared influence at all: the same
	const MarkovQuiltPlan q = plan_markov_quilt(figure1(), {I}, {H}, {}, count_sensitivity({H}, n), eps);
	EXPECT_DOUBLE_EQ(n / eps, q.scale);
}

TEST(MarkovQuilt, MoralGraphLinksCoParents)
{
	// without moralisation {G} would not separate I from H: I and G are co-parents of S, so
	// removing S alone leaves I connected to H only through the moral edge I - G
	const QuiltInfluences infl = {{I, {{{S}, 0.1}}}};
	const MarkovQuiltPlan p = plan_markov_quilt(figure1(), {I}, {H}, infl, count_sensitivity({H}, 10), 1.0);
	EXPECT_DOUBLE_EQ(10.0, p.scale); // {s} is no quilt that excludes h: N = {i, g, h, w}
}

TEST(MarkovQuilt, DisconnectedAttributesNeedNoNoise)
{
	const AttributeNetwork net{{"a", "b", "c"}, {{0, 1}}};
	const MarkovQuiltPlan p = plan_markov_quilt(net, {0}, {2}, {}, count_sensitivity({2}, 10), 0.5);
	EXPECT_EQ(0.0, p.scale); // the empty quilt (influence 0): c is in R
}

// Theorem 4 by brute force on a small distributional model: chain i -> q -> r of binary columns
// over n = 6 records, each column Bernoulli(phi) given its parameter; phi_i in {0, 1} is the
// secret, phi_q | phi_i and phi_r | phi_q are declared tables. F = count of X_i = 1 plus count of
// X_r = 1 (A = {i, r}). The quilt {q} has max-influence e(phi_q | phi_i) from its table; the
// mechanism's output density given each secret, sum_F P(F | phi_i) Lap(w - F; b), must stay within
// e^eps of the other's at every w. With the scale halved the condition fails (the check can fail).
TEST(MarkovQuilt, Theorem4ByBruteForceOnAChain)
{
	const int n = 6;
	const double eps = 1.0;
	const std::vector<double> phi_i = {0.0, 1.0}, phi_q = {0.2, 0.5, 0.8}, phi_r = {0.1, 0.9};
	const std::vector<std::vector<double>> q_given_i = {{0.45, 0.3, 0.25}, {0.35, 0.3, 0.35}};
	const std::vector<std::vector<double>> r_given_q = {{0.7, 0.3}, {0.5, 0.5}, {0.2, 0.8}};
	const double e = max_influence(q_given_i); // ln(0.35/0.25)
	ASSERT_LT(e, eps);
	const AttributeNetwork chain{{"i", "q", "r"}, {{0, 1}, {1, 2}}};
	const QuiltInfluences infl = {{0, {{{1}, e}}}};
	// a count over the columns in S moves by at most n per column
	const ColumnSensitivity sens = [n](const std::vector<int> &cols) { return static_cast<double>(n * cols.size()); };
	const MarkovQuiltPlan plan = plan_markov_quilt(chain, {0}, {0, 2}, infl, sens, eps);
	EXPECT_DOUBLE_EQ(n / (eps - e), plan.scale); // A ∩ N = {i}: n / (eps - e) < 2n / eps
	EXPECT_EQ(std::vector<int>({1}), plan.choices[0].quilt);
	// P(F | phi_i = a): mixture over phi_q, phi_r of Bin(n, a) * Bin(n, phi_r)
	std::vector<IntegerPmf> law(2, IntegerPmf(2 * n + 1, 0.0));
	for (int a = 0; a < 2; ++a)
		for (size_t q = 0; q < phi_q.size(); ++q)
			for (size_t r = 0; r < phi_r.size(); ++r) {
				const IntegerPmf f = convolve(binomial_pmf(n, phi_i[a]), binomial_pmf(n, phi_r[r]));
				for (size_t k = 0; k < f.size(); ++k)
					law[a][k] += q_given_i[a][q] * r_given_q[q][r] * f[k];
			}
	const auto worst_log_ratio = [&](double b) {
		double worst = 0;
		for (double w = -40; w <= 52; w += 0.1) {
			double d[2] = {0, 0};
			for (int a = 0; a < 2; ++a)
				for (size_t k = 0; k < law[a].size(); ++k)
					d[a] += law[a][k] * std::exp(-std::abs(w - static_cast<double>(k)) / b);
			worst = std::max(worst, std::abs(std::log(d[0] / d[1])));
		}
		return worst;
	};
	EXPECT_LE(worst_log_ratio(plan.scale), eps + 1e-12);
	EXPECT_GT(worst_log_ratio(plan.scale / 2), eps);
	// without noise the count itself tells the secret apart: some count has mass under one only
	bool disjoint = false;
	for (size_t k = 0; k < law[0].size(); ++k)
		disjoint = disjoint || (law[0][k] > 0) != (law[1][k] > 0);
	EXPECT_TRUE(disjoint);
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
	                  [] { plan_markov_quilt(figure1(), {9}, {H}, {}, count_sensitivity({H}, 1), 1.0); });
	expect_core_error(ErrorKind::InvalidParameter,
	                  [] { plan_markov_quilt(figure1(), {I}, {H}, {}, count_sensitivity({H}, 1), 0.0); });
	expect_core_error(ErrorKind::InvalidParameter,
	                  [] { plan_markov_quilt(figure1(), {I}, {H}, {{I, {{{G}, -1.0}}}}, count_sensitivity({H}, 1), 1.0); });
}

} // namespace
} // namespace dxpriv

namespace dxpriv {
namespace {

// Table releases (attribute_release.cpp): the sum or mean of one declared column [lo, hi] over n
// rows; Delta_S F = n (hi - lo) (sum) or hi - lo (mean) when the column is in S, else 0.
TEST(MarkovQuiltColumn, ParseQuilt)
{
	EXPECT_EQ(std::vector<int>({S, G}), parse_quilt(figure1(), "gender, sat", I));
	EXPECT_EQ(std::vector<int>({G}), parse_quilt(figure1(), "gender", I));
	EXPECT_EQ(G, network_attribute(figure1(), "gender"));
	expect_core_error(ErrorKind::InvalidParameter, [] { parse_quilt(figure1(), "gender,income", I); });
	expect_core_error(ErrorKind::InvalidParameter, [] { parse_quilt(figure1(), "gender,gender", I); });
	expect_core_error(ErrorKind::InvalidParameter, [] { parse_quilt(figure1(), "shoe", I); });
	expect_core_error(ErrorKind::InvalidParameter, [] { parse_quilt(figure1(), "", I); });
}

TEST(MarkovQuiltColumn, SingleColumnSensitivity)
{
	const ColumnSensitivity sum = single_column_sensitivity(S, 200, 1600, 500, true);
	EXPECT_DOUBLE_EQ(500 * 1400.0, sum({S}));
	EXPECT_DOUBLE_EQ(500 * 1400.0, sum({H, S}));
	EXPECT_EQ(0.0, sum({H}));
	EXPECT_EQ(0.0, sum({}));
	const ColumnSensitivity avg = single_column_sensitivity(S, 200, 1600, 500, false);
	EXPECT_DOUBLE_EQ(1400.0, avg({S, I}));
	expect_core_error(ErrorKind::InvalidParameter, [] { single_column_sensitivity(0, 2, 1, 10, true); });
	expect_core_error(ErrorKind::InvalidParameter, [] { single_column_sensitivity(0, 0, 1, 0, true); });
	expect_core_error(ErrorKind::InvalidParameter, [] { single_column_sensitivity(0, 0, INFINITY, 5, true); });
}

// Counts with a condition (dx.attr_count; Example 1 above): Delta_S F = n when S meets the
// condition's attributes A, else 0; with A ∩ N non-empty no quilt beats the trivial n / eps, however
// small its influence; a count without condition never moves.
TEST(MarkovQuiltColumn, CountSensitivityAndExample1Counts)
{
	const ColumnSensitivity c = count_sensitivity({H, S}, 500);
	EXPECT_EQ(500.0, c({S}));
	EXPECT_EQ(500.0, c({G, H}));
	EXPECT_EQ(0.0, c({G, I}));
	EXPECT_EQ(0.0, c({}));
	EXPECT_EQ(0.0, count_sensitivity({}, 500)({S, H, G, I}));
	expect_core_error(ErrorKind::InvalidParameter, [] { count_sensitivity({S}, 0); });
	expect_core_error(ErrorKind::InvalidParameter, [] { count_sensitivity({S}, INFINITY); });
	const double eps = 1.0;
	// a smaller influence does not help either: Delta_{A ∩ N} F = Delta_A F = n for a count
	const MarkovQuiltPlan small_e = plan_markov_quilt(figure1(), {I}, {H, S}, {{I, {{{G}, 0.01}}}},
	                                                  count_sensitivity({H, S}, 500), eps);
	EXPECT_DOUBLE_EQ(500 / eps, small_e.scale);
	const MarkovQuiltPlan all =
	    plan_markov_quilt(figure1(), {I}, {}, {{I, {{{G}, 0.3}}}}, count_sensitivity({}, 500), eps);
	EXPECT_EQ(0.0, all.scale);
}

// Example 1 as a table release: the mean of height (outside N = {i, s} of the quilt {g}) needs no
// attribute noise; for SAT (in N) the quilt's bound Delta / (eps - e) is larger than the trivial
// Delta / eps (one column: Delta_{A ∩ N} F = Delta_A F), so Algorithm 3 keeps the trivial bound.
TEST(MarkovQuiltColumn, Example1TableReleases)
{
	const double eps = 1.0, e_g = 0.3;
	const QuiltInfluences infl = {{I, {{{G}, e_g}}}};
	const MarkovQuiltPlan h = plan_markov_quilt(figure1(), {I}, {H}, infl,
	                                            single_column_sensitivity(H, 100, 220, 500, false), eps);
	EXPECT_EQ(0.0, h.scale);
	EXPECT_EQ(std::vector<int>({G}), h.choices[0].quilt);
	const MarkovQuiltPlan s = plan_markov_quilt(figure1(), {I}, {S}, infl,
	                                            single_column_sensitivity(S, 200, 1600, 500, true), eps);
	EXPECT_DOUBLE_EQ(500 * 1400.0 / eps, s.scale);
	EXPECT_TRUE(s.choices[0].quilt.empty());
	// income itself: always in N
	const MarkovQuiltPlan i = plan_markov_quilt(figure1(), {I}, {I}, infl,
	                                            single_column_sensitivity(I, 0, 10, 500, false), eps);
	EXPECT_DOUBLE_EQ(10.0, i.scale);
}

} // namespace
} // namespace dxpriv
