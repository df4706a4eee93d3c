// Query analyzer: validates queries that use dx aggregates, computes each aggregate's exact
// generalized sensitivity over the declared sub-universe, and rewrites the query so that column
// values are clamped into their domains and the aggregates carry their noise parameters.
#include "pg/dxpriv.h"
#include "pg/analyst/analyst_guard.h"
#include "pg/analyst/probes.h"
#include "pg/planner/attr_rewrite.h"
#include "pg/planner/em_rewrite.h"
#include "pg/planner/explain.h"
#include "pg/planner/group_keys.h"
#include "pg/planner/group_source.h"
#include "pg/planner/grouping_sets.h"
#include "pg/planner/group_pruning.h"
#include "pg/planner/row_count.h"
#include "pg/executor/consistent_release.h"
#include "pg/planner/join_cells.h"
#include "pg/executor/agg_support.h"
#include "pg/guard.h"
#include "pg/metadata/catalog.h"
#include "pg/planner/distributed.h"
#include "pg/planner/node_build.h"
#include "pg/planner/parameters.h"
#include "pg/planner/point_lookup.h"
#include "pg/planner/public_joins.h"
#include "pg/planner/shard_pruning.h"
#include "pg/executor/noise_params.h"
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

namespace dxpriv::pg {

namespace {

post_parse_analyze_hook_type prev_post_parse_analyze = nullptr;
ProcessUtility_hook_type prev_process_utility = nullptr;
// Depth of EXPLAIN statements without ANALYZE being processed (their query is analysed again
// while it is explained, without the EXPLAIN around it).
int plain_explain_depth = 0;
int definition_depth = 0;   // > 0 while CREATE VIEW / RULE / MATERIALIZED VIEW / atomic function runs
int copy_depth = 0;         // > 0 while COPY runs (its query is analysed inside the utility)
int copy_out_depth = 0;     // of those, COPY (<query>) TO STDOUT: answered like the SELECT (issue 24)
SystemRandom charge_id_source;

// Location stamped on the aggregates we rewrite. The parser only produces -1 or offsets >= 0, so
// SQL text cannot forge it; it lets the hook recognise a query it already rewrote (EXPLAIN calls
// post_parse_analyze_hook a second time on its analysed query).
constexpr int kRewrittenLocation = -7417;

const char *kShapeHint = "Supported: SELECT [declared columns,] dx.count(*|col), dx.sum(expr), dx.avg(expr), "
                         "dx.linear(expr) [, ...] FROM <protected table> [WHERE <conditions on declared columns>] "
                         "[GROUP BY <declared columns or expressions over them>] [HAVING/ORDER BY/LIMIT].";
constexpr double kMinEpsilon = 1e-15;        // smallest aggregate epsilon (noise scale limit 1e15 / count)
constexpr size_t kMaxGroups = 10000;          // output groups of one GROUP BY
constexpr double kMaxCellPoints = 2e7;        // cells x sub-universe points held in memory

// ---- discovery ----

struct Discovery {
	const ExtensionObjects *ext;
	int depth = 0;
	int markers_top = 0, markers_nested = 0, internal = 0, rewritten = 0, other_aggs_top = 0;
	// EXPLAIN without ANALYZE runs nothing: Citus explains the coordinator's share of a distributed
	// release over a new connection, where the releases and native partials are not charged
	bool plain_explain = false;
};

// Counts dx aggregates by nesting level, and internal aggregates anywhere.
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
	if (IsA(node, FuncExpr) && d->ext->is_release(castNode(FuncExpr, node)->funcid)) {
		Const *k = release_params_const(node, *d->ext);
		if (!k || (!d->plain_explain && !was_charged(parse_noise_params(DatumGetArrayTypeP(k->constvalue)).charge_id)))
			d->internal++;
	}
	// the native partials of those releases (dx._state_of, dx._collect): the same rule
	if ((IsA(node, FuncExpr) && castNode(FuncExpr, node)->funcid == d->ext->state_of) ||
	    (IsA(node, Aggref) && (castNode(Aggref, node)->aggfnoid == d->ext->collect ||
	                           castNode(Aggref, node)->aggfnoid == d->ext->em_collect))) {
		Const *k = native_partial_params_const(node, *d->ext);
		if (!k || (!d->plain_explain && !was_charged(parse_noise_params(DatumGetArrayTypeP(k->constvalue)).charge_id)))
			d->internal++;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(discover), ctx);
}

// Collects the top-level dx aggregate nodes (to be rewritten in place).
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

// Rejects statement shapes dxpriv cannot answer.
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

// Checks an expression evaluated on declared domain points: only declared columns, immutable
// functions, no parameters; for analysts only built-in functions and types.
void
check_row_expression(Node *expr, const TablePolicy &policy, const char *where)
{
	if (!expr)
		return;
	UserTypeSearch user_typed{&policy};
	if (analyst_mode() && user_type_walker(expr, &user_typed))
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
		     std::string("casts to user-defined types and domains cannot be used in ") + where + " by analysts (type " +
		         format_type_be(exprType(user_typed.found)) + ")",
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
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
			     std::string("column \"") + (name ? name : "?") + "\" of protected table \"" + (rel ? rel : "?") +
			         "\" is not declared",
			     std::string("The table owner can declare it with dx.set_column('") + (rel ? rel : "?") + "', '" +
			         (name ? name : "?") + "', <domain>, <metric>)." +
			         (std::string(where) == "aggregate arguments" ? " To count rows, use count(*), which reads no column." : ""));
		}
	}
}

// Sorted distinct attribute numbers of the columns an expression references.
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

// ---- rewriting helpers ----

// ---- identities: charge ids and the answer-cache key ----

// The allocation a release's aggregates belong to (noise_params.h): every aggregate carries its id
// and totals, and the statement is charged the totals whatever the planner keeps.
struct AllocationIdentity {
	double epsilon = 0; // all of the allocation's aggregates: linear cells and exponential mechanism
	double delta = 0;   // the linear mechanism's delta (0: pure epsilon)
};

