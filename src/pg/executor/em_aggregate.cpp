// The internal exponential-mechanism aggregate dx._em_select (placed by the analyzer for dx.mode,
// dx.quantile and dx.median) and dx._em_point, which turns the chosen candidate index back into the
// column's value.
//
// dx._em_select(candidate int4, group int4, params float8[]) RETURNS int4: the state is the exact
// per-candidate row count of one output group; transition, combine and (de)serialisation are
// exact and associative, and the only randomness is drawn in the final function, which returns
// the index of the chosen candidate (exact sampler in core/exponential_mechanism.h).
#include "pg/metadata/policy_domain.h"
#include "pg/executor/noise_source.h"
#include "pg/ledger/charge.h"
#include "pg/statement/statement_context.h"
#include "pg/ledger/answer_cache.h"
#include "pg/executor/consistent_release.h"
#include "pg/executor/release_log.h"
#include "pg/contract/em_params.h"
#include "pg/executor/agg_support.h"
#include "pg/guard.h"
#include "pg/contract/noise_params.h"

#include "core/accuracy.h"
#include "core/exponential_mechanism.h"
#include "core/error.h"

extern "C" {
#include "catalog/pg_type.h"
#include "libpq/pqformat.h"
#include "nodes/execnodes.h"
#include "nodes/nodeFuncs.h"
#include "nodes/primnodes.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>

using namespace dxpriv;
using namespace dxpriv::pg;

namespace {

// State of one output group: a fixed header followed by `candidates` int64 counts.
struct EmState {
	int32 group;
	uint32 candidates;
	int32 kind;          // EmKind
	uint32 p_num;
	bool beta_infinite;
	uint64 beta_num;
	double epsilon;
	Oid relid;
	int64 charge_id;
	bool released;
	int32 answer;

	int64 *counts() { return reinterpret_cast<int64 *>(reinterpret_cast<char *>(this) + header_size()); }
	static size_t header_size() { return MAXALIGN(sizeof(EmState)); }
	size_t total_size() const { return header_size() + sizeof(int64) * candidates; }
	EmUtility utility() const { return EmUtility{static_cast<EmKind>(kind), p_num}; }
	EmBeta beta() const { return EmBeta{beta_infinite, beta_num}; }
};

constexpr uint8 kEmStateVersion = 1;

// A zeroed state for `candidates` counts in mcxt.
EmState *
new_em_state(MemoryContext mcxt, uint32 candidates)
{
	void *raw = MemoryContextAllocZero(mcxt, EmState::header_size() + sizeof(int64) * candidates);
	auto *s = new (raw) EmState();
	s->candidates = candidates;
	return s;
}

// The state of output group `group` from the analyzer's parameters.
EmState *
em_state_for_group(MemoryContext mcxt, const NoiseParams &p, int group)
{
	if (group < 0 || group >= p.groups)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate received an invalid output group");
	const EmParams e = decode_em_params(p);
	EmState *s = new_em_state(mcxt, e.candidates);
	s->group = group;
	s->kind = static_cast<int32>(e.utility.kind);
	s->p_num = e.utility.p_num;
	s->beta_infinite = e.beta.infinite;
	s->beta_num = e.beta.num;
	s->epsilon = p.epsilon;
	s->relid = p.relid;
	s->charge_id = p.charge_id;
	return s;
}

// State of an aggregate that saw no row (only without GROUP BY: group 0), from the Aggref's
// constant parameters or, in the finalize phase of a parallel plan, from the charged statement.
EmState *
em_state_from_aggref(FunctionCallInfo fcinfo)
{
	return em_state_for_group(CurrentMemoryContext, final_function_params(fcinfo), 0);
}

// The transition state of dx._em_transfn and dx._em_collect_transfn (state, candidate, group,
// params, ...): argument 0, or a new state for the group from the parameters.
EmState *
transition_state(FunctionCallInfo fcinfo)
{
	MemoryContext aggctx = require_aggregate_context(fcinfo, "dxpriv aggregate");
	if (!PG_ARGISNULL(0))
		return reinterpret_cast<EmState *>(PG_GETARG_POINTER(0));
	if (PG_ARGISNULL(2) || PG_ARGISNULL(3))
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate parameters must not be null");
	return em_state_for_group(aggctx, parse_noise_params(PG_GETARG_ARRAYTYPE_P(3)), PG_GETARG_INT32(2));
}

} // namespace

// dx._em_transfn(state, candidate, group, params): counts one row for its candidate (a NULL
// candidate counts nothing but creates the group's state: empty groups still get an answer).
DX_FUNCTION(dx_em_transfn)
{
	EmState *s = transition_state(fcinfo);
	if (!PG_ARGISNULL(1)) {
		const int32 c = PG_GETARG_INT32(1);
		if (c < 0 || static_cast<uint32>(c) >= s->candidates)
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate received an invalid candidate");
		s->counts()[c]++;
	}
	PG_RETURN_POINTER(s);
}

// dx._em_collect_transfn(state, candidate, group, params, rows): adds a candidate's row count (a row
// of the workers' GROUP BY candidate on a Citus table, combined by Citus) on the coordinator; a
// NULL candidate (rows not counted) adds nothing.
DX_FUNCTION(dx_em_collect_transfn)
{
	EmState *s = transition_state(fcinfo);
	if (!PG_ARGISNULL(1)) {
		const int32 c = PG_GETARG_INT32(1);
		const int64 n = PG_ARGISNULL(4) ? 0 : PG_GETARG_INT64(4);
		if (c < 0 || static_cast<uint32>(c) >= s->candidates || n < 0)
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate received an invalid candidate count");
		if (__builtin_add_overflow(s->counts()[c], n, &s->counts()[c]))
			fail(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE, "candidate count out of range");
	}
	PG_RETURN_POINTER(s);
}

// dx._em_combinefn(state, state): exact merge of two partial states of the same group.
DX_FUNCTION(dx_em_combinefn)
{
	MemoryContext aggctx = require_aggregate_context(fcinfo, "dxpriv aggregate");
	if (PG_ARGISNULL(1))
		PG_RETURN_POINTER(PG_ARGISNULL(0) ? nullptr : PG_GETARG_POINTER(0));
	auto *other = reinterpret_cast<EmState *>(PG_GETARG_POINTER(1));
	if (PG_ARGISNULL(0)) {
		EmState *s = new_em_state(aggctx, other->candidates);
		std::memcpy(static_cast<void *>(s), other, other->total_size());
		PG_RETURN_POINTER(s);
	}
	auto *s = reinterpret_cast<EmState *>(PG_GETARG_POINTER(0));
	if (s->charge_id != other->charge_id || s->group != other->group || s->candidates != other->candidates)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv cannot combine states of different queries or groups");
	int64 *a = s->counts();
	const int64 *b = other->counts();
	for (uint32 r = 0; r < s->candidates; ++r)
		a[r] += b[r];
	PG_RETURN_POINTER(s);
}

// dx._em_serialize(state) -> bytea: version, header fields, then the non-zero counts as
// (candidate, count) pairs, all in network order.
DX_FUNCTION(dx_em_serialize)
{
	auto *s = reinterpret_cast<EmState *>(PG_GETARG_POINTER(0));
	const int64 *c = s->counts();
	uint32 nonzero = 0;
	for (uint32 r = 0; r < s->candidates; ++r)
		nonzero += c[r] != 0;
	StringInfoData buf;
	pq_begintypsend(&buf);
	pq_sendbyte(&buf, kEmStateVersion);
	pq_sendint32(&buf, s->group);
	pq_sendint32(&buf, s->candidates);
	pq_sendint32(&buf, s->kind);
	pq_sendint32(&buf, s->p_num);
	pq_sendbyte(&buf, s->beta_infinite ? 1 : 0);
	pq_sendint64(&buf, static_cast<int64>(s->beta_num));
	pq_sendfloat8(&buf, s->epsilon);
	pq_sendint32(&buf, s->relid);
	pq_sendint64(&buf, s->charge_id);
	pq_sendint32(&buf, nonzero);
	for (uint32 r = 0; r < s->candidates; ++r)
		if (c[r] != 0) {
			pq_sendint32(&buf, r);
			pq_sendint64(&buf, c[r]);
		}
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

// dx._em_deserialize(bytea, internal) -> state.
DX_FUNCTION(dx_em_deserialize)
{
	MemoryContext aggctx = aggregate_or_current_context(fcinfo);
	StringInfoData buf = bytea_reader(PG_GETARG_BYTEA_PP(0));
	constexpr int kHeader = 1 + 4 * 4 + 1 + 8 + 8 + 4 + 8 + 4;
	auto corrupted = [] { fail(ERRCODE_DATA_CORRUPTED, "invalid dxpriv aggregate state"); };
	if (buf.len < kHeader || pq_getmsgbyte(&buf) != kEmStateVersion)
		corrupted();
	const int32 group = pq_getmsgint(&buf, 4);
	const uint32 candidates = pq_getmsgint(&buf, 4);
	if (candidates < 1 || candidates > kMaxDomainSize)
		corrupted();
	EmState *s = new_em_state(aggctx, candidates);
	s->group = group;
	s->kind = pq_getmsgint(&buf, 4);
	s->p_num = pq_getmsgint(&buf, 4);
	s->beta_infinite = pq_getmsgbyte(&buf) != 0;
	s->beta_num = static_cast<uint64>(pq_getmsgint64(&buf));
	s->epsilon = pq_getmsgfloat8(&buf);
	s->relid = pq_getmsgint(&buf, 4);
	s->charge_id = pq_getmsgint64(&buf);
	const uint32 nonzero = pq_getmsgint(&buf, 4);
	if ((s->kind != static_cast<int32>(EmKind::Mode) && s->kind != static_cast<int32>(EmKind::Quantile) &&
	     s->kind != static_cast<int32>(EmKind::Distinct)) ||
	    s->p_num > kQuantileOne || s->beta_num > kEmMaxBetaNum || nonzero > candidates ||
	    buf.len - buf.cursor != static_cast<int>(nonzero) * 12)
		corrupted();
	int64 *c = s->counts();
	for (uint32 i = 0; i < nonzero; ++i) {
		const uint32 r = pq_getmsgint(&buf, 4);
		const int64 n = pq_getmsgint64(&buf);
		if (r >= candidates || n < 0)
			corrupted();
		c[r] = n;
	}
	PG_RETURN_POINTER(s);
}

namespace {

// dx.last_release's row of one exponential-mechanism state: count_distinct's Laplace interval, or
// for dx.mode/quantile/median the 95% bound of Theorem 4 on the utility lost (rows: how far below
// the top count a mode's count, or how many rows away from the target rank a quantile's rank, can
// be), which depends on beta and the number of candidates only.
void
log_exponential_release(const EmState &s)
{
	const EmBeta beta = s.beta();
	if (s.kind == static_cast<int32>(EmKind::Distinct)) {
		LinearNoisePlan plan;
		plan.grid = 1;
		plan.scale = em_distinct_scale(beta);
		release_log_exponential(s.charge_id, s.group, "count_distinct", "value", static_cast<double>(s.answer),
		                        confidence_half_width(plan), "exact", plan.scale);
		return;
	}
	const bool mode = s.kind == static_cast<int32>(EmKind::Mode);
	const double temperature = beta.infinite ? 0.0 : beta.num == 0 ? std::nan("") : std::ldexp(1.0, kEmBetaBits) / beta.num;
	release_log_exponential(s.charge_id, s.group, mode ? "mode" : "quantile", mode ? "count_below_top" : "rank_distance",
	                        std::nan(""), em_utility_loss_bound(beta, s.candidates, std::log(20.0)), "exponential_bound",
	                        temperature);
}

} // namespace

// dx._em_finalfn(state) -> int4: the index of the chosen candidate, drawn once per state and
// replayed from the answer cache when the statement reuses a stored answer.
DX_FUNCTION(dx_em_finalfn)
{
	EmState *s = PG_ARGISNULL(0) ? em_state_from_aggref(fcinfo) : reinterpret_cast<EmState *>(PG_GETARG_POINTER(0));
	const bool distinct = s->kind == static_cast<int32>(EmKind::Distinct);
	if (!s->released) {
		double cached;
		if (answer_cache_replayed(s->charge_id, s->group, cached)) {
			if (!(cached >= (distinct ? -2147483648.0 : 0) && cached < (distinct ? 2147483648.0 : s->candidates)) ||
			    cached != static_cast<double>(static_cast<int32>(cached)))
				fail(ERRCODE_INTERNAL_ERROR, "cached dxpriv answer is not a candidate");
			s->answer = static_cast<int32>(cached);
		} else if (distinct) { // count_distinct: the values present plus discrete Laplace noise
			if (!statement::paid(s->charge_id))
				fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "dxpriv refuses to release an answer that was not charged",
				     "Run the query directly; dx aggregates are charged when the statement starts.");
			const std::vector<int64_t> counts(s->counts(), s->counts() + s->candidates);
			int64 noisy = 0;
			try {
				noisy = em_distinct_release(backend_random(), counts, s->beta());
			} catch (const CoreError &e) {
				fail(ERRCODE_PROGRAM_LIMIT_EXCEEDED, e.what(), e.hint());
			}
			// post-processing: a number of declared values lies in [0, candidates]; without it, the
			// raw value (kept within int4)
			const int64 lo = guc_postprocess ? 0 : INT32_MIN, hi = guc_postprocess ? s->candidates : INT32_MAX;
			s->answer = static_cast<int32>(std::clamp<int64>(noisy, lo, hi));
			answer_cache_note(s->charge_id, s->group, static_cast<double>(s->answer));
		} else {
			if (!statement::paid(s->charge_id))
				fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "dxpriv refuses to release an answer that was not charged",
				     "Run the query directly; dx aggregates are charged when the statement starts.");
			const std::vector<int64_t> counts(s->counts(), s->counts() + s->candidates);
			const EmUtility u = s->utility();
			const std::size_t r =
			    em_sample(backend_random(), em_utilities(u, counts), em_utility_denominator(u), s->beta());
			s->answer = static_cast<int32>(r);
			answer_cache_note(s->charge_id, s->group, static_cast<double>(s->answer));
		}
		s->released = true;
		log_exponential_release(*s);
	}
	PG_RETURN_INT32(s->answer);
}

