// Statistical tests of merged_laplace_on_grid against its exact discrete law P(Z = z) ∝ exp(-H(|z|))
// (H piecewise linear with slope den_k/num_k per step, t_k = rational_at_least(lambda_k/grid), integer
// breakpoints round(c_k/grid)) and, on a fine grid, against the continuous closed-form costs.
// Fixed seeds and sizes; 5-sigma bounds from exact moments, chi-square at p = 1e-6 (Boost.Math).
#include "core/merged_laplace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/random.h"
#include "core/samplers.h"
#include "test_support.h"

namespace dxpriv {
namespace {

using ::dxpriv::testing::chi_square_threshold;
using ::dxpriv::testing::expect_binomial;
using ::dxpriv::testing::expect_near_sigma;
using ::dxpriv::testing::normalise_pmf;
using ::dxpriv::testing::expect_pooled_chi_square;

constexpr double kMinExpectedPerBin = 20.0;

// The exact grid law, rebuilt here from the public rounding rules, on [-bound, bound] (the mass beyond
// is below e^-60).
struct ExactGridLaw {
	std::int64_t bound;
	std::vector<std::int64_t> edge{0}; // b_0 = 0, b_1, ...
	std::vector<double> pmf;           // pmf[z + bound]
	double second = 0, fourth = 0;

