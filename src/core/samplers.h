// Exact noise samplers (integer arithmetic only): Bernoulli, discrete Laplace, grid Laplace.
//
// Why hand-written: floating-point inverse-CDF samplers leak through their low-order bits
// (Mironov 2012); the Canonne–Kamath–Steinke samplers below use only uniform integers, so the
// sampled law is exactly the one the privacy proof assumes.
#pragma once

#include <cstdint>

#include "core/random.h"

namespace dxpriv {

// A non-negative rational num/den (den >= 1). Scales passed to discrete_laplace need num >= 1.
struct Rational {
	std::uint64_t num;
	std::uint64_t den;
};

// Smallest rational with denominator 2^20 that is >= x (x > 0 finite, x <= 2^43). Rounding up a
// noise scale only adds noise, so privacy is preserved. Throws CoreError(InvalidParameter) for
// x <= 0 or NaN and CoreError(ProgramLimit) above 2^43 or for +inf. Sampler arithmetic is done in
// 128 bits, so any 64-bit num/den is safe.
Rational rational_at_least(double x);

// Raises CoreError(InvalidParameter) unless grid is a positive, finite power of two.
void validate_grid(double grid);
// A noise scale in units of a power-of-two grid as an exact rational, rounded up to a multiple of
// 2^-20 (rational_at_least; quotients below 2^-20, even subnormal ones, become exactly 2^-20).
Rational scale_in_grid_units(double scale, double grid);

// Bernoulli(num/den); requires num <= den, den >= 1.
bool bernoulli_rational(RandomSource &rng, std::uint64_t num, std::uint64_t den);
// Bernoulli(exp(-num/den)); requires den >= 1 (CKS Algorithm 1).
bool bernoulli_exp_minus(RandomSource &rng, std::uint64_t num, std::uint64_t den);
// Discrete Laplace on the integers with scale t = num/den: P(Z=z) ∝ exp(-|z|/t) (CKS Algorithm 2).
// Requires num >= 1, den >= 1 (CoreError(Internal) otherwise); DataException if |Z| > INT64_MAX.
std::int64_t discrete_laplace(RandomSource &rng, Rational scale);

// Laplace noise of scale `scale` restricted to the grid `grid`·Z: grid * DLap(scale/grid), with the
// scale in grid units rounded up by rational_at_least. scale > 0, grid > 0 a power of two.
double laplace_on_grid(RandomSource &rng, double scale, double grid);

} // namespace dxpriv
