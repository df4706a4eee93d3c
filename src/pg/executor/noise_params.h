// The constant parameter array the analyzer passes to the noisy aggregates.
//
// Layout (float8[]): [0] layout version (2), [1] components C (1; 2 for avg: sum and count),
// [2] epsilon share of this aggregate, [3] protected table OID, [4] charge id (< 2^53),
// [5] lo, [6] hi (avg answers are clamped to [lo, hi]), [7] output groups G,
// [8], [9] answer-cache key (high and low 32 bits), [10] index of this aggregate in the query,
// [11] number of dx aggregates in the query, [12] noise family (core NoiseFamily: 0 laplace,
// 1 gaussian, 2 truncated_laplace), [13] delta of the query (0 for laplace),
// then for every group g < G and component c < C: grid, scale, bound (at 14 + 3*(g*C + c);
// bound > 0 only for truncated_laplace).
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
	std::vector<double> cells; // (grid, scale, bound) per group and component

	double grid(int g, int c) const { return cells[3 * (g * components + c)]; }
	double scale(int g, int c) const { return cells[3 * (g * components + c) + 1]; }
	double bound(int g, int c) const { return cells[3 * (g * components + c) + 2]; }
};

// Decodes and validates an array built by build_noise_params; throws UserError when malformed.
NoiseParams parse_noise_params(ArrayType *array);
// Encodes params as a float8[] in the current memory context.
ArrayType *build_noise_params(const NoiseParams &params);

} // namespace dxpriv::pg
