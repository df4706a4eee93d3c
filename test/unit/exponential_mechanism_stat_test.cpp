// Statistical tests of the exact exponential-mechanism sampler (MECHANISMS.md §2.1, §3.9): sampled
// frequencies against the exact law (Pearson chi-square at p = 1e-6), and the Theorem 4 utility
// bound P[u(M(x)) <= OPT - (2/eps')(ln|R| + t)] <= exp(-t) (eps' = 2 beta) at t = 1, 2, 3. Fixed
// seeds and sample sizes: deterministic, and a correct sampler fails only with tiny probability
// over the choice of seed.
#include "core/exponential_mechanism.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/random.h"
#include "test_support.h"

namespace dxpriv {
namespace {

using ::dxpriv::testing::chi_square_threshold;

using i128 = __int128;

constexpr double kSigmas = 5.0;
constexpr double kMinExpectedPerBin = 20.0;
constexpr std::size_t kSamples = 400000;
constexpr std::size_t kTheoremSamples = 200000; // per value of t

// Samples n times and runs a chi-square test against em_probabilities, pooling the candidates
// whose expected count is below kMinExpectedPerBin into one bin.
void
check_law(const std::vector<i128> &utilities, std::uint64_t den, EmBeta beta, std::uint64_t seed,
          std::size_t n, const std::string &what)
{
	SeededRandom rng(seed);
	std::vector<std::uint64_t> observed(utilities.size(), 0);
	for (std::size_t i = 0; i < n; ++i)
		observed[em_sample(rng, utilities, den, beta)]++;
	const std::vector<long double> p = em_probabilities(utilities, den, beta);
	double stat = 0, pooled_expected = 0, pooled_observed = 0;
	std::size_t bins = 0;
	for (std::size_t r = 0; r < p.size(); ++r) {
		const double expected = static_cast<double>(n) * static_cast<double>(p[r]);
		if (expected < kMinExpectedPerBin) {
			pooled_expected += expected;
			pooled_observed += static_cast<double>(observed[r]);
			continue;
		}
		const double diff = static_cast<double>(observed[r]) - expected;
		stat += diff * diff / expected;
		bins++;
	}
	if (pooled_expected >= kMinExpectedPerBin) {
		const double diff = pooled_observed - pooled_expected;
		stat += diff * diff / pooled_expected;
		bins++;
	} else {
		// a pooled tail too small to test: it must still be rare
		EXPECT_LE(pooled_observed, pooled_expected + 10 * std::sqrt(pooled_expected + 1)) << what;
	}
	ASSERT_GE(bins, 2u) << what;
	EXPECT_LE(stat, chi_square_threshold(bins - 1)) << what << ": chi-square " << stat << " over " << bins << " bins";
}

TEST(EmSamplerStat, ModeSmallBeta)
{
	// beta = 0.3 (rounded to 2^-20) over counts of a 6-value histogram
	const EmBeta b = em_beta(0.6, 1.0);
	check_law({12, 10, 9, 14, 3, 0}, 1, b, 11, kSamples, "mode, beta 0.3");
}

TEST(EmSamplerStat, ModeBetaWithWholeAndFractionalParts)
{
	// beta = 1.75: exp(-1.75 gap) uses whole Bernoulli(exp(-1)) trials plus a fractional one
	const EmBeta b{false, (std::uint64_t{7} << 20) / 4};
	check_law({5, 4, 5, 3, 2, 4, 1}, 1, b, 12, kSamples, "mode, beta 1.75");
}

TEST(EmSamplerStat, MedianInQuantileUnits)
{
	// median utilities of a 12-value histogram in 2^-20 units, beta = 0.45
	const EmUtility u{EmKind::Quantile, kQuantileOne / 2};
	const std::vector<std::int64_t> h{0, 1, 3, 2, 0, 4, 1, 0, 0, 2, 1, 0};
	const EmBeta b = em_beta(0.9, 1.0);
	check_law(em_utilities(u, h), em_utility_denominator(u), b, 13, kSamples, "median, beta 0.45");
}

TEST(EmSamplerStat, QuantileWithIrrationalLevel)
{
	const EmUtility u{EmKind::Quantile, quantile_numerator(0.3)};
	const std::vector<std::int64_t> h{2, 0, 1, 1, 3, 0, 2, 2};
	const EmBeta b = em_beta(1.3, 0.7);
	check_law(em_utilities(u, h), em_utility_denominator(u), b, 14, kSamples, "quantile 0.3");
}

TEST(EmSamplerStat, ZeroBetaIsUniform)
{
	check_law({100, 0, 50, 7}, 1, EmBeta{false, 0}, 15, kSamples, "beta 0");
}

TEST(EmSamplerStat, InfiniteBetaIsUniformOverMaximisers)
{
	check_law({3, 9, 1, 9, 9}, 1, EmBeta{true, 0}, 16, kSamples, "infinite beta");
}

// Frequency of u(output) <= OPT - (ln K + t) / beta against exp(-t), and against its exact value.
void
check_theorem_four(const std::vector<i128> &utilities, std::uint64_t den, EmBeta beta, std::uint64_t seed,
                   const std::string &what)
{
	const std::size_t k = utilities.size();
	const i128 top = *std::max_element(utilities.begin(), utilities.end());
	const std::vector<long double> p = em_probabilities(utilities, den, beta);
	for (double t : {1.0, 2.0, 3.0}) {
		const double margin = em_utility_loss_bound(beta, k, t); // in utility units
		std::size_t bad = 0;
		double exact = 0;
		for (std::size_t r = 0; r < k; ++r)
			if (static_cast<double>(top - utilities[r]) / static_cast<double>(den) >= margin)
				exact += static_cast<double>(p[r]);
		SeededRandom draws(seed + static_cast<std::uint64_t>(t));
		for (std::size_t i = 0; i < kTheoremSamples; ++i) {
			const std::size_t r = em_sample(draws, utilities, den, beta);
			if (static_cast<double>(top - utilities[r]) / static_cast<double>(den) >= margin)
				bad++;
		}
		const double freq = static_cast<double>(bad) / kTheoremSamples;
		const double se = std::sqrt(std::max(exact * (1 - exact), 1e-12) / kTheoremSamples);
		// the sampler follows the exact law, whose tail is within the theorem's bound...
		EXPECT_LE(std::fabs(freq - exact), kSigmas * se + 1e-6) << what << " t=" << t;
		EXPECT_LE(exact, std::exp(-t)) << what << " t=" << t;
		// ...and the empirical frequency is below exp(-t) by more than 5 standard errors
		EXPECT_LE(freq + kSigmas * std::sqrt(std::exp(-t) * (1 - std::exp(-t)) / kTheoremSamples), std::exp(-t))
		    << what << " t=" << t << ": frequency " << freq;
	}
}

TEST(EmTheoremFourStat, NearTightConfiguration)
{
	// One optimum and K-1 candidates just past the t = 1 threshold: the tail probability is
	// (K-1) e^{-beta gap} / (1 + (K-1) e^{-beta gap}), close to the bound e^{-1}/(1 + e^{-1}).
	const std::size_t k = 16;
	const EmBeta b{false, std::uint64_t{1} << 19}; // beta = 1/2
	const double threshold = (std::log(static_cast<double>(k)) + 1.0) / 0.5;
	const i128 gap = static_cast<i128>(std::ceil(threshold));
	std::vector<i128> u(k, 100 - gap);
	u[0] = 100;
	check_theorem_four(u, 1, b, 21, "near-tight mode");
}

TEST(EmTheoremFourStat, ModeOfARealisticHistogram)
{
	std::vector<i128> u;
	for (int r = 0; r < 40; ++r)
		u.push_back(static_cast<i128>(30 + (r * 37) % 23 - (r == 7 ? 0 : 5)));
	check_theorem_four(u, 1, em_beta(1.0, 1.0), 22, "mode of 40 values");
}

TEST(EmTheoremFourStat, MedianOfARealisticHistogram)
{
	const EmUtility m{EmKind::Quantile, kQuantileOne / 2};
	std::vector<std::int64_t> h(50, 0);
	for (int i = 0; i < 200; ++i)
		h[(i * i + 3 * i) % 50]++;
	check_theorem_four(em_utilities(m, h), em_utility_denominator(m), em_beta(0.5, 1.0), 23, "median of 200 rows");
}

} // namespace
} // namespace dxpriv
