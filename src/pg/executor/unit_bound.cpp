// Privacy units without a sort: dx._unit_bound keeps, in one hash pass over the rows, each unit's
// max_rows rows of smallest rank (the rule of core/unit_bound.h unit_kept_rows), combinable across
// parallel workers; dx._unit_rows emits the kept rows' columns (planner/unit_source.h).
#include "pg/executor/agg_support.h"
#include "pg/guard.h"

#include "core/random.h"

extern "C" {
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "libpq/pqformat.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/typcache.h"
}

#include <cstring>

using namespace dxpriv;
using namespace dxpriv::pg;

namespace {

constexpr uint8 kUnitBoundVersion = 1;
constexpr int kMaxColumns = 1000;
// Rows are first appended to one of kParts buffers by the top bits of their unit's hash, and a full
// buffer is applied to its partition's own hash table: each partition's table and rows stay small
// enough for the processor caches, where one table of every unit would miss on every row.
constexpr int kPartBits = 8;
constexpr int kParts = 1 << kPartBits;
constexpr uint32 kBufferRows = 256;
constexpr Size kArenaBlock = 64 * 1024;

// One kept row: its rank, then ncols Datums and ncols tags (UnitBound::row_size bytes).
struct KeptRow {
	int64 rank;
	Datum vals[FLEXIBLE_ARRAY_MEMBER];
};

// One unit: its key (a copy of the unit value), its kept rows (a max-heap by rank once it holds
// max_rows rows, sorted by rank after finalize).
struct Unit {
	uint64 hash;
	Datum key;
	char *rows; // cap * row_size bytes
	uint32 n, cap;
	bool key_null;
	bool used;
};

// A row waiting in its partition's buffer: the unit's hash and key, then the row (KeptRow layout).
struct Pending {
	uint64 hash;
	Datum key;
	bool key_null;
	// followed by a KeptRow of row_size bytes
};

// One partition: its units (open addressing on the low bits of the hash), the arena its units' row
// arrays are cut from, and its buffer of pending rows.
struct UnitPart {
	Unit *units;
	uint64 cap, used;
	char *arena;
	Size arena_left;
	char *buf;
	uint32 nbuf;
};

// The state (after finalize, every unit's kept rows are sorted by rank).
struct UnitBound {
	MemoryContext mcxt;
	int32 k;
	int ncols;        // payload columns (the unit is not one of them)
	Size row_size;
	Size pending_size;
	Oid unit_type;
	Oid collation;
	int16 unit_len;
	bool unit_byval;
	bool unit_fast;   // int2/int4/int8/oid: the Datum itself is the key (binary equality = equality)
	FmgrInfo hash_fn, eq_fn;
	Oid *col_type;
	int16 *col_len;
	bool *col_byval;
	UnitPart parts[kParts];
	char *tmp; // one row of scratch
	// finalize
	bool finalized;
	uint64 handle;
	uint64 nrows;
};

[[noreturn]] void
corrupted_unit_state()
{
	fail(ERRCODE_DATA_CORRUPTED, "invalid dxpriv aggregate state",
	     "Aggregate states are produced by dxpriv itself; they cannot be written by hand.");
}

// Each value of a kept row has a tag: a Datum (by value, or a pointer the state owns), NULL, or a
// short varlena stored inline in its Datum slot (no allocation per row, read where the row is).
constexpr uint8 kValue = 0, kNull = 1, kInline = 2;

inline uint8 *
row_tags(const UnitBound *s, KeptRow *r)
{
	return reinterpret_cast<uint8 *>(r->vals + s->ncols);
}

inline KeptRow *
unit_row(const UnitBound *s, const Unit *u, uint32 i)
{
	return reinterpret_cast<KeptRow *>(u->rows + static_cast<Size>(i) * s->row_size);
}

inline KeptRow *
pending_row(Pending *p)
{
	return reinterpret_cast<KeptRow *>(reinterpret_cast<char *>(p) + MAXALIGN(sizeof(Pending)));
}

// The unit type's hash and equality (the default hash opclass: the equality of GROUP BY).
void
init_unit_type(UnitBound *s, Oid type, Oid collation)
{
	s->unit_type = type;
	s->collation = collation;
	get_typlenbyval(type, &s->unit_len, &s->unit_byval);
	s->unit_fast = type == INT2OID || type == INT4OID || type == INT8OID || type == OIDOID;
	if (s->unit_fast)
		return;
	TypeCacheEntry *tc = lookup_type_cache(type, TYPECACHE_HASH_EXTENDED_PROC_FINFO | TYPECACHE_EQ_OPR_FINFO);
	if (!OidIsValid(tc->hash_extended_proc) || !OidIsValid(tc->eq_opr))
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "the privacy unit column's type has no hash function",
		     "Set dxpriv.unit_bounding to 'sort', or use a unit column of a hashable type (integer, text, uuid).");
	fmgr_info_cxt(tc->hash_extended_proc_finfo.fn_oid, &s->hash_fn, s->mcxt);
	fmgr_info_cxt(tc->eq_opr_finfo.fn_oid, &s->eq_fn, s->mcxt);
}

