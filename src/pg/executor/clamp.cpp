// SQL functions that map column values into declared domains (dx._clamp_range, dx._clamp_enum)
// or to their point's index (dx._range_index, dx._enum_index: GROUP BY keys), and the count
// indicator. The mapping itself is DomainIndexer's (domain_index.h).
#include "pg/dxpriv.h"
#include "pg/executor/agg_support.h"
#include "pg/executor/domain_index.h"
#include "pg/guard.h"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "utils/array.h"
}


using namespace dxpriv;
using namespace dxpriv::pg;

namespace {

// Type modifier of argument 0 at this call site (the column's), so points are bit-identical to
// the analyzer's.
int32
value_typmod(FunctionCallInfo fcinfo)
{
	if (fcinfo->flinfo->fn_expr && IsA(fcinfo->flinfo->fn_expr, FuncExpr))
		return exprTypmod(static_cast<Node *>(linitial(castNode(FuncExpr, fcinfo->flinfo->fn_expr)->args)));
	return -1;
}

// The indexer of a range-domain call site (arguments: value, lo, hi, step), built on first use.
const DomainIndexer &
range_indexer(FunctionCallInfo fcinfo)
{
	auto *ix = static_cast<DomainIndexer *>(fcinfo->flinfo->fn_extra);
	if (!ix) {
		ix = DomainIndexer::create(fcinfo->flinfo->fn_mcxt,
		                           Domain::range(PG_GETARG_FLOAT8(1), PG_GETARG_FLOAT8(2), PG_GETARG_FLOAT8(3)),
		                           get_fn_expr_argtype(fcinfo->flinfo, 0), value_typmod(fcinfo));
		fcinfo->flinfo->fn_extra = ix;
	}
	return *ix;
}

// The indexer of an enumerated-domain call site (arguments: value, labels), built on first use.
const DomainIndexer &
enum_indexer(FunctionCallInfo fcinfo)
{
	auto *ix = static_cast<DomainIndexer *>(fcinfo->flinfo->fn_extra);
	if (!ix) {
		ix = DomainIndexer::create(fcinfo->flinfo->fn_mcxt, Domain::enumerated(text_array_strings(PG_GETARG_ARRAYTYPE_P(1))),
		                           get_fn_expr_argtype(fcinfo->flinfo, 0), value_typmod(fcinfo));
		fcinfo->flinfo->fn_extra = ix;
	}
	return *ix;
}

} // namespace

// dx._clamp_range(value, lo, hi, step): the nearest domain point; NULL and NaN map to lo.
// (Date columns pass day numbers: the points are the same as the analyzer's date domain.)
// By-reference points are returned without copying: they live in fn_mcxt for the whole query.
DX_FUNCTION(dx_clamp_range)
{
	const DomainIndexer &ix = range_indexer(fcinfo);
	return ix.point(ix.index(PG_GETARG_DATUM(0), PG_ARGISNULL(0)));
}

// dx._range_index(value, lo, hi, step): the index of the point dx._clamp_range returns.
DX_FUNCTION(dx_range_index)
{
	const DomainIndexer &ix = range_indexer(fcinfo);
	PG_RETURN_INT32(static_cast<int32>(ix.index(PG_GETARG_DATUM(0), PG_ARGISNULL(0))));
}

// dx._clamp_enum(value, labels): the value itself when declared, else the first declared value.
DX_FUNCTION(dx_clamp_enum)
{
	const DomainIndexer &ix = enum_indexer(fcinfo);
	return ix.point(ix.index(PG_GETARG_DATUM(0), PG_ARGISNULL(0)));
}

// dx._enum_index(value, labels): the index of the value dx._clamp_enum returns.
DX_FUNCTION(dx_enum_index)
{
	const DomainIndexer &ix = enum_indexer(fcinfo);
	PG_RETURN_INT32(static_cast<int32>(ix.index(PG_GETARG_DATUM(0), PG_ARGISNULL(0))));
}

// dx._indicator(any): 1 for a non-null argument, else 0.
DX_FUNCTION(dx_indicator)
{
	PG_RETURN_FLOAT8(PG_ARGISNULL(0) ? 0.0 : 1.0);
}
