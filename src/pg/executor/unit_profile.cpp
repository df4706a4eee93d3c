// Privacy units: unit profiles (executor/unit_profile.h): built, cached in shared memory, handed to
// a statement by dx._unit_profile and used per row by dx._unit_keep.
#include "pg/executor/unit_profile.h"
#include "pg/executor/unit_hash.h"
#include "pg/executor/rank_key.h"
#include "pg/elevated/sealed_scan.h"

#include "pg/guard.h"
#include "pg/metadata/extension_objects.h"
#include "pg/plan_walk.h"
#include "pg/settings.h"
#include "pg/ledger/contents_version.h"
#include "pg/statement/statement_context.h"

#include "core/siphash.h"
#include "core/unit_prefilter.h"
#include "core/unit_rank_compact.h"

extern "C" {
#include "access/htup_details.h"
#include "access/parallel.h"
#include "nodes/nodeFuncs.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "nodes/primnodes.h"
#include "common/hashfn.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/itemptr.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
}

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>

namespace dxpriv::pg {

bool guc_unit_profiles = true;
int guc_unit_profile_memory = 16384; // kB
int guc_unit_profile_build_memory = 65536; // kB
int guc_unit_profile_max_size = 262144;     // kB

namespace {

constexpr uint32 kProfileMagic = 0x75707266; // "uprf"
constexpr int kLargeSlots = 8;               // cached profiles that may use 1/8 of the memory each
constexpr int kSmallSlots = 24;              // (citusunit) and of 1/32 each (a shard's profile), beyond it
constexpr int kProfileSlots = kLargeSlots + kSmallSlots;

// What identifies a profile: the rows it describes (the table, ONLY or its tree, and their contents
// version) and how it splits them into units (the column, its type and collation, k).
struct ProfileId {
	Oid database; // (MyDatabaseId: a database made from another as its template has the same table
	              // OIDs, relfilenodes, trigger rows and contents_changes rows, hence equal versions
	              // after as many writes on each side; the cache is the cluster's)
	Oid relid;
	bool inh;
	int16 attnum;
	int32 k;
	Oid type;
	Oid collation;
	uint64 version;
	int64 seed; // dxpriv.test_seed when built (-1: none): a seeded statement uses a profile of its seed
	uint64 hash_fn; // identity of the unit type's hash function when not built in (unit_hash_identity)
};

// The bytes of a profile (a bytea's payload): this header, then `slots` (a power of two, or 0)
// entries of an open-addressing table of the heavy units (hash 0: an empty entry).
struct ProfileHeader {
	uint32 magic;
	ProfileId id;
	bool versioned;        // false: built for this execution only (no version: never cached)
	uint64 snapshot;       // fingerprint of the snapshot it was handed out under (per execution)
	unsigned char key[16]; // the rank key
	uint32 heavy;
	uint32 slots;
	// the two units no table entry can name (unit_special): the NULL unit and the unit whose hash is
	// 0 (the empty entry); special_heavy[c]: more than k rows, with threshold special_threshold[c]
	int64 special_threshold[2];
	bool special_heavy[2];
};

struct HeavyUnit {
	uint64 hash;      // the unit's 64-bit hash (never 0)
	int64 threshold;  // ranks compare as dx._unit_rank's bigint (signed), as in both other bounding paths
};

struct ProfileSlot {
	bool used;
	uint64 last_used;
	Size size; // bytes of the profile
	ProfileId id;
};

struct ProfileShared {
	LWLock *lock;
	unsigned char secret[32]; // encryption (16) and MAC (16) keys of handed-out profiles (drawn at startup)
	uint64 clock;
	Size slot_bytes;  // a large slot's area (the largest profile cached)
	Size small_bytes; // a small slot's area
	ProfileSlot slots[kProfileSlots];
	// then kLargeSlots areas of slot_bytes each and kSmallSlots of small_bytes each
};

ProfileShared *profile_shm = nullptr;

Size
profile_slot_bytes()
{
	return MAXALIGN(static_cast<Size>(guc_unit_profile_memory) * 1024 / kLargeSlots);
}

Size
profile_small_bytes()
{
	return MAXALIGN(static_cast<Size>(guc_unit_profile_memory) * 1024 / 32);
}

Size
profile_shmem_size()
{
	return MAXALIGN(sizeof(ProfileShared)) + kLargeSlots * profile_slot_bytes() + kSmallSlots * profile_small_bytes();
}

char *
slot_area(int i)
{
	const Size at = i < kLargeSlots ? i * profile_shm->slot_bytes
	                                : kLargeSlots * profile_shm->slot_bytes + (i - kLargeSlots) * profile_shm->small_bytes;
	return reinterpret_cast<char *>(profile_shm) + MAXALIGN(sizeof(ProfileShared)) + at;
}

// The bytes slot i holds at most.
Size
slot_capacity(int i)
{
	return i < kLargeSlots ? profile_shm->slot_bytes : profile_shm->small_bytes;
}

bool
same_id(const ProfileId &a, const ProfileId &b)
{
	return a.database == b.database && a.relid == b.relid && a.inh == b.inh && a.attnum == b.attnum && a.k == b.k && a.type == b.type &&
	       a.collation == b.collation && a.version == b.version && a.seed == b.seed && a.hash_fn == b.hash_fn;
}

// Whether the profiles of unit type `type` may be cached, with *identity the identity of its hash
// function for the cache key (0: built in). A cached profile holds hashes computed by the function
// as it was at the build: a DBA's function replaced since (CREATE OR REPLACE, still a valid hash)
// would find no heavy unit, and every row would be kept. A C function (an extension's) is
// identified by its pg_proc row (OID and xmin: replacing it writes a new row; a new library needs a
// restart, which clears the cache); a function in another language (SQL, PL/pgSQL) may call others
// that change without touching its row, so its profiles are never cached (built by each statement,
// as for a table without a contents version). Ereports (the type cache): call inside pg_call.
bool
unit_hash_identity(Oid type, uint64 *identity)
{
	*identity = 0;
	if (type == INT2OID || type == INT4OID || type == INT8OID || type == OIDOID) // (unit_hash.h: no function)
		return true;
	const Oid fn = lookup_type_cache(type, TYPECACHE_HASH_EXTENDED_PROC)->hash_extended_proc;
	if (!OidIsValid(fn) || !unit_type_call_sealed(fn))
		return true; // built in (or none: the build refuses the type)
	HeapTuple tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn));
	if (!HeapTupleIsValid(tup))
		return false;
	const bool c = reinterpret_cast<Form_pg_proc>(GETSTRUCT(tup))->prolang == ClanguageId;
	*identity = hash_bytes_uint32_extended(fn, HeapTupleHeaderGetXmin(tup->t_data)) | 1;
	ReleaseSysCache(tup);
	return c;
}

// The seed of the unit type's extended hash in a profile: a keyed function of the profile's secret
// rank key (the rank of a row identity no row has: table OID 0, block 0, offset 0), drawn anew with
// each profile. Two unit values sharing a profile entry keep k rows together (a pair whose 64-bit
// hashes collide could swap up to k of one unit's kept rows for the other's, twice the presence
// bound); with an unkeyed hash (seed 0) such a pair of text, numeric or composite values could be
// searched for offline and stored, with the seed it would have to be found for a key nobody sees,
// which changes at every write. Integer units need none (unit_hash.h: a bijection, never shared).
inline int64
unit_hash_seed(SipRowRank &ranker)
{
	return static_cast<int64>(ranker.rank(InvalidOid, 0, 0));
}

