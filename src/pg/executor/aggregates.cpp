// Aggregate support: marker aggregates (rejected if not rewritten) and the noisy linear aggregate.
#include "pg/dxpriv.h"
#include "pg/executor/agg_support.h"
#include "pg/guard.h"
#include "pg/ledger/answer_cache.h"
#include "pg/executor/noise_params.h"
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

// Partial state of a noisy linear aggregate for one output group. Trivially copyable; 16-byte
// aligned for the __int128 sums. Component 0 is the value (count, sum, linear, avg's sum);
// component 1 is avg's count.
struct LinearState {
	GridSum sum[2];
	LinearNoisePlan plan[2];
	int32 components;
	int32 group;
	double epsilon;
	double lo, hi;
	Oid relid;
	int64 charge_id;
	bool released;
	double answer;
};

constexpr uint8 kStateVersion = 3;

// Allocates a zeroed, 16-byte aligned state in mcxt.
LinearState *
new_state(MemoryContext mcxt)
{
	char *raw = static_cast<char *>(MemoryContextAllocZero(mcxt, sizeof(LinearState) + 16));
	auto *s = reinterpret_cast<LinearState *>(TYPEALIGN(16, reinterpret_cast<uintptr_t>(raw)));
	new (s) LinearState();
	return s;
}

// Fills a state with the parameters of output group `group`.
LinearState *
state_for_group(MemoryContext mcxt, const NoiseParams &p, int group)
{
	if (group < 0 || group >= p.groups)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate received an invalid output group");
	LinearState *s = new_state(mcxt);
	s->components = p.components;
	s->group = group;
	s->epsilon = p.epsilon;
	s->lo = p.lo;
	s->hi = p.hi;
	s->relid = p.relid;
	s->charge_id = p.charge_id;
	for (int c = 0; c < p.components; ++c) {
		s->plan[c].grid = p.grid(group, c);
		s->plan[c].scale = p.scale(group, c);
		s->plan[c].bound = p.bound(group, c);
		s->plan[c].family = static_cast<NoiseFamily>(p.family);
		s->plan[c].sensitivity = s->plan[c].scale * p.epsilon;
	}
	return s;
}

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

// Noisy value of one component, refusing uncharged releases.
double
release_component(LinearState *s, int c)
{
	if (!was_charged(s->charge_id))
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "dxpriv refuses to release an answer that was not charged",
		     "Run the query directly; dx aggregates are charged when the statement starts.");
	return s->sum[c].release(backend_random(), s->plan[c]);
}

// The answer of a final function: replayed from the answer cache when the statement reuses a
// stored answer, otherwise computed by `fresh` (drawing noise; an average also writes its noisy sum
// and count into parts) and noted for the cache; recorded for dx.last_release either way.
template <class Fresh>
double
final_answer(LinearState *s, Fresh &&fresh)
{
	if (!s->released) {
		double cached;
		double parts[2] = {std::nan(""), std::nan("")};
		if (answer_cache_replayed(s->charge_id, s->group, cached, parts)) {
			s->answer = cached;
		} else {
			s->answer = fresh(parts);
			answer_cache_note(s->charge_id, s->group, s->answer, s->components == 2 ? parts : nullptr);
		}
		s->released = true;
		const bool has_parts = s->components == 2 && std::isfinite(parts[0]) && std::isfinite(parts[1]);
		release_log_record(s->charge_id, s->group, s->components, s->plan, s->answer, has_parts ? parts : nullptr);
	}
	return s->answer;
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
	if (!PG_ARGISNULL(1)) {
		s->sum[0].add(PG_GETARG_FLOAT8(1), s->plan[0].grid);
		if (s->components == 2)
			s->sum[1].add(PG_NARGS() > 4 && !PG_ARGISNULL(4) ? PG_GETARG_FLOAT8(4) : 1.0, s->plan[1].grid);
	}
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
	if (s->charge_id != other->charge_id || s->group != other->group || s->components != other->components)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv cannot combine states of different queries or groups");
	for (int c = 0; c < s->components; ++c)
		s->sum[c].merge(other->sum[c]);
	PG_RETURN_POINTER(s);
}

