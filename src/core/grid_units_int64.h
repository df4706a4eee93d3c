// A row's weight in grid units as an int64, with grid 1 computed inline (the Citus workers' hot path
// of dx._units and dx._weigh_units): the PostgreSQL-free part of pg/executor/grid_units.h.
#pragma once

#include "core/linear_query.h"

#include <cmath>
#include <cstdint>
#include <limits>

namespace dxpriv {

// What grid_units_int64 found.
enum class GridUnitsStatus {
	Ok,         // *out holds the units
	BadGrid,    // grid is not a positive finite number
	OutOfRange, // the units lie beyond int64 (to_grid_units itself refuses |w/grid| >= 2^100, NaN, inf)
};

// to_grid_units(w, grid) as an int64. The grid of 1 is computed inline with to_grid_units' own
// arithmetic (w / 1 is w; t = trunc(w) and w - t are exact below 4e18, so halves round away from
// zero as std::round does), without the division, the call or the __int128; every other case goes
// through to_grid_units (which throws CoreError for NaN, infinities and |w/grid| >= 2^100).
// test/unit/grid_units_test.cpp checks the inline path against to_grid_units and std::round.
inline GridUnitsStatus
grid_units_int64(double w, double grid, std::int64_t *out)
{
	if (grid == 1.0 && std::fabs(w) < 4.0e18) {
		std::int64_t t = static_cast<std::int64_t>(w);
		const double frac = w - static_cast<double>(t);
		if (frac >= 0.5)
			++t;
		else if (frac <= -0.5)
			--t;
		*out = t;
		return GridUnitsStatus::Ok;
	}
	if (!(grid > 0) || !std::isfinite(grid))
		return GridUnitsStatus::BadGrid;
	const __int128 u = to_grid_units(w, grid);
	if (u > std::numeric_limits<std::int64_t>::max() || u < std::numeric_limits<std::int64_t>::min())
		return GridUnitsStatus::OutOfRange;
	*out = static_cast<std::int64_t>(u);
	return GridUnitsStatus::Ok;
}

} // namespace dxpriv