// The unit's 64-bit hash in a profile (executor/unit_hash.h) and its class: -1 for a unit named by
// its hash in the table of heavy units, 0 for the NULL unit, 1 for the unit whose hash is 0 (the
// table's empty entry); the two special units have their own entries in the header. So integer
// units (whose hash is a bijection of their value) never share an entry: before, the NULL unit's
// constant hash and the remapping of hash 0 to 1 let two chosen int8 values share one with NULL
// and with 0, and two units sharing an entry keep k rows together, which may be all of one of them
// (adding a unit could then swap up to k of another unit's kept rows for its own: twice the presence
// bound; e2e test_unit_redteam.test_crafted_int8_units_colliding_with_null_and_zero). Other types
// share an entry only when their opclass's 64-bit hashes collide.
inline int
unit_special(const UnitHasher *u, Datum v, bool isnull, uint64 *hash)
{
	*hash = 0;
	if (isnull)
		return 0;
	*hash = unit_hash_value(u, v, false);
	return *hash == 0 ? 1 : -1;
}

constexpr const char *kProfileHashHint = "Set dxpriv.unit_profiles to off, or use a unit column of a hashable type.";

// Fingerprint of a snapshot (the leader's, restored in its parallel workers as it was).
uint64
snapshot_fingerprint(Snapshot s)
{
	uint64 h = hash_bytes_uint32_extended(s->xmin, (static_cast<uint64>(s->xmax) << 32) | s->curcid);
	h = hash_bytes_extended(reinterpret_cast<const unsigned char *>(s->xip), sizeof(TransactionId) * s->xcnt, h);
	if (s->subxip && s->subxcnt > 0)
		h = hash_bytes_extended(reinterpret_cast<const unsigned char *>(s->subxip), sizeof(TransactionId) * s->subxcnt, h);
	return h ^ (static_cast<uint64>(s->xcnt) << 40) ^ (s->suboverflowed ? 1 : 0);
}

// A handed-out profile: this clear prefix, then the profile's bytes (ProfileHeader and table)
// encrypted by XOR with SipHash-2-4(secret[0..16]; nonce, block) (a PRF in counter mode), the MAC
// SipHash-2-4(secret[16..32]) of the nonce followed by the ciphertext (encrypt-then-MAC). The analyst never
// holds the secret: a profile obtained any other way than through dxpriv's own statements is
// ciphertext (its length tells the table's size, rounded to a power of two), and dx._unit_keep
// refuses anything the secret did not seal.
struct SealedPrefix {
	uint32 magic;
	uint32 pad;
	uint64 nonce;
	uint64 mac;
};

void
profile_xor(unsigned char *bytes, Size size, uint64 nonce)
{
	const SipKeyStream stream(profile_shm->secret, nonce); // (siphash24 of {nonce, block}, specialised)
	for (Size at = 0, block = 0; at < size; at += 8, block++) {
		const uint64 ks = stream.block(static_cast<uint64>(block));
		const Size n = std::min<Size>(8, size - at);
		for (Size i = 0; i < n; i++)
			bytes[at + i] ^= static_cast<unsigned char>(ks >> (8 * i));
	}
}

uint64
profile_mac(const unsigned char *cipher, Size size, uint64 nonce)
{
	SipHash24 mac(profile_shm->secret + 16); // over the nonce and then the ciphertext: a tag binds both
	mac.update(&nonce, sizeof nonce);
	mac.update(cipher, size);
	return mac.finish();
}

// Seals plain (a profile's bytes) into a new bytea.
bytea *
seal_profile(const char *plain, Size size)
{
	SealedPrefix pre;
	std::memset(&pre, 0, sizeof pre);
	pre.magic = kProfileMagic;
	if (!pg_strong_random(&pre.nonce, sizeof pre.nonce))
		ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("dxpriv could not draw a nonce")));
	bytea *out = static_cast<bytea *>(MemoryContextAllocHuge(CurrentMemoryContext, VARHDRSZ + sizeof pre + size));
	SET_VARSIZE(out, VARHDRSZ + sizeof pre + size);
	unsigned char *cipher = reinterpret_cast<unsigned char *>(VARDATA(out)) + sizeof pre;
	std::memcpy(cipher, plain, size);
	profile_xor(cipher, size, pre.nonce);
	pre.mac = profile_mac(cipher, size, pre.nonce);
	std::memcpy(VARDATA(out), &pre, sizeof pre);
	return out;
}

// The plain bytes of sealed profile p (palloc'd, MAXALIGNed), or XX000 when the secret did not seal it.
char *
open_profile(const bytea *p, Size *size)
{
	const Size total = VARSIZE_ANY_EXHDR(p);
	SealedPrefix pre;
	if (!profile_shm || total < sizeof pre + sizeof(ProfileHeader))
		ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("dxpriv: not a unit profile")));
	std::memcpy(&pre, VARDATA_ANY(p), sizeof pre);
	*size = total - sizeof pre;
	const unsigned char *cipher = reinterpret_cast<const unsigned char *>(VARDATA_ANY(p)) + sizeof pre;
	if (pre.magic != kProfileMagic || pre.mac != profile_mac(cipher, *size, pre.nonce))
		ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("dxpriv: not a unit profile")));
	char *plain = static_cast<char *>(MemoryContextAllocHuge(CurrentMemoryContext, *size));
	std::memcpy(plain, cipher, *size);
	profile_xor(reinterpret_cast<unsigned char *>(plain), *size, pre.nonce);
	return plain;
}

// What the build's scan fills in one pass (plain data: the scan's callback is a PostgreSQL frame). The
// build's work arrays live in their own memory context, bounded by dxpriv.unit_profile_build_memory:
// `rows`, this pass's work area, grown by doubling up to max_cap entries, and the special units'
// ranks, collected by the first pass only, each in an array of at most 2(k + 1) entries. (The heavy
// units found, the build's output, are outside: see build_profile.)
struct ProfileScan {
	SipRowRank *ranker;
	UnitHasher hasher;
	MemoryContext cxt;
	Size keep;     // k + 1: the ranks of a unit the build needs (its k-th and the tie check)
	HashRange range; // this pass's range (narrowed to its lower half while the work area overflows)
	HashRange *todo; // the ranges left for later passes, a stack (the next on top)
	int ntodo;
	bool specials; // this pass collects the special units (the first)
	UnitRank *rows;
	Size n, cap, max_cap;
	Size total;      // rows of the table (the first pass)
	int64 *special[2]; // the ranks of the special units' rows (unit_special)
	Size nspecial[2], capspecial[2];
	Size peak;       // the most the build's context held (MemoryContextMemAllocated), in bytes
};

constexpr Size kBuildSlack = 16 * 1024; // of the budget, for the context's own blocks and headers
constexpr int kBuildRanges = 65;        // ranges left at once: halves of distinct depths, at most 64

inline void
note_build_memory(ProfileScan *ps)
{
	ps->peak = Max(ps->peak, MemoryContextMemAllocated(ps->cxt, true));
}

// One row of the build's scan (SealedRowFn): its unit's hash and, when its unit is in this pass's
// range, its rank.
void
profile_scan_row(void *ctx, const SealedRow &row)
{
	auto *ps = static_cast<ProfileScan *>(ctx);
	uint64 hash;
	const int c = unit_special(&ps->hasher, row.value, row.isnull, &hash);
	if (ps->specials)
		ps->total++;
	if (c >= 0) {
		if (!ps->specials)
			return;
		const int64 rank = static_cast<int64>(ps->ranker->rank(row.table, row.block, row.offset));
		if (ps->nspecial[c] == ps->capspecial[c]) {
			if (ps->capspecial[c] < 2 * ps->keep) {
				const Size cap = ps->capspecial[c] == 0 ? Min(2 * ps->keep, 2048) : Min(2 * ps->capspecial[c], 2 * ps->keep);
				ps->special[c] = static_cast<int64 *>(
				    ps->special[c] ? repalloc_huge(ps->special[c], cap * sizeof(int64))
				                   : MemoryContextAllocHuge(ps->cxt, cap * sizeof(int64)));
				ps->capspecial[c] = cap;
				note_build_memory(ps);
			} else {
				ps->nspecial[c] = compact_ranks(ps->special[c], ps->nspecial[c], ps->keep);
			}
		}
		ps->special[c][ps->nspecial[c]++] = rank;
		return;
	}
	if (!ps->range.contains(hash))
		return;
	if (ps->n == ps->cap) {
		if (ps->cap < ps->max_cap) {
			ps->cap = Min(2 * ps->cap, ps->max_cap);
			ps->rows = static_cast<UnitRank *>(repalloc_huge(ps->rows, ps->cap * sizeof(UnitRank)));
			note_build_memory(ps);
		} else {
			// full: each unit's k + 1 smallest ranks; while that is still over half the work area
			// (two units at least: k + 1 <= max_cap / 2), the pass narrows its range to the lower
			// half and leaves the upper half to a later pass (its entries dropped: sorted, they are
			// the last ones), so every pass finishes a range
			ps->n = compact_unit_ranks(ps->rows, ps->n, ps->keep);
			while (ps->n > ps->max_cap / 2) {
				if (ps->range.depth >= 64 || ps->ntodo >= kBuildRanges)
					ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("dxpriv: a unit profile range that cannot be split")));
				ps->todo[ps->ntodo++] = ps->range.half(1);
				ps->range = ps->range.half(0);
				ps->n = leading_in_range(ps->rows, ps->n, ps->range);
			}
			if (!ps->range.contains(hash))
				return;
		}
	}
	UnitRank &r = ps->rows[ps->n++];
	r.hash = hash;
	r.rank = static_cast<int64>(ps->ranker->rank(row.table, row.block, row.offset));
}

