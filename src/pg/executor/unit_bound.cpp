// Privacy units without a sort: dx._unit_bound keeps, in one hash pass over the rows, each unit's
// max_rows rows of smallest rank (the rule of core/unit_bound.h unit_kept_rows), combinable across
// parallel workers, spilling partitions of units to a temporary tape set beyond work_mem ×
// hash_mem_multiplier (as PostgreSQL's hash aggregation does); dx._unit_rows emits the kept rows'
// columns (planner/unit_source.h).
#include "pg/executor/unit_hash.h"
#include "pg/executor/agg_support.h"
#include "pg/guard.h"

#include "core/random.h"

extern "C" {
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/datum.h"
#include "utils/logtape.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/typcache.h"
}

#include <cstring>

using namespace dxpriv;
using namespace dxpriv::pg;

namespace {

constexpr uint8 kUnitBoundVersion = 2;
constexpr int kMaxColumns = 1000;
// Rows are first appended to one of kParts buffers by 8 bits of their unit's hash, and a full
// buffer is applied to its partition's own hash table: each partition's table and rows stay small
// enough for the processor caches, where one table of every unit would miss on every row. A
// partition is also the unit of spilling: beyond the memory limit, the largest partition's rows go to
// a tape, and so do its later rows; at the end each spilled partition is read back alone and split
// again by the next 8 bits of the hash (depth + 1), up to kMaxDepth.
constexpr int kPartBits = 8;
constexpr int kParts = 1 << kPartBits;
constexpr int kMaxDepth = 4;
constexpr uint32 kMaxBufferRows = 256;

// One kept row: its rank, then ncols Datums and ncols tags (UnitBound::row_size bytes).
struct KeptRow {
	int64 rank;
	Datum vals[FLEXIBLE_ARRAY_MEMBER];
};

// One unit: its key (a copy of the unit value), its kept rows (a max-heap by rank once it holds
// max_rows rows, sorted by rank before they are emitted).
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

// One partition: its memory (units, row arrays, by-reference values and keys of its rows, pending
// ones included), its units (open addressing on the low bits of the hash; nullptr once spilled),
// the arena its units' row arrays are cut from, its buffer of pending rows, and its tape once spilled.
struct UnitPart {
	MemoryContext cxt;
	Size base; // cxt's allocation when empty
	Size mem;  // cxt's allocation beyond base at the last flush
	Unit *units;
	uint64 cap, used;
	char *arena;
	Size arena_left;
	Size arena_next; // the next arena block's size (doubling up to UnitBound::arena_block)
	char *buf;
	uint32 nbuf;
	LogicalTape *tape;
	Size tape_bytes; // written to tape
	LogicalTape **extra; // spilled rows of this partition in merged states' tapes (parallel leader)
	int nextra;
};

// A spilled partition waiting to be bounded: its rows (records, ub_encode) and its depth.
struct Batch {
	LogicalTape *tape;
	int depth;
	Size bytes;
	LogicalTape **extra; // more tapes of the same partition (merged states)
	int nextra;
};

// Closes the tape set when the aggregate ends or is rescanned (allocated in the aggregate context,
// outside the state's memory; not called on abort, where the resource owner closes the files).
struct TapeCloser {
	LogicalTapeSet *tapes;
};

// The state.
struct UnitBound {
	MemoryContext mcxt;
	int32 k;
	int ncols;        // payload columns (the unit is not one of them)
	Size row_size;
	Size pending_size;
	Oid unit_type;
	int16 unit_len;
	bool unit_byval;
	UnitHasher hasher; // the unit's hash (executor/unit_hash.h; fast: the Datum itself is the key)
	bool no_rows;     // the empty state of a final function that saw no row
	FmgrInfo eq_fn;
	bool eq_sealed; // eq_fn is not built in: each call through the sealed path (unit_hash.h)
	Oid *col_type;
	int16 *col_len;
	bool *col_byval;
	UnitPart parts[kParts];
	char *tmp; // one row of scratch
	// memory and spilling
	int depth;          // partition of a hash: its bits 56 - 8 depth .. 63 - 8 depth
	int max_depth;      // spilling stops at this depth (a batch small enough is bounded in memory)
	bool single;        // a batch bounded in memory: every unit in partition 0, rows offered unbuffered
	char *row1;         // one row of scratch (a row offered unbuffered)
	Size limit;         // work_mem × hash_mem_multiplier (0: never spill)
	Size mem;           // sum of the partitions' mem
	uint32 buffer_rows;
	Size arena_block;
	TapeCloser *closer; // nullptr outside an aggregate (then the state never spills)
	LogicalTapeSet *tapes;
	Batch *batches;
	int nbatches, batch_cap, next_batch;
	bool spilled;       // some partition was spilled (the kept rows can be read once only)
	char *io;           // one record of scratch (written)
	Size io_cap;
	char *rd;           // one record of scratch (read from a tape)
	Size rd_cap;
	// finalize and emission (dx._unit_rows)
	bool finalized;
	uint64 handle;
	int emit_part;
	uint64 emit_slot;
	uint32 emit_row;      // the next row of the current unit
	uint64 emit_index;    // index of the current kept row (UINT64_MAX: none yet)
	KeptRow *emit_cur;
	const Unit *emit_unit;
	bool emit_done;
};

[[noreturn]] void
corrupted_unit_state()
{
	fail(ERRCODE_DATA_CORRUPTED, "invalid dxpriv aggregate state",
	     "Aggregate states are produced by dxpriv itself; they cannot be written by hand.");
}

// Each value of a kept row has a tag: a Datum (by value, or a pointer the partition owns), NULL, or
// a short varlena stored inline in its Datum slot (no allocation per row, read where the row is).
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
	get_typlenbyval(type, &s->unit_len, &s->unit_byval);
	// (a hash or equality function not built in runs sealed, as the analyst: unit_hash.h)
	init_unit_hasher(&s->hasher, type, collation, s->mcxt,
	                 "Set dxpriv.unit_bounding to 'sort', or use a unit column of a hashable type (integer, text, uuid).",
	                 true, InvalidOid);
	if (s->hasher.fast)
		return;
	TypeCacheEntry *tc = lookup_type_cache(type, TYPECACHE_EQ_OPR_FINFO);
	if (!OidIsValid(tc->eq_opr))
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "the privacy unit column's type has no hash function",
		     "Set dxpriv.unit_bounding to 'sort', or use a unit column of a hashable type (integer, text, uuid).");
	fmgr_info_cxt(tc->eq_opr_finfo.fn_oid, &s->eq_fn, s->mcxt);
	s->eq_sealed = unit_type_call_sealed(tc->eq_opr_finfo.fn_oid);
}

