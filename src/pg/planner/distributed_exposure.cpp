// Where a Citus plan's releases are: exposing them to the charge step and finding the owner to run as.
#include "pg/planner/distributed_exposure.h"

#include "pg/analyst/analyst_context.h"
#include "pg/metadata/citus_tables.h"
#include "pg/analyst/analyst_guard.h"
#include "pg/contract/param_consts.h"
#include "pg/contract/noise_params.h"
#include "pg/guard.h"
#include "pg/plan_walk.h"
#include "pg/planner/analyzer.h"
#include "pg/planner/distributed_stage.h"
#include "pg/metadata/extension_objects.h"

#include "core/linear_query.h"

extern "C" {
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_proc.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/fmgroids.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

#include <limits>
#include <map>
#include <optional>
#include <vector>
#include <set>
#include <string>

namespace dxpriv::pg {

namespace dist {

bool
release_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *s = static_cast<ReleaseScan *>(ctx);
	Const *k = release_params_const(node, *s->ext);
	if (!k && IsA(node, Aggref) && castNode(Aggref, node)->aggfnoid == s->ext->em_collect)
		k = aggref_params_const(castNode(Aggref, node));
	if (k) {
		NoiseParams p = parse_noise_params(DatumGetArrayTypeP(k->constvalue));
		s->charge_ids.insert(p.charge_id);
		if (!OidIsValid(s->relid))
			s->relid = p.relid;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(release_walker), ctx);
}

namespace {

// True when plan (or a plan below it) scans dx._grouped_partials.
bool
plan_reads_one_stage(Plan *plan, const ExtensionObjects &ext)
{
	if (!plan)
		return false;
	if (IsA(plan, FunctionScan)) {
		ListCell *fc;
		foreach (fc, castNode(FunctionScan, plan)->functions) {
			Node *f = lfirst_node(RangeTblFunction, fc)->funcexpr;
			if (f && IsA(f, FuncExpr) && castNode(FuncExpr, f)->funcid == ext.grouped_partials)
				return true;
		}
	}
	if (plan_reads_one_stage(plan->lefttree, ext) || plan_reads_one_stage(plan->righttree, ext))
		return true;
	ListCell *lc;
	foreach (lc, extra_child_plans(plan))
		if (plan_reads_one_stage((Plan *) lfirst(lc), ext))
			return true;
	return false;
}

} // namespace

bool
reads_one_stage(PlannedStmt *stmt, const ExtensionObjects &ext)
{
	if (!OidIsValid(ext.grouped_partials))
		return false;
	if (plan_reads_one_stage(stmt->planTree, ext))
		return true;
	ListCell *lc;
	foreach (lc, stmt->subplans)
		if (plan_reads_one_stage((Plan *) lfirst(lc), ext))
			return true;
	return false;
}

ReleaseScan
scan_statement(const ExtensionObjects &ext, PlannedStmt *stmt)
{
	ReleaseScan s{&ext, {}};
	walk_plan_expressions(
	    stmt, [&](Node *n) { release_walker(n, &s); }, [&](CustomScan *cs) { s.custom = cs; });
	return s;
}

} // namespace dist

using namespace dist;

// See distributed.h.
void
expose_releases(PlannedStmt *stmt, List *releases)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext || releases == NIL)
		return;
	ReleaseScan seen = scan_statement(*ext, stmt);
	List *missing = NIL, *stage_tables = NIL;
	ListCell *lc;
	foreach (lc, releases)
		if (IsA(lfirst(lc), RangeTblEntry)) // a table read as one Citus stage (distributed_stage.h)
			stage_tables = lappend(stage_tables, lfirst(lc));
	attach_stage_tables(stmt, stage_tables);
	foreach (lc, releases) {
		if (IsA(lfirst(lc), RangeTblEntry))
			continue;
		// tables to ship: only here, or, in a plan with no Citus scan, by the one-stage function whose
		// task reads them (distributed_stage.h: it carries them and stores them before its task runs)
		if (castNode(FuncExpr, lfirst(lc))->funcid == ext->store_point_table && !seen.custom && stage_tables != NIL)
			continue;
		if (castNode(FuncExpr, lfirst(lc))->funcid == ext->store_point_table) { // tables to ship: only here
			missing = lappend(missing, lfirst(lc));
			continue;
		}
		ReleaseScan one{ext, {}};
		release_walker((Node *) lfirst(lc), &one);
		for (int64 id : one.charge_ids)
			if (!seen.charge_ids.count(id)) {
				missing = lappend(missing, lfirst(lc));
				break;
			}
	}
	if (missing == NIL)
		return;
	if (!seen.custom)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv cannot find where Citus runs a distributed release",
		     "Nothing was charged or released. Report this query to the dxpriv maintainers.");
	seen.custom->custom_exprs = list_concat(seen.custom->custom_exprs, missing);
}

// See distributed_exposure.h.
void
refuse_distributed_explain_analyze()
{
	fail(ERRCODE_FEATURE_NOT_SUPPORTED, "EXPLAIN ANALYZE cannot run this dx query on a Citus table",
	     "Under EXPLAIN ANALYZE Citus runs a statement of several query levels (GROUP BY, dx.mode, dx.median, "
	     "dx.quantile, privacy units, subqueries) over a new connection, where its charge is not known. Use "
	     "EXPLAIN without ANALYZE (which charges nothing) or run the query itself. Nothing was charged.");
}

// See distributed_exposure.h.
void
refuse_inner_releases_under_explain_analyze(PlannedStmt *stmt)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext || !stmt || stmt->commandType != CMD_SELECT || !explain_analyze_active() || !citus_installed())
		return;
	bool inner = false;
	// a statement reading grouped sums as one Citus stage (distributed_stage.h): refused alike, as
	// the same statement is when planned under EXPLAIN ANALYZE (distributed.cpp)
	if (dist::reads_one_stage(stmt, *ext))
		refuse_distributed_explain_analyze();
	walk_plan_expressions(
	    stmt, [](Node *) {},
	    [&](CustomScan *cs) { // expose_releases attaches the releases of Citus's private plan here
		    dist::ReleaseScan s{ext, {}};
		    dist::release_walker((Node *) cs->custom_exprs, &s);
		    inner = !s.charge_ids.empty();
	    });
	if (inner)
		refuse_distributed_explain_analyze();
}

// See distributed.h.
Oid
distributed_run_as(PlannedStmt *stmt)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext || !stmt || stmt->commandType != CMD_SELECT || !citus_installed())
		return InvalidOid; // (releases are placed only for Citus tables: no plan walk without Citus)
	ReleaseScan s = scan_statement(*ext, stmt);
	if (!OidIsValid(s.relid) || !load_analyst_context(*ext).analyst)
		return InvalidOid;
	Oid owner = InvalidOid;
	pg_call([&] {
		HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(s.relid));
		if (HeapTupleIsValid(tup)) {
			owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
			ReleaseSysCache(tup);
		}
	});
	return owner;
}

} // namespace dxpriv::pg