UnitBound *
new_unit_bound(MemoryContext parent, int32 k, int ncols, const Oid *types, Oid unit_type, Oid collation)
{
	if (k < 1 || ncols < 0 || ncols > kMaxColumns)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv unit bound received invalid parameters");
	MemoryContext mcxt = AllocSetContextCreate(parent, "dxpriv unit bound", ALLOCSET_DEFAULT_SIZES);
	auto *s = static_cast<UnitBound *>(MemoryContextAllocZero(mcxt, sizeof(UnitBound)));
	s->mcxt = mcxt;
	s->k = k;
	s->ncols = ncols;
	s->row_size = MAXALIGN(offsetof(KeptRow, vals) + ncols * sizeof(Datum) + ncols * sizeof(uint8));
	s->pending_size = MAXALIGN(sizeof(Pending)) + s->row_size;
	s->col_type = static_cast<Oid *>(MemoryContextAllocZero(mcxt, (ncols + 1) * sizeof(Oid)));
	s->col_len = static_cast<int16 *>(MemoryContextAllocZero(mcxt, (ncols + 1) * sizeof(int16)));
	s->col_byval = static_cast<bool *>(MemoryContextAllocZero(mcxt, (ncols + 1) * sizeof(bool)));
	for (int i = 0; i < ncols; ++i) {
		s->col_type[i] = types[i];
		get_typlenbyval(types[i], &s->col_len[i], &s->col_byval[i]);
	}
	s->tmp = static_cast<char *>(MemoryContextAlloc(mcxt, s->row_size));
	init_unit_type(s, unit_type, collation);
	for (UnitPart &part : s->parts) {
		part.cap = 16;
		part.units = static_cast<Unit *>(MemoryContextAllocZero(mcxt, part.cap * sizeof(Unit)));
	}
	return s;
}

