// Statistical tests of the exact discrete Gaussian (CKS 2020 Algorithm 3), gaussian_on_grid and the
// wide-integer Bernoulli it relies on. Fixed seeds and sample sizes (deterministic); thresholds are
// 5-sigma bounds from exact moments obtained by summing the pmf, or chi-square quantiles at
// p = 1e-6 (Boost.Math). A wrong variance, bias, asymmetry or shape is far outside them.
#include "core/gaussian.h"

#include <gtest/gtest.h>

#include <boost/math/distributions/normal.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/big_sampling.h"
#include "core/random.h"
#include "core/samplers.h"
#include "test_support.h"

namespace dxpriv {
namespace {

using ::dxpriv::testing::chi_square_threshold;
using ::dxpriv::testing::expect_binomial;
using ::dxpriv::testing::expect_near_sigma;
using ::dxpriv::testing::normalise_pmf;

constexpr double kMinExpectedPerBin = 20.0;
constexpr std::size_t kSamples = 2000000;

// The exact discrete Gaussian law N_Z(0, sigma2) on [-bound, bound] (mass beyond is below 1e-30).
struct DiscreteGaussianLaw {
	std::int64_t bound;
	std::vector<double> pmf; // pmf[z + bound]
	double variance = 0, fourth = 0;

	// Sums exp(-z^2/(2 sigma2)) over |z| <= 12 sigma + 2 and normalises in long double.
	explicit DiscreteGaussianLaw(long double sigma2)
	{
		bound = static_cast<std::int64_t>(std::ceil(12.0L * std::sqrt(sigma2))) + 2;
		std::vector<long double> w;
		long double total = 0;
		for (std::int64_t z = -bound; z <= bound; ++z) {
			const long double x = static_cast<long double>(z);
			w.push_back(std::exp(-x * x / (2 * sigma2)));
			total += w.back();
		}
		normalise_pmf(w, total, bound, pmf, variance, fourth);
	}
	// P(Z = z), 0 outside the table.
	double p(std::int64_t z) const
	{
		return z < -bound || z > bound ? 0.0 : pmf[static_cast<std::size_t>(z + bound)];
	}
};

// Pearson chi-square of integer samples against the law: single-integer bins merged left to right
// until each expects kMinExpectedPerBin samples (the tails are open bins). Fails if fewer than
// min_bins bins remain.
void expect_chi_square_fit(const std::vector<std::int64_t> &samples, const DiscreteGaussianLaw &law, std::size_t min_bins)
{
	const double n = static_cast<double>(samples.size());
	std::vector<std::int64_t> upper; // inclusive upper edge of each bin but the last
	std::vector<double> probs;
	double open = 0;
	for (std::int64_t z = -law.bound; z <= law.bound; ++z) {
		open += law.p(z);
		if (open * n >= kMinExpectedPerBin) {
			upper.push_back(z);
			probs.push_back(open);
			open = 0;
		}
	}
	// Fold the short remainder into the last bin, which becomes the open upper tail.
	probs.back() += open;
	upper.pop_back();
	ASSERT_GE(probs.size(), min_bins) << "chi-square test would be vacuous";
	std::vector<double> observed(probs.size(), 0.0);
	for (std::int64_t z : samples)
		observed[static_cast<std::size_t>(std::lower_bound(upper.begin(), upper.end(), z) - upper.begin())] += 1;
	double stat = 0;
	for (std::size_t i = 0; i < probs.size(); ++i) {
		const double expected = n * probs[i];
		stat += (observed[i] - expected) * (observed[i] - expected) / expected;
	}
	EXPECT_LT(stat, chi_square_threshold(probs.size() - 1)) << "chi-square with " << probs.size() - 1 << " df";
}

// Mean, variance, chi-square, P(Z = 0) and sign symmetry of discrete_gaussian at one sigma^2.
void check_discrete_gaussian(Rational sigma2, std::uint64_t seed, std::size_t min_bins)
{
	const DiscreteGaussianLaw law(static_cast<long double>(sigma2.num) / static_cast<long double>(sigma2.den));
	SeededRandom rng(seed);
	std::vector<std::int64_t> samples(kSamples);
	for (auto &z : samples)
		z = discrete_gaussian(rng, sigma2);
	const double n = static_cast<double>(kSamples);
	long double sum = 0, sum_sq = 0;
	std::uint64_t zeros = 0, positive = 0, negative = 0;
	for (std::int64_t z : samples) {
		sum += z;
		sum_sq += static_cast<long double>(z) * z;
		zeros += z == 0;
		positive += z > 0;
		negative += z < 0;
	}
	expect_near_sigma(static_cast<double>(sum / n), 0.0, std::sqrt(law.variance / n), "mean");
	expect_near_sigma(static_cast<double>(sum_sq / n), law.variance,
	                  std::sqrt((law.fourth - law.variance * law.variance) / n), "variance");
	expect_binomial(zeros, kSamples, law.p(0), "P(Z = 0)");
	expect_binomial(positive, positive + negative, 0.5, "sign symmetry");
	expect_chi_square_fit(samples, law, min_bins);
}

TEST(DiscreteGaussianStat, VarianceOne) { check_discrete_gaussian(Rational{1, 1}, 101, 8); }

TEST(DiscreteGaussianStat, VarianceOneThird) { check_discrete_gaussian(Rational{1, 3}, 102, 4); }

TEST(DiscreteGaussianStat, VarianceNineQuarters) { check_discrete_gaussian(Rational{9, 4}, 103, 12); }

TEST(DiscreteGaussianStat, VarianceFromRationalAtLeast)
{
	// sigma^2 = m / 2^20 as produced for a double; t = floor(sigma) + 1 = 8.
	check_discrete_gaussian(rational_at_least(7.77 * 7.77), 104, 30);
}

TEST(DiscreteGaussianStat, VarianceTwoThousand) { check_discrete_gaussian(Rational{2000, 1}, 105, 150); }

TEST(DiscreteGaussianStat, ExactLawIsNotTheRoundedContinuousOne)
{
	// Sanity of the reference itself: at sigma^2 = 1/3 the discrete Gaussian's variance (0.32119)
	// differs from 1/3 by about 5 times VarianceOneThird's 5-sigma bound (2.5e-3), so a sampler
	// with the continuous variance would fail it.
	const DiscreteGaussianLaw law(1.0L / 3.0L);
	EXPECT_NEAR(0.3211882651716694, law.variance, 1e-12);
	const DiscreteGaussianLaw wide(2000.0L);
	EXPECT_NEAR(2000.0, wide.variance, 1e-9); // the Poisson-summation correction is ~e^{-2 pi^2 2000}
}

TEST(GaussianOnGridStat, VarianceAndTails)
{
	const double sigma = 2.5;
	const double grid = std::ldexp(1.0, -30);
	SeededRandom rng(201);
	const double n = static_cast<double>(kSamples);
	long double sum = 0, sum_sq = 0;
	std::uint64_t beyond_one = 0, beyond_two = 0;
	for (std::size_t i = 0; i < kSamples; ++i) {
		const double z = gaussian_on_grid(rng, sigma, grid);
		ASSERT_EQ(std::trunc(z / grid), z / grid) << "off-grid value " << z;
		sum += z;
		sum_sq += static_cast<long double>(z) * z;
		beyond_one += std::fabs(z) > sigma;
		beyond_two += std::fabs(z) > 2 * sigma;
	}
	// s = rational_at_least(sigma/grid) >= sigma/grid, and (s grid)/sigma - 1 < 2^-20 / 2^31.
	expect_near_sigma(static_cast<double>(sum / n), 0.0, sigma / std::sqrt(n), "mean");
	expect_near_sigma(static_cast<double>(sum_sq / n), sigma * sigma, std::sqrt(2.0 / n) * sigma * sigma, "variance");
	const boost::math::normal_distribution<double> normal;
	expect_binomial(beyond_one, kSamples, 2 * boost::math::cdf(boost::math::complement(normal, 1.0)), "P(|Z| > sigma)");
	expect_binomial(beyond_two, kSamples, 2 * boost::math::cdf(boost::math::complement(normal, 2.0)), "P(|Z| > 2 sigma)");
}

TEST(BigSamplingStat, BernoulliExpMinusWideRationals)
{
	SeededRandom rng(301);
	const std::uint64_t n = 300000;
	const BigInt two200 = BigInt(1) << 200;
	const BigInt ten60 = boost::multiprecision::pow(BigInt(10), 60);
	struct Case {
		BigInt num, den;
		double gamma;
	};
	const std::vector<Case> cases = {
	    {3 * (two200 >> 1), two200, 1.5},       {3 * (ten60 / 10), ten60, 0.3},
	    {27 * (ten60 / 10), ten60, 2.7},        {(BigInt(1) << 127) / 5, BigInt(1) << 127, 0.2},
	    {7 * ten60 + ten60 / 4, ten60, 7.25},   {BigInt(0), two200, 0.0}};
	for (const Case &c : cases) {
		std::uint64_t ones = 0;
		for (std::uint64_t i = 0; i < n; ++i)
			ones += bernoulli_exp_minus_big(rng, c.num, c.den) ? 1 : 0;
		if (c.gamma == 0.0)
			EXPECT_EQ(n, ones);
		else
			expect_binomial(ones, n, std::exp(-c.gamma), "exp(-" + std::to_string(c.gamma) + ")");
	}
}

TEST(BigSamplingStat, UniformBelowWideRangeIsUniform)
{
	// n = 3 * 2^198: the top bits split [0, n) into 12 equally likely bins of width 2^196.
	SeededRandom rng(302);
	const std::uint64_t draws = 240000;
	const BigInt range = BigInt(3) << 198;
	std::vector<double> counts(12, 0.0);
	for (std::uint64_t i = 0; i < draws; ++i) {
		const BigInt x = uniform_below_big(rng, range);
		ASSERT_LT(x, range);
		counts[static_cast<std::size_t>(static_cast<unsigned>(x >> 196))] += 1;
	}
	double stat = 0;
	const double expected = static_cast<double>(draws) / 12.0;
	for (double c : counts)
		stat += (c - expected) * (c - expected) / expected;
	EXPECT_LT(stat, chi_square_threshold(11));
}

} // namespace
} // namespace dxpriv
