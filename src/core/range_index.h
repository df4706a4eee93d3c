// The index of a value on a range domain's grid (Domain::index_of of a Range), inline for the
// per-row lookups: the reference arithmetic (a division, then rounding half away from zero), and a
// faster one (a multiplication by the reciprocal) that is proven to give the same index, with the
// reference as its fallback near a rounding boundary.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace dxpriv {

// Domain::index_of for a range domain (lo finite, step > 0, size >= 1): the same arithmetic in the
// same order, so the same index (NaN: the default index 0). inv_step: 1 / step when step is a power
// of two (x * 2^-k rounds the exact quotient once, as x / 2^k does: the same double), else 0.
// Below 2^52 the quotient's rounding half away from zero (std::round, a library call) is its integer
// part plus one when its fraction is at least 0.5: both are exact there.
[[gnu::always_inline]] inline std::size_t
range_index(double value, double lo, double step, double inv_step, std::size_t size)
{
	if (std::isnan(value))
		return 0;
	const double x = inv_step != 0 ? (value - lo) * inv_step : (value - lo) / step;
	if (!(x > 0))
		return 0;
	const double last = static_cast<double>(size - 1);
	if (x >= last)
		return size - 1;
	std::size_t r;
	if (x < 4503599627370496.0) {
		const std::uint64_t t = static_cast<std::uint64_t>(x);
		r = static_cast<std::size_t>(t + (x - static_cast<double>(t) >= 0.5 ? 1 : 0));
	} else {
		r = static_cast<std::size_t>(std::round(x));
	}
	return r < size - 1 ? r : size - 1;
}

// The largest grid (size - 1) that range_index_recip serves: below it the margins of the proof hold
// with room to spare (4u * last < 0.5 needs last < 2^50; 1 - y * 2^-49 > 0 needs y < 2^49).
constexpr double kRecipMaxLast = 1099511627776.0; // 2^40

// The reciprocal of step for range_index_recip (a finite normal double), or 0 when the grid is not
// served (step not a positive normal double, 1 / step not normal, more than 2^40 + 1 points): the
// caller then uses range_index.
inline double
range_recip(double step, std::size_t size)
{
	if (!(step >= 0x1p-1022) || !std::isfinite(step) || size < 1 || static_cast<double>(size - 1) >= kRecipMaxLast)
		return 0.0;
	const double r = 1.0 / step;
	return r >= 0x1p-1022 && std::isfinite(r) ? r : 0.0;
}

// range_index(value, lo, step, inv_step, size), computed with y = (value - lo) * recip instead of the
// quotient x = (value - lo) / step, and exactly equal to it: recip = range_recip(step, size) != 0,
// last = size - 1 as a double. The index only waits for a subtraction, a multiplication, an addition
// and a conversion; the check that y is far from a rounding boundary is a branch taken almost never.
//
// Proof. Let u = 2^-53, d = value - lo (computed once, shared by both), Q = d / step exactly. The
// reference index is F(x) = clamp(floor(x + 1/2), 0, last) of x = fl(Q) (for 0 < x < last, round
// half away from zero is floor(x + 1/2), and F(x) <= last there; x <= 0 gives 0 and x >= last gives
// last, as F does; NaN only when value is NaN, then every comparison below fails and the reference
// runs). F is non-decreasing and changes only at the half-integers k + 1/2. With recip = (1/step)(1+b),
// x = Q(1+a), y = fl(d * recip) = Q(1+b)(1+c), |a|, |b|, |c| <= u when the results are normal, so
// |x - y| <= |Q|(3u + u^2) <= |y|(3u + u^2)/(1-u)^2 < 4u|y|. (Results below 2^-1022 in magnitude: then
// |x|, |y| < 1/4 and both indexes are 0 through the second case. Overflow: y = +Inf or y >= last means
// Q > last/(1+4u), x is +Inf or >= last(1-4u), both last through the third case.) The cases:
// * 0.5 <= y < last: k = floor(y + 1/2) exactly (z = fl(y + 1/2) may round, but not across an integer:
//   for y in [2^e, 2^(e+1)), e <= 39, 1/2 is a multiple of ulp(y), so y + 1/2 is exact below 2^(e+1)
//   and rounds to at least 2^(e+1) and below 2^(e+1) + 1 above it; y in [0.5, 1): z in [1, 1.5]);
//   k >= 1, and z - k is exact (Sterbenz: k <= z < k + 1 <= 2k). f = z - k = y + 1/2 - k + e1 with
//   |e1| <= u(y + 1/2) <= 2u y. The check f > m and f < fl(1 - m), m = y * 2^-49 = 16u y (exact),
//   gives y - (k - 1/2) > 16uy - 2uy and (k + 1/2) - y > 16uy - 2uy - u >= 12uy, both > 4u y: no
//   half-integer lies between x and y, so F(x) = F(y) = k (x > k - 1/2 >= 1/2; and x < k + 1/2, so
//   either k < last and x < last, or k = last = F(x)).
// * y < 1/2 - 2^-40 (y may be -Inf): x <= y(1 + 4u) < 1/2 when y >= 0, x <= 0 when y <= 0 (x and y
//   have d's sign), so F(x) = 0.
// * y >= last: x >= y(1 - 4u) >= last - 4u last > last - 1/2 (last < 2^40), so F(x) = last.
// * otherwise (y within 2^-40 below 1/2, near a half-integer, or NaN): the reference itself.
// GoogleTest RangeIndex.* compares it with Domain::index_of over millions of values.
[[gnu::always_inline]] inline std::size_t
range_index_recip(double value, double lo, double step, double recip, double last, std::size_t size)
{
	const double y = (value - lo) * recip;
	if (y >= 0.5 && y < last) {
		const double z = y + 0.5;
		const std::uint64_t k = static_cast<std::uint64_t>(static_cast<std::int64_t>(z));
		const double f = z - static_cast<double>(static_cast<std::int64_t>(k));
		const double m = y * 0x1p-49;
		if (__builtin_expect(f > m && f < 1.0 - m, 1))
			return static_cast<std::size_t>(k);
	} else if (y < 0.5 - 0x1p-40) {
		return 0;
	} else if (y >= last) {
		return size - 1;
	}
	return range_index(value, lo, step, 0.0, size);
}

