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
