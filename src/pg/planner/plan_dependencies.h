// What an analysis evaluated and removed from the statement (functions, domain types): a change of
// one of them re-analyses this backend's cached plans.
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

#include <cstdint>
#include <utility>
#include <vector>

namespace dxpriv::pg {

// A plan-cache dependency: (syscache id, hash of the object's key), as PostgreSQL's PlanInvalItem.
using PlanDependency = std::pair<int, uint32>;

// The dependencies PostgreSQL's plan cache takes from a parsed query (extract_query_dependencies:
// user-defined functions, those of operators and aggregates included, by PROCOID), and the domain
// types it coerces to (TYPEOID; the plan cache leaves those out), sorted and unique; empty for a
// statement no analysis rewrites (no aggregate at its top level, no sublink, CTE, set operation or
// subquery in FROM, not a utility statement), without walking it. A PostgreSQL call: may ERROR.
std::vector<PlanDependency> plan_dependencies(Query *q);

// After the analysis rewrote q (before: plan_dependencies of q as parsed): the dependencies it no
// longer holds (a function evaluated on the declared points, now a per-point table) are kept, and an
// invalidation of one of them (CREATE OR REPLACE FUNCTION, ALTER DOMAIN, in any session or in this
// transaction) marks every cached plan of this backend for a new parse analysis (ResetPlanCache):
// a prepared statement, or a PL/pgSQL statement, analysed before is analysed again with the new
// definition instead of keeping its per-point tables. (The plan cache's own dependencies are
// computed from the rewritten query, which no longer names them; a dependency of the plan alone
// would re-plan the rewritten query, not re-analyse it.) A PostgreSQL call: may ERROR.
void keep_lost_dependencies(const std::vector<PlanDependency> &before, Query *q);

// The values that may change between transactions a parsed query evaluates: how many (calls of
// functions that are not immutable, dxpriv's own left out: now(), a STABLE function reading a
// table; current_date and the like; nextval) and which functions; none for a statement no analysis
// rewrites, without walking it. A PostgreSQL call.
struct MutableCalls {
	int count = 0;
	std::vector<Oid> funcs;
};
MutableCalls mutable_evaluations(Query *q);

// After the analysis rewrote q (before: mutable_evaluations of q as parsed): when the analysis
// evaluated some of them on the declared points (fewer calls of those functions are left, counted
// by OID without catalog lookups), the per-point tables hold this
// transaction's values, so every cached plan of this backend is marked for a new parse analysis at
// the end of the transaction (ResetPlanCache): a prepared statement over `now()::date - 7` analysed
// yesterday is analysed again today, not answered with yesterday's dates. (Within one transaction
// now() and current_date do not change.) A PostgreSQL call: may ERROR.
void reanalyse_when_mutable_lost(const MutableCalls &before, Query *q);

} // namespace dxpriv::pg
