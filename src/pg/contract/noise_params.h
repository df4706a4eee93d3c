// The constant parameter array the analyzer passes to the noisy aggregates.
//
// Layout (float8[]): [0] layout version (4), [1] components C (1; 2 for avg: sum and count),
// [2] epsilon share of this aggregate, [3] protected table OID, [4] charge id (< 2^53),
// [5] lo, [6] hi (avg answers are clamped to [lo, hi]), [7] output groups G,
// [8], [9] answer-cache key (high and low 32 bits), [10] index of this aggregate in the query,
// [11] number of dx aggregates in the query, [12] noise family (core NoiseFamily: 0 laplace,
// 1 gaussian, 2 truncated_laplace), [13] delta of the query (0 for laplace),
// [14] epsilon id (< 2^53; 0: the charge id), [15] grouping sets S sharing one allocation (1
// otherwise), [16] allocation id (< 2^53; 0 before the analyzer stamps it), [17] epsilon and
// [18] delta of the whole allocation, then for every group g < G and component c < C: grid,
// scale, bound (at 19 + 3*(g*C + c); bound > 0 only for truncated_laplace).
//
// Allocations: the cells of one release (all its aggregates, and for grouping sets every set's
// copies) are calibrated together within the allocation's epsilon, and each aggregate carries the
// identity and total of the allocation it belongs to. The statement is charged every allocation
// found in its plan once, for that TOTAL, whichever of its aggregates the planner kept (an unused
// subquery output or a constant-folded CASE removes aggregates; the cells that remain were
// calibrated with the removed cells' share of the budget, so their noise is only private at the
// total). ExecutorStart checks that every aggregate of one allocation agrees on it (ledger/charge.cpp).
//
// Epsilon ids: a statement is charged, per table, the sum of its aggregates' epsilons over
// distinct epsilon ids. The S copies (one per grouping set) of one aggregate of a GROUP BY ROLLUP,
// CUBE or GROUPING SETS statement share one epsilon id: their cells were allocated together within
// that aggregate's epsilon, which is charged once, whichever of the copies the plan runs. Their
// agg_index is j * S + s (aggregate j of the statement, set s), agg_count is S times the
// statement's aggregates.
#pragma once

extern "C" {
#include "postgres.h"
#include "utils/array.h"
}

#include <vector>

namespace dxpriv::pg {

struct NoiseParams {
	int components = 1;
	double epsilon = 0;
	Oid relid = InvalidOid;
	int64 charge_id = 0;
	double lo = 0, hi = 0;
	int groups = 1;
	uint64 cache_key = 0;
	int agg_index = 0, agg_count = 1;
	int family = 0;   // NoiseFamily
	double delta = 0; // spent by the query when a cell is noisy and the family is not laplace
	int64 epsilon_id = 0; // copies with the same id are charged their epsilon once (0: the charge id)
	int sets = 1;         // grouping sets allocated together (agg_index = aggregate * sets + set)
	// the allocation this aggregate's cells belong to (stamped by the analyzer with the charge ids)
	int64 alloc_id = 0;       // shared by every aggregate (and grouping-set copy) of one allocation
	double alloc_epsilon = 0; // epsilon of the whole allocation: what the statement is charged for it
	double alloc_delta = 0;   // delta of the whole allocation (0: pure epsilon)
	// privacy unit (README "Privacy units"): the unit column's attribute number (0: none) and the
	// query's contribution bound, recorded in the ledger's mechanism; encoded after the cells only
	// when present, so arrays without a unit keep their layout
	int unit_attnum = 0, unit_rows = 0, unit_groups = 0, unit_rows_per_group = 0;
	std::vector<double> cells; // (grid, scale, bound) per group and component

	double grid(int g, int c) const { return cells[3 * (g * components + c)]; }
	double scale(int g, int c) const { return cells[3 * (g * components + c) + 1]; }
	double bound(int g, int c) const { return cells[3 * (g * components + c) + 2]; }
	// The id under which this aggregate's epsilon is charged.
	int64 charged_epsilon_id() const { return epsilon_id != 0 ? epsilon_id : charge_id; }
};

// Decodes and validates an array built by build_noise_params; throws UserError when malformed.
NoiseParams parse_noise_params(ArrayType *array);
// Encodes params as a float8[] in the current memory context.
ArrayType *build_noise_params(const NoiseParams &params);

} // namespace dxpriv::pg