struct StampContext {
	const ExtensionObjects *ext;
	uint64 key;
	AllocationIdentity allocation;
	int64 alloc_id = 0;
	std::map<int, int64> charge_ids;  // aggregate index -> charge id
	std::map<int, int64> epsilon_ids; // aggregate of a grouping-set statement -> its sets' epsilon id
};

// A random id < 2^53 (exact in float8) for charge and epsilon ids.
int64
random_id()
{
	return static_cast<int64>(charge_id_source.next_u64() >> 12) + 1;
}

// Walker that writes the charge id and cache key into every rewritten aggregate's parameters.
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

// Key of a rewritten query for the answer cache: a hash of its tree without what only presents
// the released rows (output names, table aliases, ORDER BY, LIMIT/OFFSET: the release is the
// aggregates, not their presentation) and without source locations (so spacing and letter case
// of keywords do not matter), and of the role asking.
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
	std::string text = nodeToString(q);
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
	return hash_bytes_extended(reinterpret_cast<const unsigned char *>(normal.data()), static_cast<int>(normal.size()), 0x6478);
}

// Gives the rewritten aggregates their charge ids, the query's cache key and the identity of their
// allocation; returns the charge id of every aggregate index.
std::map<int, int64>
stamp_identities(Query *q, const ExtensionObjects &ext, const AllocationIdentity &allocation)
{
	StampContext ctx{&ext, query_cache_key(q), allocation};
	query_tree_walker(q, reinterpret_cast<bool (*)()>(stamp_walker), &ctx, 0);
	return ctx.charge_ids;
}

// ---- one dx aggregate ----

enum class AggKind { Count, Sum, Avg, Linear, CountUnits };

struct AggSpec {
	Aggref *aggref;
	AggKind kind;
	double epsilon;
	Expr *weight;     // float8 per-row weight before clamping (nullptr: constant 1, count(*))
	Expr *filter;     // FILTER clause or nullptr
	int components;   // 2 for avg (sum and count), else 1
	int first_cell;   // offset of this aggregate's components in a group's cells
	bool explicit_epsilon = false; // epsilon given as the aggregate's argument
};

// The epsilon of one aggregate: its constant second argument, or dxpriv.epsilon.
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

// Refuses ORDER BY inside a dx aggregate.
void
reject_aggregate_order(Aggref *a)
{
	if (a->aggorder)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "ORDER BY inside dx aggregates is not supported", kShapeHint);
}

// dx.count_units(unit [, epsilon]) and dx.count(DISTINCT unit): how many units have a counted row
// (README "Privacy units"). The argument must be the table's privacy unit column itself; COUNT
// DISTINCT of anything else has no sound sensitivity here and is refused with what to write instead.
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

// Validates one dx aggregate and describes its per-row weight.
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
			     std::string("dx aggregates cannot sum or average values of type ") + format_type_be(t),
			     "Use a numeric expression (integer, numeric or floating point).");
		spec.weight = (Expr *) coerce_to_target_type(nullptr, (Node *) value, t, FLOAT8OID, -1, COERCION_EXPLICIT,
		                                             COERCE_IMPLICIT_CAST, -1);
	}
	spec.components = spec.kind == AggKind::Avg ? 2 : 1;
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

// "X, N times the limit of L" for limit errors.
std::string
over_limit(double value, double limit)
{
	char buf[160];
	snprintf(buf, sizeof buf, "%.3g, %.3g times the limit of %.3g", value, value / limit, limit);
	return buf;
}

// Refuses (54000) a query whose noise calibration would exceed its work cap, before evaluation.
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

// What each linear aggregate computes, for dx.last_release (empty under dx.explain). Reads the
// aggregates' original arguments: call before rewriting them.
std::vector<ReleaseDescription>
describe_releases(const std::vector<AggSpec> &specs, Oid relid)
{
	std::vector<ReleaseDescription> out;
	if (explain_capture_active())
		return out;
	for (size_t j = 0; j < specs.size(); ++j) {
		ReleaseDescription d;
		d.aggregate = static_cast<int>(j) + 1;
		d.kind = kind_name(specs[j].kind);
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

// Registers the descriptions under the charge ids stamped into the rewritten aggregates (specs'
// Aggrefs give their aggregate index; the tree may hold copies of them, which were stamped).
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
		const NoiseParams p = parse_noise_params(DatumGetArrayTypeP(k->constvalue));
		auto id = charge_ids.find(p.agg_index);
		if (id == charge_ids.end())
			return;
		ids.push_back(id->second);
		descriptions[j].aggregate = p.agg_index / p.sets + 1;
	}
	release_log_describe(ids, std::move(descriptions), std::move(labels));
}


// ---- one release: analysis, allocation, rewrite ----

// What the analysis of one release (a SELECT with dx aggregates over one table) found before its
// cells are allocated: the aggregates, the groups, the sub-universe and every cell's weight at
// every point. Filled in place (keys and cols point into policy).
struct ReleaseAnalysis {
	Oid relid = InvalidOid;
	TablePolicy policy;
	Node *where = nullptr;
	GroupKeys keys;
	EmQuery em;
	std::vector<std::pair<Aggref *, size_t>> duplicates; // (copy, index of its representative)
	std::vector<AggSpec> specs;
	int cells_per_group = 0;
	double eps_total = 0;
	std::set<AttrNumber> attnos;                           // attributes read (whole column groups)
	std::vector<const ColumnPolicy *> cols;                // columns of the sub-universe, in point order
	SubUniverse sub;
	std::vector<std::vector<double>> q_cells;              // per cell, its weight at every point
	std::vector<std::vector<std::optional<double>>> tables; // per aggregate: what a row at point u adds
	std::vector<double> lo, hi;                            // per aggregate: range of its weight
	const PublicRows *join = nullptr;                      // a join with public tables (join_cells.h)
	bool public_keys = false;                              // GROUP BY public columns (slots)
	JoinCells jc;                                          // a join's sums per point and slot
	std::vector<std::vector<std::optional<double>>> count_tables; // a join's pair counts (avg)

