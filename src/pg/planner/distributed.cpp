// Citus distributed tables: the split of a rewritten query's releases (distributed.h).
#include "pg/planner/distributed.h"
#include "pg/planner/analyzer.h"
#include "pg/planner/distributed_exposure.h"

#include "pg/planner/distributed_context.h"
#include "pg/planner/distributed_em.h"
#include "pg/planner/distributed_linear.h"
#include "pg/planner/distributed_open.h"
#include "pg/planner/distributed_owner.h"
#include "pg/planner/distributed_route.h"
#include "pg/metadata/citus_tables.h"
#include "pg/analyst/analyst_context.h"
#include "pg/contract/param_consts.h"
#include "pg/contract/noise_params.h"
#include "pg/guard.h"
#include "pg/node_build.h"
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
#include "utils/guc.h"
}

#include <limits>
#include <map>
#include <optional>
#include <vector>
#include <set>
#include <string>

namespace dxpriv::pg {

using namespace dist;

namespace {

// True for the noisy linear aggregates the analyzer places (not yet split).
bool
is_linear_release_aggref(const ExtensionObjects &ext, Node *node)
{
	if (!IsA(node, Aggref))
		return false;
	Oid f = castNode(Aggref, node)->aggfnoid;
	return ((f == ext.noisy_count || f == ext.noisy_sum || f == ext.noisy_avg || f == ext.noisy_part) &&
	        list_length(castNode(Aggref, node)->args) == 3) ||
	       (f == ext.noisy_avg_pairs && list_length(castNode(Aggref, node)->args) == 4);
}

// True when node holds a noisy linear aggregate that was not split (at this query level).
bool
has_unsplit_release(Node *node, void *ctx)
{
	if (!node || IsA(node, Query))
		return false;
	if (is_linear_release_aggref(*static_cast<const ExtensionObjects *>(ctx), node))
		return true;
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(has_unsplit_release), ctx);
}

// True when node holds the partition selection of an open GROUP BY key (planner/open_keys.h):
// such a level groups the table itself on purpose (a partition with no row is never released).
bool
has_partition_select(Node *node, void *ctx)
{
	if (!node || IsA(node, Query))
		return false;
	if (IsA(node, Aggref) && castNode(Aggref, node)->aggfnoid == static_cast<const ExtensionObjects *>(ctx)->partition_select)
		return true;
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(has_partition_select), ctx);
}

// True when the query holds an internal dx aggregate at any level.
bool
has_internal_aggref(Node *node, void *ctx)
{
	if (!node)
		return false;
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(has_internal_aggref), ctx, 0);
	if (IsA(node, Aggref) && static_cast<const ExtensionObjects *>(ctx)->is_internal(castNode(Aggref, node)->aggfnoid))
		return true;
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(has_internal_aggref), ctx);
}

// Notes a table that Citus answers on one node (distributed.h, `prune`).
void
note_single_node(SplitContext &c, Oid relid)
{
	const CitusTable &t = table_of(c, relid);
	if (!answered_on_one_node(t))
		return;
	c.single_node = true;
	if (!t.on_coordinator)
		c.remote_single_node = relid;
}

// True when q is one query level that reads one table and nothing else (Citus's multi-shard
// planner plans it without the router planner).
bool
one_table_level(const Query *q)
{
	return list_length(q->rtable) == 1 && linitial_node(RangeTblEntry, q->rtable)->rtekind == RTE_RELATION &&
	       !q->hasSubLinks && q->cteList == NIL && !q->setOperations;
}

// True when q's first range table entry is a table (not a source subquery placed by the analyzer).
bool
reads_table(const Query *q)
{
	return q->rtable != NIL && linitial_node(RangeTblEntry, q->rtable)->rtekind == RTE_RELATION;
}

