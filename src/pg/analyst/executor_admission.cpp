// Executor-side admission of analysts' plans: every protected scan released, no size function reached.
#include "pg/analyst/executor_admission.h"
#include "pg/statement/statement_context.h"

#include "pg/analyst/analyst_context.h"
#include "pg/analyst/refusals.h"
#include "pg/analyst/side_channels.h"

#include "pg/contract/param_consts.h"
#include "pg/contract/noise_params.h"
#include "pg/guard.h"
#include "pg/plan_walk.h"
#include "pg/metadata/extension_objects.h"
#include "pg/ledger/charge.h"

extern "C" {
#include "access/sysattr.h"
#include "access/transam.h"
#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/inval.h"
#include "utils/fmgroids.h"
#include "parser/parse_func.h"
#include "parser/parsetree.h"
#include "nodes/plannodes.h"
#include "utils/array.h"
#include "access/htup_details.h"
#include "catalog/dependency.h"
#include "commands/extension.h"
}

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <string>

namespace dxpriv::pg {

// Walker collecting the protected tables that noisy aggregates in a plan release.
struct AdmittedScan {
	const ExtensionObjects *ext;
	std::vector<Oid> relids;
};

bool
admitted_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *s = static_cast<AdmittedScan *>(ctx);
	if (IsA(node, Aggref) && s->ext->is_internal(castNode(Aggref, node)->aggfnoid))
		if (Const *k = aggref_params_const(castNode(Aggref, node)))
			s->relids.push_back(parse_noise_params(DatumGetArrayTypeP(k->constvalue)).relid);
	if (Const *k = release_params_const(node, *s->ext)) // a distributed release (planner/distributed.h)
		s->relids.push_back(parse_noise_params(DatumGetArrayTypeP(k->constvalue)).relid);
	if (IsA(node, Aggref) && castNode(Aggref, node)->aggfnoid == s->ext->em_collect) // (its mode/quantile/median)
		if (Const *k = aggref_params_const(castNode(Aggref, node)))
			s->relids.push_back(parse_noise_params(DatumGetArrayTypeP(k->constvalue)).relid);
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(admitted_walker), ctx);
}

// Finds a scan of a protected relation that no noisy aggregate above it releases: a view or
// function over the table placed next to a release (a join, UNION ALL, a CTE) reads the table in
// the same plan as the release, so a per-table check would admit its raw rows. A scan is released
// when an Agg node above it (in its own plan tree; a subplan counts on its own) computes a noisy
// aggregate of the scanned relation's policy table.
struct ReleasedScans {
	const ExtensionObjects *ext;
	const AnalystContext *ac;
	List *rtable;
	Oid unreleased = InvalidOid; // the first scanned protected relation with no release above
};

void
find_unreleased_scan(Plan *plan, std::vector<Oid> released, ReleasedScans &r)
{
	if (!plan || OidIsValid(r.unreleased))
		return;
	if (IsA(plan, Agg)) {
		AdmittedScan s{r.ext, {}};
		admitted_walker((Node *) plan->targetlist, &s);
		admitted_walker((Node *) plan->qual, &s);
		released.insert(released.end(), s.relids.begin(), s.relids.end());
	}
	switch (nodeTag(plan)) {
	case T_SeqScan:
	case T_SampleScan:
	case T_IndexScan:
	case T_IndexOnlyScan:
	case T_BitmapHeapScan:
	case T_TidScan:
	case T_TidRangeScan: {
		const Index rti = ((Scan *) plan)->scanrelid;
		if (rti > 0 && rti <= static_cast<Index>(list_length(r.rtable))) {
			const Oid rel = rt_fetch(rti, r.rtable)->relid;
			const Oid policy = r.ac->policy_table(rel);
			if (OidIsValid(policy) && std::find(released.begin(), released.end(), policy) == released.end())
				r.unreleased = rel;
		}
		break;
	}
	default:
		break;
	}
	find_unreleased_scan(plan->lefttree, released, r);
	find_unreleased_scan(plan->righttree, released, r);
	List *children = extra_child_plans(plan);
	ListCell *lc;
	foreach (lc, children)
		find_unreleased_scan((Plan *) lfirst(lc), released, r);
}

