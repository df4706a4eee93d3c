// Release nesting: joins with public tables, plain subqueries and post-processing wrappers around releases.
// Part of the analysis stage (planner/analyzer.h dispatches to it); names live in dxpriv::pg::analysis.
#pragma once

#include "pg/settings.h"
#include "pg/metadata/extension_objects.h"
#include "pg/metadata/policy.h"
#include "pg/analyst/analyst_guard.h"
#include "pg/planner/em_rewrite.h"
#include "pg/planner/group_keys.h"
#include "pg/planner/join_cells.h"
#include "pg/planner/public_joins.h"
#include "pg/planner/universe_eval.h"
#include "pg/executor/release_log.h"
#include "core/allocation.h"
#include "core/linear_query.h"
#include "core/unit_bound.h"
#include "core/work_estimate.h"
#include "core/sensitivity.h"
#include "core/release_interval.h"
#include "core/approximate_dp.h"
#include "pg/planner/release_analysis.h"

extern "C" {
#include "nodes/parsenodes.h"
}

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dxpriv::pg::analysis {

// What take_join did with a query: no join with a protected table; the join taken (the query reads
// the protected table alone, its public rows in `rows`); or deferred, for a query with bound
// parameters: checked now on a copy, left as it is, and taken with its values when planned
// (analyze_bound_query), so each execution reads the public tables at its own analysis.
enum class JoinTake { None, Taken, Deferred };

JoinTake take_join(Query *q, const ExtensionObjects &ext, bool analyst, PublicRows &rows);

// SQLAlchemy's query(P).filter(...).count() and other builders aggregate over a subquery of rows:
// SELECT count(*) FROM (SELECT * FROM t WHERE c) AS anon_1. When the subquery only filters and
// projects one table, or a join of tables without volatile output columns (dbplyr's inner_join
// before summarise), with no aggregate, grouping, DISTINCT, LIMIT, set operation, sublink, SRF,
// window, LATERAL or TABLESAMPLE, it is merged into the aggregate query, as PostgreSQL's planner
// would pull it up: SELECT count(*) FROM t WHERE c. Returns true when q was changed.
bool flatten_plain_subquery(Query *q);

bool reads_or_releases(Node *node, void *ctx);

// Whether q's own FROM reads a protected table (analysts) or q has dx aggregates (everyone).
bool is_release_level(Query *q, const ExtensionObjects &ext, const AnalystContext *ac);

// Analyses and rewrites one release nested in a wrapper, like a top-level dx query.
void rewrite_nested_release(Query *sub, const ExtensionObjects &ext, const AnalystContext *ac);

// Rewrites the releases nested in q's FROM subqueries, CTEs and set-operation branches (the outer
// levels only post-process their answers: ORDER BY, LIMIT, window functions, % of total, joins with
// released rows); CTEs holding a release are materialised, so each release runs once. Returns the
// number of releases found; refuses releases reachable through sublinks or LATERAL.
int rewrite_wrapped_releases(Query *q, const ExtensionObjects &ext, const AnalystContext *ac);

} // namespace dxpriv::pg::analysis
