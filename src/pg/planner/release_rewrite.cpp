// Release rewrite: replaces analysed aggregates by their noisy internal aggregates over per-point tables.
#include "pg/planner/release_rewrite.h"
#include "pg/planner/release_analysis.h"
#include "pg/planner/release_kind.h"
#include "pg/planner/em_kind.h"
#include "pg/planner/linear_kind.h"
#include "pg/planner/release_identity.h"
#include "pg/planner/release_allocation.h"
#include "pg/planner/release_wrappers.h"
#include "pg/planner/release_grouping_sets.h"
#include "pg/planner/open_keys.h"
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
#include "pg/planner/group_fold.h"
#include "pg/planner/group_key_source.h"
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
#include "pg/planner/unit_profile_source.h"
#include "pg/planner/unit_group_profile.h"
#include "pg/planner/unit_count_set.h"
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


// See planner/release_rewrite.h.
ReleaseText
rewrite_release(Query *q, const ExtensionObjects &ext, ReleaseAnalysis &a, const MultiLinearPlan &plan,
                size_t offset, NoiseFamily family, double delta, const SetIdentity *set)
{
	const GroupKeys &keys = a.keys;
	const std::vector<AggSpec> &specs = a.specs;
	const PublicRows *join = a.join;
	const bool public_keys = a.public_keys;
	const JoinCells &jc = a.jc;
	const size_t slots = jc.slots;
	const size_t groups = keys.groups;
	const Oid relid = a.relid;
	const std::vector<const ColumnPolicy *> &cols = a.cols;
	ReleaseText text{describe_releases(specs, relid), {}};
	for (size_t g = 0; g < groups && !explain_capture_active(); ++g)
		if (keys.grouped())
			text.labels.push_back(keys.label(g));
		else if (set)
			text.labels.push_back("()"); // the empty grouping set
	const bool grouped = keys.grouped();
	// a grouped query on a Citus table gets every group from one state per aggregate when it is
	// planned (planner/distributed.h), not from an empty row per group in its source
	const bool distributed = citus_distributed_table(relid);
	// GROUP BY public columns: a row is read once per slot of its point (its point's slot-th group,
	// or none); an empty-group row carries its group in the slot column
	Expr *slot = public_keys ? (Expr *) slot_var() : nullptr;
	Expr *group_index = public_keys ? nullptr : group_index_expr(keys, ext);
	if (public_keys) {
		CaseWhen *when = makeNode(CaseWhen);
		when->expr = (Expr *) present_flag_var();
		when->result = weigh_expr(cols, jc.group_of_slot, true, ext, slot, slots);
		when->location = -1;
		CaseExpr *ce = makeNode(CaseExpr);
		ce->casetype = INT4OID;
		ce->args = list_make1(when);
		ce->defresult = (Expr *) slot_var();
		ce->location = -1;
		group_index = (Expr *) ce;
	}
	// each kind rewrites its aggregates (release_kind.h: linear first, the exponential mechanism
	// renumbers them among all dx aggregates)
	KindRewrite r;
	r.ext = &ext;
	r.plan = &plan;
	r.offset = offset;
	r.family = family;
	r.delta = delta;
	r.set = set;
	r.group_index = group_index;
	r.slot = slot;
	r.distributed = distributed;
	r.unit_profile = unit_profile_grouped(a, distributed); // (planner/unit_group_profile.h)
	r.unit_count_set = unit_count_set_applies(a, distributed, set != nullptr); // (planner/unit_count_set.h)
	for (const ReleaseKind *k : release_kinds())
		k->rewrite(q, a, r);
	const std::vector<Expr *> &distinct_weights = r.distinct_weights; // count_units: read by the bounded source

	// the WHERE clause is in every aggregate's table and is not evaluated on rows; GROUP BY keys
	// outside the aggregates read the values the analysis computed per group. On a Citus table, the
	// conjuncts `distribution column = constant` that hold on a row exactly when they hold at its
	// point stay, so that Citus can prune shards (planner/shard_pruning.h; grouped statements are
	// planned through subqueries that Citus cannot prune).
	q->jointree->quals = distributed && !grouped ? shard_pruning_quals(a.where, relid, a.policy) : nullptr;
	auto check_no_public_column = [&] {
		if (join && any_exec_param((Node *) q, nullptr))
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv: a public column survived the rewrite of a join", kShapeHint);
	};
	std::string unit_where; // (unitcache) grouped, unit profile: the keep qual; then the path of a table without unit
	UnitSource source;
	if (a.policy.unit.present()) { // the bounded rows of each unit (README "Privacy units")
		source.policy = &a.policy;
		source.columns.assign(a.attnos.begin(), a.attnos.end());
		source.bound = unit_bound_of(a);
		source.keys = grouped ? &keys : nullptr;
		source.empty_groups = !distributed; // Citus: every group from one state (planner/distributed.h)
		source.distributed = distributed;
		if (distributed)
			q->jointree->quals = nullptr; // (no shard pruning through the bounded source)
		source.group_index = grouped ? group_index : nullptr;
		source.distinct_weights = distinct_weights;
		source.unit_value = r.unit_count_set; // (the unit's value for dx._noisy_count_units)
		if (r.unit_profile) // (planner/unit_group_profile.h, unit_profile_source.h)
			unit_where = profile_keep_clause(source, linitial_node(RangeTblEntry, q->rtable)->inh);
	}
	if (a.policy.unit.present() && unit_where.empty()) {
		if (grouped)
			replace_group_keys(q, keys, group_index, ext);
		const std::map<AttrNumber, AttrNumber> mapping =
		    a.open ? open_unit_source(q, source) : replace_with_unit_source(q, source); // (open: keys and unit too)
		q->targetList = (List *) remap_vars((Node *) q->targetList, mapping);
		q->havingQual = remap_vars(q->havingQual, mapping);
		return text;
	}
	if (!grouped) {
		check_no_public_column();
		return text;
	}
	const std::vector<Expr *> key_exprs = replace_group_keys(q, keys, group_index, ext);
	// open keys: a partition with no row is never released, so no empty-group rows (open_keys.h);
	// Citus: every group comes from one state per aggregate (planner/distributed.h), except groups
	// of a public join's keys (one slot per group)
	if ((distributed && !public_keys) || a.open) {
		check_no_public_column();
		return text;
	}
	// GROUP BY: read from the table plus one empty row per group
	for (const ReleaseKind *k : release_kinds()) // the columns every kind's aggregates read
		k->add_source_attnos(a, a.attnos);
	std::vector<AttrNumber> columns(a.attnos.begin(), a.attnos.end());
	std::map<AttrNumber, AttrNumber> mapping;
	if (public_keys) { // rows of a point without a group (no slot) are not read
		NullTest *nt = makeNode(NullTest);
		nt->arg = (Expr *) copy_node(group_index);
		nt->nulltesttype = IS_NOT_NULL;
		nt->argisrow = false;
		nt->location = -1;
		q->jointree->quals = (Node *) nt;
		mapping = replace_with_slot_group_source(q, a.policy, columns, slots, groups, !distributed);
	} else {
		mapping = replace_with_group_source(q, a.policy, columns, keys, unit_where);
		if (guc_key_columns_in_source) // the keys computed in the scan (planner/group_key_source.h)
			key_columns_into_source(q, key_exprs, mapping, ext);
		fold_group_source(q, mapping, ext, !unit_where.empty()); // one ungrouped pass cut into groups (planner/group_fold.h)
	}
	q->targetList = (List *) remap_vars((Node *) q->targetList, mapping);
	q->havingQual = remap_vars(q->havingQual, mapping);
	q->jointree->quals = remap_vars(q->jointree->quals, mapping);
	return text;
}

