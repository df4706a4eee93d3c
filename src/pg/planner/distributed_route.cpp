// Multi-level statements on a Citus table whose only shard is on a worker: subplans below, release here.
#include "pg/planner/distributed_route.h"

#include "pg/contract/param_consts.h"
#include "pg/metadata/citus_tables.h"
#include "pg/metadata/extension_objects.h"
#include "pg/node_build.h"
#include "pg/guard.h"

#include <vector>

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "utils/lsyscache.h"
}

namespace dxpriv::pg {

namespace {

// True when q's own range table holds a table of `tables`.
bool
reads_one_of(const Query *q, const std::set<Oid> &tables)
{
	ListCell *lc;
	foreach (lc, q->rtable) {
		const RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
		if (rte->rtekind == RTE_RELATION && tables.count(rte->relid))
			return true;
	}
	return false;
}

struct MarkContext {
	const std::set<Oid> *tables;
	std::vector<Query *> pending; // levels reading a table, not yet below a marked level
};

void mark_level(Query *q, bool top, MarkContext &c);

// Walker over a level's own expressions (sublinks) and CTEs: each query found is a level of its own.
bool
mark_inner_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	if (IsA(node, Query)) {
		mark_level(castNode(Query, node), false, *static_cast<MarkContext *>(ctx));
		return false;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(mark_inner_walker), ctx);
}

// Gives OFFSET 0 to q (a level with its own LIMIT or OFFSET keeps it: Citus plans it as a subplan too).
void
give_offset(Query *q)
{
	if (!q->limitOffset && !q->limitCount)
		q->limitOffset = (Node *) makeConst(INT8OID, -1, InvalidOid, sizeof(int64), Int64GetDatum(0), false,
		                                    FLOAT8PASSBYVAL);
}

// Marks, for every level reading one of c.tables, its lowest aggregating level (GROUP BY, aggregates,
// LIMIT) below the top: the worker's subplan then returns sums, not rows (a privacy unit's bounding
// included). Levels whose lowest aggregating level is the top stay in c.pending.
void
mark_level(Query *q, bool top, MarkContext &c)
{
	const size_t before = c.pending.size();
	if (reads_one_of(q, *c.tables))
		c.pending.push_back(q);
	ListCell *lc;
	foreach (lc, q->rtable) {
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
		if (rte->rtekind == RTE_SUBQUERY && rte->subquery)
			mark_level(rte->subquery, false, c);
	}
	query_tree_walker(q, reinterpret_cast<bool (*)()>(mark_inner_walker), &c, QTW_IGNORE_RANGE_TABLE);
	const bool aggregates = q->hasAggs || q->groupClause != NIL || q->groupingSets != NIL || q->limitCount ||
	                        q->limitOffset;
	if (!top && aggregates && c.pending.size() > before) {
		give_offset(q);
		c.pending.resize(before);
	}
}

// True for a top level that aggregates without GROUP BY (one row at most: a privacy unit's bounded
// source under its ungrouped releases) and that can move under a new top unchanged: no window
// functions, set-returning functions, set operations, CTEs or hidden (resjunk) columns.
bool
wrappable_top(const Query *q)
{
	if (!q->hasAggs || q->groupClause != NIL || q->groupingSets != NIL || q->hasWindowFuncs || q->hasTargetSRFs ||
	    q->setOperations || q->cteList != NIL || q->distinctClause != NIL || q->rowMarks != NIL)
		return false;
	ListCell *lc;
	foreach (lc, q->targetList)
		if (lfirst_node(TargetEntry, lc)->resjunk)
			return false;
	return true;
}

// Moves `top` (wrappable_top) under a new top level, SELECT dx_w.* FROM (<top> OFFSET 0) dx_w, in place.
void
wrap_top(Query *top)
{
	Query *inner = copy_node(top);
	give_offset(inner);
	inner->canSetTag = false;
	List *cols = NIL, *targets = NIL;
	ListCell *lc;
	foreach (lc, inner->targetList) {
		TargetEntry *te = lfirst_node(TargetEntry, lc);
		const char *name = te->resname ? te->resname : "?column?";
		cols = lappend(cols, makeString(pstrdup(name)));
		Expr *e = te->expr;
		targets = lappend(targets, makeTargetEntry((Expr *) makeVar(1, te->resno, exprType((Node *) e),
		                                                                   exprTypmod((Node *) e),
		                                                                   exprCollation((Node *) e), 0),
		                                           te->resno, pstrdup(name), false));
	}
	RangeTblRef *ref = makeNode(RangeTblRef);
	ref->rtindex = 1;
	top->rtable = list_make1(subquery_rte(inner, "dx_w", cols));
	top->jointree = makeFromExpr(list_make1(ref), nullptr);
	top->targetList = targets;
	top->havingQual = nullptr;
	top->hasAggs = false;
	top->hasSubLinks = false;
	top->sortClause = NIL;
	top->limitOffset = nullptr;
	top->limitCount = nullptr;
	top->limitOption = LIMIT_OPTION_DEFAULT;
}

// True when node holds a Citus table at any query level.
bool
reads_citus_table(Node *node, void *ctx)
{
	if (!node)
		return false;
	if (IsA(node, RangeTblEntry))
		return castNode(RangeTblEntry, node)->rtekind == RTE_RELATION &&
		       citus_distributed_table(castNode(RangeTblEntry, node)->relid);
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(reads_citus_table), ctx,
		                         QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(reads_citus_table), ctx);
}

// True when node holds a release, a state built for one, or an exponential mechanism's collection.
bool
holds_release(Node *node, void *ctx)
{
	if (!node)
		return false;
	const auto &ext = *static_cast<const ExtensionObjects *>(ctx);
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(holds_release), ctx, 0);
	if (IsA(node, FuncExpr) && ext.is_release(castNode(FuncExpr, node)->funcid))
		return true;
	if (native_partial_params_const(node, ext))
		return true;
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(holds_release), ctx);
}

} // namespace

// See distributed_route.h.
bool
mark_routed_levels(Query *split, const std::set<Oid> &tables)
{
	if (reads_one_of(split, tables))
		return false;
	MarkContext c{&tables, {}};
	mark_level(split, true, c);
	if (c.pending.empty())
		return true;
	if (wrappable_top(split)) { // the top aggregates them: it becomes the subplan, under a new top
		wrap_top(split);
		return true;
	}
	for (Query *q : c.pending) // else the reading levels themselves (the worker returns their rows)
		give_offset(q);
	return true;
}

// See distributed_route.h.
bool
routed_subplan_needs_multi_shard(Query *q)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext || q->commandType != CMD_SELECT)
		return false;
	const bool citus = reads_citus_table((Node *) q, nullptr);
	return citus && holds_release((Node *) q, const_cast<ExtensionObjects *>(ext));
}

// See distributed_route.h.
void
refuse_unrouted_statement()
{
	fail(ERRCODE_FEATURE_NOT_SUPPORTED, "this dx query cannot run on a Citus table whose only shard is on a worker",
	     "Citus planned it without reading the table in a subquery of its own, so its answers would be released on "
	     "the worker, where nothing was charged. Ask it without wrappers, make the table a reference table "
	     "(create_reference_table), or place its shard on the coordinator (citus_move_shard_placement). Nothing "
	     "was charged.");
}

} // namespace dxpriv::pg
