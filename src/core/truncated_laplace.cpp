// Generalized truncated Laplacian: law, exact (epsilon, delta) condition, closed-form costs,
// calibration and an exact grid sampler (MECHANISMS.md §5.1–5.5).
#include "core/truncated_laplace.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <boost/math/special_functions/gamma.hpp>

#include "core/error.h"
#include "core/samplers.h"

namespace dxpriv {

namespace {

constexpr double kMaxGridUnits = 4611686018427387904.0; // 2^62

// phi0(y) = 1 - e^{-y} = int_0^y e^{-u} du.
double phi0(double y)
{
	return -std::expm1(-y);
}

// phi1(y) = 1 - (1 + y) e^{-y} = int_0^y u e^{-u} du (regularised incomplete gamma: no cancellation).
double phi1(double y)
{
	return boost::math::gamma_p(2.0, y);
}

// phi2(y) = 2 - (y^2 + 2y + 2) e^{-y} = int_0^y u^2 e^{-u} du.
double phi2(double y)
{
	return 2.0 * boost::math::gamma_p(3.0, y);
}

// Checks the (sensitivity, epsilon, delta) triple of the GTL calibration.
void validate_gtl_calibration(double sensitivity, double epsilon, double delta)
{
	if (!std::isfinite(sensitivity) || !(sensitivity > 0.0))
		throw CoreError(ErrorKind::InvalidParameter, "sensitivity must be positive and finite",
		                "The sensitivity bounds how much one record can change the query answer.");
	if (!std::isfinite(epsilon) || !(epsilon > 0.0))
		throw CoreError(ErrorKind::InvalidParameter, "epsilon must be positive and finite",
		                "Use a finite epsilon greater than zero.");
	if (!(delta > 0.0 && delta < 0.5))
		throw CoreError(ErrorKind::InvalidParameter, "delta must lie strictly between 0 and 1/2",
		                "The truncated Laplacian needs delta < 1/2; typical values are far smaller.");
}

// T / lambda = ln(1 + (e^eps - 1)/(2 delta)); rejects epsilon so large that it overflows.
double symmetric_bound_in_scales(double epsilon, double delta)
{
	const double ratio = std::log1p(std::expm1(epsilon) / (2.0 * delta));
	if (!std::isfinite(ratio))
		throw CoreError(ErrorKind::InvalidParameter, "epsilon is too large for the truncated laplacian",
		                "With epsilon above about 700 the support bound overflows; use a smaller epsilon.");
	return ratio;
}

// Integer support [lo, hi] of the grid law: ceil(A/grid), floor(B/grid) (exact for a power of two).
void grid_support(const GeneralizedTruncatedLaplace &law, double grid, std::int64_t &lo, std::int64_t &hi)
{
	const double a = std::ceil(law.lower() / grid);
	const double b = std::floor(law.upper() / grid);
	if (!(-a <= kMaxGridUnits) || !(b <= kMaxGridUnits))
		throw CoreError(ErrorKind::ProgramLimit, "truncated laplacian support is too wide for the grid",
		                "Supports beyond 2^62 grid steps are not supported; use a coarser grid.");
	lo = static_cast<std::int64_t>(a);
	hi = static_cast<std::int64_t>(b);
}

// Sum of e^{-z/t} over the integers z in [a, b], 0 <= a <= b, in long double.
long double geometric_sum(std::int64_t a, std::int64_t b, long double t)
{
	if (a > b)
		return 0.0L;
	const long double count = static_cast<long double>(b - a) + 1.0L;
	return std::exp(-static_cast<long double>(a) / t) * -std::expm1(-count / t) / -std::expm1(-1.0L / t);
}

// Unnormalised mass of e^{-|z|/t} over the integers in [a, b] (any signs, a <= b allowed empty).
long double two_sided_sum(std::int64_t a, std::int64_t b, long double t)
{
	if (a > b)
		return 0.0L;
	long double total = 0.0L;
	if (b >= 0)
		total += geometric_sum(std::max<std::int64_t>(a, 0), b, t);
	if (a < 0)
		total += geometric_sum(std::max<std::int64_t>(-b, 1), -a, t);
	return total;
}

} // namespace

// Validates the support and precomputes M = 1 / (lambda (phi0(-A/lambda) + phi0(B/lambda))).
GeneralizedTruncatedLaplace::GeneralizedTruncatedLaplace(double scale, double lower, double upper)
    : scale_(scale), lower_(lower), upper_(upper), normaliser_(0.0)
{
	if (!std::isfinite(scale) || !(scale > 0.0))
		throw CoreError(ErrorKind::InvalidParameter, "truncated laplacian scale must be positive and finite");
	if (!std::isfinite(lower) || !std::isfinite(upper) || !(lower < 0.0) || !(upper > 0.0))
		throw CoreError(ErrorKind::InvalidParameter, "truncated laplacian support must contain zero",
		                "The support [lower, upper] needs finite lower < 0 < upper.");
	normaliser_ = 1.0 / (scale * (phi0(-lower / scale) + phi0(upper / scale)));
}

// M exp(-|x|/lambda) inside [A, B].
double GeneralizedTruncatedLaplace::density(double x) const
{
	if (!(x >= lower_ && x <= upper_))
		return 0.0;
	return normaliser_ * std::exp(-std::fabs(x) / scale_);
}

// P(X <= x) as the mass of [A, x].
double GeneralizedTruncatedLaplace::cdf(double x) const
{
	if (!(x >= lower_))
		return 0.0;
	if (x >= upper_)
		return 1.0;
	return mass(lower_, x);
}

// Mass of [lo, hi] ∩ [A, B], split at 0; each side is M lambda e^{-near/lambda} phi0(width/lambda).
double GeneralizedTruncatedLaplace::mass(double lo, double hi) const
{
	lo = std::max(lo, lower_);
	hi = std::min(hi, upper_);
	if (!(lo <= hi))
		return 0.0;
	const double m_lambda = normaliser_ * scale_;
	double total = 0.0;
	if (lo < 0.0) {
		const double right = std::min(hi, 0.0);
		total += m_lambda * std::exp(right / scale_) * phi0((right - lo) / scale_);
	}
	if (hi > 0.0) {
		const double left = std::max(lo, 0.0);
		total += m_lambda * std::exp(-left / scale_) * phi0((hi - left) / scale_);
	}
	return total;
}

// Inverse of the piecewise-exponential CDF (§5.5), clamped to the support.
double GeneralizedTruncatedLaplace::quantile(double u) const
{
	if (!(u >= 0.0 && u <= 1.0))
		throw CoreError(ErrorKind::InvalidParameter, "quantile level must lie in [0, 1]");
	const double m_lambda = normaliser_ * scale_;
	const double f0 = m_lambda * phi0(-lower_ / scale_);
	double x;
	if (u <= f0)
		x = scale_ * std::log(u / m_lambda + std::exp(lower_ / scale_));
	else
		x = -scale_ * std::log1p(-(u - f0) / m_lambda);
	return std::min(std::max(x, lower_), upper_);
}

// E[X] = M lambda^2 (phi1(B/lambda) - phi1(-A/lambda)).
double GeneralizedTruncatedLaplace::mean() const
{
	return normaliser_ * scale_ * scale_ * (phi1(upper_ / scale_) - phi1(-lower_ / scale_));
}

// E|X| = M lambda^2 (phi1(-A/lambda) + phi1(B/lambda)) (§5.4 in cancellation-free form).
double GeneralizedTruncatedLaplace::mean_abs() const
{
	return normaliser_ * scale_ * scale_ * (phi1(-lower_ / scale_) + phi1(upper_ / scale_));
}

// E[X^2] = M lambda^3 (phi2(-A/lambda) + phi2(B/lambda)) (§5.4 in cancellation-free form).
double GeneralizedTruncatedLaplace::second_moment() const
{
	return normaliser_ * scale_ * scale_ * scale_ * (phi2(-lower_ / scale_) + phi2(upper_ / scale_));
}

// §5.2: the larger of the two end masses a shift by the sensitivity pushes off the support.
double GeneralizedTruncatedLaplace::privacy_delta(double sensitivity) const
{
	if (!std::isfinite(sensitivity) || !(sensitivity > 0.0))
		throw CoreError(ErrorKind::InvalidParameter, "sensitivity must be positive and finite");
	return std::max(mass(lower_, lower_ + sensitivity), mass(upper_ - sensitivity, upper_));
}

// T = lambda ln(1 + (e^eps - 1)/(2 delta)).
double gtl_symmetric_bound(double sensitivity, double epsilon, double delta)
{
	validate_gtl_calibration(sensitivity, epsilon, delta);
	return (sensitivity / epsilon) * symmetric_bound_in_scales(epsilon, delta);
}

// The symmetric member [-T, T].
GeneralizedTruncatedLaplace gtl_symmetric(double sensitivity, double epsilon, double delta)
{
	const double t = gtl_symmetric_bound(sensitivity, epsilon, delta);
	return GeneralizedTruncatedLaplace(sensitivity / epsilon, -t, t);
}

// Near endpoint from "near-end mass = delta": with y = e^{-near/lambda}, y (e^eps - 1) = delta (2 -
// e^{-|far|/lambda} - y), so near = lambda [ln(1 + (e^eps - 1)/delta) - ln(1 + phi0(|far|/lambda))].
GeneralizedTruncatedLaplace gtl_with_far_endpoint(double sensitivity, double epsilon, double delta,
                                                  double far_endpoint)
{
	const double t = gtl_symmetric_bound(sensitivity, epsilon, delta);
	if (!std::isfinite(far_endpoint) || !(std::fabs(far_endpoint) >= t))
		throw CoreError(ErrorKind::InvalidParameter, "far endpoint of the truncated laplacian is too close to zero",
		                "The far endpoint must be finite with absolute value at least the symmetric bound T.");
	const double lambda = sensitivity / epsilon;
	const double far = std::fabs(far_endpoint);
	const double near = lambda * (std::log1p(std::expm1(epsilon) / delta) - std::log1p(phi0(far / lambda)));
	// The end-mass rule assumes [near - sensitivity, near] lies on the near side of 0; for small epsilon
	// and large delta a far endpoint beyond some limit pushes the near one inside the sensitivity.
	if (!(near >= sensitivity))
		throw CoreError(ErrorKind::InvalidParameter, "far endpoint of the truncated laplacian is too far from zero",
		                "For this epsilon and delta the near endpoint would fall below the sensitivity; choose a "
		                "far endpoint closer to the symmetric bound T or a larger epsilon.");
	if (far_endpoint < 0.0)
		return GeneralizedTruncatedLaplace(lambda, far_endpoint, near);
	return GeneralizedTruncatedLaplace(lambda, -near, far_endpoint);
}

// Geometric magnitude from DLap(t) restricted to z >= 0, folded modulo m+1, signed, and truncated.
std::int64_t gtl_grid_steps(RandomSource &rng, const GeneralizedTruncatedLaplace &law, double grid)
{
	validate_grid(grid);
	const Rational t = scale_in_grid_units(law.scale(), grid);
	std::int64_t lo = 0, hi = 0;
	grid_support(law, grid, lo, hi);
	// m + 1 <= 2^62 + 1: no overflow.
	const std::uint64_t modulus = static_cast<std::uint64_t>(std::max(-lo, hi)) + 1;
	for (;;) {
		// Conditioned on z >= 0, P(z) ∝ exp(-z/t): a geometric variable with ratio e^{-1/t}.
		const std::int64_t z = discrete_laplace(rng, t);
		if (z < 0)
			continue;
		// sum_q r^{j + q(m+1)} ∝ r^j: the remainder is geometric truncated to [0, m].
		const std::int64_t j = static_cast<std::int64_t>(static_cast<std::uint64_t>(z) % modulus);
		const bool negative = bernoulli_rational(rng, 1, 2);
		if (negative && j == 0)
			continue; // 0 would otherwise be drawn twice as often as any other value
		const std::int64_t v = negative ? -j : j;
		if (v < lo || v > hi)
			continue;
		return v;
	}
}

// grid * gtl_grid_steps.
double gtl_on_grid(RandomSource &rng, const GeneralizedTruncatedLaplace &law, double grid)
{
	return grid * static_cast<double>(gtl_grid_steps(rng, law, grid));
}

// epsilon = k/t and the exact end masses of the discrete law, k = ceil(sensitivity/grid).
GridPrivacy gtl_grid_privacy(const GeneralizedTruncatedLaplace &law, double sensitivity, double grid)
{
	if (!std::isfinite(sensitivity) || !(sensitivity > 0.0))
		throw CoreError(ErrorKind::InvalidParameter, "sensitivity must be positive and finite");
	validate_grid(grid);
	const Rational scale = scale_in_grid_units(law.scale(), grid);
	std::int64_t lo = 0, hi = 0;
	grid_support(law, grid, lo, hi);
	const double steps = std::ceil(sensitivity / grid);
	if (!(steps <= kMaxGridUnits))
		throw CoreError(ErrorKind::ProgramLimit, "sensitivity is too large for the grid",
		                "Use a coarser grid.");
	const std::int64_t k = static_cast<std::int64_t>(steps);
	const long double t = static_cast<long double>(scale.num) / static_cast<long double>(scale.den);
	const long double total = two_sided_sum(lo, hi, t);
	// k <= 2^62 and |lo|, hi <= 2^62: the shifted ends stay within int64.
	const long double upper_end = two_sided_sum(std::max(hi - k + 1, lo), hi, t);
	const long double lower_end = two_sided_sum(lo, std::min(lo + k - 1, hi), t);
	return GridPrivacy{static_cast<double>(static_cast<long double>(k) / t),
	                   static_cast<double>(std::max(upper_end, lower_end) / total)};
}

} // namespace dxpriv