// Empties a partition (its memory, table and arena; its tape is the caller's).
void
ub_reset_part(UnitPart &part)
{
	MemoryContextReset(part.cxt);
	part.cap = 16;
	part.used = 0;
	part.units = static_cast<Unit *>(MemoryContextAllocZero(part.cxt, part.cap * sizeof(Unit)));
	part.arena = nullptr;
	part.arena_left = 0;
	part.arena_next = 256;
	part.nbuf = 0;
	part.tape_bytes = 0;
	part.base = MemoryContextMemAllocated(part.cxt, false);
	part.mem = 0;
}

void
ub_close_tapes(Datum arg)
{
	auto *c = reinterpret_cast<TapeCloser *>(DatumGetPointer(arg));
	if (c->tapes)
		LogicalTapeSetClose(c->tapes);
	c->tapes = nullptr;
}

// A new state. With fcinfo called as an aggregate, the state may spill (its tape set is closed when
// the aggregate ends); without, it stays in memory.
UnitBound *
new_unit_bound(FunctionCallInfo fcinfo, MemoryContext parent, int32 k, int ncols, const Oid *types, Oid unit_type,
               Oid collation)
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
	s->row1 = static_cast<char *>(MemoryContextAlloc(mcxt, s->row_size));
	init_unit_type(s, unit_type, collation);
	MemoryContext aggctx;
	if (fcinfo && AggCheckCallContext(fcinfo, &aggctx)) {
		s->limit = get_hash_memory_limit();
		s->closer = static_cast<TapeCloser *>(MemoryContextAllocZero(aggctx, sizeof(TapeCloser)));
		AggRegisterCallback(fcinfo, ub_close_tapes, PointerGetDatum(s->closer));
	}
	// the buffers and arenas are sized to the limit (they are not counted in it)
	const Size per_part = s->limit ? s->limit / kParts : 256 * 1024;
	s->buffer_rows = static_cast<uint32>(Max(Min(per_part / (2 * s->pending_size), static_cast<Size>(kMaxBufferRows)), 8));
	s->arena_block = Max(Min(per_part / 8, static_cast<Size>(64 * 1024)), static_cast<Size>(1024));
	s->emit_index = UINT64_MAX;
	s->max_depth = kMaxDepth;
	for (UnitPart &part : s->parts) {
		part.cxt = AllocSetContextCreate(mcxt, "dxpriv unit partition", ALLOCSET_SMALL_SIZES);
		ub_reset_part(part);
	}
	return s;
}

inline uint64
unit_hash(UnitBound *s, Datum key, bool isnull)
{
	return unit_hash_value(&s->hasher, key, isnull);
}

inline UnitPart &
part_of(UnitBound *s, uint64 hash)
{
	if (s->single)
		return s->parts[0];
	return s->parts[(hash >> (64 - kPartBits * (s->depth + 1))) & (kParts - 1)];
}

inline bool
unit_equal(UnitBound *s, const Unit *u, uint64 hash, Datum key, bool isnull)
{
	if (u->hash != hash || u->key_null != isnull)
		return false;
	if (isnull)
		return true;
	if (s->hasher.fast)
		return u->key == key;
	if (s->eq_sealed) {
		bool eq = false;
		sealed_call(InvalidOid, [&] { eq = DatumGetBool(FunctionCall2Coll(&s->eq_fn, s->hasher.collation, u->key, key)); },
		            true);
		return eq;
	}
	return DatumGetBool(FunctionCall2Coll(&s->eq_fn, s->hasher.collation, u->key, key));
}