	size_t cells() const { return q_cells.size(); }
	// Cell of aggregate j, group g, component c.
	size_t cell(size_t j, size_t g, int c) const
	{
		return g * static_cast<size_t>(cells_per_group) + static_cast<size_t>(specs[j].first_cell + c);
	}
};

// What a query on a table with a privacy unit cannot do yet (0A000 with a hint): the exponential
// mechanism, joins, grouping sets and Citus have no unit-level calibration or bounded source.
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
	if (citus_distributed_table(relid))
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "table " + name + " is distributed and has a privacy unit",
		     "Contribution bounding runs on one node only: query a local copy of the table, or remove the privacy "
		     "unit with dx.unset_privacy_unit.");
}

// A release that is one grouping set of a statement whose sets share one allocation.
struct SetIdentity {
	int set = 0, sets = 1;
};

// Validates one release and computes its cells (ReleaseAnalysis). extra_attnos: attributes the
// sub-universe must hold besides the release's own (the other grouping sets' keys, so that every
// set's cells live on one sub-universe); cells_before: cells of the sets analysed before it (the
// limits apply to the statement's cells). A query with parameters ($1) is only checked for its
// shape: returns false, and it is analysed when it is planned with its bound values
// (parameters.cpp); until then its dx aggregates are markers, which refuse to run. shape_only:
// only these checks, whatever the query holds (a join with parameters, whose parameters may have
// moved into a LEFT JOIN's ON).
bool
analyse_release(Query *q, const ExtensionObjects &ext, const Discovery &d, const std::set<AttrNumber> &extra_attnos,
                size_t cells_before, bool grouping_set, ReleaseAnalysis &a, bool shape_only = false)
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
	// ---- exponential mechanism dispatch (dx.mode, dx.quantile, dx.median; src/pg/planner/em_rewrite.h) ----
	// Their markers leave found.second here: they spend their own epsilon outside the linear
	// allocation and are rewritten by rewrite_em_aggregates() after the linear aggregates.
	EmAnalyzerHooks em_hooks;
	em_hooks.check_row_expression = [&policy](Node *e, const char *where_text) {
		check_row_expression(e, policy, where_text);
	};
	a.em = take_em_markers(found.second, policy, ext, em_hooks);
	if (current_public_join() && !a.em.specs.empty())
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "dx.mode, dx.quantile and dx.median cannot be used in joins yet",
		     "Use dx.count, dx.sum, dx.avg or dx.linear in a join with public tables.");
	if (grouping_set && !a.em.specs.empty())
		fail(ERRCODE_FEATURE_NOT_SUPPORTED,
		     "dx.mode, dx.quantile and dx.median cannot be used with GROUPING SETS, ROLLUP or CUBE yet",
		     "Their sets would not share the statement's epsilon: run them in one query per grouping set, or use "
		     "dx.count, dx.sum, dx.avg or dx.linear.");
	// ---- end of exponential mechanism dispatch ----
	if (policy.unit.present())
		refuse_for_privacy_unit(relid, !a.em.specs.empty(), join != nullptr, grouping_set);
	// Identical aggregates (a HAVING repeat of a SELECT aggregate; BETWEEN, which the parser turns
	// into two copies of its operand) are one release: one noise draw, charged once.
	std::vector<Aggref *> originals; // unmodified copies of the representatives
	std::vector<Aggref *> unique;
	for (Aggref *m : found.second) {
		size_t rep = 0;
		while (rep < originals.size() && !equal(originals[rep], m))
			++rep;
		if (rep < originals.size()) {
			a.duplicates.emplace_back(m, rep);
			continue;
		}
		originals.push_back(copy_node(m));
		unique.push_back(m);
	}
	std::vector<AggSpec> &specs = a.specs;
	for (Aggref *m : unique) {
		specs.push_back(describe_aggregate(m, policy, ext));
		specs.back().first_cell = a.cells_per_group;
		a.cells_per_group += specs.back().components;
		a.eps_total += specs.back().epsilon;
	}
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
	UniverseValues vals;
	if (!join)
		vals = evaluate_over_universe(relid, cols, sub, exprs);

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
	if (guc_postprocess && !join && keys.grouped() && a.em.specs.empty() && !policy.unit.present())
		prune_groups_without_rows(keys, q_cells, cells_per_group, group_of, vals.value[0]); // group_pruning.h
	return true;
}

// The allocation strategy for m cells (dxpriv.allocation), with a NOTICE when the exact solver's
// limit changes what runs.
AllocationStrategy
strategy_for_cells(size_t m)
{
	AllocationStrategy strategy = current_strategy();
	if (strategy == AllocationStrategy::MinTotalVariance && m > kMaxExactCells) {
		ereport(NOTICE, (errmsg("dxpriv: %zu output cells exceed the exact allocator's limit of %zu; using algorithm3",
		                        m, kMaxExactCells)));
		strategy = AllocationStrategy::BudgetDistribution;
	} else if (strategy == AllocationStrategy::Relative && m > kMaxExactCells) {
		ereport(NOTICE, (errmsg("dxpriv: %zu output cells exceed the exact allocator's limit of %zu; using the "
		                        "relative progressive filling (still never noisier than equal_split)",
		                        m, kMaxExactCells)));
	}
	return strategy;
}

// What the allocation shares: every avg (per group) is one estimate, its sum and count weighted
// by the delta method with the centre of the weight's range as the mean proxy; with an explicit
// epsilon on any aggregate, each aggregate's cells are allocated within its own epsilon (budget
// block j holds aggregate j's cells, in every grouping set). Starts a request over m cells.
AllocationRequest
start_request(const std::vector<AggSpec> &specs, size_t m)
{
	AllocationRequest request;
	request.strategy = strategy_for_cells(m);
	bool declared = false;
	for (const AggSpec &s : specs)
		declared = declared || s.explicit_epsilon;
	if (declared) {
		request.block_of.assign(m, 0);
		for (const AggSpec &s : specs)
			request.block_epsilon.push_back(s.epsilon);
	}
	return request;
}

