// Release analysis: finds a query's dx aggregates, validates them and computes every cell's weight at every point.
#include "pg/executor/consistent_release.h"
#include "pg/planner/group_pruning.h"
#include "pg/planner/release_analysis.h"
#include "pg/planner/open_keys.h"
#include "pg/analyst/dispersion_spelling.h"
#include "pg/planner/release_kind.h"
#include "pg/planner/em_kind.h"
#include "pg/statement/statement_context.h"
#include "pg/planner/release_identity.h"
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
#include "pg/planner/line_release.h"
#include "pg/guard.h"
#include "pg/metadata/catalog.h"
#include "pg/node_build.h"
#include "pg/planner/parameters.h"
#include "pg/planner/point_lookup.h"
#include "pg/planner/public_joins.h"
#include "pg/planner/shard_pruning.h"
#include "pg/contract/noise_params.h"
#include "pg/planner/universe_eval.h"
#include "pg/planner/unit_source.h"
#include "pg/executor/release_log.h"

#include "core/upfront_work.h"
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

// ---- discovery ----

// See planner/release_analysis.h.
bool
discover(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *d = static_cast<Discovery *>(ctx);
	if (IsA(node, Query)) {
		d->depth++;
		bool r = query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(discover), ctx, 0);
		d->depth--;
		return r;
	}
	if (IsA(node, Aggref)) {
		Aggref *a = castNode(Aggref, node);
		if (d->ext->is_internal(a->aggfnoid))
			(a->location == kRewrittenLocation ? d->rewritten : d->internal)++;
		else if (d->ext->is_marker(a->aggfnoid))
			(d->depth == 0 && a->agglevelsup == 0 ? d->markers_top : d->markers_nested)++;
		else if (d->depth == 0)
			d->other_aggs_top++;
	}
	// placed by the planner hook on distributed tables, never written in SQL; Citus re-parses the
	// coordinator's share of a distributed query, whose releases the running statement has paid for
	// the coordinator stores per-point tables on the workers with it; analysts never call it
	if (IsA(node, FuncExpr) && castNode(FuncExpr, node)->funcid == d->ext->store_point_table &&
	    load_analyst_context(*d->ext).analyst)
		d->internal++;
	// a folded GROUP BY's state and its cut (planner/group_fold.h): only where the rewrite placed them
	if ((IsA(node, Aggref) && castNode(Aggref, node)->aggfnoid == d->ext->fold_state &&
	     castNode(Aggref, node)->location != kRewrittenLocation) ||
	    (IsA(node, FuncExpr) && castNode(FuncExpr, node)->funcid == d->ext->fold_slices &&
	     castNode(FuncExpr, node)->location != kRewrittenLocation))
		d->internal++;
	// dx._dispersion only where dispersion_spelling placed it (an analyst's own call is refused),
	// or over distributed parts' releases (checked below), as Citus re-parses the coordinator's share
	if (IsA(node, FuncExpr) && castNode(FuncExpr, node)->funcid == d->ext->dispersion &&
	    castNode(FuncExpr, node)->location != kDispersionLocation &&
	    !dispersion_over_releases(castNode(FuncExpr, node), *d->ext))
		d->internal++;
	if (IsA(node, FuncExpr) && d->ext->is_release(castNode(FuncExpr, node)->funcid)) {
		Const *k = release_params_const(node, *d->ext);
		if (!k || (!d->plain_explain && !statement::paid(parse_noise_params(DatumGetArrayTypeP(k->constvalue)).charge_id)))
			d->internal++;
	}
	// the one-stage grouped sums (planner/distributed_stage.h): only where the split placed them,
	// never written in SQL (no re-parse of a statement holding them: it is planned locally)
	if (IsA(node, FuncExpr) && OidIsValid(d->ext->grouped_partials) &&
	    castNode(FuncExpr, node)->funcid == d->ext->grouped_partials &&
	    castNode(FuncExpr, node)->location != kStageLocation)
		d->internal++;
	// the native partials of those releases (dx._state_of, dx._collect): the same rule
	if ((IsA(node, FuncExpr) && castNode(FuncExpr, node)->funcid == d->ext->state_of) ||
	    (IsA(node, Aggref) && (castNode(Aggref, node)->aggfnoid == d->ext->collect ||
	                           castNode(Aggref, node)->aggfnoid == d->ext->em_collect))) {
		Const *k = native_partial_params_const(node, *d->ext);
		if (!k || (!d->plain_explain && !statement::paid(parse_noise_params(DatumGetArrayTypeP(k->constvalue)).charge_id)))
			d->internal++;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(discover), ctx);
}

