// Statement context: what charging decided for the running statements, read by execution and final functions.
//
// One module owns the backend-local state that the stages after analysis share, instead of each
// stage keeping its own store and the later ones calling back into the earlier ones:
//   * charge (ExecutorStart) writes: the charge ids it paid (mark_paid), which running statement
//     released which (charge id, table) (add_charge), the parameters of partial aggregates' final
//     phase (set_final_params);
//   * elevated execution writes the owner a statement runs as (set_owner);
//   * the answer cache (ledger/answer_cache.cpp) keeps, per charge id, what the charge planned
//     (replay cached answers, or record the fresh ones under the cache key) and the answers drawn
//     in the current execution; the release log (executor/release_log.cpp) keeps which charged
//     statement a charge id belongs to, and the descriptions analysis registered (charge_state,
//     cache_recording, describe/described below);
//   * final functions read paid() and final_params(); admission reads part_of_running().
// Parallel workers see the leader's paid ids through dxpriv.charged_releases (publish_to_workers).
//
// What this context does NOT carry: what analysis decided for planning and execution (cells,
// noise parameters, charge ids, the cache key). That stays in the parameter array stamped into
// the rewritten query (contract/noise_params.h), because it must survive what a backend-local
// store does not: a plan cached by PREPARE or by a PL/pgSQL function is planned once and executed
// in later transactions, a generic plan is re-planned from the stored query tree, parallel workers
// receive the plan serialised, and Citus copies, deparses and re-plans the query (and sends it to
// other nodes); a Const inside the tree travels with it through all of them. This context is keyed
// by the charge ids read back from that array.
//
// Lifetime (no palloc: plain C++ containers in the backend's heap, so a PostgreSQL error cannot
// leave a dangling pointer into a freed memory context):
//   * per running statement (keyed by its QueryDesc): from ExecutorStart (forget_charges, then
//     add_charge / set_owner) to ExecutorEnd (forget_charges, take_owner); a statement that fails is
//     forgotten at subtransaction abort (reset_subtransaction) or transaction end;
//   * per transaction (paid ids, final-phase parameters, the per-charge-id state of the answer cache
//     and the release log, the cache recordings): until the top-level (or parallel) transaction
//     ends, commit or abort (reset_transaction, called by hooks.cpp's transaction callback), so that
//     a cursor FETCHed later in the transaction still releases what its statement paid;
//   * per session, bounded (the release descriptions analysis registers): a prepared statement is
//     analysed once and executed in later transactions, so they are kept for the last
//     kMaxDescribedStatements analysed statements (the oldest dropped first), never reset.
#pragma once

extern "C" {
#include "postgres.h"
#include "executor/execdesc.h"
}

#include <cstddef>
#include <map>
#include <memory>
#include <utility>
#include <vector>

namespace dxpriv::pg {
struct NoiseParams;
struct LoggedStatement;    // executor/release_log.cpp: a charged statement whose releases the log shows
struct DescribedStatement; // executor/release_log.cpp: what analysis described of a statement's aggregates
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

// ---- per charge id (per transaction): the answer cache's and the release log's state ----

// An answer released in the current execution of a charge id's aggregate (answer_cache.h).
struct ReleasedAnswer {
	double answer;
	double parts[2]; // an average's noisy sum and count
	bool has_parts;
};

// What the stages after the charge keep for one charge id. Plain data; the modules named give it
// its meaning (the statement context only holds it and frees it at transaction end).
struct ChargeState {
	// answer cache: the cached answers it replays (replays: set by the charge)
	bool replays = false;
	std::vector<double> replay_answers, replay_parts;
	size_t replay_offset = 0; // of the aggregate's group 0 in replay_answers
	// answer cache: where its fresh answers go in the recording of record_key (records: set by the charge)
	bool records = false;
	uint64 record_key = 0;
	size_t record_offset = 0;
	// answer cache: its answers released in the current execution, by group
	std::map<int, ReleasedAnswer> released;
	// release log: the charged statement it belongs to (nullptr: none in this transaction)
	std::shared_ptr<LoggedStatement> logged;
};

// The state of charge_id, created empty on first use.
ChargeState &charge_state(int64 charge_id);
// The state of charge_id, or nullptr when none was created in this transaction.
ChargeState *find_charge_state(int64 charge_id);

// The answers of one statement being collected for the answer cache under its cache key.
struct CacheRecording {
	uint64 key = 0;
	Oid role = InvalidOid;
	Oid relid = InvalidOid;
	int expected = 0; // answers of the statement
	std::vector<double> answers;
	std::vector<double> parts;
	std::vector<char> filled;
	int filled_count = 0;
};
// The recording of key, created empty (answers.empty()) on first use; nullptr from
// find_cache_recording when none is open; forget_cache_recording closes it.
CacheRecording &cache_recording(uint64 key);
CacheRecording *find_cache_recording(uint64 key);
void forget_cache_recording(uint64 key);

// ---- per session, bounded: release descriptions registered at analysis ----

inline constexpr size_t kMaxDescribedStatements = 256; // analysed statements whose descriptions are kept

// Registers d as the description of the statement whose aggregates have charge_ids (aggregate i
// of d has charge_ids[i]); drops the oldest registrations beyond kMaxDescribedStatements.
void describe(const std::vector<int64> &charge_ids, std::shared_ptr<const DescribedStatement> d);
// The registration holding charge_id and the position of charge_id in it ({nullptr, 0}: none kept).
std::pair<std::shared_ptr<const DescribedStatement>, size_t> described(int64 charge_id);

// ---- resets (hooks.cpp) ----
void reset_transaction();    // top-level or parallel transaction end: everything above but the descriptions
void reset_subtransaction(); // subtransaction abort: the running statements' charges and counts
void reset_owners();         // top-level transaction end: the owners

} // namespace dxpriv::pg::statement
