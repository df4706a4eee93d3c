// Local-model SQL functions: the two randomisers, the dx.ibu reconstruction aggregate and the
// Kantorovich distance. The mathematics is in core/local_model.h; this file reads arguments, keeps
// the aggregate's exact partial state (report counts) and builds result Datums.
//
// These functions read no protected table and charge no budget: a randomiser runs where a value
// is collected (its output is the private report), and dx.ibu / dx.kantorovich are
// post-processing of reports that are already private.
#include "pg/executor/noise_source.h"
#include "pg/executor/agg_support.h"
#include "pg/guard.h"

#include "core/local_model.h"

extern "C" {
#include "catalog/pg_type.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
}

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace dxpriv;
using namespace dxpriv::pg;

namespace {

// Partial state of dx.ibu: the parameters (so that workers, the leader and Citus nodes need no
// query tree) and the number of reports of each value lo..hi. palloc'd in the aggregate context,
// trivially destructible.
struct IbuState {
	int32 lo, hi;
	int32 iterations;
	uint8 mechanism; // LocalMechanism
	double epsilon;
	int64 total;     // non-null reports seen
	int64 counts[FLEXIBLE_ARRAY_MEMBER];
};

constexpr uint8 kIbuStateVersion = 1;

// Number of values of a state's domain (validated when the state was built).
int64
state_size(const IbuState *s)
{
	return static_cast<int64>(s->hi) - s->lo + 1;
}

// Allocates a zeroed state for k values in mcxt.
IbuState *
new_ibu_state(MemoryContext mcxt, int64 k)
{
	return static_cast<IbuState *>(
	    MemoryContextAllocZero(mcxt, offsetof(IbuState, counts) + static_cast<Size>(k) * sizeof(int64)));
}

// Validates the parameters of dx.ibu; throws CoreError (mapped to an errcode) when invalid.
void
validate_ibu_parameters(int32 lo, int32 hi, double epsilon, int32 iterations)
{
	local_domain_size(lo, hi, kMaxIbuDomain);
	sampling_epsilon(LocalMechanism::TruncatedGeometric, epsilon); // epsilon finite and >= 2^-20
	if (iterations < 1 || iterations > kMaxIbuIterations)
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "iterations must be between 1 and 1000000",
		     "The reference experiments use 5000 iterations.");
}

// The mechanism named by a text argument.
LocalMechanism
mechanism_from_text(const text *t)
{
	return parse_local_mechanism(std::string(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t)));
}

// True when a text argument names the state's mechanism (cheap per-row check, no allocation).
bool
same_mechanism(const text *t, uint8 mechanism)
{
	const char *name = local_mechanism_name(static_cast<LocalMechanism>(mechanism));
	const size_t len = std::strlen(name);
	return VARSIZE_ANY_EXHDR(t) == len && std::memcmp(VARDATA_ANY(t), name, len) == 0;
}

[[noreturn]] void
fail_mixed_parameters()
{
	fail(ERRCODE_INVALID_PARAMETER_VALUE, "dx.ibu parameters must be the same for every row",
	     "Pass constants for lo, hi, epsilon, mechanism and iterations.");
}

// Raises unless both states were built with the same parameters.
void
check_same_parameters(const IbuState *a, const IbuState *b)
{
	if (a->lo != b->lo || a->hi != b->hi || a->iterations != b->iterations || a->mechanism != b->mechanism ||
	    a->epsilon != b->epsilon)
		fail_mixed_parameters();
}

// Reads a one-dimensional float8[] without NULLs into palloc'd memory; *n gets its length.
double *
float8_array_arg(ArrayType *array, int *n, const char *name)
{
	if (ARR_NDIM(array) > 1)
		fail(ERRCODE_INVALID_PARAMETER_VALUE, std::string(name) + " must be a one-dimensional array",
		     "Pass one probability per value, e.g. ARRAY[0.25, 0.5, 0.25].");
	Datum *elems;
	bool *nulls;
	deconstruct_array(array, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &elems, &nulls, n);
	double *out = static_cast<double *>(palloc(sizeof(double) * (*n > 0 ? *n : 1)));
	for (int i = 0; i < *n; ++i) {
		if (nulls[i])
			fail(ERRCODE_NULL_VALUE_NOT_ALLOWED, std::string(name) + " must not contain nulls",
			     "Give the probability of every value, using 0 for values never seen.");
		out[i] = DatumGetFloat8(elems[i]);
	}
	return out;
}

} // namespace

// dx.geometric_randomize(value, lo, hi, epsilon): truncated geometric report of value (STRICT).
DX_FUNCTION(dx_geometric_randomize)
{
	const int32 value = PG_GETARG_INT32(0), lo = PG_GETARG_INT32(1), hi = PG_GETARG_INT32(2);
	const double epsilon = PG_GETARG_FLOAT8(3);
	const int64 report = geometric_randomize(backend_random(), value, lo, hi, epsilon);
	PG_RETURN_INT32(static_cast<int32>(report)); // in [lo, hi], so it fits
}