// Mutator behind split_distributed_releases.
Node *
split_mutator(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	auto *c = static_cast<SplitContext *>(ctx);
	if (IsA(node, Query)) {
		c->depth++;
		Query *q = query_tree_mutator(castNode(Query, node), reinterpret_cast<Node *(*) ()>(split_mutator), ctx, 0);
		c->depth--;
		GroupedReleases here{c->ext, {}};
		collect_level_releases((Node *) q->targetList, &here);
		// shard-pruning conjuncts only where Citus can prune (shard_pruning.h); a level that reads a
		// source subquery (a join grouped by public columns) keeps its filter of rows without a group
		if (!here.releases.empty() && q->jointree && (c->depth > 0 || !c->single_level) && reads_table(q))
			q->jointree->quals = nullptr;
		if (q->groupClause != NIL && list_length(q->rtable) == 1 &&
		    linitial_node(RangeTblEntry, q->rtable)->rtekind == RTE_RELATION &&
		    expression_tree_walker((Node *) q->targetList, reinterpret_cast<bool (*)()>(has_unsplit_release), const_cast<ExtensionObjects *>(c->ext)) &&
		    !has_partition_select(q->havingQual, const_cast<ExtensionObjects *>(c->ext)))
			// analysed for a Citus table (no empty row per group in its source), planned for one that is not
			fail(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
			     "the table of this grouped dx query is no longer distributed by Citus",
			     "Run the statement again (PREPARE it again): it is analysed for how the table is stored now.");
		Query *em = em_from_counts(q, *c);
		if (em != q)
			return (Node *) em;
		if (has_partition_select(q->havingQual, const_cast<ExtensionObjects *>(c->ext))) // open keys (distributed_open.h)
			return (Node *) open_partitions_from_sums(q, *c);
		if (q->groupClause != NIL)
			return (Node *) every_group_from_one_state(q, *c);
		q->targetList = (List *) native_ungrouped_mutator((Node *) q->targetList, c);
		q->havingQual = native_ungrouped_mutator(q->havingQual, c);
		return (Node *) q;
	}
	if (IsA(node, Aggref) && castNode(Aggref, node)->aggfnoid == c->ext->em_select) {
		if (Const *k = aggref_params_const(castNode(Aggref, node)))
			note_single_node(*c, parse_noise_params(DatumGetArrayTypeP(k->constvalue)).relid);
	}
	if (is_linear_release_aggref(*c->ext, node)) {
		Aggref *a = castNode(Aggref, node);
		Const *k = aggref_params_const(a);
		if (!k)
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate parameters are not constants");
		const NoiseParams p = parse_noise_params(DatumGetArrayTypeP(k->constvalue));
		const CitusTable &t = table_of(*c, p.relid);
		if (!t.citus)
			return node;
		note_single_node(*c, p.relid);
		Aggref *part = copy_node(a);
		part->args = (List *) by_digest_mutator((Node *) part->args, c);
		part->aggfnoid = c->ext->partial;
		part->aggtype = c->ext->linear_partial_type;
		part->aggtranstype = InvalidOid;
		// (a part of stddev/corr/...: released with its noise variance for dx._dispersion, which
		// post-processes the released parts on the coordinator)
		const Oid fn = a->aggfnoid == c->ext->noisy_count                                          ? c->ext->release_count
		               : a->aggfnoid == c->ext->noisy_avg || a->aggfnoid == c->ext->noisy_avg_pairs ? c->ext->release_avg
		               : a->aggfnoid == c->ext->noisy_part                                          ? c->ext->release_part
		                                                                                            : c->ext->release_sum;
		if (a->aggfnoid == c->ext->noisy_avg_pairs)
			for (int g = 0; g < p.groups; ++g)
				if (p.grid(g, 1) != 1.0)
					fail(ERRCODE_FEATURE_NOT_SUPPORTED, "this dx.avg over a join cannot run on a Citus table",
					     "Its noise is so large that the count of joined pairs is rounded; use a larger epsilon, or "
					     "dx.sum and dx.count over the join.");
		Expr *group = copy_node(lsecond_node(TargetEntry, a->args)->expr);
		FuncExpr *release = makeFuncExpr(fn, a->aggtype, list_make3(part, copy_node(k), group), InvalidOid,
		                                 InvalidOid, COERCE_EXPLICIT_CALL);
		if (never_null_weight((Node *) linitial_node(TargetEntry, a->args)->expr, *c->ext))
			c->every_row.insert(release);
		c->releases = lappend(c->releases, copy_node(release));
		return (Node *) release;
	}
	return expression_tree_mutator(node, reinterpret_cast<Node *(*) ()>(split_mutator), ctx);
}

} // namespace