// See planner/release_analysis.h.
bool
collect_markers(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *out = static_cast<std::pair<const ExtensionObjects *, std::vector<Aggref *>> *>(ctx);
	if (IsA(node, Aggref) && out->first->is_marker(castNode(Aggref, node)->aggfnoid)) {
		out->second.push_back(castNode(Aggref, node));
		return false; // arguments of a dx aggregate contain no aggregate
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(collect_markers), ctx);
}

// ---- validation ----

// See planner/release_analysis.h.
void
check_shape(Query *q, const Discovery &d)
{
	auto reject = [](const std::string &what) {
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, what + " cannot be used in a query with dx aggregates", kShapeHint);
	};
	if (q->commandType != CMD_SELECT)
		reject("statements other than SELECT");
	if (d.markers_nested > 0 || q->hasSubLinks)
		reject("subqueries");
	if (q->cteList)
		reject("WITH clauses");
	if (q->setOperations)
		reject("set operations");
	if (q->hasWindowFuncs) // a window over the released rows is post-processing: the fix is a wrapper
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "window functions cannot be used in a query with dx aggregates",
		     "Compute the aggregates in a subquery and apply the window to its released rows, e.g. SELECT k, n, "
		     "n * 1.0 / sum(n) OVER () AS share FROM (SELECT k, count(*) AS n FROM t GROUP BY k) s.");
	if (q->hasTargetSRFs)
		reject("set-returning functions");
	check_grouped_references(q); // GROUP BY (), and columns that are no GROUP BY key (functional dependency)
	if (q->groupingSets)
		reject("GROUPING SETS, ROLLUP and CUBE");
	if (q->distinctClause)
		reject("DISTINCT");
	if (q->rowMarks)
		reject("FOR UPDATE/SHARE");
	if (d.other_aggs_top > 0)
		reject("aggregates other than dx aggregates");
	if (list_length(q->rtable) != 1 || list_length(q->jointree->fromlist) != 1 ||
	    !IsA(linitial(q->jointree->fromlist), RangeTblRef))
		reject("joins or several tables");
	RangeTblEntry *rte = linitial_node(RangeTblEntry, q->rtable);
	if (rte->rtekind != RTE_RELATION || (rte->relkind != RELKIND_RELATION && rte->relkind != RELKIND_PARTITIONED_TABLE))
		reject("sources other than a protected table");
	if (rte->tablesample)
		reject("TABLESAMPLE");
}

// Walker behind check_row_expression: finds the first node whose result type a user created (a
// domain whose CHECK could run the user's code, an enum, a composite) other than the declared
// columns' own types, which the table owner chose.
struct UserTypeSearch {
	const TablePolicy *policy;
	Node *found = nullptr;
};

bool
user_type_walker(Node *node, void *ctx)
{
	if (!node || IsA(node, Query))
		return false;
	auto *search = static_cast<UserTypeSearch *>(ctx);
	const Oid type = IsA(node, List) || IsA(node, TargetEntry) ? InvalidOid : exprType(node); // lists: no type
	if (type >= FirstNormalObjectId) {
		bool declared = false;
		for (const ColumnPolicy &c : search->policy->columns)
			for (const ColumnPolicy::Member &m : c.members)
				declared = declared || m.type == type;
		if (!declared) {
			search->found = node;
			return true;
		}
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(user_type_walker), ctx);
}