// Adds the cells of one release, at `offset` among the statement's cells, to the request.
void
add_to_request(const ReleaseAnalysis &a, size_t offset, AllocationRequest &request)
{
	for (size_t j = 0; j < a.specs.size(); ++j) {
		for (size_t g = 0; g < a.keys.groups && !request.block_of.empty(); ++g)
			for (int c = 0; c < a.specs[j].components; ++c)
				request.block_of[offset + a.cell(j, g, c)] = j;
		if (a.specs[j].kind != AggKind::Avg)
			continue;
		const double mu = 0.5 * (a.lo[j] + a.hi[j]);
		for (size_t g = 0; g < a.keys.groups; ++g) {
			const size_t base = offset + a.cell(j, g, 0);
			request.estimates.push_back(Estimate{{base, base + 1}, {1.0, mu * mu}});
		}
	}
}

// Noise family of the linear cells (dxpriv.noise) and the query's delta: (epsilon, delta) families
// need the policy's per-query delta.
NoiseFamily
linear_noise_family(const ReleaseAnalysis &a, double &query_delta)
{
	const NoiseFamily family = static_cast<NoiseFamily>(guc_noise);
	if (family != NoiseFamily::Laplace && !a.specs.empty() && !(a.policy.delta > 0)) {
		char *rel = get_rel_name(a.relid);
		fail(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
		     std::string("noise family \"") + noise_family_name(family) + "\" needs a delta on table \"" +
		         (rel ? rel : "?") + "\"",
		     "Use SET dxpriv.noise = 'laplace' (pure epsilon), or ask the table owner to allow (epsilon, delta) "
		     "noise with dx.set_delta(table, 1e-6) and to grant a delta budget.");
	}
	query_delta = family == NoiseFamily::Laplace ? 0 : a.policy.delta;
	return family;
}

// True when some cell of the plan gets noise.
bool
any_noisy(const MultiLinearPlan &plan)
{
	for (const LinearNoisePlan &cell : plan.cells)
		if (cell.scale > 0)
			return true;
	return false;
}

// dx.explain: what the statement costs (epsilon over all its cells, which q holds, on sub).
void
capture_statement(const ReleaseAnalysis &a, double eps_total, AllocationStrategy strategy, NoiseFamily family,
                  double delta, const SubUniverse &sub, const std::vector<std::vector<double>> &q)
{
	ExplainCapture &cap = explain_capture();
	cap.relid = a.relid;
	cap.epsilon += eps_total; // a statement of several releases (wrappers) costs their sum
	cap.strategy = strategy_name(strategy);
	cap.noise = noise_family_name(family);
	cap.delta = delta;
	// (exponential mechanism dispatch: no linear cell, no baseline; a privacy unit: the row-level
	// baseline does not apply, dx.explain's unit_noise_factor tells the bound's cost instead)
	if (!a.specs.empty() && !a.policy.unit.present()) {
		// over the columns the cells depend on, so that it does not depend on the query's text
		const ProjectedCells relevant = project_to_relevant_columns(sub, q);
		cap.plain_dp_scale = plain_dp_scale(relevant.sub, relevant.q, eps_total, &cap.plain_dp_exact);
	}
	if (q.size() == 1 && cap.q.empty()) { // one linear cell: dx.explain checks for a marginal count
		cap.sub = sub;
		cap.q = q[0];
		cap.column_names.clear();
		for (const ColumnPolicy *c : a.cols)
			cap.column_names.push_back(c->name);
	}
}

// dx.explain: the cells of aggregate j of one release (at `offset` among the plan's cells), in
// ledger order. empty_label: the group label of a release without GROUP BY.
void
capture_cells(const ReleaseAnalysis &a, const MultiLinearPlan &plan, size_t offset, size_t j,
              const std::string &empty_label)
{
	ExplainCapture &cap = explain_capture();
	const AggSpec &s = a.specs[j];
	for (size_t g = 0; g < a.keys.groups; ++g) {
		const std::string label = a.keys.grouped() ? a.keys.label(g) : empty_label;
		for (int c = 0; c < s.components; ++c) {
			const size_t k = offset + a.cell(j, g, c);
			const LinearNoisePlan &p = plan.cells[k];
			cap.cells.push_back(ExplainCell{static_cast<int>(j) + 1, kind_name(s.kind), label,
			                                s.kind == AggKind::Avg ? (c == 0 ? "sum" : "count") : "value",
			                                plan.epsilon_share[k], p}); // what the cell received
			if (k < cap.unit_factor.size())
				cap.cells.back().unit_factor = cap.unit_factor[k];
			if (s.kind == AggKind::Avg && c == 1) {
				// the average itself: its 95% half-width is this value divided by the group's row
				// count (delta method at the domain-centre mean; dx.last_release gives it for the
				// released count), since the count is data
				const LinearNoisePlan &sum_plan = plan.cells[k - 1];
				ExplainCell avg_row{static_cast<int>(j) + 1, kind_name(s.kind), label, "average (x count)",
				                    plan.epsilon_share[k - 1] + plan.epsilon_share[k], p};
				avg_row.reported_half_width = average_half_width(sum_plan, p, (a.lo[j] + a.hi[j]) / 2, 1.0);
				avg_row.ledger = false;
				avg_row.plan.bound = 0;
				cap.cells.push_back(avg_row);
			}
		}
	}
}

ContributionBound unit_bound_of(const ReleaseAnalysis &a);

// What dx.last_release shows of a release: its aggregates' descriptions and its group labels.
struct ReleaseText {
	std::vector<ReleaseDescription> descriptions;
	std::vector<std::string> labels;
};

