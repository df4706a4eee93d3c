// Aggregate support: marker aggregates (rejected if not rewritten) and the noisy linear aggregate.
#include "pg/dxpriv.h"
#include "pg/guard.h"

#include "core/linear_query.h"

extern "C" {
#include "catalog/pg_type.h"
#include "libpq/pqformat.h"
#include "nodes/execnodes.h"
#include "nodes/primnodes.h"
#include "utils/builtins.h"
}

#include <cmath>
#include <cstring>

using namespace dxpriv;
using namespace dxpriv::pg;

namespace {

// Partial state of a noisy linear aggregate. Trivially copyable; 16-byte aligned for __int128.
struct LinearState {
	GridSum sum;
	LinearNoisePlan plan;
	double epsilon;
	Oid relid;
	int64 charge_id;
	bool released;
	double answer;
};

constexpr uint8 kStateVersion = 1;

// Allocates a zeroed, 16-byte aligned state in mcxt.
LinearState *
new_state(MemoryContext mcxt)
{
	char *raw = static_cast<char *>(MemoryContextAllocZero(mcxt, sizeof(LinearState) + 16));
	auto *s = reinterpret_cast<LinearState *>(TYPEALIGN(16, reinterpret_cast<uintptr_t>(raw)));
	new (s) LinearState();
	return s;
}

// Reads the constant parameters (arguments 2..6 of the transition function).
void
read_params(LinearState *s, double grid, double scale, double epsilon, Oid relid, int64 charge_id)
{
	s->plan.grid = grid;
	s->plan.scale = scale;
	s->plan.sensitivity = scale * epsilon;
	s->epsilon = epsilon;
	s->relid = relid;
	s->charge_id = charge_id;
}

// Parameters of a query whose aggregate saw no row: the analyzer's constants in the Aggref, or,
// in the finalize phase of a parallel plan (arguments replaced), those recorded when charging.
LinearState *
state_from_aggref(FunctionCallInfo fcinfo)
{
	Aggref *aggref = AggGetAggref(fcinfo);
	if (!aggref)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate called outside a validated query");
	NoiseParams p;
	bool found = false;
	if (list_length(aggref->args) == 6) {
		Const *c[6] = {};
		found = true;
		for (int i = 1; i < 6; ++i) {
			Node *e = (Node *) castNode(TargetEntry, list_nth(aggref->args, i))->expr;
			if (!IsA(e, Const) || castNode(Const, e)->constisnull)
				found = false;
			else
				c[i] = castNode(Const, e);
		}
		if (found)
			p = NoiseParams{DatumGetFloat8(c[1]->constvalue), DatumGetFloat8(c[2]->constvalue),
			                DatumGetFloat8(c[3]->constvalue), DatumGetObjectId(c[4]->constvalue),
			                DatumGetInt64(c[5]->constvalue)};
	}
	if (!found && fcinfo->context && IsA(fcinfo->context, AggState)) {
		EState *estate = castNode(AggState, fcinfo->context)->ss.ps.state;
		found = lookup_noise_params(estate->es_plannedstmt, aggref->aggno, p);
	}
	if (!found)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate parameters are not available");
	LinearState *s = new_state(CurrentMemoryContext);
	read_params(s, p.grid, p.scale, p.epsilon, p.relid, p.charge_id);
	return s;
}

// The noisy answer, drawn once per state (a final function may run twice: same answer).
double
release(FunctionCallInfo fcinfo)
{
	LinearState *s = PG_ARGISNULL(0) ? state_from_aggref(fcinfo) : reinterpret_cast<LinearState *>(PG_GETARG_POINTER(0));
	if (!s->released) {
		if (!was_charged(s->charge_id))
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "dxpriv refuses to release an answer that was not charged",
			     "Run the query directly; dx aggregates are charged when the statement starts.");
		s->answer = s->sum.release(backend_random(), s->plan);
		s->released = true;
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

// dx._linear_transfn(state, weight, grid, scale, epsilon, relid, charge_id)
DX_FUNCTION(dx_linear_transfn)
{
	MemoryContext aggctx;
	if (!AggCheckCallContext(fcinfo, &aggctx))
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate called in a non-aggregate context");
	LinearState *s;
	if (PG_ARGISNULL(0)) {
		for (int i = 2; i <= 6; ++i)
			if (PG_ARGISNULL(i))
				fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate parameters must not be null");
		s = new_state(aggctx);
		read_params(s, PG_GETARG_FLOAT8(2), PG_GETARG_FLOAT8(3), PG_GETARG_FLOAT8(4), PG_GETARG_OID(5),
		            PG_GETARG_INT64(6));
	} else {
		s = reinterpret_cast<LinearState *>(PG_GETARG_POINTER(0));
	}
	if (!PG_ARGISNULL(1))
		s->sum.add(PG_GETARG_FLOAT8(1), s->plan.grid);
	PG_RETURN_POINTER(s);
}

// dx._linear_combinefn(state, state): exact merge of two partial states.
DX_FUNCTION(dx_linear_combinefn)
{
	MemoryContext aggctx;
	if (!AggCheckCallContext(fcinfo, &aggctx))
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate called in a non-aggregate context");
	if (PG_ARGISNULL(1))
		PG_RETURN_POINTER(PG_ARGISNULL(0) ? nullptr : PG_GETARG_POINTER(0));
	auto *other = reinterpret_cast<LinearState *>(PG_GETARG_POINTER(1));
	if (PG_ARGISNULL(0)) {
		LinearState *s = new_state(aggctx);
		*s = *other;
		PG_RETURN_POINTER(s);
	}
	auto *s = reinterpret_cast<LinearState *>(PG_GETARG_POINTER(0));
	if (s->charge_id != other->charge_id || s->plan.grid != other->plan.grid)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv cannot combine states of different queries");
	s->sum.merge(other->sum);
	PG_RETURN_POINTER(s);
}

// dx._linear_serialize(state) -> bytea: version, units (16 bytes), rows, grid, scale, epsilon, relid, charge id.
DX_FUNCTION(dx_linear_serialize)
{
	auto *s = reinterpret_cast<LinearState *>(PG_GETARG_POINTER(0));
	StringInfoData buf;
	pq_begintypsend(&buf);
	pq_sendbyte(&buf, kStateVersion);
	unsigned __int128 u = static_cast<unsigned __int128>(s->sum.units);
	pq_sendint64(&buf, static_cast<uint64>(u >> 64));
	pq_sendint64(&buf, static_cast<uint64>(u));
	pq_sendint64(&buf, s->sum.rows);
	pq_sendfloat8(&buf, s->plan.grid);
	pq_sendfloat8(&buf, s->plan.scale);
	pq_sendfloat8(&buf, s->epsilon);
	pq_sendint32(&buf, s->relid);
	pq_sendint64(&buf, s->charge_id);
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

// dx._linear_deserialize(bytea, internal) -> state.
DX_FUNCTION(dx_linear_deserialize)
{
	MemoryContext aggctx;
	if (!AggCheckCallContext(fcinfo, &aggctx))
		aggctx = CurrentMemoryContext;
	bytea *b = PG_GETARG_BYTEA_PP(0);
	StringInfoData buf;
	buf.data = VARDATA_ANY(b);
	buf.len = VARSIZE_ANY_EXHDR(b);
	buf.maxlen = buf.len;
	buf.cursor = 0;
	if (buf.len != 1 + 16 + 8 + 24 + 4 + 8 || pq_getmsgbyte(&buf) != kStateVersion)
		fail(ERRCODE_DATA_CORRUPTED, "invalid dxpriv aggregate state");
	LinearState *s = new_state(aggctx);
	uint64 hi = pq_getmsgint64(&buf), lo = pq_getmsgint64(&buf);
	s->sum.units = static_cast<__int128>((static_cast<unsigned __int128>(hi) << 64) | lo);
	s->sum.rows = pq_getmsgint64(&buf);
	double grid = pq_getmsgfloat8(&buf), scale = pq_getmsgfloat8(&buf), eps = pq_getmsgfloat8(&buf);
	Oid relid = pq_getmsgint(&buf, 4);
	read_params(s, grid, scale, eps, relid, pq_getmsgint64(&buf));
	PG_RETURN_POINTER(s);
}

// Final function of dx.count: the noisy count rounded to the nearest integer (post-processing).
DX_FUNCTION(dx_linear_count_finalfn)
{
	double v = std::nearbyint(release(fcinfo));
	if (!(v > -9.2e18 && v < 9.2e18))
		fail(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE, "noisy count is out of range for bigint");
	PG_RETURN_INT64(static_cast<int64>(v));
}

// Final function of dx.sum: the noisy sum.
DX_FUNCTION(dx_linear_sum_finalfn)
{
	PG_RETURN_FLOAT8(release(fcinfo));
}
