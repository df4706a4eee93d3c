// A row's weight in grid units as a bigint, as dx._units and dx._weigh_units give it to the
// workers' native sum(bigint) (the same rounding as the partial states, core/linear_query.h).
#pragma once

#include "pg/guard.h"

#include "core/grid_units_int64.h"

extern "C" {
#include "postgres.h"
}

namespace dxpriv::pg {

// to_grid_units(w, grid) as a bigint (core/grid_units_int64.h: grid 1 inline); refuses a grid that
// is not a positive finite number and a weight beyond bigint.
inline int64
weight_grid_units(double w, double grid)
{
	std::int64_t units = 0;
	switch (grid_units_int64(w, grid, &units)) {
	case GridUnitsStatus::Ok:
		break;
	case GridUnitsStatus::BadGrid:
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "dxpriv grid must be a positive number",
		     "dx._units is placed by the dxpriv analyzer with the grid of a release's noise plan.");
	case GridUnitsStatus::OutOfRange:
		fail(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE, "a weight of this distributed dx aggregate is too large",
		     "Narrow the domain of the aggregated column.");
	}
	return static_cast<int64>(units);
}

} // namespace dxpriv::pg