// Rewrites the aggregates of an analysed release with the noise of their cells (at `offset` among
// the plan's cells): each reads its weight from its per-point table at the row's point; WHERE and
// FILTER are folded into the tables, so no expression of the query runs on a row. set: the
// release's grouping set when the statement's sets share the plan (nullptr for a release alone).
// Charge ids and the cache key are stamped by the caller once the statement is rewritten.
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
	std::vector<Expr *> distinct_weights; // count_units: the per-point weights read by the bounded source
	// a grouped query on a Citus table gets every group from one state per aggregate when it is
	// planned (planner/distributed.h), not from an empty row per group in its source
	const bool distributed = citus_distributed_table(relid);
	if (distributed && !a.em.specs.empty() && !specs.empty())
		fail(ERRCODE_FEATURE_NOT_SUPPORTED,
		     "dx.mode, dx.quantile and dx.median on a Citus table cannot share a query with dx.count, dx.sum, "
		     "dx.avg or dx.linear yet",
		     "On a distributed table, ask for dx.mode, dx.quantile and dx.median in a query of their own (the linear "
		     "aggregates in another).");
	if (distributed && join && public_keys)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "joins with public tables grouped by public columns cannot run on Citus tables yet",
		     "Group a join of a distributed table by its declared columns, or join with the public table in a query "
		     "on a local copy.");
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
	for (size_t j = 0; j < specs.size(); ++j) {
		const AggSpec &s = specs[j];
		NoiseParams p;
		p.components = s.components;
		p.epsilon = s.epsilon;
		p.relid = relid;
		p.charge_id = 0; // stamped once the whole statement is rewritten
		p.agg_index = set ? static_cast<int>(j) * set->sets + set->set : static_cast<int>(j);
		p.agg_count = static_cast<int>(specs.size()) * (set ? set->sets : 1);
		p.epsilon_id = 0; // stamped with the charge ids (shared by the sets' copies of the aggregate)
		p.sets = set ? set->sets : 1;
		p.lo = a.lo[j];
		p.hi = a.hi[j];
		p.groups = static_cast<int>(groups);
		p.family = static_cast<int>(family);
		p.delta = delta; // the query's delta, carried by each of its aggregates
		if (a.policy.unit.present()) { // the ledger records the unit and the bound
			const ContributionBound b = unit_bound_of(a);
			p.unit_attnum = a.policy.unit.attnum;
			p.unit_rows = static_cast<int>(b.max_rows);
			const bool limits = grouped && (b.max_groups < b.max_rows || b.max_rows_per_group < b.max_rows);
			p.unit_groups = limits ? static_cast<int>(b.max_groups) : 0; // 0: no group limit (for_query)
			p.unit_rows_per_group = limits ? static_cast<int>(b.max_rows_per_group) : 0;
		}
		for (size_t g = 0; g < groups; ++g)
			for (int c = 0; c < s.components; ++c) {
				const LinearNoisePlan &cell = plan.cells[offset + a.cell(j, g, c)];
				p.cells.push_back(cell.grid);
				p.cells.push_back(cell.scale);
				p.cells.push_back(cell.bound);
			}
		// a value's table does not depend on the GROUP BY columns, a count's often on none: the
		// lookup maps only the columns its table depends on (not with slots or privacy units)
		Expr *weight = slot || a.policy.unit.present() || s.kind == AggKind::CountUnits
		                   ? weigh_expr(cols, a.tables[j], false, ext, copy_node(slot), slots)
		                   : reduced_weigh_expr(cols, a.tables[j], false, ext);
		if (grouped && !distributed && s.kind != AggKind::CountUnits) // the empty-group rows create the group's state (so it gets a noisy answer) but add nothing
			weight = real_rows_only(weight, FLOAT8OID, nullptr);
		Aggref *agg = s.aggref;
		const bool pair_avg = join && s.kind == AggKind::Avg; // its count grows by the row's joined pairs
		if (s.kind == AggKind::CountUnits) { // the unit's first counted row of its group adds 1 (unit_source.h)
			distinct_weights.push_back(weight); // dx._weigh: 1 or NULL at the row's point
			weight = unit_count_weight(distinct_weights.size() - 1, grouped);
		}
		Oid internal = s.kind == AggKind::Count || s.kind == AggKind::CountUnits ? ext.noisy_count
		               : s.kind == AggKind::Avg ? (pair_avg ? ext.noisy_avg_pairs : ext.noisy_avg)
		                                        : ext.noisy_sum;
		Const *params = makeConst(FLOAT8ARRAYOID, -1, InvalidOid, -1, PointerGetDatum(build_noise_params(p)), false, false);
		agg->aggfnoid = internal;
		agg->aggargtypes = list_make3_oid(FLOAT8OID, INT4OID, FLOAT8ARRAYOID);
		agg->args = list_make3(makeTargetEntry(weight, 1, nullptr, false),
		                     makeTargetEntry((Expr *) copy_node(group_index), 2, nullptr, false),
		                     makeTargetEntry((Expr *) params, 3, nullptr, false));
		if (pair_avg) {
			Expr *pairs = weigh_expr(cols, a.count_tables[j], false, ext, copy_node(slot), slots);
			if (grouped && !distributed) // (as the weight above)
				pairs = real_rows_only(pairs, FLOAT8OID, nullptr);
			agg->aggargtypes = lappend_oid(agg->aggargtypes, FLOAT8OID);
			agg->args = lappend(agg->args, makeTargetEntry(pairs, 4, nullptr, false));
		}
		agg->aggstar = false;
		agg->aggvariadic = false;
		agg->aggdistinct = NIL; // dx.count(DISTINCT unit): the bounded source flags each unit's first row
		agg->aggfilter = nullptr;
		agg->inputcollid = InvalidOid;
		agg->location = kRewrittenLocation;
	}
	for (auto &[dup, rep] : a.duplicates) {
		const Aggref *r = specs[rep].aggref;
		dup->aggfnoid = r->aggfnoid;
		dup->aggargtypes = list_copy(r->aggargtypes);
		dup->args = static_cast<List *>(copyObjectImpl(r->args));
		dup->aggstar = r->aggstar;
		dup->aggdistinct = NIL;
		dup->aggvariadic = r->aggvariadic;
		dup->aggfilter = static_cast<Expr *>(copyObjectImpl(r->aggfilter));
		dup->inputcollid = r->inputcollid;
		dup->location = r->location;
	}

	// ---- exponential mechanism dispatch: sensitivity, parameters and rewrite (src/pg/planner/em_rewrite.h) ----
	if (!a.em.specs.empty()) {
		std::vector<Aggref *> linear_aggrefs;
		for (const AggSpec &s : specs)
			linear_aggrefs.push_back(s.aggref);
		if (!keys.plain_columns)
			fail(ERRCODE_FEATURE_NOT_SUPPORTED, "dx.mode, dx.quantile and dx.median cannot be grouped by expressions yet",
			     "Group them by declared columns, or run the linear aggregates (count, sum, avg) with the "
			     "expression alone.");
		rewrite_em_aggregates(q, a.em,
		                      EmRewriteInput{relid, &a.policy, &ext, a.where, &keys, group_index, kRewrittenLocation,
		                                     linear_aggrefs, distributed});
	}
	// ---- end of exponential mechanism dispatch ----

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
	if (a.policy.unit.present()) { // the bounded rows of each unit (README "Privacy units")
		if (grouped)
			replace_group_keys(q, keys, group_index, ext);
		UnitSource source;
		source.policy = &a.policy;
		source.columns.assign(a.attnos.begin(), a.attnos.end());
		source.bound = unit_bound_of(a);
		source.keys = grouped ? &keys : nullptr;
		source.group_index = grouped ? group_index : nullptr;
		source.distinct_weights = distinct_weights;
		const std::map<AttrNumber, AttrNumber> mapping = replace_with_unit_source(q, source);
		q->targetList = (List *) remap_vars((Node *) q->targetList, mapping);
		q->havingQual = remap_vars(q->havingQual, mapping);
		return text;
	}
	if (!grouped) {
		check_no_public_column();
		return text;
	}
	replace_group_keys(q, keys, group_index, ext);
	if (distributed) { // every group comes from one state per aggregate (planner/distributed.h)
		check_no_public_column();
		return text;
	}
	// GROUP BY: read from the table plus one empty row per group
	em_collect_attnos(a.em, a.policy, a.attnos); // (exponential mechanism dispatch: the columns they read)
	std::vector<AttrNumber> columns(a.attnos.begin(), a.attnos.end());
	std::map<AttrNumber, AttrNumber> mapping;
	if (public_keys) { // rows of a point without a group (no slot) are not read
		NullTest *nt = makeNode(NullTest);
		nt->arg = (Expr *) copy_node(group_index);
		nt->nulltesttype = IS_NOT_NULL;
		nt->argisrow = false;
		nt->location = -1;
		q->jointree->quals = (Node *) nt;
		mapping = replace_with_slot_group_source(q, a.policy, columns, slots, groups);
	} else {
		mapping = replace_with_group_source(q, a.policy, columns, keys);
	}
	q->targetList = (List *) remap_vars((Node *) q->targetList, mapping);
	q->havingQual = remap_vars(q->havingQual, mapping);
	q->jointree->quals = remap_vars(q->jointree->quals, mapping);
	return text;
}

