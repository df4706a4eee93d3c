// Charging statements' releases to the ledger, and what later stages ask about them (charge.cpp).
#pragma once
#include "pg/contract/noise_params.h"

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"
}

#include <string>
#include <vector>

namespace dxpriv::pg {

// Installs the ExecutorStart/End hooks that charge statements (called once from _PG_init).
void install_charging_hooks();
// Charges epsilon on table relid to the current role for a release made by a function rather than
// a planned statement (dx.release_mwem, dx.release_smalldb, median sessions), through the same
// ledger worker as statements: committed durably outside the caller's transaction before this
// returns; raises the usual errors (no budget, exhausted, over the per-query cap, ledger down)
// and charges nothing then.
void charge_release(Oid relid, double epsilon, const std::string &mechanism, const std::vector<double> &scales,
                    const std::string &fingerprint, const std::string &query_text);
// Registers that charge_id was paid for in this backend; final functions refuse unpaid ones.
void mark_charged(int64 charge_id);
// True while a statement that was charged for releases of relid executes (in this backend), that
// is while its executor is inside ExecutorStart, ExecutorRun or ExecutorFinish: Citus runs parts of
// a distributed statement as nested statements, which that charge covers. A cursor left open
// between FETCHes covers nothing (the statements run meanwhile are the analyst's own).
bool released_by_running_statement(Oid relid);
bool was_charged(int64 charge_id);
// True when a final function of a noisy aggregate of the plan may run in a parallel worker (a whole
// aggregate under a Gather: a single-copy Gather, a Parallel Append of whole aggregates). The
// planner hook then plans the statement again without those (parameters.cpp), so that the leader
// releases, logs (dx.last_release) and caches every answer.
bool releases_in_workers(PlannedStmt *stmt);
// True when q (or a query nested in it) holds a rewritten noisy aggregate.
bool holds_noisy_aggregates(Query *q);

struct NoiseParams;
// Parameters of aggregate number aggno of the finalize-phase Agg node final_node (its
// plan_node_id) of a statement being executed (recorded when it was charged, from the partial
// Agg below that node). A finalize-phase Aggref has lost its constant arguments, so a final
// function that saw no row (NULL state) finds them here; aggregate numbers repeat in every
// branch of a UNION ALL (the grouping sets of one statement), the node tells them apart. Returns
// false when unknown.
bool lookup_noise_params(const void *planned_stmt, int final_node, int aggno, NoiseParams &out);

} // namespace dxpriv::pg
