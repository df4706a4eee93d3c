// Cluster-wide catalog generation (catalog_generation.h): DDL transactions counted in shared memory.
#include "pg/metadata/catalog_generation.h"

extern "C" {
#include "access/xact.h"
#include "catalog/catalog.h"
#include "catalog/namespace.h"
#include "commands/copy.h"
#include "parser/parsetree.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "tcop/utility.h"
#include "utils/resowner.h"
}

namespace dxpriv::pg {

namespace {

constexpr int kInFlightShift = 48;

struct GenerationShared {
	pg_atomic_uint64 word;
};

GenerationShared *generation_shm = nullptr;
bool holding = false;      // this backend's top-level transaction has added one to in-flight
bool exit_armed = false;   // the before_shmem_exit callback is registered
int utility_holds = 0;     // utility statements running that keep holding's count until they return

// A DDL transaction begins: in-flight + 1, generation + 1.
void
begin_ddl()
{
	pg_atomic_fetch_add_u64(&generation_shm->word, static_cast<int64>((UINT64CONST(1) << kInFlightShift) + 1));
}

// It ended (after its invalidation messages): generation + 1, in-flight - 1.
void
end_ddl()
{
	pg_atomic_fetch_add_u64(&generation_shm->word, 1 - static_cast<int64>(UINT64CONST(1) << kInFlightShift));
}

// PG15 CommitTransaction and AbortTransaction send (or discard) the transaction's invalidation
// messages (AtEOXact_Inval) before the top-level resource owner releases its locks.
void
on_resource_release(ResourceReleasePhase phase, bool is_commit, bool is_top_level, void *)
{
	(void) is_commit;
	// (a utility statement that commits inside itself keeps the count until it returns)
	if (phase != RESOURCE_RELEASE_AFTER_LOCKS || !is_top_level || !holding || utility_holds > 0)
		return;
	holding = false;
	end_ddl();
}

// A backend leaving while its transaction holds one (normally released by the abort that
// ShutdownPostgres runs first).
void
release_at_exit(int, Datum)
{
	utility_holds = 0;
	if (holding && generation_shm) {
		holding = false;
		end_ddl();
	}
}

// This backend's transaction begins changing the catalog: in-flight + 1 until its end.
void
note_ddl()
{
	if (!exit_armed) {
		before_shmem_exit(release_at_exit, 0);
		exit_armed = true;
	}
	begin_ddl();
	holding = true;
}

} // namespace

// See catalog_generation.h.
uint64
catalog_generation_read()
{
	return generation_shm ? pg_atomic_read_u64(&generation_shm->word) : 0;
}

// See catalog_generation.h.
bool
catalog_generation_quiet(uint64 word)
{
	return (word >> kInFlightShift) == 0;
}

// See catalog_generation.h.
bool
catalog_generation_holding()
{
	return holding;
}

// See catalog_generation.h.
bool
catalog_generation_available()
{
	return generation_shm != nullptr;
}

// See catalog_generation.h.
void
catalog_generation_note_utility(Node *stmt)
{
	if (!generation_shm || holding || !IsTransactionState())
		return;
	// (COMMIT/ROLLBACK PREPARED send a prepared transaction's invalidation messages)
	const bool prepared = IsA(stmt, TransactionStmt) &&
	                      (castNode(TransactionStmt, stmt)->kind == TRANS_STMT_COMMIT_PREPARED ||
	                       castNode(TransactionStmt, stmt)->kind == TRANS_STMT_ROLLBACK_PREPARED);
	// (COPY ... FROM into a system catalog writes it without DDL; review2)
	const bool catalog_copy = IsA(stmt, CopyStmt) && castNode(CopyStmt, stmt)->is_from &&
	                          castNode(CopyStmt, stmt)->relation &&
	                          IsCatalogRelationOid(RangeVarGetRelid(castNode(CopyStmt, stmt)->relation, NoLock, true));
	// (REINDEX writes pg_class and pg_index, and its CONCURRENTLY form creates, swaps and drops indexes
	// in transactions of its own; GetCommandLogLevel calls it LOGSTMT_ALL)
	if (!prepared && !catalog_copy && !IsA(stmt, ReindexStmt) && GetCommandLogLevel(stmt) != LOGSTMT_DDL)
		return;
	note_ddl();
}

// See catalog_generation.h.
bool
catalog_generation_hold_utility()
{
	if (!holding)
		return false;
	++utility_holds;
	return true;
}

// See catalog_generation.h.
void
catalog_generation_leave_utility(bool held)
{
	if (!held || utility_holds == 0)
		return;
	--utility_holds;
	// Normally the statement returns inside a transaction (one it started after its last internal
	// commit): that transaction's end sends the last messages and releases the count. Outside any
	// transaction (an error between an internal commit and the next start) its messages are sent.
	if (utility_holds == 0 && holding && !IsTransactionOrTransactionBlock()) {
		holding = false;
		end_ddl();
	}
}

// See catalog_generation.h.
void
catalog_generation_note_executor(const PlannedStmt *stmt)
{
	if (!generation_shm || holding || !IsTransactionState())
		return;
	ListCell *lc;
	foreach (lc, stmt->resultRelations) {
		const RangeTblEntry *rte = rt_fetch(lfirst_int(lc), stmt->rtable);
		if (rte->rtekind == RTE_RELATION && IsCatalogRelationOid(rte->relid)) {
			note_ddl();
			return;
		}
	}
}

// See catalog_generation.h.
void
catalog_generation_note_object_access(ObjectAccessType access)
{
	if (access != OAT_POST_CREATE && access != OAT_POST_ALTER && access != OAT_DROP)
		return;
	if (!generation_shm || holding || !IsTransactionState())
		return;
	note_ddl();
}

// See catalog_generation.h.
void
catalog_generation_request_shmem()
{
	RequestAddinShmemSpace(MAXALIGN(sizeof(GenerationShared)));
}

// See catalog_generation.h.
void
catalog_generation_startup()
{
	bool found = false;
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	generation_shm =
	    static_cast<GenerationShared *>(ShmemInitStruct("dxpriv catalog generation", sizeof(GenerationShared), &found));
	if (!found)
		pg_atomic_init_u64(&generation_shm->word, 0);
	LWLockRelease(AddinShmemInitLock);
}

// See catalog_generation.h.
void
catalog_generation_install()
{
	RegisterResourceReleaseCallback(on_resource_release, nullptr);
}

} // namespace dxpriv::pg
