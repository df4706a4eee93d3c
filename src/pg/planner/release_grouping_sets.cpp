// Grouping-set releases: GROUPING SETS, ROLLUP and CUBE analysed and allocated as one release.
#include "pg/planner/release_grouping_sets.h"
#include "pg/planner/release_analysis.h"
#include "pg/planner/release_identity.h"
#include "pg/planner/release_allocation.h"
#include "pg/planner/release_rewrite.h"
#include "pg/planner/release_wrappers.h"
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
#include "pg/planner/join_grouping_sets.h"
#include "pg/guard.h"
#include "pg/metadata/catalog.h"
#include "pg/metadata/citus_tables.h"
#include "pg/node_build.h"
#include "pg/planner/parameters.h"
#include "pg/planner/point_lookup.h"
#include "pg/planner/public_joins.h"
#include "pg/planner/open_keys.h"
#include "pg/planner/open_grouping_sets.h"
#include "pg/planner/shard_pruning.h"
#include "pg/contract/noise_params.h"
#include "pg/planner/universe_eval.h"
#include "pg/planner/unit_source.h"
#include "pg/executor/consistent_release.h"
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

// ---- GROUPING SETS, ROLLUP and CUBE: one statement, one allocation ----

// See planner/release_grouping_sets.h.
Discovery
discovery_of(Query *q, const ExtensionObjects &ext)
{
	Discovery d{&ext};
	query_tree_walker(q, reinterpret_cast<bool (*)()>(discover), &d, 0);
	return d;
}

// See planner/release_grouping_sets.h.
uint64
grouping_sets_cache_key(const std::vector<Query *> &branches)
{
	std::string keys;
	for (Query *b : branches) {
		const uint64 k = query_cache_key(b);
		keys.append(reinterpret_cast<const char *>(&k), sizeof k);
	}
	return hash_bytes_extended(reinterpret_cast<const unsigned char *>(keys.data()), static_cast<int>(keys.size()), 0x6479);
}

// See planner/release_grouping_sets.h.
std::set<AttrNumber>
grouping_key_attnos(Query *q, const TablePolicy &policy)
{
	std::set<AttrNumber> attnos;
	ListCell *lc;
	foreach (lc, q->groupClause) {
		Node *e = get_sortgroupclause_expr(lfirst_node(SortGroupClause, lc), q->targetList);
		check_row_expression(e, policy, "GROUP BY");
		collect_attnos(e, attnos);
	}
	return attnos;
}