// dx.krr_randomize(value, lo, hi, epsilon): k-ary randomized response report of value (STRICT).
DX_FUNCTION(dx_krr_randomize)
{
	const int32 value = PG_GETARG_INT32(0), lo = PG_GETARG_INT32(1), hi = PG_GETARG_INT32(2);
	const double epsilon = PG_GETARG_FLOAT8(3);
	const int64 report = krr_randomize(backend_random(), value, lo, hi, epsilon);
	PG_RETURN_INT32(static_cast<int32>(report));
}

// dx._ibu_transfn(state, reported, lo, hi, epsilon, mechanism, iterations): counts one report.
// Non-strict: the first row builds the state; a NULL report counts nothing.
DX_FUNCTION(dx_ibu_transfn)
{
	MemoryContext aggctx = require_aggregate_context(fcinfo, "dx.ibu transition function");
	for (int i = 2; i <= 6; ++i)
		if (PG_ARGISNULL(i))
			fail(ERRCODE_NULL_VALUE_NOT_ALLOWED, "dx.ibu parameters must not be null",
			     "Pass lo, hi, epsilon, mechanism and iterations as constants.");
	const int32 lo = PG_GETARG_INT32(2), hi = PG_GETARG_INT32(3), iterations = PG_GETARG_INT32(6);
	const double epsilon = PG_GETARG_FLOAT8(4);
	const text *mechanism = PG_GETARG_TEXT_PP(5);
	IbuState *s;
	if (PG_ARGISNULL(0)) {
		const uint8 mech = static_cast<uint8>(mechanism_from_text(mechanism));
		validate_ibu_parameters(lo, hi, epsilon, iterations);
		s = new_ibu_state(aggctx, static_cast<int64>(hi) - lo + 1);
		s->lo = lo;
		s->hi = hi;
		s->iterations = iterations;
		s->mechanism = mech;
		s->epsilon = epsilon;
	} else {
		s = reinterpret_cast<IbuState *>(PG_GETARG_POINTER(0));
		if (s->lo != lo || s->hi != hi || s->iterations != iterations || s->epsilon != epsilon ||
		    !same_mechanism(mechanism, s->mechanism))
			fail_mixed_parameters();
	}
	if (!PG_ARGISNULL(1)) {
		const int32 reported = PG_GETARG_INT32(1);
		if (reported < s->lo || reported > s->hi)
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "reported value is outside the domain [lo, hi]",
			     "Reports must come from a randomiser over the same domain.");
		++s->counts[static_cast<int64>(reported) - s->lo];
		++s->total;
	}
	PG_RETURN_POINTER(s);
}

// dx._ibu_combinefn(state, state): adds the report counts of two partial states (exact).
DX_FUNCTION(dx_ibu_combinefn)
{
	MemoryContext aggctx = require_aggregate_context(fcinfo, "dx.ibu combine function");
	if (PG_ARGISNULL(1))
		PG_RETURN_POINTER(PG_ARGISNULL(0) ? nullptr : PG_GETARG_POINTER(0));
	auto *other = reinterpret_cast<IbuState *>(PG_GETARG_POINTER(1));
	const int64 k = state_size(other);
	if (PG_ARGISNULL(0)) {
		IbuState *copy = new_ibu_state(aggctx, k);
		std::memcpy(copy, other, offsetof(IbuState, counts) + static_cast<Size>(k) * sizeof(int64));
		PG_RETURN_POINTER(copy);
	}
	auto *s = reinterpret_cast<IbuState *>(PG_GETARG_POINTER(0));
	check_same_parameters(s, other);
	for (int64 i = 0; i < k; ++i)
		s->counts[i] += other->counts[i];
	s->total += other->total;
	PG_RETURN_POINTER(s);
}

