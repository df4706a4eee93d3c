// Statements of several query levels on a Citus table whose only shard is on a worker (issue 27):
// planned so that the worker computes only the native sums and the release runs on the coordinator.
//
// Citus's router planner would send such a statement whole to the shard's node, releases included,
// where nothing was charged. Instead the statement is planned with the router planner off, and every
// query level below the top that reads the table gets OFFSET 0 (a no-op for PostgreSQL), which Citus's
// subquery pushdown cannot push down: Citus's recursive planner plans each such level as a
// distributed subplan (through the planner hook again), whose result reaches the coordinator as an
// intermediate result (the lowest aggregating level above it, when there is one below the top, so
// that the worker returns sums rather than rows). The first such nested planning turns the router planner back on for the rest of
// the statement's planning (elevated/sealed_execution.h, routed_router_on), so the final query, which
// now reads only intermediate results, is planned by the router planner on the coordinator and runs
// there through Citus's local execution, in the backend that charged. A nested level that reads the
// table and holds a release (a one-level query in a wrapper, a bounded source under its release) is
// planned with the router planner off, by Citus's multi-shard planner: its sums go to the shard's
// node, its release stays in the coordinator's combine step. Should a release ever reach a worker, it refuses there
// (nothing was charged in that backend): a routing mistake costs a charge, never a release.
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

#include <set>

namespace dxpriv::pg {

// Adds OFFSET 0, for every query level of `split` that reads one of `tables` directly, to its lowest
// enclosing level below the top that aggregates (aggregates, GROUP BY, LIMIT), or to the reading level
// itself when that is the top: the worker's subplan then returns sums rather than rows (a privacy
// unit's bounding included) wherever the shape allows. (A level with its own LIMIT or OFFSET keeps it:
// Citus plans it as a subplan as well.) Returns false, changing nothing, when the top level itself
// reads one of them (it cannot become a subplan).
bool mark_routed_levels(Query *split, const std::set<Oid> &tables);

// For a query planned while a routed statement's planning is active (a subplan Citus's recursive
// planner plans): true when it reads a Citus table (at any of its levels) and holds a dx release, so
// that it must be planned with the router planner off (see above); false when the router planner may
// plan it (it reads only intermediate results, or holds no release).
bool routed_subplan_needs_multi_shard(Query *q);

// Raises (0A000, nothing charged) for a routed statement that Citus planned without any subplan: its
// releases would be sent to the shard's node.
[[noreturn]] void refuse_unrouted_statement();

} // namespace dxpriv::pg
