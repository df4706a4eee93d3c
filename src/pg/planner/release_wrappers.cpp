// Release nesting: joins with public tables, plain subqueries and post-processing wrappers around releases.
#include "pg/planner/release_wrappers.h"
#include "pg/planner/open_keys.h"
#include "pg/planner/release_analysis.h"
#include "pg/planner/release_identity.h"
#include "pg/planner/release_allocation.h"
#include "pg/planner/release_rewrite.h"
#include "pg/planner/release_grouping_sets.h"
#include "pg/planner/window_split.h"
#include "pg/planner/series_limit_join.h"
#include "pg/planner/union_grouping_sets.h"
#include "pg/planner/group_set_series.h"
#include "pg/settings.h"
#include "pg/metadata/extension_objects.h"
#include "pg/elevated/sealed_execution.h"
#include "pg/metadata/policy.h"
#include "pg/contract/param_consts.h"
#include "pg/analyst/analyst_guard.h"
#include "pg/planner/probes.h"
#include "pg/planner/attr_rewrite.h"
#include "pg/planner/em_rewrite.h"
#include "pg/planner/explain.h"
#include "pg/planner/group_keys.h"
#include "pg/planner/group_source.h"
#include "pg/planner/grouping_sets.h"
#include "pg/planner/join_cells.h"
#include "pg/guard.h"
#include "pg/metadata/catalog.h"
#include "pg/metadata/citus_tables.h"
#include "pg/node_build.h"
#include "pg/planner/parameters.h"
#include "pg/planner/point_lookup.h"
#include "pg/planner/public_joins.h"
#include "pg/planner/shard_pruning.h"
#include "pg/contract/noise_params.h"
#include "pg/planner/universe_eval.h"
#include "pg/planner/unit_source.h"
#include "pg/executor/release_log.h"

#include "core/allocation.h"
#include "core/approximate_dp.h"
#include "core/linear_query.h"
#include "core/release_interval.h"
#include "core/work_estimate.h"
#include "core/sensitivity.h"
#include "core/unit_bound.h"

extern "C" {
#include "access/relation.h"
#include "access/transam.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "commands/defrem.h"
#include "tcop/tcopprot.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parse_coerce.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "optimizer/tlist.h"
#include "tcop/utility.h"
#include "utils/array.h"
#include "utils/fmgroids.h"
#include "utils/builtins.h"
#include "utils/acl.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "common/hashfn.h"
#include "miscadmin.h"
}

#include <algorithm>
#include <functional>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

namespace dxpriv::pg::analysis {

// ---- joins with public tables ----

JoinTake
take_join(Query *q, const ExtensionObjects &ext, bool analyst, PublicRows &rows)
{
	if (!contains_param((Node *) q, nullptr))
		return take_public_join(q, ext, rows) ? JoinTake::Taken : JoinTake::None;
	if (analyst)
		rewrite_plain_aggregates(q, ext); // markers stay in q for the analysis at planning
	Query *probe = copy_node(q);
	PublicRows none;
	if (!take_public_join(probe, ext, none, false))
		return JoinTake::None;
	JoinScope scope(&none);
	Discovery d{&ext};
	query_tree_walker(probe, reinterpret_cast<bool (*)()>(discover), &d, 0);
	if (d.markers_top == 0)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "a join with public tables needs count, sum, avg or dx aggregates", kShapeHint);
	rewrite_query(probe, ext, d, true); // its shape and columns are checked
	return JoinTake::Deferred;
}

// ---- a plain subquery of rows under the aggregates ----