// See planner/release_grouping_sets.h.
void
rewrite_grouping_sets(Query *q, const ExtensionObjects &ext, const AnalystContext *ac)
{
	auto admit = [&](Query *b) {
		if (!ac)
			return;
		if (count_protected_refs(b, *ac) != 1)
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "analysts can read one protected table per query",
			     analyst_hint(first_protected_ref(b, *ac)));
		admit_protected_reads(b, *ac);
	};
	// over a join with public tables: the join taken once, for every set (join_grouping_sets.h)
	PublicRows join_rows;
	bool joined = false;
	if (is_join_query(q) && !has_lateral(q)) {
		if (contains_param((Node *) q, nullptr)) { // checked now, analysed when planned with its values
			if (ac)
				rewrite_plain_aggregates(q, ext);
			check_grouping_sets_join(q, ext);
			admit(q);
			return;
		}
		joined = take_grouping_sets_join(q, ext, join_rows);
	}
	JoinScope join_scope(joined ? &join_rows : nullptr);
	if (ac && list_length(q->rtable) == 1)
		rewrite_plain_aggregates(q, ext);
	Query *u = expand_grouping_sets_into_union(q);
	if (!u)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv: a query with grouping sets has no grouping set");
	const std::vector<Query *> branches = grouping_set_branches(u);
	bool open_sets = false; // a set grouped by an open key: each set a release of its own (open_keys.h)
	for (Query *b : branches)
		open_sets = open_sets || groups_by_open_key(b);
	// sets grouped by an open key: one joint release (open_grouping_sets.h) or, on a table with a
	// privacy unit, each set a release of its own, as over a join without a protected table
	if (open_sets && !is_join_query(q) && rewrite_open_grouping_sets(q, u, branches, ext, admit))
		return;
	if (is_join_query(q) || open_sets) {
		*q = *u;
		for (Query *b : branches)
			rewrite_nested_release(b, ext, ac);
		return;
	}
	for (Query *b : branches)
		if (discovery_of(b, ext).markers_top == 0) {
			if (ac)
				refuse_unaggregated_read(b, *ac);
			if (joined)
				fail(ERRCODE_FEATURE_NOT_SUPPORTED, "a join with public tables needs count, sum, avg or dx aggregates",
				     kShapeHint);
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv: a grouping set lost its dx aggregates");
		}
	if (branches.size() == 1) { // GROUP BY () or one set: the grouped query itself
		*q = *u;
		rewrite_query(q, ext, discovery_of(q, ext));
		admit(q);
		return;
	}
	if (contains_param((Node *) q, nullptr)) {
		for (Query *b : branches) // checks only (the branches are copies)
			rewrite_query(b, ext, discovery_of(b, ext));
		admit(q);
		return; // analysed with its bound values when planned (parameters.cpp)
	}

	// every set on the sub-universe of all the keys: the statement's cells share one constraint set
	std::set<AttrNumber> key_attnos;
	{
		check_shape(branches.front(), discovery_of(branches.front(), ext));
		TablePolicy policy;
		if (load_table_policy(linitial_node(RangeTblEntry, q->rtable)->relid, policy))
			key_attnos = grouping_key_attnos(q, policy);
	}
	std::vector<std::unique_ptr<ReleaseAnalysis>> parts;
	std::vector<size_t> offset;
	size_t total = 0;
	for (Query *b : branches) {
		parts.push_back(std::make_unique<ReleaseAnalysis>());
		analyse_release(b, ext, discovery_of(b, ext), key_attnos, total, true, *parts.back());
		offset.push_back(total);
		total += parts.back()->cells();
	}
	const ReleaseAnalysis &first = *parts.front();
	auto attnums = [](const std::vector<const ColumnPolicy *> &cols) {
		std::vector<AttrNumber> out;
		for (const ColumnPolicy *c : cols)
			out.push_back(c->attnum);
		return out;
	};
	for (const auto &p : parts) // the same aggregates over the same points in every set
		if (p->specs.size() != first.specs.size() || p->sub.size() != first.sub.size() || attnums(p->cols) != attnums(first.cols) ||
		    p->eps_total != first.eps_total || p->cells_per_group != first.cells_per_group)
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv: the grouping sets of one query differ in their aggregates");

	// one allocation over every set's cells, within the statement's epsilon
	std::vector<std::vector<double>> cells;
	cells.reserve(total);
	for (const auto &p : parts)
		for (std::vector<double> &c : p->q_cells)
			cells.push_back(std::move(c));
	// (linear cells only: the exponential-mechanism kind refuses grouping sets at analysis,
	// release_kind.h; the statement's epsilon is one set's, so the identity is built below)
	AllocationRequest request = start_request(first.specs, total);
	for (size_t s = 0; s < parts.size(); ++s)
		add_to_request(*parts[s], offset[s], request);
	double query_delta = 0;
	const NoiseFamily family = linear_noise_family(first, query_delta);
	const MultiLinearPlan plan = plan_multi_linear_noise(first.sub, cells, first.eps_total, query_delta, family, request);
	const double delta = any_noisy(plan) ? query_delta : 0;
	if (explain_capture_active()) { // cells in ledger order: aggregate by aggregate, set by set
		capture_statement(first, first.eps_total, request.strategy, family, delta, first.sub, cells);
		for (size_t j = 0; j < first.specs.size(); ++j)
			for (size_t s = 0; s < parts.size(); ++s)
				capture_cells(*parts[s], plan, offset[s], j, "()");
	}

	// each set's branch with its share of the plan; one charge for the statement
	SetIdentity set;
	set.sets = static_cast<int>(parts.size());
	std::vector<ReleaseText> texts;
	for (size_t s = 0; s < parts.size(); ++s) {
		set.set = static_cast<int>(s);
		texts.push_back(rewrite_release(branches[s], ext, *parts[s], plan, offset[s], family, delta, &set));
	}
	*q = *u;
	StampContext ctx{&ext, grouping_sets_cache_key(branches), AllocationIdentity{first.eps_total, delta}};
	query_tree_walker(q, reinterpret_cast<bool (*)()>(stamp_walker), &ctx, 0);
	for (size_t s = 0; s < parts.size(); ++s)
		register_releases(parts[s]->specs, ctx.charge_ids, std::move(texts[s].descriptions), std::move(texts[s].labels));
	for (size_t j = 0; j < first.specs.size() && !explain_capture_active(); ++j) { // consistent totals
		ConsistentCells cc;
		cc.components = first.specs[j].components;
		if (joined) { // a point falls in several groups of a set: the finest set's groups are the atoms
			std::vector<const ReleaseAnalysis *> analysed;
			for (const auto &p : parts)
				analysed.push_back(p.get());
			for (int c = 0; c < cc.components; ++c)
				cc.systems.push_back(join_consistent_system(analysed, offset, cells, plan, j, c));
		}
		cc.q.resize(cc.components);
		cc.plans.resize(cc.components);
		for (size_t s = 0; s < parts.size(); ++s) {
			cc.charge_ids.push_back(ctx.charge_ids[static_cast<int>(j * parts.size() + s)]);
			cc.groups.push_back(static_cast<int>(parts[s]->cells() / parts[s]->cells_per_group));
			for (int c = 0; c < cc.components; ++c)
				for (size_t g = 0; g < static_cast<size_t>(cc.groups.back()); ++g) {
					cc.q[c].push_back(&cells[offset[s] + parts[s]->cell(j, g, c)]);
					cc.plans[c].push_back(plan.cells[offset[s] + parts[s]->cell(j, g, c)]);
				}
		}
		consistent_register(cc); // executor/consistent_release.h
	}
	for (Query *b : branches)
		admit(b);
}

} // namespace dxpriv::pg::analysis
