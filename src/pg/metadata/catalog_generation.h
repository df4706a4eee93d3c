// Cluster-wide catalog generation: a counter in shared memory that changes around every DDL
// transaction, so that an analysis shared between backends (planner/shared_memo.h) is keyed by a
// catalog state every backend agrees on.
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/nodes.h"
#include "nodes/plannodes.h"
#include "catalog/objectaccess.h"
}

namespace dxpriv::pg {

// One 64-bit word: the number of DDL transactions in flight (high 16 bits) and the generation
// (low 48 bits). A DDL transaction (a utility statement GetCommandLogLevel calls LOGSTMT_DDL:
// CREATE/ALTER/DROP, GRANT/REVOKE, roles, ...) adds one to both before its first DDL statement
// runs; at the end of its top-level transaction, after its invalidation messages are sent, it adds
// one to the generation and takes its one from in-flight (also when the backend exits holding it).
// Hence: a backend that reads a word with no DDL in flight, then accepts invalidation messages, then
// reads the same word again, has seen every catalog change committed before that word and no DDL
// was between the two reads.
uint64 catalog_generation_read();
// True when no DDL transaction was in flight at word (catalog_generation_read).
bool catalog_generation_quiet(uint64 word);
// True when this backend's current transaction has run DDL (it holds one in-flight count).
bool catalog_generation_holding();
// False when the shared word is not there (dxpriv not in shared_preload_libraries): nothing may be
// shared.
bool catalog_generation_available();

// The ProcessUtility hook, before the statement runs: notes a DDL statement (once per top-level
// transaction; REINDEX too, which GetCommandLogLevel does not call DDL). May ERROR only as
// GetCommandLogLevel may.
void catalog_generation_note_utility(Node *stmt);
// The ProcessUtility hook, right before the statement runs (nothing that may ERROR in between, then
// catalog_generation_leave_utility in a PG_FINALLY): a statement that runs while this transaction
// holds its count keeps the count until it returns, also across the transactions it commits inside
// itself (CREATE INDEX / REINDEX / DROP INDEX / DETACH PARTITION ... CONCURRENTLY, CLUSTER of several
// tables, ...): their later catalog changes are then in flight too, and the generation moves at the
// end of the transaction the statement returns in (or at its return when it returns outside any
// transaction). Returns whether it keeps the count. Never ERRORs.
bool catalog_generation_hold_utility();
// The ProcessUtility hook, after the statement, also when it failed (PG_FINALLY): held is what
// catalog_generation_hold_utility returned. Never ERRORs.
void catalog_generation_leave_utility(bool held);
// The ExecutorStart hook, before the plan runs: a statement that writes a system catalog with DML
// (a superuser's UPDATE pg_proc ...: no utility statement, yet the catalog changes) counts as a
// DDL transaction too. Never ERRORs.
void catalog_generation_note_executor(const PlannedStmt *stmt);
// The object access hook (after the hook installed before dxpriv's): an object created, altered or
// dropped by C code outside any utility statement or executor (lo_create / lo_import / lo_unlink,
// pg_import_system_collations, a temporary schema's objects dropped at session end, ...) counts as a
// DDL transaction too. Other access types (function execution, namespace search, TRUNCATE) are
// ignored. Never ERRORs.
void catalog_generation_note_object_access(ObjectAccessType access);

// Shared memory (shmem_request / shmem_startup hooks) and the end-of-transaction callback
// (install_hooks).
void catalog_generation_request_shmem();
void catalog_generation_startup();
void catalog_generation_install();

} // namespace dxpriv::pg
