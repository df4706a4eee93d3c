// Data-independent mapping of column values into declared domains, and the count indicator.
#include "pg/dxpriv.h"
#include "pg/executor/agg_support.h"
#include "pg/guard.h"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
}

#include <algorithm>
#include <limits>
#include <cstring>
#include <new>

using namespace dxpriv;
using namespace dxpriv::pg;

namespace {

// Per-call-site cache of the domain's points (lives in fn_mcxt).
struct ClampCache {
	Oid type;
	int16 typlen;
	bool typbyval;
	Domain *domain;     // placement-new'd; destroyed by a reset callback
	Datum *points;      // domain_datums, copied into fn_mcxt
	size_t npoints;
	// enumerated domains: (key bytes, index) sorted for binary search
	struct Key {
		const char *data;
		size_t len;
		size_t index;
	} *keys;
};

// Destroys the placement-new'd Domain when fn_mcxt goes away.
void
destroy_cache(void *arg)
{
	static_cast<ClampCache *>(arg)->domain->~Domain();
}

// The bytes that identify a value: its Datum for by-value types, its payload for varlena.
void
value_key(const ClampCache &c, Datum v, const char *&data, size_t &len, Datum &scratch)
{
	if (c.typbyval) {
		scratch = v;
		data = reinterpret_cast<const char *>(&scratch);
		len = sizeof(Datum);
	} else {
		struct varlena *p = PG_DETOAST_DATUM_PACKED(v);
		data = VARDATA_ANY(p);
		len = VARSIZE_ANY_EXHDR(p);
	}
}

// Orders keys by length then bytes.
bool
key_less(const ClampCache::Key &a, const ClampCache::Key &b)
{
	if (a.len != b.len)
		return a.len < b.len;
	return std::memcmp(a.data, b.data, a.len) < 0;
}

// Builds the cache for one call site from the domain arguments.
ClampCache *
build_cache(FunctionCallInfo fcinfo, Domain domain)
{
	MemoryContext mcxt = fcinfo->flinfo->fn_mcxt;
	Oid type = get_fn_expr_argtype(fcinfo->flinfo, 0);
	auto *c = static_cast<ClampCache *>(MemoryContextAllocZero(mcxt, sizeof(ClampCache)));
	c->type = type;
	get_typlenbyval(type, &c->typlen, &c->typbyval);
	void *mem = MemoryContextAlloc(mcxt, sizeof(Domain));
	c->domain = new (mem) Domain(std::move(domain));
	auto *cb = static_cast<MemoryContextCallback *>(MemoryContextAlloc(mcxt, sizeof(MemoryContextCallback)));
	cb->func = destroy_cache;
	cb->arg = c;
	MemoryContextRegisterResetCallback(mcxt, cb);

	MemoryContext old = MemoryContextSwitchTo(mcxt);
	// Same type modifier as the analyzer used (the column's), so points are bit-identical.
	int32 typmod = -1;
	if (fcinfo->flinfo->fn_expr && IsA(fcinfo->flinfo->fn_expr, FuncExpr))
		typmod = exprTypmod(static_cast<Node *>(linitial(castNode(FuncExpr, fcinfo->flinfo->fn_expr)->args)));
	std::vector<Datum> pts = domain_datums(*c->domain, type, typmod);
	c->npoints = pts.size();
	c->points = static_cast<Datum *>(palloc(sizeof(Datum) * pts.size()));
	std::copy(pts.begin(), pts.end(), c->points);
	if (c->domain->kind() == DomainKind::Enumerated) {
		c->keys = static_cast<ClampCache::Key *>(palloc(sizeof(ClampCache::Key) * pts.size()));
		for (size_t i = 0; i < pts.size(); ++i) {
			Datum scratch;
			const char *data;
			size_t len;
			value_key(*c, pts[i], data, len, scratch);
			char *copy = static_cast<char *>(palloc(len > 0 ? len : 1));
			std::memcpy(copy, data, len);
			c->keys[i] = {copy, len, i};
		}
		std::sort(c->keys, c->keys + pts.size(), key_less);
	}
	MemoryContextSwitchTo(old);
	return c;
}

// Returns point i. By-reference points are returned without copying: they live in fn_mcxt for
// the whole query and callers never modify or free function results they do not own.
Datum
point(const ClampCache &c, size_t i)
{
	return c.points[i];
}

// The cache of a range-domain call site (arguments: value, lo, hi, step).
ClampCache *
range_cache(FunctionCallInfo fcinfo)
{
	auto *c = static_cast<ClampCache *>(fcinfo->flinfo->fn_extra);
	if (!c) {
		c = build_cache(fcinfo, Domain::range(PG_GETARG_FLOAT8(1), PG_GETARG_FLOAT8(2), PG_GETARG_FLOAT8(3)));
		fcinfo->flinfo->fn_extra = c;
	}
	return c;
}

// Index of the domain point a range-domain value maps to (NULL and NaN: the first point).
size_t
range_index(FunctionCallInfo fcinfo, const ClampCache &c)
{
	return PG_ARGISNULL(0) ? c.domain->default_index() : c.domain->index_of(datum_to_ordinal(PG_GETARG_DATUM(0), c.type));
}

// The cache of an enumerated-domain call site (arguments: value, labels).
ClampCache *
enum_cache(FunctionCallInfo fcinfo)
{
	auto *c = static_cast<ClampCache *>(fcinfo->flinfo->fn_extra);
	if (!c) {
		c = build_cache(fcinfo, Domain::enumerated(text_array_strings(PG_GETARG_ARRAYTYPE_P(1))));
		fcinfo->flinfo->fn_extra = c;
	}
	return c;
}

// Index of a value in an enumerated domain (NULL and undeclared values: the first value).
size_t
enum_index(FunctionCallInfo fcinfo, const ClampCache &c)
{
	if (PG_ARGISNULL(0))
		return c.domain->default_index();
	ClampCache::Key probe;
	Datum scratch;
	value_key(c, PG_GETARG_DATUM(0), probe.data, probe.len, scratch);
	ClampCache::Key *end = c.keys + c.npoints;
	ClampCache::Key *hit = std::lower_bound(c.keys, end, probe, key_less);
	if (hit != end && hit->len == probe.len && std::memcmp(hit->data, probe.data, probe.len) == 0)
		return hit->index;
	return c.domain->default_index();
}

} // namespace