inline uint64
mix(uint64 x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

inline uint64
unit_hash(UnitBound *s, Datum key, bool isnull)
{
	if (isnull)
		return 0x9E3779B97F4A7C15ULL;
	if (s->unit_fast)
		return mix(static_cast<uint64>(key));
	return mix(DatumGetUInt64(FunctionCall2Coll(&s->hash_fn, s->collation, key, Int64GetDatum(0))));
}

inline UnitPart &
part_of(UnitBound *s, uint64 hash)
{
	return s->parts[hash >> (64 - kPartBits)];
}

inline bool
unit_equal(UnitBound *s, const Unit *u, uint64 hash, Datum key, bool isnull)
{
	if (u->hash != hash || u->key_null != isnull)
		return false;
	if (isnull)
		return true;
	if (s->unit_fast)
		return u->key == key;
	return DatumGetBool(FunctionCall2Coll(&s->eq_fn, s->collation, u->key, key));
}

void
grow(UnitBound *s, UnitPart &part)
{
	Unit *old = part.units;
	const uint64 cap = part.cap;
	part.cap = cap * 2;
	part.units = static_cast<Unit *>(MemoryContextAllocExtended(s->mcxt, part.cap * sizeof(Unit), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO));
	const uint64 mask = part.cap - 1;
	for (uint64 j = 0; j < cap; ++j) {
		if (!old[j].used)
			continue;
		uint64 i = old[j].hash & mask;
		while (part.units[i].used)
			i = (i + 1) & mask;
		part.units[i] = old[j];
	}
	pfree(old);
}

// The unit of key in its partition, created when new. `key` is owned by the caller's state memory
// (a copy for a by-reference type): kept as the unit's key when the unit is new, else freed.
Unit *
find_unit(UnitBound *s, UnitPart &part, uint64 hash, Datum key, bool isnull)
{
	if (2 * (part.used + 1) > part.cap)
		grow(s, part);
	const uint64 mask = part.cap - 1;
	uint64 i = hash & mask;
	for (;;) {
		Unit *u = &part.units[i];
		if (!u->used)
			break;
		if (unit_equal(s, u, hash, key, isnull)) {
			if (!isnull && !s->unit_byval)
				pfree(DatumGetPointer(key));
			return u;
		}
		i = (i + 1) & mask;
	}
	Unit *u = &part.units[i];
	u->used = true;
	u->hash = hash;
	u->key_null = isnull;
	u->key = isnull ? 0 : key;
	++part.used;
	return u;
}

// Row arrays are cut from the partition's arena (an array outgrown stays there: at most twice the rows).
char *
arena_alloc(UnitBound *s, UnitPart &part, Size bytes)
{
	if (bytes > part.arena_left) {
		const Size block = Max(kArenaBlock, bytes);
		part.arena = static_cast<char *>(MemoryContextAllocHuge(s->mcxt, block));
		part.arena_left = block;
	}
	char *p = part.arena;
	part.arena += bytes;
	part.arena_left -= bytes;
	return p;
}

// Max-heap by rank over the unit's n rows (heap order once n == k).
void
sift_down(UnitBound *s, Unit *u, uint32 i)
{
	const uint32 n = u->n;
	char *tmp = s->tmp;
	for (;;) {
		uint32 l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && unit_row(s, u, l)->rank > unit_row(s, u, m)->rank)
			m = l;
		if (r < n && unit_row(s, u, r)->rank > unit_row(s, u, m)->rank)
			m = r;
		if (m == i)
			break;
		std::memcpy(tmp, unit_row(s, u, i), s->row_size);
		std::memcpy(unit_row(s, u, i), unit_row(s, u, m), s->row_size);
		std::memcpy(unit_row(s, u, m), tmp, s->row_size);
		i = m;
	}
}

void
heapify(UnitBound *s, Unit *u)
{
	for (uint32 i = u->n / 2; i-- > 0;)
		sift_down(s, u, i);
}

// Stores value v of column c in row r: NULL, by value, a short plain varlena inline, or a pointer
// the state owns (v itself when `owned`, else a copy).
void
put_value(UnitBound *s, KeptRow *r, int c, Datum v, bool isnull, bool owned)
{
	uint8 *tags = row_tags(s, r);
	if (isnull) {
		tags[c] = kNull;
		r->vals[c] = 0;
		return;
	}
	if (s->col_byval[c]) {
		tags[c] = kValue;
		r->vals[c] = v;
		return;
	}
	if (s->col_len[c] == -1) {
		const char *p = DatumGetPointer(v);
		if (VARATT_IS_4B_U(p) || (VARATT_IS_1B(p) && !VARATT_IS_1B_E(p))) {
			const Size len = VARSIZE_ANY(p);
			if (len <= sizeof(Datum)) {
				r->vals[c] = 0;
				std::memcpy(&r->vals[c], p, len);
				tags[c] = kInline;
				if (owned)
					pfree(const_cast<char *>(p));
				return;
			}
		}
	}
	tags[c] = kValue;
	r->vals[c] = owned ? v : datumCopy(v, false, s->col_len[c]);
}

// The Datum of value c of row r (for an inline value, a pointer into the row).
inline Datum
get_value(const UnitBound *s, KeptRow *r, int c)
{
	return row_tags(s, r)[c] == kInline ? PointerGetDatum(&r->vals[c]) : r->vals[c];
}

// Frees the by-reference values of a row the state owns.
void
free_row(UnitBound *s, KeptRow *r)
{
	const uint8 *tags = row_tags(s, r);
	for (int c = 0; c < s->ncols; ++c)
		if (tags[c] == kValue && !s->col_byval[c])
			pfree(DatumGetPointer(r->vals[c]));
}

