// Execution by lookup: a row's contribution read from the per-point table the analysis built
// (core/point_table.h), given the row's point index computed by dxpriv's clamping functions.
#include "pg/dxpriv.h"
#include "pg/guard.h"

#include "core/point_table.h"

extern "C" {
#include "fmgr.h"
#include "utils/memutils.h"
}

#include <cstring>
#include <new>

using namespace dxpriv;
using namespace dxpriv::pg;

namespace {

// Per-call-site cache: the decoded table (lives in fn_mcxt; the view is destroyed by a reset
// callback). The table argument is a plan constant, so it is decoded once per query and node;
// a different datum (never produced by dxpriv's own rewriting) is decoded afresh.
struct LookupCache {
	Datum source;
	unsigned char *bytes;
	PointTableView *view;
};

void
destroy_lookup_cache(void *arg)
{
	auto *c = static_cast<LookupCache *>(arg);
	if (c->view)
		c->view->~PointTableView();
	c->view = nullptr;
}

// The decoded table of argument 1 (validated once; later calls are a pointer comparison).
const PointTableView &
table_view(FunctionCallInfo fcinfo)
{
	auto *c = static_cast<LookupCache *>(fcinfo->flinfo->fn_extra);
	const Datum source = PG_GETARG_DATUM(1);
	if (c && c->source == source)
		return *c->view;
	MemoryContext mcxt = fcinfo->flinfo->fn_mcxt;
	if (!c) {
		c = static_cast<LookupCache *>(MemoryContextAllocZero(mcxt, sizeof(LookupCache)));
		auto *cb = static_cast<MemoryContextCallback *>(MemoryContextAlloc(mcxt, sizeof(MemoryContextCallback)));
		cb->func = destroy_lookup_cache;
		cb->arg = c;
		MemoryContextRegisterResetCallback(mcxt, cb);
		fcinfo->flinfo->fn_extra = c;
	}
	destroy_lookup_cache(c);
	bytea *b = PG_GETARG_BYTEA_PP(1);
	const size_t len = VARSIZE_ANY_EXHDR(b);
	c->bytes = static_cast<unsigned char *>(MemoryContextAlloc(mcxt, len > 0 ? len : 1));
	std::memcpy(c->bytes, VARDATA_ANY(b), len);
	void *mem = MemoryContextAlloc(mcxt, sizeof(PointTableView));
	c->view = new (mem) PointTableView(c->bytes, len); // validates; throws CoreError when forged
	c->source = source;
	return *c->view;
}

// The table's value at the point index in argument 0; false when the point contributes nothing.
bool
lookup_value(FunctionCallInfo fcinfo, double &out)
{
	const PointTableView &t = table_view(fcinfo);
	const int32 u = PG_GETARG_INT32(0);
	if (u < 0 || static_cast<size_t>(u) >= t.size())
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "dxpriv point index is outside its table",
		     "Point indexes and tables are placed by dxpriv's analyzer; the function is not meant to be called directly.");
	return t.lookup(static_cast<size_t>(u), out);
}

} // namespace

// dx._lookup(point int4, table bytea) -> float8: the row's weight, NULL when it contributes nothing.
DX_FUNCTION(dx_lookup)
{
	double v;
	if (!lookup_value(fcinfo, v))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(v);
}

// dx._lookup_int(point int4, table bytea) -> int4: the row's candidate index (exponential
// mechanism), NULL when it is not counted.
DX_FUNCTION(dx_lookup_int)
{
	double v;
	if (!lookup_value(fcinfo, v))
		PG_RETURN_NULL();
	PG_RETURN_INT32(static_cast<int32>(v));
}
