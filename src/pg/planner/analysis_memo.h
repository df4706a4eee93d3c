// Analysis memo: a statement analysed before is not analysed again. The parsed query (constants,
// resolved tables and functions, but not source locations), the role, the policy version, the
// table's contents version, the settings and the catalog invalidation count form a key; a hit
// gives back the rewritten query of that analysis with fresh charge ids (the same release the
// analysis would build now), so a replay from the answer cache pays no analysis.
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

namespace dxpriv::pg {

// The memo key of a parsed query, or 0 when the query is not memoized (not a plain SELECT over one
// table, parameters, mutable functions, subqueries, dx.explain running, versions unknown, ...).
// Call before the analysis rewrites q.
uint64 analysis_memo_key(Query *q);

// Replaces q by the memoized analysis under key (fresh charge, epsilon and allocation ids; the
// release descriptions registered again); false when there is none.
bool analysis_memo_replay(uint64 key, Query *q);

// Memoizes the analysis of q (just rewritten) under key when it is a local release of internal
// aggregates only; otherwise does nothing.
void analysis_memo_store(uint64 key, Query *q);

} // namespace dxpriv::pg
