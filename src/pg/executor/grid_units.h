// A row's weight in grid units as a bigint, as dx._units and dx._weigh_units give it to the
// workers' native sum(bigint) (the same rounding as the partial states, core/linear_query.h).
#pragma once

#include "pg/guard.h"

#include "core/linear_query.h"

extern "C" {
#include "postgres.h"
}

#include <cmath>
#include <limits>

namespace dxpriv::pg {

// to_grid_units(w, grid) as a bigint; refuses a grid that is not a positive finite number and a
// weight beyond bigint. The grid of 1 is computed inline with to_grid_units' own arithmetic
// (w / 1 is w; rounding half away from zero on an exact fraction): the same units.
inline int64
weight_grid_units(double w, double grid)
{
	if (grid == 1.0 && std::fabs(w) < 4.0e18) {
		int64 t = static_cast<int64>(w);
		const double frac = w - static_cast<double>(t);
		if (frac >= 0.5)
			++t;
		else if (frac <= -0.5)
			--t;
		return t;
	}
	if (!(grid > 0) || !std::isfinite(grid))
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "dxpriv grid must be a positive number",
		     "dx._units is placed by the dxpriv analyzer with the grid of a release's noise plan.");
	const __int128 u = to_grid_units(w, grid);
	if (u > std::numeric_limits<int64>::max() || u < std::numeric_limits<int64>::min())
		fail(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE, "a weight of this distributed dx aggregate is too large",
		     "Narrow the domain of the aggregated column.");
	return static_cast<int64>(u);
}

} // namespace dxpriv::pg