void
grow(UnitPart &part)
{
	Unit *old = part.units;
	const uint64 cap = part.cap;
	part.cap = cap * 2;
	part.units = static_cast<Unit *>(MemoryContextAllocExtended(part.cxt, part.cap * sizeof(Unit), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO));
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

// The unit of key in its partition, created when new. `key` is owned by the partition's memory
// (a copy for a by-reference type): kept as the unit's key when the unit is new, else freed.
Unit *
find_unit(UnitBound *s, UnitPart &part, uint64 hash, Datum key, bool isnull)
{
	if (2 * (part.used + 1) > part.cap)
		grow(part);
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
		const Size block = Max(part.arena_next, bytes);
		part.arena_next = Min(2 * part.arena_next, s->arena_block);
		part.arena = static_cast<char *>(MemoryContextAllocHuge(part.cxt, block));
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

// Stores value v of column c in row r: NULL, by value, a short plain varlena inline, or a copy in
// the current memory context.
void
put_value(UnitBound *s, KeptRow *r, int c, Datum v, bool isnull)
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
				return;
			}
		}
	}
	tags[c] = kValue;
	r->vals[c] = datumCopy(v, false, s->col_len[c]);
}

// The Datum of value c of row r (for an inline value, a pointer into the row).
inline Datum
get_value(const UnitBound *s, KeptRow *r, int c)
{
	return row_tags(s, r)[c] == kInline ? PointerGetDatum(&r->vals[c]) : r->vals[c];
}

// Frees the by-reference values of a row its partition owns.
void
free_row(UnitBound *s, KeptRow *r)
{
	const uint8 *tags = row_tags(s, r);
	for (int c = 0; c < s->ncols; ++c)
		if (tags[c] == kValue && !s->col_byval[c])
			pfree(DatumGetPointer(r->vals[c]));
}