// The contribution bound of a release on a table with a privacy unit (README "Privacy units").
ContributionBound
unit_bound_of(const ReleaseAnalysis &a)
{
	const UnitPolicy &u = a.policy.unit;
	return ContributionBound::for_query(static_cast<size_t>(u.max_rows), static_cast<size_t>(u.max_groups),
	                                    static_cast<size_t>(u.max_rows_per_group), a.keys.grouped());
}

// How each cell of a release aggregates a unit's rows: its group, and whether it counts units.
UnitCells
unit_cells_of(const ReleaseAnalysis &a)
{
	UnitCells cells;
	for (size_t j = 0; j < a.specs.size(); ++j)
		for (size_t g = 0; g < a.keys.groups; ++g)
			for (int c = 0; c < a.specs[j].components; ++c) {
				const size_t k = a.cell(j, g, c);
				if (cells.group.size() <= k) {
					cells.group.resize(k + 1, 0);
					cells.distinct.resize(k + 1, 0);
				}
				cells.group[k] = g;
				cells.distinct[k] = a.specs[j].kind == AggKind::CountUnits;
			}
	return cells;
}

// "person_id: 10 rows per unit" (and ", 3 groups, 2 rows per group" for a bound with group limits,
// which ContributionBound::for_query no longer gives): the bound as dx.explain shows it.
std::string
unit_bound_text(const ReleaseAnalysis &a, const ContributionBound &b)
{
	std::string t = a.policy.unit.column + ": " + std::to_string(b.max_rows) + " rows per unit";
	if (a.keys.grouped() && (b.max_groups < b.max_rows || b.max_rows_per_group < b.max_rows))
		t += ", " + std::to_string(b.max_groups) + " groups, " + std::to_string(b.max_rows_per_group) +
		     " rows per group";
	return t;
}