// dx._clamp_range(value, lo, hi, step): the nearest domain point; NULL and NaN map to lo.
// (Date columns pass day numbers: the points are the same as the analyzer's date domain.)
DX_FUNCTION(dx_clamp_range)
{
	ClampCache *c = range_cache(fcinfo);
	return point(*c, range_index(fcinfo, *c));
}

// dx._range_index(value, lo, hi, step): the index of the point dx._clamp_range returns.
DX_FUNCTION(dx_range_index)
{
	ClampCache *c = range_cache(fcinfo);
	PG_RETURN_INT32(static_cast<int32>(range_index(fcinfo, *c)));
}

// dx._clamp_enum(value, labels): the value itself when declared, else the first declared value.
DX_FUNCTION(dx_clamp_enum)
{
	ClampCache *c = enum_cache(fcinfo);
	return point(*c, enum_index(fcinfo, *c));
}

// dx._enum_index(value, labels): the index of the value dx._clamp_enum returns.
DX_FUNCTION(dx_enum_index)
{
	ClampCache *c = enum_cache(fcinfo);
	PG_RETURN_INT32(static_cast<int32>(enum_index(fcinfo, *c)));
}

namespace {

// Per-call-site cache of dx._point_index: the group's declared points (k-d tree).
struct PointCache {
	Domain *domain; // placement-new'd Points domain; destroyed by a reset callback
	int dims;
};

void
destroy_point_cache(void *arg)
{
	static_cast<PointCache *>(arg)->domain->~Domain();
}

// Builds the cache from the constant arguments (coords, dims).
PointCache *
build_point_cache(FunctionCallInfo fcinfo)
{
	MemoryContext mcxt = fcinfo->flinfo->fn_mcxt;
	ArrayType *coords = PG_GETARG_ARRAYTYPE_P(0);
	const int dims = PG_GETARG_INT32(1);
	if (ARR_HASNULL(coords) || ARR_ELEMTYPE(coords) != FLOAT8OID)
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "dxpriv point coordinates must be non-null float8 values");
	const int n = ArrayGetNItems(ARR_NDIM(coords), ARR_DIMS(coords));
	const double *c = reinterpret_cast<const double *>(ARR_DATA_PTR(coords));
	auto *pc = static_cast<PointCache *>(MemoryContextAllocZero(mcxt, sizeof(PointCache)));
	pc->dims = dims;
	// validates dims and the coordinates (throws CoreError) before anything is registered
	Domain points = Domain::points(static_cast<size_t>(dims), std::vector<double>(c, c + n));
	void *mem = MemoryContextAlloc(mcxt, sizeof(Domain));
	pc->domain = new (mem) Domain(std::move(points));
	auto *cb = static_cast<MemoryContextCallback *>(MemoryContextAlloc(mcxt, sizeof(MemoryContextCallback)));
	cb->func = destroy_point_cache;
	cb->arg = pc;
	MemoryContextRegisterResetCallback(mcxt, cb);
	return pc;
}

} // namespace

// dx._point_index(coords, dims, row): index of the declared point nearest to the row's
// coordinates (any NULL or NaN coordinate, or a NULL row: the first point).
DX_FUNCTION(dx_point_index)
{
	auto *pc = static_cast<PointCache *>(fcinfo->flinfo->fn_extra);
	if (!pc) {
		pc = build_point_cache(fcinfo);
		fcinfo->flinfo->fn_extra = pc;
	}
	double x[kMaxPointDims];
	for (int d = 0; d < pc->dims; ++d)
		x[d] = std::numeric_limits<double>::quiet_NaN();
	if (!PG_ARGISNULL(2)) {
		ArrayType *row = PG_GETARG_ARRAYTYPE_P(2);
		Datum *elems;
		bool *nulls;
		int n;
		deconstruct_array(row, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &elems, &nulls, &n);
		for (int d = 0; d < n && d < pc->dims; ++d)
			if (!nulls[d])
				x[d] = DatumGetFloat8(elems[d]);
	}
	PG_RETURN_INT32(static_cast<int32>(pc->domain->nearest(x)));
}

// dx._indicator(any): 1 for a non-null argument, else 0.
DX_FUNCTION(dx_indicator)
{
	PG_RETURN_FLOAT8(PG_ARGISNULL(0) ? 0.0 : 1.0);
}
