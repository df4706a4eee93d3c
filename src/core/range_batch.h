// The grid points of a batch of one range column's values, computed together in a tight loop (the
// one-pass transition buffers a row's value instead of indexing it at once): for each value, exactly
// the index that range_index / range_index_recip give it one at a time.
#pragma once

#include "core/range_index.h"

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace dxpriv {

// A range column's grid as the per-row lookups hold it (executor/row_point.h): lo and step of the
// domain, inv_step (1 / step when both are powers of two, else 0), recip (range_recip(step, size):
// range_index_recip serves the grid when != 0), last (size - 1 as a double) and the size.
struct RangeGrid {
	double lo = 0, step = 1, inv_step = 0, recip = 0, last = 0;
	std::size_t size = 1;

	// The index of value (NaN: 0), as the per-row lookups compute it.
	[[gnu::always_inline]] std::size_t index(double value) const
	{
		return recip != 0 ? range_index_recip(value, lo, step, recip, last, size)
		                  : range_index(value, lo, step, inv_step, size);
	}
};

// Calls f(index) for the values v[0..n), in order, with index = grid.index(v[i]). The values do not
// depend on each other, so the processor overlaps their arithmetic (a row at a time, each index
// waited for the one before it through the rest of the row's work).
template <typename F>
inline void
for_each_range_index(const RangeGrid &grid, const double *v, std::size_t n, F &&f)
{
	if (grid.recip != 0) {
		for (std::size_t i = 0; i < n; ++i)
			f(range_index_recip(v[i], grid.lo, grid.step, grid.recip, grid.last, grid.size));
	} else {
		for (std::size_t i = 0; i < n; ++i)
			f(range_index(v[i], grid.lo, grid.step, grid.inv_step, grid.size));
	}
}

// The index of an integer value on a grid of step 1 starting at the integer lo (|lo| < 2^52):
// value - lo clamped to [0, size - 1], which is range_index's index of the value (the quotient is
// exact and an integer there). The one-pass transition stores a NULL as lo (index 0).
[[gnu::always_inline]] inline std::size_t
unit_int_index(std::int64_t value, std::int64_t lo, std::size_t size)
{
	const std::int64_t d = value - lo;
	return d <= 0 ? 0 : static_cast<std::uint64_t>(d) >= size - 1 ? size - 1 : static_cast<std::size_t>(d);
}

// Calls f(unit_int_index(v[i], lo, size)) for the values v[0..n), in order.
template <typename F>
inline void
for_each_unit_int_index(std::int64_t lo, std::size_t size, const std::int64_t *v, std::size_t n, F &&f)
{
	for (std::size_t i = 0; i < n; ++i)
		f(unit_int_index(v[i], lo, size));
}

} // namespace dxpriv
