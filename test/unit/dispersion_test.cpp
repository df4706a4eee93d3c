// Tests of the dispersion statistics (core/dispersion.h): values against direct formulas on data,
// gradients against central finite differences, post-processing rules.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "core/accuracy.h"
#include "core/dispersion.h"
#include "core/error.h"

using namespace dxpriv;

namespace {

constexpr Dispersion kAll[] = {
    Dispersion::StddevSamp, Dispersion::StddevPop, Dispersion::VarSamp,   Dispersion::VarPop,
    Dispersion::CovarSamp,  Dispersion::CovarPop,  Dispersion::Corr,      Dispersion::RegrSlope,
    Dispersion::RegrIntercept, Dispersion::RegrCount, Dispersion::RegrAvgX, Dispersion::RegrAvgY,
    Dispersion::RegrSxx,    Dispersion::RegrSyy,   Dispersion::RegrSxy,   Dispersion::RegrR2,
};

// The centred sums of paired data.
DispersionParts
sums(const std::vector<double> &x, const std::vector<double> &y, double cx, double cy)
{
	DispersionParts p{};
	for (size_t i = 0; i < x.size(); ++i) {
		const double a = x[i] - cx, b = y[i] - cy;
		p[kPartN] += 1;
		p[kPartSx] += a;
		p[kPartSy] += b;
		p[kPartSxx] += a * a;
		p[kPartSyy] += b * b;
		p[kPartSxy] += a * b;
	}
	return p;
}

const std::vector<double> kX = {3, 7, 1, 9, 4, 4, 8, 2, 6, 5};
const std::vector<double> kY = {10, 21, 5, 30, 14, 12, 25, 9, 19, 15};

// Two-pass textbook formulas.
double
mean(const std::vector<double> &v)
{
	double s = 0;
	for (double a : v)
		s += a;
	return s / static_cast<double>(v.size());
}

double
co_moment(const std::vector<double> &a, const std::vector<double> &b)
{
	const double ma = mean(a), mb = mean(b);
	double s = 0;
	for (size_t i = 0; i < a.size(); ++i)
		s += (a[i] - ma) * (b[i] - mb);
	return s;
}

} // namespace

TEST(Dispersion, ValuesMatchTwoPassFormulasWhateverTheCentres)
{
	const double n = static_cast<double>(kX.size());
	const double sxx = co_moment(kX, kX), syy = co_moment(kY, kY), sxy = co_moment(kX, kY);
	for (double cx : {0.0, 5.0, -100.0})
		for (double cy : {0.0, 15.0, 1000.0}) {
			const DispersionParts p = sums(kX, kY, cx, cy);
			EXPECT_NEAR(dispersion_value(Dispersion::VarSamp, p, cx, cy), sxx / (n - 1), 1e-9);
			EXPECT_NEAR(dispersion_value(Dispersion::VarPop, p, cx, cy), sxx / n, 1e-9);
			EXPECT_NEAR(dispersion_value(Dispersion::StddevSamp, p, cx, cy), std::sqrt(sxx / (n - 1)), 1e-9);
			EXPECT_NEAR(dispersion_value(Dispersion::StddevPop, p, cx, cy), std::sqrt(sxx / n), 1e-9);
			EXPECT_NEAR(dispersion_value(Dispersion::CovarSamp, p, cx, cy), sxy / (n - 1), 1e-9);
			EXPECT_NEAR(dispersion_value(Dispersion::CovarPop, p, cx, cy), sxy / n, 1e-9);
			EXPECT_NEAR(dispersion_value(Dispersion::Corr, p, cx, cy), sxy / std::sqrt(sxx * syy), 1e-12);
			const double slope = sxy / sxx;
			EXPECT_NEAR(dispersion_value(Dispersion::RegrSlope, p, cx, cy), slope, 1e-12);
			EXPECT_NEAR(dispersion_value(Dispersion::RegrIntercept, p, cx, cy), mean(kY) - slope * mean(kX), 1e-9);
			EXPECT_EQ(dispersion_value(Dispersion::RegrCount, p, cx, cy), n);
			EXPECT_NEAR(dispersion_value(Dispersion::RegrAvgX, p, cx, cy), mean(kX), 1e-9);
			EXPECT_NEAR(dispersion_value(Dispersion::RegrAvgY, p, cx, cy), mean(kY), 1e-9);
			EXPECT_NEAR(dispersion_value(Dispersion::RegrSxx, p, cx, cy), sxx, 1e-7);
			EXPECT_NEAR(dispersion_value(Dispersion::RegrSyy, p, cx, cy), syy, 1e-6);
			EXPECT_NEAR(dispersion_value(Dispersion::RegrSxy, p, cx, cy), sxy, 1e-6);
			EXPECT_NEAR(dispersion_value(Dispersion::RegrR2, p, cx, cy), sxy * sxy / (sxx * syy), 1e-12);
		}
}

