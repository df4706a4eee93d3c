// count_units beside other aggregates in one scan (unitmixed2): dx._noisy_count_units counts the
// distinct units of the rows it is given (a unit profile's kept rows) whose weight is not NULL.
//
// The rows come from the unit profile's keep qual (planner/unit_profile_source.h), the same kept
// rows as the hash pass under one key. The hash pass flags, per unit, its first kept row (in rank
// order) whose weight is not NULL, and dx._noisy_count adds 1 per flag: the count is the number of
// units with at least one kept row whose weight is not NULL. This aggregate computes that number
// directly: per row whose weight is not NULL it records the unit's 64-bit hash (executor/unit_hash.h,
// the hash that identifies a unit in the profile; a NULL unit is one unit, kept as a flag) in a
// tuplesort of int8 (bounded by work_mem, spilling to temporary files as PostgreSQL's own
// count(DISTINCT) does), and at the end counts the distinct values. The released state is the
// LinearState that dx._noisy_count would hold (one add_row(1.0) per counted unit), released by the
// same function, so the answer, its noise and its charge are those of the hash pass.
//
// Collisions: int2/int4/int8/oid units hash by a bijection (mix64), so their count is exact; other
// types by their default hash opclass's 64-bit extended hash, as in the unit profile itself. Two
// units with one hash count once. A collision can only LOWER the count, never raise it, and the
// sensitivity stays 1 per unit: adding or removing one unit's rows adds or removes at most one
// distinct hash (the hashes of the other units are unchanged), whatever the collisions. A unit whose
// hash function is not built in is hashed through the sealed path as the table's owner, as by
// dx._unit_keep.
//
// Parallel: a worker's state is serialized as its sorted distinct hashes; the leader's combine puts
// them into its own tuplesort (the union of the sets). The serialized bytes travel only between
// PostgreSQL's own processes of this statement; the deserialize function takes an internal argument
// (not callable from SQL), and an analyst cannot place this aggregate (refused by the analyzer,
// like every internal aggregate).
#include "pg/executor/agg_support.h"
#include "pg/executor/linear_state.h"
#include "pg/executor/unit_hash.h"
#include "pg/elevated/sealed_scan.h"
#include "pg/guard.h"

extern "C" {
#include "catalog/pg_operator.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "utils/tuplesort.h"
}

using namespace dxpriv;
using namespace dxpriv::pg;

