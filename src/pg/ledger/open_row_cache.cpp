// Released rows of open-key releases, stored per (key, role) and replayed by the plan's top node.
#include "pg/ledger/open_row_cache.h"

#include "pg/guard.h"
#include "pg/ledger/answer_cache.h"

extern "C" {
#include "access/htup_details.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"
}

#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace dxpriv::pg {

namespace {

constexpr int kRowEntries = 32;
constexpr int kRowBytes = 64 * 1024; // larger results are not stored (a repeat is charged again)

struct RowEntry {
	bool used;
	uint64 key;
	Oid role;
	Oid relid;
	TimestampTz created;
	int rows;
	int len;
	char data[kRowBytes]; // per row: uint32 length, then the heap tuple's header and data
};

struct RowShared {
	LWLock *lock;
	int next_victim;
	RowEntry entries[kRowEntries];
};

RowShared *row_shm = nullptr;

bool
row_fresh(const RowEntry &e)
{
	return e.used && GetCurrentTimestamp() - e.created < static_cast<int64>(guc_cache_lifetime) * USECS_PER_SEC;
}

// The plan noted by the charge, consumed by open_row_cache_attach.
struct RowNote {
	const void *plan = nullptr;
	bool replay = false;
	uint64 key = 0;
	Oid role = InvalidOid, relid = InvalidOid;
	std::string rows; // replay: the stored rows
	int count = 0;
};
RowNote row_note;

// A top node whose rows are being recorded.
struct RowRecorder {
	ExecProcNodeMtd real = nullptr;
	uint64 key = 0;
	Oid role = InvalidOid, relid = InvalidOid;
	std::string rows;
	int count = 0;
	bool finished = false; // stored, or given up (a backward fetch, a row too large or external)
};
std::map<PlanState *, RowRecorder> row_recorders;

// A top node that replays stored rows.
struct RowReplayer {
	std::vector<HeapTuple> tuples; // in the query's memory context
	TupleTableSlot *slot = nullptr;
	size_t pos = 0;
};
std::map<PlanState *, RowReplayer> row_replayers;

void
row_store(const RowRecorder &r)
{
	if (!row_shm || guc_cache_lifetime <= 0 || r.rows.size() > static_cast<size_t>(kRowBytes))
		return;
	LWLockAcquire(row_shm->lock, LW_EXCLUSIVE);
	RowEntry *slot = nullptr;
	for (RowEntry &e : row_shm->entries)
		if ((e.used && e.key == r.key && e.role == r.role) || (!slot && !row_fresh(e)))
			slot = &e;
	if (!slot) {
		slot = &row_shm->entries[row_shm->next_victim];
		row_shm->next_victim = (row_shm->next_victim + 1) % kRowEntries;
	}
	slot->used = true;
	slot->key = r.key;
	slot->role = r.role;
	slot->relid = r.relid;
	slot->created = GetCurrentTimestamp();
	slot->rows = r.count;
	slot->len = static_cast<int>(r.rows.size());
	memcpy(slot->data, r.rows.data(), r.rows.size());
	LWLockRelease(row_shm->lock);
}

// Notes one row the recorded top node returned (nullptr: the end of its rows).
void
row_seen(PlanState *ps, TupleTableSlot *slot)
{
	RowRecorder &r = row_recorders[ps];
	if (r.finished)
		return;
	if (ps->state->es_direction != ForwardScanDirection) {
		r.finished = true;
		r.rows.clear();
		return;
	}
	if (TupIsNull(slot)) {
		r.finished = true;
		row_store(r);
		r.rows.clear();
		return;
	}
	HeapTuple t = pg_value([&] { return ExecCopySlotHeapTuple(slot); });
	if (HeapTupleHasExternal(t) || r.rows.size() + sizeof(uint32) + t->t_len > static_cast<size_t>(kRowBytes)) {
		r.finished = true;
		r.rows.clear();
	} else {
		const uint32 len = t->t_len;
		r.rows.append(reinterpret_cast<const char *>(&len), sizeof len);
		r.rows.append(reinterpret_cast<const char *>(t->t_data), len);
		++r.count;
	}
	pg_call([&] { heap_freetuple(t); });
}

// ExecProcNodeReal of a recorded top node: the real node's row, noted on its way out.
TupleTableSlot *
record_open_rows(PlanState *ps)
{
	ExecProcNodeMtd real = nullptr;
	guarded([&] { real = row_recorders.at(ps).real; });
	TupleTableSlot *slot = real(ps);
	guarded([&] { row_seen(ps, slot); });
	return slot;
}

// ExecProcNodeReal of a replayed top node: the stored rows, in their order; the plan below never runs.
TupleTableSlot *
replay_open_rows(PlanState *ps)
{
	return guarded([&]() -> TupleTableSlot * {
		RowReplayer &r = row_replayers.at(ps);
		HeapTuple t = nullptr;
		if (ps->state->es_direction == BackwardScanDirection) {
			if (r.pos > 0)
				t = r.tuples[--r.pos];
		} else if (r.pos < r.tuples.size()) {
			t = r.tuples[r.pos++];
		}
		if (!t)
			return nullptr;
		return pg_value([&] { return ExecStoreHeapTuple(t, r.slot, false); });
	});
}

} // namespace