TEST(Dispersion, UndefinedWherePostgresAnswersNull)
{
	const DispersionParts one = sums({4}, {2}, 0, 0);
	EXPECT_TRUE(std::isnan(dispersion_value(Dispersion::VarSamp, one, 0, 0)));
	EXPECT_TRUE(std::isnan(dispersion_value(Dispersion::CovarSamp, one, 0, 0)));
	EXPECT_EQ(dispersion_value(Dispersion::VarPop, one, 0, 0), 0);
	const DispersionParts none{};
	for (Dispersion k : kAll)
		EXPECT_TRUE(std::isnan(dispersion_value(k, none, 0, 0))) << dispersion_name(k);
	// a constant x: no slope, no correlation; a constant y: r2 = 1 (as PostgreSQL)
	const DispersionParts flat_x = sums({2, 2, 2}, {1, 5, 9}, 0, 0);
	EXPECT_TRUE(std::isnan(dispersion_value(Dispersion::RegrSlope, flat_x, 0, 0)));
	EXPECT_TRUE(std::isnan(dispersion_value(Dispersion::Corr, flat_x, 0, 0)));
	const DispersionParts flat_y = sums({1, 5, 9}, {2, 2, 2}, 0, 0);
	EXPECT_EQ(dispersion_value(Dispersion::RegrR2, flat_y, 0, 0), 1);
	// noisy sums whose variance is negative: no standard deviation
	DispersionParts negative = sums(kX, kY, 0, 0);
	negative[kPartSxx] = 0;
	EXPECT_TRUE(std::isnan(dispersion_value(Dispersion::StddevPop, negative, 0, 0)));
}

TEST(Dispersion, GradientMatchesCentralFiniteDifferences)
{
	for (double cx : {0.0, 4.5})
		for (double cy : {0.0, 17.0}) {
			const DispersionParts p = sums(kX, kY, cx, cy);
			for (Dispersion k : kAll) {
				const DispersionParts g = dispersion_gradient(k, p, cx, cy);
				for (int part = 0; part < kParts; ++part) {
					const double h = 1e-5 * std::max(1.0, std::fabs(p[part]));
					DispersionParts up = p, down = p;
					up[part] += h;
					down[part] -= h;
					const double fd = (dispersion_value(k, up, cx, cy) - dispersion_value(k, down, cx, cy)) / (2 * h);
					if (!dispersion_needs(k, part)) {
						EXPECT_EQ(g[part], 0) << dispersion_name(k) << " part " << part;
						EXPECT_NEAR(fd, 0, 1e-9) << dispersion_name(k) << " part " << part << " unused but read";
						continue;
					}
					EXPECT_NEAR(g[part], fd, 1e-6 * std::max(1.0, std::fabs(fd)))
					    << dispersion_name(k) << " part " << part << " cx " << cx << " cy " << cy;
				}
			}
		}
}

