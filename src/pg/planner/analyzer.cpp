// Statement dispatch of the analysis stage: which release shape a statement is, and the hook entry points.
#include "pg/settings.h"
#include "pg/metadata/extension_objects.h"
#include "pg/elevated/sealed_execution.h"
#include "pg/metadata/policy.h"
#include "pg/contract/param_consts.h"
#include "pg/planner/analyzer.h"
#include "pg/planner/open_keys.h"
#include "pg/planner/analysis_memo.h"
#include "pg/planner/plan_dependencies.h"
#include "pg/planner/release_analysis.h"
#include "pg/planner/release_identity.h"
#include "pg/planner/release_allocation.h"
#include "pg/planner/release_rewrite.h"
#include "pg/planner/release_wrappers.h"
#include "pg/planner/release_grouping_sets.h"
#include "pg/planner/row_count.h"
#include "pg/planner/window_split.h"
#include "pg/planner/series_limit_join.h"
#include "pg/planner/union_grouping_sets.h"
#include "pg/planner/group_set_series.h"
#include "pg/planner/top_k_rewrite.h"
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
#include "pg/progress.h"
#include "pg/analysis_heap.h"
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

namespace dxpriv::pg {

using namespace analysis;

namespace {

// Depth of EXPLAIN statements without ANALYZE being processed (their query is analysed again
// while it is explained, without the EXPLAIN around it).
int plain_explain_depth = 0;
int explain_analyze_depth = 0; // > 0 while EXPLAIN ANALYZE runs (explain_analyze_active)
int definition_depth = 0;   // > 0 while CREATE VIEW / RULE / MATERIALIZED VIEW / atomic function runs
int copy_depth = 0;         // > 0 while COPY runs (its query is analysed inside the utility)
int copy_out_depth = 0;     // of those, COPY (<query>) TO STDOUT: answered like the SELECT (issue 24)

// The analysed query inside EXPLAIN, DECLARE CURSOR or CREATE TABLE AS, if any.
Query *
inner_query(Query *q)
{
	if (q->commandType != CMD_UTILITY || !q->utilityStmt)
		return nullptr;
	Node *u = q->utilityStmt;
	Node *inner = nullptr;
	if (IsA(u, ExplainStmt))
		inner = castNode(ExplainStmt, u)->query;
	else if (IsA(u, DeclareCursorStmt))
		inner = castNode(DeclareCursorStmt, u)->query;
	else if (IsA(u, CreateTableAsStmt))
		inner = castNode(CreateTableAsStmt, u)->query; // materialised views are refused in analyze()
	return inner && IsA(inner, Query) ? castNode(Query, inner) : nullptr;
}

// True for EXPLAIN without the ANALYZE option (the statement is planned, never run).
bool
is_plain_explain(Node *stmt)
{
	if (!stmt || !IsA(stmt, ExplainStmt))
		return false;
	ListCell *lc;
	foreach (lc, castNode(ExplainStmt, stmt)->options) {
		DefElem *opt = lfirst_node(DefElem, lc);
		if (strcmp(opt->defname, "analyze") == 0 && (!opt->arg || defGetBoolean(opt)))
			return false;
	}
	return true;
}

// True for a CREATE MATERIALIZED VIEW statement.
bool
is_matview(Query *q)
{
	return q->commandType == CMD_UTILITY && q->utilityStmt && IsA(q->utilityStmt, CreateTableAsStmt) &&
	       castNode(CreateTableAsStmt, q->utilityStmt)->objtype == OBJECT_MATVIEW;
}

// The hook body: find dx aggregates, refuse misuse, rewrite the rest.
void
analyze(Query *top)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext)
		return;
	Query *q = top;
	if (Query *inner = inner_query(top))
		q = inner;
	else if (top->commandType == CMD_UTILITY)
		return; // no query inside (SET, CREATE ..., COPY table is checked in the utility hook)
	flatten_plain_subquery(q); // before anything counts tables or aggregates
	// SELECT dx.attr_avg(col) FROM t: becomes a call of the release function, reading no table
	if (rewrite_attribute_aggregates(q, definition_depth > 0 || is_matview(top)))
		return;
	Discovery d{ext};
	d.plain_explain = plain_explain_depth > 0 || (top->commandType == CMD_UTILITY && is_plain_explain(top->utilityStmt));
	query_tree_walker(q, reinterpret_cast<bool (*)()>(discover), &d, 0);
	if (d.internal > 0)
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "internal dxpriv aggregates cannot be called directly",
		     "Use dx.count or dx.sum; dxpriv places its internal aggregates itself.");
	if (d.rewritten > 0 && d.markers_top + d.markers_nested == 0)
		return; // a query this hook already rewrote (EXPLAIN analyses its query twice)

	PublicRows join_rows;
	bool joined = false;
	const AnalystContext ac = load_analyst_context(*ext);
	set_analyst_mode(ac.analyst);
	// ORDER BY count(*) DESC LIMIT k under dxpriv.top_k = 'exponential': analysed as its rewrite
	if (rewrite_top_k_order(q, *ext, ac.analyst ? &ac : nullptr))
		return;
	// windows next to a release's aggregates: a wrapper over the release (window_split.h); a
	// release joined back to a top-N release (Superset's series limit): two releases (series_limit_join.h)
	// a UNION ALL of a total and its parts: one GROUPING SETS release (union_grouping_sets.h)
	if ((d.markers_nested == 0 && split_window_level(q, *ext, ac.analyst ? &ac : nullptr)) ||
	    split_series_limit_join(q, *ext, ac.analyst ? &ac : nullptr) ||
	    merge_union_into_grouping_sets(q, *ext, ac.analyst ? &ac : nullptr) ||
	    merge_group_set_series(q, *ext, ac.analyst ? &ac : nullptr)) { // Malloy's group_set: group_set_series.h
		const bool plain_explain = d.plain_explain;
		d = Discovery{ext};
		d.plain_explain = plain_explain;
		query_tree_walker(q, reinterpret_cast<bool (*)()>(discover), &d, 0);
	}
	if (ac.analyst) {
		substitute_catalog_views(top, *ext); // before the deny list: pg_stat_user_tables becomes a safe view
		if (q != top)
			substitute_catalog_views(q, *ext);
		reject_side_channels(top);
		check_citus_settings(); // shards shown in pg_class (however the settings were set)
		if (count_protected_refs(q, ac) > 0) {
			const Oid read_rel = first_protected_ref(q, ac); // for refusals that name it
			const Oid hint_rel = OidIsValid(ac.policy_table(read_rel)) ? ac.policy_table(read_rel) : read_rel;
			if (top->commandType == CMD_UTILITY && !IsA(top->utilityStmt, DeclareCursorStmt))
				refuse_analyst_utility(top->utilityStmt, read_rel);
			if (definition_depth > 0 || copy_depth > copy_out_depth || is_matview(top))
				fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "analysts cannot copy or store queries over protected tables",
				     analyst_hint(hint_rel));
			check_inheritance_refs(q, ac);
			if (q->commandType == CMD_SELECT && q->groupingSets && is_release_level(q, *ext, &ac)) {
				rewrite_grouping_sets(q, *ext, &ac); // one release over all its sets
				return;
			}
			JoinTake take = JoinTake::None;
			if (q->commandType == CMD_SELECT && q->hasAggs && is_join_query(q) && !has_lateral(q))
				take = take_join(q, *ext, true, join_rows); // (LATERAL: the analysts' refusal below)
			if (take == JoinTake::Deferred) { // analysed when planned with its values
				admit_protected_reads(q, ac);
				return;
			}
			joined = take == JoinTake::Taken;
			JoinScope join_scope(joined ? &join_rows : nullptr);
			if (q->commandType == CMD_SELECT && !is_release_level(q, *ext, &ac) &&
			    rewrite_wrapped_releases(q, *ext, &ac) > 0) {
				answer_row_count_query(q, *ext); // SELECT count(*) FROM (<release>) s (row_count.h)
				return; // a wrapper that only post-processes releases
			}
			if (q->commandType == CMD_SELECT && list_length(q->rtable) == 1 && rewrite_plain_aggregates(q, *ext) > 0) {
				d = Discovery{ext};
				query_tree_walker(q, reinterpret_cast<bool (*)()>(discover), &d, 0);
			}
			if (joined && d.markers_top == 0)
				fail(ERRCODE_FEATURE_NOT_SUPPORTED, "a join with public tables needs count, sum, avg or dx aggregates",
				     analyst_hint(hint_rel));
			if (d.markers_top == 0) {
				// what BI tools probe before any aggregate: answered without reading a row or charging
				if (admit_zero_row_probe(q) || answer_declared_values(q, ac))
					return;
				refuse_unaggregated_read(q, ac);
			}
			{
				analysis::OpenKeysAllowed open_keys; // a top-level release may group by an open key
				rewrite_query(q, *ext, d);
			}
			if (count_protected_refs(q, ac) != 1)
				fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "analysts can read one protected table per query",
				     analyst_hint(hint_rel));
			admit_protected_reads(q, ac);
			return;
		}
	}
	if (d.markers_top + d.markers_nested == 0)
		return;
	if (definition_depth > 0 || is_matview(top))
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "dx aggregates cannot be used in view, rule or function definitions",
		     "Run the query directly: its noise and cost are fixed when it is analysed, against the current policy.");
	if (d.markers_top > 0 && q->commandType == CMD_SELECT && q->groupingSets) {
		rewrite_grouping_sets(q, *ext, nullptr); // one release over all its sets
		return;
	}
	if (d.markers_top == 0 && q->commandType == CMD_SELECT && rewrite_wrapped_releases(q, *ext, nullptr) > 0)
		return; // a wrapper that only post-processes releases
	if (d.markers_top > 0 && q->commandType == CMD_SELECT && is_join_query(q)) {
		const JoinTake take = take_join(q, *ext, false, join_rows);
		if (take == JoinTake::Deferred)
			return; // analysed when planned with its values
		joined = take == JoinTake::Taken;
	}
	JoinScope join_scope(joined ? &join_rows : nullptr);
	{
		analysis::OpenKeysAllowed open_keys; // a top-level release may group by an open key
		rewrite_query(q, *ext, d);
	}
}

} // namespace

