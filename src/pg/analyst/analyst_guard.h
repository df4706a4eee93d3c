// Analyst enforcement: no raw-data path, no statistics side channels, plain aggregates rewritten.
#pragma once

extern "C" {
#include "postgres.h"
}

#include "pg/analyst/analyst_context.h"
#include "pg/analyst/executor_admission.h"
#include "pg/analyst/plain_aggregates.h"
#include "pg/analyst/query_admission.h"
#include "pg/analyst/side_channels.h"

extern "C" {
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"
}

#include <map>
#include <string>
#include <vector>

namespace dxpriv::pg {


// Refuses an analyst's reference to a child of a protected table that has no policy of its own
// (query the parent instead), and a read through a parent that would take in the rows of a
// descendant protected with its own policy.
void check_inheritance_refs(Query *q, const AnalystContext &ac);

// ---- refusals that name what was refused and what to do instead (refusals.cpp) ----

// The relation's name as written in SQL (quoted only when needed), "<table>" when unknown; for
// the examples of hints.
std::string relation_for_hint(Oid relid);
// Hint for an analyst's refused read of relid: an example aggregate on that table (or on the
// protected table whose policy covers it) over one of its declared columns.
std::string analyst_hint(Oid relid);
// The first protected relation (at any depth) that q reads, or InvalidOid.
Oid first_protected_ref(Query *q, const AnalystContext &ac);
// Raises the refusal for an analyst's statement that reads a protected table but holds no dx
// aggregate after rewriting: names the statement kind, join/LATERAL, the aggregate or the raw read.
[[noreturn]] void refuse_unaggregated_read(Query *q, const AnalystContext &ac);
// Refuses columns used outside aggregates that are not GROUP BY keys (PostgreSQL's functional
// dependency on a primary key lets GROUP BY id show any column of the row) and GROUP BY ().
void check_grouped_references(Query *q);

// Utility statements of analysts: EXPLAIN and statements that store a result (CREATE TABLE AS,
// SELECT INTO, CREATE MATERIALIZED VIEW, also over EXECUTE of a prepared statement) are refused
// when what they plan reads a protected table. Returns the scope to pass to leave_analyst_utility
// (the executor refuses protected reads while such a statement runs, whatever runs it).
int enter_analyst_utility(Node *stmt);
void leave_analyst_utility(int scope);
// The refusal of a utility statement (EXPLAIN, CREATE TABLE AS...) whose query reads relid.
[[noreturn]] void refuse_analyst_utility(Node *stmt, Oid relid);
// Executor side: raises when an analyst's plan reads relid (protected) while an analyst's EXPLAIN or
// result-storing statement runs, or while client_min_messages lets LOG/DEBUG messages through.
void refuse_protected_read_in_utility(Oid relid);
// Remembers whether the session's last analysed or started statement was an analyst's.
void note_analyst_session(bool analyst);
// Keeps LOG and DEBUG messages (auto_explain plans, executor statistics) away from analysts'
// clients whatever client_min_messages says, and auto_explain's plans at any level the log hook
// sees (warning). Stage "log" (emit_log_hook, before any earlier hook); never raises.
void analyst_filter_log(ErrorData *edata);
// Raises for an analyst's statement while auto_explain (loaded by a superuser) is active at a level
// sent to the client that the log hook cannot stop (info, notice; warning when log_min_messages is
// above it).
void refuse_client_auto_explain();

// ---- the Citus surface (citus_surface.cpp); no effect in a database without Citus ----

// Raises for a Citus function analysts may not call: run_command_on_* and other functions that run
// SQL on nodes, sizes and statistics; in queries (in_plan false) also Citus's internal transport
// (read_intermediate_result*, worker_partial_agg, coord_combine_agg), which Citus's own plans use.
// Citus's internal transport is refused only in the text the client sent (Citus analyses the queries
// it generates as the current user); set by the parse-analysis hook, which gets the previous value
// back to restore it.
void check_citus_function(Oid fn, bool in_plan);
bool set_client_statement_text(bool client);
// Raises for Citus's statistics views and pg_dist_placement.shardlength.
void check_citus_relation(RangeTblEntry *rte);
// Adds citus_relation_size, citus_table_size, citus_total_relation_size and citus_shard_sizes ->
// their dx.analyst_citus_* counterparts (NULL sizes for protected rows) to a swap map.
void add_citus_size_swaps(std::map<Oid, Oid> &swaps);
// The same swaps after view expansion (the planner; only for analysts' statements): citus_tables and citus_shards
// call citus_shard_sizes().
void substitute_citus_sizes(Query *q);
// Raises when the session shows shards in pg_class (citus.override_table_visibility = off,
// citus.show_shards_for_app_name_prefixes set), for an analyst's statement.
void check_citus_settings();
// Raises for an analyst's SET of those settings.
void check_citus_set(VariableSetStmt *stmt);
// Raises for a GRANT on a protected Citus table to PUBLIC or to a role whose privileges an analyst
// has: Citus copies grants onto the shards.
void check_citus_grant(GrantStmt *stmt);



// Calls dx.<helper>(arg) -> boolean, one of the SECURITY DEFINER helpers that read dx's catalog
// (dx._holds_protected_rows, dx._protected_rows_in); a NULL argument is passed as NULL, and a NULL
// answer counts as true (unknown: treated as protected). Defined in catalog_sizes.cpp.
bool dx_helper(const char *helper, Oid arg, bool arg_null);


} // namespace dxpriv::pg