namespace {

constexpr uint8 kUnitSetVersion = 1;

constexpr int kMaxParts = 8; // sorted parts kept by a combined state before they are merged into one

// A sorted run of distinct hashes (increasing as int8).
struct HashPart {
	int64 *vals;
	int64 n;
};

// The state of one group (trivially destructible; its memory is the aggregate context's). A
// transition state puts its hashes into `sort`; a deserialized state holds one part (a worker's
// distinct hashes); a combined state (the leader's union) holds the parts it was given, merged at
// the end without another sort.
struct UnitSetState {
	LinearState *lin;      // the count's parameters; its rows are added at release
	Tuplesortstate *sort;  // the hashes put (nullptr: none, or ended)
	HashPart parts[kMaxParts];
	int nparts;
	MemoryContext mcxt;    // the aggregate context
	UnitHasher hasher;
	bool null_seen;        // a NULL unit had a counted row
	bool have_last;        // the previous row's hash (consecutive rows of one unit put once)
	uint64 last;
};

// Ends the sort of a state (AggRegisterCallback: the aggregate's reset or shutdown).
void
end_unit_set_sort(Datum arg)
{
	auto *s = reinterpret_cast<UnitSetState *>(DatumGetPointer(arg));
	if (s->sort) {
		Tuplesortstate *t = s->sort;
		s->sort = nullptr;
		tuplesort_end(t);
	}
}

// A new state in aggctx for lin (copied); with_sort: an empty sort of int8 bounded by work_mem
// divided among the statement's groups (at least 64 kB each), ended by the aggregate's shutdown.
UnitSetState *
new_unit_set(FunctionCallInfo fcinfo, MemoryContext aggctx, const LinearState &lin, int groups, bool with_sort)
{
	auto *s = static_cast<UnitSetState *>(MemoryContextAllocZero(aggctx, sizeof(UnitSetState)));
	s->lin = new_state(aggctx);
	*s->lin = lin;
	s->mcxt = aggctx;
	if (with_sort) {
		const int mem = Max(64, work_mem / Max(1, groups));
		MemoryContext old = MemoryContextSwitchTo(aggctx);
		s->sort = tuplesort_begin_datum(INT8OID, Int8LessOperator, InvalidOid, false, mem, nullptr, TUPLESORT_NONE);
		MemoryContextSwitchTo(old);
		AggRegisterCallback(fcinfo, end_unit_set_sort, PointerGetDatum(s));
	}
	return s;
}

// The first row of a group: its state, from the constant parameters (argument 3) and the unit's
// type and collation (argument 4).
pg_noinline UnitSetState *
unit_set_setup(FunctionCallInfo fcinfo)
{
	UnitSetState *out = nullptr;
	guarded([&] {
		MemoryContext aggctx = require_aggregate_context(fcinfo, "dxpriv aggregate");
		if (PG_ARGISNULL(2) || PG_ARGISNULL(3))
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate parameters must not be null");
		LinearState *lin;
		int groups;
		Oid relid;
		{ // (the parameters' vectors end before the PostgreSQL calls below)
			const NoiseParams p = parse_noise_params(PG_GETARG_ARRAYTYPE_P(3));
			lin = state_for_group(CurrentMemoryContext, p, PG_GETARG_INT32(2));
			groups = p.groups;
			relid = p.relid;
		}
		UnitSetState *s = new_unit_set(fcinfo, aggctx, *lin, groups, true);
		const Oid type = get_fn_expr_argtype(fcinfo->flinfo, 4);
		// a hash function that is not built in runs sealed, as the table's owner (as in dx._unit_keep)
		init_unit_hasher(&s->hasher, type, PG_GET_COLLATION(), aggctx,
		                 "Set dxpriv.unit_profiles to off, or use a unit column of a hashable type.", true,
		                 sealed_read_user(relid));
		out = s;
		return Datum(0);
	});
	return out;
}

// Puts hash h (not the previous row's) into s's sort.
inline void
put_hash(UnitSetState *s, uint64 h)
{
	if (s->have_last && s->last == h)
		return;
	s->have_last = true;
	s->last = h;
	tuplesort_putdatum(s->sort, Int64GetDatum(static_cast<int64>(h)), false);
}

// Calls f on each distinct hash of s's sort and parts, in increasing order (as int64): a merge of
// the sorted sources (the sort's stream and at most kMaxParts parts). Ends the sort and frees the
// parts: a state is read once.
template <class F>
void
for_each_distinct(UnitSetState *s, F &&f)
{
	int64 pos[kMaxParts] = {};
	bool have_sorted = false;
	int64 sorted = 0;
	auto next_sorted = [&] {
		Datum d;
		bool isnull;
		have_sorted = s->sort && tuplesort_getdatum(s->sort, true, &d, &isnull, nullptr);
		if (have_sorted)
			sorted = DatumGetInt64(d);
	};
	if (s->sort) {
		tuplesort_performsort(s->sort);
		next_sorted();
	}
	bool first = true;
	int64 prev = 0;
	for (;;) {
		bool any = have_sorted;
		int64 v = sorted;
		for (int i = 0; i < s->nparts; ++i)
			if (pos[i] < s->parts[i].n && (!any || s->parts[i].vals[pos[i]] < v)) {
				v = s->parts[i].vals[pos[i]];
				any = true;
			}
		if (!any)
			break;
		if (have_sorted && sorted == v)
			next_sorted();
		for (int i = 0; i < s->nparts; ++i)
			if (pos[i] < s->parts[i].n && s->parts[i].vals[pos[i]] == v)
				pos[i]++;
		if (first || v != prev)
			f(v);
		first = false;
		prev = v;
	}
	end_unit_set_sort(PointerGetDatum(s));
	for (int i = 0; i < s->nparts; ++i)
		pfree(s->parts[i].vals);
	s->nparts = 0;
}

// Moves the distinct hashes of other (read once) into one new part of s; when s holds kMaxParts
// parts, they are merged into one first.
void
take_part(UnitSetState *s, UnitSetState *other)
{
	auto collect = [](UnitSetState *from, MemoryContext mcxt, HashPart &out) {
		Size cap = 1024;
		for (int i = 0; i < from->nparts; ++i)
			cap += static_cast<Size>(from->parts[i].n);
		out.vals = static_cast<int64 *>(MemoryContextAllocHuge(mcxt, cap * sizeof(int64)));
		out.n = 0;
		for_each_distinct(from, [&](int64 v) {
			if (static_cast<Size>(out.n) == cap) {
				cap *= 2;
				out.vals = static_cast<int64 *>(repalloc_huge(out.vals, cap * sizeof(int64)));
			}
			out.vals[out.n++] = v;
		});
	};
	if (s->nparts == kMaxParts) {
		HashPart merged;
		collect(s, s->mcxt, merged);
		s->parts[0] = merged;
		s->nparts = 1;
	}
	if (!other->sort && other->nparts == 1) { // (a deserialized state: its part as it is)
		s->parts[s->nparts++] = other->parts[0];
		other->nparts = 0;
		return;
	}
	HashPart p;
	collect(other, s->mcxt, p);
	s->parts[s->nparts++] = p;
}

[[noreturn]] void
unit_set_corrupted()
{
	fail(ERRCODE_DATA_CORRUPTED, "dxpriv received a malformed count_units state");
}

} // namespace