	// Sums exp(-H(|z|)) in long double.
	ExactGridLaw(const MergedLaplace &law, double grid)
	{
		std::vector<long double> slope;
		long double widest = 0;
		for (std::size_t k = 0; k < law.bands(); ++k) {
			const Rational t = rational_at_least(law.band_scale(k) / grid);
			slope.push_back(static_cast<long double>(t.den) / static_cast<long double>(t.num));
			widest = std::max(widest, 1 / slope.back());
			if (k > 0)
				edge.push_back(static_cast<std::int64_t>(std::nearbyint(law.breakpoint(k) / grid)));
		}
		bound = edge.back() + static_cast<std::int64_t>(std::ceil(60 * widest));
		std::vector<long double> w;
		long double total = 0;
		for (std::int64_t z = -bound; z <= bound; ++z) {
			const std::int64_t a = z < 0 ? -z : z;
			long double h = 0;
			for (std::size_t k = 0; k < slope.size(); ++k) {
				const std::int64_t start = edge[k];
				const std::int64_t end = k + 1 < edge.size() ? std::min(a, edge[k + 1]) : a;
				if (end > start)
					h += static_cast<long double>(end - start) * slope[k];
			}
			w.push_back(std::exp(-h));
			total += w.back();
		}
		normalise_pmf(w, total, bound, pmf, second, fourth);
	}
	// P(Z = z).
	double p(std::int64_t z) const { return z < -bound || z > bound ? 0.0 : pmf[static_cast<std::size_t>(z + bound)]; }
};

// Samples n values, checks grid membership, moments, chi-square over merged single-value bins,
// P(Z = 0), the probability of each band, and sign symmetry.
void check_against_exact_law(const MergedLaplace &law, double grid, std::size_t n, std::uint64_t seed,
                             std::size_t min_bins)
{
	const ExactGridLaw exact(law, grid);
	SeededRandom rng(seed);
	std::vector<double> counts(static_cast<std::size_t>(2 * exact.bound + 1), 0.0);
	long double sum = 0, sum_sq = 0;
	std::uint64_t positive = 0, negative = 0;
	for (std::size_t i = 0; i < n; ++i) {
		const double x = merged_laplace_on_grid(rng, law, grid);
		const double units = x / grid;
		ASSERT_EQ(std::trunc(units), units) << x;
		const std::int64_t z = static_cast<std::int64_t>(units);
		ASSERT_LE(std::llabs(z), exact.bound) << "beyond the e^-60 tail";
		counts[static_cast<std::size_t>(z + exact.bound)] += 1;
		sum += z;
		sum_sq += static_cast<long double>(z) * z;
		positive += z > 0;
		negative += z < 0;
	}
	const double dn = static_cast<double>(n);
	expect_near_sigma(static_cast<double>(sum / dn), 0.0, std::sqrt(exact.second / dn), "mean");
	expect_near_sigma(static_cast<double>(sum_sq / dn), exact.second,
	                  std::sqrt((exact.fourth - exact.second * exact.second) / dn), "second moment");
	expect_binomial(positive, positive + negative, 0.5, "sign symmetry");
	expect_binomial(static_cast<std::uint64_t>(counts[static_cast<std::size_t>(exact.bound)]), n, exact.p(0), "P(Z = 0)");
	// P(|Z| in band k) for every band of the grid law.
	for (std::size_t k = 0; k < exact.edge.size(); ++k) {
		const std::int64_t start = exact.edge[k];
		const std::int64_t end = k + 1 < exact.edge.size() ? exact.edge[k + 1] : exact.bound + 1;
		double p = 0, count = 0;
		for (std::int64_t z = -exact.bound; z <= exact.bound; ++z) {
			const std::int64_t a = z < 0 ? -z : z;
			if (a >= start && a < end) {
				p += exact.p(z);
				count += counts[static_cast<std::size_t>(z + exact.bound)];
			}
		}
		expect_binomial(static_cast<std::uint64_t>(count), n, p, "band " + std::to_string(k));
	}
	expect_pooled_chi_square(exact.pmf, counts, dn, kMinExpectedPerBin, min_bins);
}

TEST(MergedLaplaceStat, AppendixCRowOneOnACoarseGrid)
{
	// Bands (1/5, 1/4, 1/3), breakpoints (1, 3), grid 1/4: t = (20, 16, 12) steps, edges (4, 12).
	check_against_exact_law(MergedLaplace(1.0, {0.2, 0.25, 1.0 / 3}, {1, 3}), 0.25, 1500000, 9001, 60);
}

TEST(MergedLaplaceStat, SteepCentreFlatTail)
{
	// The flattest band is the outer one: every proposal beyond the centre is accepted.
	check_against_exact_law(MergedLaplace(1.0, {1.0, 0.2}, {0.3}), 0.125, 1000000, 9002, 60);
}

TEST(MergedLaplaceStat, SteepMiddleBand)
{
	// Bands (0.2, 1, 0.5) with breakpoints (1, 2), grid 1/8: t = (40, 8, 16) steps, edges (8, 16); the
	// middle band costs 1/8 - 1/40 = 0.1 extra per step, so an off-by-one edge moves 10% of the mass.
	check_against_exact_law(MergedLaplace(1.0, {0.2, 1.0, 0.5}, {1, 2}), 0.125, 1000000, 9005, 60);
}

TEST(MergedLaplaceStat, SingleBandIsDiscreteLaplace)
{
	check_against_exact_law(MergedLaplace(2.0, {0.5}, {}), 0.5, 1000000, 9003, 40);
}

TEST(MergedLaplaceStat, FineGridMatchesContinuousLaw)
{
	// Corrected two-breakpoint law of Appendix C row 1 on grid 2^-24: E|X| = 3.2152, E[X^2] = 19.672.
	const MergedLaplace law(1.0, {0.2, 0.25, 1.0 / 3}, {1, 3});
	const double grid = std::ldexp(1.0, -24);
	const std::size_t n = 1500000;
	SeededRandom rng(9004);
	long double sum = 0, sum_abs = 0, sum_sq = 0, sum_4 = 0;
	std::uint64_t inner = 0, middle = 0;
	for (std::size_t i = 0; i < n; ++i) {
		const double x = merged_laplace_on_grid(rng, law, grid);
		const long double x2 = static_cast<long double>(x) * x;
		sum += x;
		sum_abs += std::fabs(x);
		sum_sq += x2;
		sum_4 += x2 * x2;
		inner += std::fabs(x) < 1.0;
		middle += std::fabs(x) >= 1.0 && std::fabs(x) < 3.0;
	}
	const double dn = static_cast<double>(n);
	const double l1 = law.mean_abs(), l2 = law.second_moment();
	// The fourth moment is estimated from the sample (its standard error only sets the tolerance).
	const double m4 = static_cast<double>(sum_4 / dn);
	expect_near_sigma(static_cast<double>(sum / dn), 0.0, std::sqrt(l2 / dn), "mean");
	expect_near_sigma(static_cast<double>(sum_abs / dn), l1, std::sqrt((l2 - l1 * l1) / dn), "E|X|");
	expect_near_sigma(static_cast<double>(sum_sq / dn), l2, std::sqrt((m4 - l2 * l2) / dn), "E[X^2]");
	expect_binomial(inner, n, law.band_probability(0), "P(|X| < 1)");
	expect_binomial(middle, n, law.band_probability(1), "P(1 <= |X| < 3)");
}

} // namespace
} // namespace dxpriv