// dx._ibu_serialize(state) -> bytea: version, mechanism, lo, hi, epsilon, iterations, total, then
// the number of non-zero cells and (index, count) pairs, all in network order.
DX_FUNCTION(dx_ibu_serialize)
{
	auto *s = reinterpret_cast<IbuState *>(PG_GETARG_POINTER(0));
	const int64 k = state_size(s);
	int32 nonzero = 0;
	for (int64 i = 0; i < k; ++i)
		nonzero += s->counts[i] != 0;
	StringInfoData buf;
	pq_begintypsend(&buf);
	pq_sendbyte(&buf, kIbuStateVersion);
	pq_sendbyte(&buf, s->mechanism);
	pq_sendint32(&buf, s->lo);
	pq_sendint32(&buf, s->hi);
	pq_sendfloat8(&buf, s->epsilon);
	pq_sendint32(&buf, s->iterations);
	pq_sendint64(&buf, s->total);
	pq_sendint32(&buf, nonzero);
	for (int64 i = 0; i < k; ++i) {
		if (s->counts[i] != 0) {
			pq_sendint32(&buf, static_cast<int32>(i));
			pq_sendint64(&buf, s->counts[i]);
		}
	}
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

// dx._ibu_deserialize(bytea, internal) -> state; rejects anything that is not a well-formed state.
DX_FUNCTION(dx_ibu_deserialize)
{
	MemoryContext aggctx = aggregate_or_current_context(fcinfo);
	StringInfoData buf = bytea_reader(PG_GETARG_BYTEA_PP(0));
	constexpr int kHeader = 1 + 1 + 4 + 4 + 8 + 4 + 8 + 4;
	if (buf.len < kHeader || pq_getmsgbyte(&buf) != kIbuStateVersion)
		fail(ERRCODE_DATA_CORRUPTED, "invalid dx.ibu aggregate state");
	const int mechanism = pq_getmsgbyte(&buf);
	const int32 lo = pq_getmsgint(&buf, 4), hi = pq_getmsgint(&buf, 4);
	const double epsilon = pq_getmsgfloat8(&buf);
	const int32 iterations = pq_getmsgint(&buf, 4);
	const int64 total = pq_getmsgint64(&buf);
	const int32 nonzero = pq_getmsgint(&buf, 4);
	const bool valid_mechanism = mechanism == static_cast<int>(LocalMechanism::TruncatedGeometric) ||
	                             mechanism == static_cast<int>(LocalMechanism::KRandomizedResponse);
	const int64 k = static_cast<int64>(hi) - lo + 1;
	if (!valid_mechanism || lo > hi || k > static_cast<int64>(kMaxIbuDomain) || !(epsilon > 0) ||
	    std::isinf(epsilon) || iterations < 1 || total < 0 || nonzero < 0 || nonzero > k ||
	    buf.len - buf.cursor != nonzero * 12)
		fail(ERRCODE_DATA_CORRUPTED, "invalid dx.ibu aggregate state");
	IbuState *s = new_ibu_state(aggctx, k);
	s->mechanism = static_cast<uint8>(mechanism);
	s->lo = lo;
	s->hi = hi;
	s->epsilon = epsilon;
	s->iterations = iterations;
	s->total = total;
	int64 previous = -1, sum = 0;
	for (int32 j = 0; j < nonzero; ++j) {
		const int64 index = pq_getmsgint(&buf, 4);
		const int64 count = pq_getmsgint64(&buf);
		if (index <= previous || index >= k || count <= 0 || count > total - sum)
			fail(ERRCODE_DATA_CORRUPTED, "invalid dx.ibu aggregate state");
		s->counts[index] = count;
		sum += count;
		previous = index;
	}
	if (sum != total)
		fail(ERRCODE_DATA_CORRUPTED, "invalid dx.ibu aggregate state");
	PG_RETURN_POINTER(s);
}

// dx._ibu_finalfn(state) -> float8[]: the IBU estimate of P(value = lo + i), i = 0..hi-lo, from the
// counted reports, with the channel the dx randomisers realise exactly (sampling epsilon). A
// deterministic function of the state, so it may run more than once. NULL when no report was seen.
DX_FUNCTION(dx_ibu_finalfn)
{
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	auto *s = reinterpret_cast<IbuState *>(PG_GETARG_POINTER(0));
	if (s->total == 0)
		PG_RETURN_NULL();
	const int64 k = state_size(s);
	// Result memory first, while no C++ object is alive.
	Datum *elems = static_cast<Datum *>(palloc(sizeof(Datum) * static_cast<Size>(k)));
	{
		const auto mechanism = static_cast<LocalMechanism>(s->mechanism);
		std::vector<std::uint64_t> counts(s->counts, s->counts + k);
		IbuOptions options;
		options.iterations = s->iterations;
		options.tolerance = 0.0; // run all iterations unless an exact fixed point is reached
		// Cancellation: CHECK_FOR_INTERRUPTS may ereport; pg_call turns that into an exception.
		options.progress = [] { pg_call([] { CHECK_FOR_INTERRUPTS(); }); };
		options.progress_every = 16;
		const LocalChannel channel =
		    LocalChannel::make(mechanism, static_cast<std::size_t>(k), sampling_epsilon(mechanism, s->epsilon));
		const IbuResult result = iterative_bayesian_update(counts, channel, options);
		for (int64 i = 0; i < k; ++i)
			elems[i] = Float8GetDatum(result.theta[static_cast<std::size_t>(i)]);
	}
	ArrayType *out = construct_array(elems, static_cast<int>(k), FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL,
	                                 TYPALIGN_DOUBLE);
	PG_RETURN_ARRAYTYPE_P(out);
}

// dx.kantorovich(p, q): Kantorovich distance between two distributions on 0..n-1 (STRICT).
DX_FUNCTION(dx_kantorovich)
{
	int np = 0, nq = 0;
	const double *p = float8_array_arg(PG_GETARG_ARRAYTYPE_P(0), &np, "first distribution");
	const double *q = float8_array_arg(PG_GETARG_ARRAYTYPE_P(1), &nq, "second distribution");
	double distance;
	{
		const std::vector<double> pv(p, p + np), qv(q, q + nq);
		distance = kantorovich(pv, qv);
	}
	PG_RETURN_FLOAT8(distance);
}