// Raises for a size or statistics function in a plan: pg_stat_get_* (and every other pg_stat_*
// function) wherever it is reached -- a column DEFAULT, an inlined SQL function body, a view the
// DBA granted -- since it would count protected rows. dx.analyst_stat_user_tables reads them in
// dxpriv's own statement (stat_tables.cpp), never in the analyst's plan.
bool
check_plan_function_allowed(Oid fn, void *ctx)
{
	if (const ExtensionObjects *ext = extension_objects(); ext && ext->is_own_function(fn))
		return false; // dxpriv's own: not pg_stat_*, nor refused by check_function_allowed
	char *name = get_func_name(fn);
	if (name && strncmp(name, "pg_stat_", 8) == 0)
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
		     std::string("function ") + name + " cannot be reached by analysts' statements",
		     "Statistics functions count protected rows; read dx.analyst_stat_user_tables (pg_stat_user_tables "
		     "as analysts see it) instead.");
	return check_function_allowed(fn, ctx);
}

// Walker over a plan expression: raises for a size function (check_plan_function_allowed).
bool
plan_function_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	static char in_plan = 1;
	if (check_functions_in_node(node, check_plan_function_allowed, &in_plan))
		return true;
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(plan_function_walker), ctx);
}

// Every expression of a plan tree (targetlists, quals and the node types' own expressions),
// through subplans: size functions reached at execution only -- a column DEFAULT of an INSERT, an
// inlined SQL function whose body was never analysed as the analyst's -- are refused like the ones
// an analyst writes (there, dxpriv substitutes its dx.analyst_*_size functions).
void
check_plan_functions(Plan *plan)
{
	if (!plan)
		return;
	auto walk = [](void *n) { plan_function_walker(static_cast<Node *>(n), nullptr); };
	walk(plan->targetlist);
	walk(plan->qual);
	auto walk_plans = [](List *plans) {
		ListCell *lc;
		foreach (lc, plans)
			check_plan_functions((Plan *) lfirst(lc));
	};
	switch (nodeTag(plan)) {
	case T_Result:
		walk(((Result *) plan)->resconstantqual);
		break;
	case T_ProjectSet:
		break;
	case T_ModifyTable: {
		auto *m = (ModifyTable *) plan;
		walk(m->returningLists);
		walk(m->onConflictSet);
		walk(m->onConflictWhere);
		walk(m->withCheckOptionLists);
		break;
	}
	case T_Append:
		walk_plans(((Append *) plan)->appendplans);
		break;
	case T_MergeAppend:
		walk_plans(((MergeAppend *) plan)->mergeplans);
		break;
	case T_BitmapAnd:
		walk_plans(((BitmapAnd *) plan)->bitmapplans);
		break;
	case T_BitmapOr:
		walk_plans(((BitmapOr *) plan)->bitmapplans);
		break;
	case T_IndexScan:
		walk(((IndexScan *) plan)->indexqual);
		walk(((IndexScan *) plan)->indexorderby);
		break;
	case T_IndexOnlyScan:
		walk(((IndexOnlyScan *) plan)->indexqual);
		walk(((IndexOnlyScan *) plan)->indexorderby);
		break;
	case T_BitmapIndexScan:
		walk(((BitmapIndexScan *) plan)->indexqual);
		break;
	case T_BitmapHeapScan:
		walk(((BitmapHeapScan *) plan)->bitmapqualorig);
		break;
	case T_TidScan:
		walk(((TidScan *) plan)->tidquals);
		break;
	case T_TidRangeScan:
		walk(((TidRangeScan *) plan)->tidrangequals);
		break;
	case T_SubqueryScan:
		check_plan_functions(((SubqueryScan *) plan)->subplan);
		break;
	case T_FunctionScan:
		walk(((FunctionScan *) plan)->functions);
		break;
	case T_ValuesScan:
		walk(((ValuesScan *) plan)->values_lists);
		break;
	case T_TableFuncScan:
		walk(((TableFuncScan *) plan)->tablefunc);
		break;
	case T_SampleScan:
		walk(((SampleScan *) plan)->tablesample);
		break;
	case T_ForeignScan:
		walk(((ForeignScan *) plan)->fdw_exprs);
		break;
	case T_CustomScan:
		walk(((CustomScan *) plan)->custom_exprs);
		walk_plans(((CustomScan *) plan)->custom_plans);
		break;
	case T_NestLoop:
		walk(((Join *) plan)->joinqual);
		break;
	case T_MergeJoin:
		walk(((Join *) plan)->joinqual);
		walk(((MergeJoin *) plan)->mergeclauses);
		break;
	case T_HashJoin:
		walk(((Join *) plan)->joinqual);
		walk(((HashJoin *) plan)->hashclauses);
		walk(((HashJoin *) plan)->hashkeys);
		break;
	case T_Hash:
		walk(((Hash *) plan)->hashkeys);
		break;
	case T_Memoize:
		walk(((Memoize *) plan)->param_exprs);
		break;
	case T_WindowAgg:
		walk(((WindowAgg *) plan)->startOffset);
		walk(((WindowAgg *) plan)->endOffset);
		walk(((WindowAgg *) plan)->runConditionOrig);
		break;
	case T_Limit:
		walk(((Limit *) plan)->limitOffset);
		walk(((Limit *) plan)->limitCount);
		break;
	default:
		break;
	}
	check_plan_functions(plan->lefttree);
	check_plan_functions(plan->righttree);
}

