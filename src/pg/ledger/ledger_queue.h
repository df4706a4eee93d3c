// The budget ledger's request queue: backends hand every charge to a per-database background
// worker ("dxpriv ledger") that commits it durably in its own transaction before the backend may
// run the query. See ledger_queue.cpp (shared memory, backend side) and ledger_worker.cpp.
//
// Why a worker: a charge written inside the caller's transaction is undone by ROLLBACK, by an
// error later in the transaction or by a crash before commit. The worker's transaction is
// independent of the caller's, commits with synchronous_commit = on, and the backend proceeds only
// once the worker reports the commit, so no answer ever leaves the server without a durable charge.
#pragma once

extern "C" {
#include "postgres.h"
}


extern "C" {
#include "storage/dsm.h"
#include "storage/lwlock.h"
#include "utils/timestamp.h"
}

#include <string>
#include <vector>

namespace dxpriv::pg::ledger {

// ---- GUCs (ledger_queue.cpp) ----
extern int guc_ledger_timeout_ms;      // dxpriv.ledger_timeout: how long a backend waits for its charge
extern int guc_ledger_lock_timeout_ms; // dxpriv.ledger_lock_timeout: the worker's lock_timeout
extern int guc_ledger_idle_timeout_s;  // dxpriv.ledger_idle_timeout: an idle worker exits after this

constexpr int kMaxTables = 8;          // protected tables one statement may charge
constexpr int kInlinePayload = 12288;  // scales + fingerprint + query text kept in the slot itself
constexpr int kMessageLen = 256;       // worker error message returned to the backend
constexpr int kMechanismLen = 192; // family + " per unit <column> (<bound>)" (README "Privacy units")
constexpr int kBatchMax = 32;          // requests committed together by one worker transaction

enum SlotState : int32 { kFree = 0, kPending = 1, kRunning = 2, kDone = 3 };
// kExhausted: the epsilon budget is short; kDeltaExhausted: the delta budget is.
enum Outcome : int32 { kCharged = 0, kNoBudget = 1, kExhausted = 2, kOverCap = 3, kFailed = 4, kDeltaExhausted = 5 };
enum WorkerState : int32 { kNone = 0, kStarting = 1, kWorking = 2 };

// Which budget of a grant a charge is paid from: the d_X-privacy budget (granted/spent) or the
// separate attribute-privacy budget (attr_granted/attr_spent; sql/55_attribute.sql).
enum Budget : int32 { kDxBudget = 0, kAttributeBudget = 1 };

// The share of one protected table in a request.
struct TableCharge {
	Oid relid;
	int32 nscales;
	int32 budget;   // Budget
	double epsilon;
	double delta;   // 0 for pure-epsilon noise
	char mechanism[kMechanismLen];
};

// One request slot per backend (indexed by PGPROC number). The owner writes the request while the
// slot is free, the worker reads it while it is running; state changes happen under the lock.
struct Slot {
	int32 state;
	bool abandoned;  // the owner stopped waiting (cancel, error, exit): the worker frees the slot
	int32 owner_procno;
	int32 owner_pid;
	Oid dboid, role, session_role;
	int32 ntables;
	TableCharge tables[kMaxTables];
	uint32 fingerprint_len, query_len, payload_len;
	dsm_handle dsm;  // != 0: the payload is in this segment, not inline
	// reply
	int32 outcome;
	int32 failed_table;
	double remaining, cap;
	int32 sqlstate;
	char message[kMessageLen];
	// payload: scales (float8, table after table), then fingerprint bytes, then query bytes
	alignas(8) char payload[kInlinePayload];
};

// One ledger worker per database that charges.
struct DbWorker {
	Oid dboid;
	int32 state;
	int32 pid;
	int32 procno;
	uint64 generation;  // incremented at every launch
	TimestampTz since;  // launch or registration time
	TimestampTz last_active; // end of the worker's last batch (or its registration)
	bool stop_requested;
};

struct Shared {
	LWLock *lock;
	int32 nslots;
	int32 nworkers;
	DbWorker *workers;  // nworkers entries
	Slot *slots;        // nslots entries
};

// The shared state (nullptr before shared memory is attached).
Shared *shared();

// Defines the ledger GUCs; once, from _PG_init (through hooks.cpp).
void define_gucs();

// Shared memory of the queue: requested in shmem_request_hook, attached in shmem_startup_hook
// (hooks.cpp calls them after the earlier hooks and the answer cache).
void request_shmem();
void startup_shmem();

// Stage "utility", first (ProcessUtility_hook): DROP/CREATE/RENAME/ALTER DATABASE stop the ledger
// worker of the database concerned so that the command does not wait for it. Never raises for
// other statements.
void stop_workers_for(Node *stmt);

// ---- Backend side ----
struct Item {
	Oid relid;
	Budget budget = kDxBudget; // one table may appear twice, once per budget
	double epsilon;
	double delta = 0; // (epsilon, delta) noise: the delta charged to the role's delta budget
	std::string mechanism;
	std::vector<double> scales;
};

struct Reply {
	Outcome outcome = kFailed;
	int failed_table = 0;   // index into the items
	double remaining = 0;   // kExhausted: epsilon left in the current period; kDeltaExhausted: delta left
	double cap = 0;         // kOverCap: the table's per-query cap
	int sqlstate = 0;       // kFailed: the worker's SQLSTATE (0 when the worker was not reached)
	std::string message;    // kFailed: what went wrong
};

// Sends one statement's charge to the ledger worker of the current database and waits until it is
// committed or refused. Throws PgError when the wait is interrupted (cancel, statement_timeout);
// the request is then withdrawn if the worker has not taken it yet, and otherwise stands.
Reply charge(Oid role, Oid session_role, const std::string &fingerprint, const std::string &query,
             const std::vector<Item> &items);

// Asks the ledger worker of a database to exit and waits (bounded) until it has. DROP DATABASE,
// CREATE DATABASE ... TEMPLATE, ALTER DATABASE RENAME / SET TABLESPACE need it gone.
void stop_worker(Oid dboid);

// True in the ledger worker process.
bool am_worker();

} // namespace dxpriv::pg::ledger

// Entry point of the ledger worker (bgw_function_name).
extern "C" PGDLLEXPORT void dx_ledger_worker_main(Datum arg);