// The table slots of a profile of `heavy` heavy units: the least power of two at least twice their
// number (0 for none), as build_profile lays the table out.
uint64
profile_slots(uint64 heavy)
{
	uint64 slots = 0;
	if (heavy > 0) {
		slots = 1;
		while (slots < 2 * heavy)
			slots <<= 1;
	}
	return slots;
}

// The bytes of the profile of `heavy` heavy units (its header and table, as build_profile sizes it).
Size
profile_bytes_for(uint64 heavy)
{
	return sizeof(ProfileHeader) + static_cast<Size>(profile_slots(heavy)) * sizeof(HeavyUnit);
}

constexpr const char *kMaxSizeHint =
    "Ask a superuser to raise dxpriv.unit_profile_max_size, or to set dxpriv.unit_profiles to off for statements on "
    "this table (the per-statement bounding spills to disk); a prepared statement planned while the table was "
    "smaller bounds its units per statement once prepared again.";

// The 54000 of a profile over dxpriv.unit_profile_max_size (the same message wherever it is found).
[[noreturn]] void
refuse_profile_size(Oid relid)
{
	ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
	                errmsg("the unit profile of table \"%s\" could exceed dxpriv.unit_profile_max_size (%d kB)",
	                       get_rel_name(relid), guc_unit_profile_max_size),
	                errhint("%s", kMaxSizeHint)));
	pg_unreachable();
}

constexpr const char *kBuildMemoryHint =
    "Raise dxpriv.unit_profile_build_memory (superusers), or set dxpriv.unit_profiles to off for statements on this table.";

// Builds the profile of id (version ignored) over the rows `snapshot` sees, with rank key attempt
// `attempt`, its work memory within dxpriv.unit_profile_build_memory: the (unit hash, rank) of each
// row of a range of unit hashes (core/unit_rank_compact.h) in a work area compacted, when full, to
// each unit's k + 1 smallest ranks; the first pass takes every hash, and while its work area stays
// over half full after a compaction a pass narrows its range to the lower half (by the hash's next
// high bit), leaving the upper half to a later pass: each pass finishes one range, in hash order.
// A unit with more than k rows gets the rank of its k-th. The same profile, byte for byte, as one
// sort of every row (the same heavy units, thresholds and table order; regress 85, GoogleTest
// UnitRankCompact); every pass reads `snapshot` and the same tables (taken once). nullptr when two of a heavy
// unit's rows share the rank at the threshold (2^-64: the caller draws another key). 54000 when the
// setting cannot hold a unit's k + 1 ranks twice over (a function of k and the setting only: never
// of the rows). The heavy units found (16 bytes each, then the profile's table) are the build's
// output, outside the setting: a limit on them would be an error whose occurrence tells the analyst
// something of the rows. (dxpriv.unit_profile_max_size bounds them, but every statement's path checks
// a bound from the table's size in blocks first, unit_profile_may_exceed, so that the build's own
// check is reached only by a direct call of dx._unit_profile.)
bytea *
build_profile(const ProfileId &id, bool versioned, Snapshot snapshot, int attempt)
{
	ProfileHeader h;
	std::memset(&h, 0, sizeof h);
	h.magic = kProfileMagic;
	h.id = id;
	h.versioned = versioned;
	draw_rank_key(h.key, attempt);
	SipRowRank ranker(h.key);
	const Size k = static_cast<Size>(id.k);
	const Size budget = static_cast<Size>(guc_unit_profile_build_memory) * 1024;
	// the special units' arrays at their largest, then the work area: at least 2(k + 1) entries
	const Size special_bytes = 2 * 2 * (k + 1) * sizeof(int64);
	const Size least = kBuildSlack + special_bytes + 2 * (k + 1) * sizeof(UnitRank);
	if (budget < least)
		ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
		                errmsg("dxpriv.unit_profile_build_memory (%d kB) is too small for the unit profile of a table with max_rows_per_unit %d",
		                       guc_unit_profile_build_memory, id.k),
		                errdetail("The build holds the %d smallest row ranks of a unit at once, twice over: it needs at least %zu kB.",
		                          id.k + 1, (least + 1023) / 1024),
		                errhint("%s", kBuildMemoryHint)));
	ProfileScan ps;
	std::memset(&ps, 0, sizeof ps);
	ps.ranker = &ranker;
	// the scan and every hash call run inside the sealed path, as the table's owner
	// (elevated/sealed_scan.h): the hasher is not sealed again per call
	init_unit_hasher(&ps.hasher, id.type, id.collation, CurrentMemoryContext, kProfileHashHint, false, InvalidOid);
	ps.hasher.seed = unit_hash_seed(ranker);
	ps.cxt = AllocSetContextCreate(CurrentMemoryContext, "dxpriv unit profile build", ALLOCSET_SMALL_SIZES);
	ps.keep = k + 1;
	ps.max_cap = (budget - kBuildSlack - special_bytes) / sizeof(UnitRank);
	ps.cap = std::min<Size>(1024, ps.max_cap);
	ps.rows = static_cast<UnitRank *>(MemoryContextAllocHuge(ps.cxt, ps.cap * sizeof(UnitRank)));
	note_build_memory(&ps);
	// the heavy units found, in hash order (the output: in the caller's context)
	Size nheavy = 0, capheavy = 64;
	auto *heavy = static_cast<UnitRank *>(MemoryContextAllocHuge(CurrentMemoryContext, capheavy * sizeof(UnitRank)));
	// the ranges still to scan, a stack in hash order (the top is the lowest)
	HashRange todo[kBuildRanges];
	todo[0] = HashRange{0, 0};
	ps.todo = todo;
	ps.ntodo = 1;
	int passes = 0;
	bool tied = false;
	// every pass reads the same tables (a child attached meanwhile is read by none of them)
	List *members = sealed_scan_members(id.relid, id.inh);
	while (ps.ntodo > 0) {
		ps.range = todo[--ps.ntodo];
		ps.specials = passes == 0;
		ps.n = 0;
		passes++;
		sealed_column_scan(id.relid, members, id.attnum, snapshot, "Set dxpriv.unit_profiles to off for statements on this table.",
		                   profile_scan_row, &ps);
		ps.n = compact_unit_ranks(ps.rows, ps.n, ps.keep);
		const Size found = heavy_units(ps.rows, ps.n, k, ps.rows);
		if (found == kTiedThreshold) { // a tie at the threshold would keep k + 1 rows
			tied = true;
			break;
		}
		// (harden) the output within dxpriv.unit_profile_max_size, checked before it grows: the
		// planner and the executor start (a shard's build: dx._unit_keep_shard, review5) checked an
		// upper bound of it (unit_profile_may_exceed), so this is reached only by a direct call of
		// dx._unit_profile (never, for a heap, otherwise: the bound holds for every snapshot taken
		// before it)
		if (profile_bytes_for(nheavy + found) > static_cast<Size>(guc_unit_profile_max_size) * 1024) {
			MemoryContextDelete(ps.cxt);
			refuse_profile_size(id.relid);
		}
		if (nheavy + found > capheavy) {
			while (capheavy < nheavy + found)
				capheavy *= 2;
			heavy = static_cast<UnitRank *>(repalloc_huge(heavy, capheavy * sizeof(UnitRank)));
		}
		std::memcpy(heavy + nheavy, ps.rows, found * sizeof(UnitRank));
		nheavy += found;
	}
	for (int c = 0; c < 2 && !tied; c++) { // the special units (unit_special): their own entries
		const Size m = compact_ranks(ps.special[c], ps.nspecial[c], ps.keep);
		if (m <= k)
			continue;
		if (ps.special[c][k] == ps.special[c][k - 1]) // a tie at the threshold would keep k + 1 rows
			tied = true;
		h.special_heavy[c] = true;
		h.special_threshold[c] = ps.special[c][k - 1];
	}
	// (to superusers only: the number of passes and of rows tell the table's size, which the
	// analyst's answers hide behind noise)
	if (superuser()) {
		ereport(DEBUG1, (errmsg_internal("dxpriv: unit profile of \"%s\" built in %d pass%s over %zu rows, within dxpriv.unit_profile_build_memory: %s",
		                                 get_rel_name(id.relid), passes, passes == 1 ? "" : "es", ps.total,
		                                 ps.peak <= budget ? "yes" : "NO")));
		ereport(DEBUG2, (errmsg_internal("dxpriv: unit profile build memory: peak %zu bytes of %zu, %d passes, %zu heavy units",
		                                 ps.peak, budget, passes, nheavy)));
	}
	MemoryContextDelete(ps.cxt);
	if (tied) {
		pfree(heavy);
		return nullptr;
	}
	const auto slots = static_cast<uint32>(profile_slots(nheavy));
	const Size size = profile_bytes_for(nheavy);
	bytea *out = static_cast<bytea *>(MemoryContextAllocHuge(CurrentMemoryContext, VARHDRSZ + size));
	SET_VARSIZE(out, VARHDRSZ + size);
	h.heavy = static_cast<uint32>(nheavy);
	h.slots = slots;
	std::memcpy(VARDATA(out), &h, sizeof h);
	HeavyUnit *table = reinterpret_cast<HeavyUnit *>(VARDATA(out) + sizeof(ProfileHeader));
	std::memset(table, 0, static_cast<Size>(slots) * sizeof(HeavyUnit));
	for (Size i = 0; i < nheavy; i++) { // (in hash order: the order of the one-sort build)
		uint32 at = static_cast<uint32>(heavy[i].hash) & (slots - 1);
		while (table[at].hash != 0)
			at = (at + 1) & (slots - 1);
		table[at].hash = heavy[i].hash;
		table[at].threshold = heavy[i].rank;
	}
	pfree(heavy);
	return out;
}

