// A GROUP BY folded into one pass (planner/group_fold.h): dx._fold_slices cuts the ungrouped
// histogram of dx._fold_state (every row counted once at its point over the sub-universe with the
// key columns) into one one-pass state per declared group, and dx._fold_transfn makes that slice
// its group's state for the one-pass final functions (executor/one_pass.cpp), which release it.
#include "pg/executor/agg_support.h"
#include "pg/executor/onepass_format.h"
#include "pg/guard.h"
#include "pg/stand_in.h"

extern "C" {
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "libpq/pqformat.h"
#include "utils/array.h"
#include "port/pg_bswap.h"
#include "utils/memutils.h"
}

#include <cstring>

extern "C" Datum dx_onepass_deserialize(PG_FUNCTION_ARGS);

using namespace dxpriv::pg;

namespace {

// The slices are one-pass states in version 1 (executor/onepass_format.h): version, group, dense,
// points, n, then (point, count) pairs; the whole histogram they are cut from is in either version.
constexpr int kFoldMaxColumns = 64;
constexpr uint64 kFoldMaxGroups = uint64(1) << 24;

[[noreturn]] void
fold_bad_shape()
{
	fail(ERRCODE_INTERNAL_ERROR, "dxpriv folded GROUP BY parameters are not valid",
	     "Folded GROUP BY functions are placed by dxpriv's analyzer; they cannot be called directly.");
}

// The columns of the sub-universe (their sizes) and which of them are GROUP BY keys: the shape of
// the one-pass aggregates (ncols, sizes, kept columns, -1, key columns).
struct FoldShape {
	int ncols = 0;
	uint64 dims[kFoldMaxColumns];
	bool is_key[kFoldMaxColumns];
	uint64 groups = 1; // product of the key columns' sizes
	uint64 points = 1; // product of the other columns' sizes
};

FoldShape
fold_shape(ArrayType *shape)
{
	reject_stand_in(shape, "a folded GROUP BY's shape");
	if (ARR_ELEMTYPE(shape) != INT8OID || ARR_HASNULL(shape) || ARR_NDIM(shape) != 1)
		fold_bad_shape();
	const int n = ArrayGetNItems(ARR_NDIM(shape), ARR_DIMS(shape));
	const int64 *v = reinterpret_cast<const int64 *>(ARR_DATA_PTR(shape));
	FoldShape s;
	if (n < 1 || v[0] < 1 || v[0] > kFoldMaxColumns || n < 1 + v[0])
		fold_bad_shape();
	s.ncols = static_cast<int>(v[0]);
	for (int i = 0; i < s.ncols; ++i) {
		if (v[1 + i] < 1)
			fold_bad_shape();
		s.dims[i] = static_cast<uint64>(v[1 + i]);
		s.is_key[i] = false;
	}
	int sep = -1;
	for (int i = 1 + s.ncols; i < n; ++i)
		if (v[i] == -1) {
			sep = i;
			break;
		}
	if (sep < 0 || sep + 1 >= n)
		fold_bad_shape(); // no key column: nothing to fold
	for (int i = sep + 1; i < n; ++i) {
		if (v[i] < 0 || v[i] >= s.ncols || s.is_key[v[i]])
			fold_bad_shape();
		s.is_key[v[i]] = true;
	}
	double groups = 1, points = 1;
	for (int i = 0; i < s.ncols; ++i)
		(s.is_key[i] ? groups : points) *= static_cast<double>(s.dims[i]);
	if (groups > static_cast<double>(kFoldMaxGroups) || groups * points > 1.8e19)
		fold_bad_shape();
	s.groups = static_cast<uint64>(groups);
	s.points = static_cast<uint64>(points);
	return s;
}

// A point of the whole sub-universe split into its group (the key columns' point) and its point
// over the other columns (both last column fastest, as the one-pass final functions read them).
inline void
split_point(const FoldShape &s, uint64 u, uint64 &group, uint64 &point)
{
	uint64 gstride = 1, pstride = 1;
	group = 0;
	point = 0;
	for (int i = s.ncols - 1; i >= 0; --i) {
		const uint64 idx = u % s.dims[i];
		u /= s.dims[i];
		if (s.is_key[i]) {
			group += idx * gstride;
			gstride *= s.dims[i];
		} else {
			point += idx * pstride;
			pstride *= s.dims[i];
		}
	}
}

// What the first call computes and the next ones return, one slice a call.
struct FoldSlices {
	uint64 groups;
	bytea **slices;
};


FoldSlices *
cut_slices(bytea *state, const FoldShape &shape)
{
	auto *out = static_cast<FoldSlices *>(palloc0(sizeof(FoldSlices)));
	out->groups = shape.groups;
	out->slices = static_cast<bytea **>(palloc(shape.groups * sizeof(bytea *)));
	uint64 *counts = static_cast<uint64 *>(palloc0(shape.groups * sizeof(uint64)));
	bool dense = false; // (a state that met no row: every group's state is empty, kept as a small hash)
	OnePassBytes h{};
	if (state) {
		h = parse_onepass_bytes(state);
		if (h.group != 0 || h.points != shape.groups * shape.points)
			onepass_state_corrupted();
		dense = h.dense;
		for_each_onepass_entry(h, [&](uint64 u, int64) {
			uint64 g, p;
			split_point(shape, u, g, p);
			++counts[g];
		});
	}
	// each group's state, allocated at its exact size (a group count of 10^6 must not cost a
	// StringInfo's 1 kB each): header (version, group, dense, points, n), then its pairs
	char **cursor = static_cast<char **>(palloc(shape.groups * sizeof(char *)));
	for (uint64 g = 0; g < shape.groups; ++g) {
		const Size len = VARHDRSZ + kOnePassHeaderBytes + 16 * counts[g];
		bytea *b = static_cast<bytea *>(palloc(len));
		SET_VARSIZE(b, len);
		char *w = VARDATA(b);
		*w++ = static_cast<char>(kOnePassPairsVersion);
		w = onepass_put_int32(w, static_cast<int32>(g));
		*w++ = static_cast<char>(dense ? 1 : 0);
		w = onepass_put_int64(w, static_cast<int64>(shape.points));
		w = onepass_put_int64(w, static_cast<int64>(counts[g]));
		out->slices[g] = b;
		cursor[g] = w;
	}
	if (state)
		for_each_onepass_entry(h, [&](uint64 u, int64 count) {
			uint64 g, p;
			split_point(shape, u, g, p);
			cursor[g] = onepass_put_int64(cursor[g], static_cast<int64>(p));
			cursor[g] = onepass_put_int64(cursor[g], count);
		});
	pfree(cursor);
	pfree(counts);
	return out;
}

} // namespace