// dx._linear_serialize(state) -> bytea: version, then the state's fields in network order.
DX_FUNCTION(dx_linear_serialize)
{
	auto *s = reinterpret_cast<LinearState *>(PG_GETARG_POINTER(0));
	StringInfoData buf;
	pq_begintypsend(&buf);
	pq_sendbyte(&buf, kStateVersion);
	pq_sendint32(&buf, s->components);
	pq_sendint32(&buf, s->group);
	pq_sendfloat8(&buf, s->epsilon);
	pq_sendfloat8(&buf, s->lo);
	pq_sendfloat8(&buf, s->hi);
	pq_sendint32(&buf, s->relid);
	pq_sendint64(&buf, s->charge_id);
	for (int c = 0; c < 2; ++c) {
		unsigned __int128 u = static_cast<unsigned __int128>(s->sum[c].units);
		pq_sendint64(&buf, static_cast<uint64>(u >> 64));
		pq_sendint64(&buf, static_cast<uint64>(u));
		pq_sendint64(&buf, s->sum[c].rows);
		pq_sendfloat8(&buf, s->plan[c].grid);
		pq_sendfloat8(&buf, s->plan[c].scale);
		pq_sendfloat8(&buf, s->plan[c].bound);
		pq_sendint32(&buf, static_cast<int32>(s->plan[c].family));
	}
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

// dx._linear_deserialize(bytea, internal) -> state.
DX_FUNCTION(dx_linear_deserialize)
{
	MemoryContext aggctx = aggregate_or_current_context(fcinfo);
	StringInfoData buf = bytea_reader(PG_GETARG_BYTEA_PP(0));
	if (buf.len != 1 + 4 + 4 + 24 + 4 + 8 + 2 * 52 || pq_getmsgbyte(&buf) != kStateVersion)
		fail(ERRCODE_DATA_CORRUPTED, "invalid dxpriv aggregate state");
	LinearState *s = new_state(aggctx);
	s->components = pq_getmsgint(&buf, 4);
	s->group = pq_getmsgint(&buf, 4);
	s->epsilon = pq_getmsgfloat8(&buf);
	s->lo = pq_getmsgfloat8(&buf);
	s->hi = pq_getmsgfloat8(&buf);
	s->relid = pq_getmsgint(&buf, 4);
	s->charge_id = pq_getmsgint64(&buf);
	for (int c = 0; c < 2; ++c) {
		uint64 hi = pq_getmsgint64(&buf), lo = pq_getmsgint64(&buf);
		s->sum[c].units = static_cast<__int128>((static_cast<unsigned __int128>(hi) << 64) | lo);
		s->sum[c].rows = pq_getmsgint64(&buf);
		s->plan[c].grid = pq_getmsgfloat8(&buf);
		s->plan[c].scale = pq_getmsgfloat8(&buf);
		s->plan[c].bound = pq_getmsgfloat8(&buf);
		const int32 family = pq_getmsgint(&buf, 4);
		if (family < 0 || family > 2)
			fail(ERRCODE_DATA_CORRUPTED, "invalid dxpriv aggregate state");
		s->plan[c].family = static_cast<NoiseFamily>(family);
		s->plan[c].sensitivity = s->plan[c].scale * s->epsilon;
	}
	if (s->components < 1 || s->components > 2)
		fail(ERRCODE_DATA_CORRUPTED, "invalid dxpriv aggregate state");
	PG_RETURN_POINTER(s);
}

// Final function of dx.count: the noisy count rounded to the nearest integer (post-processing).
DX_FUNCTION(dx_linear_count_finalfn)
{
	LinearState *s = final_state(fcinfo);
	double v = final_answer(s, [&](double *) { return std::nearbyint(release_component(s, 0)); });
	if (!(v > -9.2e18 && v < 9.2e18))
		fail(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE, "noisy count is out of range for bigint");
	PG_RETURN_INT64(static_cast<int64>(v));
}

// Final function of dx.sum and dx.linear: the noisy sum.
DX_FUNCTION(dx_linear_sum_finalfn)
{
	LinearState *s = final_state(fcinfo);
	PG_RETURN_FLOAT8(final_answer(s, [&](double *) { return release_component(s, 0); }));
}

// Final function of dx.avg: noisy sum / max(noisy count, 1), clamped to the value range [lo, hi]
// (post-processing of two d_X-private releases, so no further privacy cost).
DX_FUNCTION(dx_linear_avg_finalfn)
{
	LinearState *s = final_state(fcinfo);
	PG_RETURN_FLOAT8(final_answer(s, [&](double *parts) {
		double total = release_component(s, 0);
		double count = release_component(s, 1);
		parts[0] = total;
		parts[1] = count;
		return std::clamp(total / std::max(count, 1.0), s->lo, s->hi);
	}));
}

// dx._indicator(any): 1 for a non-null argument, else 0 (count(expr)'s weight, evaluated at
// analysis on the declared points).
DX_FUNCTION(dx_indicator)
{
	PG_RETURN_FLOAT8(PG_ARGISNULL(0) ? 0.0 : 1.0);
}