// Offers one row (its by-reference values owned by the state) to its unit: kept while the unit
// holds fewer than k rows, else it replaces the kept row of largest rank when its rank is smaller
// (equal ranks, a 2^-64 event: the row kept first stays). Which rows a unit keeps depends only on
// its rows' ranks, never on other units or on the order rows arrive in.
void
offer(UnitBound *s, uint64 hash, Datum key, bool key_null, const KeptRow *row)
{
	UnitPart &part = part_of(s, hash);
	Unit *u = find_unit(s, part, hash, key, key_null);
	if (u->n < static_cast<uint32>(s->k)) {
		if (u->n == u->cap) {
			const uint32 cap = u->cap == 0 ? 1 : Min(2 * u->cap, static_cast<uint32>(s->k));
			char *rows = arena_alloc(s, part, cap * s->row_size);
			if (u->n > 0)
				std::memcpy(rows, u->rows, u->n * s->row_size);
			u->rows = rows;
			u->cap = cap;
		}
		std::memcpy(unit_row(s, u, u->n), row, s->row_size);
		if (++u->n == static_cast<uint32>(s->k))
			heapify(s, u);
		return;
	}
	KeptRow *top = unit_row(s, u, 0);
	if (row->rank >= top->rank) {
		free_row(s, const_cast<KeptRow *>(row));
		return;
	}
	free_row(s, top);
	std::memcpy(top, row, s->row_size);
	sift_down(s, u, 0);
}

// Applies a partition's pending rows to its units.
void
flush(UnitBound *s, UnitPart &part)
{
	if (2 * (part.used + part.nbuf) > part.cap) // (grown once, before the prefetches)
		while (2 * (part.used + part.nbuf) > part.cap)
			grow(s, part);
	constexpr uint32 kAhead = 8;
	for (uint32 i = 0; i < part.nbuf; ++i) {
		if (i + kAhead < part.nbuf) {
			const auto *q = reinterpret_cast<const Pending *>(part.buf + (i + kAhead) * s->pending_size);
			__builtin_prefetch(&part.units[q->hash & (part.cap - 1)]);
		}
		auto *p = reinterpret_cast<Pending *>(part.buf + i * s->pending_size);
		offer(s, p->hash, p->key, p->key_null, pending_row(p));
	}
	part.nbuf = 0;
}

void
flush_all(UnitBound *s)
{
	for (UnitPart &part : s->parts)
		flush(s, part);
}

// Buffers one row (copies of its by-reference values in the state's memory) for its partition.
void
add_kept_row(UnitBound *s, Datum key, bool key_null, int64 rank, const Datum *vals, const bool *nulls)
{
	const uint64 hash = unit_hash(s, key, key_null);
	UnitPart &part = part_of(s, hash);
	if (!part.buf)
		part.buf = static_cast<char *>(MemoryContextAlloc(s->mcxt, kBufferRows * s->pending_size));
	auto *p = reinterpret_cast<Pending *>(part.buf + part.nbuf * s->pending_size);
	p->hash = hash;
	p->key_null = key_null;
	p->key = key_null ? 0 : s->unit_byval ? key : datumCopy(key, false, s->unit_len);
	KeptRow *r = pending_row(p);
	r->rank = rank;
	for (int c = 0; c < s->ncols; ++c)
		put_value(s, r, c, vals[c], nulls[c], false);
	if (++part.nbuf == kBufferRows)
		flush(s, part);
}

// Calls f(unit) for every unit met.
template <typename F>
void
for_each_unit(const UnitBound *s, F f)
{
	for (const UnitPart &part : s->parts)
		for (uint64 i = 0; i < part.cap; ++i)
			if (part.units[i].used)
				f(&part.units[i]);
}

// The live final states of this backend, by handle (dx._unit_rows finds its state here; a state
// leaves when its memory is released).
struct Registered {
	uint64 handle;
	UnitBound *state;
	Registered *prev, *next;
};
Registered *registry = nullptr;

void
unregister(void *arg)
{
	auto *r = static_cast<Registered *>(arg);
	if (r->prev)
		r->prev->next = r->next;
	else
		registry = r->next;
	if (r->next)
		r->next->prev = r->prev;
}

