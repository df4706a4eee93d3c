// Encoding and decoding of the noisy aggregates' constant parameter array.
#include "pg/contract/noise_params.h"

#include "pg/guard.h"
#include "pg/stand_in.h"

extern "C" {
#include "catalog/pg_type.h"
}

#include <cmath>

namespace dxpriv::pg {

namespace {
constexpr int kHeader = 19;
constexpr double kVersion = 4;
constexpr int kUnitTail = 4; // optional: unit attnum, rows, groups, rows per group (after the cells)
} // namespace

// See noise_params.h.
NoiseParams
parse_noise_params(ArrayType *array)
{
	reject_stand_in(array, "an aggregate's noise parameters");
	if (ARR_NDIM(array) != 1 || ARR_HASNULL(array) || ARR_ELEMTYPE(array) != FLOAT8OID)
		fail(ERRCODE_INTERNAL_ERROR, "malformed dxpriv aggregate parameters");
	const int n = ArrayGetNItems(ARR_NDIM(array), ARR_DIMS(array));
	const double *v = reinterpret_cast<const double *>(ARR_DATA_PTR(array));
	if (n < kHeader || v[0] != kVersion)
		fail(ERRCODE_INTERNAL_ERROR, "malformed dxpriv aggregate parameters");
	NoiseParams p;
	p.components = static_cast<int>(v[1]);
	p.epsilon = v[2];
	p.relid = static_cast<Oid>(v[3]);
	p.charge_id = static_cast<int64>(v[4]);
	p.lo = v[5];
	p.hi = v[6];
	p.groups = static_cast<int>(v[7]);
	p.cache_key = (static_cast<uint64>(v[8]) << 32) | static_cast<uint64>(v[9]);
	p.agg_index = static_cast<int>(v[10]);
	p.agg_count = static_cast<int>(v[11]);
	p.family = static_cast<int>(v[12]);
	p.delta = v[13];
	p.epsilon_id = static_cast<int64>(v[14]);
	p.sets = static_cast<int>(v[15]);
	p.alloc_id = static_cast<int64>(v[16]);
	p.alloc_epsilon = v[17];
	p.alloc_delta = v[18];
	// (the count [11] may exceed S times the aggregates: the selections of a joint open release,
	// planner/open_grouping_sets.h, have S = 1)
	if (p.components < 1 || p.components > 2 || p.groups < 1 || !(p.epsilon > 0) || p.agg_index < 0 ||
	    p.agg_index >= p.agg_count || !(v[14] >= 0) || p.sets < 1 || p.agg_count < p.sets || p.family < 0 || p.family > 2 || !(p.delta >= 0 && p.delta < 1) ||
	    !(v[16] >= 0 && v[16] < 9007199254740992.0) || !(p.alloc_epsilon >= 0) || !std::isfinite(p.alloc_epsilon) ||
	    !(p.alloc_delta >= 0 && p.alloc_delta < 1) ||
	    (n != kHeader + 3 * p.groups * p.components && n != kHeader + 3 * p.groups * p.components + kUnitTail))
		fail(ERRCODE_INTERNAL_ERROR, "malformed dxpriv aggregate parameters");
	const int cells_end = kHeader + 3 * p.groups * p.components;
	if (n > cells_end) { // the privacy unit tail
		p.unit_attnum = static_cast<int>(v[cells_end]);
		p.unit_rows = static_cast<int>(v[cells_end + 1]);
		p.unit_groups = static_cast<int>(v[cells_end + 2]);
		p.unit_rows_per_group = static_cast<int>(v[cells_end + 3]);
		if (p.unit_attnum <= 0 || p.unit_rows <= 0 || p.unit_groups < 0 || p.unit_rows_per_group < 0)
			fail(ERRCODE_INTERNAL_ERROR, "malformed dxpriv aggregate parameters");
	}
	p.cells.assign(v + kHeader, v + cells_end);
	for (int i = 0; i < cells_end - kHeader; i += 3)
		if (!(p.cells[i] > 0) || !(p.cells[i + 1] >= 0) || !std::isfinite(p.cells[i + 1]) || !(p.cells[i + 2] >= 0) ||
		    !std::isfinite(p.cells[i + 2]))
			fail(ERRCODE_INTERNAL_ERROR, "malformed dxpriv aggregate parameters");
	return p;
}

// See noise_params.h.
ArrayType *
build_noise_params(const NoiseParams &p)
{
	std::vector<Datum> d;
	for (double x : {kVersion, static_cast<double>(p.components), p.epsilon, static_cast<double>(p.relid),
	                 static_cast<double>(p.charge_id), p.lo, p.hi, static_cast<double>(p.groups),
	                 static_cast<double>(p.cache_key >> 32), static_cast<double>(p.cache_key & 0xffffffffu),
	                 static_cast<double>(p.agg_index), static_cast<double>(p.agg_count), static_cast<double>(p.family),
	                 p.delta, static_cast<double>(p.epsilon_id), static_cast<double>(p.sets),
	                 static_cast<double>(p.alloc_id), p.alloc_epsilon, p.alloc_delta})
		d.push_back(Float8GetDatum(x));
	for (double x : p.cells)
		d.push_back(Float8GetDatum(x));
	if (p.unit_attnum > 0)
		for (int x : {p.unit_attnum, p.unit_rows, p.unit_groups, p.unit_rows_per_group})
			d.push_back(Float8GetDatum(static_cast<double>(x)));
	return pg_value([&] {
		return construct_array(d.data(), static_cast<int>(d.size()), FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL,
		                       TYPALIGN_DOUBLE);
	});
}

} // namespace dxpriv::pg
