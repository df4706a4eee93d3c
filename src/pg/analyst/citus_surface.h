// The Citus surface for analysts (functions, views, settings, grants); no effect in a database without Citus.
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

#include <map>

namespace dxpriv::pg {

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

} // namespace dxpriv::pg