// dx._unit_profile calls of a plan with constant arguments (refuse_oversized_unit_profiles): their
// (relid, inh, k) as a List of three-element int lists.
struct ProfileCalls {
	Oid fn;
	List *calls;
};

bool
profile_call_walker(Node *node, void *p)
{
	if (!node)
		return false;
	auto *pc = static_cast<ProfileCalls *>(p);
	if (IsA(node, FuncExpr) && castNode(FuncExpr, node)->funcid == pc->fn) {
		List *args = castNode(FuncExpr, node)->args;
		if (list_length(args) == 5 && IsA(linitial(args), Const) && IsA(lsecond(args), Const) && IsA(lfourth(args), Const)) {
			const Const *rel = castNode(Const, linitial(args)), *inh = castNode(Const, lsecond(args)),
			            *k = castNode(Const, lfourth(args));
			if (!rel->constisnull && !inh->constisnull && !k->constisnull)
				pc->calls = lappend(pc->calls, list_make3_int(static_cast<int>(DatumGetObjectId(rel->constvalue)),
				                                              DatumGetBool(inh->constvalue) ? 1 : 0,
				                                              DatumGetInt32(k->constvalue)));
		}
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(profile_call_walker), p);
}

// Copies the cached profile of id into a new bytea (nullptr: none).
bytea *
cached_profile(const ProfileId &id)
{
	if (!profile_shm || profile_shm->slot_bytes == 0)
		return nullptr;
	bytea *out = nullptr;
	LWLockAcquire(profile_shm->lock, LW_EXCLUSIVE);
	for (int i = 0; i < kProfileSlots; i++) {
		ProfileSlot &s = profile_shm->slots[i];
		if (s.used && same_id(s.id, id)) {
			out = static_cast<bytea *>(palloc_extended(VARHDRSZ + s.size, MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM));
			if (out) {
				SET_VARSIZE(out, VARHDRSZ + s.size);
				std::memcpy(VARDATA(out), slot_area(i), s.size);
				s.last_used = ++profile_shm->clock;
			}
			break;
		}
	}
	LWLockRelease(profile_shm->lock);
	return out;
}

// Stores profile p of id, replacing the profile of the same table, unit and k, else the least
// recently used; not when it exceeds a slot (it is then built for each execution).
void
store_profile(const ProfileId &id, const bytea *p)
{
	const Size size = VARSIZE(p) - VARHDRSZ;
	if (!profile_shm || size > profile_shm->slot_bytes)
		return;
	LWLockAcquire(profile_shm->lock, LW_EXCLUSIVE);
	int victim = -1;
	for (int i = 0; i < kProfileSlots && victim < 0; i++) {
		ProfileSlot &s = profile_shm->slots[i];
		if (s.used && s.id.database == id.database && s.id.relid == id.relid && s.id.inh == id.inh && s.id.attnum == id.attnum &&
		    s.id.k == id.k) {
			if (size <= slot_capacity(i))
				victim = i;
			else
				s.used = false; // (the older version of the profile, in a slot too small for this one)
		}
	}
	// a free slot that fits, small ones first (they hold the profiles of a worker's shards, citusunit),
	// else the least recently used that fits
	for (int n = 0; n < kProfileSlots && victim < 0; n++) {
		const int i = (n + kLargeSlots) % kProfileSlots;
		if (!profile_shm->slots[i].used && size <= slot_capacity(i))
			victim = i;
	}
	if (victim < 0) {
		for (int i = 0; i < kProfileSlots; i++)
			if (size <= slot_capacity(i) &&
			    (victim < 0 || profile_shm->slots[i].last_used < profile_shm->slots[victim].last_used))
				victim = i;
	}
	ProfileSlot &s = profile_shm->slots[victim];
	std::memcpy(slot_area(victim), VARDATA_ANY(p), size);
	s.used = true;
	s.size = size;
	s.id = id;
	s.last_used = ++profile_shm->clock;
	LWLockRelease(profile_shm->lock);
}

// The identity of the profile of column attnum of relid (inh: with its inheritance tree) bounding
// units to k rows, in this database and under dxpriv.test_seed, with the column's type and collation;
// its version and hash function identity are filled by profile_for. Ereports (the catalog): call in
// a PostgreSQL frame.
ProfileId
profile_id_of(Oid relid, bool inh, int16 attnum, int32 k)
{
	ProfileId id;
	std::memset(&id, 0, sizeof id);
	id.database = MyDatabaseId;
	id.relid = relid;
	id.inh = inh;
	id.attnum = attnum;
	id.k = k;
	id.seed = guc_test_seed < 0 ? -1 : static_cast<int64>(guc_test_seed);
	int32 typmod = -1;
	get_atttypetypmodcoll(relid, attnum, &id.type, &typmod, &id.collation);
	return id;
}