namespace {

// Per-call-site cache of dx._em_point: the Datum of every domain point (in fn_mcxt).
struct PointCache {
	Datum *points;
	size_t npoints;
};

// Builds the points with domain_datums, exactly as the domain indexers do, so that the returned
// value is bit-identical to the clamped value of that point.
PointCache *
point_cache(FunctionCallInfo fcinfo, const Domain &domain)
{
	MemoryContext mcxt = fcinfo->flinfo->fn_mcxt;
	const Oid type = get_fn_expr_argtype(fcinfo->flinfo, 1);
	int32 typmod = -1;
	if (fcinfo->flinfo->fn_expr && IsA(fcinfo->flinfo->fn_expr, FuncExpr))
		typmod = exprTypmod(static_cast<Node *>(lsecond(castNode(FuncExpr, fcinfo->flinfo->fn_expr)->args)));
	auto *c = static_cast<PointCache *>(MemoryContextAllocZero(mcxt, sizeof(PointCache)));
	MemoryContext old = MemoryContextSwitchTo(mcxt);
	std::vector<Datum> pts = domain_datums(domain, type, typmod);
	c->npoints = pts.size();
	c->points = static_cast<Datum *>(palloc(sizeof(Datum) * pts.size()));
	std::copy(pts.begin(), pts.end(), c->points);
	MemoryContextSwitchTo(old);
	return c;
}

// Point `index` (argument 0) of the cached domain; NULL for a NULL index.
Datum
point_result(FunctionCallInfo fcinfo, const PointCache &c)
{
	if (PG_ARGISNULL(0)) {
		fcinfo->isnull = true;
		return (Datum) 0;
	}
	const int32 i = PG_GETARG_INT32(0);
	if (i < 0 || static_cast<size_t>(i) >= c.npoints)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv candidate index is out of the domain");
	return c.points[i];
}

} // namespace

// dx._em_point(index, NULL::type, lo, hi, step): point `index` of a range (or date) domain.
DX_FUNCTION(dx_em_point_range)
{
	auto *c = static_cast<PointCache *>(fcinfo->flinfo->fn_extra);
	if (!c) {
		if (PG_ARGISNULL(2) || PG_ARGISNULL(3) || PG_ARGISNULL(4))
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv domain arguments must not be null");
		c = point_cache(fcinfo, Domain::range(PG_GETARG_FLOAT8(2), PG_GETARG_FLOAT8(3), PG_GETARG_FLOAT8(4)));
		fcinfo->flinfo->fn_extra = c;
	}
	return point_result(fcinfo, *c);
}

// dx._em_point(index, NULL::type, labels): point `index` of an enumerated domain.
DX_FUNCTION(dx_em_point_enum)
{
	auto *c = static_cast<PointCache *>(fcinfo->flinfo->fn_extra);
	if (!c) {
		if (PG_ARGISNULL(2))
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv domain arguments must not be null");
		c = point_cache(fcinfo, Domain::enumerated(text_array_strings(PG_GETARG_ARRAYTYPE_P(2))));
		fcinfo->flinfo->fn_extra = c;
	}
	return point_result(fcinfo, *c);
}