// See distributed.h.
List *
split_distributed_releases(Query *parse, bool &prune, bool &route)
{
	prune = false;
	route = false;
	const ExtensionObjects *ext = extension_objects();
	if (!ext || parse->commandType != CMD_SELECT ||
	    !query_tree_walker(parse, reinterpret_cast<bool (*)()>(has_internal_aggref), const_cast<ExtensionObjects *>(ext), 0))
		return NIL;
	SplitContext c{ext};
	c.single_level = list_length(parse->rtable) == 1 && linitial_node(RangeTblEntry, parse->rtable)->rtekind == RTE_RELATION &&
	                 !parse->hasSubLinks && parse->cteList == NIL && parse->groupClause == NIL &&
	                 parse->groupingSets == NIL && !parse->setOperations && !parse->hasWindowFuncs &&
	                 !parse->hasTargetSRFs;
	Query *split = castNode(Query, split_mutator((Node *) parse, &c));
	if (c.releases == NIL)
		return NIL;
	if (load_analyst_context(*ext).analyst) {
		require_owner_safe(split, c.releases, ext);
		// the tables read as one Citus stage (distributed_stage.h) are no longer in the statement's
		// range table: checked as the analyst here (and again when it starts: attach_stage_tables)
		if (c.stage_tables != NIL)
			pg_call([&] { ExecCheckRTPerms(c.stage_tables, true); });
	}
	// A table Citus answers on one node: one query level is planned without the router planner (the
	// partial sums go to the shard's node, the release stays here); a statement of several levels
	// (GROUP BY, dx.mode/median, privacy units, wrappers) needs the router planner, which sends it
	// whole to the shard's node: allowed only when that node is the coordinator (Citus executes it
	// here, in this backend, which charged), refused before anything is charged otherwise.
	const bool one_level = one_table_level(split);
	if (c.single_node && !one_level && OidIsValid(c.remote_single_node)) {
		// several levels on a table whose one shard is on a worker: the levels reading it become
		// Citus subplans, the rest is planned on the coordinator (distributed_route.h)
		std::set<Oid> one_node;
		for (const auto &[relid, t] : c.tables)
			if (answered_on_one_node(t))
				one_node.insert(relid);
		if (!mark_routed_levels(split, one_node)) {
			const char *name = get_rel_name(c.remote_single_node);
			fail(ERRCODE_FEATURE_NOT_SUPPORTED,
			     std::string("this dx query cannot run on Citus table \"") + (name ? name : "?") +
			         "\", whose only shard is on a worker",
			     "Its outermost query level reads the table beside another level, and Citus would send that level "
			     "whole to the node of its shard, while dxpriv releases answers only on the coordinator that charged "
			     "them. Move the other level into a subquery, make it a reference table (create_reference_table), or "
			     "place its shard on the coordinator (citus_move_shard_placement). Nothing was charged.");
		}
		route = true;
	}
	// EXPLAIN ANALYZE: Citus runs a statement of several query levels (GROUP BY, dx.mode/median,
	// privacy units, wrappers) over a new connection to this node, where nothing was charged and the
	// release refuses: refused here, before the charge
	if (!one_level && explain_analyze_active())
		refuse_distributed_explain_analyze();
	if (c.single_node && !one_level && !plain_explain_active()) {
		// run here only through Citus's local execution: otherwise Citus would connect to this node
		// again, where the release refuses (after the charge); Citus turns it off for every EXPLAIN,
		// and a plain EXPLAIN runs nothing
		const char *local = pg_value([&] { return GetConfigOption("citus.enable_local_execution", true, false); });
		if (local && strcmp(local, "on") != 0)
			fail(ERRCODE_FEATURE_NOT_SUPPORTED,
			     "this dx query on a Citus reference or single-shard table needs citus.enable_local_execution",
			     "Citus runs it whole on the coordinator's placement, in this backend, which charged it: SET "
			     "citus.enable_local_execution = on (the default). Nothing was charged.");
	}
	*parse = *split;
	prune = one_level && ((c.single_level && parse->jointree && parse->jointree->quals) || c.single_node);
	return list_concat(list_concat(c.releases, c.shipments), c.stage_tables);
}

} // namespace dxpriv::pg
