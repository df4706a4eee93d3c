// Statistical tests of the exact samplers against their exact laws. Every test uses a fixed seed
// and a fixed sample size, so it is deterministic; the thresholds are 5-sigma bounds computed from
// the exact variance (or fourth moment) of the statistic, or chi-square quantiles at p = 1e-6, so a
// correct sampler would fail them only with a tiny probability over the choice of seed, while a
// wrong law (wrong scale, bias, asymmetry, wrong tail) is far outside them at these sample sizes.
#include "core/samplers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/random.h"
#include "test_support.h"

namespace dxpriv {
namespace {

using ::dxpriv::testing::chi_square_threshold;
using ::dxpriv::testing::expect_binomial;
using ::dxpriv::testing::expect_near_sigma;

using u128 = unsigned __int128;

constexpr double kMinExpectedPerBin = 20.0;
// Sample sizes (about 6 s in total with -O2 on one core).
constexpr std::uint64_t kBernoulliSamples = 2000000;
constexpr std::size_t kLaplaceSamples = 3000000;
constexpr std::size_t kHugeScaleSamples = 100000;

// Pearson chi-square statistic of observed counts against expected probabilities (sum 1).
double chi_square_statistic(const std::vector<std::uint64_t> &observed, const std::vector<double> &probs,
                            std::uint64_t n)
{
	double stat = 0.0;
	for (std::size_t i = 0; i < observed.size(); ++i) {
		const double expected = static_cast<double>(n) * probs[i];
		const double diff = static_cast<double>(observed[i]) - expected;
		stat += diff * diff / expected;
	}
	return stat;
}

// Exact law of the two-sided geometric ("discrete Laplace") variable with P(Z=z) ∝ exp(-|z|/b).
struct TwoSidedGeometric {
	double b; // scale in integer units: num/den

