// Shared analysis memo (shared_memo.h): analyses kept in a fixed shared-memory ring, oldest dropped first,
// read in place under a pin.
#include "pg/planner/shared_memo.h"

#include "pg/guard.h"
#include "pg/planner/shared_const_copy.h"

extern "C" {
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "port/atomics.h"
#include "nodes/primnodes.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/memutils.h"
}

#include <cstring>

namespace dxpriv::pg {

int guc_shared_memo_memory = 65536; // kB

namespace {

constexpr int kSlots = 4096;
// a pass-by-reference Const longer than this is kept as a blob: the per-point tables, and the noise
// parameters and other arrays of the internal aggregates, which as text (a decimal number per byte)
// were half of a new session's stringToNode of a five-aggregate entry (doc/performance.md "A
// replayed statement's instructions"); 1024 before
constexpr Size kBlobBytes = 96;
constexpr int kPlaceholder = -1000; // a blob's Const in the text: constisnull, constlen = kPlaceholder - index

// One entry in the ring: [off, off + len) of the data area; len 0 = free. pins: readers whose trees
// point into the entry (shared_memo_lookup, shared_memo_pin): a pinned entry is neither dropped nor
// overwritten. A pin is taken under the lock (shared), so a writer (exclusive) sees every pin
// taken; it is released without the lock (the count only falls).
struct MemoSlot {
	uint64 hash;
	uint64 stamp; // unique over the region's life: (slot, stamp) names one entry
	Size off;
	Size len;
	pg_atomic_uint32 pins;
};

struct MemoShared {
	LWLock *lock;
	Size capacity; // bytes of the data area, which follows this struct
	Size head;     // where the next entry is written (wraps to 0)
	uint64 next_stamp;
	MemoSlot slots[kSlots];
};

// An entry's bytes: this header, then the key, the tree's text (NUL-terminated), the encoded
// descriptions, the blobs' offsets (from the entry's start) and the blobs, each piece MAXALIGNed.
struct EntryHead {
	Size total;
	Size key_len;
	Size tree_len;
	Size desc_len;
	int32 blobs;
	bool analyst;
};

MemoShared *memo_shm = nullptr;
int64 shared_hits = 0; // statements of this backend answered from the shared memo
uint32 memo_pins_held[kSlots];   // pins this backend holds, per slot (released at its exit)
bool pins_exit_armed = false;

// Releases the pins this backend still holds (before_shmem_exit: a FATAL, a terminate, a normal exit;
// memory-context callbacks do not run then). A backend killed outright makes the postmaster
// reinitialise shared memory, the ring included.
void
release_pins_at_exit(int, Datum)
{
	if (!memo_shm)
		return;
	for (int i = 0; i < kSlots; ++i)
		if (memo_pins_held[i] > 0) {
			pg_atomic_fetch_sub_u32(&memo_shm->slots[i].pins, memo_pins_held[i]);
			memo_pins_held[i] = 0;
		}
}

void
arm_pin_release()
{
	if (!pins_exit_armed) {
		before_shmem_exit(release_pins_at_exit, 0);
		pins_exit_armed = true;
	}
}

// Takes one pin of slot i (the lock held, shared or exclusive).
void
pin_memo_slot(int i)
{
	pg_atomic_fetch_add_u32(&memo_shm->slots[i].pins, 1);
	memo_pins_held[i]++;
}

bool
memo_slot_pinned(const MemoSlot &s)
{
	return pg_atomic_read_u32(const_cast<pg_atomic_uint32 *>(&s.pins)) > 0;
}

Size
memo_shmem_size()
{
	return guc_shared_memo_memory > 0
	           ? MAXALIGN(sizeof(MemoShared)) + static_cast<Size>(guc_shared_memo_memory) * 1024
	           : 0;
}

char *
data_area()
{
	return reinterpret_cast<char *>(memo_shm) + MAXALIGN(sizeof(MemoShared));
}

bool
is_blob(const Const *c)
{
	return !c->constisnull && !c->constbyval && c->constlen == -1 &&
	       VARSIZE_ANY(DatumGetPointer(c->constvalue)) > kBlobBytes;
}

// Turns the large Consts of a copy into placeholders (the copy shares their bytes: nothing written).
struct BlobScan {
	List *values; // the blobs' pointers, in index order
	bool unfit;   // an external or expanded datum: its bytes are not the value
};

bool
blob_walker(Node *node, void *p)
{
	if (!node)
		return false;
	if (IsA(node, Query))
		return query_tree_walker(reinterpret_cast<Query *>(node), reinterpret_cast<bool (*)()>(blob_walker), p, 0);
	if (IsA(node, Const)) {
		auto *s = static_cast<BlobScan *>(p);
		Const *c = reinterpret_cast<Const *>(node);
		if (!c->constisnull && c->constlen < -2)
			s->unfit = true; // (no Const has that length: it would read as a placeholder)
		if (is_blob(c)) {
			void *v = DatumGetPointer(c->constvalue);
			if (VARATT_IS_EXTERNAL(v))
				s->unfit = true;
			int index = 0; // (a blob of the same bytes: stored once, read back as one table)
			ListCell *lc;
			foreach (lc, s->values) {
				void *t = lfirst(lc);
				if (t == v || (!VARATT_IS_EXTERNAL(v) && VARSIZE_ANY(t) == VARSIZE_ANY(v) &&
				               memcmp(t, v, VARSIZE_ANY(v)) == 0))
					break;
				++index;
			}
			if (index == list_length(s->values))
				s->values = lappend(s->values, v);
			c->constisnull = true;
			c->constvalue = 0;
			c->constlen = kPlaceholder - index;
		}
		return false;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(blob_walker), p);
}

// Puts the blobs back into a tree read from an entry.
struct BlobFill {
	char *entry;
	const Size *offsets;
	int blobs;
	bool bad;
};

bool
fill_walker(Node *node, void *p)
{
	if (!node)
		return false;
	if (IsA(node, Query))
		return query_tree_walker(reinterpret_cast<Query *>(node), reinterpret_cast<bool (*)()>(fill_walker), p, 0);
	if (IsA(node, Const)) {
		auto *f = static_cast<BlobFill *>(p);
		Const *c = reinterpret_cast<Const *>(node);
		if (c->constisnull && c->constlen <= kPlaceholder) {
			const int index = kPlaceholder - c->constlen;
			if (index >= f->blobs) {
				f->bad = true;
				return true;
			}
			c->constvalue = PointerGetDatum(f->entry + f->offsets[index]);
			c->constlen = -1;
			c->constisnull = false;
		}
		return false;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(fill_walker), p);
}

// True when text reads back (stringToNode) to a tree equal to tree; false on any error.
bool
reads_back(const char *text, Node *tree)
{
	MemoryContext cxt = CurrentMemoryContext;
	bool same = false;
	PG_TRY();
	{
		same = equal(stringToNode(text), tree);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		FlushErrorState(); // (a node type readfuncs does not know: not shared)
		same = false;
	}
	PG_END_TRY();
	return same;
}

// Builds an entry's bytes in the current memory context; nullptr when the tree is not shared.
char *
build_entry(const char *key, Size key_len, const char *desc, Size desc_len, Query *tree, bool analyst)
{
	MemoryContext outer = CurrentMemoryContext;
	MemoryContext work = AllocSetContextCreate(outer, "dxpriv shared memo store", ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(work);
	Node *copy = copy_sharing_large_consts(reinterpret_cast<Node *>(tree));
	BlobScan scan{NIL, false};
	blob_walker(copy, &scan);
	char *text = scan.unfit ? nullptr : nodeToString(copy);
	char *entry = nullptr;
	if (text && reads_back(text, copy)) {
		EntryHead h{};
		h.key_len = key_len;
		h.tree_len = strlen(text) + 1;
		h.desc_len = desc_len;
		h.blobs = list_length(scan.values);
		h.analyst = analyst;
		const Size k0 = MAXALIGN(sizeof(EntryHead));
		const Size t0 = MAXALIGN(k0 + key_len);
		const Size d0 = MAXALIGN(t0 + h.tree_len);
		const Size b0 = MAXALIGN(d0 + desc_len);
		Size end = MAXALIGN(b0 + sizeof(Size) * h.blobs);
		ListCell *lc;
		foreach (lc, scan.values)
			end = MAXALIGN(end + VARSIZE_ANY(lfirst(lc)));
		h.total = end;
		if (h.total <= memo_shm->capacity / 4) {
			entry = static_cast<char *>(MemoryContextAllocHuge(outer, h.total));
			memcpy(entry, &h, sizeof h);
			memcpy(entry + k0, key, key_len);
			memcpy(entry + t0, text, h.tree_len);
			if (desc_len > 0)
				memcpy(entry + d0, desc, desc_len);
			auto *offsets = reinterpret_cast<Size *>(entry + b0);
			Size at = MAXALIGN(b0 + sizeof(Size) * h.blobs);
			int i = 0;
			foreach (lc, scan.values) {
				const Size n = VARSIZE_ANY(lfirst(lc));
				memcpy(entry + at, lfirst(lc), n);
				offsets[i++] = at;
				at = MAXALIGN(at + n);
			}
		}
	}
	MemoryContextSwitchTo(outer);
	MemoryContextDelete(work);
	return entry;
}

// Where an entry of total bytes goes (the lock held exclusively): at head, or at 0 when it does
// not fit before the end, moved past every pinned entry in its way; false when there is no such
// place (pinned entries everywhere: not stored, the ring is not waited for).
bool
place_memo_entry(Size total, Size *at)
{
	Size a = memo_shm->head;
	bool wrapped = false;
	for (int tries = 0; tries <= kSlots + 2; ++tries) {
		if (a + total > memo_shm->capacity) {
			if (wrapped)
				return false;
			a = 0;
			wrapped = true;
		}
		Size past = 0; // the end of the furthest pinned entry in [a, a + total)
		for (const MemoSlot &s : memo_shm->slots)
			if (s.len > 0 && s.off < a + total && a < s.off + s.len && memo_slot_pinned(s))
				past = Max(past, s.off + s.len);
		if (past == 0) {
			*at = a;
			return true;
		}
		a = past;
	}
	return false;
}

// Writes an entry into the ring (exclusive lock, not waited for), dropping the entries it overlaps,
// an older entry of the same hash and, with no free slot, the oldest: never a pinned one (the
// entry then goes past it, or is not stored).
void
put_entry(uint64 hash, const char *entry)
{
	EntryHead h;
	memcpy(&h, entry, sizeof h);
	if (!LWLockConditionalAcquire(memo_shm->lock, LW_EXCLUSIVE))
		return; // (busy: the next backend analyses again)
	Size a = 0;
	if (!place_memo_entry(h.total, &a)) {
		LWLockRelease(memo_shm->lock);
		return;
	}
	const Size b = a + h.total;
	MemoSlot *free_slot = nullptr, *oldest = nullptr;
	for (MemoSlot &s : memo_shm->slots) {
		if (s.len > 0 && !memo_slot_pinned(s) && (s.hash == hash || (s.off < b && a < s.off + s.len)))
			s.len = 0;
		if (s.len == 0) {
			if (!free_slot)
				free_slot = &s;
		} else if (!memo_slot_pinned(s) && (!oldest || s.stamp < oldest->stamp))
			oldest = &s;
	}
	if (!free_slot) {
		if (!oldest) { // (every slot pinned)
			LWLockRelease(memo_shm->lock);
			return;
		}
		free_slot = oldest;
		free_slot->len = 0;
	}
	memcpy(data_area() + a, entry, h.total);
	free_slot->hash = hash;
	free_slot->stamp = ++memo_shm->next_stamp;
	free_slot->off = a;
	free_slot->len = h.total;
	memo_shm->head = b;
	LWLockRelease(memo_shm->lock);
}

// Whether one more pin of slot i keeps the bytes of pinned entries within half the data area (the
// lock held): a pin of an entry pinned already adds nothing. Past it, a replay reads a copy
// (get_entry) or looks the entry up again (shared_memo_pin), so that sessions holding pins while
// idle (an unnamed extended-protocol statement, a cursor over SQL functions replayed from the
// memo: review4) never leave the ring without room for new entries.
bool
pin_fits(int i)
{
	const MemoSlot &target = memo_shm->slots[i];
	if (memo_slot_pinned(target))
		return true;
	Size pinned = 0;
	for (int j = 0; j < kSlots; ++j) {
		const MemoSlot &s = memo_shm->slots[j];
		if (s.len > 0 && memo_slot_pinned(s))
			pinned += s.len;
	}
	return pinned + target.len <= memo_shm->capacity / 2;
}

// Pins the entry of (key, hash) (shared lock) and returns it in place, its slot and stamp in *ref;
// nullptr (nothing pinned) when there is none. Not copied: a 10^5-point entry's ~10 MB copied
// into a new backend, its fresh pages faulted in, were most of a replayed first statement. When
// another pin would hold more than half the data area (pin_fits), the entry's bytes are copied into
// copy_into instead and returned unpinned (ref->slot stays -1): the caller's tree then reads its own
// copy, as an entry analysed in this backend (nullptr when the copy cannot be allocated).
char *
get_entry(const char *key, Size key_len, uint64 hash, SharedMemoRef *ref, MemoryContext copy_into)
{
	char *found = nullptr;
	LWLockAcquire(memo_shm->lock, LW_SHARED);
	for (int i = 0; i < kSlots; ++i) {
		const MemoSlot &s = memo_shm->slots[i];
		if (s.len == 0 || s.hash != hash)
			continue;
		char *e = data_area() + s.off;
		EntryHead h;
		memcpy(&h, e, sizeof h);
		if (h.total != s.len || h.key_len != key_len || memcmp(e + MAXALIGN(sizeof(EntryHead)), key, key_len) != 0)
			continue;
		if (!pin_fits(i)) {
			// (no ERROR under the lock: a failed allocation is a miss)
			found = static_cast<char *>(
			    MemoryContextAllocExtended(copy_into, s.len, MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM));
			if (found)
				memcpy(found, e, s.len);
			break;
		}
		pin_memo_slot(i);
		ref->slot = i;
		ref->stamp = s.stamp;
		found = e;
		break;
	}
	LWLockRelease(memo_shm->lock);
	return found;
}

// Reads the tree of a pinned entry into the current memory context (its large Consts pointing at
// the entry's blobs); nullptr when it does not read.
Query *
read_entry(char *entry)
{
	EntryHead h;
	memcpy(&h, entry, sizeof h);
	const Size k0 = MAXALIGN(sizeof(EntryHead));
	const Size t0 = MAXALIGN(k0 + h.key_len);
	const Size d0 = MAXALIGN(t0 + h.tree_len);
	const Size b0 = MAXALIGN(d0 + h.desc_len);
	Node *tree = static_cast<Node *>(stringToNode(entry + t0));
	if (!tree || !IsA(tree, Query))
		return nullptr;
	BlobFill fill{entry, reinterpret_cast<const Size *>(entry + b0), h.blobs, false};
	fill_walker(tree, &fill);
	return fill.bad ? nullptr : reinterpret_cast<Query *>(tree);
}

// The descriptions as bytes (counts and lengths as int64, strings as bytes).
void
put_int(std::string &out, int64 v)
{
	out.append(reinterpret_cast<const char *>(&v), sizeof v);
}

void
put_text(std::string &out, const std::string &s)
{
	put_int(out, static_cast<int64>(s.size()));
	out += s;
}

std::string
encode(const std::vector<MemoDescribed> &described)
{
	std::string out;
	put_int(out, static_cast<int64>(described.size()));
	for (const MemoDescribed &d : described) {
		put_int(out, static_cast<int64>(d.ids.size()));
		for (int64 id : d.ids)
			put_int(out, id);
		put_int(out, static_cast<int64>(d.descriptions.size()));
		for (const ReleaseDescription &r : d.descriptions) {
			put_int(out, r.aggregate);
			put_text(out, r.kind);
			put_text(out, r.expression);
		}
		put_int(out, static_cast<int64>(d.labels.size()));
		for (const std::string &l : d.labels)
			put_text(out, l);
	}
	return out;
}

struct Reader {
	const char *p;
	Size left;
	bool bad = false;
	int64 next()
	{
		int64 v = 0;
		if (left < sizeof v) {
			bad = true;
			return 0;
		}
		memcpy(&v, p, sizeof v);
		p += sizeof v;
		left -= sizeof v;
		return v;
	}
	int64 count()
	{
		const int64 n = next();
		if (n < 0 || static_cast<Size>(n) > left)
			bad = true;
		return bad ? 0 : n;
	}
	std::string text()
	{
		const int64 n = count();
		std::string s(p, static_cast<Size>(n));
		p += n;
		left -= static_cast<Size>(n);
		return s;
	}
};

bool
decode(const char *bytes, Size n, std::vector<MemoDescribed> &described)
{
	Reader r{bytes, n};
	const int64 entries = r.count();
	for (int64 i = 0; i < entries && !r.bad; ++i) {
		MemoDescribed d;
		const int64 ids = r.count();
		for (int64 j = 0; j < ids && !r.bad; ++j)
			d.ids.push_back(r.next());
		const int64 descriptions = r.count();
		for (int64 j = 0; j < descriptions && !r.bad; ++j) {
			ReleaseDescription x;
			x.aggregate = static_cast<int>(r.next());
			x.kind = r.text();
			x.expression = r.text();
			d.descriptions.push_back(std::move(x));
		}
		const int64 labels = r.count();
		for (int64 j = 0; j < labels && !r.bad; ++j)
			d.labels.push_back(r.text());
		described.push_back(std::move(d));
	}
	return !r.bad && r.left == 0;
}

} // namespace

// See shared_memo.h.
bool
shared_memo_enabled()
{
	return memo_shm != nullptr;
}

// See shared_memo.h.
void
shared_memo_store(const std::string &key, uint64 hash, Query *tree, bool analyst,
                  const std::vector<MemoDescribed> &described)
{
	if (!memo_shm)
		return;
	const std::string desc = encode(described);
	pg_call([&] {
		if (char *entry = build_entry(key.data(), key.size(), desc.data(), desc.size(), tree, analyst)) {
			put_entry(hash, entry);
			pfree(entry);
		}
	});
}

// See shared_memo.h.
bool
shared_memo_lookup(const std::string &key, uint64 hash, MemoryContext *cxt, Query **tree, bool *analyst,
                   std::vector<MemoDescribed> &described, SharedMemoRef *ref)
{
	if (!memo_shm)
		return false;
	MemoryContext c = nullptr;
	char *entry = nullptr;
	Query *q = nullptr;
	SharedMemoRef r;
	try {
		pg_call([&] {
			arm_pin_release();
			c = AllocSetContextCreate(CurrentMemoryContext, "dxpriv analysis memo", ALLOCSET_DEFAULT_SIZES);
			entry = get_entry(key.data(), key.size(), hash, &r, c);
			if (entry) {
				MemoryContext old = MemoryContextSwitchTo(c);
				q = read_entry(entry);
				MemoryContextSwitchTo(old);
			}
		});
	} catch (...) {
		if (r.slot >= 0)
			shared_memo_unpin(r); // (c goes with the caller's memory context)
		throw;
	}
	EntryHead h{};
	if (entry)
		memcpy(&h, entry, sizeof h);
	const Size d0 = MAXALIGN(MAXALIGN(MAXALIGN(sizeof(EntryHead)) + h.key_len) + h.tree_len);
	if (!q || !decode(entry + d0, h.desc_len, described)) {
		described.clear();
		if (r.slot >= 0)
			shared_memo_unpin(r);
		pg_call([&] { MemoryContextDelete(c); });
		return false;
	}
	pg_call([&] { MemoryContextSetParent(c, TopMemoryContext); });
	*cxt = c;
	*tree = q;
	*analyst = h.analyst;
	*ref = r;
	return true;
}

// See shared_memo.h.
bool
shared_memo_pin(const SharedMemoRef &ref)
{
	if (!memo_shm || ref.slot < 0 || ref.slot >= kSlots)
		return false;
	bool same = false;
	pg_call([&] {
		arm_pin_release();
		LWLockAcquire(memo_shm->lock, LW_SHARED);
		const MemoSlot &s = memo_shm->slots[ref.slot];
		// (past the pinned bytes' bound: as if it went, the caller looks it up again and gets a copy)
		same = s.len > 0 && s.stamp == ref.stamp && pin_fits(ref.slot);
		if (same)
			pin_memo_slot(ref.slot);
		LWLockRelease(memo_shm->lock);
	});
	return same;
}

// See shared_memo.h.
void
shared_memo_unpin(const SharedMemoRef &ref)
{
	if (!memo_shm || ref.slot < 0 || ref.slot >= kSlots || memo_pins_held[ref.slot] == 0)
		return; // (released at exit already)
	memo_pins_held[ref.slot]--;
	pg_atomic_fetch_sub_u32(&memo_shm->slots[ref.slot].pins, 1);
}

// See shared_memo.h.
void
shared_memo_count_hit()
{
	++shared_hits;
}

// See shared_memo.h.
void
shared_memo_define_gucs()
{
	DefineCustomIntVariable("dxpriv.shared_memo_memory",
	                        "Shared memory of the analysis memo shared between sessions.",
	                        "A statement analysed in one session is not analysed again in another when its "
	                        "query, role, policy, table contents, settings and the catalog are the same; the "
	                        "oldest analyses are dropped first, one over a quarter of this is not kept. 0: no "
	                        "shared memo. Needs a restart.",
	                        &guc_shared_memo_memory, 65536, 0, 4 * 1024 * 1024, PGC_POSTMASTER, GUC_UNIT_KB,
	                        nullptr, nullptr, nullptr);
}

// See shared_memo.h.
void
shared_memo_request_shmem()
{
	if (memo_shmem_size() == 0)
		return;
	RequestAddinShmemSpace(memo_shmem_size());
	RequestNamedLWLockTranche("dxpriv_shared_memo", 1);
}

// See shared_memo.h.
void
shared_memo_startup()
{
	if (memo_shmem_size() == 0)
		return;
	bool found = false;
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	memo_shm = static_cast<MemoShared *>(ShmemInitStruct("dxpriv shared analysis memo", memo_shmem_size(), &found));
	if (!found) {
		memset(memo_shm, 0, sizeof(MemoShared));
		for (MemoSlot &s : memo_shm->slots)
			pg_atomic_init_u32(&s.pins, 0);
		memo_shm->lock = &(GetNamedLWLockTranche("dxpriv_shared_memo"))->lock;
		memo_shm->capacity = static_cast<Size>(guc_shared_memo_memory) * 1024;
	}
	LWLockRelease(AddinShmemInitLock);
}

} // namespace dxpriv::pg

// dx._shared_memo_hits(): statements of this backend answered from the shared analysis memo
// (superuser only).
DX_FUNCTION(dx_shared_memo_hits)
{
	(void) fcinfo;
	PG_RETURN_INT64(dxpriv::pg::shared_hits);
}