// See planner/parameters.h.
void
analyze_bound_query(Query *q)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext)
		return;
	Discovery d{ext};
	query_tree_walker(q, reinterpret_cast<bool (*)()>(discover), &d, 0);
	if (d.markers_top + d.markers_nested == 0)
		return;
	const AnalystContext ac = load_analyst_context(*ext);
	set_analyst_mode(ac.analyst);
	if (d.markers_top > 0 && q->groupingSets) { // left unexpanded when it was parsed
		rewrite_grouping_sets(q, *ext, ac.analyst ? &ac : nullptr);
		return;
	}
	if (d.markers_top == 0) { // releases nested in a post-processing wrapper
		rewrite_wrapped_releases(q, *ext, ac.analyst ? &ac : nullptr);
		return;
	}
	PublicRows join_rows; // a join with public tables, read now, at this execution's analysis
	const bool joined = is_join_query(q) && !has_lateral(q) && take_public_join(q, *ext, join_rows);
	JoinScope join_scope(joined ? &join_rows : nullptr);
	{
		analysis::OpenKeysAllowed open_keys; // a top-level release may group by an open key
		rewrite_query(q, *ext, d);
	}
	if (ac.analyst) {
		if (count_protected_refs(q, ac) != 1)
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "analysts can read one protected table per query",
			     analyst_hint(first_protected_ref(q, ac)));
		admit_protected_reads(q, ac);
	}
}

