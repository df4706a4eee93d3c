// Gaussian noise for (epsilon, delta)-DP: analytic (Balle–Wang 2018) and classical (Dwork–Roth)
// calibration, and the exact discrete Gaussian sampler of Canonne, Kamath and Steinke (2020).
// MECHANISMS.md §2.2, §2.3, §5.6.
//
// Why the sampler is hand-written: a floating-point Gaussian (Box–Muller, ziggurat, inverse CDF)
// has gaps and biased low-order bits that reveal the unnoised value (Mironov 2012), and its law is
// not the one the privacy proof is about. The discrete Gaussian below is sampled with uniform
// integers and exact rational comparisons only (CKS Algorithm 3 on top of the exact discrete
// Laplace of samplers.h), so the released law is exactly N_Z(0, sigma^2) for the rational sigma^2
// used, and sigma^2 is always rounded up (more noise, never less).
#pragma once

#include <cstdint>

#include "core/random.h"
#include "core/samplers.h"

namespace dxpriv {

// Privacy profile of the Gaussian mechanism f(D) + N(0, sigma^2) at epsilon (Balle–Wang Thm 8):
// g(sigma) = Phi(D/(2 sigma) - eps sigma/D) - e^eps Phi(-D/(2 sigma) - eps sigma/D), D = sensitivity.
// Computed in log space (accurate far into the tails). sensitivity, sigma > 0, epsilon >= 0, finite;
// CoreError(InvalidParameter) otherwise.
double gaussian_privacy_profile(double sensitivity, double epsilon, double sigma);

// Smallest sigma with gaussian_privacy_profile(sensitivity, epsilon, sigma) <= delta (the analytic
// Gaussian), by bisection on g (§2.2) to full double precision; the upper end of the final bracket
// is returned, so the result never under-calibrates by more than g's own rounding.
// sensitivity > 0, epsilon > 0 finite, delta in (0, 1); CoreError(InvalidParameter) otherwise.
double analytic_gaussian_sigma(double sensitivity, double epsilon, double delta);

// The same sigma through Balle–Wang Algorithm 1 (the sqrt(1 + v/2) -/+ sqrt(v/2) substitution);
// kept as an independent cross-check of analytic_gaussian_sigma. Same contract.
double analytic_gaussian_sigma_bw(double sensitivity, double epsilon, double delta);

// Classical calibration sigma = sqrt(2 ln(1.25/delta)) * sensitivity / epsilon (Dwork–Roth Thm A.1).
// Its proof needs epsilon < 1: epsilon >= 1 is rejected (use analytic_gaussian_sigma instead).
// sensitivity > 0 finite, epsilon in (0, 1), delta in (0, 1); CoreError(InvalidParameter) otherwise.
double classical_gaussian_sigma(double sensitivity, double epsilon, double delta);

// Exact discrete Gaussian on the integers: P(Z = z) ∝ exp(-z^2 / (2 sigma2)), sigma2 = num/den
// (CKS 2020 Algorithm 3). Requires num >= 1 and den >= 1 (CoreError(InvalidParameter) otherwise).
// Callers holding a double should round it up with rational_at_least.
std::int64_t discrete_gaussian(RandomSource &rng, Rational sigma2);

// (epsilon, delta) from rho-zCDP, per pair of neighbouring inputs (Canonne–Kamath–Steinke 2020,
// Corollary 13): if D_alpha(P||Q) <= alpha * rho for every alpha > 1 (both directions), then P and Q
// are (epsilon, delta)-indistinguishable with
//   delta = inf_{alpha > 1} exp((alpha - 1)(alpha rho - epsilon)) / (alpha - 1) * (1 - 1/alpha)^alpha.
// This is the accounting of the discrete Gaussian (CKS Theorem 4/14: sum_k Delta_k^2 / (2 sigma_k^2)
// zCDP for integer shifts Delta, exactly the continuous Gaussian's Renyi divergence), whose own
// (epsilon, delta) curve is not the analytic Gaussian's. The minimiser is found by bisection on the
// derivative (2 alpha - 1) rho - epsilon + ln(1 - 1/alpha), which increases in alpha; the value is
// rounded up by a relative 1e-12 and capped at 1. rho >= 0 and epsilon >= 0 finite
// (CoreError(InvalidParameter)); rho == 0 gives 0.
double cdp_delta(double rho, double epsilon);

// Largest rho (to a relative 1e-12, rounded down) with cdp_delta(rho, epsilon) <= delta: the zCDP
// level a Gaussian may have to be (epsilon, delta)-DP by cdp_delta. epsilon > 0 finite, delta in
// (0, 1); CoreError(InvalidParameter) otherwise.
double zcdp_rho_for(double epsilon, double delta);

// The integer Z of gaussian_on_grid (noise = grid * Z): Z ~ N_Z(0, s^2), s = rational_at_least(sigma /
// grid). Same contract as gaussian_on_grid.
std::int64_t gaussian_grid_steps(RandomSource &rng, double sigma, double grid);

// Gaussian noise of standard deviation about `sigma` on the grid `grid`·Z: grid * N_Z(0, s^2) with
// s = rational_at_least(sigma / grid) >= sigma / grid (so the variance is never below the request).
// sigma > 0 finite, grid > 0 a power of two (CoreError(InvalidParameter)); sigma/grid <= 2^43
// (CoreError(ProgramLimit)).
double gaussian_on_grid(RandomSource &rng, double sigma, double grid);

} // namespace dxpriv
