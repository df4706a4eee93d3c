// Dispersion statistics (stddev, variance, covariance, correlation, regression) computed from noisy
// linear sums, their delta-method error bars and the free post-processing of their answers.
#pragma once

#include <array>
#include <string>

namespace dxpriv {

// The statistics, each a function of the centred sums of one or two columns (x, y).
enum class Dispersion {
	StddevSamp, StddevPop, VarSamp, VarPop,                        // one column x
	CovarSamp, CovarPop, Corr, RegrSlope, RegrIntercept, RegrCount, // two columns (y, x)
	RegrAvgX, RegrAvgY, RegrSxx, RegrSyy, RegrSxy, RegrR2,
};
inline constexpr int kDispersionKinds = 16;

// The linear sums a statistic is computed from, over the rows counted: n = Σ 1, sx = Σ (x - cx),
// sy = Σ (y - cy), sxx = Σ (x - cx)², syy = Σ (y - cy)², sxy = Σ (x - cx)(y - cy), in this order
// (index into DispersionParts). cx and cy are centres fixed before the data is read (the
// middle of the declared domain): they shrink the sums' sensitivities and leave every statistic
// unchanged (each is shift-invariant once the centres are added back to the averages).
enum DispersionPart { kPartN = 0, kPartSx, kPartSy, kPartSxx, kPartSyy, kPartSxy, kParts };
using DispersionParts = std::array<double, kParts>;

// Name as PostgreSQL spells the aggregate ("stddev_samp", "regr_slope", ...).
const char *dispersion_name(Dispersion k);
// The kind named by a PostgreSQL aggregate name (stddev and variance are the _samp forms); false
// when the name is none of them.
bool dispersion_from_name(const std::string &name, Dispersion &k);
// Whether the statistic reads two columns (its aggregate takes (y, x)).
bool dispersion_two_columns(Dispersion k);
// Whether the statistic needs part p; unneeded parts are not released (no budget spent on them).
bool dispersion_needs(Dispersion k, int p);

// The statistic at the given sums (centres cx, cy), as PostgreSQL defines it on exact data: NaN
// where PostgreSQL answers NULL (n <= 0; n <= 1 for the sample forms; a zero variance in a
// denominator) or where noisy sums make it undefined (the square root of a negative variance).
// RegrR2 is 1 when y's variance is 0 and x's is not (as PostgreSQL). Unused parts are ignored.
double dispersion_value(Dispersion k, const DispersionParts &parts, double cx, double cy);

// The gradient of dispersion_value with respect to the parts (exact, by forward differentiation);
// zeros for unused parts, NaN where the value is NaN.
DispersionParts dispersion_gradient(Dispersion k, const DispersionParts &parts, double cx, double cy);

// Delta-method half-width of the `confidence` interval of the statistic released from independent
// noisy parts with noise variances `variances` (0 for parts released exactly) and noise excess
// kurtoses `kurtosis` (3 for Laplace noise, 0 for Gaussian): the error is, to first order,
// X = Σ_p (∂f/∂p) Z_p, of variance V = Σ_p (∂f/∂p)² Var_p and excess kurtosis
// κ = Σ_p (∂f/∂p)⁴ κ_p Var_p² / V²; the half-width is z' · sqrt(V) with z the two-sided normal
// quantile and z' = z + (z³ − 3z) κ / 24 its Cornish–Fisher correction for the heavier tails of
// Laplace noise (one Laplace part: 3.06 b against the exact ln(20) b = 3.00 b; the plain normal
// 2.77 b covers only 93.7%). NaN when the value is NaN. Throws CoreError(InvalidParameter) for a
// negative or non-finite variance or kurtosis of a needed part or a confidence outside (0, 1).
double dispersion_half_width(Dispersion k, const DispersionParts &parts, const DispersionParts &variances,
                             const DispersionParts &kurtosis, double cx, double cy, double confidence = 0.95);

// The answer released for a statistic, after the free post-processing of dxpriv.postprocess.
struct DispersionAnswer {
	double value = 0;       // NaN: released as NULL
	double half_width = 0;  // delta-method 95% half-width (NaN when withheld)
	std::string note;       // what post-processing did ("" when nothing)
};

// Post-processing of a statistic computed from released parts (variances and kurtosis as for
// dispersion_half_width). x_lo..x_hi, y_lo..y_hi, the ranges the columns
// take on the declared domain; count_half_width: the 95%
// half-width of the noisy count. With postprocess on: NULL when the count's interval reaches 0;
// variances and sums of squares clamped to [0, the largest value the range allows] (population:
// range²/4; sample: n/(n-1) times that), standard deviations their square roots, covariances to
// ± the range product / 4 (times n/(n-1)), corr to [-1, 1], regr_r2 to [0, 1], averages to the
// range, regr_count rounded and at least 0; a statistic that divides by a variance estimate that is
// not positive is NULL. With postprocess off: the value as computed (NULL only where undefined).
DispersionAnswer dispersion_release(Dispersion k, const DispersionParts &parts, const DispersionParts &variances,
                                    const DispersionParts &kurtosis, double cx, double cy, double x_lo, double x_hi, double y_lo, double y_hi,
                                    double count_half_width, bool postprocess);

} // namespace dxpriv