UnitBound *
registered_bound(uint64 handle)
{
	for (Registered *r = registry; r; r = r->next)
		if (r->handle == handle)
			return r->state;
	fail(ERRCODE_INTERNAL_ERROR, "dxpriv bounded rows are not available",
	     "dx._unit_rows reads the rows dxpriv's analyzer bounds in the same statement; it cannot be called directly.");
}

// Sorts a unit's kept rows by rank (insertion sort: k is small in practice).
void
sort_unit(UnitBound *s, Unit *u)
{
	char *tmp = s->tmp;
	for (uint32 i = 1; i < u->n; ++i) {
		std::memcpy(tmp, unit_row(s, u, i), s->row_size);
		const int64 r = reinterpret_cast<KeptRow *>(tmp)->rank;
		uint32 j = i;
		while (j > 0 && unit_row(s, u, j - 1)->rank > r) {
			std::memcpy(unit_row(s, u, j), unit_row(s, u, j - 1), s->row_size);
			--j;
		}
		std::memcpy(unit_row(s, u, j), tmp, s->row_size);
	}
}

// The unit value and payload of a transition call: (state, k int4, rank int8, unit, payload...).
UnitBound *
unit_bound_state(FunctionCallInfo fcinfo)
{
	if (!PG_ARGISNULL(0))
		return reinterpret_cast<UnitBound *>(PG_GETARG_POINTER(0));
	MemoryContext aggctx = require_aggregate_context(fcinfo, "dxpriv unit bound");
	if (PG_NARGS() < 4 || PG_ARGISNULL(1))
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv unit bound received invalid parameters");
	const int ncols = PG_NARGS() - 4;
	Oid types[kMaxColumns];
	if (ncols > kMaxColumns)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv unit bound received invalid parameters");
	for (int c = 0; c < ncols; ++c) {
		types[c] = get_fn_expr_argtype(fcinfo->flinfo, 4 + c);
		if (!OidIsValid(types[c]))
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv unit bound cannot determine its argument types");
	}
	const Oid unit_type = get_fn_expr_argtype(fcinfo->flinfo, 3);
	if (!OidIsValid(unit_type))
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv unit bound cannot determine its argument types");
	return new_unit_bound(aggctx, PG_GETARG_INT32(1), ncols, types, unit_type, PG_GET_COLLATION());
}

} // namespace

// dx._unit_bound_transfn(state, k int4, rank int8, VARIADIC (unit, payload...)): offers the row to
// its unit (a NULL rank, never produced by dx._unit_rank, is refused).
DX_FUNCTION(dx_unit_bound_transfn)
{
	UnitBound *s = unit_bound_state(fcinfo);
	if (PG_ARGISNULL(2))
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv unit bound received a row without rank");
	Datum vals[kMaxColumns];
	bool nulls[kMaxColumns];
	for (int c = 0; c < s->ncols; ++c) {
		nulls[c] = PG_ARGISNULL(4 + c);
		vals[c] = nulls[c] ? 0 : PG_GETARG_DATUM(4 + c);
	}
	MemoryContext old = MemoryContextSwitchTo(s->mcxt);
	add_kept_row(s, PG_GETARG_DATUM(3), PG_ARGISNULL(3), PG_GETARG_INT64(2), vals, nulls);
	MemoryContextSwitchTo(old);
	PG_RETURN_POINTER(s);
}

