// Analysis memo: a statement analysed before is not analysed again. The parsed query (constants,
// resolved tables and functions, but not source locations), the role, the policy version, the
// table's contents version, the settings and the catalog invalidation count form a key (shared
// between backends: the cluster's catalog generation instead of the count); a hit
// gives back the rewritten query of that analysis with fresh charge ids (the same release the
// analysis would build now), so a replay from the answer cache pays no analysis.
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

#include <string>

namespace dxpriv::pg {

// The keys of a parsed query in the per-backend memo (local; 0: the query is not memoized) and in
// the shared memo (planner/shared_memo.h), the latter completed only on a per-backend miss.
struct MemoKey {
	uint64 local = 0;
	std::string shared;      // the normalised text; on a miss the exact shared key (text, versions,
	                         // settings, generation, roles), or empty: not shared
	uint64 shared_hash = 0;  // the shared key's hash once completed (0: not completed or not shared)
	uint64 generation = 0;   // the catalog generation word it was completed under
	uint64 parts[5] = {};    // policy and contents versions, settings hash, roles, database
	Oid relid = InvalidOid;
};

// The memo key of a parsed query, local 0 when the query is not memoized (not a plain SELECT over
// one table, parameters, mutable functions, subqueries, dx.explain running, versions unknown, ...).
// The shared key (completed by analysis_memo_replay on a per-backend miss) replaces the backend's
// invalidation count by the cluster's catalog generation (metadata/catalog_generation.h) and is
// empty whenever a DDL transaction is in flight, this transaction has written anything or run
// DDL, this is a standby, this session has temporary objects, or the query calls a function of a
// temporary schema or reads a temporary table. Call before the analysis rewrites q.
MemoKey analysis_memo_key(Query *q);

// Notes the dxpriv.* settings, so that the key's hash of the settings reads no other setting's name
// (only their values and sources): called by _PG_init once every dxpriv.* setting is defined (none
// is defined or replaced after it: the prefix is reserved). Not calling it is correct, only slower.
void analysis_memo_note_settings();

// Replaces q by the memoized analysis under key (fresh charge, epsilon and allocation ids; the
// release descriptions registered again): from this backend's memo, else (the shared key
// completed in key) from the shared memo, then also kept in this backend's; false when there is
// none. Call right after analysis_memo_key.
bool analysis_memo_replay(MemoKey &key, Query *q);

// Memoizes the analysis of q (just rewritten) under key when it is a local release of internal
// aggregates only, in this backend and, when the catalog generation has not moved since the key
// was computed, in the shared memo; otherwise does nothing.
void analysis_memo_store(MemoKey &key, Query *q);

} // namespace dxpriv::pg