extern "C" {
PG_FUNCTION_INFO_V1(dx_count_units_transfn);
// dx._count_units_transfn(state, weight, group, params, unit): a row whose weight is not NULL puts
// its unit's hash (a NULL weight adds nothing but creates the group's state). The per-row path
// holds no C++ object; tuplesort_putdatum raises only when memory or temporary files fail.
Datum
dx_count_units_transfn(PG_FUNCTION_ARGS)
{
	UnitSetState *s = PG_ARGISNULL(0) ? unit_set_setup(fcinfo) : reinterpret_cast<UnitSetState *>(PG_GETARG_POINTER(0));
	if (PG_ARGISNULL(1))
		PG_RETURN_POINTER(s);
	if (PG_ARGISNULL(4)) {
		s->null_seen = true; // every NULL unit is one unit
		PG_RETURN_POINTER(s);
	}
	put_hash(s, unit_hash_value(&s->hasher, PG_GETARG_DATUM(4), false));
	PG_RETURN_POINTER(s);
}
}

// dx._count_units_combinefn(state, state): the union of two groups' sets of the same aggregate.
DX_FUNCTION(dx_count_units_combinefn)
{
	MemoryContext aggctx = require_aggregate_context(fcinfo, "dxpriv aggregate");
	if (PG_ARGISNULL(1))
		PG_RETURN_POINTER(PG_ARGISNULL(0) ? nullptr : PG_GETARG_POINTER(0));
	auto *other = reinterpret_cast<UnitSetState *>(PG_GETARG_POINTER(1));
	UnitSetState *s;
	if (PG_ARGISNULL(0)) {
		s = new_unit_set(fcinfo, aggctx, *other->lin, 1, false);
	} else {
		s = reinterpret_cast<UnitSetState *>(PG_GETARG_POINTER(0));
		LinearState check = *s->lin; // (no rows yet: merge_states checks statement, aggregate and group)
		merge_states(check, *other->lin);
	}
	s->null_seen = s->null_seen || other->null_seen;
	take_part(s, other); // (merged with the others at the end: no second sort)
	PG_RETURN_POINTER(s);
}

