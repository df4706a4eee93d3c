// Helpers shared by dxpriv's aggregates (see agg_support.h).
#include "pg/executor/agg_support.h"
#include "pg/statement/statement_context.h"

#include "pg/ledger/charge.h"
#include "pg/contract/param_consts.h"
#include "pg/contract/noise_params.h"
#include "pg/guard.h"
#include "pg/stand_in.h"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/execnodes.h"
#include "utils/builtins.h"
}

namespace dxpriv::pg {

// See agg_support.h.
MemoryContext
aggregate_or_current_context(FunctionCallInfo fcinfo)
{
	MemoryContext aggctx;
	return AggCheckCallContext(fcinfo, &aggctx) ? aggctx : CurrentMemoryContext;
}

// See agg_support.h.
MemoryContext
require_aggregate_context(FunctionCallInfo fcinfo, const char *function)
{
	MemoryContext aggctx;
	if (!AggCheckCallContext(fcinfo, &aggctx))
		fail(ERRCODE_INTERNAL_ERROR, std::string(function) + " called in a non-aggregate context");
	return aggctx;
}

// See agg_support.h.
StringInfoData
bytea_reader(bytea *b)
{
	StringInfoData buf;
	buf.data = VARDATA_ANY(b);
	buf.len = VARSIZE_ANY_EXHDR(b);
	buf.maxlen = buf.len;
	buf.cursor = 0;
	return buf;
}

// See agg_support.h.
std::vector<std::string>
text_array_strings(ArrayType *array)
{
	Datum *elems;
	bool *nulls;
	int n;
	reject_stand_in(array, "a domain's label list");
	deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	std::vector<std::string> out;
	for (int i = 0; i < n; ++i)
		out.emplace_back(nulls[i] ? "" : pg_value([&] { return text_to_cstring(DatumGetTextPP(elems[i])); }));
	return out;
}

// See agg_support.h.
NoiseParams
final_function_params(FunctionCallInfo fcinfo)
{
	Aggref *aggref = AggGetAggref(fcinfo);
	if (!aggref)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate called outside a validated query");
	if (Const *c = aggref_params_const(aggref))
		return parse_noise_params(DatumGetArrayTypeP(c->constvalue));
	if (fcinfo->context && IsA(fcinfo->context, AggState)) {
		AggState *agg = castNode(AggState, fcinfo->context);
		NoiseParams p;
		if (statement::final_params(agg->ss.ps.state->es_plannedstmt, agg->ss.ps.plan->plan_node_id, aggref->aggno, p))
			return p;
	}
	fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate parameters are not available");
}

} // namespace dxpriv::pg