namespace {

// Refuses, for analysts, function bodies that would not be analysed when created
// (check_function_bodies = off): an inlined SQL body is never analysed by dxpriv later either.
void
refuse_unchecked_function_for_analysts()
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext || !load_analyst_context(*ext).analyst)
		return;
	fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "analysts cannot create functions with check_function_bodies = off",
	     "SET check_function_bodies = on: dxpriv checks a function's body when it is created.");
}

// Refuses COPY of a protected table by an analyst (COPY (query) is checked when its query is analysed).
void
check_copy(CopyStmt *stmt)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext || !stmt->relation)
		return;
	const AnalystContext ac = load_analyst_context(*ext);
	Oid relid = InvalidOid;
	pg_call([&] { relid = RangeVarGetRelid(stmt->relation, NoLock, true); });
	if (ac.analyst && ac.is_protected(relid))
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "analysts cannot COPY protected tables", analyst_hint(ac.policy_table(relid)));
}

} // namespace

// See planner/analyzer.h.
void
analysis_post_parse(ParseState *pstate, Query *query)
{
	// Citus analyses the queries it generates (intermediate results, partial aggregates) as the
	// current user: only the client's own text is held to the Citus-internals refusal
	// (restored afterwards: dxpriv's own catalog queries are analysed in between)
	const bool outer = set_client_statement_text(pstate && pstate->p_sourcetext && debug_query_string &&
	                                             strcmp(pstate->p_sourcetext, debug_query_string) == 0);
	if (!in_internal_query())
		guarded([&] {
			CoreProgress progress("dxpriv analysis"); // a long analysis: cancel and NOTICEs (pg/progress.h)
			AnalysisHeap heap;                        // large vectors reuse mapped pages (pg/analysis_heap.h)
			// analysed before: no analysis again (not inside EXPLAIN, definitions or COPY)
			// what the plan cache would depend on before the analysis replaces functions by tables
			const std::vector<PlanDependency> dependencies =
			    extension_objects() ? plan_dependencies(query) : std::vector<PlanDependency>();
			const MutableCalls mutable_before = extension_objects() ? mutable_evaluations(query) : MutableCalls();
			MemoKey memo = plain_explain_depth + definition_depth + copy_depth == 0 ? analysis_memo_key(query) : MemoKey();
			if (!analysis_memo_replay(memo, query)) {
				analyze(query);
				progress.debug_work(); // DEBUG1: the statement's pair-search work
				analysis_memo_store(memo, query);
			}
			keep_lost_dependencies(dependencies, query); // a redefinition re-analyses cached plans
			reanalyse_when_mutable_lost(mutable_before, query); // now() & co.: analysed again next transaction
		});
	set_client_statement_text(outer);
}

