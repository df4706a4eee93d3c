// Wasserstein mechanism (MECHANISMS.md §6.7): W_inf on integer laws, the seed's Example 2 (Table 1;
// W = 1, 2, 4 for Theta = [.4,.6]^2, [.3,.7]^2, [0,1]^2) and Example 3 (Table 2; W = 1), by grid
// search over Theta and all secret pairs, and a brute-force check of (epsilon, 0)-privacy of the
// resulting Laplace mechanism on the worst pair.
#include "core/wasserstein.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "test_support.h"

namespace dxpriv {
namespace {

using ::dxpriv::testing::expect_core_error;

// Example 2: 4 records, F = sum of X_1, secret g = sum of X_2 = a; F | a ~ Bin(a, p1) * Bin(4 - a, p2).
IntegerPmf example2(int a, double p1, double p2)
{
	return convolve(binomial_pmf(a, p1), binomial_pmf(4 - a, p2));
}

// W over Theta = [lo, hi]^2 on a grid of step 0.01 and every pair of secrets a, b in 0..4.
double example2_w(double lo, double hi)
{
	std::vector<std::vector<IntegerPmf>> conditionals;
	const int steps = static_cast<int>(std::lround((hi - lo) / 0.01));
	for (int i = 0; i <= steps; ++i)
		for (int j = 0; j <= steps; ++j) {
			std::vector<IntegerPmf> model;
			for (int a = 0; a <= 4; ++a)
				model.push_back(example2(a, lo + 0.01 * i, lo + 0.01 * j));
			conditionals.push_back(model);
		}
	return wasserstein_sensitivity(conditionals);
}

TEST(Wasserstein, Example2Table1)
{
	const IntegerPmf g0 = example2(0, 0.4, 0.6), g4 = example2(4, 0.4, 0.6);
	const std::vector<double> table1 = {0.0256, 0.1536, 0.3456, 0.3456, 0.1296};
	for (int k = 0; k <= 4; ++k) {
		EXPECT_NEAR(table1[k], g0[k], 1e-12);
		EXPECT_NEAR(table1[4 - k], g4[k], 1e-12);
	}
	EXPECT_EQ(1.0, winf_integer(g0, g4));
}

TEST(Wasserstein, Example2SupremaOverTheta)
{
	EXPECT_EQ(1.0, example2_w(0.4, 0.6));
	EXPECT_EQ(2.0, example2_w(0.3, 0.7));
	EXPECT_EQ(4.0, example2_w(0.0, 1.0)); // = group DP's sensitivity
	EXPECT_DOUBLE_EQ(2.0, wasserstein_scale(1.0, 0.5));
}

TEST(Wasserstein, Example3Table2)
{
	// phi_1 = 0.6 - 0.2 phi_2, F ~ Bin(4, phi_1), Phi^2 = [0.2, 0.8]
	const IntegerPmf hi = binomial_pmf(4, 0.6 - 0.2 * 0.8), lo = binomial_pmf(4, 0.6 - 0.2 * 0.2);
	const std::vector<double> table2 = {0.0983, 0.3091, 0.3643, 0.1908, 0.0375};
	for (int k = 0; k <= 4; ++k) {
		EXPECT_NEAR(table2[k], hi[k], 5e-5);
		EXPECT_NEAR(table2[4 - k], lo[k], 5e-5);
	}
	std::vector<IntegerPmf> secrets;
	for (int s = 0; s <= 60; ++s)
		secrets.push_back(binomial_pmf(4, 0.6 - 0.2 * (0.2 + 0.01 * s)));
	EXPECT_EQ(1.0, wasserstein_sensitivity({secrets}));
}

TEST(Wasserstein, ShiftsAndPointMasses)
{
	EXPECT_EQ(0.0, winf_integer({0.2, 0.8}, {0.2, 0.8}));
	EXPECT_EQ(3.0, winf_integer({1, 0, 0, 0}, {0, 0, 0, 1}));
	EXPECT_EQ(2.0, winf_integer({0.5, 0.5, 0, 0}, {0, 0, 0.5, 0.5})); // a shift by 2
	// a tiny mass far away dominates W_inf (the sup, not an average)
	EXPECT_EQ(5.0, winf_integer({1, 0, 0, 0, 0, 0}, {0.999, 0, 0, 0, 0, 0.001}));
}

// (epsilon, 0) condition of Theorem 5, brute force on the worst pair of Example 2 at [.3,.7]^2:
// the output densities sum_k P(F = k | s) Lap(w - k; W/eps) must be within e^eps of each other at
// every w of a fine grid.
TEST(Wasserstein, LaplaceWithScaleWIsPrivateOnExample2)
{
	const double eps = 0.7;
	std::vector<std::vector<IntegerPmf>> all;
	for (double p1 = 0.3; p1 <= 0.7001; p1 += 0.05)
		for (double p2 = 0.3; p2 <= 0.7001; p2 += 0.05) {
			std::vector<IntegerPmf> m;
			for (int a = 0; a <= 4; ++a)
				m.push_back(example2(a, p1, p2));
			all.push_back(m);
		}
	const double b = wasserstein_scale(wasserstein_sensitivity(all), eps);
	EXPECT_EQ(2.0 / eps, b);
	const auto density = [b](const IntegerPmf &p, double w) {
		double d = 0;
		for (size_t k = 0; k < p.size(); ++k)
			d += p[k] * std::exp(-std::abs(w - static_cast<double>(k)) / b) / (2 * b);
		return d;
	};
	double worst = 0, worst_half = 0;
	for (const auto &m : all)
		for (const auto &pa : m)
			for (const auto &pb : m)
				for (double w = -20; w <= 24; w += 0.05) {
					worst = std::max(worst, std::log(density(pa, w) / density(pb, w)));
					// half the noise is not enough somewhere (the check can fail)
					const auto half = [b](const IntegerPmf &p, double x) {
						double d = 0;
						for (size_t k = 0; k < p.size(); ++k)
							d += p[k] * std::exp(-std::abs(x - static_cast<double>(k)) / (b / 2));
						return d;
					};
					worst_half = std::max(worst_half, std::log(half(pa, w) / half(pb, w)));
				}
	EXPECT_LE(worst, eps + 1e-12);
	EXPECT_GT(worst_half, eps);
}

// Wide laws: the CDF summed from below reaches 1.0 in floating point long before n, which must not
// open a false gap in the upper tail (the quantile coupling of two close binomials moves by 1-2).
TEST(Wasserstein, WideLawsHaveNoFalseTailGaps)
{
	const IntegerPmf a = binomial_pmf(300, 0.5), b = binomial_pmf(300, 0.51);
	EXPECT_LE(winf_integer(a, b), 4.0);
	EXPECT_GE(winf_integer(a, b), 3.0); // the means differ by 3
	EXPECT_EQ(0.0, winf_integer(a, a));
	EXPECT_EQ(1.0, winf_integer(convolve(binomial_pmf(150, 0.4), binomial_pmf(150, 0.6)),
	                            convolve(binomial_pmf(151, 0.4), binomial_pmf(149, 0.6))));
}

// The same law computed by different convolutions differs in its last bits: a tie, not a gap.
// At p1 = p2 = 0.5, F | g = a ~ Bin(4, 1/2) for every a, so W = 0 (bench r = 0).
TEST(Wasserstein, RoundingTiesAreNotGaps)
{
	std::vector<IntegerPmf> laws;
	for (int a = 0; a <= 4; ++a)
		laws.push_back(example2(a, 0.5, 0.5));
	EXPECT_EQ(0.0, wasserstein_sensitivity({laws}));
	EXPECT_EQ(0.0, winf_integer(convolve(binomial_pmf(37, 0.3), binomial_pmf(63, 0.3)), binomial_pmf(100, 0.3)));
	// a genuine small difference is still a gap
	EXPECT_EQ(1.0, winf_integer({0.5, 0.5}, {0.5 - 1e-6, 0.5 + 1e-6}));
}

TEST(Wasserstein, BadInputs)
{
	expect_core_error(ErrorKind::InvalidParameter, [] { winf_integer({0.5, 0.6}, {1}); });
	expect_core_error(ErrorKind::InvalidParameter, [] { winf_integer({-0.5, 1.5}, {1}); });
	expect_core_error(ErrorKind::InvalidParameter, [] { winf_integer({}, {1}); });
	expect_core_error(ErrorKind::InvalidParameter, [] { wasserstein_sensitivity({}); });
	expect_core_error(ErrorKind::InvalidParameter, [] { wasserstein_sensitivity({{{1.0}}}); });
	expect_core_error(ErrorKind::InvalidParameter, [] { binomial_pmf(4, 1.5); });
	expect_core_error(ErrorKind::InvalidParameter, [] { wasserstein_scale(1, 0); });
}

} // namespace
} // namespace dxpriv
