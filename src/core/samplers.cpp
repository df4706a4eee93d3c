// Exact noise samplers after Canonne, Kamath and Steinke, "The Discrete Gaussian for Differential
// Privacy" (NeurIPS 2020), Algorithms 1 and 2. Only uniform integers and exact integer comparisons
// are used; floating point appears only in the conversions at the API edge (rational_at_least,
// laplace_on_grid), where every operation is exact or rounds towards more noise.
#include "core/samplers.h"

#include <cfloat>
#include <cmath>
#include <cstdint>

#include "core/error.h"

namespace dxpriv {

namespace {

using u128 = unsigned __int128;

constexpr std::uint64_t kScaleDenominator = std::uint64_t{1} << 20;
constexpr double kMaxRationalScale = 8796093022208.0; // 2^43, so that num = x * 2^20 <= 2^63

// Bernoulli(exp(-num/den)) for num <= den (CKS Algorithm 1, gamma in [0,1]): count K while
// Bernoulli(gamma/K) succeeds; the parity of the stopping K has P(K odd) = exp(-gamma).
bool bernoulli_exp_minus_unit(RandomSource &rng, std::uint64_t num, std::uint64_t den)
{
	std::uint64_t k = 1;
	for (;;) {
		// Bernoulli(num / (den * k)); den * k < 2^128 because k stays far below 2^64.
		const u128 range = static_cast<u128>(den) * k;
		if (!(rng.uniform_below(range) < static_cast<u128>(num)))
			break;
		++k;
	}
	return (k % 2) == 1;
}

} // namespace

// Smallest m / 2^20 >= x: x * 2^20 is exact in binary floating point, so std::ceil is exact too.
Rational rational_at_least(double x)
{
	if (std::isnan(x) || x <= 0.0)
		throw CoreError(ErrorKind::InvalidParameter, "noise scale must be positive",
		                "The scale is derived from the privacy budget and the sensitivity.");
	if (!std::isfinite(x) || x > kMaxRationalScale)
		throw CoreError(ErrorKind::ProgramLimit, "noise scale is too large",
		                "Noise scales above 2^43 units of the output grid are not supported.");
	const double scaled = std::ceil(std::ldexp(x, 20)); // in [1, 2^63], an integer
	return Rational{static_cast<std::uint64_t>(scaled), kScaleDenominator};
}

// Bernoulli(num/den) as one uniform draw in [0, den) compared with num.
bool bernoulli_rational(RandomSource &rng, std::uint64_t num, std::uint64_t den)
{
	if (den == 0 || num > den)
		throw CoreError(ErrorKind::Internal, "invalid bernoulli parameter");
	return rng.uniform_below(den) < num;
}

// Bernoulli(exp(-num/den)); for gamma > 1 it is the AND of floor(gamma) Bernoulli(exp(-1)) trials
// and one Bernoulli(exp(-(gamma - floor(gamma)))) trial (CKS Algorithm 1).
bool bernoulli_exp_minus(RandomSource &rng, std::uint64_t num, std::uint64_t den)
{
	if (den == 0)
		throw CoreError(ErrorKind::Internal, "invalid bernoulli parameter");
	if (num <= den)
		return bernoulli_exp_minus_unit(rng, num, den);
	const std::uint64_t whole = num / den;
	for (std::uint64_t i = 0; i < whole; ++i) {
		if (!bernoulli_exp_minus_unit(rng, 1, 1))
			return false;
	}
	return bernoulli_exp_minus_unit(rng, num % den, den);
}

// Discrete Laplace with P(Z=z) ∝ exp(-|z| * den/num) (CKS Algorithm 2 with t = num, s = den):
// X = U + t*V is geometric with ratio exp(-1/t), floor(X/s) is geometric with ratio exp(-s/t),
// and a random sign (rejecting "-0") makes it two-sided.
std::int64_t discrete_laplace(RandomSource &rng, Rational scale)
{
	if (scale.num == 0 || scale.den == 0)
		throw CoreError(ErrorKind::Internal, "invalid discrete laplace scale");
	const std::uint64_t t = scale.num;
	const std::uint64_t s = scale.den;
	for (;;) {
		const std::uint64_t u = rng.uniform_below(t);
		if (!bernoulli_exp_minus(rng, u, t))
			continue;
		std::uint64_t v = 0;
		while (bernoulli_exp_minus(rng, 1, 1))
			++v;
		// t, u, v < 2^64, so u + t*v <= (2^64-1)^2 + 2^64 - 1 < 2^128: no overflow.
		const u128 x = static_cast<u128>(u) + static_cast<u128>(t) * v;
		const u128 y = x / s;
		const bool negative = bernoulli_rational(rng, 1, 2);
		if (negative && y == 0)
			continue;
		if (y > static_cast<u128>(INT64_MAX))
			throw CoreError(ErrorKind::DataException, "noise sample is out of range",
			                "Use a smaller noise scale or a coarser output grid.");
		const std::int64_t magnitude = static_cast<std::int64_t>(y);
		return negative ? -magnitude : magnitude;
	}
}

// See samplers.h.
void
validate_grid(double grid)
{
	int exponent = 0;
	if (!std::isfinite(grid) || !(grid > 0.0) || std::frexp(grid, &exponent) != 0.5)
		throw CoreError(ErrorKind::InvalidParameter, "output grid must be a positive power of two");
}

// See samplers.h. Dividing by a power of two is exact unless the quotient is subnormal; every
// quotient below 2^-20 (including a rounded or underflowed one) rounds up to exactly 1/2^20 anyway.
Rational
scale_in_grid_units(double scale, double grid)
{
	const double units = scale / grid;
	return units < DBL_MIN ? Rational{1, kScaleDenominator} : rational_at_least(units);
}

// grid * DLap(scale/grid), with the scale in grid units rounded up to a multiple of 2^-20.
double laplace_on_grid(RandomSource &rng, double scale, double grid)
{
	if (!std::isfinite(scale) || !(scale > 0.0))
		throw CoreError(ErrorKind::InvalidParameter, "noise scale must be positive and finite");
	validate_grid(grid);
	const std::int64_t steps = discrete_laplace(rng, scale_in_grid_units(scale, grid));
	const double noise = grid * static_cast<double>(steps);
	if (!std::isfinite(noise))
		throw CoreError(ErrorKind::DataException, "noise sample is out of range",
		                "Use a smaller noise scale or a coarser output grid.");
	return noise;
}

} // namespace dxpriv
