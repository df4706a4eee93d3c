// Citus distributed tables (issue 13): the noisy linear aggregates of a rewritten query are split
// into exact sums that Citus pushes to the workers as PostgreSQL's own aggregates (sum(bigint) of
// each row's weight in grid units, grouped by the row's output group when the query is grouped)
// and a release on the coordinator (dx._release_count/_sum/_avg over the state dx._state_of or
// dx._collect build from those sums), which draws the noise once, in the backend that charged the
// statement. dx.mode/quantile/median count rows per candidate on the workers and draw on the
// coordinator (dx._em_collect).
//
// Citus keeps its distributed plan private (inside its CustomScan), so the parameters a release
// carries may not be visible in the plan PostgreSQL executes; the planner hook therefore records
// them from the query before Citus plans it and attaches them to the plan's CustomScan
// (custom_exprs, which Citus never evaluates), where the charge step and the analyst admission
// check read them. Statements of analysts then run as the table owner while the executor runs, so
// Citus's worker connections need no analyst privilege on shards.
#pragma once

extern "C" {
#include "postgres.h"
}


extern "C" {
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"
}

namespace dxpriv::pg {

// Before Citus plans `parse` (already analysed and rewritten by dxpriv): splits every noisy
// aggregate on a Citus table as above. Refuses, for analysts, post-processing with functions
// that are neither built-in nor dxpriv's (the statement runs as the owner). Returns the release
// expressions placed (NIL when the query reads no Citus table). Sets `prune` when the statement is
// one query level that kept shard-pruning conjuncts (shard_pruning.h), or reads a table Citus
// answers on one node (reference, single-shard, schema-based-sharding or one-shard tables): it must
// then be planned with Citus's router planner off, which would send the whole statement, releases
// included, to the shard's node; Citus's multi-shard planner sends the partial sums to that shard
// and leaves the release on the coordinator, which charged. Elsewhere the conjuncts are removed.
// Sets `route` for a statement of several levels on a table whose one shard is on a worker
// (distributed_route.h): planned with the router planner off until its first subplan is planned.
// The list returned also holds the shipments of large per-point tables (dx._store_point_table
// calls) and the range table entries of tables whose grouped sums are read as one Citus stage
// (distributed_stage.h); expose_releases places both in the finished plan.
List *split_distributed_releases(Query *parse, bool &prune, bool &route);

} // namespace dxpriv::pg