// dx._unit_bound_combinefn(state, state): the k rows of smallest rank of the union, per unit (the k
// smallest of two sets' k smallest are the union's k smallest: exact).
DX_FUNCTION(dx_unit_bound_combinefn)
{
	MemoryContext aggctx = require_aggregate_context(fcinfo, "dxpriv unit bound");
	if (PG_ARGISNULL(1))
		PG_RETURN_POINTER(PG_ARGISNULL(0) ? nullptr : PG_GETARG_POINTER(0));
	auto *other = reinterpret_cast<UnitBound *>(PG_GETARG_POINTER(1));
	UnitBound *s = PG_ARGISNULL(0) ? new_unit_bound(aggctx, other->k, other->ncols, other->col_type, other->unit_type,
	                                           other->collation)
	                               : reinterpret_cast<UnitBound *>(PG_GETARG_POINTER(0));
	if (s->k != other->k || s->ncols != other->ncols || s->unit_type != other->unit_type || s->finalized ||
	    other->finalized)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv cannot combine unit bounds of different queries");
	MemoryContext old = MemoryContextSwitchTo(s->mcxt);
	flush_all(other);
	auto *row = static_cast<KeptRow *>(palloc(s->row_size));
	for_each_unit(other, [&](Unit *u) {
		for (uint32 i = 0; i < u->n; ++i) { // (copies the state owns)
			KeptRow *r = unit_row(other, u, i);
			row->rank = r->rank;
			for (int c = 0; c < s->ncols; ++c)
				put_value(s, row, c, get_value(other, r, c), row_tags(other, r)[c] == kNull, false);
			const Datum key = u->key_null || s->unit_byval ? u->key : datumCopy(u->key, false, s->unit_len);
			offer(s, u->hash, key, u->key_null, row);
		}
	});
	pfree(row);
	MemoryContextSwitchTo(old);
	PG_RETURN_POINTER(s);
}

// dx._unit_bound_serialize(state) -> bytea: version, k, ncols, unit type and collation, column
// types, units; per unit its key (datumSerialize), rows and each row's rank and columns.
DX_FUNCTION(dx_unit_bound_serialize)
{
	auto *s = reinterpret_cast<UnitBound *>(PG_GETARG_POINTER(0));
	flush_all(s);
	uint64 nunits = 0;
	for (const UnitPart &part : s->parts)
		nunits += part.used;
	Size size = 1 + 4 + 4 + 4 + 4 + 4 * s->ncols + 8;
	for_each_unit(s, [&](Unit *u) {
		size += datumEstimateSpace(u->key, u->key_null, s->unit_byval, s->unit_len) + 4;
		for (uint32 i = 0; i < u->n; ++i) {
			KeptRow *r = unit_row(s, u, i);
			size += 8;
			for (int c = 0; c < s->ncols; ++c)
				size += datumEstimateSpace(get_value(s, r, c), row_tags(s, r)[c] == kNull, s->col_byval[c], s->col_len[c]);
		}
	});
	if (size + VARHDRSZ > MaxAllocSize)
		fail(ERRCODE_PROGRAM_LIMIT_EXCEEDED, "the rows of a parallel worker's privacy units exceed 1 GB",
		     "Set max_parallel_workers_per_gather = 0 for this statement, or dxpriv.unit_bounding = 'sort'.");
	bytea *out = static_cast<bytea *>(palloc(size + VARHDRSZ));
	SET_VARSIZE(out, size + VARHDRSZ);
	char *p = VARDATA(out);
	auto put = [&](const void *v, size_t n) {
		std::memcpy(p, v, n);
		p += n;
	};
	const uint32 nc = static_cast<uint32>(s->ncols);
	const uint32 k = static_cast<uint32>(s->k);
	put(&kUnitBoundVersion, 1);
	put(&k, 4);
	put(&nc, 4);
	put(&s->unit_type, 4);
	put(&s->collation, 4);
	for (int c = 0; c < s->ncols; ++c)
		put(&s->col_type[c], 4);
	put(&nunits, 8);
	for_each_unit(s, [&](Unit *u) {
		datumSerialize(u->key, u->key_null, s->unit_byval, s->unit_len, &p);
		put(&u->n, 4);
		for (uint32 i = 0; i < u->n; ++i) {
			KeptRow *r = unit_row(s, u, i);
			put(&r->rank, 8);
			for (int c = 0; c < s->ncols; ++c)
				datumSerialize(get_value(s, r, c), row_tags(s, r)[c] == kNull, s->col_byval[c], s->col_len[c], &p);
		}
	});
	if (static_cast<Size>(p - VARDATA(out)) != size)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv unit bound serialisation has an unexpected size");
	PG_RETURN_BYTEA_P(out);
}