// See open_row_cache.h.
void
open_row_cache_request_shmem()
{
	RequestAddinShmemSpace(MAXALIGN(sizeof(RowShared)));
	RequestNamedLWLockTranche("dxpriv_open_row_cache", 1);
}

// See open_row_cache.h.
void
open_row_cache_startup()
{
	bool found = false;
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	row_shm = static_cast<RowShared *>(ShmemInitStruct("dxpriv open row cache", sizeof(RowShared), &found));
	if (!found) {
		memset(row_shm, 0, sizeof(RowShared));
		row_shm->lock = &(GetNamedLWLockTranche("dxpriv_open_row_cache"))->lock;
	}
	LWLockRelease(AddinShmemInitLock);
}

// See open_row_cache.h.
bool
open_row_cache_plan_replay(QueryDesc *qd, uint64 key, Oid role)
{
	if (!row_shm || guc_cache_lifetime <= 0)
		return false;
	// (copied out under the lock into a fixed buffer: no C++ object is alive across the lock calls)
	static char copy[kRowBytes];
	int count = -1, len = 0;
	LWLockAcquire(row_shm->lock, LW_SHARED);
	for (const RowEntry &e : row_shm->entries)
		if (e.used && e.key == key && e.role == role && row_fresh(e)) {
			len = e.len;
			memcpy(copy, e.data, static_cast<size_t>(len));
			count = e.rows;
			break;
		}
	LWLockRelease(row_shm->lock);
	if (count < 0)
		return false;
	row_note = RowNote{qd->plannedstmt, true, key, role, InvalidOid, std::string(copy, static_cast<size_t>(len)), count};
	return true;
}

// See open_row_cache.h.
void
open_row_cache_plan_record(QueryDesc *qd, uint64 key, Oid role, Oid relid)
{
	row_note = RowNote{qd->plannedstmt, false, key, role, relid, {}, 0};
}

// See open_row_cache.h.
void
open_row_cache_forget_note()
{
	row_note = RowNote{};
}

// See open_row_cache.h.
void
open_row_cache_attach(QueryDesc *qd)
{
	if (!row_note.plan || row_note.plan != qd->plannedstmt || !qd->planstate) {
		row_note = RowNote{};
		return;
	}
	RowNote note = std::move(row_note);
	row_note = RowNote{};
	PlanState *ps = qd->planstate;
	if (!note.replay) {
		RowRecorder &r = row_recorders[ps];
		r = RowRecorder{};
		r.real = ps->ExecProcNodeReal;
		r.key = note.key;
		r.role = note.role;
		r.relid = note.relid;
		// a scrollable cursor may fetch backwards or rewind: its rows are not recorded
		r.finished = (qd->estate->es_top_eflags & (EXEC_FLAG_BACKWARD | EXEC_FLAG_REWIND | EXEC_FLAG_MARK)) != 0;
		ps->ExecProcNodeReal = record_open_rows;
		return;
	}
	RowReplayer &r = row_replayers[ps];
	r = RowReplayer{};
	r.tuples.reserve(static_cast<size_t>(note.count));
	size_t at = 0;
	while (at + sizeof(uint32) <= note.rows.size()) {
		uint32 len = 0;
		memcpy(&len, note.rows.data() + at, sizeof len);
		at += sizeof len;
		if (at + len > note.rows.size())
			fail(ERRCODE_DATA_CORRUPTED, "invalid dxpriv stored open release",
			     "Run dx.clear_cache() and repeat the query.");
		const char *src = note.rows.data() + at;
		HeapTuple t = pg_value([&] {
			MemoryContext old = MemoryContextSwitchTo(qd->estate->es_query_cxt);
			HeapTuple h = static_cast<HeapTuple>(palloc0(HEAPTUPLESIZE + len));
			MemoryContextSwitchTo(old);
			return h;
		});
		t->t_len = len;
		t->t_self = ItemPointerData{}; // invalid (block 0 of no page, offset 0)
		t->t_tableOid = InvalidOid;
		t->t_data = reinterpret_cast<HeapTupleHeader>(reinterpret_cast<char *>(t) + HEAPTUPLESIZE);
		memcpy(t->t_data, src, len);
		r.tuples.push_back(t);
		at += len;
	}
	r.slot = pg_value([&] { return ExecInitExtraTupleSlot(qd->estate, ExecGetResultType(ps), &TTSOpsHeapTuple); });
	ps->ExecProcNodeReal = replay_open_rows;
}

// See open_row_cache.h.
int
open_row_cache_clear(Oid relid)
{
	if (!row_shm)
		return 0;
	int dropped = 0;
	LWLockAcquire(row_shm->lock, LW_EXCLUSIVE);
	for (RowEntry &e : row_shm->entries)
		if (e.used && (!OidIsValid(relid) || e.relid == relid)) {
			e.used = false;
			dropped++;
		}
	LWLockRelease(row_shm->lock);
	return dropped;
}

} // namespace dxpriv::pg
