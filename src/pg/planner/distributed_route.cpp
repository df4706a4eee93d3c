// Multi-level statements on a Citus table whose only shard is on a worker: subplans below, release here.
#include "pg/planner/distributed_route.h"

#include "pg/contract/param_consts.h"
#include "pg/metadata/citus_tables.h"
#include "pg/metadata/extension_objects.h"
#include "pg/node_build.h"
#include "pg/guard.h"

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
};

// Walker behind mark_routed_levels: every query level below the top (FROM subqueries, sublinks, CTEs).
bool
mark_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	if (IsA(node, Query)) {
		Query *q = castNode(Query, node);
		if (reads_one_of(q, *static_cast<MarkContext *>(ctx)->tables) && !q->limitOffset && !q->limitCount)
			q->limitOffset = (Node *) makeConst(INT8OID, -1, InvalidOid, sizeof(int64), Int64GetDatum(0), false,
			                                    FLOAT8PASSBYVAL);
		return query_tree_walker(q, reinterpret_cast<bool (*)()>(mark_walker), ctx, 0);
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(mark_walker), ctx);
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
	MarkContext c{&tables};
	query_tree_walker(split, reinterpret_cast<bool (*)()>(mark_walker), &c, 0);
	return true;
}

// See distributed_route.h.
bool
routed_subplan_needs_multi_shard(Query *q)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext || q->commandType != CMD_SELECT)
		return false;
	bool citus = false;
	ListCell *lc;
	foreach (lc, q->rtable) {
		const RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
		if (rte->rtekind == RTE_RELATION && citus_distributed_table(rte->relid))
			citus = true;
	}
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
