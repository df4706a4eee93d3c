// Budget ledger worker: one background process per database that charges. It takes the pending
// requests of its database in batches, charges each in a subtransaction of one transaction that
// commits with synchronous_commit = on, and only then tells the waiting backends.
//
// This file is plain C-style code on purpose: it uses PG_TRY and subtransactions, so no C++ object
// with a destructor may live in these frames.
#include "pg/ledger/ledger_queue.h"

extern "C" {
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"
}

#include <cstring>

namespace dxpriv::pg::ledger {

namespace {

bool g_am_worker = false;
Oid g_dboid = InvalidOid;
int g_batch[kBatchMax]; // slots this worker is running (for the exit callback)
int g_batch_size = 0;

SPIPlanPtr plan_charge = nullptr, plan_diagnose = nullptr, plan_insert = nullptr;
SPIPlanPtr plan_attr_charge = nullptr, plan_attr_diagnose = nullptr;

// Charges one table: resets an elapsed refresh period, checks the per-query cap, the epsilon budget
// and the delta budget, and adds epsilon ($3) and delta ($4), all in one UPDATE (the row lock
// serialises concurrent charges). A charge with delta 0 is never refused for delta. A new period
// also resets the attribute-privacy budget's spending (and kAttrChargeSql resets this one's).
const char *const kChargeSql =
	"UPDATE dx.budget_grants AS g SET "
	"  spent = CASE WHEN g.period_end <= now() THEN 0 ELSE g.spent END + $3, "
	"  delta_spent = CASE WHEN g.period_end <= now() THEN 0 ELSE g.delta_spent END + $4, "
	"  attr_spent = CASE WHEN g.period_end <= now() THEN 0 ELSE g.attr_spent END, "
	"  attr_delta_spent = CASE WHEN g.period_end <= now() THEN 0 ELSE g.attr_delta_spent END, "
	"  period_start = CASE WHEN g.period_end <= now() "
	"    THEN (dx._period(g.refresh_anchor, g.refresh, now())).period_start ELSE g.period_start END, "
	"  period_end = CASE WHEN g.period_end <= now() "
	"    THEN (dx._period(g.refresh_anchor, g.refresh, now())).period_end ELSE g.period_end END "
	"FROM dx.protected_tables AS p "
	"WHERE g.role = $1 AND g.relid = $2 AND p.relid = g.relid "
	"  AND (p.per_query_cap IS NULL OR $3 <= p.per_query_cap + 1e-9) "
	"  AND CASE WHEN g.period_end <= now() THEN 0 ELSE g.spent END + $3 <= g.granted + 1e-9 "
	"  AND ($4 = 0::float8 "
	"       OR CASE WHEN g.period_end <= now() THEN 0 ELSE g.delta_spent END + $4 <= g.delta_granted * (1 + 1e-9)) "
	"RETURNING g.period_start";

// Why a charge was refused: no row (no budget), the cap, the remaining epsilon or the remaining delta.
const char *const kDiagnoseSql =
	"SELECT CASE WHEN g.period_end <= now() THEN 0 ELSE g.spent END, g.granted, p.per_query_cap, "
	"  CASE WHEN g.period_end <= now() THEN 0 ELSE g.delta_spent END, g.delta_granted "
	"FROM dx.budget_grants AS g JOIN dx.protected_tables AS p ON p.relid = g.relid "
	"WHERE g.role = $1 AND g.relid = $2";

// The same for the attribute-privacy budget (attr_* columns; no per-query cap: the attribute
// policy fixes each release's epsilon and delta).
const char *const kAttrChargeSql =
	"UPDATE dx.budget_grants AS g SET "
	"  attr_spent = CASE WHEN g.period_end <= now() THEN 0 ELSE g.attr_spent END + $3, "
	"  attr_delta_spent = CASE WHEN g.period_end <= now() THEN 0 ELSE g.attr_delta_spent END + $4, "
	"  spent = CASE WHEN g.period_end <= now() THEN 0 ELSE g.spent END, "
	"  delta_spent = CASE WHEN g.period_end <= now() THEN 0 ELSE g.delta_spent END, "
	"  period_start = CASE WHEN g.period_end <= now() "
	"    THEN (dx._period(g.refresh_anchor, g.refresh, now())).period_start ELSE g.period_start END, "
	"  period_end = CASE WHEN g.period_end <= now() "
	"    THEN (dx._period(g.refresh_anchor, g.refresh, now())).period_end ELSE g.period_end END "
	"WHERE g.role = $1 AND g.relid = $2 AND g.attr_granted > 0 "
	"  AND CASE WHEN g.period_end <= now() THEN 0 ELSE g.attr_spent END + $3 <= g.attr_granted + 1e-9 "
	"  AND ($4 = 0::float8 "
	"       OR CASE WHEN g.period_end <= now() THEN 0 ELSE g.attr_delta_spent END + $4 <= g.attr_delta_granted * (1 + 1e-9)) "
	"RETURNING g.period_start";

const char *const kAttrDiagnoseSql =
	"SELECT CASE WHEN g.period_end <= now() THEN 0 ELSE g.attr_spent END, g.attr_granted, NULL::float8, "
	"  CASE WHEN g.period_end <= now() THEN 0 ELSE g.attr_delta_spent END, g.attr_delta_granted "
	"FROM dx.budget_grants AS g WHERE g.role = $1 AND g.relid = $2 AND g.attr_granted > 0";

const char *const kInsertSql =
	"INSERT INTO dx.ledger (role, relid, fingerprint, query, mechanism, epsilon, delta, scales, pid, session_role, "
	"period_start, budget) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)";

// Prepares and keeps a statement once per worker.
SPIPlanPtr
prepare(SPIPlanPtr *cache, const char *sql, int nargs, Oid *types)
{
	if (!*cache) {
		SPIPlanPtr p = SPI_prepare(sql, nargs, types);
		if (!p)
			elog(ERROR, "dxpriv ledger: could not prepare a statement: %s", SPI_result_code_string(SPI_result));
		if (SPI_keepplan(p) != 0)
			elog(ERROR, "dxpriv ledger: could not keep a statement");
		*cache = p;
	}
	return *cache;
}

// Reply written into a slot at the end of a batch.
struct SlotResult {
	int32 outcome;
	int32 failed_table;
	double remaining, cap;
	int32 sqlstate;
	char message[kMessageLen];
};

// Charges every table of one request; returns the outcome. Runs inside a subtransaction; errors
// propagate to the caller, which rolls the subtransaction back.
int32
charge_request(Slot *slot, const char *payload, SlotResult *res)
{
	Oid charge_types[4] = {OIDOID, OIDOID, FLOAT8OID, FLOAT8OID};
	Oid insert_types[12] = {OIDOID, OIDOID, TEXTOID, TEXTOID, TEXTOID, FLOAT8OID, FLOAT8OID, FLOAT8ARRAYOID,
	                        INT4OID, OIDOID, TIMESTAMPTZOID, TEXTOID};
	SPIPlanPtr dx_charge = prepare(&plan_charge, kChargeSql, 4, charge_types);
	SPIPlanPtr dx_diagnose = prepare(&plan_diagnose, kDiagnoseSql, 2, charge_types);
	SPIPlanPtr attr_charge = prepare(&plan_attr_charge, kAttrChargeSql, 4, charge_types);
	SPIPlanPtr attr_diagnose = prepare(&plan_attr_diagnose, kAttrDiagnoseSql, 2, charge_types);
	SPIPlanPtr insert = prepare(&plan_insert, kInsertSql, 12, insert_types);

	size_t nscales_total = 0;
	for (int t = 0; t < slot->ntables; ++t)
		nscales_total += static_cast<size_t>(slot->tables[t].nscales);
	const char *fp = payload + nscales_total * sizeof(double);
	const char *query = fp + slot->fingerprint_len;
	text *fp_text = cstring_to_text_with_len(fp, static_cast<int>(slot->fingerprint_len));
	text *query_text = cstring_to_text_with_len(query, static_cast<int>(slot->query_len));

	size_t scale_off = 0;
	for (int t = 0; t < slot->ntables; ++t) {
		const TableCharge &tc = slot->tables[t];
		if (!(tc.delta >= 0 && tc.delta <= 1)) // also NaN: a negative delta would refund the budget
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			                errmsg("dxpriv ledger: invalid delta %g in a charge", tc.delta)));
		if (tc.budget != kDxBudget && tc.budget != kAttributeBudget)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			                errmsg("dxpriv ledger: invalid budget kind %d in a charge", tc.budget)));
		const bool attribute = tc.budget == kAttributeBudget;
		SPIPlanPtr charge = attribute ? attr_charge : dx_charge;
		SPIPlanPtr diagnose = attribute ? attr_diagnose : dx_diagnose;
		Datum args[4] = {ObjectIdGetDatum(slot->role), ObjectIdGetDatum(tc.relid), Float8GetDatum(tc.epsilon),
		                 Float8GetDatum(tc.delta)};
		int rc = SPI_execute_plan(charge, args, nullptr, false, 0);
		if (rc != SPI_OK_UPDATE_RETURNING)
			elog(ERROR, "dxpriv ledger: charging failed: %s", SPI_result_code_string(rc));
		if (SPI_processed == 0) {
			res->failed_table = t;
			rc = SPI_execute_plan(diagnose, args, nullptr, false, 1); // fresh snapshot
			if (rc != SPI_OK_SELECT)
				elog(ERROR, "dxpriv ledger: reading the budget failed: %s", SPI_result_code_string(rc));
			if (SPI_processed == 0)
				return kNoBudget;
			bool isnull;
			HeapTuple tup = SPI_tuptable->vals[0];
			TupleDesc desc = SPI_tuptable->tupdesc;
			double spent = DatumGetFloat8(SPI_getbinval(tup, desc, 1, &isnull));
			double granted = DatumGetFloat8(SPI_getbinval(tup, desc, 2, &isnull));
			Datum cap = SPI_getbinval(tup, desc, 3, &isnull);
			if (!isnull && tc.epsilon > DatumGetFloat8(cap) + 1e-9) {
				res->cap = DatumGetFloat8(cap);
				return kOverCap;
			}
			double delta_spent = DatumGetFloat8(SPI_getbinval(tup, desc, 4, &isnull));
			double delta_granted = DatumGetFloat8(SPI_getbinval(tup, desc, 5, &isnull));
			if (spent + tc.epsilon <= granted + 1e-9 && tc.delta != 0 &&
			    !(delta_spent + tc.delta <= delta_granted * (1 + 1e-9))) {
				res->remaining = delta_granted - delta_spent > 0 ? delta_granted - delta_spent : 0;
				return kDeltaExhausted;
			}
			res->remaining = granted - spent > 0 ? granted - spent : 0;
			return kExhausted;
		}
		bool isnull;
		Datum period_start = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		int n = tc.nscales;
		Datum *scales = static_cast<Datum *>(palloc(sizeof(Datum) * (n > 0 ? n : 1)));
		for (int k = 0; k < n; ++k) {
			double v;
			memcpy(&v, payload + (scale_off + static_cast<size_t>(k)) * sizeof(double), sizeof v);
			scales[k] = Float8GetDatum(v);
		}
		scale_off += static_cast<size_t>(n);
		ArrayType *arr = construct_array(scales, n, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
		char mech[kMechanismLen];
		memcpy(mech, tc.mechanism, kMechanismLen);
		mech[kMechanismLen - 1] = '\0';
		Datum iargs[12] = {ObjectIdGetDatum(slot->role),
		                   ObjectIdGetDatum(tc.relid),
		                   PointerGetDatum(fp_text),
		                   PointerGetDatum(query_text),
		                   CStringGetTextDatum(mech),
		                   Float8GetDatum(tc.epsilon),
		                   Float8GetDatum(tc.delta),
		                   PointerGetDatum(arr),
		                   Int32GetDatum(slot->owner_pid),
		                   ObjectIdGetDatum(slot->session_role),
		                   period_start,
		                   CStringGetTextDatum(attribute ? "attribute" : "d_x")};
		char nulls[13] = "            ";
		if (isnull)
			nulls[10] = 'n';
		rc = SPI_execute_plan(insert, iargs, nulls, false, 0);
		if (rc != SPI_OK_INSERT || SPI_processed != 1)
			elog(ERROR, "dxpriv ledger: writing the ledger failed: %s", SPI_result_code_string(rc));
	}
	return kCharged;
}

