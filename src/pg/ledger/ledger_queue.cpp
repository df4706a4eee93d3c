// Budget ledger, backend side: shared memory, GUCs, launching the per-database ledger worker and
// handing it one request per charged statement (see ledger_queue.h for the design).
//
// Protocol. Every backend owns the slot of its PGPROC number. It fills the request while the slot
// is free, publishes it as pending under the lock and sets the worker's latch; the worker marks a
// batch of pending slots running, commits their charges in one transaction (one subtransaction
// per request), writes the replies, marks them done and sets each owner's latch. A backend that
// stops waiting (cancel, statement_timeout, error, exit) withdraws a pending request (nothing is
// charged) or flags a running one as abandoned (the charge stands; the worker frees the slot).
#include "pg/ledger/ledger_queue.h"

#include "pg/guard.h"

extern "C" {
#include "access/xlog.h"
#include "catalog/pg_authid.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/wait_event.h"
}

#include <cstring>

namespace dxpriv::pg::ledger {

int guc_ledger_timeout_ms = 10000;
int guc_ledger_lock_timeout_ms = 2000;
int guc_ledger_idle_timeout_s = 60;

namespace {

constexpr const char *kTranche = "dxpriv_ledger";
constexpr long kStaleStartMs = 10000; // a worker not registered after this long is relaunched

Shared *g_shared = nullptr;
bool exit_callback_registered = false;

// The last worker this backend launched, to notice quickly when it failed to start.
BackgroundWorkerHandle *launch_handle = nullptr;
Oid launch_db = InvalidOid;
uint64 launch_gen = 0;

// Request fields other than the payload.
struct Header {
	Oid role, session_role;
	int32 ntables;
	TableCharge tables[kMaxTables];
	uint32 fingerprint_len, query_len;
};

// The reply copied out of the slot.
struct RawReply {
	int32 outcome;
	int32 failed_table;
	double remaining, cap;
	int32 sqlstate;
	bool worker_seen;   // a worker was registered for the database at some point of the wait
	bool launch_failed; // registering a worker failed (no free background worker slot)
	bool timed_out;
	bool taken;         // the worker had taken the request when the backend stopped waiting
	char message[kMessageLen];
};

Size
shmem_size()
{
	Size s = MAXALIGN(sizeof(Shared));
	s = add_size(s, MAXALIGN(mul_size(max_worker_processes, sizeof(DbWorker))));
	s = add_size(s, mul_size(MaxBackends, sizeof(Slot)));
	return s;
}

} // namespace

// See ledger_queue.h.
void
request_shmem()
{
	RequestAddinShmemSpace(shmem_size());
	RequestNamedLWLockTranche(kTranche, 1);
}

// See ledger_queue.h.
void
startup_shmem()
{
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	bool found = false;
	char *base = static_cast<char *>(ShmemInitStruct("dxpriv ledger", shmem_size(), &found));
	auto *s = reinterpret_cast<Shared *>(base);
	if (!found) {
		memset(base, 0, shmem_size());
		s->lock = &(GetNamedLWLockTranche(kTranche))->lock;
		s->nworkers = max_worker_processes;
		s->nslots = MaxBackends;
		s->workers = reinterpret_cast<DbWorker *>(base + MAXALIGN(sizeof(Shared)));
		s->slots = reinterpret_cast<Slot *>(base + MAXALIGN(sizeof(Shared)) +
		                                   MAXALIGN(mul_size(max_worker_processes, sizeof(DbWorker))));
	}
	g_shared = s;
	LWLockRelease(AddinShmemInitLock);
}

namespace {

// Entry of a database's worker, or nullptr. Caller holds the lock.
DbWorker *
find_entry(Oid dboid)
{
	for (int i = 0; i < g_shared->nworkers; ++i)
		if (g_shared->workers[i].dboid == dboid)
			return &g_shared->workers[i];
	return nullptr;
}

// Entry of a database's worker, claiming an unused one if needed. Caller holds the lock exclusively.
DbWorker *
find_or_claim_entry(Oid dboid)
{
	if (DbWorker *e = find_entry(dboid))
		return e;
	for (int i = 0; i < g_shared->nworkers; ++i) {
		DbWorker *e = &g_shared->workers[i];
		if (e->dboid == InvalidOid || e->state == kNone) {
			uint64 gen = e->generation;
			memset(e, 0, sizeof *e);
			e->dboid = dboid;
			e->generation = gen;
			return e;
		}
	}
	return nullptr;
}

Slot *
my_slot()
{
	if (!g_shared || !MyProc || MyProc->pgprocno < 0 || MyProc->pgprocno >= g_shared->nslots)
		return nullptr;
	return &g_shared->slots[MyProc->pgprocno];
}

// Stops waiting for our slot: withdraws a pending request, flags a running one. Never errors.
void
abandon_slot()
{
	Slot *slot = my_slot();
	if (!slot)
		return;
	LWLockAcquire(g_shared->lock, LW_EXCLUSIVE);
	if (slot->owner_pid == MyProcPid) {
		if (slot->state == kPending || slot->state == kDone)
			slot->state = kFree;
		else if (slot->state == kRunning)
			slot->abandoned = true;
	}
	LWLockRelease(g_shared->lock);
}

void
backend_exit(int code, Datum arg)
{
	abandon_slot();
}

// Registers a worker for dboid (generation gen). On failure the entry goes back to kNone.
bool
launch_worker(Oid dboid, uint64 gen)
{
	BackgroundWorker w;
	memset(&w, 0, sizeof w);
	w.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	w.bgw_start_time = BgWorkerStart_RecoveryFinished;
	w.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(w.bgw_library_name, BGW_MAXLEN, "dxpriv");
	snprintf(w.bgw_function_name, BGW_MAXLEN, "dx_ledger_worker_main");
	snprintf(w.bgw_name, BGW_MAXLEN, "dxpriv ledger worker for database %u", dboid);
	snprintf(w.bgw_type, BGW_MAXLEN, "dxpriv ledger");
	w.bgw_main_arg = ObjectIdGetDatum(dboid);
	w.bgw_notify_pid = 0;

	BackgroundWorkerHandle *h = nullptr;
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	bool ok = RegisterDynamicBackgroundWorker(&w, &h);
	MemoryContextSwitchTo(old);
	if (ok) {
		if (launch_handle)
			pfree(launch_handle);
		launch_handle = h;
		launch_db = dboid;
		launch_gen = gen;
		return true;
	}
	LWLockAcquire(g_shared->lock, LW_EXCLUSIVE);
	DbWorker *e = find_entry(dboid);
	if (e && e->generation == gen && e->state == kStarting)
		e->state = kNone;
	LWLockRelease(g_shared->lock);
	return false;
}

// True when the worker this backend launched as generation gen for dboid has already stopped.
bool
my_launch_stopped(Oid dboid, uint64 *gen)
{
	if (!launch_handle || launch_db != dboid)
		return false;
	pid_t pid;
	*gen = launch_gen;
	return GetBackgroundWorkerPid(launch_handle, &pid) == BGWH_STOPPED;
}

// Background worker slots are shared with parallel query and other databases: when no worker can
// be started, ask the longest-idle worker of another database (idle for at least a second, nothing
// pending) to exit. It is started again on demand.
void
evict_idle_worker(Oid dboid)
{
	TimestampTz now = GetCurrentTimestamp();
	int victim = -1;
	LWLockAcquire(g_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < g_shared->nworkers; ++i) {
		DbWorker *e = &g_shared->workers[i];
		if (e->state != kWorking || e->dboid == dboid || e->stop_requested ||
		    !TimestampDifferenceExceeds(e->last_active, now, 1000))
			continue;
		bool pending = false;
		for (int j = 0; j < g_shared->nslots && !pending; ++j)
			pending = g_shared->slots[j].dboid == e->dboid &&
			          (g_shared->slots[j].state == kPending || g_shared->slots[j].state == kRunning);
		if (!pending && (victim < 0 || e->last_active < g_shared->workers[victim].last_active))
			victim = i;
	}
	int procno = -1;
	if (victim >= 0) {
		g_shared->workers[victim].stop_requested = true;
		procno = g_shared->workers[victim].procno;
	}
	LWLockRelease(g_shared->lock);
	if (procno >= 0)
		SetLatch(&GetPGProcByNumber(procno)->procLatch);
}

// Makes sure a worker serves dboid. Returns the worker's PGPROC number when it is registered,
// else -1 (a launch may be under way). Sets *launch_failed when registering one failed.
int
supervise(Oid dboid, bool *launch_failed)
{
	uint64 stopped_gen = 0;
	bool stopped = my_launch_stopped(dboid, &stopped_gen);
	TimestampTz now = GetCurrentTimestamp();
	bool need_launch = false;
	uint64 gen = 0;
	int procno = -1;
	LWLockAcquire(g_shared->lock, LW_EXCLUSIVE);
	DbWorker *e = find_or_claim_entry(dboid);
	if (e) {
		bool stale = e->state == kStarting &&
		             (TimestampDifferenceExceeds(e->since, now, kStaleStartMs) || (stopped && stopped_gen == e->generation));
		if (e->state == kNone || stale) {
			e->state = kStarting;
			e->since = now;
			e->generation++;
			e->stop_requested = false;
			e->pid = 0;
			need_launch = true;
			gen = e->generation;
		} else if (e->state == kWorking)
			procno = e->procno;
	}
	bool no_entry = e == nullptr;
	LWLockRelease(g_shared->lock);
	if (no_entry || (need_launch && !launch_worker(dboid, gen))) {
		*launch_failed = true;
		evict_idle_worker(dboid);
	}
	return procno;
}

// Waits until the slot is free (a request this backend abandoned earlier may still be running).
bool
wait_until_free(Slot *slot, TimestampTz deadline)
{
	for (;;) {
		ResetLatch(MyLatch);
		LWLockAcquire(g_shared->lock, LW_SHARED);
		bool free_now = slot->state == kFree;
		LWLockRelease(g_shared->lock);
		if (free_now)
			return true;
		if (GetCurrentTimestamp() >= deadline)
			return false;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 100, PG_WAIT_EXTENSION);
		CHECK_FOR_INTERRUPTS();
	}
}

// Waits for the reply to the published request. Caller handles errors (abandons the slot).
void
wait_for_reply(Slot *slot, Oid dboid, TimestampTz deadline, RawReply *out)
{
	for (;;) {
		ResetLatch(MyLatch);
		LWLockAcquire(g_shared->lock, LW_EXCLUSIVE);
		if (slot->state == kDone) {
			out->outcome = slot->outcome;
			out->failed_table = slot->failed_table;
			out->remaining = slot->remaining;
			out->cap = slot->cap;
			out->sqlstate = slot->sqlstate;
			memcpy(out->message, slot->message, kMessageLen);
			out->message[kMessageLen - 1] = '\0';
			out->taken = true;
			slot->state = kFree;
			LWLockRelease(g_shared->lock);
			return;
		}
		if (GetCurrentTimestamp() >= deadline) {
			out->timed_out = true;
			out->taken = slot->state == kRunning;
			if (slot->state == kPending)
				slot->state = kFree; // withdrawn: the worker never saw it, nothing is charged
			else
				slot->abandoned = true;
			LWLockRelease(g_shared->lock);
			out->outcome = kFailed;
			return;
		}
		LWLockRelease(g_shared->lock);

		int procno = supervise(dboid, &out->launch_failed);
		if (procno >= 0) {
			out->worker_seen = true;
			SetLatch(&GetPGProcByNumber(procno)->procLatch);
		}
		// the worker sets our latch when it replies or exits; poll faster while none is registered
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, procno >= 0 ? 1000 : 50,
		                 PG_WAIT_EXTENSION);
		CHECK_FOR_INTERRUPTS();
	}
}