// The profile of id under snap (id.version filled here): the cached copy, else built now (and
// cached when the table has a contents version and the profile fits a slot). A PostgreSQL frame.
bytea *
profile_for(ProfileId &id, Snapshot snap)
{
	bool versioned = contents_version(id.relid, snap, &id.version);
	if (versioned && !unit_hash_identity(id.type, &id.hash_fn))
		versioned = false; // (a DBA's hash function in SQL or PL/pgSQL: never cached)
	bytea *p = versioned ? cached_profile(id) : nullptr;
	if (!p) {
		for (int attempt = 0; attempt < 4 && !p; attempt++)
			p = build_profile(id, versioned, snap, attempt);
		if (!p)
			ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("dxpriv: unit profile ranks tied four times")));
		if (versioned)
			store_profile(id, p);
	}
	// (harden) a cached profile built under a larger dxpriv.unit_profile_max_size is not served
	if (VARSIZE(p) - VARHDRSZ > static_cast<Size>(guc_unit_profile_max_size) * 1024)
		refuse_profile_size(id.relid);
	return p;
}

// The profile this backend sealed last (dx._unit_profile, the leader only), with its plain bytes, so
// that the leader's dx._unit_keep skips decrypting and MAC-checking the very bytes it just sealed: a
// value is taken from here only when it equals the sealed copy byte for byte (any other value, and
// every value in a parallel worker, goes through open_profile). Kept in its own context, replaced
// by the next seal; profiles larger than a cache slot are not kept (their memory is not held).
struct SealedMemo {
	MemoryContext cxt;
	bytea *sealed;
	char *plain;
	Size size;
};
SealedMemo sealed_memo;

// Remembers sealed (made from plain, size bytes) as the backend's last sealed profile.
void
remember_sealed(const bytea *sealed, const char *plain, Size size)
{
	if (!sealed_memo.cxt)
		sealed_memo.cxt = AllocSetContextCreate(TopMemoryContext, "dxpriv sealed unit profile", ALLOCSET_DEFAULT_SIZES);
	MemoryContextReset(sealed_memo.cxt);
	sealed_memo.sealed = nullptr;
	sealed_memo.plain = nullptr;
	if (!profile_shm || size > profile_shm->slot_bytes)
		return;
	auto *s = static_cast<bytea *>(MemoryContextAllocHuge(sealed_memo.cxt, VARSIZE(sealed)));
	std::memcpy(s, sealed, VARSIZE(sealed));
	auto *pl = static_cast<char *>(MemoryContextAllocHuge(sealed_memo.cxt, size));
	std::memcpy(pl, plain, size);
	sealed_memo.sealed = s;
	sealed_memo.plain = pl;
	sealed_memo.size = size;
}

// The plain bytes of sealed profile p: the leader's own last seal when p is byte for byte that seal,
// else open_profile (decrypted and MAC-checked).
char *
open_or_remembered(const bytea *p, Size *size)
{
	if (!IsParallelWorker() && sealed_memo.sealed && !VARATT_IS_EXTENDED(p) && VARSIZE(p) == VARSIZE(sealed_memo.sealed) &&
	    std::memcmp(p, sealed_memo.sealed, VARSIZE(p)) == 0) {
		*size = sealed_memo.size;
		return sealed_memo.plain;
	}
	return open_profile(p, size);
}

// Checks profile p (the argument of dx._unit_keep) in this process: handed out by dx._unit_profile
// (its MAC), under this process's active snapshot (its fingerprint; a parallel worker restores the
// leader's), for this table version (the version again, under this snapshot) and for this unit's
// type and collation. Returns its plain bytes; raises XX000 otherwise.
char *
verify_profile(const bytea *p, Oid type, Oid collation)
{
	Size size = 0;
	char *plain = open_or_remembered(p, &size);
	ProfileHeader h;
	std::memcpy(&h, plain, sizeof h);
	if (h.magic != kProfileMagic || size != sizeof h + static_cast<Size>(h.slots) * sizeof(HeavyUnit) ||
	    (h.slots & (h.slots - 1)) != 0)
		ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("dxpriv: not a unit profile")));
	if (!ActiveSnapshotSet() || h.snapshot != snapshot_fingerprint(GetActiveSnapshot()))
		ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("dxpriv: a unit profile used under another snapshot")));
	if (h.id.type != type || h.id.collation != collation)
		ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("dxpriv: a unit profile of another unit type")));
	// (a parallel worker restores the leader's snapshot, checked above, but not its subtransaction
	// ids, part of the version of a transaction that wrote: the leader checked the version under
	// this very snapshot when it handed the profile out)
	// Under one snapshot only a catalog change moves the version: a child inherited or a partition
	// attached (their locks on the parent do not conflict with the statement's), a trigger changed,
	// while the profile was built or before it was used (redteam3: was XX000). The profile may then
	// be of other tables than the plan's: refused, and the statement can simply run again.
	if (h.versioned && !IsParallelWorker()) {
		uint64 version = 0;
		if (!contents_version(h.id.relid, GetActiveSnapshot(), &version) || version != h.id.version)
			ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			                errmsg("the table with a privacy unit changed its inheritance tree or triggers while the statement ran"),
			                errhint("Run the statement again.")));
	}
	return plain;
}

// Per call site of dx._unit_keep (fn_extra, in the executor's per-query memory).
struct KeepState {
	const void *arg; // the profile Datum verified (the same InitPlan value on every row; nullptr: a
	                 // toasted value, verified again on every row)
	uint64 mac;      // and its MAC (compared on every row: another value at the same address is verified)
	uint32 head;     // the value's first 4 bytes when verified (its varlena header: same kind and length)
	uint32 mac_at;   // offset of the MAC from arg (after a 1- or 4-byte header)
	uint64 nonce;
	UnitHasher hasher;
	SipRowRank *ranker;
	const HeavyUnit *table;
	uint32 mask;
	uint32 slots;
	UnitPrefilter filter; // over the heavy units' hashes: a light unit's row mostly skips the table
	uint64 last_hash;     // the unit of the previous row (0: none; rows of a unit often follow each other)
	Datum last_unit;      // an integer unit's Datum whose hash is last_hash (when last_unit_set): its
	bool last_unit_set;   // next rows skip the hash too (the hash is a function of the Datum: unit_hash.h)
	bool last_heavy;      // and its lookup: heavy, with this threshold, or light
	int64 last_threshold;
	bool special_heavy[2]; // the special units (unit_special), from the profile's header
	int64 special_threshold[2];
	bool none_heavy;       // no heavy unit at all: every row is kept
};

// Whether the unit of hash h is heavy (then *threshold is its threshold): the prefilter, then the
// exact table (a false positive of the filter finds no entry there).
inline bool
heavy_threshold(const KeepState *st, uint64 h, int64 *threshold)
{
	if (st->slots == 0 || !st->filter.maybe(h))
		return false;
	for (uint32 at = static_cast<uint32>(h) & st->mask; st->table[at].hash != 0; at = (at + 1) & st->mask)
		if (st->table[at].hash == h) {
			*threshold = st->table[at].threshold;
			return true;
		}
	return false;
}

// When the call site passes tableoid as a constant (unit_profile_source.cpp: a table without
// inheritance children at planning), checks that it is the profile's table and that the table still
// has no child (or the profile is of ONLY the table): a child attached since planning could be in the
// plan's scan, whose rows would then share the parent's OID in their rank. (relhassubclass is set
// when a child is attached and cleared only lazily, and a child in the plan stays locked, hence a
// child, until the end of the transaction.) Refused with 55000 otherwise.
void
check_constant_tableoid(FunctionCallInfo fcinfo, const ProfileId &id)
{
	const Node *e = fcinfo->flinfo->fn_expr;
	if (!e || !IsA(e, FuncExpr) || list_length(castNode(FuncExpr, e)->args) != 4)
		return;
	const Node *rel = static_cast<const Node *>(lthird(castNode(FuncExpr, e)->args));
	if (!IsA(rel, Const))
		return;
	const Const *c = castNode(Const, rel);
	if (c->constisnull || DatumGetObjectId(c->constvalue) != id.relid)
		ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("dxpriv: a unit profile of another table")));
	if (id.inh && has_subclass(id.relid))
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
		                errmsg("the table with a privacy unit got an inheritance child after the statement was planned"),
		                errhint("Run the statement again.")));
}