// See planner/release_wrappers.h.
bool
flatten_plain_subquery(Query *q)
{
	if (q->commandType != CMD_SELECT || !q->hasAggs || q->cteList || list_length(q->rtable) != 1 ||
	    list_length(q->jointree->fromlist) != 1 || !IsA(linitial(q->jointree->fromlist), RangeTblRef))
		return false;
	RangeTblEntry *rte = linitial_node(RangeTblEntry, q->rtable);
	if (rte->rtekind != RTE_SUBQUERY || rte->lateral)
		return false;
	Query *sub = rte->subquery;
	if (sub->commandType != CMD_SELECT || sub->hasAggs || sub->groupClause || sub->groupingSets || sub->havingQual ||
	    sub->distinctClause || sub->limitCount || sub->limitOffset || sub->setOperations || sub->cteList ||
	    sub->hasSubLinks || sub->hasTargetSRFs || sub->hasWindowFuncs || sub->rowMarks || sub->jointree->fromlist == NIL)
		return false;
	// one table, or a join of tables (dbplyr's inner_join then summarise: SELECT zone, count(*) FROM
	// (SELECT t.*, zone FROM t JOIN d ON ...) q01 GROUP BY zone), whose columns are not volatile
	const bool join = list_length(sub->jointree->fromlist) != 1 || !IsA(linitial(sub->jointree->fromlist), RangeTblRef);
	ListCell *rc;
	foreach (rc, sub->rtable) {
		RangeTblEntry *r = lfirst_node(RangeTblEntry, rc);
		if (join && ((r->rtekind != RTE_RELATION && r->rtekind != RTE_JOIN) || r->lateral || r->tablesample))
			return false;
	}
	if (!join && (list_length(sub->rtable) != 1 || linitial_node(RangeTblEntry, sub->rtable)->rtekind != RTE_RELATION))
		return false;
	if (join && pg_value([&] { return contain_volatile_functions((Node *) sub->targetList); }))
		return false;
	bool sublinks = false;
	auto replace = [&](Node *n) {
		return ReplaceVarsFromTargetList(n, 1, 0, rte, sub->targetList, REPLACEVARS_REPORT_ERROR, 0, &sublinks);
	};
	q->targetList = (List *) replace((Node *) q->targetList);
	q->havingQual = replace(q->havingQual);
	Node *outer_quals = replace(q->jointree->quals);
	Node *inner_quals = sub->jointree->quals;
	q->jointree->quals = inner_quals && outer_quals ? (Node *) makeBoolExpr(AND_EXPR, list_make2(inner_quals, outer_quals), -1)
	                     : inner_quals ? inner_quals : outer_quals;
	q->rtable = sub->rtable;
	q->jointree->fromlist = sub->jointree->fromlist;
	return true;
}

// ---- post-processing wrappers ----

// True when a sublink (scalar subquery, EXISTS, IN) or a LATERAL subquery holds a dx aggregate or,
// for analysts, reads a protected table: those may run once per outer row.
struct RerunSearch {
	const ExtensionObjects *ext;
	const AnalystContext *ac;
	int depth = 0;
};

bool
reads_or_releases(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *r = static_cast<RerunSearch *>(ctx);
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(reads_or_releases), ctx,
		                         QTW_EXAMINE_RTES_BEFORE);
	if (IsA(node, RangeTblEntry)) {
		RangeTblEntry *rte = castNode(RangeTblEntry, node);
		return rte->rtekind == RTE_RELATION && r->ac && r->ac->is_protected(rte->relid);
	}
	if (IsA(node, Aggref) && r->ext->is_marker(castNode(Aggref, node)->aggfnoid))
		return true;
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(reads_or_releases), ctx);
}

// See planner/release_wrappers.h.
bool
is_release_level(Query *q, const ExtensionObjects &ext, const AnalystContext *ac)
{
	ListCell *lc;
	foreach (lc, q->rtable) {
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
		if (ac && rte->rtekind == RTE_RELATION && ac->is_protected(rte->relid))
			return true;
	}
	Discovery d{&ext};
	query_tree_walker(q, reinterpret_cast<bool (*)()>(discover), &d, 0);
	return d.markers_top > 0;
}