TEST(Dispersion, HalfWidthIsTheDeltaMethod)
{
	const DispersionParts p = sums(kX, kY, 5, 15);
	const DispersionParts var = {4, 9, 16, 25, 36, 49};
	const DispersionParts normal{};
	for (Dispersion k : kAll) {
		const DispersionParts g = dispersion_gradient(k, p, 5, 15);
		double s = 0;
		for (int part = 0; part < kParts; ++part)
			s += g[part] * g[part] * var[part];
		EXPECT_NEAR(dispersion_half_width(k, p, var, normal, 5, 15), 1.959963984540054 * std::sqrt(s), 1e-9)
		    << dispersion_name(k);
		EXPECT_NEAR(dispersion_half_width(k, p, var, normal, 5, 15, 0.6826894921370859), std::sqrt(s), 1e-9);
	}
	const DispersionParts exact{};
	EXPECT_EQ(dispersion_half_width(Dispersion::VarPop, p, exact, normal, 5, 15), 0);
	DispersionParts bad = var;
	bad[kPartN] = -1;
	EXPECT_THROW(dispersion_half_width(Dispersion::VarPop, p, bad, normal, 5, 15), CoreError);
	EXPECT_THROW(dispersion_half_width(Dispersion::VarPop, p, var, normal, 5, 15, 1.0), CoreError);
	// an unused part's variance is never read
	bad = var;
	bad[kPartSyy] = std::nan("");
	EXPECT_NO_THROW(dispersion_half_width(Dispersion::VarPop, p, bad, normal, 5, 15));
}

TEST(Dispersion, LaplaceTailsWidenTheInterval)
{
	// regr_avgx = cx + sx / n with n exact: the error is Z_sx / n, one Laplace of scale b / n, whose
	// exact 95% half-width is ln(20) b / n; Cornish-Fisher with kurtosis 3 is within 3% above it
	const DispersionParts p = sums(kX, kY, 5, 15);
	const double b = 4;
	DispersionParts var{}, kurt{};
	var[kPartSx] = 2 * b * b;
	kurt[kPartSx] = 3;
	const double n = p[kPartN];
	const double h = dispersion_half_width(Dispersion::RegrAvgX, p, var, kurt, 5, 15);
	EXPECT_GT(h, std::log(20.0) * b / n);
	EXPECT_LT(h, 1.03 * std::log(20.0) * b / n);
	// many parts of similar weight: close to the normal interval
	const DispersionParts all3 = {3, 3, 3, 3, 3, 3};
	const DispersionParts nv = {2, 2, 2, 2, 2, 2};
	const double normal = dispersion_half_width(Dispersion::Corr, p, nv, DispersionParts{}, 5, 15);
	const double heavy = dispersion_half_width(Dispersion::Corr, p, nv, all3, 5, 15);
	EXPECT_GE(heavy, normal);
	EXPECT_LT(heavy, 1.11 * normal);
	DispersionParts bad = all3;
	bad[kPartN] = -1;
	EXPECT_THROW(dispersion_half_width(Dispersion::Corr, p, nv, bad, 5, 15), CoreError);
}

TEST(Dispersion, NamesRoundTrip)
{
	for (Dispersion k : kAll) {
		Dispersion back;
		ASSERT_TRUE(dispersion_from_name(dispersion_name(k), back));
		EXPECT_EQ(back, k);
	}
	Dispersion k;
	ASSERT_TRUE(dispersion_from_name("stddev", k));
	EXPECT_EQ(k, Dispersion::StddevSamp);
	ASSERT_TRUE(dispersion_from_name("variance", k));
	EXPECT_EQ(k, Dispersion::VarSamp);
	EXPECT_FALSE(dispersion_from_name("avg", k));
	EXPECT_FALSE(dispersion_two_columns(Dispersion::VarPop));
	EXPECT_TRUE(dispersion_two_columns(Dispersion::RegrCount));
}

// dispersion_release with Gaussian-like (zero kurtosis) parts.
DispersionAnswer
dispersion_release_(Dispersion k, const DispersionParts &parts, const DispersionParts &var, double cx, double cy,
                    double x_lo, double x_hi, double y_lo, double y_hi, double count_half, bool post)
{
	return dispersion_release(k, parts, var, DispersionParts{}, cx, cy, x_lo, x_hi, y_lo, y_hi, count_half, post);
}