// See analyst_guard.h.
void
enforce_executor_admission(PlannedStmt *stmt)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext || !stmt)
		return;
	const AnalystContext ac = load_analyst_context(*ext);
	if (!ac.analyst)
		return;
	if (stmt->commandType != CMD_UTILITY) {
		check_plan_functions(stmt->planTree);
		ListCell *sp;
		foreach (sp, stmt->subplans)
			check_plan_functions((Plan *) lfirst(sp));
	}
	std::vector<Oid> touched;
	ListCell *lc;
	foreach (lc, stmt->rtable) {
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
		if (rte->rtekind == RTE_RELATION && ac.is_protected(rte->relid))
			touched.push_back(rte->relid);
	}
	if (touched.empty())
		return;
	refuse_protected_read_in_utility(touched.front());
	AdmittedScan s{ext, {}};
	walk_plan_expressions(stmt, [&](Node *n) { admitted_walker(n, &s); });
	// Citus runs parts of a charged distributed statement as nested statements, as the table's owner
	// (planner/distributed.cpp); an analyst's own function running inside a statement is not one
	auto part_of_running = [&](Oid policy) {
		return statement::part_of_running(policy) && pg_value([&] { return pg_class_ownercheck(policy, GetUserId()); });
	};
	auto refuse = [&](Oid rel) {
		const char *name = get_rel_name(rel);
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
		     std::string("analysts can read protected table \"") + (name ? name : "?") + "\" only through aggregates",
		     "A view, rule, policy, function or parent table that reads a protected table is not a way around "
		     "dxpriv. " + analyst_hint(rel));
	};
	// a partition or inheritance child is released by the aggregate of the table whose policy covers it
	for (Oid rel : touched)
		if (std::find(s.relids.begin(), s.relids.end(), ac.policy_table(rel)) == s.relids.end() &&
		    !part_of_running(ac.policy_table(rel)))
			refuse(rel);
	// and every scan of such a table feeds a release of it (not a view read next to a release)
	ReleasedScans r{ext, &ac, stmt->rtable};
	find_unreleased_scan(stmt->planTree, {}, r);
	foreach (lc, stmt->subplans)
		find_unreleased_scan((Plan *) lfirst(lc), {}, r);
	if (OidIsValid(r.unreleased) && !part_of_running(ac.policy_table(r.unreleased)))
		refuse(r.unreleased);
}

} // namespace dxpriv::pg