// dx._unit_bound_deserialize(bytea, internal) -> state. The bytes come from dx._unit_bound_serialize
// in a parallel worker of the same server (datumRestore images); malformed headers are refused.
DX_FUNCTION(dx_unit_bound_deserialize)
{
	bytea *b = PG_GETARG_BYTEA_PP(0);
	char *cur = VARDATA_ANY(b);
	const char *end = cur + VARSIZE_ANY_EXHDR(b);
	auto get = [&](void *v, size_t n) {
		if (static_cast<size_t>(end - cur) < n)
			corrupted_unit_state();
		std::memcpy(v, cur, n);
		cur += n;
	};
	uint8 version;
	uint32 k, nc;
	Oid unit_type, collation;
	get(&version, 1);
	get(&k, 4);
	get(&nc, 4);
	get(&unit_type, 4);
	get(&collation, 4);
	if (version != kUnitBoundVersion || k < 1 || k > 1000000 || nc > kMaxColumns)
		corrupted_unit_state();
	Oid types[kMaxColumns];
	for (uint32 c = 0; c < nc; ++c)
		get(&types[c], 4);
	uint64 nunits;
	get(&nunits, 8);
	UnitBound *s = new_unit_bound(aggregate_or_current_context(fcinfo), static_cast<int32>(k), static_cast<int>(nc), types,
	                         unit_type, collation);
	MemoryContext old = MemoryContextSwitchTo(s->mcxt);
	auto *row = static_cast<KeptRow *>(palloc(s->row_size));
	for (uint64 j = 0; j < nunits; ++j) {
		bool key_null;
		const Datum key = datumRestore(&cur, &key_null);
		if (cur > end)
			corrupted_unit_state();
		const uint64 hash = unit_hash(s, key, key_null);
		uint32 n;
		get(&n, 4);
		if (n > k)
			corrupted_unit_state();
		for (uint32 i = 0; i < n; ++i) {
			get(&row->rank, 8);
			for (uint32 c = 0; c < nc; ++c) {
				bool isnull;
				const Datum v = datumRestore(&cur, &isnull);
				if (cur > end)
					corrupted_unit_state();
				put_value(s, row, static_cast<int>(c), v, isnull, true);
			}
			const Datum owned = key_null || s->unit_byval ? key : datumCopy(key, false, s->unit_len);
			offer(s, hash, owned, key_null, row);
		}
	}
	pfree(row);
	MemoryContextSwitchTo(old);
	if (cur != end)
		corrupted_unit_state();
	PG_RETURN_POINTER(s);
}

// dx._unit_bound_finalfn(state) -> int8: sorts every unit's kept rows by rank, lists them unit after
// unit, and returns a random handle by which dx._unit_rows of the same statement reads them.
DX_FUNCTION(dx_unit_bound_finalfn)
{
	UnitBound *s;
	if (PG_ARGISNULL(0)) { // no row: an empty state
		MemoryContext aggctx = require_aggregate_context(fcinfo, "dxpriv unit bound");
		s = new_unit_bound(aggctx, 1, 0, nullptr, INT4OID, InvalidOid);
	} else {
		s = reinterpret_cast<UnitBound *>(PG_GETARG_POINTER(0));
	}
	if (s->finalized)
		PG_RETURN_INT64(static_cast<int64>(s->handle));
	flush_all(s);
	uint64 rows = 0;
	for_each_unit(s, [&](Unit *u) {
		sort_unit(s, u);
		rows += u->n;
	});
	s->nrows = rows;
	uint64 handle = 0;
	{
		SystemRandom rng; // (no PostgreSQL call while it is alive)
		while (handle == 0)
			handle = rng.next_u64();
	}
	s->handle = handle;
	s->finalized = true;
	auto *r = static_cast<Registered *>(MemoryContextAllocZero(s->mcxt, sizeof(Registered)));
	r->handle = handle;
	r->state = s;
	r->next = registry;
	if (registry)
		registry->prev = r;
	registry = r;
	auto *cb = static_cast<MemoryContextCallback *>(MemoryContextAlloc(s->mcxt, sizeof(MemoryContextCallback)));
	cb->func = unregister;
	cb->arg = r;
	MemoryContextRegisterResetCallback(s->mcxt, cb);
	PG_RETURN_INT64(static_cast<int64>(handle));
}