// The noise plan of one release: the unit-level calibration on a table with a privacy unit (Laplace
// only), otherwise the row-level one of the noise family.
MultiLinearPlan
plan_release(const ReleaseAnalysis &a, double query_delta, NoiseFamily family, const AllocationRequest &request)
{
	if (a.specs.empty()) // (exponential mechanism dispatch: a query may hold no linear aggregate at all)
		return MultiLinearPlan{};
	if (!a.policy.unit.present())
		return plan_multi_linear_noise(a.sub, a.q_cells, a.eps_total, query_delta, family, request);
	if (family != NoiseFamily::Laplace)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED,
		     std::string("noise family \"") + noise_family_name(family) + "\" is not available on tables with a privacy unit",
		     "Use SET dxpriv.noise = 'laplace': the unit-level calibration is pure epsilon.");
	const ContributionBound bound = unit_bound_of(a);
	const UnitCells cells = unit_cells_of(a);
	MultiLinearPlan plan = plan_unit_linear(a.sub, a.q_cells, a.eps_total, request, cells, bound);
	if (explain_capture_active()) { // the bound's effect: the same query with one row per unit
		ExplainCapture &cap = explain_capture();
		const MultiLinearPlan one =
			plan_unit_linear(a.sub, a.q_cells, a.eps_total, request, cells, ContributionBound::for_query(1, 1, 1, a.keys.grouped()));
		cap.unit_bound = unit_bound_text(a, bound);
		cap.unit_factor.clear();
		for (size_t k = 0; k < plan.cells.size(); ++k)
			cap.unit_factor.push_back(one.cells[k].scale > 0 ? plan.cells[k].scale / one.cells[k].scale : -1);
	}
	return plan;
}

// Validates and rewrites one SELECT that contains dx aggregates: one release, its cells allocated
// within its epsilon. A query with parameters, or shape_only, is only checked (analyse_release).
void
rewrite_query(Query *q, const ExtensionObjects &ext, const Discovery &d, bool shape_only = false)
{
	ReleaseAnalysis a;
	if (!analyse_release(q, ext, d, {}, 0, false, a, shape_only))
		return;
	AllocationRequest request = start_request(a.specs, a.cells());
	add_to_request(a, 0, request);
	double query_delta = 0;
	const NoiseFamily family = linear_noise_family(a, query_delta);
	// (exponential mechanism dispatch: a query may hold no linear aggregate at all)
	const MultiLinearPlan plan = plan_release(a, query_delta, family, request);
	const double delta = any_noisy(plan) ? query_delta : 0;
	if (explain_capture_active()) { // dx.explain: what each cell would cost, without running anything
		capture_statement(a, a.eps_total, request.strategy, family, delta, a.sub, a.q_cells);
		for (size_t j = 0; j < a.specs.size(); ++j)
			capture_cells(a, plan, 0, j, "");
	}
	ReleaseText text = rewrite_release(q, ext, a, plan, 0, family, delta, nullptr);
	// the allocation: the linear cells' epsilon and every exponential-mechanism aggregate's own
	AllocationIdentity allocation{a.eps_total, delta};
	for (const EmSpec &s : a.em.specs)
		allocation.epsilon += s.epsilon;
	const std::map<int, int64> ids = stamp_identities(q, ext, allocation);
	register_releases(a.specs, ids, std::move(text.descriptions), std::move(text.labels));
}

// ---- joins with public tables ----

// What take_join did with a query: no join with a protected table; the join taken (the query reads
// the protected table alone, its public rows in `rows`); or deferred, for a query with bound
// parameters: checked now on a copy, left as it is, and taken with its values when planned
// (analyze_bound_query), so each execution reads the public tables at its own analysis.
enum class JoinTake { None, Taken, Deferred };

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

// SQLAlchemy's query(P).filter(...).count() and other builders aggregate over a subquery of rows:
// SELECT count(*) FROM (SELECT * FROM t WHERE c) AS anon_1. When the subquery only filters and
// projects one table (no aggregate, grouping, DISTINCT, LIMIT, set operation, sublink, SRF or
// window), it is merged into the aggregate query, as PostgreSQL's planner would pull it up:
// SELECT count(*) FROM t WHERE c. Returns true when q was changed.
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
	    sub->hasSubLinks || sub->hasTargetSRFs || sub->hasWindowFuncs || sub->rowMarks || list_length(sub->rtable) != 1 ||
	    linitial_node(RangeTblEntry, sub->rtable)->rtekind != RTE_RELATION || list_length(sub->jointree->fromlist) != 1 ||
	    !IsA(linitial(sub->jointree->fromlist), RangeTblRef))
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

// Whether q's own FROM reads a protected table (analysts) or q has dx aggregates (everyone).
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

void rewrite_grouping_sets(Query *q, const ExtensionObjects &ext, const AnalystContext *ac);

// Analyses and rewrites one release nested in a wrapper, like a top-level dx query.
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
	rewrite_query(sub, ext, d);
	if (ac) {
		if (count_protected_refs(sub, *ac) != 1)
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "analysts can read one protected table per query",
			     analyst_hint(first_protected_ref(sub, *ac)));
		admit_protected_reads(sub, *ac);
	}
}

// ---- GROUPING SETS, ROLLUP and CUBE: one statement, one allocation ----

// The Discovery of q's dx aggregates.
Discovery
discovery_of(Query *q, const ExtensionObjects &ext)
{
	Discovery d{&ext};
	query_tree_walker(q, reinterpret_cast<bool (*)()>(discover), &d, 0);
	return d;
}

// Answer-cache key of a statement made of grouping-set releases: the releases' keys in set order.
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

// Attributes the GROUP BY keys of q read, after the analyzer's check of each key expression.
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