// See planner/release_analysis.h.
void
check_row_expression(Node *expr, const TablePolicy &policy, const char *where)
{
	if (!expr)
		return;
	UserTypeSearch user_typed{&policy};
	if (analyst_mode() && user_type_walker(expr, &user_typed))
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
		     std::string("casts to user-defined types and domains cannot be used in ") + where + " by analysts (type " +
		         pg_value([&] { return format_type_be(exprType(user_typed.found)); }) + ")",
		     "Compare declared columns with built-in types only, e.g. WHERE age >= 30 AND sex = 'F'.");
	// Stable functions (now(), current_date, date -> timestamptz casts, date_trunc on timestamptz)
	// are evaluated once, at analysis, on the declared points: their value is fixed for the
	// statement. Volatile ones would make the analysis itself random.
	if (contain_volatile_functions(expr))
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, std::string("volatile functions cannot be used in ") + where,
		     "Functions such as random() or clock_timestamp() would make the answer depend on more than the data; "
		     "now() and current_date are allowed (fixed once per statement).");
	if (analyst_mode())
		require_builtin_immutable(expr, where);

	List *vars = pull_var_clause(expr, 0);
	ListCell *lc;
	foreach (lc, vars) {
		Var *v = (Var *) lfirst(lc);
		if (v->varlevelsup != 0 || v->varno != 1)
			fail(ERRCODE_FEATURE_NOT_SUPPORTED, "outer references cannot be used in queries with dx aggregates", kShapeHint);
		if (v->varattno <= 0)
			fail(ERRCODE_FEATURE_NOT_SUPPORTED, "system columns and whole-row references cannot be used in queries with dx aggregates",
			     "Reference declared columns by name.");
		if (!policy.find(v->varattno)) {
			char *name = get_attname(policy.relid, v->varattno, true);
			char *rel = get_rel_name(policy.relid);
			if (policy.find_open(v->varattno)) // (planner/open_keys.h)
				fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
				     std::string("open column \"") + (name ? name : "?") + "\" of table \"" + (rel ? rel : "?") +
				         "\" can only be a bare GROUP BY key",
				     "Group by the open column itself and select it as it is; its values are never enumerated, so "
				     "conditions, expressions and aggregates on it cannot be analysed.");
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
			     std::string("column \"") + (name ? name : "?") + "\" of protected table \"" + (rel ? rel : "?") +
			         "\" is not declared",
			     std::string("The table owner can declare it with dx.set_column('") + (rel ? rel : "?") + "', '" +
			         (name ? name : "?") + "', <domain>, <metric>)." +
			         (std::string(where) == "aggregate arguments" ? " To count rows, use count(*), which reads no column." : ""));
		}
	}
}

// See planner/release_analysis.h.
void
collect_attnos(Node *expr, std::set<AttrNumber> &out)
{
	if (!expr)
		return;
	List *vars = pull_var_clause(expr, 0);
	ListCell *lc;
	foreach (lc, vars)
		out.insert(((Var *) lfirst(lc))->varattno);
}

// ---- one dx aggregate ----

// See planner/release_analysis.h.
double
aggregate_epsilon(Aggref *a, bool has_eps_arg)
{
	double eps = guc_epsilon;
	if (has_eps_arg) {
		const Const *e = folded_const((Node *) lsecond_node(TargetEntry, a->args)->expr);
		if (!e || e->constisnull)
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "epsilon of a dx aggregate must be a non-null constant",
			     "Write for example dx.count(col, 0.5).");
		eps = DatumGetFloat8(e->constvalue);
	}
	if (!(eps > 0) || std::isinf(eps))
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "epsilon must be positive and finite",
		     "Use a value such as 0.1; smaller values give more noise and spend less budget.");
	if (eps < kMinEpsilon) { // below it even a count (sensitivity 1) needs a noise scale above 1e15
		char text[64];
		snprintf(text, sizeof text, "%g", eps);
		fail(ERRCODE_INVALID_PARAMETER_VALUE, std::string("epsilon ") + text + " is too small",
		     "The smallest epsilon is 1e-15: below it the noise of a count (sensitivity 1) exceeds the limit of 1e15 "
		     "and the answer would carry no information; use a value such as 0.1.");
	}
	return eps;
}

// See planner/release_analysis.h.
void
reject_aggregate_order(Aggref *a)
{
	if (a->aggorder)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "ORDER BY inside dx aggregates is not supported", kShapeHint);
}

// See planner/release_analysis.h.
AggSpec
describe_count_units(Aggref *a, const TablePolicy &policy, const ExtensionObjects &ext)
{
	AggSpec spec{a, AggKind::CountUnits, 0, nullptr, a->aggfilter, 1, 0};
	const bool has_eps = a->aggfnoid == ext.count_units_eps;
	reject_aggregate_order(a);
	Node *arg = strip_implicit_coercions((Node *) linitial_node(TargetEntry, a->args)->expr);
	const bool is_unit = arg && IsA(arg, Var) && castNode(Var, arg)->varno == 1 &&
	                     castNode(Var, arg)->varlevelsup == 0 && policy.unit.present() &&
	                     castNode(Var, arg)->varattno == policy.unit.attnum;
	if (!policy.unit.present())
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "counting distinct values needs a table with a privacy unit",
		     "The number of distinct values is not a sum over rows. The table owner can declare who the rows "
		     "belong to with dx.set_privacy_unit(table, column, max_rows_per_unit); then dx.count_units(column) "
		     "counts them. GROUP BY col with dx.count(*) counts the rows of every declared value.");
	if (!is_unit)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "only the privacy unit column \"" + policy.unit.column + "\" can be counted distinctly",
		     "Write dx.count_units(" + std::string(quote_identifier(policy.unit.column.c_str())) +
		         ") (or COUNT(DISTINCT " + quote_identifier(policy.unit.column.c_str()) +
		         ")) for the number of units; the number of distinct values of another column has no sound "
		         "sensitivity: GROUP BY the column with dx.count_units counts the units of every declared value.");
	spec.epsilon = aggregate_epsilon(a, has_eps);
	spec.explicit_epsilon = has_eps;
	check_row_expression((Node *) spec.filter, policy, "FILTER clauses");
	return spec;
}

