// Where a Citus plan's releases are: exposed to the charge step, and the owner an analyst's
// distributed statement runs as.
#pragma once

#include "pg/metadata/extension_objects.h"

extern "C" {
#include "nodes/plannodes.h"
}

#include <set>

namespace dxpriv::pg {

namespace dist {

// The releases found in an expression or a plan: their charge ids, the first release's table and
// the plan's first CustomScan.
struct ReleaseScan {
	const ExtensionObjects *ext;
	std::set<int64> charge_ids;
	Oid relid = InvalidOid;
	CustomScan *custom = nullptr; // the first CustomScan met
};

// Walker filling a ReleaseScan (ctx) from release parameters (dx._release_*, dx._em_collect).
bool release_walker(Node *node, void *ctx);
// Every release of a planned statement (custom_exprs of CustomScans included).
ReleaseScan scan_statement(const ExtensionObjects &ext, PlannedStmt *stmt);
// True when the plan reads grouped sums as one Citus stage (a scan of dx._grouped_partials,
// distributed_stage.h).
bool reads_one_stage(PlannedStmt *stmt, const ExtensionObjects &ext);

} // namespace dist

// After planning: attaches every release of `releases` whose parameters the plan does not show to
// the plan's first CustomScan; errors (nothing runs, nothing is charged) when there is none. The
// range table entries in `releases` (tables read as one Citus stage) go into the plan's range table
// (attach_stage_tables); its shipments, in a plan without a Citus scan, travel with that stage.
void expose_releases(PlannedStmt *stmt, List *releases);

// Under EXPLAIN ANALYZE (which runs and charges its statement): refuses, before the charge, a plan
// whose releases sit inside Citus's private plan (a statement of several query levels: Citus runs it
// over a new connection to this node, where its charge is not known). Also for a prepared statement
// planned earlier (EXPLAIN ANALYZE EXECUTE). No-op otherwise.
void refuse_inner_releases_under_explain_analyze(PlannedStmt *stmt);
// The refusal itself (ERRCODE_FEATURE_NOT_SUPPORTED, with a hint); nothing was charged.
[[noreturn]] void refuse_distributed_explain_analyze();

// The owner of the Citus table a release in this plan reads, when the current role is an analyst
// (the statement then runs as that owner after it is charged); InvalidOid otherwise.
Oid distributed_run_as(PlannedStmt *stmt);

} // namespace dxpriv::pg
