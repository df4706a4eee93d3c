// Statement context: what charging decided for the running statements, read by execution and final functions.
//
// One module owns the backend-local state that the stages after analysis share, instead of each
// stage keeping its own store and the later ones calling back into the earlier ones:
//   * charge (ExecutorStart) writes: the charge ids it paid (mark_paid), which running statement
//     released which (charge id, table) (add_charge), the parameters of partial aggregates' final
//     phase (set_final_params);
//   * elevated execution writes the owner a statement runs as (set_owner);
//   * final functions read paid() and final_params(); admission reads part_of_running().
// Parallel workers see the leader's paid ids through dxpriv.charged_releases (publish_to_workers).
//
// Lifetime (no palloc: plain C++ containers in the backend's heap, so a PostgreSQL error cannot
// leave a dangling pointer into a freed memory context):
//   * per running statement (keyed by its QueryDesc): from ExecutorStart (forget_charges, then
//     add_charge / set_owner) to ExecutorEnd (forget_charges, take_owner); a statement that fails is
//     forgotten at subtransaction abort (reset_subtransaction) or transaction end;
//   * per transaction (paid ids, final-phase parameters): until the top-level transaction ends,
//     commit or abort (reset_transaction, called by hooks.cpp's transaction callback), so that a
//     cursor FETCHed later in the transaction still releases what its statement paid.
#pragma once

extern "C" {
#include "postgres.h"
#include "executor/execdesc.h"
}

#include <vector>

namespace dxpriv::pg {
struct NoiseParams;
}

namespace dxpriv::pg::statement {

// ---- per transaction ----

// Records charge_id as paid in this transaction (the ledger committed it, or a cached answer
// replays it).
void mark_paid(int64 charge_id);
// True when charge_id was paid in this transaction; in a parallel worker, when the leader
// published it. Final functions refuse to release otherwise.
bool paid(int64 charge_id);
// Parameters of a partial aggregate whose final phase runs in another plan node (plan, its
// finalize Agg's plan_node_id, aggno); final_params returns false when none was recorded.
void set_final_params(const void *plan, int final_node, int aggno, const NoiseParams &params);
bool final_params(const void *plan, int final_node, int aggno, NoiseParams &out);

// ---- per running statement ----

// Forgets the charges and the executor-call count of qd (ExecutorStart: a QueryDesc reused at the
// address of one that failed earlier; ExecutorEnd).
void forget_charges(const QueryDesc *qd);
// qd releases charge_id on table relid (charged or about to be, by this statement).
void add_charge(const QueryDesc *qd, int64 charge_id, Oid relid);
// True when every id is released by some running statement and paid: the statement is part of
// one that already paid (Citus's local tasks).
bool all_running_and_paid(const std::vector<int64> &charge_ids);
// True when a statement now inside an executor call released and paid a charge on relid.
bool part_of_running(Oid relid);
// Brackets one ExecutorStart/Run/Finish call of qd (see part_of_running).
void enter(const QueryDesc *qd);
void leave(const QueryDesc *qd);
// The owner qd runs as (InvalidOid: the current user). take_owner also forgets it.
void set_owner(const QueryDesc *qd, Oid owner);
void forget_owner(const QueryDesc *qd);
Oid owner(const QueryDesc *qd);
Oid take_owner(const QueryDesc *qd);

// Publishes the paid ids of the running statements to the parallel workers they launch
// (dxpriv.charged_releases, transaction-local). Raises on a PostgreSQL error (as UserError/PgError).
void publish_to_workers();
// Defines dxpriv.charged_releases (internal; superuser-only); once, from _PG_init.
void define_gucs();

// ---- resets (hooks.cpp) ----
void reset_transaction();    // top-level or parallel transaction end: everything above
void reset_subtransaction(); // subtransaction abort: the running statements' charges and counts
void reset_owners();         // top-level transaction end: the owners

} // namespace dxpriv::pg::statement