// See planner/release_analysis.h.
AggSpec
describe_aggregate(Aggref *a, const TablePolicy &policy, const ExtensionObjects &ext)
{
	AggSpec spec{a, AggKind::Count, 0, nullptr, a->aggfilter, 1, 0};
	const Oid f = a->aggfnoid;
	if (f == ext.count_units || f == ext.count_units_eps || (a->aggdistinct && f == ext.count_any))
		return describe_count_units(a, policy, ext);
	spec.kind = (f == ext.sum_any || f == ext.sum_any_eps)         ? AggKind::Sum
	            : (f == ext.avg_any || f == ext.avg_any_eps)       ? AggKind::Avg
	            : (f == ext.linear_any || f == ext.linear_any_eps) ? AggKind::Linear
	                                                               : AggKind::Count;
	const bool has_eps = f == ext.count_any_eps || f == ext.sum_any_eps || f == ext.avg_any_eps || f == ext.linear_any_eps;
	if (a->aggdistinct)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "DISTINCT inside dx aggregates is not supported", kShapeHint);
	reject_aggregate_order(a);
	spec.epsilon = aggregate_epsilon(a, has_eps);
	spec.explicit_epsilon = has_eps;
	Expr *value = f != ext.count_star ? linitial_node(TargetEntry, a->args)->expr : nullptr;
	if (value && spec.kind == AggKind::Count) {
		spec.weight = (Expr *) makeFuncExpr(ext.indicator, FLOAT8OID, list_make1(value), InvalidOid, InvalidOid,
		                                    COERCE_EXPLICIT_CALL);
	} else if (value) {
		Oid t = exprType((Node *) value);
		if (t != INT2OID && t != INT4OID && t != INT8OID && t != FLOAT4OID && t != FLOAT8OID && t != NUMERICOID)
			fail(ERRCODE_DATATYPE_MISMATCH,
			     std::string("dx aggregates cannot sum or average values of type ") + pg_value([&] { return format_type_be(t); }),
			     "Use a numeric expression (integer, numeric or floating point).");
		spec.weight = (Expr *) coerce_to_target_type(nullptr, (Node *) value, t, FLOAT8OID, -1, COERCION_EXPLICIT,
		                                             COERCE_IMPLICIT_CAST, -1);
	}
	spec.components = spec.kind == AggKind::Avg ? 2 : 1;
	// a part of stddev/corr/... (dispersion_spelling.h): its epsilon is the statistic's share of the
	// session epsilon, allocated jointly like a session-default one
	spec.part = spec.kind == AggKind::Linear && a->aggtype == FLOAT8ARRAYOID;
	spec.explicit_epsilon = spec.explicit_epsilon && !spec.part;
	check_row_expression((Node *) spec.weight, policy, "aggregate arguments");
	check_row_expression((Node *) spec.filter, policy, "FILTER clauses");
	return spec;
}

const char *
kind_name(AggKind k)
{
	switch (k) {
	case AggKind::Count:
		return "count";
	case AggKind::Sum:
		return "sum";
	case AggKind::Avg:
		return "avg";
	case AggKind::Linear:
		return "linear";
	case AggKind::CountUnits:
		return "count_units";
	}
	return "?";
}

// See planner/release_analysis.h.
std::string
over_limit(double value, double limit)
{
	char buf[160];
	snprintf(buf, sizeof buf, "%.3g, %.3g times the limit of %.3g", value, value / limit, limit);
	return buf;
}