TEST(Dispersion, PostProcessingClampsAndWithholds)
{
	const DispersionParts var{};
	// x in [0, 10]: population variance at most 25
	DispersionParts p = sums(kX, kY, 5, 15);
	p[kPartSxx] = 1e6;
	DispersionAnswer a = dispersion_release_(Dispersion::VarPop, p, var, 5, 15, 0, 10, 0, 40, 3, true);
	EXPECT_EQ(a.value, 25);
	EXPECT_EQ(a.note, "clamped to the possible range");
	a = dispersion_release_(Dispersion::StddevPop, p, var, 5, 15, 0, 10, 0, 40, 3, true);
	EXPECT_EQ(a.value, 5);
	// a negative variance estimate: 0, and its standard deviation 0
	p[kPartSxx] = 0;
	a = dispersion_release_(Dispersion::VarSamp, p, var, 5, 15, 0, 10, 0, 40, 3, true);
	EXPECT_EQ(a.value, 0);
	a = dispersion_release_(Dispersion::StddevSamp, p, var, 5, 15, 0, 10, 0, 40, 3, true);
	EXPECT_EQ(a.value, 0);
	// ... and NULL without post-processing (no real square root), the raw variance negative
	a = dispersion_release_(Dispersion::StddevSamp, p, var, 5, 15, 0, 10, 0, 40, 3, false);
	EXPECT_TRUE(std::isnan(a.value));
	a = dispersion_release_(Dispersion::VarSamp, p, var, 5, 15, 0, 10, 0, 40, 3, false);
	EXPECT_LT(a.value, 0);
	EXPECT_EQ(a.note, "");
	// the count's interval reaches 0: NULL
	p = sums(kX, kY, 5, 15);
	a = dispersion_release_(Dispersion::VarPop, p, var, 5, 15, 0, 10, 0, 40, 10, true);
	EXPECT_TRUE(std::isnan(a.value));
	EXPECT_EQ(a.note, "null: the count's 95% interval reaches 0");
	// corr clamped into [-1, 1]; a non-positive variance estimate withholds it
	p[kPartSxy] *= 1.5;
	a = dispersion_release_(Dispersion::Corr, p, var, 5, 15, 0, 10, 0, 40, 3, true);
	EXPECT_EQ(a.value, 1);
	EXPECT_EQ(a.note, "clamped to [-1, 1]");
	EXPECT_GT(dispersion_release_(Dispersion::Corr, p, var, 5, 15, 0, 10, 0, 40, 3, false).value, 1);
	p[kPartSyy] = 0;
	a = dispersion_release_(Dispersion::Corr, p, var, 5, 15, 0, 10, 0, 40, 3, true);
	EXPECT_TRUE(std::isnan(a.value));
	EXPECT_EQ(a.note, "null: a variance estimate is not positive");
	// regr_count is a rounded count
	p = sums(kX, kY, 5, 15);
	p[kPartN] = 9.6;
	EXPECT_EQ(dispersion_release_(Dispersion::RegrCount, p, var, 5, 15, 0, 10, 0, 40, 3, true).value, 10);
}

TEST(Dispersion, NoiseVarianceOfThePlans)
{
	LinearNoisePlan p;
	EXPECT_EQ(noise_variance(p), 0);
	p.scale = 1000;
	p.grid = 1;
	EXPECT_NEAR(noise_variance(p) / (2 * 1000.0 * 1000.0), 1, 1e-6); // discrete Laplace -> 2 b²
	p.scale = 0.5;                                                     // exact: 2a/(1-a)², a = e^-2
	const double a = std::exp(-2.0);
	EXPECT_NEAR(noise_variance(p), 2 * a / ((1 - a) * (1 - a)), 1e-12);
	p.family = NoiseFamily::Gaussian;
	p.scale = 7;
	EXPECT_EQ(noise_variance(p), 49);
}
