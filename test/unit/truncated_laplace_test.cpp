// Deterministic tests of the generalized truncated Laplacian (MECHANISMS.md §5.1–5.5, §5.7, §8):
// every row of the seed's Appendix B table, the §8 reference numbers, closed-form costs against
// quadrature, the exact delta condition against a numerical hockey-stick divergence (holds and is
// tight), calibration of asymmetric supports, the grid law's privacy, and argument validation.
#include "core/truncated_laplace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/gaussian.h"
#include "core/random.h"
#include "test_support.h"

namespace dxpriv {
namespace {

using ::dxpriv::testing::expect_core_error;
using ::dxpriv::testing::two_decimals;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Composite 20-point Gauss–Legendre integral of fn over [a, b] (a <= b), split at the given interior
// points (where fn has kinks or jumps) and into 64 equal panels per piece: exact to ~1e-15 for the
// smooth exponential pieces used here, and fast even where fn vanishes.
template <typename Fn>
double integrate(Fn fn, double a, double b, std::vector<double> cuts = {})
{
	return ::dxpriv::testing::integrate_gauss20(fn, a, b, std::move(cuts), 64);
}

// Hockey-stick divergence of q + X against q + s + X at epsilon, by quadrature of
// (f(y) - e^eps f(y - s))_+ over the union of both supports, split where either density has a kink
// or a jump. Independent of GeneralizedTruncatedLaplace::privacy_delta.
double hockey_stick(const GeneralizedTruncatedLaplace &law, double s, double epsilon)
{
	const double factor = std::exp(epsilon);
	const auto excess = [&](double y) { return std::max(0.0, law.density(y) - factor * law.density(y - s)); };
	const double a = law.lower(), b = law.upper();
	return integrate(excess, std::min(a, a + s), std::max(b, b + s), {a, b, a + s, b + s, 0.0, s});
}

// One row of the Appendix B table (§5.7): inputs, printed values and the spec's computed columns.
struct AppendixBRow {
	int row;
	double epsilon, delta;
	double printed_a, printed_l1, printed_l2;
	double t, mean_abs, second_moment, sigma, l1, l2;
};

const std::vector<AppendixBRow> kAppendixB = {
    {1, 0.7, 2.5e-06, -17.46, 0.25, 0.13, 17.4568, 1.42849, 4.07988, 5.60788, 0.2547, 0.1297},
    {2, 0.4, 4.0e-06, -27.57, 0.27, 0.15, 27.5661, 2.49955, 12.48540, 9.16097, 0.2728, 0.1488},
    {3, 0.4, 2.5e-06, -28.74, 0.27, 0.14, 28.7411, 2.49971, 12.49014, 9.42545, 0.2652, 0.1406},
    {4, 0.4, 9.5e-06, -25.40, 0.29, 0.17, 25.4037, 2.49902, 12.47016, 8.65990, 0.2886, 0.1663},
    {5, 0.4, 3.0e-06, -28.29, 0.27, 0.14, 28.2853, 2.49965, 12.48851, 9.32348, 0.2681, 0.1437},
    {6, 0.7, 6.0e-06, -16.21, 0.27, 0.14, 16.2061, 1.42838, 4.07798, 5.33213, 0.2679, 0.1434},
    {7, 0.4, 8.5e-06, -25.68, 0.29, 0.16, 25.6817, 2.49911, 12.47276, 8.72542, 0.2864, 0.1638},
    {8, 0.7, 3.5e-06, -16.98, 0.26, 0.13, 16.9761, 1.42845, 4.07931, 5.50307, 0.2596, 0.1347},
    {9, 0.7, 4.0e-06, -16.79, 0.26, 0.14, 16.7853, 1.42844, 4.07903, 5.46107, 0.2616, 0.1368},
    {10, 0.4, 2.0e-06, -29.30, 0.26, 0.14, 29.2990, 2.49976, 12.49183, 9.54920, 0.2618, 0.1370},
    {11, 0.1, 4.5e-06, -93.66, 0.31, 0.19, 93.6620, 9.99198, 199.08898, 32.74486, 0.3051, 0.1857},
    {12, 0.7, 3.0e-06, -17.20, 0.26, 0.13, 17.1963, 1.42847, 4.07959, 5.55126, 0.2573, 0.1324},
    {13, 0.4, 5.5e-06, -26.77, 0.28, 0.15, 26.7700, 2.49940, 12.48098, 8.97872, 0.2784, 0.1548},
    {14, 0.7, 9.5e-06, -15.55, 0.28, 0.15, 15.5496, 1.42828, 4.07627, 5.18329, 0.2756, 0.1517},
    {15, 0.4, 6.0e-06, -26.55, 0.28, 0.16, 26.5525, 2.49935, 12.47956, 8.92848, 0.2799, 0.1565},
    {16, 0.7, 1.0e-06, -18.77, 0.24, 0.12, 18.7657, 1.42853, 4.08083, 5.88635, 0.2427, 0.1178},
    {17, 0.4, 6.5e-06, -26.35, 0.28, 0.16, 26.3524, 2.49930, 12.47816, 8.88210, 0.2814, 0.1582},
    {18, 0.4, 7.0e-06, -26.17, 0.28, 0.16, 26.1671, 2.49926, 12.47678, 8.83900, 0.2828, 0.1597},
    {19, 0.4, 4.5e-06, -27.27, 0.27, 0.15, 27.2717, 2.49950, 12.48389, 9.09386, 0.2749, 0.1510},
    {20, 0.4, 9.0e-06, -25.54, 0.29, 0.17, 25.5389, 2.49907, 12.47146, 8.69179, 0.2875, 0.1651},
    {21, 0.4, 3.5e-06, -27.90, 0.27, 0.15, 27.9000, 2.49960, 12.48694, 9.23665, 0.2706, 0.1464},
    {22, 0.1, 9.5e-06, -86.19, 0.32, 0.21, 86.1908, 9.98443, 198.34649, 30.88013, 0.3233, 0.2080},
    {23, 0.1, 5.5e-06, -91.66, 0.31, 0.19, 91.6555, 9.99041, 198.92963, 32.25076, 0.3098, 0.1913},
    {24, 0.1, 5.0e-06, -92.61, 0.31, 0.19, 92.6085, 9.99119, 199.00842, 32.48604, 0.3076, 0.1886},
    {25, 0.4, 1.5e-06, -30.02, 0.26, 0.13, 30.0182, 2.49982, 12.49359, 9.70707, 0.2575, 0.1326},
    {26, 0.4, 8.0e-06, -25.83, 0.29, 0.16, 25.8333, 2.49916, 12.47409, 8.76099, 0.2853, 0.1625},
    {27, 0.7, 7.0e-06, -15.99, 0.27, 0.15, 15.9859, 1.42835, 4.07747, 5.28253, 0.2704, 0.1461},
    {28, 0.7, 7.5e-06, -15.89, 0.27, 0.15, 15.8873, 1.42834, 4.07723, 5.26022, 0.2715, 0.1474},
    {29, 0.4, 1.0e-06, -31.03, 0.25, 0.13, 31.0318, 2.49987, 12.49545, 9.92650, 0.2518, 0.1268},
    {30, 0.1, 7.0e-06, -89.24, 0.32, 0.20, 89.2442, 9.98812, 198.70219, 31.65053, 0.3156, 0.1984},
    {31, 0.4, 5.0e-06, -27.01, 0.28, 0.15, 27.0083, 2.49945, 12.48242, 9.03353, 0.2767, 0.1530},
};

TEST(TruncatedLaplaceAppendixB, EveryRowReproduced)
{
	ASSERT_EQ(31u, kAppendixB.size());
	for (const AppendixBRow &r : kAppendixB) {
		SCOPED_TRACE("Appendix B row " + std::to_string(r.row));
		const GeneralizedTruncatedLaplace law = gtl_symmetric(1.0, r.epsilon, r.delta);
		const double t = law.upper();
		const double sigma = analytic_gaussian_sigma(1.0, r.epsilon, r.delta);
		const double l1 = law.mean_abs() / sigma;
		const double l2 = law.second_moment() / (sigma * sigma);
		// The paper's printed columns, to their 2 decimals.
		EXPECT_EQ(two_decimals(r.printed_a), two_decimals(law.lower()));
		EXPECT_EQ(two_decimals(r.printed_l1), two_decimals(l1)) << l1;
		EXPECT_EQ(two_decimals(r.printed_l2), two_decimals(l2)) << l2;
		// The spec's recomputed columns, to half a unit of their last printed digit.
		EXPECT_NEAR(r.t, t, 5e-5);
		EXPECT_EQ(-t, law.lower());
		EXPECT_NEAR(r.mean_abs, law.mean_abs(), 5e-6);
		EXPECT_NEAR(r.second_moment, law.second_moment(), 5e-6);
		EXPECT_NEAR(r.sigma, sigma, 5e-6);
		EXPECT_NEAR(r.l1, l1, 5e-5);
		EXPECT_NEAR(r.l2, l2, 5e-5);
		// The truncated Laplacian beats the optimal Gaussian on both costs in every row.
		EXPECT_LT(l2, 1.0);
		EXPECT_LT(l1 * std::sqrt(M_PI / 2.0), 1.0);
	}
}

TEST(TruncatedLaplace, ReferenceNumbersOfSection8)
{
	const GeneralizedTruncatedLaplace law = gtl_symmetric(1.0, 1.0, 1e-5);
	EXPECT_NEAR(11.361115, gtl_symmetric_bound(1.0, 1.0, 1e-5), 5e-7);
	EXPECT_NEAR(11.3611147784896, law.upper(), 1e-12);
	EXPECT_EQ(-law.upper(), law.lower());
	EXPECT_NEAR(0.999868, law.mean_abs(), 5e-7);
	EXPECT_NEAR(1.998233, law.second_moment(), 5e-7);
	// mpmath quadrature at 40 digits.
	EXPECT_NEAR(0.999867761917, law.mean_abs(), 1e-12);
	EXPECT_NEAR(1.99823315179, law.second_moment(), 1e-11);
	EXPECT_NEAR(0.0, law.mean(), 1e-15);
	// T scales with the sensitivity.
	EXPECT_NEAR(3 * 11.3611147784896, gtl_symmetric_bound(3.0, 1.0, 1e-5), 1e-11);
}

TEST(TruncatedLaplace, ClosedFormsMatchQuadrature)
{
	struct Support {
		double scale, lower, upper;
	};
	for (const Support &s : {Support{1.0, -11.36, 11.36}, Support{2.0, -25.0, 7.78}, Support{0.5, -0.3, 4.0},
	                         Support{100.0, -1.0, 1.3}, Support{3.0, -1e-3, 50.0}}) {
		SCOPED_TRACE(std::to_string(s.scale) + " [" + std::to_string(s.lower) + ", " + std::to_string(s.upper) + "]");
		const GeneralizedTruncatedLaplace law(s.scale, s.lower, s.upper);
		const auto moment = [&](int power) {
			return integrate([&](double x) { return std::pow(x, power) * law.density(x); }, s.lower, s.upper, {0.0});
		};
		const double scale_of_x = std::max(std::fabs(s.lower), s.upper);
		EXPECT_NEAR(1.0, moment(0), 1e-12);
		EXPECT_NEAR(moment(1), law.mean(), 1e-12 * scale_of_x);
		EXPECT_NEAR(integrate([&](double x) { return std::fabs(x) * law.density(x); }, s.lower, s.upper, {0.0}),
		            law.mean_abs(), 1e-12 * scale_of_x);
		EXPECT_NEAR(moment(2), law.second_moment(), 1e-12 * scale_of_x * scale_of_x);
		// The literal §5.4 formulas (with M), for moderate exponents where they do not cancel.
		const double l = s.scale, a = s.lower, b = s.upper, m = law.normaliser();
		EXPECT_NEAR(1.0 / (l * (2 - std::exp(a / l) - std::exp(-b / l))), m, 1e-12 * m);
		if (std::min(-a, b) / l > 0.1) {
			EXPECT_NEAR(m * l * (2 * l - (l - a) * std::exp(a / l) - (l + b) * std::exp(-b / l)), law.mean_abs(),
			            1e-9 * scale_of_x);
			EXPECT_NEAR(m * l * (4 * l * l - (a * a - 2 * l * a + 2 * l * l) * std::exp(a / l) -
			                     (b * b + 2 * l * b + 2 * l * l) * std::exp(-b / l)),
			            law.second_moment(), 1e-9 * scale_of_x * scale_of_x);
			EXPECT_NEAR(m * l * ((l - a) * std::exp(a / l) - (l + b) * std::exp(-b / l)), law.mean(), 1e-9 * scale_of_x);
		}
		// CDF, mass and quantile agree with each other and with quadrature.
		for (double u : {0.0, 1e-9, 0.01, 0.3, 0.5, 0.77, 0.999, 1.0}) {
			const double x = law.quantile(u);
			EXPECT_NEAR(u, law.cdf(x), 1e-12) << u;
		}
		const double mid_lo = s.lower / 2, mid_hi = s.upper / 3;
		EXPECT_NEAR(integrate([&](double x) { return law.density(x); }, mid_lo, mid_hi, {0.0}), law.mass(mid_lo, mid_hi),
		            1e-13);
		EXPECT_EQ(0.0, law.cdf(s.lower - 1));
		EXPECT_EQ(1.0, law.cdf(s.upper));
		EXPECT_EQ(0.0, law.density(s.upper + 1e-9));
	}
	// The symmetric closed forms of §5.4.
	const double l = 1.0, t = 11.3611147784896;
	const GeneralizedTruncatedLaplace sym(l, -t, t);
	EXPECT_NEAR(l - t * std::exp(-t / l) / -std::expm1(-t / l), sym.mean_abs(), 1e-14);
	EXPECT_NEAR((2 * l * l - (t * t + 2 * l * t + 2 * l * l) * std::exp(-t / l)) / -std::expm1(-t / l),
	            sym.second_moment(), 1e-13);
}

TEST(TruncatedLaplacePrivacy, ExactDeltaHoldsAndIsTight)
{
	struct Case {
		double sensitivity, epsilon, delta, far_offset; // far endpoint = -(T + far_offset)
	};
	for (const Case c : {Case{1.0, 1.0, 1e-5, 8.0}, Case{2.0, 0.5, 0.05, 17.0}, Case{1.0, 0.1, 0.3, 0.08},
	                     Case{0.5, 3.0, 1e-3, 1.0}}) {
		SCOPED_TRACE(std::to_string(c.sensitivity) + " " + std::to_string(c.epsilon) + " " + std::to_string(c.delta));
		const GeneralizedTruncatedLaplace sym = gtl_symmetric(c.sensitivity, c.epsilon, c.delta);
		const double t = gtl_symmetric_bound(c.sensitivity, c.epsilon, c.delta);
		const double far = -(t + c.far_offset);
		for (const GeneralizedTruncatedLaplace &law :
		     {sym, gtl_with_far_endpoint(c.sensitivity, c.epsilon, c.delta, far),
		      gtl_with_far_endpoint(c.sensitivity, c.epsilon, c.delta, -far)}) {
			SCOPED_TRACE("[" + std::to_string(law.lower()) + ", " + std::to_string(law.upper()) + "]");
			EXPECT_NEAR(c.delta, law.privacy_delta(c.sensitivity), 1e-12 * c.delta);
			// Numerical hockey-stick divergence over shifts |s| <= sensitivity: never above delta,
			// and delta is reached at |s| = sensitivity.
			double worst = 0;
			for (int j = -10; j <= 10; ++j) {
				const double s = c.sensitivity * j / 10.0;
				const double hs = hockey_stick(law, s, c.epsilon);
				EXPECT_LE(hs, c.delta * (1 + 1e-9)) << "shift " << s;
				worst = std::max(worst, hs);
			}
			EXPECT_NEAR(c.delta, worst, 1e-9 * c.delta);
			// Tight in epsilon: at a slightly smaller epsilon the divergence exceeds delta.
			const double smaller = c.epsilon * (1 - 1e-3);
			EXPECT_GT(std::max(hockey_stick(law, c.sensitivity, smaller), hockey_stick(law, -c.sensitivity, smaller)),
			          c.delta * (1 + 1e-6));
		}
		// Tight in the support: shrinking T by 1e-6 relative raises delta.
		const GeneralizedTruncatedLaplace narrower(sym.scale(), -t * (1 - 1e-6), t * (1 - 1e-6));
		EXPECT_GT(narrower.privacy_delta(c.sensitivity), c.delta * (1 + 1e-9));
		EXPECT_GT(hockey_stick(narrower, c.sensitivity, c.epsilon), c.delta * (1 + 1e-9));
	}
	// (1, 0.1, 0.3): epsilon < ln(0.7/0.4), so far endpoints are bounded (near would fall below 1).
	expect_core_error(ErrorKind::InvalidParameter, [] { gtl_with_far_endpoint(1.0, 0.1, 0.3, -4.4); });
}

TEST(TruncatedLaplacePrivacy, DeltaOfNarrowSupports)
{
	// Support narrower than the sensitivity: a shift moves all the mass off it.
	const GeneralizedTruncatedLaplace tiny(1.0, -0.2, 0.3);
	EXPECT_DOUBLE_EQ(1.0, tiny.privacy_delta(1.0));
	EXPECT_NEAR(1.0, hockey_stick(tiny, 1.0, 1.0), 1e-12);
	// One end closer than the sensitivity: the end mass crosses 0 and is still exact.
	const GeneralizedTruncatedLaplace lopsided(1.0, -0.5, 6.0);
	EXPECT_NEAR(lopsided.mass(-0.5, 0.5), lopsided.privacy_delta(1.0), 1e-15);
	EXPECT_NEAR(lopsided.privacy_delta(1.0), hockey_stick(lopsided, 1.0, 1.0), 1e-12);
	EXPECT_NEAR(lopsided.mass(5.0, 6.0), hockey_stick(lopsided, -1.0, 1.0), 1e-12);
}

TEST(TruncatedLaplaceCalibration, AsymmetricFamily)
{
	const double t = gtl_symmetric_bound(1.0, 1.0, 1e-5);
	// The far endpoint -T gives back the symmetric member.
	const GeneralizedTruncatedLaplace back = gtl_with_far_endpoint(1.0, 1.0, 1e-5, -t);
	EXPECT_NEAR(t, back.upper(), 1e-12 * t);
	// §5.2 (mpmath): A = -20.03 gives B = 11.3611089597735 and E|X| = 0.99993386096; A = -15.245
	// gives B = T - 5.7e-6; the lower limit of B is 11.3611089587733.
	const GeneralizedTruncatedLaplace wide = gtl_with_far_endpoint(1.0, 1.0, 1e-5, -20.03);
	EXPECT_NEAR(11.3611089597735, wide.upper(), 1e-11);
	EXPECT_NEAR(0.99993386096, wide.mean_abs(), 1e-10);
	EXPECT_NEAR(1.99911613542, wide.second_moment(), 1e-10);
	EXPECT_NEAR(-7.19177422387e-5, wide.mean(), 1e-14);
	EXPECT_NEAR(t - 5.7e-6, gtl_with_far_endpoint(1.0, 1.0, 1e-5, -15.245).upper(), 1e-9);
	EXPECT_GT(gtl_with_far_endpoint(1.0, 1.0, 1e-5, -1e6).upper(), 11.3611089587733 - 1e-11);
	// Mirror image for a positive far endpoint; mpmath values for (2, 0.5, 0.05) with A = -25.
	const GeneralizedTruncatedLaplace a25 = gtl_with_far_endpoint(2.0, 0.5, 0.05, -25.0);
	EXPECT_NEAR(7.7801896622343879, a25.upper(), 1e-12);
	EXPECT_NEAR(3.374328531250517, a25.mean_abs(), 1e-12);
	EXPECT_NEAR(21.678800955329952, a25.second_moment(), 1e-11);
	EXPECT_NEAR(-0.87777647589557362, a25.mean(), 1e-12);
	const GeneralizedTruncatedLaplace b25 = gtl_with_far_endpoint(2.0, 0.5, 0.05, 25.0);
	EXPECT_NEAR(-a25.upper(), b25.lower(), 1e-13);
	EXPECT_NEAR(-a25.mean(), b25.mean(), 1e-13);
	// Lemma 1: the near end carries the larger mass (mpmath: far-end mass 6.7507628545043e-4).
	EXPECT_NEAR(0.00067507628545043015, a25.mass(-25.0, -23.0), 1e-15);
	// The symmetric member minimises both costs along the family.
	double previous_l1 = 0, previous_l2 = 0;
	for (double far : {t, t + 1e-9, t + 0.5, t + 2, t + 10, t + 100}) {
		const GeneralizedTruncatedLaplace law = gtl_with_far_endpoint(1.0, 1.0, 1e-5, -far);
		EXPECT_GE(law.mean_abs(), previous_l1) << far;
		EXPECT_GE(law.second_moment(), previous_l2) << far;
		previous_l1 = law.mean_abs();
		previous_l2 = law.second_moment();
	}
	EXPECT_GT(previous_l1, gtl_symmetric(1.0, 1.0, 1e-5).mean_abs() + 5e-5);
}

TEST(TruncatedLaplaceGrid, GridLawPrivacyMatchesBruteForce)
{
	// Symmetric (1, 0.05) with sensitivity 1 on grid 1/8: t = lambda/grid = 8 exactly, k = 8 steps.
	const GeneralizedTruncatedLaplace law = gtl_symmetric(1.0, 1.0, 0.05);
	const double grid = 0.125;
	const GridPrivacy p = gtl_grid_privacy(law, 1.0, grid);
	EXPECT_DOUBLE_EQ(1.0, p.epsilon);
	const std::int64_t lo = static_cast<std::int64_t>(std::ceil(law.lower() / grid));
	const std::int64_t hi = static_cast<std::int64_t>(std::floor(law.upper() / grid));
	std::vector<double> pmf;
	double total = 0;
	for (std::int64_t z = lo; z <= hi; ++z) {
		pmf.push_back(std::exp(-std::fabs(static_cast<double>(z)) / 8.0));
		total += pmf.back();
	}
	for (double &q : pmf)
		q /= total;
	const auto at = [&](std::int64_t z) { return z < lo || z > hi ? 0.0 : pmf[static_cast<std::size_t>(z - lo)]; };
	const auto divergence = [&](std::int64_t shift, double epsilon) {
		double d = 0;
		for (std::int64_t z = lo - 8; z <= hi + 8; ++z)
			d += std::max(0.0, at(z) - std::exp(epsilon) * at(z - shift));
		return d;
	};
	double worst = 0;
	for (std::int64_t j = -8; j <= 8; ++j)
		worst = std::max(worst, divergence(j, p.epsilon));
	EXPECT_NEAR(worst, p.delta, 1e-14);
	EXPECT_GT(divergence(8, p.epsilon * 0.999), p.delta * (1 + 1e-6));
	// The grid delta is close to, but not exactly, the continuous one.
	EXPECT_NEAR(0.05, p.delta, 0.01);

	// On a fine grid both are within 1e-5 relative of the continuous calibration.
	const GeneralizedTruncatedLaplace ref = gtl_symmetric(1.0, 1.0, 1e-5);
	const GridPrivacy fine = gtl_grid_privacy(ref, 1.0, std::ldexp(1.0, -20));
	EXPECT_LE(fine.epsilon, 1.0);
	EXPECT_GT(fine.epsilon, 1.0 - 1e-5);
	EXPECT_NEAR(1e-5, fine.delta, 1e-10);
	// A sensitivity that is not a multiple of the grid costs one more step of epsilon.
	EXPECT_NEAR(1.5, gtl_grid_privacy(law, 1.1, 0.5).epsilon, 1e-12);
}

TEST(TruncatedLaplaceGrid, SamplesStayOnTheGridAndInTheSupport)
{
	SeededRandom rng(11);
	const GeneralizedTruncatedLaplace law = gtl_with_far_endpoint(1.0, 0.5, 0.1, -9.0);
	const double grid = std::ldexp(1.0, -8);
	for (int i = 0; i < 5000; ++i) {
		const double x = gtl_on_grid(rng, law, grid);
		ASSERT_EQ(std::trunc(x / grid), x / grid) << x;
		ASSERT_GE(x, law.lower());
		ASSERT_LE(x, law.upper());
	}
	// A grid coarser than the support: only 0 is left.
	const GeneralizedTruncatedLaplace narrow(1.0, -0.3, 0.4);
	for (int i = 0; i < 100; ++i)
		ASSERT_EQ(0.0, gtl_on_grid(rng, narrow, 1.0));
	SeededRandom a(5), b(5);
	for (int i = 0; i < 100; ++i)
		ASSERT_EQ(gtl_on_grid(a, law, grid), gtl_on_grid(b, law, grid));
}

TEST(TruncatedLaplaceErrors, RejectsBadInputs)
{
	for (double bad : {0.0, -1.0, kNaN, kInf}) {
		expect_core_error(ErrorKind::InvalidParameter, [&] { GeneralizedTruncatedLaplace(bad, -1, 1); });
		expect_core_error(ErrorKind::InvalidParameter, [&] { gtl_symmetric_bound(bad, 1.0, 1e-5); });
		expect_core_error(ErrorKind::InvalidParameter, [&] { gtl_symmetric_bound(1.0, bad, 1e-5); });
		expect_core_error(ErrorKind::InvalidParameter, [&] { gtl_symmetric(1.0, 1.0, 1e-5).privacy_delta(bad); });
	}
	expect_core_error(ErrorKind::InvalidParameter, [] { GeneralizedTruncatedLaplace(1.0, 0.0, 1.0); });
	expect_core_error(ErrorKind::InvalidParameter, [] { GeneralizedTruncatedLaplace(1.0, -1.0, 0.0); });
	expect_core_error(ErrorKind::InvalidParameter, [] { GeneralizedTruncatedLaplace(1.0, -kInf, 1.0); });
	expect_core_error(ErrorKind::InvalidParameter, [] { GeneralizedTruncatedLaplace(1.0, -1.0, kNaN); });
	for (double bad : {0.0, 0.5, 0.7, -1e-5, kNaN})
		expect_core_error(ErrorKind::InvalidParameter, [&] { gtl_symmetric(1.0, 1.0, bad); });
	expect_core_error(ErrorKind::InvalidParameter, [] { gtl_symmetric(1.0, 800.0, 1e-5); });
	expect_core_error(ErrorKind::InvalidParameter, [] { gtl_with_far_endpoint(1.0, 1.0, 1e-5, -11.0); });
	expect_core_error(ErrorKind::InvalidParameter, [] { gtl_with_far_endpoint(1.0, 1.0, 1e-5, 5.0); });
	expect_core_error(ErrorKind::InvalidParameter, [] { gtl_with_far_endpoint(1.0, 1.0, 1e-5, -kInf); });
	expect_core_error(ErrorKind::InvalidParameter, [] { GeneralizedTruncatedLaplace(1, -1, 1).quantile(1.5); });
	SeededRandom rng(1);
	const GeneralizedTruncatedLaplace law = gtl_symmetric(1.0, 1.0, 1e-5);
	for (double bad : {0.0, -0.5, 0.3, 3.0, kNaN, kInf}) {
		expect_core_error(ErrorKind::InvalidParameter, [&] { gtl_on_grid(rng, law, bad); });
		expect_core_error(ErrorKind::InvalidParameter, [&] { gtl_grid_privacy(law, 1.0, bad); });
	}
	expect_core_error(ErrorKind::ProgramLimit, [&] { gtl_on_grid(rng, law, std::ldexp(1.0, -60)); });
	expect_core_error(ErrorKind::ProgramLimit, [&] { gtl_grid_privacy(law, 1.0, std::ldexp(1.0, -60)); });
}

} // namespace
} // namespace dxpriv