// dx._count_units_serialize(state) -> bytea: version, the LinearState's bytes, the NULL flag, then
// the distinct hashes in increasing order (int64, network order).
DX_FUNCTION(dx_count_units_serialize)
{
	auto *s = reinterpret_cast<UnitSetState *>(PG_GETARG_POINTER(0));
	bytea *lin = serialize_linear_state(*s->lin);
	StringInfoData buf;
	pq_begintypsend(&buf);
	pq_sendbyte(&buf, kUnitSetVersion);
	pq_sendint32(&buf, static_cast<int32>(VARSIZE(lin) - VARHDRSZ));
	pq_sendbytes(&buf, VARDATA(lin), static_cast<int>(VARSIZE(lin) - VARHDRSZ));
	pq_sendbyte(&buf, s->null_seen ? 1 : 0);
	for_each_distinct(s, [&](int64 v) { pq_sendint64(&buf, v); });
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

// dx._count_units_deserialize(bytea, internal) -> state; refuses malformed bytes (data corrupted):
// a bad version or length, or hashes not strictly increasing (as int8, the sort's order).
DX_FUNCTION(dx_count_units_deserialize)
{
	MemoryContext mcxt = aggregate_or_current_context(fcinfo);
	StringInfoData buf = bytea_reader(PG_GETARG_BYTEA_PP(0));
	if (buf.len < 1 + 4 || pq_getmsgbyte(&buf) != kUnitSetVersion)
		unit_set_corrupted();
	const int32 n = pq_getmsgint(&buf, 4);
	if (n <= 0 || n > buf.len - buf.cursor - 1)
		unit_set_corrupted();
	bytea *lin = static_cast<bytea *>(palloc(VARHDRSZ + n));
	SET_VARSIZE(lin, VARHDRSZ + n);
	pq_copymsgbytes(&buf, VARDATA(lin), n);
	const LinearState state = deserialize_linear_state(lin);
	const int flag = pq_getmsgbyte(&buf);
	if ((flag != 0 && flag != 1) || (buf.len - buf.cursor) % 8 != 0)
		unit_set_corrupted();
	auto *s = static_cast<UnitSetState *>(MemoryContextAllocZero(mcxt, sizeof(UnitSetState)));
	s->lin = new_state(mcxt);
	*s->lin = state;
	s->mcxt = mcxt;
	s->null_seen = flag == 1;
	HashPart &part = s->parts[0];
	s->nparts = 1;
	part.n = (buf.len - buf.cursor) / 8;
	part.vals = static_cast<int64 *>(MemoryContextAllocHuge(mcxt, Max(part.n, 1) * sizeof(int64)));
	for (int64 i = 0; i < part.n; ++i) {
		part.vals[i] = pq_getmsgint64(&buf);
		if (i > 0 && part.vals[i] <= part.vals[i - 1])
			unit_set_corrupted();
	}
	PG_RETURN_POINTER(s);
}

// Final function of dx._noisy_count_units: the number of distinct units counted, released as
// dx._noisy_count releases its count (rounded).
DX_FUNCTION(dx_count_units_finalfn)
{
	LinearState *lin;
	if (PG_ARGISNULL(0)) { // no row (ungrouped): the Aggref's parameters, group 0
		lin = state_for_group(CurrentMemoryContext, final_function_params(fcinfo), 0);
	} else {
		auto *s = reinterpret_cast<UnitSetState *>(PG_GETARG_POINTER(0));
		int64 n = s->null_seen ? 1 : 0;
		for_each_distinct(s, [&](int64) { ++n; });
		lin = s->lin;
		for (int64 i = 0; i < n; ++i)
			add_row(*lin, 1.0);
	}
	PG_RETURN_INT64(count_as_bigint(release_linear_state(lin, LinearRelease::Count)));
}