// Offers one row (its by-reference values owned by the partition) to its unit: kept while the unit
// holds fewer than k rows, else it replaces the kept row of largest rank when its rank is smaller
// (equal ranks, a 2^-64 event: the row kept first stays). Which rows a unit keeps depends only on
// its rows' ranks, never on other units, on the order rows arrive in, or on spilling.
void
offer(UnitBound *s, UnitPart &part, uint64 hash, Datum key, bool key_null, const KeptRow *row)
{
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

// ---- records: a row with its unit, as spilled to a tape and as sent by a parallel worker ----
// uint32 length of what follows, uint64 hash, int64 rank, the unit, then each column; a value is
// one byte (0 NULL, 1 by value: 8 bytes follow, 2 by reference: uint32 size and the bytes follow).

inline void
ub_reserve(UnitBound *s, char **buf, Size *cap, Size n)
{
	if (n <= *cap)
		return;
	const Size c = Max(n, 2 * *cap);
	*buf = static_cast<char *>(*buf ? repalloc_huge(*buf, c) : MemoryContextAllocHuge(s->mcxt, c));
	*cap = c;
}

inline void
ub_io_reserve(UnitBound *s, Size n)
{
	ub_reserve(s, &s->io, &s->io_cap, n);
}

// Appends value v (isnull, by value or with typlen len) at s->io + *at.
inline void
ub_put_datum(UnitBound *s, Size *at, Datum v, bool isnull, bool byval, int16 len)
{
	if (isnull) {
		ub_io_reserve(s, *at + 1);
		s->io[(*at)++] = 0;
		return;
	}
	if (byval) {
		ub_io_reserve(s, *at + 1 + sizeof(Datum));
		s->io[(*at)++] = 1;
		std::memcpy(s->io + *at, &v, sizeof(Datum));
		*at += sizeof(Datum);
		return;
	}
	const uint32 size = static_cast<uint32>(datumGetSize(v, false, len));
	ub_io_reserve(s, *at + 1 + 4 + size);
	s->io[(*at)++] = 2;
	std::memcpy(s->io + *at, &size, 4);
	std::memcpy(s->io + *at + 4, DatumGetPointer(v), size);
	*at += 4 + size;
}

// The record of one row into s->io; returns its bytes (length word included).
Size
ub_encode_values(UnitBound *s, uint64 hash, Datum key, bool key_null, int64 rank, const Datum *vals, const bool *nulls)
{
	Size at = 4;
	ub_io_reserve(s, 4 + 16);
	std::memcpy(s->io + at, &hash, 8);
	std::memcpy(s->io + at + 8, &rank, 8);
	at += 16;
	ub_put_datum(s, &at, key, key_null, s->unit_byval, s->unit_len);
	for (int c = 0; c < s->ncols; ++c)
		ub_put_datum(s, &at, vals[c], nulls[c], s->col_byval[c], s->col_len[c]);
	const uint32 len = static_cast<uint32>(at - 4);
	std::memcpy(s->io, &len, 4);
	return at;
}

Size
ub_encode(UnitBound *s, uint64 hash, Datum key, bool key_null, KeptRow *r)
{
	Datum vals[kMaxColumns];
	bool nulls[kMaxColumns];
	const uint8 *tags = row_tags(s, r);
	for (int c = 0; c < s->ncols; ++c) {
		nulls[c] = tags[c] == kNull;
		vals[c] = get_value(s, r, c);
	}
	return ub_encode_values(s, hash, key, key_null, r->rank, vals, nulls);
}

// Whether `size` bytes at p are one value of a by-reference type of typlen len.
bool
ub_valid_ref(const char *p, uint32 size, int16 len)
{
	if (len > 0)
		return size == static_cast<uint32>(len);
	if (len == -2)
		return size >= 1 && p[size - 1] == '\0' && std::strlen(p) + 1 == size;
	if (size < 1 || (!VARATT_IS_1B(p) && size < 4))
		return false;
	return VARSIZE_ANY(p) == size;
}

// Reads value (*v, *isnull) from [*p, end); false when malformed (checked: the bytes of a parallel
// worker are read with the same code).
inline bool
ub_get_datum(const char **p, const char *end, Datum *v, bool *isnull, bool byval, int16 len)
{
	if (*p >= end)
		return false;
	const uint8 tag = static_cast<uint8>(*(*p)++);
	*isnull = tag == 0;
	*v = 0;
	if (tag == 0)
		return true;
	if (tag == 1) {
		if (!byval || end - *p < static_cast<ptrdiff_t>(sizeof(Datum)))
			return false;
		std::memcpy(v, *p, sizeof(Datum));
		*p += sizeof(Datum);
		return true;
	}
	uint32 size;
	if (tag != 2 || byval || end - *p < 4)
		return false;
	std::memcpy(&size, *p, 4);
	*p += 4;
	if (static_cast<Size>(end - *p) < size || !ub_valid_ref(*p, size, len))
		return false;
	*v = PointerGetDatum(*p);
	*p += size;
	return true;
}

// Buffers one row for its partition: copies of its by-reference values and unit in the partition's
// memory; flushes the partition's buffer when full. A spilled partition's row goes to its tape.
void ub_flush(UnitBound *s, UnitPart &part);

void
add_kept_row(UnitBound *s, uint64 hash, Datum key, bool key_null, int64 rank, const Datum *vals, const bool *nulls)
{
	UnitPart &part = part_of(s, hash);
	if (part.tape) {
		const Size n = ub_encode_values(s, hash, key, key_null, rank, vals, nulls);
		MemoryContext old = MemoryContextSwitchTo(s->mcxt);
		LogicalTapeWrite(part.tape, s->io, n);
		MemoryContextSwitchTo(old);
		part.tape_bytes += n;
		return;
	}
	if (s->single) { // (a batch that fits: no buffer, no spill)
		MemoryContext old = MemoryContextSwitchTo(part.cxt);
		auto *r = reinterpret_cast<KeptRow *>(s->row1);
		r->rank = rank;
		for (int c = 0; c < s->ncols; ++c)
			put_value(s, r, c, vals[c], nulls[c]);
		const Datum owned = key_null ? 0 : s->unit_byval ? key : datumCopy(key, false, s->unit_len);
		MemoryContextSwitchTo(old);
		offer(s, part, hash, owned, key_null, r);
		return;
	}
	if (!part.buf)
		part.buf = static_cast<char *>(MemoryContextAlloc(s->mcxt, s->buffer_rows * s->pending_size));
	MemoryContext old = MemoryContextSwitchTo(part.cxt);
	auto *p = reinterpret_cast<Pending *>(part.buf + part.nbuf * s->pending_size);
	p->hash = hash;
	p->key_null = key_null;
	p->key = key_null ? 0 : s->unit_byval ? key : datumCopy(key, false, s->unit_len);
	KeptRow *r = pending_row(p);
	r->rank = rank;
	for (int c = 0; c < s->ncols; ++c)
		put_value(s, r, c, vals[c], nulls[c]);
	MemoryContextSwitchTo(old);
	if (++part.nbuf == s->buffer_rows)
		ub_flush(s, part);
}

// Decodes the record body [p, end) and buffers its row; `trusted` (the state's own tape): the
// stored hash is used, else it is computed again from the unit. Malformed: XX001.
void
ub_add_record(UnitBound *s, const char *p, const char *end, bool trusted)
{
	if (end - p < 16)
		corrupted_unit_state();
	const char *start = p;
	uint64 hash;
	int64 rank;
	std::memcpy(&hash, p, 8);
	std::memcpy(&rank, p + 8, 8);
	p += 16;
	Datum key, vals[kMaxColumns];
	bool key_null, nulls[kMaxColumns];
	if (!ub_get_datum(&p, end, &key, &key_null, s->unit_byval, s->unit_len))
		corrupted_unit_state();
	for (int c = 0; c < s->ncols; ++c)
		if (!ub_get_datum(&p, end, &vals[c], &nulls[c], s->col_byval[c], s->col_len[c]))
			corrupted_unit_state();
	if (p != end)
		corrupted_unit_state();
	if (!trusted)
		hash = unit_hash(s, key, key_null);
	UnitPart &part = part_of(s, hash);
	if (part.tape) { // (the checked record as it is, with the hash computed here)
		const uint32 len = static_cast<uint32>(end - start);
		ub_io_reserve(s, 4 + static_cast<Size>(len));
		std::memcpy(s->io, &len, 4);
		std::memcpy(s->io + 4, start, len);
		std::memcpy(s->io + 4, &hash, 8);
		MemoryContext old = MemoryContextSwitchTo(s->mcxt);
		LogicalTapeWrite(part.tape, s->io, 4 + static_cast<Size>(len));
		MemoryContextSwitchTo(old);
		part.tape_bytes += 4 + static_cast<Size>(len);
		return;
	}
	add_kept_row(s, hash, key, key_null, rank, vals, nulls);
}

LogicalTape *
ub_new_tape(UnitBound *s)
{
	MemoryContext old = MemoryContextSwitchTo(s->mcxt);
	if (!s->tapes) {
		s->tapes = LogicalTapeSetCreate(false, nullptr, -1);
		s->closer->tapes = s->tapes;
	}
	LogicalTape *t = LogicalTapeCreate(s->tapes);
	MemoryContextSwitchTo(old);
	return t;
}

inline void
ub_write(UnitBound *s, UnitPart &part, uint64 hash, Datum key, bool key_null, KeptRow *r)
{
	const Size n = ub_encode(s, hash, key, key_null, r);
	LogicalTapeWrite(part.tape, s->io, n);
	part.tape_bytes += n;
}

// Writes a partition's pending rows to its tape and frees their memory.
void
ub_spill_pending(UnitBound *s, UnitPart &part)
{
	MemoryContext old = MemoryContextSwitchTo(s->mcxt);
	for (uint32 i = 0; i < part.nbuf; ++i) {
		auto *p = reinterpret_cast<Pending *>(part.buf + i * s->pending_size);
		ub_write(s, part, p->hash, p->key, p->key_null, pending_row(p));
	}
	MemoryContextSwitchTo(old);
	part.nbuf = 0;
	MemoryContextReset(part.cxt);
}

// Spills a partition: its units' kept rows and its pending rows go to a new tape, which receives
// its later rows too; its memory is freed.
void
ub_spill_part(UnitBound *s, UnitPart &part)
{
	part.tape = ub_new_tape(s);
	s->spilled = true;
	MemoryContext old = MemoryContextSwitchTo(s->mcxt);
	for (uint64 i = 0; i < part.cap; ++i) {
		const Unit *u = &part.units[i];
		if (!u->used)
			continue;
		for (uint32 j = 0; j < u->n; ++j)
			ub_write(s, part, u->hash, u->key, u->key_null, unit_row(s, u, j));
	}
	MemoryContextSwitchTo(old);
	ub_spill_pending(s, part);
	part.units = nullptr;
	part.cap = part.used = 0;
	part.arena = nullptr;
	part.arena_left = 0;
	part.arena_next = 256;
	s->mem -= part.mem;
	part.mem = 0;
}

// Applies a partition's pending rows to its units (or its tape), then spills the largest partitions
// while the state's memory exceeds the limit.
void
ub_flush(UnitBound *s, UnitPart &part)
{
	if (part.tape) {
		ub_spill_pending(s, part);
		return;
	}
	constexpr uint32 kAhead = 8; // (a prefetch before the table grows is only wasted)
	for (uint32 i = 0; i < part.nbuf; ++i) {
		if (i + kAhead < part.nbuf) {
			const auto *q = reinterpret_cast<const Pending *>(part.buf + (i + kAhead) * s->pending_size);
			__builtin_prefetch(&part.units[q->hash & (part.cap - 1)]);
		}
		auto *p = reinterpret_cast<Pending *>(part.buf + i * s->pending_size);
		offer(s, part, p->hash, p->key, p->key_null, pending_row(p));
	}
	part.nbuf = 0;
	const Size mem = MemoryContextMemAllocated(part.cxt, false) - part.base;
	s->mem = s->mem - part.mem + mem;
	part.mem = mem;
	while (s->limit && s->mem > s->limit && s->depth < s->max_depth) {
		UnitPart *victim = nullptr;
		for (UnitPart &q : s->parts)
			if (!q.tape && q.mem > 0 && (!victim || q.mem > victim->mem))
				victim = &q;
		if (!victim)
			break;
		ub_spill_part(s, *victim);
	}
}

void
flush_all(UnitBound *s)
{
	for (UnitPart &part : s->parts)
		if (part.nbuf > 0)
			ub_flush(s, part);
}

// Queues the spilled partitions of the current depth as batches of the next depth.
void
ub_queue_spilled(UnitBound *s)
{
	for (UnitPart &part : s->parts) {
		if (!part.tape)
			continue;
		if (s->nbatches == s->batch_cap) {
			s->batch_cap = s->batch_cap ? 2 * s->batch_cap : 64;
			s->batches = static_cast<Batch *>(s->batches ? repalloc(s->batches, s->batch_cap * sizeof(Batch))
			                                             : MemoryContextAlloc(s->mcxt, s->batch_cap * sizeof(Batch)));
		}
		s->batches[s->nbatches++] = Batch{part.tape, s->depth + 1, part.tape_bytes, part.extra, part.nextra};
		part.tape = nullptr;
		part.extra = nullptr;
		part.nextra = 0;
	}
}

// Calls f(record bytes, length) for every record of a tape (each read once), then closes it.
template <typename F>
void
ub_read_tape(UnitBound *s, LogicalTape *t, F f)
{
	MemoryContext old = MemoryContextSwitchTo(s->mcxt);
	LogicalTapeRewindForRead(t, BLCKSZ);
	MemoryContextSwitchTo(old);
	for (;;) {
		uint32 len;
		const size_t got = LogicalTapeRead(t, &len, 4);
		if (got == 0)
			break;
		if (got != 4)
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv could not read a spilled privacy unit row");
		ub_reserve(s, &s->rd, &s->rd_cap, len);
		if (LogicalTapeRead(t, s->rd, len) != len)
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv could not read a spilled privacy unit row");
		f(s->rd, len);
	}
	LogicalTapeClose(t);
}

// Calls f(unit, row) for every kept row in memory.
template <typename F>
void
for_each_row(const UnitBound *s, F f)
{
	for (const UnitPart &part : s->parts)
		if (part.units)
			for (uint64 i = 0; i < part.cap; ++i)
				if (part.units[i].used)
					for (uint32 j = 0; j < part.units[i].n; ++j)
						f(&part.units[i], unit_row(s, &part.units[i], j));
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

// Ends the current depth: pending rows applied or spilled, spilled partitions queued. (Each unit's
// kept rows are sorted by rank when the emission reaches the unit, ub_advance: no pass over the
// tables here.)
void
ub_close_depth(UnitBound *s)
{
	flush_all(s);
	ub_queue_spilled(s);
}

// Bounds the next queued batch alone (the units in memory are forgotten: emitted already); false
// when none is left.
bool
ub_load_next_batch(UnitBound *s)
{
	if (s->next_batch >= s->nbatches)
		return false;
	const Batch b = s->batches[s->next_batch++];
	for (UnitPart &part : s->parts)
		if (part.used > 0 || !part.units)
			ub_reset_part(part);
	s->mem = 0;
	s->depth = b.depth;
	// a batch whose records fit half the limit is bounded in memory in one partition (256
	// partitions' fixed overheads would otherwise spill it again for nothing)
	s->single = b.bytes <= s->limit / 2;
	s->max_depth = s->single ? b.depth : kMaxDepth;
	elog(DEBUG2, "dxpriv unit bound: batch %d of %d, depth %d, %zu bytes%s", s->next_batch, s->nbatches, b.depth,
	     static_cast<size_t>(b.bytes), s->single ? ", in memory" : "");
	ub_read_tape(s, b.tape, [&](const char *rec, uint32 len) { ub_add_record(s, rec, rec + len, true); });
	for (int i = 0; i < b.nextra; ++i)
		ub_read_tape(s, b.extra[i], [&](const char *rec, uint32 len) { ub_add_record(s, rec, rec + len, true); });
	ub_close_depth(s);
	return true;
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
	return new_unit_bound(fcinfo, aggctx, PG_GETARG_INT32(1), ncols, types, unit_type, PG_GET_COLLATION());
}

// Frees a state that was merged into another (its tapes closed, its memory released).
void
ub_free_state(UnitBound *s)
{
	if (s->closer && s->closer->tapes) {
		LogicalTapeSetClose(s->closer->tapes);
		s->closer->tapes = nullptr;
	}
	MemoryContextDelete(s->mcxt);
}

} // namespace

// dx._unit_bound_transfn(state, k int4, rank int8, VARIADIC (unit, payload...)): offers the row to
// its unit (a NULL rank, never produced by dx._unit_rank, is refused).
DX_FUNCTION(dx_unit_bound_transfn)
{
	UnitBound *s = unit_bound_state(fcinfo);
	if (PG_ARGISNULL(2))
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv unit bound received a row without rank");
	if (s->finalized)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv unit bound received a row after its final call");
	Datum vals[kMaxColumns];
	bool nulls[kMaxColumns];
	for (int c = 0; c < s->ncols; ++c) {
		nulls[c] = PG_ARGISNULL(4 + c);
		vals[c] = nulls[c] ? 0 : PG_GETARG_DATUM(4 + c);
	}
	const Datum key = PG_GETARG_DATUM(3);
	const bool key_null = PG_ARGISNULL(3);
	add_kept_row(s, unit_hash(s, key, key_null), key, key_null, PG_GETARG_INT64(2), vals, nulls);
	PG_RETURN_POINTER(s);
}

// dx._unit_bound_combinefn(state, state): the k rows of smallest rank of the union, per unit (the k
// smallest of two sets' k smallest are the union's k smallest: exact). The second state is consumed.
DX_FUNCTION(dx_unit_bound_combinefn)
{
	MemoryContext aggctx = require_aggregate_context(fcinfo, "dxpriv unit bound");
	if (PG_ARGISNULL(1))
		PG_RETURN_POINTER(PG_ARGISNULL(0) ? nullptr : PG_GETARG_POINTER(0));
	auto *other = reinterpret_cast<UnitBound *>(PG_GETARG_POINTER(1));
	if (PG_ARGISNULL(0) && !other->finalized && MemoryContextGetParent(other->mcxt) == aggctx)
		PG_RETURN_POINTER(other); // (a deserialized state in this aggregate's memory: adopted as is)
	UnitBound *s = PG_ARGISNULL(0) ? new_unit_bound(fcinfo, aggctx, other->k, other->ncols, other->col_type,
	                                                other->unit_type, other->hasher.collation)
	                               : reinterpret_cast<UnitBound *>(PG_GETARG_POINTER(0));
	if (s->k != other->k || s->ncols != other->ncols || s->unit_type != other->unit_type || s->finalized ||
	    other->finalized || other->depth != 0 || s->depth != 0)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv cannot combine unit bounds of different queries");
	for (int c = 0; c < s->ncols; ++c)
		if (s->col_type[c] != other->col_type[c])
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv cannot combine unit bounds of different queries");
	flush_all(other);
	Datum vals[kMaxColumns];
	bool nulls[kMaxColumns];
	for_each_row(other, [&](const Unit *u, KeptRow *r) {
		for (int c = 0; c < s->ncols; ++c) {
			nulls[c] = row_tags(other, r)[c] == kNull;
			vals[c] = get_value(other, r, c);
		}
		add_kept_row(s, u->hash, u->key, u->key_null, r->rank, vals, nulls);
	});
	// other's spilled partitions: their tapes join s's partition when s spilled it too (read when the
	// partition is bounded; other's tape set stays open until the aggregate ends), else their rows
	// are added
	bool attached = false;
	for (int p = 0; p < kParts; ++p) {
		UnitPart &part = other->parts[p];
		UnitPart &into = s->parts[p];
		if (!part.tape)
			continue;
		if (into.tape && !s->single) {
			MemoryContext old = MemoryContextSwitchTo(s->mcxt);
			into.extra = static_cast<LogicalTape **>(into.extra ? repalloc(into.extra, (into.nextra + 1 + part.nextra) * sizeof(LogicalTape *))
			                                                    : palloc((1 + part.nextra) * sizeof(LogicalTape *)));
			MemoryContextSwitchTo(old);
			into.extra[into.nextra++] = part.tape;
			for (int i = 0; i < part.nextra; ++i)
				into.extra[into.nextra++] = part.extra[i];
			into.tape_bytes += part.tape_bytes;
			attached = true;
		} else {
			ub_read_tape(other, part.tape, [&](const char *rec, uint32 len) { ub_add_record(s, rec, rec + len, true); });
			for (int i = 0; i < part.nextra; ++i)
				ub_read_tape(other, part.extra[i], [&](const char *rec, uint32 len) { ub_add_record(s, rec, rec + len, true); });
		}
		part.tape = nullptr;
		part.nextra = 0;
	}
	if (other != s && MemoryContextGetParent(other->mcxt) == aggctx) {
		if (!attached)
			ub_free_state(other);
		else // (its tapes are s's now: only its partitions' memory is released)
			for (UnitPart &part : other->parts)
				MemoryContextReset(part.cxt);
	}
	PG_RETURN_POINTER(s);
}

// dx._unit_bound_serialize(state) -> bytea: version, k, ncols, unit type and collation, column
// types, the number of records, then the records (ub_encode) of the rows in memory and of the
// spilled partitions. Beyond 1 GB: 54000.
DX_FUNCTION(dx_unit_bound_serialize)
{
	auto *s = reinterpret_cast<UnitBound *>(PG_GETARG_POINTER(0));
	if (s->finalized)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv cannot serialise a final unit bound");
	flush_all(s);
	Size cap = 64 * 1024, size = VARHDRSZ;
	char *out = static_cast<char *>(palloc(cap));
	auto put = [&](const void *v, size_t n) {
		if (size + n > cap) {
			if (size + n > MaxAllocSize)
				fail(ERRCODE_PROGRAM_LIMIT_EXCEEDED, "the rows of a parallel worker's privacy units exceed 1 GB",
				     "Set max_parallel_workers_per_gather = 0 for this statement, or dxpriv.unit_bounding = 'sort'.");
			cap = Min(Max(2 * cap, size + n), static_cast<Size>(MaxAllocSize));
			out = static_cast<char *>(repalloc(out, cap));
		}
		std::memcpy(out + size, v, n);
		size += n;
	};
	const uint32 nc = static_cast<uint32>(s->ncols);
	const uint32 k = static_cast<uint32>(s->k);
	put(&kUnitBoundVersion, 1);
	put(&k, 4);
	put(&nc, 4);
	put(&s->unit_type, 4);
	put(&s->hasher.collation, 4);
	for (int c = 0; c < s->ncols; ++c)
		put(&s->col_type[c], 4);
	uint64 nrecords = 0;
	const Size count_at = size;
	put(&nrecords, 8);
	for_each_row(s, [&](const Unit *u, KeptRow *r) {
		const Size n = ub_encode(s, u->hash, u->key, u->key_null, r);
		put(s->io, n);
		++nrecords;
	});
	for (UnitPart &part : s->parts)
		if (part.tape) {
			auto copy = [&](const char *rec, uint32 len) {
				put(&len, 4);
				put(rec, len);
				++nrecords;
			};
			ub_read_tape(s, part.tape, copy);
			for (int i = 0; i < part.nextra; ++i)
				ub_read_tape(s, part.extra[i], copy);
			part.tape = nullptr;
			part.nextra = 0;
		}
	std::memcpy(out + count_at, &nrecords, 8);
	SET_VARSIZE(out, size);
	PG_RETURN_BYTEA_P(reinterpret_cast<bytea *>(out));
}

// dx._unit_bound_deserialize(bytea, internal) -> state. The bytes come from dx._unit_bound_serialize
// in a parallel worker of the same server; every record is checked (malformed: XX001) and its unit
// hashed again.
DX_FUNCTION(dx_unit_bound_deserialize)
{
	bytea *b = PG_GETARG_BYTEA_PP(0);
	const char *cur = VARDATA_ANY(b);
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
	uint64 nrecords;
	get(&nrecords, 8);
	UnitBound *s = new_unit_bound(fcinfo, aggregate_or_current_context(fcinfo), static_cast<int32>(k),
	                              static_cast<int>(nc), types, unit_type, collation);
	for (uint64 j = 0; j < nrecords; ++j) {
		uint32 len;
		get(&len, 4);
		if (static_cast<size_t>(end - cur) < len)
			corrupted_unit_state();
		ub_add_record(s, cur, cur + len, false);
		cur += len;
	}
	if (cur != end)
		corrupted_unit_state();
	PG_RETURN_POINTER(s);
}

// dx._unit_bound_finalfn(state) -> int8: ends the pass (each unit sorted by rank when emitted,
// the spilled ones queued: they are bounded one by one while dx._unit_rows reads) and returns a
// random handle by which dx._unit_rows of the same statement reads the kept rows.
DX_FUNCTION(dx_unit_bound_finalfn)
{
	UnitBound *s;
	if (PG_ARGISNULL(0)) { // no row: an empty state
		MemoryContext aggctx = require_aggregate_context(fcinfo, "dxpriv unit bound");
		s = new_unit_bound(fcinfo, aggctx, 1, 0, nullptr, INT4OID, InvalidOid);
		s->no_rows = true;
	} else {
		s = reinterpret_cast<UnitBound *>(PG_GETARG_POINTER(0));
	}
	if (s->finalized)
		PG_RETURN_INT64(static_cast<int64>(s->handle));
	ub_close_depth(s);
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

// The cursor of one dx._unit_rows call site: the index of the kept row it reads next. The call
// sites of one statement read the state's one iterator in lockstep (ProjectSet asks each for row i
// before any for row i + 1).
struct RowsCursor {
	UnitBound *state;
	int kind, col, gcol;
	uint64 index;
};

// Moves the state's iterator to its next kept row (units partition by partition, each unit's rows
// by rank; then the spilled partitions, bounded one by one); nullptr after the last.
KeptRow *
ub_advance(UnitBound *s)
{
	++s->emit_index;
	while (!s->emit_done) {
		while (s->emit_part < kParts) {
			const UnitPart &part = s->parts[s->emit_part];
			while (part.units && s->emit_slot < part.cap) {
				Unit *u = &part.units[s->emit_slot];
				if (u->used && s->emit_row < u->n) {
					if (s->emit_row == 0 && u->n > 1)
						sort_unit(s, u); // (by rank, before its first row is emitted)
					s->emit_unit = u;
					return s->emit_cur = unit_row(s, u, s->emit_row++);
				}
				++s->emit_slot;
				s->emit_row = 0;
			}
			++s->emit_part;
			s->emit_slot = 0;
			s->emit_row = 0;
		}
		if (!ub_load_next_batch(s))
			s->emit_done = true;
		else
			s->emit_part = 0;
	}
	s->emit_unit = nullptr;
	return s->emit_cur = nullptr;
}

// Kept row `index` (nullptr after the last): the iterator's current row or the next one. Read again
// from the start only when nothing was spilled (the spilled rows are bounded once, while read).
KeptRow *
ub_row_at(UnitBound *s, uint64 index)
{
	if (index == s->emit_index)
		return s->emit_cur;
	if (index == s->emit_index + 1)
		return ub_advance(s);
	if (index == 0 && !s->spilled) {
		s->emit_part = 0;
		s->emit_slot = 0;
		s->emit_row = 0;
		s->emit_index = UINT64_MAX;
		s->emit_done = false;
		return ub_advance(s);
	}
	fail(ERRCODE_INTERNAL_ERROR, "dxpriv bounded rows are read out of order",
	     "dx._unit_rows reads the rows dxpriv's analyzer bounds in the same statement; it cannot be called directly.");
}

} // namespace

// dx._unit_rows(handle int8, kind int4, col int4, gcol int4, type anyelement) -> SETOF anyelement:
// one value per kept row, in the order of the state's iterator (every call site of a statement
// emits the same rows in the same order, in lockstep). kind 0: payload column col (its type must be
// the result type); kind 1: the count_units flag of weight column col (true on the unit's first kept
// row, in rank order, whose weight is not NULL, within its group column gcol when gcol >= 0:
// core/unit_bound.h unit_first_counted); kind 2: true (one row per kept row).
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
		const bool ok = s->no_rows ||
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
	UnitBound *s = c->state;
	KeptRow *r = ub_row_at(s, c->index++);
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
	const Unit *u = s->emit_unit;
	for (uint32 j = 0; j + 1 < s->emit_row; ++j) {
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