// See planner/release_analysis.h.
void
refuse_over_work(const WorkEstimate &w, size_t m, const std::vector<const ColumnPolicy *> &cols)
{
	if (!w.over())
		return;
	std::string columns;
	for (const ColumnPolicy *c : cols)
		columns += (columns.empty() ? "" : ", ") + c->name + " (" + std::to_string(c->domain.size()) + " values)";
	char edges[64];
	snprintf(edges, sizeof edges, "%.3g", w.edges);
	if (m == 1)
		fail(ERRCODE_PROGRAM_LIMIT_EXCEEDED,
		     "computing the sensitivity of this query needs " + over_limit(w.work, w.cap) + " distance evaluations",
		     "The referenced columns " + columns + " have metrics whose every pair of values is compared; declare "
		     "coarser domains or a metric with few edges (absolute, graph, theta1), or reference fewer columns.");
	fail(ERRCODE_PROGRAM_LIMIT_EXCEEDED,
	     "the " + std::to_string(m) + " cells of this query need " + std::string(edges) +
	         " privacy constraints, a work of at least " + over_limit(w.work, w.cap),
	     "Each edge of the referenced columns' metrics " + columns + " is one constraint on every line of the "
	     "others: reference fewer columns, ask for fewer output cells (one aggregate per query, fewer groups), or "
	     "ask the table owner for coarser domains or a metric with few edges (absolute, graph).");
}

// ---- the whole query ----

// Refuses an aggregate whose argument is NULL at every declared point (22004).
[[noreturn]] void
refuse_null_argument(const AggSpec &s, size_t j)
{
	fail(ERRCODE_NULL_VALUE_NOT_ALLOWED,
	     std::string("the argument of dx.") + kind_name(s.kind) + " (aggregate " + std::to_string(j + 1) +
	         ") is NULL for every declared value",
	     "It would be answered as an exact 0 and still charged. Check the expression against the declared domains: "
	     "a NULL constant, or a CASE without ELSE whose conditions never hold; write ELSE 0 if 0 is meant.");
}

// See planner/release_analysis.h.
std::vector<ReleaseDescription>
describe_releases(const std::vector<AggSpec> &specs, Oid relid)
{
	std::vector<ReleaseDescription> out;
	if (explain_capture_active())
		return out;
	for (size_t j = 0; j < specs.size(); ++j) {
		ReleaseDescription d;
		d.aggregate = static_cast<int>(j) + 1;
		d.kind = specs[j].part ? "part" : kind_name(specs[j].kind);
		const Aggref *a = specs[j].aggref;
		if (a->aggstar || list_length(a->args) == 0) {
			d.expression = "*";
		} else {
			pg_call([&] {
				char *rel = get_rel_name(relid);
				List *ctx = deparse_context_for(rel ? rel : "t", relid);
				d.expression = deparse_expression((Node *) linitial_node(TargetEntry, a->args)->expr, ctx, false, false);
			});
			if (d.expression.size() > 200)
				d.expression = d.expression.substr(0, 197) + "...";
		}
		out.push_back(std::move(d));
	}
	return out;
}

// See planner/release_analysis.h.
void
register_releases(const std::vector<AggSpec> &specs, const std::map<int, int64> &charge_ids,
                  std::vector<ReleaseDescription> descriptions, std::vector<std::string> labels)
{
	if (explain_capture_active() || descriptions.size() != specs.size())
		return;
	std::vector<int64> ids;
	for (size_t j = 0; j < specs.size(); ++j) {
		Const *k = aggref_params_const(specs[j].aggref);
		if (!k)
			return; // not described: dx.last_release shows the aggregate without kind and text
		const NoiseParams p = parse_noise_params(pg_value([&] { return DatumGetArrayTypeP(k->constvalue); }));
		auto id = charge_ids.find(p.agg_index);
		if (id == charge_ids.end())
			return;
		ids.push_back(id->second);
		descriptions[j].aggregate = p.agg_index / p.sets + 1;
	}
	release_log_describe(ids, std::move(descriptions), std::move(labels));
}


// ---- one release: analysis, allocation, rewrite ----

// See planner/release_analysis.h.
void
refuse_for_privacy_unit(Oid relid, bool em, bool join, bool grouping_set)
{
	char *rel = get_rel_name(relid);
	const std::string name = std::string("\"") + (rel ? rel : "?") + "\"";
	const char *hint = "Use dx.count, dx.sum, dx.avg, dx.linear and dx.count_units, with WHERE and GROUP BY, on the "
	                   "table alone.";
	if (em)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED,
		     "dx.mode, dx.quantile and dx.median cannot be used on table " + name + ", which has a privacy unit", hint);
	if (join)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "joins cannot read table " + name + ", which has a privacy unit", hint);
	if (grouping_set)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED,
		     "GROUPING SETS, ROLLUP and CUBE cannot be used on table " + name + ", which has a privacy unit",
		     "Run one query per grouping set.");
}