// Runs one request in its own subtransaction: committed with the batch when charged, rolled back
// (nothing charged) when refused or failed.
void
run_request(Slot *slot, SlotResult *res, MemoryContext batch_cxt)
{
	MemoryContext outer_cxt = CurrentMemoryContext;
	ResourceOwner outer_owner = CurrentResourceOwner;
	memset(res, 0, sizeof *res);
	res->outcome = kFailed;

	BeginInternalSubTransaction(nullptr);
	MemoryContextSwitchTo(outer_cxt);
	PG_TRY();
	{
		const char *payload = slot->payload;
		dsm_segment *seg = nullptr;
		if (slot->dsm != 0) {
			seg = dsm_attach(slot->dsm);
			if (!seg)
				ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				                errmsg("the request's shared memory segment is gone")));
			payload = static_cast<const char *>(dsm_segment_address(seg));
		}
		int32 outcome = charge_request(slot, payload, res);
		if (seg)
			dsm_detach(seg);
		res->outcome = outcome;
		if (outcome == kCharged)
			ReleaseCurrentSubTransaction();
		else
			RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(outer_cxt);
		CurrentResourceOwner = outer_owner;
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(batch_cxt);
		ErrorData *edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(outer_cxt);
		CurrentResourceOwner = outer_owner;
		res->outcome = kFailed;
		res->sqlstate = edata->sqlerrcode;
		snprintf(res->message, kMessageLen, "%s", edata->message ? edata->message : "error");
		ereport(LOG, (errmsg("dxpriv ledger: a charge failed: %s", res->message)));
	}
	PG_END_TRY();
}

