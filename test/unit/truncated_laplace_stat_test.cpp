// Statistical tests of gtl_on_grid against its exact discrete law (P(Z = z) ∝ exp(-|z|/t) on
// [ceil(A/grid), floor(B/grid)]) and, on a fine grid, against the continuous GTL's closed-form costs.
// Fixed seeds and sizes; 5-sigma bounds from exact moments, chi-square at p = 1e-6 (Boost.Math).
#include "core/truncated_laplace.h"

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
using ::dxpriv::testing::expect_binomial;
using ::dxpriv::testing::expect_near_sigma;
using ::dxpriv::testing::expect_pooled_chi_square;

constexpr double kMinExpectedPerBin = 20.0;
constexpr std::size_t kSamples = 2000000;

// The exact law of gtl_on_grid in grid units, with t known exactly (a dyadic lambda/grid).
struct DiscreteTruncatedLaplace {
	std::int64_t lo, hi;
	std::vector<double> pmf;
	double mean = 0, second = 0, third = 0, fourth = 0;

	// Normalises exp(-|z|/t) over [lo, hi] in long double and sums the first four moments.
	DiscreteTruncatedLaplace(std::int64_t lo_, std::int64_t hi_, long double t) : lo(lo_), hi(hi_)
	{
		long double total = 0;
		std::vector<long double> w;
		for (std::int64_t z = lo; z <= hi; ++z) {
			w.push_back(std::exp(-std::fabs(static_cast<long double>(z)) / t));
			total += w.back();
		}
		long double m[5] = {0, 0, 0, 0, 0};
		for (std::int64_t z = lo; z <= hi; ++z) {
			const long double p = w[static_cast<std::size_t>(z - lo)] / total;
			pmf.push_back(static_cast<double>(p));
			long double power = 1;
			for (int k = 0; k < 5; ++k, power *= static_cast<long double>(z))
				m[k] += p * power;
		}
		mean = static_cast<double>(m[1]);
		second = static_cast<double>(m[2]);
		third = static_cast<double>(m[3]);
		fourth = static_cast<double>(m[4]);
	}
	// P(Z = z).
	double p(std::int64_t z) const { return z < lo || z > hi ? 0.0 : pmf[static_cast<std::size_t>(z - lo)]; }
};

// Draws kSamples grid values, converts them to grid units and checks support, moments, chi-square,
// the probability of both end points and (for symmetric laws) sign symmetry.
void check_against_exact_law(const GeneralizedTruncatedLaplace &law, double grid, long double t, std::uint64_t seed,
                             std::size_t min_bins)
{
	const DiscreteTruncatedLaplace exact(static_cast<std::int64_t>(std::ceil(law.lower() / grid)),
	                                     static_cast<std::int64_t>(std::floor(law.upper() / grid)), t);
	SeededRandom rng(seed);
	const double n = static_cast<double>(kSamples);
	std::vector<double> counts(static_cast<std::size_t>(exact.hi - exact.lo + 1), 0.0);
	long double sum = 0, sum_sq = 0;
	for (std::size_t i = 0; i < kSamples; ++i) {
		const double x = gtl_on_grid(rng, law, grid);
		const double units = x / grid;
		ASSERT_EQ(std::trunc(units), units) << x;
		const std::int64_t z = static_cast<std::int64_t>(units);
		ASSERT_GE(z, exact.lo);
		ASSERT_LE(z, exact.hi);
		counts[static_cast<std::size_t>(z - exact.lo)] += 1;
		sum += z;
		sum_sq += static_cast<long double>(z) * z;
	}
	const double var = exact.second - exact.mean * exact.mean;
	expect_near_sigma(static_cast<double>(sum / n), exact.mean, std::sqrt(var / n), "mean");
	expect_near_sigma(static_cast<double>(sum_sq / n), exact.second,
	                  std::sqrt((exact.fourth - exact.second * exact.second) / n), "second moment");
	expect_binomial(static_cast<std::uint64_t>(counts.front()), kSamples, exact.p(exact.lo), "P(Z = lo)");
	expect_binomial(static_cast<std::uint64_t>(counts.back()), kSamples, exact.p(exact.hi), "P(Z = hi)");
	expect_binomial(static_cast<std::uint64_t>(counts[static_cast<std::size_t>(-exact.lo)]), kSamples, exact.p(0),
	                "P(Z = 0)");
	// Chi-square over single values merged left to right to >= kMinExpectedPerBin expected counts.
	expect_pooled_chi_square(exact.pmf, counts, n, kMinExpectedPerBin, min_bins);
}