	// a = exp(-1/b), the ratio of successive probabilities.
	double a() const { return std::exp(-1.0 / b); }
	// 1 - a, computed without cancellation for large b.
	double one_minus_a() const { return -std::expm1(-1.0 / b); }
	// P(Z = z) = tanh(1/(2b)) exp(-|z|/b).
	double pmf(std::int64_t z) const
	{
		return std::tanh(0.5 / b) * std::exp(-std::fabs(static_cast<double>(z)) / b);
	}
	// P(Z <= z).
	double cdf(std::int64_t z) const
	{
		if (z < 0)
			return std::exp(static_cast<double>(z) / b) / (1.0 + a());
		return 1.0 - std::exp(-(static_cast<double>(z) + 1.0) / b) / (1.0 + a());
	}
	// P(Z > z), accurate in the upper tail.
	double sf(std::int64_t z) const
	{
		if (z < 0)
			return 1.0 - cdf(z);
		return std::exp(-(static_cast<double>(z) + 1.0) / b) / (1.0 + a());
	}
	// P(|Z| >= k) = 2 a^k / (1 + a) for k >= 1.
	double tail(std::int64_t k) const
	{
		if (k <= 0)
			return 1.0;
		return 2.0 * std::exp(-static_cast<double>(k) / b) / (1.0 + a());
	}
	// E[Z^2] = 2a / (1-a)^2.
	double variance() const
	{
		const double d = one_minus_a();
		return 2.0 * a() / (d * d);
	}
	// E[Z^4] = 2a (1 + 10a + a^2) / (1-a)^4.
	double fourth_moment() const
	{
		const double d = one_minus_a();
		const double x = a();
		return 2.0 * x * (1.0 + 10.0 * x + x * x) / (d * d * d * d);
	}
	// E|Z| = 2a / ((1+a)(1-a)).
	double mean_abs() const { return 2.0 * a() / ((1.0 + a()) * one_minus_a()); }
};

// Smallest integer z in [lo, hi] with law.cdf(z) >= p (hi if none).
std::int64_t quantile(const TwoSidedGeometric &law, double p, std::int64_t lo, std::int64_t hi)
{
	while (lo < hi) {
		const std::int64_t mid = lo + (hi - lo) / 2;
		if (law.cdf(mid) >= p)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

// Chi-square goodness of fit of integer samples against the exact two-sided geometric law. Bins
// are single integers when the bulk of the support is narrow, else 100 quantile bins; adjacent
// bins are merged until each expects at least kMinExpectedPerBin samples; the two outermost bins
// are the open tails. Fails if fewer than min_bins bins remain (a vacuous test).
void expect_chi_square_fit(const std::vector<std::int64_t> &samples, const TwoSidedGeometric &law,
                           std::size_t min_bins)
{
	const std::uint64_t n = samples.size();
	const double tail_mass = kMinExpectedPerBin / static_cast<double>(n);
	const std::int64_t bound = static_cast<std::int64_t>(std::ceil(law.b * 60.0)) + 10;
	const std::int64_t lo = quantile(law, tail_mass, -bound, bound);
	const std::int64_t hi = quantile(law, 1.0 - tail_mass, -bound, bound);
	std::vector<std::int64_t> candidate; // upper edges (inclusive) of all bins but the last
	if (hi - lo <= 200) {
		for (std::int64_t z = lo; z < hi; ++z)
			candidate.push_back(z);
	} else {
		for (int k = 1; k < 100; ++k)
			candidate.push_back(quantile(law, k / 100.0, -bound, bound));
		candidate.erase(std::unique(candidate.begin(), candidate.end()), candidate.end());
	}
	// Greedy merge from the left; a short last bin is folded into its predecessor.
	std::vector<std::int64_t> edges;
	std::vector<double> probs;
	double open_prob = 0.0;
	double previous_cdf = 0.0;
	for (std::int64_t edge : candidate) {
		const double c = law.cdf(edge);
		open_prob += c - previous_cdf;
		previous_cdf = c;
		if (open_prob * static_cast<double>(n) >= kMinExpectedPerBin) {
			edges.push_back(edge);
			probs.push_back(open_prob);
			open_prob = 0.0;
		}
	}
	const double last_prob = open_prob + law.sf(candidate.empty() ? 0 : candidate.back());
	if (last_prob * static_cast<double>(n) >= kMinExpectedPerBin || probs.empty()) {
		probs.push_back(last_prob);
	} else {
		probs.back() += last_prob;
		edges.pop_back();
	}
	ASSERT_EQ(edges.size() + 1, probs.size());
	ASSERT_GE(probs.size(), min_bins) << "chi-square test would be vacuous";
	double total = 0.0;
	for (double p : probs)
		total += p;
	ASSERT_NEAR(1.0, total, 1e-9);

	std::vector<std::uint64_t> observed(probs.size(), 0);
	for (std::int64_t z : samples) {
		const auto it = std::lower_bound(edges.begin(), edges.end(), z);
		++observed[static_cast<std::size_t>(it - edges.begin())];
	}
	const double stat = chi_square_statistic(observed, probs, n);
	const double threshold = chi_square_threshold(probs.size() - 1);
	EXPECT_LT(stat, threshold) << "chi-square " << stat << " with " << probs.size() - 1
	                           << " degrees of freedom";
}

// Sample mean and second moment of integer samples vs the exact variance and fourth moment.
void expect_moments(const std::vector<std::int64_t> &samples, const TwoSidedGeometric &law)
{
	const double n = static_cast<double>(samples.size());
	long double sum = 0, sum_sq = 0;
	for (std::int64_t z : samples) {
		const long double x = static_cast<long double>(z);
		sum += x;
		sum_sq += x * x;
	}
	const double mean = static_cast<double>(sum / samples.size());
	const double second = static_cast<double>(sum_sq / samples.size());
	const double var = law.variance();
	expect_near_sigma(mean, 0.0, std::sqrt(var / n), "mean");
	expect_near_sigma(second, var, std::sqrt((law.fourth_moment() - var * var) / n), "variance");
}

// All distributional checks of discrete_laplace at one scale.
void check_discrete_laplace(Rational scale, std::uint64_t seed, std::size_t n, std::size_t min_bins)
{
	const TwoSidedGeometric law{static_cast<double>(scale.num) / static_cast<double>(scale.den)};
	SeededRandom rng(seed);
	std::vector<std::int64_t> samples(n);
	for (auto &z : samples)
		z = discrete_laplace(rng, scale);

	expect_moments(samples, law);
	expect_chi_square_fit(samples, law, min_bins);

	// Tail probabilities P(|Z| >= k) at k = 1, ceil(b), ceil(3b).
	for (double multiple : {0.0, 1.0, 3.0}) {
		const std::int64_t k = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(multiple * law.b)));
		const std::uint64_t count = static_cast<std::uint64_t>(
		    std::count_if(samples.begin(), samples.end(), [k](std::int64_t z) { return z >= k || z <= -k; }));
		expect_binomial(count, n, law.tail(k), "P(|Z| >= " + std::to_string(k) + ")");
	}

	// P(Z = 0) exactly, and symmetry: P(Z = z) vs P(Z = -z) for a few z, and P(Z > 0) vs P(Z < 0).
	const auto count_of = [&](std::int64_t v) {
		return static_cast<std::uint64_t>(std::count(samples.begin(), samples.end(), v));
	};
	expect_binomial(count_of(0), n, law.pmf(0), "P(Z = 0)");
	const std::int64_t step = std::max<std::int64_t>(1, static_cast<std::int64_t>(law.b / 2.0));
	for (std::int64_t z = step; z <= 3 * step; z += step) {
		const std::uint64_t plus = count_of(z), minus = count_of(-z);
		expect_binomial(plus, n, law.pmf(z), "P(Z = " + std::to_string(z) + ")");
		expect_binomial(minus, n, law.pmf(-z), "P(Z = -" + std::to_string(z) + ")");
		// Given plus + minus, plus is Binomial(plus + minus, 1/2) under symmetry.
		expect_binomial(plus, plus + minus, 0.5, "symmetry at " + std::to_string(z));
	}
	const std::uint64_t positive = static_cast<std::uint64_t>(
	    std::count_if(samples.begin(), samples.end(), [](std::int64_t z) { return z > 0; }));
	const std::uint64_t negative = static_cast<std::uint64_t>(
	    std::count_if(samples.begin(), samples.end(), [](std::int64_t z) { return z < 0; }));
	expect_binomial(positive, positive + negative, 0.5, "sign symmetry");
}

TEST(UniformBelowStat, SmallRangeIsUniform)
{
	SeededRandom rng(1001);
	const std::uint64_t n = 1000000;
	std::vector<std::uint64_t> counts(10, 0);
	for (std::uint64_t i = 0; i < n; ++i)
		++counts[rng.uniform_below(std::uint64_t{10})];
	const std::vector<double> probs(10, 0.1);
	EXPECT_LT(chi_square_statistic(counts, probs, n), chi_square_threshold(9));
}

TEST(UniformBelowStat, HeavyRejectionRangesAreUniform)
{
	// n = 3 * 2^62 rejects a quarter of all words; the 12 bins [j 2^60, (j+1) 2^60) are equally likely.
	SeededRandom rng(1002);
	const std::uint64_t n = 400000;
	const std::uint64_t range = std::uint64_t{3} << 62;
	std::vector<std::uint64_t> counts(12, 0);
	for (std::uint64_t i = 0; i < n; ++i)
		++counts[rng.uniform_below(range) >> 60];
	const std::vector<double> probs(12, 1.0 / 12.0);
	EXPECT_LT(chi_square_statistic(counts, probs, n), chi_square_threshold(11));

	// The same for 128 bits: n = 3 * 2^126, bins of width 2^124.
	const u128 range128 = u128{3} << 126;
	std::vector<std::uint64_t> counts128(12, 0);
	for (std::uint64_t i = 0; i < n; ++i)
		++counts128[static_cast<std::size_t>(rng.uniform_below(range128) >> 124)];
	EXPECT_LT(chi_square_statistic(counts128, probs, n), chi_square_threshold(11));

	// And a range just above 2^64 (2^64 + 2^62: low and high words both matter): 5 bins of 2^62.
	const u128 range65 = (u128{1} << 64) + (u128{1} << 62);
	std::vector<std::uint64_t> counts65(5, 0);
	for (std::uint64_t i = 0; i < n; ++i)
		++counts65[static_cast<std::size_t>(rng.uniform_below(range65) >> 62)];
	EXPECT_LT(chi_square_statistic(counts65, std::vector<double>(5, 0.2), n), chi_square_threshold(4));
}

TEST(BernoulliRationalStat, MatchesProbability)
{
	SeededRandom rng(2001);
	const std::uint64_t n = kBernoulliSamples;
	struct Case {
		std::uint64_t num, den;
	};
	for (const Case c : {Case{1, 3}, Case{7, 10}, Case{1, 1000}, Case{std::uint64_t{1} << 63, UINT64_MAX},
	                     Case{UINT64_MAX / 5, UINT64_MAX}}) {
		std::uint64_t ones = 0;
		for (std::uint64_t i = 0; i < n; ++i)
			ones += bernoulli_rational(rng, c.num, c.den) ? 1 : 0;
		const double p = static_cast<double>(static_cast<long double>(c.num) / static_cast<long double>(c.den));
		expect_binomial(ones, n, p, std::to_string(c.num) + "/" + std::to_string(c.den));
	}
}

TEST(BernoulliExpMinusStat, MatchesExpMinusGamma)
{
	SeededRandom rng(3001);
	const std::uint64_t n = kBernoulliSamples;
	struct Case {
		std::uint64_t num, den;
	};
	const std::uint64_t big = std::uint64_t{3} << 61; // 128-bit products den * K
	for (const Case c : {Case{3, 10}, Case{1, 1}, Case{27, 10}, Case{7, 3}, Case{1, 2},
	                     Case{big / 3, big}, Case{7 * (big / 3), big}}) {
		std::uint64_t ones = 0;
		for (std::uint64_t i = 0; i < n; ++i)
			ones += bernoulli_exp_minus(rng, c.num, c.den) ? 1 : 0;
		const long double gamma = static_cast<long double>(c.num) / static_cast<long double>(c.den);
		expect_binomial(ones, n, static_cast<double>(std::exp(-gamma)),
		                "exp(-" + std::to_string(c.num) + "/" + std::to_string(c.den) + ")");
	}
}

TEST(DiscreteLaplaceStat, ScaleHalf) { check_discrete_laplace(Rational{1, 2}, 4001, kLaplaceSamples, 8); }

TEST(DiscreteLaplaceStat, ScaleOne) { check_discrete_laplace(Rational{1, 1}, 4002, kLaplaceSamples, 15); }

TEST(DiscreteLaplaceStat, ScaleThreePointSeven) { check_discrete_laplace(Rational{37, 10}, 4003, kLaplaceSamples, 50); }

TEST(DiscreteLaplaceStat, ScaleThreePointSevenFromRationalAtLeast)
{
	// The denominator-2^20 form produced by rational_at_least (t and s both large).
	check_discrete_laplace(rational_at_least(3.7), 4004, kLaplaceSamples / 2, 50);
}

TEST(DiscreteLaplaceStat, ScaleThousand) { check_discrete_laplace(Rational{1000, 1}, 4005, kLaplaceSamples, 80); }

TEST(DiscreteLaplaceStat, HugeScales)
{
	// Scale 2^40 (as 2^60 / 2^20) and the largest supported 2^43 (2^63 / 2^20, where U + t*V
	// exceeds 2^64 for V >= 2): mean and second moment only.
	std::uint64_t seed = 4006;
	for (double scale : {std::ldexp(1.0, 40), std::ldexp(1.0, 43)}) {
		SCOPED_TRACE(scale);
		const Rational r = rational_at_least(scale);
		const TwoSidedGeometric law{scale};
		SeededRandom rng(seed++);
		std::vector<std::int64_t> samples(kHugeScaleSamples);
		for (auto &z : samples)
			z = discrete_laplace(rng, r);
		expect_moments(samples, law);
		// Sanity of the exact moments: E[Z^2] ~ 2 b^2 for large b.
		EXPECT_NEAR(1.0, law.variance() / (2.0 * scale * scale), 1e-9);
	}
}

TEST(LaplaceOnGridStat, MatchesContinuousLaplace)
{
	const double scale = 2.5;
	const double grid = std::ldexp(1.0, -38);
	const std::size_t n = kLaplaceSamples;
	SeededRandom rng(5001);
	std::vector<double> samples(n);
	for (auto &z : samples)
		z = laplace_on_grid(rng, scale, grid);

	// The exact law is grid * DLap(b) with b = rational_at_least(scale / grid); its moments agree
	// with the continuous Laplace (E|Z| = scale, E Z^2 = 2 scale^2) to ~1e-12 relative.
	const Rational r = rational_at_least(scale / grid);
	const TwoSidedGeometric law{static_cast<double>(r.num) / static_cast<double>(r.den)};
	EXPECT_NEAR(1.0, law.mean_abs() * grid / scale, 1e-9);
	EXPECT_NEAR(1.0, law.variance() * grid * grid / (2.0 * scale * scale), 1e-9);

	long double sum = 0, sum_abs = 0, sum_sq = 0;
	std::vector<std::int64_t> steps(n);
	for (std::size_t i = 0; i < n; ++i) {
		const double z = samples[i];
		ASSERT_EQ(std::trunc(z / grid), z / grid) << "off-grid value " << z;
		steps[i] = static_cast<std::int64_t>(z / grid);
		sum += z;
		sum_abs += std::fabs(z);
		sum_sq += static_cast<long double>(z) * z;
	}
	const double dn = static_cast<double>(n);
	const double mean = static_cast<double>(sum / n);
	const double mean_abs = static_cast<double>(sum_abs / n);
	const double second = static_cast<double>(sum_sq / n);
	// Continuous Laplace(s): Var Z = 2 s^2, Var |Z| = s^2, Var Z^2 = E Z^4 - (E Z^2)^2 = 24 s^4 - 4 s^4.
	expect_near_sigma(mean, 0.0, std::sqrt(2.0 / dn) * scale, "mean");
	expect_near_sigma(mean_abs, scale, scale / std::sqrt(dn), "E|Z|");
	expect_near_sigma(second, 2.0 * scale * scale, std::sqrt(20.0 / dn) * scale * scale, "variance");
	for (double t : {0.5, 1.0, 2.0, 4.0, 8.0}) {
		const double threshold = t * scale;
		const std::uint64_t count = static_cast<std::uint64_t>(std::count_if(
		    samples.begin(), samples.end(), [threshold](double z) { return std::fabs(z) >= threshold; }));
		expect_binomial(count, n, std::exp(-t), "P(|Z| >= " + std::to_string(t) + " scale)");
	}
	// Shape: chi-square over quantile bins of the exact law (in grid steps).
	expect_chi_square_fit(steps, law, 80);
}

} // namespace
} // namespace dxpriv