// Answers a query with GROUPING SETS, ROLLUP or CUBE over dx aggregates (q, a release level) as
// ONE release: q becomes the UNION ALL of one grouped query per set (grouping_sets.h), whose cells
// -- every group of every set, on one sub-universe -- are allocated together within the
// statement's epsilon (a record moves one cell of every set, so Σ over all sets' cells of
// a_k(i,j)/b_k <= eps·d(i,j) is the statement's privacy condition), exactly as the cells of one
// multi-aggregate query; each branch then carries its cells' share of that plan. All branches
// share one answer-cache key and, per aggregate, one epsilon id: the statement is charged its
// aggregates' epsilons once (noise_params.h). One grouping set is an ordinary release. A query
// with parameters is only checked and left as it is: analyze_bound_query analyses it with its
// bound values. Over a join with public tables each set is still a release of its own (charged
// its own epsilon; README). ac: the analyst's context (nullptr for a table owner).
void
rewrite_grouping_sets(Query *q, const ExtensionObjects &ext, const AnalystContext *ac)
{
	if (ac && list_length(q->rtable) == 1)
		rewrite_plain_aggregates(q, ext);
	Query *u = expand_grouping_sets_into_union(q);
	if (!u)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv: a query with grouping sets has no grouping set");
	const std::vector<Query *> branches = grouping_set_branches(u);
	if (is_join_query(q)) { // over a join with public tables: each set still a release of its own
		*q = *u;
		for (Query *b : branches)
			rewrite_nested_release(b, ext, ac);
		return;
	}
	for (Query *b : branches)
		if (discovery_of(b, ext).markers_top == 0) {
			if (ac)
				refuse_unaggregated_read(b, *ac);
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv: a grouping set lost its dx aggregates");
		}
	auto admit = [&](Query *b) {
		if (!ac)
			return;
		if (count_protected_refs(b, *ac) != 1)
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "analysts can read one protected table per query",
			     analyst_hint(first_protected_ref(b, *ac)));
		admit_protected_reads(b, *ac);
	};
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
		consistent_register(cc);
	}
	for (Query *b : branches)
		admit(b);
}

// Rewrites the releases nested in q's FROM subqueries, CTEs and set-operation branches (the outer
// levels only post-process their answers: ORDER BY, LIMIT, window functions, % of total, joins with
// released rows); CTEs holding a release are materialised, so each release runs once. Returns the
// number of releases found; refuses releases reachable through sublinks or LATERAL.
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
		if (is_release_level(sub, ext, ac)) {
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
		if (is_release_level(rte->subquery, ext, ac)) {
			rewrite_nested_release(rte->subquery, ext, ac);
			found++;
		} else {
			found += rewrite_wrapped_releases(rte->subquery, ext, ac);
		}
	}
	return found;
}

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
			rewrite_query(q, *ext, d);
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
	rewrite_query(q, *ext, d);
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
	rewrite_query(q, *ext, d);
	if (ac.analyst) {
		if (count_protected_refs(q, ac) != 1)
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "analysts can read one protected table per query",
			     analyst_hint(first_protected_ref(q, ac)));
		admit_protected_reads(q, ac);
	}
}

namespace {

extern "C" void
dx_post_parse_analyze(ParseState *pstate, Query *query, JumbleState *jstate)
{
	if (prev_post_parse_analyze)
		prev_post_parse_analyze(pstate, query, jstate);
	// Citus analyses the queries it generates (intermediate results, partial aggregates) as the
	// current user: only the client's own text is held to the Citus-internals refusal
	// (restored afterwards: dxpriv's own catalog queries are analysed in between)
	const bool outer = set_client_statement_text(pstate && pstate->p_sourcetext && debug_query_string &&
	                                             strcmp(pstate->p_sourcetext, debug_query_string) == 0);
	if (!in_internal_query())
		guarded([&] { analyze(query); });
	set_client_statement_text(outer);
}

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

// Marks statements that store an analysed query for later (views, rules, atomic SQL functions).
extern "C" void
dx_process_utility(PlannedStmt *pstmt, const char *query_string, bool read_only_tree, ProcessUtilityContext context,
                   ParamListInfo params, QueryEnvironment *query_env, DestReceiver *dest, QueryCompletion *qc)
{
	Node *stmt = pstmt->utilityStmt;
	if (IsA(stmt, CreateFunctionStmt) && !check_function_bodies)
		guarded([&] { refuse_unchecked_function_for_analysts(); });
	bool defines = IsA(stmt, ViewStmt) || IsA(stmt, RuleStmt) ||
	               (IsA(stmt, CreateFunctionStmt) && castNode(CreateFunctionStmt, stmt)->sql_body != nullptr);
	bool copies = IsA(stmt, CopyStmt);
	// COPY (<query>) TO STDOUT sends the rows to the client like a SELECT (DuckDB fetches with it)
	const bool copies_out = copies && castNode(CopyStmt, stmt)->query && !castNode(CopyStmt, stmt)->is_from &&
	                        !castNode(CopyStmt, stmt)->filename && !castNode(CopyStmt, stmt)->is_program;
	if (IsA(stmt, GrantStmt))
		guarded([&] { check_citus_grant(castNode(GrantStmt, stmt)); });
	if (IsA(stmt, VariableSetStmt))
		guarded([&] { check_citus_set(castNode(VariableSetStmt, stmt)); });
	if (copies)
		guarded([&] { check_copy(castNode(CopyStmt, stmt)); });
	int analyst_scope = 0; // EXPLAIN and result-storing statements of analysts (analyst_guard.h)
	guarded([&] { analyst_scope = enter_analyst_utility(stmt); });
	if (defines)
		definition_depth++;
	if (copies)
		copy_depth++;
	if (copies_out)
		copy_out_depth++;
	const bool plain_explain = is_plain_explain(stmt);
	if (plain_explain)
		plain_explain_depth++;
	PG_TRY();
	{
		if (prev_process_utility)
			prev_process_utility(pstmt, query_string, read_only_tree, context, params, query_env, dest, qc);
		else
			standard_ProcessUtility(pstmt, query_string, read_only_tree, context, params, query_env, dest, qc);
	}
	PG_FINALLY();
	{
		if (defines)
			definition_depth--;
		if (copies)
			copy_depth--;
		if (copies_out)
			copy_out_depth--;
		if (plain_explain)
			plain_explain_depth--;
		leave_analyst_utility(analyst_scope);
	}
	PG_END_TRY();
}

} // namespace

// See dxpriv.h.
void
install_analyzer_hooks()
{
	prev_post_parse_analyze = post_parse_analyze_hook;
	post_parse_analyze_hook = dx_post_parse_analyze;
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = dx_process_utility;
}

} // namespace dxpriv::pg
