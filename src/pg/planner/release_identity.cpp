// Release identities: charge ids, epsilon ids and the answer-cache key stamped on a rewritten statement.
#include "pg/planner/release_identity.h"

#include "core/siphash.h"
#include "pg/ledger/answer_cache.h"
#include "pg/planner/cache_key_consts.h"
#include "pg/planner/release_analysis.h"
#include "pg/planner/release_allocation.h"
#include "pg/planner/release_rewrite.h"
#include "pg/planner/release_wrappers.h"
#include "pg/planner/release_grouping_sets.h"
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

SystemRandom charge_id_source; // charge and epsilon ids

// ---- rewriting helpers ----

// ---- identities: charge ids and the answer-cache key ----

// See planner/release_identity.h.
int64
random_id()
{
	return static_cast<int64>(charge_id_source.next_u64() >> 12) + 1;
}

// See planner/release_identity.h.
bool
stamp_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *c = static_cast<StampContext *>(ctx);
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(stamp_walker), ctx, 0);
	if (IsA(node, Aggref) && c->ext->is_internal(castNode(Aggref, node)->aggfnoid) &&
	    castNode(Aggref, node)->location == kRewrittenLocation) {
		Const *k = aggref_params_const(castNode(Aggref, node));
		if (!k)
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate parameters are not constants");
		NoiseParams p = parse_noise_params(DatumGetArrayTypeP(k->constvalue));
		int64 &id = c->charge_ids[p.agg_index];
		if (id == 0)
			id = random_id();
		p.charge_id = id;
		if (p.sets > 1) { // the copies of one aggregate in every grouping set share its epsilon
			int64 &shared = c->epsilon_ids[p.agg_index / p.sets];
			if (shared == 0)
				shared = random_id();
			p.epsilon_id = shared;
		}
		p.cache_key = c->key;
		if (c->alloc_id == 0)
			c->alloc_id = random_id();
		p.alloc_id = c->alloc_id;
		p.alloc_epsilon = c->allocation.epsilon;
		p.alloc_delta = c->allocation.delta;
		k->constvalue = PointerGetDatum(build_noise_params(p));
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(stamp_walker), ctx);
}

// See planner/release_identity.h.
uint64
query_cache_key(Query *q)
{
	// blank the presentation for the duration of nodeToString, then put it back
	List *sort = q->sortClause;
	Node *limit = q->limitCount, *offset = q->limitOffset;
	const LimitOption limit_option = q->limitOption;
	std::vector<std::pair<char *, Index>> outputs;
	std::map<Index, Index> grouped; // GROUP BY references renumbered 1, 2, ... in GROUP BY order
	std::vector<Index> group_refs;
	ListCell *lc;
	foreach (lc, q->groupClause) {
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		group_refs.push_back(sgc->tleSortGroupRef);
		grouped.emplace(sgc->tleSortGroupRef, static_cast<Index>(grouped.size() + 1));
		sgc->tleSortGroupRef = grouped[sgc->tleSortGroupRef];
	}
	foreach (lc, q->targetList) {
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		outputs.emplace_back(tle->resname, tle->ressortgroupref);
		tle->resname = nullptr;
		auto g = grouped.find(tle->ressortgroupref);
		tle->ressortgroupref = g == grouped.end() ? 0 : g->second;
	}
	std::vector<std::pair<Alias *, char *>> aliases;
	foreach (lc, q->rtable) {
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
		aliases.emplace_back(rte->alias, rte->eref ? rte->eref->aliasname : nullptr);
		rte->alias = nullptr;
		if (rte->eref)
			rte->eref->aliasname = const_cast<char *>("");
	}
	q->sortClause = NIL;
	q->limitCount = q->limitOffset = nullptr;
	q->limitOption = LIMIT_OPTION_COUNT;
	// the lookup tables by their hash, not byte by byte; a PostgreSQL frame (the containers above live)
	char *raw = pg_value([&] { return query_text_with_hashed_consts(q); });
	std::string text = raw;
	pfree(raw);
	q->sortClause = sort;
	q->limitCount = limit;
	q->limitOffset = offset;
	q->limitOption = limit_option;
	size_t i = 0;
	foreach (lc, q->targetList) {
		lfirst_node(TargetEntry, lc)->resname = outputs[i].first;
		lfirst_node(TargetEntry, lc)->ressortgroupref = outputs[i++].second;
	}
	i = 0;
	foreach (lc, q->groupClause)
		lfirst_node(SortGroupClause, lc)->tleSortGroupRef = group_refs[i++];
	i = 0;
	foreach (lc, q->rtable) {
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
		rte->alias = aliases[i].first;
		if (rte->eref)
			rte->eref->aliasname = aliases[i].second;
		++i;
	}
	std::string normal;
	normal.reserve(text.size());
	for (size_t j = 0; j < text.size();) {
		if (text.compare(j, 10, ":location ") == 0) {
			j += 10;
			while (j < text.size() && (text[j] == '-' || isdigit(static_cast<unsigned char>(text[j]))))
				++j;
			continue;
		}
		normal += text[j++];
	}
	Oid role = GetUserId();
	normal.append(reinterpret_cast<const char *>(&role), sizeof role);
	// keyed with the server's secret (answer_cache_secret): no key collision can be built offline
	return siphash24(answer_cache_secret(), normal.data(), normal.size());
}

// See planner/release_identity.h.
std::map<int, int64>
stamp_identities(Query *q, const ExtensionObjects &ext, const AllocationIdentity &allocation)
{
	StampContext ctx{&ext, query_cache_key(q), allocation};
	query_tree_walker(q, reinterpret_cast<bool (*)()>(stamp_walker), &ctx, 0);
	return ctx.charge_ids;
}

} // namespace dxpriv::pg::analysis