// Publishes a request and waits for its reply. PostgreSQL errors (interrupts) propagate after the
// slot was abandoned. No C++ object lives in this frame.
void
submit_and_wait(const Header &h, const char *payload, uint32 payload_len, RawReply *out)
{
	Slot *slot = my_slot();
	if (!slot) {
		snprintf(out->message, kMessageLen, "this process has no ledger request slot");
		out->outcome = kFailed;
		return;
	}
	if (!exit_callback_registered) {
		before_shmem_exit(backend_exit, 0);
		exit_callback_registered = true;
	}
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), guc_ledger_timeout_ms);

	dsm_segment *seg = nullptr;
	PG_TRY();
	{
		if (!wait_until_free(slot, deadline)) {
			snprintf(out->message, kMessageLen, "an earlier request of this session is still being charged");
			out->timed_out = true;
			out->outcome = kFailed;
		} else {
			if (payload_len > static_cast<uint32>(kInlinePayload)) {
				seg = dsm_create(payload_len, DSM_CREATE_NULL_IF_MAXSEGMENTS);
				if (!seg) {
					snprintf(out->message, kMessageLen, "no dynamic shared memory segment for a large request");
					out->outcome = kFailed;
				} else
					memcpy(dsm_segment_address(seg), payload, payload_len);
			} else
				memcpy(slot->payload, payload, payload_len);
			if (payload_len <= static_cast<uint32>(kInlinePayload) || seg) {
				slot->owner_procno = MyProc->pgprocno;
				slot->owner_pid = MyProcPid;
				slot->dboid = MyDatabaseId;
				slot->role = h.role;
				slot->session_role = h.session_role;
				slot->ntables = h.ntables;
				memcpy(slot->tables, h.tables, sizeof h.tables);
				slot->fingerprint_len = h.fingerprint_len;
				slot->query_len = h.query_len;
				slot->payload_len = payload_len;
				slot->dsm = seg ? dsm_segment_handle(seg) : 0;
				slot->outcome = kFailed;
				slot->failed_table = 0;
				slot->remaining = slot->cap = 0;
				slot->sqlstate = 0;
				slot->message[0] = '\0';
				slot->abandoned = false;

				LWLockAcquire(g_shared->lock, LW_EXCLUSIVE);
				slot->state = kPending;
				LWLockRelease(g_shared->lock);

				wait_for_reply(slot, MyDatabaseId, deadline, out);
			}
		}
	}
	PG_CATCH();
	{
		abandon_slot();
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (seg)
		dsm_detach(seg);
}

} // namespace

