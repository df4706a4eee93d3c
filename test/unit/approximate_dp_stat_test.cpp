// Statistical tests of the (epsilon, delta) releases of GridSum: the noise of a Gaussian plan is the
// discrete Gaussian of the plan's deviation, the noise of a truncated Laplace plan is the truncated
// discrete Laplace and never leaves its bound. Fixed seeds; 5-sigma moment bands and chi-square at
// p = 1e-6 against exact pmfs summed in long double.
#include "core/approximate_dp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/random.h"
#include "core/samplers.h"
#include "test_support.h"

namespace dxpriv {
namespace {

using ::dxpriv::testing::expect_near_sigma;
using ::dxpriv::testing::expect_pooled_chi_square;
using ::dxpriv::testing::normalise_pmf;

constexpr std::size_t kSamples = 400000;

// Draws kSamples releases of an exact sum of 1000 (grid 1) and returns noise counts on [-bound, bound]
// (values beyond land in the end bins, which the caller's pmf must then also hold).
std::vector<double>
sample_noise(const LinearNoisePlan &plan, std::int64_t bound, std::uint64_t seed, double &max_abs, double &m2,
             double &m4)
{
	SeededRandom rng(seed);
	GridSum sum;
	sum.add(1000, plan.grid);
	std::vector<double> counts(static_cast<std::size_t>(2 * bound + 1), 0.0);
	max_abs = m2 = m4 = 0;
	for (std::size_t i = 0; i < kSamples; i++) {
		const double z = sum.release(rng, plan) - 1000;
		max_abs = std::max(max_abs, std::fabs(z));
		m2 += z * z;
		m4 += z * z * z * z;
		const std::int64_t c = std::max<std::int64_t>(-bound, std::min<std::int64_t>(bound, std::llround(z)));
		counts[static_cast<std::size_t>(c + bound)] += 1;
	}
	m2 /= kSamples;
	m4 /= kSamples;
	return counts;
}

// Exact pmf, E[Z^2] and E[Z^4] of the integer law P(z) ∝ weight(z) on [-bound, bound].
template <class Weight>
void
exact_law(Weight weight, std::int64_t bound, std::vector<double> &pmf, double &var, double &fourth)
{
	std::vector<long double> w;
	long double total = 0;
	for (std::int64_t z = -bound; z <= bound; z++) {
		w.push_back(weight(static_cast<long double>(z)));
		total += w.back();
	}
	normalise_pmf(w, total, bound, pmf, var, fourth);
}

TEST(ApproximateReleaseStat, GaussianPlanDrawsTheDiscreteGaussian)
{
	SubUniverse sub;
	sub.domains = {Domain::range(0, 9, 1)};
	sub.metrics = {ColumnMetric::absolute(1)};
	sub.presence = 1;
	const std::vector<std::vector<double>> q{std::vector<double>(10, 1.0)};
	const LinearNoisePlan plan =
	    plan_multi_linear_noise(sub, q, 1.0, 1e-6, NoiseFamily::Gaussian, AllocationStrategy::MinTotalVariance).cells[0];
	ASSERT_EQ(plan.family, NoiseFamily::Gaussian);
	ASSERT_EQ(plan.grid, 1);
	// exact law of N_Z(0, s^2), s the sampler's rounded-up rational deviation
	const Rational s = scale_in_grid_units(plan.scale, plan.grid);
	const long double sigma2 = std::pow(static_cast<long double>(s.num) / s.den, 2);
	const std::int64_t bound = static_cast<std::int64_t>(std::ceil(12 * std::sqrt(static_cast<double>(sigma2)))) + 2;
	std::vector<double> pmf;
	double var = 0, fourth = 0;
	exact_law([sigma2](long double z) { return std::exp(-z * z / (2 * sigma2)); }, bound, pmf, var, fourth);
	double max_abs, m2, m4;
	const std::vector<double> counts = sample_noise(plan, bound, 21, max_abs, m2, m4);
	expect_near_sigma(m2, var, std::sqrt((fourth - var * var) / kSamples), "variance");
	EXPECT_NEAR(fourth / (var * var), 3.0, 0.05); // Gaussian shape: kurtosis 3
	expect_pooled_chi_square(pmf, counts, kSamples, 20.0, 10);
	EXPECT_GE(var, plan.scale * plan.scale * 0.999); // never less noise than calibrated
}

TEST(ApproximateReleaseStat, TruncatedPlanStaysWithinItsBound)
{
	SubUniverse sub;
	sub.domains = {Domain::range(0, 3, 1)};
	sub.metrics = {ColumnMetric::absolute(1)};
	sub.presence = 1;
	const std::vector<std::vector<double>> q{{0, 1, 2, 3}};
	const LinearNoisePlan plan =
	    plan_multi_linear_noise(sub, q, 0.5, 1e-3, NoiseFamily::TruncatedLaplace, AllocationStrategy::MinTotalVariance).cells[0];
	ASSERT_EQ(plan.family, NoiseFamily::TruncatedLaplace);
	const std::int64_t bound = static_cast<std::int64_t>(plan.bound / plan.grid);
	ASSERT_GE(bound, 4);
	const Rational t = scale_in_grid_units(plan.scale, plan.grid);
	const long double tt = static_cast<long double>(t.num) / t.den;
	std::vector<double> pmf;
	double var = 0, fourth = 0;
	exact_law([tt](long double z) { return std::exp(-std::fabs(z) / tt); }, bound, pmf, var, fourth);
	double max_abs, m2, m4;
	const std::vector<double> counts = sample_noise(plan, bound, 22, max_abs, m2, m4);
	EXPECT_LE(max_abs, plan.bound);
	EXPECT_EQ(max_abs, plan.bound) << "the end of the support is reachable";
	expect_near_sigma(m2, var, std::sqrt((fourth - var * var) / kSamples), "variance");
	expect_pooled_chi_square(pmf, counts, kSamples, 20.0, 10);
}

} // namespace
} // namespace dxpriv