// See planner/release_rewrite.h.
void
rewrite_query(Query *q, const ExtensionObjects &ext, const Discovery &d, bool shape_only)
{
	ReleaseAnalysis a;
	OpenKeyPlan open = shape_only ? OpenKeyPlan{} : detach_open_keys(q, ext); // GROUP BY an open key
	struct EndAnalysis {
		bool on;
		~EndAnalysis() { if (on) end_open_key_analysis(); }
	} end_analysis{open.active};
	a.open = open.active; // (known to the analysis: no closed form, planner/line_release.h)
	if (!analyse_release(q, ext, d, {}, 0, false, a, shape_only)) {
		if (open.active) // (parameters: analysed again when planned; put the keys back)
			restore_open_keys(q, open);
		return;
	}
	a.open = open.active;
	// the allocation: the linear cells (in the request) and epsilon, every exponential-mechanism
	// aggregate's own epsilon (release_kind.h)
	AllocationRequest request = start_request(a.specs, a.cells());
	AllocationIdentity allocation;
	for (const ReleaseKind *k : release_kinds())
		k->allocate(a, 0, request, allocation);
	double query_delta = 0;
	const NoiseFamily family = linear_noise_family(a, query_delta);
	// (a release of exponential-mechanism aggregates alone has no linear cell: an empty plan)
	const MultiLinearPlan plan = plan_release(a, query_delta, family, request);
	const double delta = any_noisy(plan) ? query_delta : 0;
	if (explain_capture_active()) { // dx.explain: what each cell would cost, without running anything
		capture_statement(a, a.eps_total, request.strategy, family, delta, a.sub, a.q_cells);
		for (size_t j = 0; j < a.specs.size(); ++j)
			capture_cells(a, plan, 0, j, "");
	}
	ReleaseText text = rewrite_release(q, ext, a, plan, 0, family, delta, nullptr);
	allocation.delta = delta;
	if (open.active) { // and the partition selection's epsilon, with the table's delta
		allocation.epsilon += attach_open_keys(q, ext, a, open);
		allocation.delta = open.delta;
	}
	const std::map<int, int64> ids = stamp_identities(q, ext, allocation);
	if (open.active)
		register_open_release(ids, open, a.specs.size());
	register_releases(a.specs, ids, std::move(text.descriptions), std::move(text.labels));
}

} // namespace dxpriv::pg::analysis