// dx._fold_slices(state bytea, shape int8[]) -> SETOF bytea: one serialised one-pass state per
// declared group, in group order (the key columns' point, last column fastest): the entries of the
// whole histogram whose key columns give that group, at their point over the other columns. A NULL
// state (no row) gives every group an empty state; exactly as many rows as groups either way.
DX_FUNCTION(dx_fold_slices)
{
	FuncCallContext *fctx;
	if (SRF_IS_FIRSTCALL()) {
		fctx = SRF_FIRSTCALL_INIT();
		if (PG_ARGISNULL(1))
			fold_bad_shape();
		MemoryContext old = MemoryContextSwitchTo(fctx->multi_call_memory_ctx);
		const FoldShape shape = fold_shape(PG_GETARG_ARRAYTYPE_P_COPY(1));
		fctx->user_fctx = cut_slices(PG_ARGISNULL(0) ? nullptr : PG_GETARG_BYTEA_P_COPY(0), shape);
		MemoryContextSwitchTo(old);
	}
	fctx = SRF_PERCALL_SETUP();
	auto *slices = static_cast<FoldSlices *>(fctx->user_fctx);
	if (fctx->call_cntr < slices->groups) {
		const Datum next = PointerGetDatum(slices->slices[fctx->call_cntr]); // (the macro counts first)
		SRF_RETURN_NEXT(fctx, next);
	}
	SRF_RETURN_DONE(fctx);
}

// dx._fold_transfn(state, slice bytea): the group's one-pass state is its slice (one a group).
DX_FUNCTION(dx_fold_transfn)
{
	MemoryContext aggctx = require_aggregate_context(fcinfo, "dxpriv aggregate");
	if (!PG_ARGISNULL(0) || PG_ARGISNULL(1))
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv folded GROUP BY received more or less than one slice for a group");
	MemoryContext old = MemoryContextSwitchTo(aggctx);
	Datum state = DirectFunctionCall2(dx_onepass_deserialize, PG_GETARG_DATUM(1), PointerGetDatum(nullptr));
	MemoryContextSwitchTo(old);
	PG_RETURN_DATUM(state);
}