// Fills keep state st from a profile's plain bytes (header and table): the hasher of the unit type
// (a hash function that is not built in runs sealed, as the table's owner, as in the build), the
// ranker under the profile's key, a copy of the heavy units' table and its prefilter, in mcxt.
void
fill_keep_state(KeepState *st, const char *plain, Oid type, Oid collation, MemoryContext mcxt)
{
	ProfileHeader h;
	std::memcpy(&h, plain, sizeof h);
	init_unit_hasher(&st->hasher, type, collation, mcxt, kProfileHashHint, true, sealed_read_user(h.id.relid));
	st->ranker = static_cast<SipRowRank *>(MemoryContextAlloc(mcxt, sizeof(SipRowRank)));
	new (st->ranker) SipRowRank(h.key); // (trivially destructible: freed with mcxt)
	st->hasher.seed = unit_hash_seed(*st->ranker);
	const Size bytes = static_cast<Size>(h.slots) * sizeof(HeavyUnit);
	auto *table = static_cast<HeavyUnit *>(MemoryContextAllocHuge(mcxt, bytes + sizeof(HeavyUnit)));
	std::memcpy(table, plain + sizeof(ProfileHeader), bytes); // (aligned)
	st->table = table;
	st->slots = h.slots;
	st->mask = h.slots == 0 ? 0 : h.slots - 1;
	Size heavy = 0; // (counted in the table itself: the filter holds exactly its hashes)
	for (uint32 i = 0; i < h.slots; i++)
		heavy += table[i].hash != 0;
	const Size words = UnitPrefilter::words_for(heavy);
	auto *bits = static_cast<uint64 *>(MemoryContextAllocZero(mcxt, Max(words, 1) * sizeof(uint64)));
	st->filter = UnitPrefilter(bits, words);
	for (uint32 i = 0; i < h.slots; i++)
		if (table[i].hash != 0)
			st->filter.add(table[i].hash);
	st->last_hash = 0; // (never a table unit's hash: unit_special)
	st->last_unit_set = false;
	for (int c = 0; c < 2; c++) {
		st->special_heavy[c] = h.special_heavy[c];
		st->special_threshold[c] = h.special_threshold[c];
	}
	st->none_heavy = h.slots == 0 && !h.special_heavy[0] && !h.special_heavy[1];
	st->last_heavy = false;
}

// Whether arg is the value the call site verified: the same address, the same first 4 bytes (so the
// same varlena header: not toasted, the same length, and the MAC at the same offset) and the same
// MAC. A profile of a table with no heavy unit is small enough (under 127 bytes) to reach the qual
// with a 1-byte varlena header (the InitPlan's value formed into a tuple), so the MAC is found after
// VARDATA_ANY when verified (keep_setup: mac_at): read at VARHDRSZ it never matched, and every row
// verified the profile again (decryption, MAC and the contents version's catalog reads: 37x the
// scan's time on 400,000 rows of light units, and a timing difference between a table with and
// without a heavy unit). A toasted value (external or compressed) is never the same (st->arg null).
// (unitkeep: the header's kind and size were decoded on every row before; one 4-byte compare now.)
inline bool
same_sealed_value(const KeepState *st, const void *arg)
{
	if (st->arg != arg)
		return false;
	uint32 head;
	std::memcpy(&head, arg, sizeof head);
	if (head != st->head)
		return false; // (then the MAC's offset may be past another value's end: not read)
	uint64 mac;
	std::memcpy(&mac, static_cast<const char *>(arg) + st->mac_at, sizeof mac);
	return mac == st->mac;
}

// Records in st the value arg its profile was verified from (same_sealed_value).
void
remember_verified(KeepState *st, const void *arg, uint64 mac)
{
	const auto *v = static_cast<const varlena *>(arg);
	st->arg = nullptr;
	st->mac = mac;
	if (VARATT_IS_EXTERNAL(v) || VARATT_IS_COMPRESSED(v) || VARSIZE_ANY_EXHDR(v) < sizeof(SealedPrefix))
		return;
	std::memcpy(&st->head, arg, sizeof st->head); // (a profile's value is longer than 4 bytes)
	st->mac_at = static_cast<uint32>(VARDATA_ANY(v) - static_cast<const char *>(arg) + offsetof(SealedPrefix, mac));
	st->arg = arg;
}

// The rule for a row of a unit of hash `hash` named in the table (not a special unit: unit_special):
// kept when the unit is light, else when the row's rank under the profile's key is within the unit's
// threshold. The lookup is a function of the hash: reused while the hash repeats.
pg_attribute_always_inline bool
keep_table_unit_row(KeepState *st, uint64 hash, Oid table, ItemPointer tid)
{
	if (hash != st->last_hash) {
		st->last_hash = hash;
		st->last_heavy = heavy_threshold(st, hash, &st->last_threshold);
	}
	if (!st->last_heavy)
		return true;
	const int64 rank = static_cast<int64>(
	    st->ranker->rank(table, ItemPointerGetBlockNumberNoCheck(tid), ItemPointerGetOffsetNumberNoCheck(tid)));
	return rank <= st->last_threshold;
}

// The rule of a profile for one row (dx._unit_keep and dx._unit_keep_shard): kept when its unit has
// at most k rows, else when its rank under the profile's key is within the unit's threshold. The
// special units (NULL, hash 0) have their own entries in the header (unit_special).
pg_noinline bool
keep_row(KeepState *st, Datum unit, bool isnull, Oid table, ItemPointer tid)
{
	if (st->none_heavy)
		return true;
	uint64 hash;
	const int c = unit_special(&st->hasher, isnull ? 0 : unit, isnull, &hash);
	if (c >= 0) {
		if (!st->special_heavy[c])
			return true;
		const int64 rank = static_cast<int64>(
		    st->ranker->rank(table, ItemPointerGetBlockNumberNoCheck(tid), ItemPointerGetOffsetNumberNoCheck(tid)));
		return rank <= st->special_threshold[c];
	}
	st->last_unit_set = false; // (last_hash changes without an integer Datum)
	return keep_table_unit_row(st, hash, table, tid);
}

// keep_row for a non-NULL unit of an integer type (UnitHasher::fast: the hash is mix64 of the
// Datum): the same decision, inline in dx._unit_keep, without the hash while the Datum repeats (a
// unit's rows stored together). A unit of hash 0 (a special unit) goes to keep_row.
pg_attribute_always_inline bool
keep_int_row(KeepState *st, Datum unit, Oid table, ItemPointer tid)
{
	if (st->none_heavy)
		return true;
	if (!st->last_unit_set || unit != st->last_unit) {
		const uint64 hash = mix64(static_cast<uint64>(unit)); // (= unit_hash_value for a fast type)
		if (unlikely(hash == 0))
			return keep_row(st, unit, false, table, tid);
		st->last_unit = unit;
		st->last_unit_set = true;
		return keep_table_unit_row(st, hash, table, tid);
	}
	return keep_table_unit_row(st, st->last_hash, table, tid);
}

// Verifies the profile at arg and makes the call site's state (the first row of an execution).
pg_noinline KeepState *
keep_setup(FunctionCallInfo fcinfo, const void *arg)
{
	KeepState *out = nullptr;
	guarded([&] {
		MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
		bytea *sealed = PG_DETOAST_DATUM_COPY(PG_GETARG_DATUM(0));
		const Oid type = get_fn_expr_argtype(fcinfo->flinfo, 1);
		const char *plain = verify_profile(sealed, type, PG_GET_COLLATION());
		SealedPrefix pre;
		std::memcpy(&pre, VARDATA(sealed), sizeof pre);
		auto *st = static_cast<KeepState *>(fcinfo->flinfo->fn_extra);
		if (!st)
			st = static_cast<KeepState *>(palloc0(sizeof(KeepState)));
		ProfileHeader h;
		std::memcpy(&h, plain, sizeof h);
		check_constant_tableoid(fcinfo, h.id);
		fill_keep_state(st, plain, type, PG_GET_COLLATION(), fcinfo->flinfo->fn_mcxt);
		remember_verified(st, arg, pre.mac);
		fcinfo->flinfo->fn_extra = st;
		MemoryContextSwitchTo(old);
		out = st;
		return Datum(0);
	});
	return out;
}