// See planner/release_analysis.h.
bool
analyse_release(Query *q, const ExtensionObjects &ext, const Discovery &d, const std::set<AttrNumber> &extra_attnos,
                size_t cells_before, bool grouping_set, ReleaseAnalysis &a, bool shape_only)
{
	check_shape(q, d);
	a.relid = linitial_node(RangeTblEntry, q->rtable)->relid;
	const Oid relid = a.relid;
	TablePolicy &policy = a.policy;
	if (!load_table_policy(relid, policy)) {
		char *rel = get_rel_name(relid);
		fail(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, std::string("table \"") + (rel ? rel : "?") + "\" is not protected by dxpriv",
		     "The table owner can protect it with dx.protect_table and declare its columns with dx.set_column.");
	}
	apply_open_key_presence(policy); // grouped by an open key: presence min(p0, w/2) (planner/open_keys.h)
	a.where = q->jointree->quals;
	Node *where = a.where;
	check_row_expression(where, policy, "WHERE clauses");
	if (shape_only || contains_param((Node *) q, nullptr)) {
		// analysed when planned with its bound values; what needs no value is refused now (shape_only:
		// a join with parameters, whose parameters may have moved into a LEFT JOIN's ON)
		std::pair<const ExtensionObjects *, std::vector<Aggref *>> markers{&ext, {}};
		collect_markers((Node *) q->targetList, &markers);
		collect_markers(q->havingQual, &markers);
		for (Aggref *m : markers.second) {
			// (dx.count_units / count(DISTINCT): its unit column is checked with the bound values)
			if (m->aggfnoid != ext.count_units && m->aggfnoid != ext.count_units_eps &&
			    !(m->aggdistinct && m->aggfnoid == ext.count_any))
				check_row_expression((Node *) m->args, policy, "aggregate arguments");
			check_row_expression((Node *) m->aggfilter, policy, "FILTER clauses");
		}
		for (size_t s = 0; current_public_join() && s < current_public_join()->steps.size(); ++s)
			check_row_expression((Node *) current_public_join()->steps[s].on, policy, "ON clauses of LEFT JOINs");
		return false;
	}

	// GROUP BY keys: declared columns or expressions over them; the groups are the keys' image of
	// the declared domain (group_keys.h)
	// In a join, keys over public columns: the groups are the key tuples of the joined pairs, and a
	// point may fall in several (join_cells.h)
	a.join = current_public_join();
	const PublicRows *join = a.join;
	a.public_keys = join && groups_by_public_columns(q);
	const bool public_keys = a.public_keys;
	auto check = [&policy](Node *e, const char *w) { check_row_expression(e, policy, w); };
	a.keys = public_keys ? list_join_group_keys(q, policy, check)
	                     : analyse_group_keys(q, relid, policy, kMaxGroups, check);
	GroupKeys &keys = a.keys;
	const std::vector<const ColumnPolicy *> &group_cols = keys.cols;
	for (size_t s = 0; join && s < join->steps.size(); ++s)
		check_row_expression((Node *) join->steps[s].on, policy, "ON clauses of LEFT JOINs");

	std::pair<const ExtensionObjects *, std::vector<Aggref *>> found{&ext, {}};
	collect_markers((Node *) q->targetList, &found);
	collect_markers(q->havingQual, &found);
	// each kind takes and validates its aggregates (release_kind.h: the exponential mechanism first,
	// since it numbers every dx aggregate; the linear kind takes the rest)
	for (auto k = release_kinds().rbegin(); k != release_kinds().rend(); ++k)
		(*k)->analyse(found.second, a, ext, grouping_set);
	std::vector<AggSpec> &specs = a.specs;
	const int cells_per_group = a.cells_per_group;

	// sub-universe: every referenced column
	std::set<AttrNumber> &attnos = a.attnos;
	collect_attnos(where, attnos);
	for (const ColumnPolicy *c : group_cols)
		attnos.insert(c->attnum);
	for (TargetEntry *k : public_keys ? keys.keys : std::vector<TargetEntry *>{})
		collect_attnos((Node *) k->expr, attnos);
	for (size_t s = 0; join && s < join->steps.size(); ++s)
		collect_attnos((Node *) join->steps[s].on, attnos);
	for (const AggSpec &s : specs) {
		collect_attnos((Node *) s.weight, attnos);
		collect_attnos((Node *) s.filter, attnos);
	}
	attnos.insert(extra_attnos.begin(), extra_attnos.end());
	std::vector<const ColumnPolicy *> &cols = a.cols;
	a.sub = sub_universe_of(policy, attnos, cols);
	const SubUniverse &sub = a.sub;
	for (const ColumnPolicy *c : cols)
		for (const ColumnPolicy::Member &mem : c->members) // a group is read (and clamped) as a whole
			attnos.insert(mem.attnum);
	const size_t n = sub.size();
	// evaluate WHERE, filters and weights at every point
	std::vector<Expr *> exprs{(Expr *) where};
	for (const AggSpec &s : specs) {
		exprs.push_back(s.filter);
		exprs.push_back(s.weight);
	}

	// output group of every point: its projection on the keys' columns, grouped as analysed
	std::vector<size_t> group_of(n, 0);
	if (keys.grouped() && !public_keys) {
		std::vector<size_t> strides(cols.size(), 1);
		for (size_t c = cols.size(); c-- > 1;)
			strides[c - 1] = strides[c] * cols[c]->domain.size();
		for (size_t u = 0; u < n; ++u) {
			size_t v = 0;
			for (const ColumnPolicy *gc : group_cols) {
				size_t pos = std::find(cols.begin(), cols.end(), gc) - cols.begin();
				v = v * gc->domain.size() + (u / strides[pos]) % gc->domain.size();
			}
			group_of[u] = keys.group_of_point[v];
		}
	}

	// a join: a row at point u adds, in each group, the sum over the joined pairs (u, public rows)
	// of that group (ON and WHERE hold) of its weight; a COUNT counts the pairs, an AVG averages over
	// them. Evaluated here on the snapshot only (join_cells.h).
	JoinCells &jc = a.jc;
	if (join) {
		const double pairs = static_cast<double>(n) * join->combinations();
		if (pairs * static_cast<double>(std::max<size_t>(specs.size(), 1)) > kMaxJoinPairs)
			fail(ERRCODE_PROGRAM_LIMIT_EXCEEDED,
			     "the join needs " + std::to_string(static_cast<long long>(n)) + " points x " +
			         std::to_string(static_cast<long long>(join->combinations())) + " public rows x " +
			         std::to_string(specs.size()) + " aggregates evaluated at analysis, " +
			         over_limit(pairs * std::max<size_t>(specs.size(), 1), kMaxJoinPairs),
			     "Reference fewer or coarser protected columns, filter the public table into a smaller one, or use "
			     "fewer aggregates.");
		std::vector<Expr *> key_exprs;
		for (TargetEntry *k : public_keys ? keys.keys : std::vector<TargetEntry *>{})
			key_exprs.push_back(k->expr);
		jc = evaluate_join_cells(relid, cols, sub, exprs, key_exprs, group_of, keys.groups, *join, kMaxGroups);
		if (public_keys) {
			keys.groups = jc.groups;
			keys.value = jc.key_value;
			keys.is_null = jc.key_null;
		}
	}
	const size_t groups = keys.groups;
	const size_t m = groups * static_cast<size_t>(cells_per_group);
	const size_t statement_cells = cells_before + m; // of every grouping set analysed so far
	if (static_cast<double>(statement_cells) * static_cast<double>(n) > kMaxCellPoints)
		fail(ERRCODE_PROGRAM_LIMIT_EXCEEDED,
		     "query has too many output cells for its sub-universe: " + std::to_string(statement_cells) + " cells x " +
		         std::to_string(n) + " points is " +
		         over_limit(static_cast<double>(statement_cells) * static_cast<double>(n), kMaxCellPoints),
		     "Group by fewer or coarser columns, use fewer aggregates or grouping sets, or reference fewer columns.");
	// the calibration's work is known from the domains and metrics alone (and, for a join, its
	// groups): refuse before evaluating and allocating
	if (!specs.empty())
		refuse_over_work(calibration_work(sub, statement_cells), statement_cells, cols);
	if (!join && analyse_line_release(a, exprs, grouping_set)) // by pieces, no point evaluated (line_release.h)
		return true;
	UniverseValues vals;
	if (!join) { // over a points column under the pair tree: the evaluation is charged to the work
		// budget, or refused, before it runs (core/upfront_work.h; each tree checks its construction)
		charge_upfront_work(upfront_work(sub, exprs.size(), m), exprs.size());
		vals = evaluate_over_universe(relid, cols, sub, exprs);
	}

	// cells: (group, aggregate component); cell k = g * cells_per_group + first_cell + c
	// and the per-point table of each aggregate: what a row at point u adds (execution by lookup);
	// in a join, per point and group slot (u * slots + s), with the pair counts of an average
	const size_t slots = jc.slots;
	std::vector<std::vector<double>> &q_cells = a.q_cells;
	q_cells.assign(m, std::vector<double>(n, 0.0));
	std::vector<std::vector<std::optional<double>>> &tables = a.tables;
	tables.assign(specs.size(), std::vector<std::optional<double>>(n));
	std::vector<std::vector<std::optional<double>>> &count_tables = a.count_tables;
	count_tables.assign(specs.size(), {});
	std::vector<double> &lo = a.lo, &hi = a.hi;
	lo.assign(specs.size(), 0);
	hi.assign(specs.size(), 0);
	if (join) {
		for (size_t j = 0; j < specs.size(); ++j) {
			if (specs[j].weight && (specs[j].kind == AggKind::Count ? !jc.nonzero[j] : !jc.seen[j]))
				refuse_null_argument(specs[j], j);
			tables[j] = jc.sum[j];
			count_tables[j].assign(n * slots, std::nullopt);
			bool any = false;
			for (size_t u = 0; u < n; ++u)
				for (size_t s = 0; s < slots; ++s) {
					const std::optional<double> &w = jc.sum[j][u * slots + s];
					const std::optional<size_t> g = jc.group(u, s, group_of);
					if (!w || !g)
						continue;
					count_tables[j][u * slots + s] = jc.count[j][u * slots + s];
					lo[j] = any ? std::min(lo[j], *w) : *w;
					hi[j] = any ? std::max(hi[j], *w) : *w;
					any = true;
					const size_t base = *g * cells_per_group + specs[j].first_cell;
					q_cells[base][u] = *w;
					if (specs[j].components == 2)
						q_cells[base + 1][u] = jc.count[j][u * slots + s];
				}
			if (specs[j].kind == AggKind::Avg) { // the average of the pairs' weights lies in their range
				lo[j] = jc.pair_lo[j];
				hi[j] = jc.pair_hi[j];
			}
		}
	}
	a.group_of_point = group_of;
	if (!current_public_join()) { // the rows a WHERE keeps (partition selection, planner/open_keys.h)
		a.where_table.assign(n, std::nullopt);
		for (size_t u = 0; u < n; ++u)
			if (vals.value[0][u] != 0)
				a.where_table[u] = 1.0;
	}
	for (size_t j = 0; j < specs.size() && !current_public_join(); ++j) {
		const std::vector<double> &filt = vals.value[1 + 2 * j];
		const std::vector<double> &w = vals.value[2 + 2 * j];
		const std::vector<char> &w_null = vals.is_null[2 + 2 * j];
		bool seen = false, nonzero = false;
		for (size_t u = 0; u < n; ++u) {
			nonzero = nonzero || (!w_null[u] && w[u] != 0);
			if (!w_null[u]) {
				lo[j] = seen ? std::min(lo[j], w[u]) : w[u];
				hi[j] = seen ? std::max(hi[j], w[u]) : w[u];
				seen = true;
			}
			const bool pass = vals.value[0][u] != 0 && filt[u] != 0 && !w_null[u];
			if (!pass)
				continue;
			tables[j][u] = w[u];
			const size_t base = group_of[u] * cells_per_group + specs[j].first_cell;
			q_cells[base][u] = w[u];
			if (specs[j].components == 2)
				q_cells[base + 1][u] = 1.0;
		}
		// an argument that is NULL at every declared point (count: never non-NULL) is certainly a
		// mistake: it would be answered as an exact 0 and charged
		if (specs[j].weight && (specs[j].kind == AggKind::Count ? !nonzero : !seen))
			refuse_null_argument(specs[j], j);
	}
	if (guc_postprocess && !join && keys.grouped() && !em_kind().present(a) && !policy.unit.present())
		prune_groups_without_rows(keys, q_cells, cells_per_group, group_of, vals.value[0]); // group_pruning.h
	return true;
}

} // namespace dxpriv::pg::analysis