// See planner/release_wrappers.h.
void
rewrite_nested_release(Query *sub, const ExtensionObjects &ext, const AnalystContext *ac)
{
	if (sub->commandType == CMD_SELECT && sub->groupingSets) {
		rewrite_grouping_sets(sub, ext, ac); // one release over all its sets
		return;
	}
	PublicRows join_rows; // a release over a join with public tables (README "Joins with public tables")
	const JoinTake take = sub->commandType == CMD_SELECT && sub->hasAggs && is_join_query(sub)
	                          ? take_join(sub, ext, ac != nullptr, join_rows)
	                          : JoinTake::None;
	if (take == JoinTake::Deferred) {
		if (ac) {
			if (count_protected_refs(sub, *ac) != 1)
				fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "analysts can read one protected table per query",
				     analyst_hint(first_protected_ref(sub, *ac)));
			admit_protected_reads(sub, *ac);
		}
		return;
	}
	const bool joined = take == JoinTake::Taken;
	JoinScope join_scope(joined ? &join_rows : nullptr);
	if (sub->commandType == CMD_SELECT && list_length(sub->rtable) == 1 && ac)
		rewrite_plain_aggregates(sub, ext);
	Discovery d{&ext};
	query_tree_walker(sub, reinterpret_cast<bool (*)()>(discover), &d, 0);
	if (joined && d.markers_top == 0)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "a join with public tables needs count, sum, avg or dx aggregates", kShapeHint);
	if (d.markers_top == 0) {
		if (ac)
			refuse_unaggregated_read(sub, *ac);
		return;
	}
	{
		OpenKeysAllowed open_keys; // a release in FROM or WITH may group by an open key (open_keys.h)
		rewrite_query(sub, ext, d);
	}
	if (ac) {
		if (count_protected_refs(sub, *ac) != 1)
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "analysts can read one protected table per query",
			     analyst_hint(first_protected_ref(sub, *ac)));
		admit_protected_reads(sub, *ac);
	}
}

// See planner/release_wrappers.h.
int
rewrite_wrapped_releases(Query *q, const ExtensionObjects &ext, const AnalystContext *ac)
{
	RerunSearch search{&ext, ac};
	// analysts' refusals are privilege errors, like their other reads outside a release
	const int refused = ac ? ERRCODE_INSUFFICIENT_PRIVILEGE : ERRCODE_FEATURE_NOT_SUPPORTED;
	if (q->hasSubLinks && expression_tree_walker((Node *) q->targetList, reinterpret_cast<bool (*)()>(reads_or_releases), &search))
		fail(refused, "a scalar or IN subquery cannot hold a dx query",
		     "Put the aggregate query in FROM or in a WITH clause: SELECT ... FROM (SELECT count(*) ...) AS s.");
	if (q->hasSubLinks && (reads_or_releases(q->jointree->quals, &search) || reads_or_releases(q->havingQual, &search)))
		fail(refused, "a subquery in WHERE or HAVING cannot hold a dx query",
		     "Put the aggregate query in FROM or in a WITH clause: SELECT ... FROM (SELECT count(*) ...) AS s.");
	int found = 0;
	ListCell *lc;
	foreach (lc, q->cteList) {
		CommonTableExpr *cte = lfirst_node(CommonTableExpr, lc);
		Query *sub = castNode(Query, cte->ctequery);
		if (cte->cterecursive && reads_or_releases((Node *) sub, &search))
			fail(refused, "a recursive WITH cannot hold a dx query",
			     "Use a plain WITH around the aggregate query.");
		if (split_window_level(sub, ext, ac) || split_series_limit_join(sub, ext, ac) ||
		    merge_union_into_grouping_sets(sub, ext, ac) || merge_group_set_series(sub, ext, ac)) { // window_split.h, series_limit_join.h, union_grouping_sets.h
			found += rewrite_wrapped_releases(sub, ext, ac);
			cte->ctematerialized = CTEMaterializeAlways;
		} else if (is_release_level(sub, ext, ac)) {
			rewrite_nested_release(sub, ext, ac);
			cte->ctematerialized = CTEMaterializeAlways; // one execution, however often it is referenced
			found++;
		} else {
			found += rewrite_wrapped_releases(sub, ext, ac);
		}
	}
	foreach (lc, q->rtable) {
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
		if (rte->rtekind != RTE_SUBQUERY)
			continue;
		if (rte->lateral && reads_or_releases((Node *) rte->subquery, &search))
			fail(refused, "a LATERAL subquery cannot hold a dx query",
			     "Put the aggregate query in FROM without LATERAL or in a WITH clause.");
		if (split_window_level(rte->subquery, ext, ac) || split_series_limit_join(rte->subquery, ext, ac) ||
		    merge_union_into_grouping_sets(rte->subquery, ext, ac) || merge_group_set_series(rte->subquery, ext, ac)) {
			found += rewrite_wrapped_releases(rte->subquery, ext, ac);
		} else if (is_release_level(rte->subquery, ext, ac)) {
			rewrite_nested_release(rte->subquery, ext, ac);
			found++;
		} else {
			found += rewrite_wrapped_releases(rte->subquery, ext, ac);
		}
	}
	return found;
}

} // namespace dxpriv::pg::analysis