// See planner/analyzer.h.
UtilityMarks
analysis_enter_utility(Node *stmt)
{
	UtilityMarks m;
	if (IsA(stmt, CreateFunctionStmt) && !check_function_bodies)
		guarded([&] { refuse_unchecked_function_for_analysts(); });
	m.defines = IsA(stmt, ViewStmt) || IsA(stmt, RuleStmt) ||
	            (IsA(stmt, CreateFunctionStmt) && castNode(CreateFunctionStmt, stmt)->sql_body != nullptr);
	m.copies = IsA(stmt, CopyStmt);
	// COPY (<query>) TO STDOUT sends the rows to the client like a SELECT (DuckDB fetches with it)
	m.copies_out = m.copies && castNode(CopyStmt, stmt)->query && !castNode(CopyStmt, stmt)->is_from &&
	               !castNode(CopyStmt, stmt)->filename && !castNode(CopyStmt, stmt)->is_program;
	if (IsA(stmt, GrantStmt))
		guarded([&] { check_citus_grant(castNode(GrantStmt, stmt)); });
	if (IsA(stmt, VariableSetStmt))
		guarded([&] { check_citus_set(castNode(VariableSetStmt, stmt)); });
	if (m.copies)
		guarded([&] { check_copy(castNode(CopyStmt, stmt)); });
	guarded([&] { m.analyst_scope = enter_analyst_utility(stmt); });
	if (m.defines)
		definition_depth++;
	if (m.copies)
		copy_depth++;
	if (m.copies_out)
		copy_out_depth++;
	m.plain_explain = is_plain_explain(stmt);
	if (m.plain_explain)
		plain_explain_depth++;
	m.explain_analyze = IsA(stmt, ExplainStmt) && !m.plain_explain;
	if (m.explain_analyze)
		explain_analyze_depth++;
	return m;
}

// See planner/analyzer.h.
void
analysis_leave_utility(const UtilityMarks &m)
{
	if (m.defines)
		definition_depth--;
	if (m.copies)
		copy_depth--;
	if (m.copies_out)
		copy_out_depth--;
	if (m.plain_explain)
		plain_explain_depth--;
	if (m.explain_analyze)
		explain_analyze_depth--;
	leave_analyst_utility(m.analyst_scope);
}

// See planner/analyzer.h.
bool
explain_analyze_active()
{
	return explain_analyze_depth > 0;
}

// See planner/analyzer.h.
bool
plain_explain_active()
{
	return plain_explain_depth > 0;
}

// See planner/analyzer.h.
void
analysis_reset()
{
	plain_explain_depth = 0;
	explain_analyze_depth = 0;
	definition_depth = 0;
	copy_depth = 0;
	copy_out_depth = 0;
}

} // namespace dxpriv::pg