AnalystRoleCheck unit_shard_analyst_check = nullptr; // (set_unit_shard_analyst_check)

// Per call site of dx._unit_keep_shard: the relation whose profile the keep state holds.
struct ShardKeepState {
	Oid relid;
	KeepState keep;
};

// Checks the caller of dx._unit_keep_shard and makes the call site's state for relation relid (the
// first row of an execution, or a row of another relation): the profile of ONLY relid under the
// active snapshot, its unit column found by name, of the type and collation of the unit argument.
pg_noinline ShardKeepState *
shard_keep_setup(FunctionCallInfo fcinfo, Oid relid)
{
	ShardKeepState *out = nullptr;
	guarded([&] {
		bool allowed = false;
		pg_call([&] {
			allowed = !IsParallelWorker() && get_rel_relkind(relid) == RELKIND_RELATION && !get_rel_relispartition(relid) &&
			          !has_subclass(relid) &&
			          pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) == ACLCHECK_OK &&
			          pg_class_aclcheck(relid, GetSessionUserId(), ACL_SELECT) == ACLCHECK_OK;
		});
		// an analyst may hold SELECT on a protected table (a grant after dx.protect_table) and still
		// read none of its rows (the hooks refuse her statements on it): she is refused here too
		allowed = allowed && unit_shard_analyst_check && !unit_shard_analyst_check();
		if (!allowed)
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "dx._unit_keep_shard is placed by dxpriv only",
			     "It is part of the shard queries dxpriv sends for Citus tables distributed by their privacy unit.");
		const int32 k = PG_GETARG_INT32(3);
		if (k < 1)
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv: a unit profile of no unit");
		pg_call([&] {
			MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
			char *column = text_to_cstring(PG_GETARG_TEXT_PP(4));
			const AttrNumber attnum = get_attnum(relid, column);
			if (attnum == InvalidAttrNumber)
				ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("dxpriv: the privacy unit column is missing")));
			ProfileId id = profile_id_of(relid, false, attnum, k);
			// (the unit hashes under the column's own collation, in the build and here alike: the call's
			// input collation also mixes the column name's)
			if (id.type != get_fn_expr_argtype(fcinfo->flinfo, 0))
				ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("dxpriv: a unit profile of another unit type")));
			if (!ActiveSnapshotSet())
				ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("dxpriv: dx._unit_keep_shard without a snapshot")));
			// (review5) the shard's size in blocks decides the cap, before any row is counted: no
			// ExecutorStart check sees this call (its relation is a column), and the build's own check
			// counts the heavy units it finds (data). Taken after the snapshot: it bounds its rows, so
			// that the build's check is never reached for a heap.
			if (unit_profile_may_exceed(relid, false, k))
				refuse_profile_size(relid);
			bytea *p = profile_for(id, GetActiveSnapshot());
			auto *st = static_cast<ShardKeepState *>(fcinfo->flinfo->fn_extra);
			if (!st)
				st = static_cast<ShardKeepState *>(palloc0(sizeof(ShardKeepState)));
			st->relid = InvalidOid;
			fill_keep_state(&st->keep, VARDATA(p), id.type, id.collation, fcinfo->flinfo->fn_mcxt);
			pfree(p);
			st->relid = relid;
			fcinfo->flinfo->fn_extra = st;
			MemoryContextSwitchTo(old);
			out = st;
		});
		return Datum(0);
	});
	return out;
}

} // namespace

// See unit_profile.h.
int64
unit_profile_token()
{
	static int64 token = 0;
	while (token == 0) {
		uint64 t = 0;
		if (!pg_strong_random(&t, sizeof t))
			ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("dxpriv could not draw a token")));
		token = static_cast<int64>(t & 0x7fffffffffffffffULL);
	}
	return token;
}

// See unit_profile.h.
void
set_unit_shard_analyst_check(AnalystRoleCheck check)
{
	unit_shard_analyst_check = check;
}

// See unit_profile.h.
bool
unit_profile_may_exceed(Oid relid, bool inh, int32 k)
{
	if (k < 1)
		return true;
	List *members = sealed_scan_members(relid, inh);
	const uint64 rows = sealed_scan_row_bound(members); // (another access method: no bound, PG_UINT64_MAX)
	list_free(members);
	const uint64 heavy = rows / (static_cast<uint64>(k) + 1);
	return heavy > (uint64(1) << 40) ||
	       profile_bytes_for(heavy) > static_cast<Size>(guc_unit_profile_max_size) * 1024;
}

// See unit_profile.h.
void
refuse_oversized_unit_profiles(PlannedStmt *stmt)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext || !OidIsValid(ext->unit_profile) || !stmt || stmt->commandType == CMD_UTILITY)
		return;
	ProfileCalls pc{ext->unit_profile, NIL};
	pg_call([&] {
		walk_every_plan_expression(stmt, [&pc](Node *n) { profile_call_walker(n, &pc); });
	});
	ListCell *lc;
	foreach (lc, pc.calls) {
		List *call = static_cast<List *>(lfirst(lc));
		const Oid relid = static_cast<Oid>(linitial_int(call));
		bool exceeds = false;
		pg_call([&] { exceeds = unit_profile_may_exceed(relid, lsecond_int(call) != 0, lthird_int(call)); });
		if (exceeds)
			pg_call([&] { refuse_profile_size(relid); });
	}
}

// See unit_profile.h.
void
unit_profile_define_gucs()
{
	DefineCustomBoolVariable("dxpriv.unit_profiles",
	                         "Bounds privacy units through cached unit profiles (a row-local predicate).",
	                         "On (default): a statement on a local table with a privacy unit and a contents-version "
	                         "trigger keeps a row when its unit has at most k rows or its rank is within its "
	                         "unit's k smallest, read from a profile cached per table version "
	                         "(dxpriv.unit_profile_memory); count_units keeps dxpriv.unit_bounding. Off: "
	                         "dxpriv.unit_bounding for every statement. Only superusers may change it.",
	                         &guc_unit_profiles, true, PGC_SUSET, 0, nullptr, nullptr, nullptr);
	DefineCustomIntVariable("dxpriv.unit_profile_memory",
	                        "Shared memory of the unit profile cache.",
	                        "Eight profiles of up to an eighth each (16 bytes per heavy unit, table of twice "
	                        "their number rounded to a power of two), and 24 more of up to a 32nd each (the "
	                        "shards of Citus tables; shared memory used: 1.75 times this setting); a larger "
	                        "profile is built for each statement. 0: no cache. Needs a restart.",
	                        &guc_unit_profile_memory, 16384, 0, 1024 * 1024, PGC_POSTMASTER, GUC_UNIT_KB, nullptr,
	                        nullptr, nullptr);
	DefineCustomIntVariable("dxpriv.unit_profile_build_memory",
	                        "Memory of one unit profile build.",
	                        "The build's arrays (a row's unit hash and rank: 16 bytes; each unit's k + 1 smallest "
	                        "ranks are kept) stay within it: a table whose rows do not fit is read in several passes "
	                        "over ranges of unit hashes, giving the same profile. A build that cannot fit (k + 1 "
	                        "ranks twice over, or heavy units filling it) fails with 54000. Only superusers may change it.",
	                        &guc_unit_profile_build_memory, 65536, 64, MAX_KILOBYTES, PGC_SUSET, GUC_UNIT_KB, nullptr,
	                        nullptr, nullptr);
	DefineCustomIntVariable("dxpriv.unit_profile_max_size",
	                        "Largest unit profile a statement may build or hold.",
	                        "A profile is 16 bytes per entry of a table of twice its heavy units rounded up to a "
	                        "power of two (the build, the sealed copy and each process's opened copy hold it). A "
	                        "statement whose table's size in blocks could give a larger profile bounds its units per "
	                        "statement instead (dxpriv.unit_bounding: same rule and charge); a plan made before the "
	                        "table grew past it is refused with 54000 before its charge. Only superusers may change it.",
	                        &guc_unit_profile_max_size, 262144, 64, 1024 * 1024 - 1024, PGC_SUSET, GUC_UNIT_KB, nullptr,
	                        nullptr, nullptr);
}

