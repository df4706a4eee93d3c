// Bound parameters ($1, ...) of queries with dx aggregates: JDBC PreparedStatement, psycopg 3's
// server-side binding, node-postgres/knex, PREPARE/EXECUTE and PL/pgSQL variables.
//
// A query with parameters cannot be analysed when it is parsed (its sensitivity depends on the
// values), so the analyzer only checks its shape then and leaves its dx aggregates as markers,
// which refuse to run. The planner hook below analyses and rewrites it when it is planned with its
// bound values: every execution of a prepared statement gets a custom plan, analysed, charged and
// noised with its own values. A generic plan (planned without values) keeps the markers and is
// given a prohibitive cost, so PostgreSQL's plan cache never prefers it; if it is forced
// (plan_cache_mode = force_generic_plan) it refuses to run.
#pragma once

extern "C" {
#include "postgres.h"
}


extern "C" {
#include "nodes/parsenodes.h"
#include "nodes/params.h"
#include "nodes/plannodes.h"
}

namespace dxpriv::pg {

// Analyses and rewrites a query whose parameters were replaced by their values (as the
// post-parse-analysis hook does for a query without parameters), including the analyst checks.
// Defined in analyzer.cpp.
void analyze_bound_query(Query *q);

// The planner that runs after dxpriv's stage: an earlier planner_hook or standard_planner.
using PlannerStage = PlannedStmt *(*)(Query *parse, const char *query_string, int cursor_options,
                                      ParamListInfo params);

// Stage "plan" (planner_hook): analyses a statement with bound parameters, splits releases on
// Citus tables, plans with `next` under the sealed settings where needed (twice when a noisy final
// function would run in a parallel worker) and exposes the releases to Citus. Raises on refusal.
PlannedStmt *plan_statement(Query *parse, const char *query_string, int cursor_options, ParamListInfo params,
                            PlannerStage next);

} // namespace dxpriv::pg
