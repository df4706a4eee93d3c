// Deterministic tests of the Gaussian calibrations (MECHANISMS.md §2.2, §2.3) and of the discrete
// Gaussian samplers' argument handling. Reference sigmas: §2.2, plus values computed independently
// with mpmath at 50 digits (bisection on the Balle–Wang profile).
#include "core/gaussian.h"

#include <gtest/gtest.h>

#include <boost/math/distributions/normal.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/random.h"
#include "core/samplers.h"
#include "test_support.h"

namespace dxpriv {
namespace {

using ::dxpriv::testing::expect_core_error;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The Balle–Wang profile written directly with Boost's normal CDF (an independent implementation,
// accurate while Phi(a) is not many orders of magnitude above g).
double profile_direct(double sensitivity, double epsilon, double sigma)
{
	const boost::math::normal_distribution<double> n;
	const double a = sensitivity / (2 * sigma) - epsilon * sigma / sensitivity;
	const double b = -sensitivity / (2 * sigma) - epsilon * sigma / sensitivity;
	return boost::math::cdf(n, a) - std::exp(epsilon) * boost::math::cdf(n, b);
}

struct Reference {
	double epsilon, delta, sigma;
};

// §2.2's five values (printed to 6 decimals) and mpmath values (50 digits, truncated here).
const std::vector<Reference> kPaperReferences = {
    {0.7, 2.5e-6, 5.607876}, {0.4, 4e-6, 9.160973}, {0.1, 4.5e-6, 32.744864}, {1.0, 1e-5, 3.730632}, {0.5, 1e-5, 7.031827}};
const std::vector<Reference> kMpmathReferences = {
    {0.7, 2.5e-6, 5.6078757176466567}, {0.4, 4e-6, 9.1609731091074418}, {0.1, 4.5e-6, 32.744864152529919},
    {1.0, 1e-5, 3.7306316348159418},   {0.5, 1e-5, 7.0318266755824914}, {5.0, 1e-12, 1.4098377236107347},
    {0.01, 1e-3, 93.907419839851576},  {2.0, 0.5, 0.41104783958051620}, {20.0, 1e-100, 1.0793649936647530},
    {0.05, 0.9, 0.30176741959873362}};

TEST(AnalyticGaussian, ReferenceSigmasOfSection22)
{
	for (const Reference &r : kPaperReferences) {
		SCOPED_TRACE(std::to_string(r.epsilon) + ", " + std::to_string(r.delta));
		EXPECT_NEAR(r.sigma, analytic_gaussian_sigma(1.0, r.epsilon, r.delta), 1e-6);
		EXPECT_NEAR(r.sigma, analytic_gaussian_sigma_bw(1.0, r.epsilon, r.delta), 1e-6);
	}
}

TEST(AnalyticGaussian, MatchesHighPrecisionReferences)
{
	// Includes delta = 1e-100 (far beyond a direct difference of CDFs) and both Algorithm 1 branches.
	for (const Reference &r : kMpmathReferences) {
		SCOPED_TRACE(std::to_string(r.epsilon) + ", " + std::to_string(r.delta));
		EXPECT_NEAR(1.0, analytic_gaussian_sigma(1.0, r.epsilon, r.delta) / r.sigma, 1e-12);
		EXPECT_NEAR(1.0, analytic_gaussian_sigma_bw(1.0, r.epsilon, r.delta) / r.sigma, 1e-12);
	}
}

TEST(AnalyticGaussian, BothRoutesAgreeOnAGrid)
{
	const boost::math::normal_distribution<double> n;
	int above_delta0 = 0, below_delta0 = 0;
	for (double sensitivity : {1.0, 3.7, 1e-3}) {
		for (double epsilon : {0.001, 0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 50.0}) {
			const double delta0 = 0.5 - std::exp(epsilon) * boost::math::cdf(n, -std::sqrt(2 * epsilon));
			for (double delta : {1e-300, 1e-40, 1e-12, 1e-8, 1e-5, 1e-3, 0.05, 0.3, 0.5, 0.9, 0.999}) {
				SCOPED_TRACE(std::to_string(sensitivity) + " " + std::to_string(epsilon) + " " + std::to_string(delta));
				const double a = analytic_gaussian_sigma(sensitivity, epsilon, delta);
				const double b = analytic_gaussian_sigma_bw(sensitivity, epsilon, delta);
				EXPECT_NEAR(1.0, a / b, 1e-9);
				(delta >= delta0 ? above_delta0 : below_delta0) += 1;
			}
		}
	}
	EXPECT_GT(above_delta0, 10);
	EXPECT_GT(below_delta0, 10);
}

TEST(AnalyticGaussian, CalibrationIsTight)
{
	// g(sigma*) <= delta (up to g's rounding), and a 1e-9 smaller sigma violates it, checked with an
	// independent implementation of g.
	for (double epsilon : {0.1, 0.5, 1.0, 3.0}) {
		for (double delta : {1e-8, 1e-5, 1e-2, 0.2}) {
			SCOPED_TRACE(std::to_string(epsilon) + " " + std::to_string(delta));
			const double s = analytic_gaussian_sigma(2.0, epsilon, delta);
			EXPECT_LE(profile_direct(2.0, epsilon, s), delta * (1 + 1e-10));
			EXPECT_GT(profile_direct(2.0, epsilon, s * (1 - 1e-9)), delta);
		}
	}
}

TEST(AnalyticGaussian, ProfileMatchesDirectFormula)
{
	for (double epsilon : {0.0, 0.3, 1.0, 4.0}) {
		for (double sigma : {0.2, 1.0, 3.0, 10.0}) {
			SCOPED_TRACE(std::to_string(epsilon) + " " + std::to_string(sigma));
			const double direct = profile_direct(1.5, epsilon, sigma);
			EXPECT_NEAR(1.0, gaussian_privacy_profile(1.5, epsilon, sigma) / direct, 1e-9);
		}
	}
	// epsilon = 0: g is the total variation distance 2 Phi(D/(2 sigma)) - 1.
	const boost::math::normal_distribution<double> n;
	EXPECT_NEAR(2 * boost::math::cdf(n, 0.25) - 1, gaussian_privacy_profile(1.0, 0.0, 2.0), 1e-15);
	// Deep tails (mpmath, 60 digits): sigma = 25 takes the asymptotic branch of ln Phi.
	EXPECT_NEAR(1.0, gaussian_privacy_profile(1.0, 1.0, 25.0) / 8.0362241415236423716e-141, 1e-9);
	EXPECT_NEAR(1.0, gaussian_privacy_profile(1.0, 1.0, 8.0) / 1.5530843865025792176e-17, 1e-9);
}

TEST(AnalyticGaussian, MonotoneAndLinearInSensitivity)
{
	double previous = kInf;
	for (double epsilon : {0.01, 0.05, 0.2, 1.0, 3.0, 10.0}) {
		const double s = analytic_gaussian_sigma(1.0, epsilon, 1e-6);
		EXPECT_LT(s, previous) << epsilon;
		previous = s;
	}
	previous = kInf;
	for (double delta : {1e-20, 1e-10, 1e-6, 1e-3, 0.1, 0.5}) {
		const double s = analytic_gaussian_sigma(1.0, 0.5, delta);
		EXPECT_LT(s, previous) << delta;
		previous = s;
	}
	const double unit = analytic_gaussian_sigma(1.0, 0.8, 1e-7);
	EXPECT_NEAR(3.0, analytic_gaussian_sigma(3.0, 0.8, 1e-7) / unit, 1e-12);
	EXPECT_NEAR(0.25, analytic_gaussian_sigma(0.25, 0.8, 1e-7) / unit, 1e-12);
}

TEST(ClassicalGaussian, FormulaAndComparison)
{
	// sqrt(2 ln(1.25/1e-5)) / 0.5 (mpmath).
	EXPECT_NEAR(9.6896105252107788, classical_gaussian_sigma(1.0, 0.5, 1e-5), 1e-12);
	EXPECT_NEAR(3 * 9.6896105252107788, classical_gaussian_sigma(3.0, 0.5, 1e-5), 1e-11);
	// The analytic calibration is optimal, so the classical one never adds less noise.
	for (double epsilon : {0.01, 0.1, 0.5, 0.9, 0.999}) {
		for (double delta : {1e-12, 1e-6, 1e-3, 0.1}) {
			SCOPED_TRACE(std::to_string(epsilon) + " " + std::to_string(delta));
			const double classical = classical_gaussian_sigma(1.0, epsilon, delta);
			EXPECT_GE(classical, analytic_gaussian_sigma(1.0, epsilon, delta));
			EXPECT_LE(gaussian_privacy_profile(1.0, epsilon, classical), delta);
		}
	}
}

TEST(GaussianErrors, CalibrationRejectsBadInputs)
{
	using Fn = double (*)(double, double, double);
	for (Fn fn : {Fn(analytic_gaussian_sigma), Fn(analytic_gaussian_sigma_bw), Fn(classical_gaussian_sigma)}) {
		for (double bad : {0.0, -1.0, kNaN, kInf}) {
			expect_core_error(ErrorKind::InvalidParameter, [&] { fn(bad, 0.5, 1e-5); });
			expect_core_error(ErrorKind::InvalidParameter, [&] { fn(1.0, bad, 1e-5); });
		}
		for (double bad : {0.0, 1.0, -1e-5, 2.0, kNaN}) {
			expect_core_error(ErrorKind::InvalidParameter, [&] { fn(1.0, 0.5, bad); });
		}
	}
	expect_core_error(ErrorKind::InvalidParameter, [] { classical_gaussian_sigma(1.0, 1.0, 1e-5); });
	expect_core_error(ErrorKind::InvalidParameter, [] { classical_gaussian_sigma(1.0, 2.5, 1e-5); });
	expect_core_error(ErrorKind::InvalidParameter, [] { gaussian_privacy_profile(1.0, -0.1, 1.0); });
	expect_core_error(ErrorKind::InvalidParameter, [] { gaussian_privacy_profile(1.0, 0.1, 0.0); });
	expect_core_error(ErrorKind::InvalidParameter, [] { gaussian_privacy_profile(0.0, 0.1, 1.0); });
	try {
		classical_gaussian_sigma(1.0, 1.0, 1e-5);
	} catch (const CoreError &e) {
		EXPECT_FALSE(e.hint().empty());
	}
}

TEST(GaussianErrors, SamplersRejectBadInputs)
{
	SeededRandom rng(1);
	expect_core_error(ErrorKind::InvalidParameter, [&] { discrete_gaussian(rng, Rational{0, 1}); });
	expect_core_error(ErrorKind::InvalidParameter, [&] { discrete_gaussian(rng, Rational{1, 0}); });
	for (double bad : {0.0, -1.0, kNaN, kInf}) {
		expect_core_error(ErrorKind::InvalidParameter, [&] { gaussian_on_grid(rng, bad, 1.0); });
		expect_core_error(ErrorKind::InvalidParameter, [&] { gaussian_on_grid(rng, 1.0, bad); });
	}
	expect_core_error(ErrorKind::InvalidParameter, [&] { gaussian_on_grid(rng, 1.0, 3.0); });
	expect_core_error(ErrorKind::InvalidParameter, [&] { gaussian_on_grid(rng, 1.0, 0.1); });
	expect_core_error(ErrorKind::ProgramLimit, [&] { gaussian_on_grid(rng, std::ldexp(1.0, 44), 1.0); });
}

TEST(DiscreteGaussian, ReproducibleIntegerAndGridValues)
{
	SeededRandom a(77), b(77);
	for (int i = 0; i < 200; ++i)
		ASSERT_EQ(discrete_gaussian(a, Rational{9, 4}), discrete_gaussian(b, Rational{9, 4}));
	const double grid = std::ldexp(1.0, -10);
	for (int i = 0; i < 200; ++i) {
		const double z = gaussian_on_grid(a, 0.3, grid);
		ASSERT_EQ(std::trunc(z / grid), z / grid) << z;
	}
	// Tiny sigma: the variance rounds up to (2^-20)^2 grid units, so the output is almost surely 0.
	for (int i = 0; i < 50; ++i)
		EXPECT_EQ(0.0, gaussian_on_grid(a, 1e-300, 1.0));
	// Huge variance in wide integers: values of the right order of magnitude (sigma = 2^40 units).
	const double sigma = std::ldexp(1.0, 40);
	int within_five_sigma = 0;
	for (int i = 0; i < 100; ++i)
		within_five_sigma += std::fabs(gaussian_on_grid(a, sigma, 1.0)) <= 5 * sigma ? 1 : 0;
	EXPECT_EQ(100, within_five_sigma);
}

} // namespace
} // namespace dxpriv