TEST(TruncatedLaplaceStat, SymmetricCoarseGrid)
{
	// epsilon 1, delta 0.05: T = 2.9006, lambda = 1; grid 2^-6 gives t = 64 exactly and 371 values.
	check_against_exact_law(gtl_symmetric(1.0, 1.0, 0.05), std::ldexp(1.0, -6), 64.0L, 7001, 300);
}

TEST(TruncatedLaplaceStat, AsymmetricSupport)
{
	// (sensitivity 2, epsilon 0.5, delta 0.05), far endpoint -25: support [-25, 7.78], lambda = 4,
	// grid 2^-3: t = 32.
	check_against_exact_law(gtl_with_far_endpoint(2.0, 0.5, 0.05, -25.0), 0.125, 32.0L, 7002, 150);
}

TEST(TruncatedLaplaceStat, NearlyUniformWhenTheScaleDwarfsTheSupport)
{
	// epsilon 0.01, delta 0.4: lambda = 100, T = 1.2484, grid 2^-4: t = 1600 over 39 values. A plain
	// "draw DLap(t), reject outside" sampler would need ~60 draws per sample here; the folded
	// geometric needs O(1), and its law must still be exact.
	check_against_exact_law(gtl_symmetric(1.0, 0.01, 0.4), 0.0625, 1600.0L, 7003, 39);
}

TEST(TruncatedLaplaceStat, FineGridMatchesContinuousCosts)
{
	// epsilon 1, delta 1e-5 on grid 2^-30: E|X| = 0.999868, E[X^2] = 1.998233 (§8); the grid law
	// differs from the continuous one by O(2^-30).
	const GeneralizedTruncatedLaplace law = gtl_symmetric(1.0, 1.0, 1e-5);
	const double grid = std::ldexp(1.0, -30);
	SeededRandom rng(7004);
	const double n = static_cast<double>(kSamples);
	long double sum = 0, sum_abs = 0, sum_sq = 0;
	double largest = 0;
	std::uint64_t beyond_four = 0, positive = 0;
	for (std::size_t i = 0; i < kSamples; ++i) {
		const double x = gtl_on_grid(rng, law, grid);
		sum += x;
		sum_abs += std::fabs(x);
		sum_sq += static_cast<long double>(x) * x;
		largest = std::max(largest, std::fabs(x));
		beyond_four += std::fabs(x) > 4.0;
		positive += x > 0;
	}
	const double l1 = law.mean_abs(), l2 = law.second_moment();
	// Var X = E X^2; Var |X| = E X^2 - (E|X|)^2; Var X^2 <= E X^4 = 24 lambda^4 for the Laplace tail.
	expect_near_sigma(static_cast<double>(sum / n), 0.0, std::sqrt(l2 / n), "mean");
	expect_near_sigma(static_cast<double>(sum_abs / n), l1, std::sqrt((l2 - l1 * l1) / n), "E|X|");
	expect_near_sigma(static_cast<double>(sum_sq / n), l2, std::sqrt(24.0 / n), "E[X^2]");
	EXPECT_LE(largest, law.upper());
	expect_binomial(beyond_four, kSamples, 1.0 - law.mass(-4.0, 4.0), "P(|X| > 4)");
	expect_binomial(positive, kSamples, law.mass(grid, law.upper()), "P(X > 0)");
}

} // namespace
} // namespace dxpriv
