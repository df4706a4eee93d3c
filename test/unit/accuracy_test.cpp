// Tests of confidence_half_width against the exact discrete Laplace tail and its Laplace limit.
#include <cmath>

#include <gtest/gtest.h>

#include "core/accuracy.h"
#include "core/error.h"

using namespace dxpriv;

namespace {

// Exact P(|Z| > k) for the discrete Laplace of scale t.
double
tail_above(double t, double k)
{
	const double a = std::exp(-1 / t);
	return 2 * std::pow(a, k + 1) / (1 + a);
}

LinearNoisePlan
plan(double scale, double grid)
{
	LinearNoisePlan p;
	p.scale = scale;
	p.grid = grid;
	return p;
}

} // namespace

TEST(Accuracy, ExactWhenNoNoise)
{
	EXPECT_EQ(confidence_half_width(plan(0, 1)), 0);
}

TEST(Accuracy, IsTheSmallestIntegerBoundOnTheUnitGrid)
{
	for (double t : {0.3, 0.5, 1.0, 2.0, 3.7, 10.0, 123.4}) {
		const double h = confidence_half_width(plan(t, 1));
		EXPECT_EQ(h, std::floor(h)) << t;
		EXPECT_LE(tail_above(t, h), 0.05 + 1e-15) << t;
		if (h > 0)
			EXPECT_GT(tail_above(t, h - 1), 0.05) << t; // one less would not cover 95%
	}
}

TEST(Accuracy, ApproachesTheLaplaceQuantileOnFineGrids)
{
	// continuous Laplace: P(|X| > h) = exp(-h / b)  =>  h = b ln 20
	for (double b : {1.0, 2.5, 1e6}) {
		const double grid = std::ldexp(1.0, std::ilogb(b) - 40);
		EXPECT_NEAR(confidence_half_width(plan(b, grid)), b * std::log(20.0), b * 1e-6) << b;
	}
}

TEST(Accuracy, OtherConfidences)
{
	const double b = 1000;
	const double grid = std::ldexp(1.0, std::ilogb(b) - 40);
	EXPECT_NEAR(confidence_half_width(plan(b, grid), 0.99), b * std::log(100.0), 1e-3);
	EXPECT_THROW(confidence_half_width(plan(b, grid), 1.0), CoreError);
	EXPECT_THROW(confidence_half_width(plan(b, grid), 0.0), CoreError);
}

namespace {

// Exact P(|Z| > k) of the integer law P(z) ∝ weight(z) on [-bound, bound], by direct summation.
template <class Weight>
double
summed_tail_above(Weight weight, long bound, double k)
{
	long double total = 0, above = 0;
	for (long z = -bound; z <= bound; z++) {
		const long double w = weight(static_cast<long double>(z));
		total += w;
		if (std::labs(z) > k)
			above += w;
	}
	return static_cast<double>(above / total);
}

// N_Z(0, s^2) (summed over |z| <= 40 s + 5).
double
gaussian_tail_above(double s, double k)
{
	return summed_tail_above([s](long double z) { return std::exp(-z * z / (2.0L * s * s)); },
	                         static_cast<long>(40 * s) + 5, k);
}

// Discrete Laplace of scale t truncated to |Z| <= b.
double
truncated_tail_above(double t, double b, double k)
{
	return summed_tail_above([t](long double z) { return std::exp(-std::fabs(z) / t); }, static_cast<long>(b), k);
}

LinearNoisePlan
family_plan(NoiseFamily f, double scale, double bound)
{
	LinearNoisePlan p = plan(scale, 1);
	p.family = f;
	p.bound = bound;
	return p;
}

} // namespace

TEST(Accuracy, GaussianIsTheSmallestIntegerBound)
{
	for (double s : {0.4, 1.0, 2.3, 3.9, 17.0, 250.0}) {
		const double h = confidence_half_width(family_plan(NoiseFamily::Gaussian, s, 0));
		EXPECT_LE(gaussian_tail_above(s, h), 0.05 + 1e-12) << s;
		if (h > 0)
			EXPECT_GT(gaussian_tail_above(s, h - 1), 0.05) << s;
	}
	// large deviations: the continuous quantile 1.959964 s
	EXPECT_NEAR(confidence_half_width(family_plan(NoiseFamily::Gaussian, 1e6, 0)), 1.959964e6, 2);
}

TEST(Accuracy, TruncatedIsTheSmallestIntegerBoundAndNeverAboveTheSupport)
{
	for (double t : {0.5, 2.0, 7.5})
		for (double b : {1.0, 3.0, 8.0, 40.0}) {
			const double h = confidence_half_width(family_plan(NoiseFamily::TruncatedLaplace, t, b));
			EXPECT_LE(h, b);
			EXPECT_LE(truncated_tail_above(t, b, h), 0.05 + 1e-12) << t << " " << b;
			if (h > 0)
				EXPECT_GT(truncated_tail_above(t, b, h - 1), 0.05) << t << " " << b;
		}
}