// An integral grid over integer values: lo and step integers (1 <= step <= 2^31, |lo| <= 2^40) and at
// most 2^31 + 1 points. int_grid_index gives an int2/int4 value's index on it by integer arithmetic,
// without the floating-point chain of range_index_recip (the Citus workers' dx._weigh_units over an
// integer column declared in steps of 100, say).
struct IntGrid {
	std::int64_t lo = 0;
	std::uint64_t step = 0; // 0: the grid is not integral (int_grid_of returned false)
	std::uint64_t last = 0; // size - 1
	double recip = 0;       // 1.0 / step, rounded
};

// The IntGrid of a range domain (lo, step and size as Domain gives them), or false when it is not one.
inline bool
int_grid_of(double lo, double step, std::size_t size, IntGrid &g)
{
	g = IntGrid{};
	if (!(step >= 1 && step <= 2147483648.0 && std::floor(step) == step && std::fabs(lo) <= 1099511627776.0 &&
	      std::floor(lo) == lo && size >= 1 && size - 1 <= 2147483648ULL))
		return false;
	g.lo = static_cast<std::int64_t>(lo);
	g.step = static_cast<std::uint64_t>(step);
	g.last = size - 1;
	g.recip = 1.0 / step;
	return true;
}

// range_index(value, lo, step, inv_step, size) of an integer |value| <= 2^31 on an IntGrid, exactly.
//
// Proof. d = value - lo is an integer with |d| < 2^41 + 2^31 < 2^52, so range_index computes it exactly
// (each operand and the difference are integers below 2^53) and then x = fl(Q) of Q = d / step
// (x = d * 2^-k exactly when step = 2^k). d <= 0: x <= 0, index 0, as here. d > 0: Q = q + r/step with
// q = floor(Q), 0 <= r < step. range_index's index is clamp(floor(x + 1/2), 0, last) (x < last < 2^52:
// its integer part plus one when the fraction is at least 1/2, exact below 2^52). It equals
// clamp(floor(Q + 1/2), 0, last), this function's q + [2r >= step] clamped:
// * floor(. + 1/2) changes only at the half-integers h = k + 1/2. If Q = h, x = Q (h is a multiple of
//   1/2 below 2^52: representable). Otherwise |Q - h| = |2r - step| / (2 step) >= 1 / (2 step), and
//   |x - Q| <= Q 2^-53 = d 2^-53 / step < 2^52 2^-53 / step = 1 / (2 step): x lies on Q's side of
//   every h, so floor(x + 1/2) = floor(Q + 1/2).
// * The clamps agree too: both are monotone in their argument and the clamped values are integers.
// The quotient: the product p = fl(d * recip) (d exact) is Q(1 + e) with |e| < 2^-52 + 2^-106, so
// p - Q < 2^42 2^-51.9 / step < 1 / step <= q + 1 - Q and trunc(p) <= q; trunc(p) < q needs
// r / step = Q - q < Q 2^-51.9, r < d 2^-51.9 < 1: r = 0. So trunc(p) is q, or q - 1 when Q = q is an
// integer, and then r = d - (q - 1) step = step, which the half rule turns into q - 1 + 1 = q, the index.
// GoogleTest RangeIndex.IntGrid* compares the index with Domain::index_of (step 49 reaches q - 1).
[[gnu::always_inline]] inline std::size_t
int_grid_index(std::int64_t value, const IntGrid &g)
{
	const std::int64_t d = value - g.lo;
	if (d <= 0)
		return 0;
	const std::uint64_t ud = static_cast<std::uint64_t>(d);
	std::uint64_t q = static_cast<std::uint64_t>(static_cast<double>(ud) * g.recip); // q, or q - 1 with r = step
	const std::uint64_t r = ud - q * g.step;
	q += 2 * r >= g.step ? 1 : 0;
	return q < g.last ? static_cast<std::size_t>(q) : static_cast<std::size_t>(g.last);
}

} // namespace dxpriv