// PostgreSQL's have_createdb_privilege (superuser or rolcreatedb), written here because its
// declaration in commands/dbcommands.h only came with PostgreSQL 15.20: Debian 12's bookworm/main
// still ships 15.18, where it is static.
static bool
role_may_create_databases()
{
	if (superuser())
		return true;
	bool result = false;
	HeapTuple tuple = SearchSysCache1(AUTHOID, ObjectIdGetDatum(GetUserId()));
	if (HeapTupleIsValid(tuple)) {
		result = reinterpret_cast<Form_pg_authid>(GETSTRUCT(tuple))->rolcreatedb;
		ReleaseSysCache(tuple);
	}
	return result;
}

// See ledger_queue.h.
void
stop_workers_for(Node *stmt)
{
	const char *db = nullptr;
	bool creating = false;
	ListCell *lc;
	switch (nodeTag(stmt)) {
	case T_DropdbStmt:
		db = castNode(DropdbStmt, stmt)->dbname;
		break;
	case T_CreatedbStmt:
		creating = true;
		db = "template1";
		foreach (lc, castNode(CreatedbStmt, stmt)->options) {
			DefElem *d = lfirst_node(DefElem, lc);
			if (strcmp(d->defname, "template") == 0 && d->arg && IsA(d->arg, String))
				db = strVal(d->arg);
		}
		break;
	case T_RenameStmt:
		if (castNode(RenameStmt, stmt)->renameType == OBJECT_DATABASE)
			db = castNode(RenameStmt, stmt)->subname;
		break;
	case T_AlterDatabaseStmt:
		foreach (lc, castNode(AlterDatabaseStmt, stmt)->options)
			if (strcmp(lfirst_node(DefElem, lc)->defname, "tablespace") == 0)
				db = castNode(AlterDatabaseStmt, stmt)->dbname;
		break;
	default:
		break;
	}
	if (db && g_shared) {
		Oid dboid = get_database_oid(db, true);
		if (OidIsValid(dboid) && dboid != MyDatabaseId &&
		    (superuser() || pg_database_ownercheck(dboid, GetUserId()) || (creating && role_may_create_databases())))
			stop_worker(dboid);
	}
}