// See unit_profile.h.
void
unit_profile_request_shmem()
{
	RequestAddinShmemSpace(profile_shmem_size());
	RequestNamedLWLockTranche("dxpriv_unit_profiles", 1);
}

// See unit_profile.h.
void
unit_profile_startup()
{
	bool found = false;
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	profile_shm = static_cast<ProfileShared *>(ShmemInitStruct("dxpriv unit profiles", profile_shmem_size(), &found));
	if (!found) {
		std::memset(profile_shm, 0, sizeof(ProfileShared));
		profile_shm->lock = &(GetNamedLWLockTranche("dxpriv_unit_profiles"))->lock;
		profile_shm->slot_bytes = profile_slot_bytes();
		profile_shm->small_bytes = profile_small_bytes();
		if (!pg_strong_random(profile_shm->secret, sizeof profile_shm->secret))
			ereport(FATAL, (errmsg("dxpriv could not draw the unit profile secret")));
	}
	LWLockRelease(AddinShmemInitLock);
}

} // namespace dxpriv::pg

using namespace dxpriv;
using namespace dxpriv::pg;

// dx._unit_profile(relid oid, inh bool, attnum int2, k int4, token int8) -> bytea: the profile of the rows of
// relid (its tree when inh) under the active snapshot, from the cache or built now (and cached when
// the table has a contents version and the profile fits a slot), stamped with this snapshot's
// fingerprint, and sealed (SealedPrefix: encrypted and MACed under the cluster's secret). PARALLEL
// RESTRICTED (an InitPlan of the leader, whose value the workers receive). Refused (42501) unless the
// caller is a superuser, or the call carries this backend's token (unit_profile_token: placed by the
// planner, never shown to analysts) and a statement of this backend that released and paid a charge
// on relid is running: the profile tells which units have more than k rows.
DX_FUNCTION(dx_unit_profile)
{
	const Oid relid = PG_GETARG_OID(0);
	const bool inh = PG_GETARG_BOOL(1);
	const int16 attnum = PG_GETARG_INT16(2);
	const int32 k = PG_GETARG_INT32(3);
	const int64 token = PG_GETARG_INT64(4);
	bool allowed = false;
	pg_call([&] {
		allowed = !IsParallelWorker() &&
		          (superuser() || (token == unit_profile_token() && statement::part_of_running(relid)));
	});
	if (!allowed)
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "dx._unit_profile is placed by dxpriv only",
		     "It is part of the statements dxpriv rewrites for tables with a privacy unit.");
	if (k < 1 || attnum < 1)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv: a unit profile of no unit");
	bytea *p = nullptr;
	pg_call([&] {
		ProfileId id = profile_id_of(relid, inh, attnum, k);
		Snapshot snap = GetActiveSnapshot();
		p = profile_for(id, snap);
		const uint64 fingerprint = snapshot_fingerprint(snap);
		std::memcpy(VARDATA(p) + offsetof(ProfileHeader, snapshot), &fingerprint, sizeof fingerprint);
		bytea *sealed = seal_profile(VARDATA(p), VARSIZE(p) - VARHDRSZ);
		remember_sealed(sealed, VARDATA(p), VARSIZE(p) - VARHDRSZ);
		p = sealed;
	});
	PG_RETURN_BYTEA_P(p);
}

// dx._unit_keep(profile bytea, unit anyelement, tableoid oid, ctid tid) -> bool: whether the row is
// kept: its unit is not in the profile (at most k rows), or its rank under the profile's key is at
// most its unit's threshold. The profile is verified once per call site and execution
// (verify_profile), when the call site also builds a prefilter of the heavy units' hashes
// (core/unit_prefilter.h): a row whose unit hash fails it is a light unit's (kept) without the
// table probe; a false positive only goes on to the exact lookup. PARALLEL SAFE: a plain qual of the scan, in parallel workers too. Not STRICT (a
// NULL unit is one unit, as in the hash bounding).
extern "C" {
PG_FUNCTION_INFO_V1(dx_unit_keep);
Datum
dx_unit_keep(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0) || PG_ARGISNULL(2) || PG_ARGISNULL(3))
		ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("dxpriv: dx._unit_keep without a profile or row")));
	auto *st = static_cast<KeepState *>(fcinfo->flinfo->fn_extra);
	const void *arg = DatumGetPointer(PG_GETARG_DATUM(0));
	if (unlikely(!st || !same_sealed_value(st, arg)))
		st = keep_setup(fcinfo, arg);
	const auto tid = reinterpret_cast<ItemPointer>(DatumGetPointer(PG_GETARG_DATUM(3)));
	if (likely(st->hasher.fast && !PG_ARGISNULL(1)))
		PG_RETURN_BOOL(keep_int_row(st, PG_GETARG_DATUM(1), PG_GETARG_OID(2), tid));
	PG_RETURN_BOOL(keep_row(st, PG_GETARG_DATUM(1), PG_ARGISNULL(1), PG_GETARG_OID(2), tid));
}
}

// dx._unit_keep_shard(unit anyelement, tableoid oid, ctid tid, k int4, unit_column text) -> bool
// (citusunit): whether a row of a shard of a Citus table distributed by its unit column is kept,
// its unit's rows being all in that shard. The shard task queries of such a table carry it as the
// qual of the scan; the worker backend that runs the task finds (shared memory, keyed on the shard's
// OID and contents version) or builds the profile of ONLY the relation `tableoid` (the shard there:
// Citus renames relations in the task query but tableoid is the scanned relation's own OID) through
// the sealed build (profile_for), and applies the rule of dx._unit_keep: a row is kept when its unit
// has at most k rows in the relation or its rank is within its unit's k smallest. Nothing of the
// profile leaves the backend. Refused (42501) unless both the session user and the current user may
// SELECT the relation and neither is an analyst (set_unit_shard_analyst_check): on a worker Citus
// runs the tasks of an analyst's charged statement as the table owner; an analyst's own call, by hand
// or inside her dx statement on the coordinator (her session user), is refused even where a grant
// lets her SELECT the table; on a worker she holds no privilege on the shards (dx.protect_table
// revokes them, Citus copies the table's grants), and whoever passes could read the rows themselves. PARALLEL RESTRICTED: one profile (one rank key) per relation and execution, never
// one per parallel worker. A relation whose tableoid changes between rows (not a shard task) gets the
// profile of each relation in turn.
extern "C" {
PG_FUNCTION_INFO_V1(dx_unit_keep_shard);
Datum
dx_unit_keep_shard(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3) || PG_ARGISNULL(4))
		ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("dxpriv: dx._unit_keep_shard without a row")));
	const Oid relid = PG_GETARG_OID(1);
	auto *st = static_cast<ShardKeepState *>(fcinfo->flinfo->fn_extra);
	if (!st || st->relid != relid)
		st = shard_keep_setup(fcinfo, relid);
	const auto tid = reinterpret_cast<ItemPointer>(DatumGetPointer(PG_GETARG_DATUM(2)));
	if (likely(st->keep.hasher.fast && !PG_ARGISNULL(0)))
		PG_RETURN_BOOL(keep_int_row(&st->keep, PG_GETARG_DATUM(0), relid, tid));
	PG_RETURN_BOOL(keep_row(&st->keep, PG_GETARG_DATUM(0), PG_ARGISNULL(0), relid, tid));
}
}
