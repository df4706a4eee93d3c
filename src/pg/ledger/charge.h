// Charging statements' releases to the ledger (charge.cpp), and the plan checks the planner asks of it.
#pragma once
#include "pg/contract/noise_params.h"

extern "C" {
#include "postgres.h"
#include "executor/execdesc.h"
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"
}

#include <string>
#include <vector>

namespace dxpriv::pg {

// Stage "charge" (ExecutorStart, after admission): pays every allocation the plan's noisy
// aggregates belong to, through the ledger worker, and records the paid charge ids for the final
// functions. Raises (and nothing is released) when the budget is exhausted or the plan's releases
// do not match their allocations. What it paid goes into the statement context
// (statement/statement_context.h). Callers skip it for EXPLAIN-only starts, parallel workers,
// dxpriv's own statements and the ledger worker.
void charge_statement(QueryDesc *qd);

// Charges epsilon on table relid to the current role for a release made by a function rather than
// a planned statement (dx.release_mwem, dx.release_smalldb, median sessions), through the same
// ledger worker as statements: committed durably outside the caller's transaction before this
// returns; raises the usual errors (no budget, exhausted, over the per-query cap, ledger down)
// and charges nothing then.
void charge_release(Oid relid, double epsilon, const std::string &mechanism, const std::vector<double> &scales,
                    const std::string &fingerprint, const std::string &query_text);
// True when a final function of a noisy aggregate of the plan may run in a parallel worker (a whole
// aggregate under a Gather: a single-copy Gather, a Parallel Append of whole aggregates). The
// planner hook then plans the statement again without those (parameters.cpp), so that the leader
// releases, logs (dx.last_release) and caches every answer.
bool releases_in_workers(PlannedStmt *stmt);
// True when q (or a query nested in it) holds a rewritten noisy aggregate.
bool holds_noisy_aggregates(Query *q);

} // namespace dxpriv::pg