// Forces the settings the ledger's guarantees rely on, whatever postgresql.conf, ALTER DATABASE or
// ALTER ROLE say: durable commits, read committed, writable, no statement timeout, a safe path.
void
apply_settings()
{
	char buf[32];
	SetConfigOption("synchronous_commit", "on", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("default_transaction_isolation", "read committed", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("default_transaction_read_only", "off", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("statement_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("idle_in_transaction_session_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("search_path", "pg_catalog", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("session_replication_role", "origin", PGC_SUSET, PGC_S_OVERRIDE);
	snprintf(buf, sizeof buf, "%d", guc_ledger_lock_timeout_ms);
	SetConfigOption("lock_timeout", buf, PGC_SUSET, PGC_S_OVERRIDE);
}

// Charges a batch of running slots and publishes the replies after the commit.
void
run_batch(int n)
{
	static MemoryContext batch_cxt = nullptr;
	if (!batch_cxt)
		batch_cxt = AllocSetContextCreate(TopMemoryContext, "dxpriv ledger batch", ALLOCSET_DEFAULT_SIZES);
	SlotResult *results = static_cast<SlotResult *>(MemoryContextAllocZero(batch_cxt, sizeof(SlotResult) * n));
	Shared *sh = shared();

	pgstat_report_activity(STATE_RUNNING, "dxpriv: charging privacy budgets");
	SetCurrentStatementStartTimestamp();
	PG_TRY();
	{
		StartTransactionCommand();
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "dxpriv ledger: SPI_connect failed");
		PushActiveSnapshot(GetTransactionSnapshot());
		for (int i = 0; i < n; ++i)
			run_request(&sh->slots[g_batch[i]], &results[i], batch_cxt);
		PopActiveSnapshot();
		SPI_finish();
		CommitTransactionCommand(); // synchronous_commit = on: durable before anyone is told
	}
	PG_CATCH();
	{
		HOLD_INTERRUPTS();
		MemoryContextSwitchTo(batch_cxt);
		ErrorData *edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		RESUME_INTERRUPTS();
		for (int i = 0; i < n; ++i) {
			results[i].outcome = kFailed;
			results[i].sqlstate = edata->sqlerrcode;
			snprintf(results[i].message, kMessageLen, "%s", edata->message ? edata->message : "error");
		}
		ereport(LOG, (errmsg("dxpriv ledger: a batch of %d charges failed: %s", n, results[0].message)));
	}
	PG_END_TRY();

	int latches[kBatchMax];
	int nlatches = 0;
	LWLockAcquire(sh->lock, LW_EXCLUSIVE);
	for (int i = 0; i < n; ++i) {
		Slot *s = &sh->slots[g_batch[i]];
		if (s->abandoned)
			s->state = kFree; // the owner stopped waiting; a charge stands, it just sees no answer
		else {
			s->outcome = results[i].outcome;
			s->failed_table = results[i].failed_table;
			s->remaining = results[i].remaining;
			s->cap = results[i].cap;
			s->sqlstate = results[i].sqlstate;
			memcpy(s->message, results[i].message, kMessageLen);
			s->state = kDone;
		}
		latches[nlatches++] = g_batch[i];
	}
	g_batch_size = 0;
	for (int i = 0; i < sh->nworkers; ++i)
		if (sh->workers[i].dboid == g_dboid && sh->workers[i].pid == MyProcPid)
			sh->workers[i].last_active = GetCurrentTimestamp();
	LWLockRelease(sh->lock);
	for (int i = 0; i < nlatches; ++i)
		SetLatch(&GetPGProcByNumber(latches[i])->procLatch);
	MemoryContextReset(batch_cxt);
	pgstat_report_activity(STATE_IDLE, nullptr);
}

// Takes up to kBatchMax pending requests of this database. Returns how many; -1 when asked to stop.
int
take_batch()
{
	Shared *sh = shared();
	int n = 0;
	LWLockAcquire(sh->lock, LW_EXCLUSIVE);
	DbWorker *me = nullptr;
	for (int i = 0; i < sh->nworkers; ++i)
		if (sh->workers[i].dboid == g_dboid && sh->workers[i].pid == MyProcPid)
			me = &sh->workers[i];
	if (!me || me->stop_requested) {
		LWLockRelease(sh->lock);
		return -1;
	}
	for (int i = 0; i < sh->nslots && n < kBatchMax; ++i) {
		Slot *s = &sh->slots[i];
		if (s->state == kPending && s->dboid == g_dboid) {
			s->state = kRunning;
			g_batch[n++] = i;
		}
	}
	g_batch_size = n;
	LWLockRelease(sh->lock);
	return n;
}

// Leaves if nothing is pending; returns true when the worker should exit.
bool
retire_if_idle()
{
	Shared *sh = shared();
	bool retire = true;
	LWLockAcquire(sh->lock, LW_EXCLUSIVE);
	for (int i = 0; i < sh->nslots; ++i)
		if (sh->slots[i].state == kPending && sh->slots[i].dboid == g_dboid)
			retire = false;
	if (retire)
		for (int i = 0; i < sh->nworkers; ++i)
			if (sh->workers[i].dboid == g_dboid && sh->workers[i].pid == MyProcPid) {
				sh->workers[i].state = kNone;
				sh->workers[i].pid = 0;
			}
	LWLockRelease(sh->lock);
	return retire;
}

// On exit: unregister, fail the requests of an unfinished batch (its transaction aborts), and wake
// the backends still waiting so that they start a new worker.
void
worker_exit(int code, Datum arg)
{
	Shared *sh = shared();
	int wake[256];
	int nwake = 0;
	LWLockAcquire(sh->lock, LW_EXCLUSIVE);
	for (int i = 0; i < sh->nworkers; ++i)
		if (sh->workers[i].dboid == g_dboid && sh->workers[i].pid == MyProcPid) {
			sh->workers[i].state = kNone;
			sh->workers[i].pid = 0;
		}
	for (int i = 0; i < g_batch_size; ++i) {
		Slot *s = &sh->slots[g_batch[i]];
		if (s->abandoned)
			s->state = kFree;
		else {
			s->outcome = kFailed;
			s->sqlstate = ERRCODE_ADMIN_SHUTDOWN;
			snprintf(s->message, kMessageLen, "the ledger worker exited before committing the charge");
			s->state = kDone;
		}
	}
	for (int i = 0; i < sh->nslots; ++i)
		if ((sh->slots[i].state == kPending || sh->slots[i].state == kDone) && sh->slots[i].dboid == g_dboid &&
		    nwake < 256)
			wake[nwake++] = sh->slots[i].owner_procno;
	g_batch_size = 0;
	LWLockRelease(sh->lock);
	for (int i = 0; i < nwake; ++i)
		SetLatch(&GetPGProcByNumber(wake[i])->procLatch);
}

// Registers this process as the worker of its database; false when another one already is.
bool
register_worker()
{
	Shared *sh = shared();
	bool ok = false;
	LWLockAcquire(sh->lock, LW_EXCLUSIVE);
	DbWorker *e = nullptr;
	for (int i = 0; i < sh->nworkers; ++i)
		if (sh->workers[i].dboid == g_dboid)
			e = &sh->workers[i];
	if (!e)
		for (int i = 0; i < sh->nworkers && !e; ++i)
			if (sh->workers[i].dboid == InvalidOid || sh->workers[i].state == kNone) {
				e = &sh->workers[i];
				e->dboid = g_dboid;
			}
	if (e && !(e->state == kWorking && e->pid != MyProcPid)) {
		e->state = kWorking;
		e->pid = MyProcPid;
		e->procno = MyProc->pgprocno;
		e->stop_requested = false;
		e->since = GetCurrentTimestamp();
		e->last_active = e->since;
		ok = true;
	}
	LWLockRelease(sh->lock);
	return ok;
}

} // namespace

bool
am_worker()
{
	return g_am_worker;
}

} // namespace dxpriv::pg::ledger

using namespace dxpriv::pg::ledger;

// Worker main: connect, register, then charge batches until idle, stopped or the postmaster dies.
void
dx_ledger_worker_main(Datum arg)
{
	g_dboid = DatumGetObjectId(arg);
	g_am_worker = true;
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(g_dboid, InvalidOid, 0);
	pgstat_report_appname("dxpriv ledger");
	apply_settings();

	if (!shared() || !register_worker())
		proc_exit(0);
	before_shmem_exit(worker_exit, 0);

	TimestampTz last_work = GetCurrentTimestamp();
	for (;;) {
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending) {
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			apply_settings();
		}
		int n = take_batch();
		if (n < 0)
			proc_exit(0);
		if (n > 0) {
			run_batch(n);
			last_work = GetCurrentTimestamp();
			continue;
		}
		if (TimestampDifferenceExceeds(last_work, GetCurrentTimestamp(), guc_ledger_idle_timeout_s * 1000) &&
		    retire_if_idle())
			proc_exit(0);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1000, PG_WAIT_EXTENSION);
	}
}
