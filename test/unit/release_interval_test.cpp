// Unit tests of core/release_interval.h: the average's delta-method interval and the projection
// of cells onto the columns they depend on.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/accuracy.h"
#include "core/allocation.h"
#include "core/error.h"
#include "core/release_interval.h"

namespace dxpriv {
namespace {

LinearNoisePlan
laplace(double scale)
{
	LinearNoisePlan p;
	p.scale = scale;
	p.grid = std::ldexp(1.0, static_cast<int>(std::floor(std::log2(scale))) - 40);
	return p;
}

// With an exact count the interval is the sum's exact half-width over the count.
TEST(AverageHalfWidth, ExactCountIsTheSumsHalfWidth)
{
	const LinearNoisePlan s = laplace(1000), c; // c: scale 0
	EXPECT_DOUBLE_EQ(average_half_width(s, c, 50, 200), confidence_half_width(s) / 200);
	// a count below 1 is read as 1 (the average divides by max(count, 1))
	EXPECT_DOUBLE_EQ(average_half_width(s, c, 50, -3), confidence_half_width(s));
	EXPECT_EQ(average_half_width(LinearNoisePlan{}, LinearNoisePlan{}, 50, 200), 0);
}

// Equal Laplace scales (b and |A|·b): the tail e^{-x/b}(2 + x/b)/2 equals 0.05 at the result.
TEST(AverageHalfWidth, EqualScalesSolveTheClosedForm)
{
	const double b = 10, a = 2;
	const double h = average_half_width(laplace(b), laplace(b / a), a, 1);
	EXPECT_NEAR(std::exp(-h / b) * (2 + h / b) / 2, 0.05, 1e-9);
}

// Monte Carlo: the interval covers the linearised error Z_S - A Z_C with probability 0.95.
TEST(AverageHalfWidth, CoversTheLinearisedErrorAt95Percent)
{
	std::mt19937_64 rng(7);
	for (double ratio : {0.1, 1.0, 3.0}) {
		const double b1 = 5, b2 = ratio * b1, a = 1.0;
		const double h = average_half_width(laplace(b1), laplace(b2), a, 1);
		std::exponential_distribution<double> e(1.0);
		std::bernoulli_distribution sign(0.5);
		int inside = 0;
		const int n = 200000;
		for (int i = 0; i < n; ++i) {
			const double z1 = (sign(rng) ? 1 : -1) * b1 * e(rng), z2 = (sign(rng) ? 1 : -1) * b2 * e(rng);
			inside += std::fabs(z1 - a * z2) <= h;
		}
		EXPECT_NEAR(static_cast<double>(inside) / n, 0.95, 5 * std::sqrt(0.95 * 0.05 / n)) << ratio;
	}
}

// Gaussian parts combine their variances; truncated parts never exceed the sum of the bounds.
TEST(AverageHalfWidth, GaussianAndTruncatedFamilies)
{
	LinearNoisePlan s = laplace(3), c = laplace(4);
	s.family = c.family = NoiseFamily::Gaussian;
	EXPECT_NEAR(average_half_width(s, c, 1, 10), 1.959963985 * 5 / 10, 1e-6);
	s.family = c.family = NoiseFamily::TruncatedLaplace;
	s.bound = 1;
	c.bound = 1;
	EXPECT_LE(average_half_width(s, c, 1, 10), 0.2 + 1e-12);
}

TEST(AverageHalfWidth, RejectsBadInputs)
{
	EXPECT_THROW(average_half_width(laplace(1), laplace(1), NAN, 10), CoreError);
	EXPECT_THROW(average_half_width(laplace(1), laplace(1), 1, INFINITY), CoreError);
	EXPECT_THROW(average_half_width(laplace(1), laplace(1), 1, 10, 1.0), CoreError);
}

// A column no cell depends on is dropped, and the plain-DP baseline no longer sees its metric.
TEST(ProjectToRelevantColumns, DropsVacuousColumnsAndFixesTheBaseline)
{
	SubUniverse sub;
	sub.presence = 1;
	sub.domains = {Domain::enumerated({"F", "M"}), Domain::enumerated({"N", "Y"})};
	sub.metrics = {ColumnMetric::discrete(2), ColumnMetric::discrete(0.5)};
	// count WHERE sex = 'M' AND native IN ('N','Y'): points (F,N) (F,Y) (M,N) (M,Y)
	const std::vector<std::vector<double>> q{{0, 0, 1, 1}};
	const ProjectedCells p = project_to_relevant_columns(sub, q);
	ASSERT_EQ(p.kept, std::vector<std::size_t>{0});
	EXPECT_EQ(p.q, (std::vector<std::vector<double>>{{0, 1}}));
	SubUniverse only_sex;
	only_sex.presence = 1;
	only_sex.domains = {sub.domains[0]};
	only_sex.metrics = {sub.metrics[0]};
	EXPECT_DOUBLE_EQ(plain_dp_scale(p.sub, p.q, 1), plain_dp_scale(only_sex, {{0, 1}}, 1));
	EXPECT_NE(plain_dp_scale(sub, q, 1), plain_dp_scale(p.sub, p.q, 1)); // the text-dependent value
	// a column that matters is kept, in order
	const ProjectedCells both = project_to_relevant_columns(sub, {{0, 1, 1, 1}});
	EXPECT_EQ(both.kept, (std::vector<std::size_t>{0, 1}));
	EXPECT_EQ(both.q[0], (std::vector<double>{0, 1, 1, 1}));
	// no column matters: an empty sub-universe of one point
	const ProjectedCells none = project_to_relevant_columns(sub, {{1, 1, 1, 1}});
	EXPECT_TRUE(none.kept.empty());
	EXPECT_EQ(none.q[0], std::vector<double>{1});
}

} // namespace
} // namespace dxpriv