Shared *
shared()
{
	return g_shared;
}

// See ledger_queue.h.
void
stop_worker(Oid dboid)
{
	LWLockAcquire(g_shared->lock, LW_EXCLUSIVE);
	DbWorker *e = find_entry(dboid);
	if (!e || e->state != kWorking) {
		LWLockRelease(g_shared->lock);
		return;
	}
	e->stop_requested = true;
	int procno = e->procno;
	int pid = e->pid;
	LWLockRelease(g_shared->lock);
	SetLatch(&GetPGProcByNumber(procno)->procLatch);
	for (int i = 0; i < 1000; ++i) { // at most about 10 s: the worker finishes its batch first
		LWLockAcquire(g_shared->lock, LW_SHARED);
		bool gone = e->dboid != dboid || e->state != kWorking || e->pid != pid;
		LWLockRelease(g_shared->lock);
		if (gone)
			return;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

// See ledger_queue.h.
Reply
charge(Oid role, Oid session_role, const std::string &fingerprint, const std::string &query,
       const std::vector<Item> &items)
{
	if (items.empty() || items.size() > static_cast<size_t>(kMaxTables))
		fail(ERRCODE_PROGRAM_LIMIT_EXCEEDED, "a dx query may charge at most 8 protected tables",
		     "Split the query into several statements.");
	bool recovery = false;
	pg_call([&] { recovery = RecoveryInProgress(); });
	if (recovery || !g_shared) {
		Reply r;
		r.outcome = kFailed;
		r.message = recovery ? "the server is in recovery (a standby cannot write the ledger)"
		                     : "the ledger's shared memory is not initialised";
		return r;
	}

	Header h;
	memset(&h, 0, sizeof h);
	h.role = role;
	h.session_role = session_role;
	h.ntables = static_cast<int32>(items.size());
	size_t nscales = 0;
	for (size_t i = 0; i < items.size(); ++i) {
		TableCharge &t = h.tables[i];
		t.relid = items[i].relid;
		t.epsilon = items[i].epsilon;
		t.delta = items[i].delta;
		t.budget = items[i].budget;
		t.nscales = static_cast<int32>(items[i].scales.size());
		snprintf(t.mechanism, kMechanismLen, "%s", items[i].mechanism.c_str());
		nscales += items[i].scales.size();
	}
	h.fingerprint_len = static_cast<uint32>(fingerprint.size());
	h.query_len = static_cast<uint32>(query.size());
	std::vector<char> payload(nscales * sizeof(double) + fingerprint.size() + query.size());
	size_t off = 0;
	for (const Item &it : items) {
		if (!it.scales.empty())
			memcpy(payload.data() + off, it.scales.data(), it.scales.size() * sizeof(double));
		off += it.scales.size() * sizeof(double);
	}
	memcpy(payload.data() + off, fingerprint.data(), fingerprint.size());
	off += fingerprint.size();
	memcpy(payload.data() + off, query.data(), query.size());
	if (payload.size() > 0x7fffffffU)
		fail(ERRCODE_PROGRAM_LIMIT_EXCEEDED, "the query has too many output cells to record in the ledger");

	RawReply raw;
	memset(&raw, 0, sizeof raw);
	TimestampTz started = GetCurrentTimestamp();
	pg_call([&] { submit_and_wait(h, payload.data(), static_cast<uint32>(payload.size()), &raw); });
	pg_call([&] {
		elog(DEBUG1, "dxpriv: ledger charge committed in %ld us (outcome %d)",
		     static_cast<long>(GetCurrentTimestamp() - started), static_cast<int>(raw.outcome));
	});

	Reply r;
	r.outcome = static_cast<Outcome>(raw.outcome);
	r.failed_table = raw.failed_table;
	r.remaining = raw.remaining;
	r.cap = raw.cap;
	r.sqlstate = raw.sqlstate;
	r.message = raw.message;
	if (raw.timed_out) {
		char buf[256];
		if (!raw.worker_seen && raw.launch_failed)
			snprintf(buf, sizeof buf,
			         "the ledger worker of this database could not be started (no free background worker slot)");
		else if (!raw.worker_seen)
			snprintf(buf, sizeof buf, "no ledger worker took the request within %d ms; nothing was charged",
			         guc_ledger_timeout_ms);
		else if (raw.taken)
			snprintf(buf, sizeof buf, "the ledger did not confirm the charge within %d ms; the charge may stand",
			         guc_ledger_timeout_ms);
		else
			snprintf(buf, sizeof buf, "the ledger worker did not take the request within %d ms; nothing was charged",
			         guc_ledger_timeout_ms);
		if (r.message.empty())
			r.message = buf;
	}
	return r;
}

// See ledger_queue.h.
void
define_gucs()
{
	DefineCustomIntVariable("dxpriv.ledger_timeout", "How long a query waits for the ledger to commit its charge.",
	                        "After this the query fails and releases nothing.", &guc_ledger_timeout_ms, 10000, 100,
	                        3600 * 1000, PGC_SUSET, GUC_UNIT_MS, nullptr, nullptr, nullptr);
	DefineCustomIntVariable("dxpriv.ledger_lock_timeout", "lock_timeout of the ledger worker's transactions.",
	                        "A charge that waits longer for a budget row (an uncommitted grant_budget, for "
	                        "example) fails.",
	                        &guc_ledger_lock_timeout_ms, 2000, 10, 3600 * 1000, PGC_SIGHUP, GUC_UNIT_MS, nullptr,
	                        nullptr, nullptr);
	DefineCustomIntVariable("dxpriv.ledger_idle_timeout", "An idle ledger worker exits after this long.",
	                        "It is started again by the next charged query.", &guc_ledger_idle_timeout_s, 60, 1,
	                        86400, PGC_SIGHUP, GUC_UNIT_S, nullptr, nullptr, nullptr);
}

} // namespace dxpriv::pg::ledger
