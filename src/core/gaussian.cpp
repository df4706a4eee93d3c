// Gaussian calibration (Balle–Wang analytic, Dwork–Roth classical) and the exact discrete Gaussian
// (Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential Privacy", NeurIPS 2020).
#include "core/gaussian.h"

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <limits>

#include "core/big_sampling.h"
#include "core/error.h"

namespace dxpriv {

namespace {

using u128 = unsigned __int128;

constexpr double kSqrt2 = 1.41421356237309504880;
constexpr double kLogSqrt2Pi = 0.91893853320467274178; // ln(sqrt(2 pi))
constexpr int kMaxBisectionSteps = 4000; // far more than a double bracket ever needs

// Throws InvalidParameter unless x is finite and > 0.
void require_positive(double x, const char *message, const char *hint)
{
	if (!std::isfinite(x) || !(x > 0.0))
		throw CoreError(ErrorKind::InvalidParameter, message, hint);
}

// Checks the (epsilon, delta) pair of a calibration: epsilon > 0 finite, delta in (0, 1).
void validate_privacy_target(double epsilon, double delta)
{
	require_positive(epsilon, "epsilon must be positive and finite",
	                 "Use a finite epsilon greater than zero.");
	if (!(delta > 0.0 && delta < 1.0))
		throw CoreError(ErrorKind::InvalidParameter, "delta must lie strictly between 0 and 1",
		                "Typical values of delta are far below one over the number of records.");
}

// Checks the (sensitivity, epsilon, delta) triple shared by the calibration functions.
void validate_calibration(double sensitivity, double epsilon, double delta)
{
	require_positive(sensitivity, "sensitivity must be positive and finite",
	                 "The sensitivity bounds how much one record can change the query answer.");
	validate_privacy_target(epsilon, delta);
}

// ln Phi(x), accurate in both tails: log1p of the upper tail for x > 0, erfc down to x = -30
// (Phi(-30) ~ 5e-198, still a normal double), and the asymptotic Mills-ratio series below that.
double log_normal_cdf(double x)
{
	if (x > 0.0)
		return std::log1p(-0.5 * std::erfc(x / kSqrt2));
	if (x >= -30.0)
		return std::log(0.5 * std::erfc(-x / kSqrt2));
	// Phi(x) = phi(x)/|x| * (1 - 1/x^2 + 3/x^4 - 15/x^6 + ...); at |x| >= 30 twelve terms reach
	// far below double precision.
	const double z = 1.0 / (x * x);
	double term = 1.0, sum = 1.0;
	for (int k = 1; k <= 12; ++k) {
		term *= -static_cast<double>(2 * k - 1) * z;
		sum += term;
	}
	return -0.5 * x * x - std::log(-x) - kLogSqrt2Pi + std::log(sum);
}

// ln(Phi(x) - e^eps Phi(y)) for x >= y: ln Phi(x) + ln(1 - exp(eps + ln Phi(y) - ln Phi(x))).
// Returns -inf when the difference is not positive at working precision.
double log_profile_term(double x, double y, double epsilon)
{
	const double lx = log_normal_cdf(x);
	const double ly = log_normal_cdf(y);
	const double d = epsilon + ly - lx;
	if (!(d < 0.0))
		return -std::numeric_limits<double>::infinity();
	return lx + std::log(-std::expm1(d));
}

// ln g at sigma = u * sensitivity (g depends on sigma/sensitivity only).
double log_profile_unit(double epsilon, double u)
{
	return log_profile_term(0.5 / u - epsilon * u, -0.5 / u - epsilon * u, epsilon);
}

// Error for a calibration whose bracket search ran out of double range.
CoreError calibration_out_of_range()
{
	return CoreError(ErrorKind::DataException, "gaussian calibration is out of range",
	                 "Epsilon or delta is too extreme for double precision.");
}

// Floor of sqrt(q), exact for every 64-bit q.
std::uint64_t isqrt_floor(std::uint64_t q)
{
	std::uint64_t r = static_cast<std::uint64_t>(std::sqrt(static_cast<long double>(q)));
	while (static_cast<u128>(r) * r > q)
		--r;
	while (static_cast<u128>(r + 1) * (r + 1) <= q)
		++r;
	return r;
}

// CKS Algorithm 3 with sigma^2 = num/den and proposal DLap(t) (any integer t >= 1 gives the exact
// law; t = floor(sigma) + 1 keeps the expected number of rounds small). Y ~ DLap(t) is accepted with
// probability exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)) = exp(-(|Y| den t - num)^2 / (2 num den t^2)),
// which is proportional to exp(-Y^2 / (2 sigma^2)) / exp(-|Y|/t), so accepted Y follow N_Z(0, sigma^2).
std::int64_t discrete_gaussian_wide(RandomSource &rng, const BigInt &num, const BigInt &den, std::uint64_t t)
{
	const BigInt den_t = den * BigInt(t);
	const BigInt gamma_den = 2 * num * den * BigInt(t) * BigInt(t);
	for (;;) {
		const std::int64_t y = discrete_laplace(rng, Rational{t, 1});
		const std::uint64_t magnitude = y < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(y)
		                                      : static_cast<std::uint64_t>(y);
		const BigInt diff = BigInt(magnitude) * den_t - num;
		if (bernoulli_exp_minus_big(rng, diff * diff, gamma_den))
			return y;
	}
}

} // namespace

// Balle–Wang privacy profile of N(0, sigma^2) at epsilon (§2.2), exponentiated from log space.
double gaussian_privacy_profile(double sensitivity, double epsilon, double sigma)
{
	require_positive(sensitivity, "sensitivity must be positive and finite",
	                 "The sensitivity bounds how much one record can change the query answer.");
	if (!std::isfinite(epsilon) || !(epsilon >= 0.0))
		throw CoreError(ErrorKind::InvalidParameter, "epsilon must be non-negative and finite");
	require_positive(sigma, "noise standard deviation must be positive and finite",
	                 "The standard deviation comes from the Gaussian calibration.");
	return std::exp(log_profile_unit(epsilon, sigma / sensitivity));
}

// Halves a bracket [lo, hi] on which `ok` changes value once (ok(lo) == ok_at_lo, ok(hi) is the
// opposite) until its ends are adjacent doubles; returns the end where `ok` holds.
template <class Ok>
double
bisect_to_ok(const Ok &ok, double lo, double hi, bool ok_at_lo)
{
	for (int i = 0; i < kMaxBisectionSteps; ++i) {
		const double mid = lo + (hi - lo) / 2.0;
		if (!(mid > lo && mid < hi))
			break;
		if (ok(mid) == ok_at_lo)
			lo = mid;
		else
			hi = mid;
	}
	return ok_at_lo ? lo : hi;
}

// Brackets the change of `ok` on [0, inf) from [0, 1], doubling hi while ok(hi) == ok_at_zero;
// sets lo and hi. Throws when no change is found below 1e300.
template <class Ok>
void
bracket_from_zero(const Ok &ok, bool ok_at_zero, double &lo, double &hi)
{
	lo = 0.0;
	hi = 1.0;
	while (ok(hi) == ok_at_zero) {
		lo = hi;
		hi *= 2.0;
		if (hi > 1e300)
			throw calibration_out_of_range();
	}
}

// Bisection on u = sigma/sensitivity: bracket [lo, hi] with g(lo) > delta >= g(hi), halved until the
// two ends are adjacent doubles; hi is returned.
double analytic_gaussian_sigma(double sensitivity, double epsilon, double delta)
{
	validate_calibration(sensitivity, epsilon, delta);
	const double target = std::log(delta);
	double hi = 1.0;
	while (log_profile_unit(epsilon, hi) > target) {
		hi *= 2.0;
		if (hi > 1e300)
			throw calibration_out_of_range();
	}
	double lo = hi / 2.0;
	while (!(log_profile_unit(epsilon, lo) > target)) {
		hi = lo;
		lo /= 2.0;
		if (lo < 1e-300)
			throw calibration_out_of_range();
	}
	const auto ok = [epsilon, target](double u) { return log_profile_unit(epsilon, u) <= target; };
	return bisect_to_ok(ok, lo, hi, false) * sensitivity;
}

// Balle–Wang Algorithm 1: compare delta with delta_0 = g at alpha = 1, then solve B+(v) = delta
// (alpha = sqrt(1+v/2) - sqrt(v/2)) or B-(u) = delta (alpha = sqrt(1+u/2) + sqrt(u/2)) by bisection;
// sigma = alpha * sensitivity / sqrt(2 epsilon).
double analytic_gaussian_sigma_bw(double sensitivity, double epsilon, double delta)
{
	validate_calibration(sensitivity, epsilon, delta);
	const double target = std::log(delta);
	const double log_delta0 = log_profile_term(0.0, -std::sqrt(2.0 * epsilon), epsilon);
	double alpha;
	if (target >= log_delta0) {
		// B+(v) = Phi(sqrt(eps v)) - e^eps Phi(-sqrt(eps (v + 2))) increases from delta_0 to 1;
		// v* = sup{v >= 0 : B+(v) <= delta}; keep the lower end (larger alpha, more noise).
		const auto log_b_plus = [epsilon](double v) {
			return log_profile_term(std::sqrt(epsilon * v), -std::sqrt(epsilon * (v + 2.0)), epsilon);
		};
		const auto ok = [&](double v) { return log_b_plus(v) <= target; };
		double lo, hi;
		bracket_from_zero(ok, true, lo, hi);
		lo = bisect_to_ok(ok, lo, hi, true);
		// sqrt(1 + v/2) - sqrt(v/2) without cancellation.
		alpha = 1.0 / (std::sqrt(1.0 + lo / 2.0) + std::sqrt(lo / 2.0));
	} else {
		// B-(u) = Phi(-sqrt(eps u)) - e^eps Phi(-sqrt(eps (u + 2))) decreases from delta_0 to 0;
		// u* = inf{u >= 0 : B-(u) <= delta}; keep the upper end.
		const auto log_b_minus = [epsilon](double u) {
			return log_profile_term(-std::sqrt(epsilon * u), -std::sqrt(epsilon * (u + 2.0)), epsilon);
		};
		const auto ok = [&](double u) { return log_b_minus(u) <= target; };
		double lo, hi;
		bracket_from_zero(ok, false, lo, hi);
		hi = bisect_to_ok(ok, lo, hi, false);
		alpha = std::sqrt(1.0 + hi / 2.0) + std::sqrt(hi / 2.0);
	}
	return alpha * sensitivity / std::sqrt(2.0 * epsilon);
}

// Dwork–Roth Theorem A.1 calibration, valid for epsilon < 1 only.
double classical_gaussian_sigma(double sensitivity, double epsilon, double delta)
{
	validate_calibration(sensitivity, epsilon, delta);
	if (!(epsilon < 1.0))
		throw CoreError(ErrorKind::InvalidParameter, "classical gaussian calibration requires epsilon below 1",
		                "Use the analytic Gaussian calibration for epsilon >= 1.");
	return std::sqrt(2.0 * std::log(1.25 / delta)) * sensitivity / epsilon;
}

// Exact discrete Gaussian with rational variance num/den; t = floor(sqrt(num/den)) + 1.
std::int64_t discrete_gaussian(RandomSource &rng, Rational sigma2)
{
	if (sigma2.num == 0 || sigma2.den == 0)
		throw CoreError(ErrorKind::InvalidParameter, "discrete gaussian variance must be a positive rational",
		                "Pass sigma^2 as num/den with num >= 1 and den >= 1.");
	const std::uint64_t t = isqrt_floor(sigma2.num / sigma2.den) + 1;
	return discrete_gaussian_wide(rng, BigInt(sigma2.num), BigInt(sigma2.den), t);
}

// grid * N_Z(0, s^2) with s = num/den = rational_at_least(sigma/grid), so s^2 = num^2/den^2 exactly
// (wide integers) and floor(s) = num / den.
std::int64_t gaussian_grid_steps(RandomSource &rng, double sigma, double grid)
{
	if (!std::isfinite(sigma) || !(sigma > 0.0))
		throw CoreError(ErrorKind::InvalidParameter, "noise standard deviation must be positive and finite");
	validate_grid(grid);
	const Rational s = scale_in_grid_units(sigma, grid);
	const BigInt num(s.num), den(s.den);
	const std::uint64_t t = s.num / s.den + 1;
	return discrete_gaussian_wide(rng, num * num, den * den, t);
}

// grid * gaussian_grid_steps.
double gaussian_on_grid(RandomSource &rng, double sigma, double grid)
{
	const double noise = grid * static_cast<double>(gaussian_grid_steps(rng, sigma, grid));
	if (!std::isfinite(noise))
		throw CoreError(ErrorKind::DataException, "noise sample is out of range",
		                "Use a smaller noise scale or a coarser output grid.");
	return noise;
}

namespace {

// ln of the CKS Corollary 13 objective at alpha > 1.
double log_cdp_objective(double rho, double epsilon, double alpha)
{
	return (alpha - 1.0) * (alpha * rho - epsilon) + alpha * std::log1p(-1.0 / alpha) - std::log(alpha - 1.0);
}

} // namespace

// CKS Corollary 13, minimised over alpha by bisection on the (increasing) derivative.
double cdp_delta(double rho, double epsilon)
{
	if (!std::isfinite(rho) || !(rho >= 0.0) || !std::isfinite(epsilon) || !(epsilon >= 0.0))
		throw CoreError(ErrorKind::InvalidParameter, "rho and epsilon must be non-negative and finite");
	if (rho == 0.0)
		return 0.0;
	// derivative (2 alpha - 1) rho - epsilon + ln(1 - 1/alpha): -> -inf at alpha -> 1+, +inf at infinity
	const auto descending = [&](double alpha) {
		return (2.0 * alpha - 1.0) * rho - epsilon + std::log1p(-1.0 / alpha) < 0.0;
	};
	double hi = 2.0;
	while (descending(hi) && hi < 1e300)
		hi *= 2.0;
	// the last alpha where the objective descends and the next double bracket the minimiser; any
	// alpha > 1 gives a valid bound, so the better of the two is taken
	const double alpha = bisect_to_ok(descending, 1.0, hi, true);
	double best = log_cdp_objective(rho, epsilon, std::nextafter(alpha, hi));
	if (alpha > 1.0)
		best = std::min(best, log_cdp_objective(rho, epsilon, alpha));
	const double delta = std::exp(best) * (1.0 + 1e-12);
	return std::isfinite(delta) ? std::min(delta, 1.0) : 1.0;
}

// Bisection on rho (cdp_delta increases with rho); returns the largest rho found with
// cdp_delta <= delta (the lower end of the final bracket).
double zcdp_rho_for(double epsilon, double delta)
{
	validate_privacy_target(epsilon, delta);
	const auto ok = [&](double rho) { return cdp_delta(rho, epsilon) <= delta; };
	double lo, hi;
	bracket_from_zero(ok, true, lo, hi);
	return bisect_to_ok(ok, lo, hi, true);
}

} // namespace dxpriv
