// Aggregate support: marker aggregates (rejected if not rewritten) and the noisy linear aggregate.
#include "pg/executor/agg_support.h"
#include "pg/executor/linear_state.h"
#include "pg/guard.h"
#include "pg/ledger/answer_cache.h"
#include "pg/contract/noise_params.h"
#include "pg/executor/release_log.h"

#include "core/linear_query.h"

extern "C" {
#include "catalog/pg_type.h"
#include "libpq/pqformat.h"
#include "nodes/execnodes.h"
#include "nodes/primnodes.h"
#include "utils/builtins.h"
}

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace dxpriv;
using namespace dxpriv::pg;

namespace {

// State of an aggregate that saw no row (only possible without GROUP BY, group 0): the
// analyzer's constant parameters from the Aggref, or, in the finalize phase of a parallel plan
// (arguments replaced by the partial result), those recorded when the statement was charged.
LinearState *
state_from_aggref(FunctionCallInfo fcinfo)
{
	return state_for_group(CurrentMemoryContext, final_function_params(fcinfo), 0);
}

// The state passed to a final function (never NULL afterwards).
LinearState *
final_state(FunctionCallInfo fcinfo)
{
	return PG_ARGISNULL(0) ? state_from_aggref(fcinfo) : reinterpret_cast<LinearState *>(PG_GETARG_POINTER(0));
}

} // namespace

// Marker transition/final functions: a dx aggregate that was not rewritten is an error.
DX_FUNCTION(dx_marker_transfn)
{
	fail(ERRCODE_FEATURE_NOT_SUPPORTED, "dx aggregates can only be used in a query validated by dxpriv",
	     "Use them as SELECT dx.count(*) FROM <protected table> [WHERE ...], sent directly by a client; "
	     "not inside views, rules or stored SQL function bodies.");
}

DX_FUNCTION(dx_marker_finalfn)
{
	return dx_marker_transfn_impl(fcinfo);
}

// dx._linear_transfn(state, weight, group, params [, count weight]): adds one row (a NULL weight
// adds nothing but still creates the group's state, which is how empty groups get their noisy
// answer); an average's count grows by the count weight (the row's joined pairs), else by 1.
DX_FUNCTION(dx_linear_transfn)
{
	MemoryContext aggctx = require_aggregate_context(fcinfo, "dxpriv aggregate");
	LinearState *s;
	if (PG_ARGISNULL(0)) {
		if (PG_ARGISNULL(2) || PG_ARGISNULL(3))
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate parameters must not be null");
		s = state_for_group(aggctx, parse_noise_params(PG_GETARG_ARRAYTYPE_P(3)), PG_GETARG_INT32(2));
	} else {
		s = reinterpret_cast<LinearState *>(PG_GETARG_POINTER(0));
	}
	if (!PG_ARGISNULL(1))
		add_row(*s, PG_GETARG_FLOAT8(1), PG_NARGS() > 4 && !PG_ARGISNULL(4) ? PG_GETARG_FLOAT8(4) : 1.0);
	PG_RETURN_POINTER(s);
}

// dx._linear_combinefn(state, state): exact merge of two partial states of the same group.
DX_FUNCTION(dx_linear_combinefn)
{
	MemoryContext aggctx = require_aggregate_context(fcinfo, "dxpriv aggregate");
	if (PG_ARGISNULL(1))
		PG_RETURN_POINTER(PG_ARGISNULL(0) ? nullptr : PG_GETARG_POINTER(0));
	auto *other = reinterpret_cast<LinearState *>(PG_GETARG_POINTER(1));
	if (PG_ARGISNULL(0)) {
		LinearState *s = new_state(aggctx);
		*s = *other;
		PG_RETURN_POINTER(s);
	}
	auto *s = reinterpret_cast<LinearState *>(PG_GETARG_POINTER(0));
	merge_states(*s, *other);
	PG_RETURN_POINTER(s);
}

// dx._linear_serialize(state) -> bytea: version, then the state's fields in network order.
DX_FUNCTION(dx_linear_serialize)
{
	PG_RETURN_BYTEA_P(serialize_linear_state(*reinterpret_cast<LinearState *>(PG_GETARG_POINTER(0))));
}

// dx._linear_deserialize(bytea, internal) -> state.
DX_FUNCTION(dx_linear_deserialize)
{
	LinearState *s = new_state(aggregate_or_current_context(fcinfo));
	*s = deserialize_linear_state(PG_GETARG_BYTEA_PP(0));
	PG_RETURN_POINTER(s);
}

// Final function of dx.count: the noisy count rounded to the nearest integer (post-processing).
DX_FUNCTION(dx_linear_count_finalfn)
{
	PG_RETURN_INT64(count_as_bigint(release_linear_state(final_state(fcinfo), LinearRelease::Count)));
}

// Final function of dx.sum and dx.linear: the noisy sum.
DX_FUNCTION(dx_linear_sum_finalfn)
{
	PG_RETURN_FLOAT8(release_linear_state(final_state(fcinfo), LinearRelease::Sum));
}

// Final function of dx.avg: noisy sum / max(noisy count, 1), clamped to the value range [lo, hi].
DX_FUNCTION(dx_linear_avg_finalfn)
{
	PG_RETURN_FLOAT8(release_linear_state(final_state(fcinfo), LinearRelease::Avg));
}

// dx._indicator(any): 1 for a non-null argument, else 0 (count(expr)'s weight, evaluated at
// analysis on the declared points).
DX_FUNCTION(dx_indicator)
{
	PG_RETURN_FLOAT8(PG_ARGISNULL(0) ? 0.0 : 1.0);
}