namespace {

// The cursor of one dx._unit_rows call site.
struct RowsCursor {
	UnitBound *state;
	int kind, col, gcol;
	int part;       // the current unit: partition, slot
	uint64 slot;
	uint32 row;     // the next row of the current unit
};

// The next kept row (units in table order, each unit's rows by rank), nullptr after the last; sets
// *unit to its unit.
KeptRow *
next_row(RowsCursor *c, const Unit **unit)
{
	const UnitBound *s = c->state;
	while (c->part < kParts) {
		const UnitPart &part = s->parts[c->part];
		while (c->slot < part.cap) {
			const Unit *u = &part.units[c->slot];
			if (u->used && c->row < u->n) {
				*unit = u;
				return unit_row(s, u, c->row++);
			}
			++c->slot;
			c->row = 0;
		}
		++c->part;
		c->slot = 0;
	}
	return nullptr;
}

} // namespace

// dx._unit_rows(handle int8, kind int4, col int4, gcol int4, type anyelement) -> SETOF anyelement:
// one value per kept row, units in the order of the state (every call site of a statement emits the same
// rows in the same order, so the call sites of one SELECT list run in lockstep). kind 0: payload
// column col (its type must be the result type); kind 1: the count_units flag of weight column col
// (true on the unit's first kept row, in rank order, whose weight is not NULL, within its group
// column gcol when gcol >= 0: core/unit_bound.h unit_first_counted); kind 2: true (one row per kept row).
DX_FUNCTION(dx_unit_rows)
{
	FuncCallContext *fctx;
	if (SRF_IS_FIRSTCALL()) {
		fctx = SRF_FIRSTCALL_INIT();
		if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3))
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv bounded rows received invalid parameters");
		UnitBound *s = registered_bound(static_cast<uint64>(PG_GETARG_INT64(0)));
		const int kind = PG_GETARG_INT32(1), col = PG_GETARG_INT32(2), gcol = PG_GETARG_INT32(3);
		const Oid result = get_fn_expr_argtype(fcinfo->flinfo, 4);
		const bool ok = s->nrows == 0 ||
		                (kind == 0   ? col >= 0 && col < s->ncols && result == s->col_type[col]
		                 : kind == 1 ? col >= 0 && col < s->ncols && gcol < s->ncols && result == BOOLOID &&
		                                 (gcol < 0 || s->col_type[gcol] == INT4OID)
		                             : kind == 2 && result == BOOLOID);
		if (!ok)
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv bounded rows received invalid parameters");
		auto *c = static_cast<RowsCursor *>(MemoryContextAllocZero(fctx->multi_call_memory_ctx, sizeof(RowsCursor)));
		c->state = s;
		c->kind = kind;
		c->col = col;
		c->gcol = gcol;
		fctx->user_fctx = c;
	}
	fctx = SRF_PERCALL_SETUP();
	auto *c = static_cast<RowsCursor *>(fctx->user_fctx);
	const UnitBound *s = c->state;
	const Unit *u = nullptr;
	KeptRow *r = next_row(c, &u);
	if (!r)
		SRF_RETURN_DONE(fctx);
	const uint8 *tags = row_tags(s, r);
	if (c->kind == 0) {
		if (tags[c->col] == kNull)
			SRF_RETURN_NEXT_NULL(fctx);
		SRF_RETURN_NEXT(fctx, get_value(s, r, c->col));
	}
	if (c->kind == 2)
		SRF_RETURN_NEXT(fctx, BoolGetDatum(true));
	if (tags[c->col] == kNull)
		SRF_RETURN_NEXT(fctx, BoolGetDatum(false));
	// counted: first among the unit's earlier kept rows (rank order) of its group
	for (uint32 j = 0; j + 1 < c->row; ++j) {
		KeptRow *e = unit_row(s, u, j);
		const uint8 *et = row_tags(s, e);
		if (et[c->col] == kNull)
			continue;
		if (c->gcol >= 0 && (et[c->gcol] != tags[c->gcol] || (tags[c->gcol] != kNull && e->vals[c->gcol] != r->vals[c->gcol])))
			continue;
		SRF_RETURN_NEXT(fctx, BoolGetDatum(false));
	}
	SRF_RETURN_NEXT(fctx, BoolGetDatum(true));
}
