// Query analyzer: validates queries that use dx aggregates, computes each aggregate's exact
// generalized sensitivity over the declared sub-universe, and rewrites the query so that column
// values are clamped into their domains and the aggregates carry their noise parameters.
#include "pg/dxpriv.h"
#include "pg/analyst/analyst_guard.h"
#include "pg/planner/em_rewrite.h"
#include "pg/planner/explain.h"
#include "pg/planner/group_source.h"
#include "pg/executor/agg_support.h"
#include "pg/guard.h"
#include "pg/planner/node_build.h"
#include "pg/planner/point_lookup.h"
#include "pg/executor/noise_params.h"
#include "pg/planner/universe_eval.h"

#include "core/allocation.h"
#include "core/approximate_dp.h"
#include "core/linear_query.h"
#include "core/sensitivity.h"

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
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parse_coerce.h"
#include "parser/parsetree.h"
#include "optimizer/tlist.h"
#include "tcop/utility.h"
#include "utils/array.h"
#include "utils/fmgroids.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "common/hashfn.h"
#include "miscadmin.h"
}

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace dxpriv::pg {

namespace {

post_parse_analyze_hook_type prev_post_parse_analyze = nullptr;
ProcessUtility_hook_type prev_process_utility = nullptr;
int definition_depth = 0;   // > 0 while CREATE VIEW / RULE / MATERIALIZED VIEW / atomic function runs
int copy_depth = 0;         // > 0 while COPY runs (its query is analysed inside the utility)
SystemRandom charge_id_source;

// Location stamped on the aggregates we rewrite. The parser only produces -1 or offsets >= 0, so
// SQL text cannot forge it; it lets the hook recognise a query it already rewrote (EXPLAIN calls
// post_parse_analyze_hook a second time on its analysed query).
constexpr int kRewrittenLocation = -7417;

const char *kShapeHint = "Supported: SELECT [declared columns,] dx.count(*|col), dx.sum(expr), dx.avg(expr), "
                         "dx.linear(expr) [, ...] FROM <protected table> [WHERE <conditions on declared columns>] "
                         "[GROUP BY <declared columns>] [HAVING/ORDER BY/LIMIT].";
constexpr double kMinEpsilon = 1e-15;        // smallest aggregate epsilon (noise scale limit 1e15 / count)
constexpr size_t kMaxGroups = 10000;          // output groups of one GROUP BY
constexpr double kMaxCellPoints = 2e7;        // cells x sub-universe points held in memory

// ---- discovery ----

struct Discovery {
	const ExtensionObjects *ext;
	int depth = 0;
	int markers_top = 0, markers_nested = 0, internal = 0, rewritten = 0, other_aggs_top = 0;
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

// True when the expression contains a query parameter ($1).
bool
contains_param(Node *node, void *ctx)
{
	if (!node)
		return false;
	if (IsA(node, Param))
		return true;
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(contains_param), ctx);
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
	if (q->hasWindowFuncs)
		reject("window functions");
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
	const Oid type = IsA(node, List) ? InvalidOid : exprType(node); // argument lists have no type
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
	if (contain_mutable_functions(expr))
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, std::string("only immutable functions can be used in ") + where,
		     "Functions such as random() or now() would make the answer depend on more than the data.");
	if (analyst_mode())
		require_builtin_immutable(expr, where);
	if (contains_param(expr, nullptr))
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "query parameters cannot be used in queries with dx aggregates yet",
		     "Send the values as literals.");
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
			         (name ? name : "?") + "', <domain>, <metric>).");
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

// The expression that maps column v into its declared domain (group keys and post-processing:
// plain declared columns only; a member of a column group never appears outside an aggregate).
Expr *
make_clamp(Var *v, const ColumnPolicy &col, const ExtensionObjects &ext)
{
	if (col.is_group())
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "a column of a column group can be used only inside dx aggregates",
		     "Group by separately declared columns; a group such as (lon, lat) is a location, not a category.");
	Oid fn = col.domain.kind() == DomainKind::Enumerated ? ext.clamp_enum : ext.clamp_range;
	return (Expr *) makeFuncExpr(fn, v->vartype, lcons(v, domain_arg_tail(col.domain)), v->varcollid, v->varcollid,
	                             COERCE_EXPLICIT_CALL);
}

struct ClampContext {
	const ExtensionObjects *ext;
	const TablePolicy *policy;
};

// Replaces every column reference by its clamp expression (rewritten aggregates are left alone:
// their arguments are clamped already).
Node *
clamp_mutator(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	auto *c = static_cast<ClampContext *>(ctx);
	if (IsA(node, Var)) {
		Var *v = castNode(Var, node);
		const ColumnPolicy *col = v->varattno > 0 ? c->policy->find(v->varattno) : nullptr;
		if (v->varlevelsup == 0 && v->varno == 1 && col)
			return (Node *) make_clamp(copy_node(v), *col, *c->ext);
		return node;
	}
	if (IsA(node, Aggref) && castNode(Aggref, node)->location == kRewrittenLocation)
		return node;
	return expression_tree_mutator(node, reinterpret_cast<Node *(*) ()>(clamp_mutator), ctx);
}

Node *
clamp(Node *expr, const ClampContext &ctx)
{
	return expr ? clamp_mutator(expr, const_cast<ClampContext *>(&ctx)) : nullptr;
}

// ---- identities: charge ids and the answer-cache key ----

struct StampContext {
	const ExtensionObjects *ext;
	uint64 key;
	std::map<int, int64> charge_ids; // aggregate index -> charge id
};

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
			id = static_cast<int64>(charge_id_source.next_u64() >> 12) + 1; // < 2^53: exact in float8
		p.charge_id = id;
		p.cache_key = c->key;
		k->constvalue = PointerGetDatum(build_noise_params(p));
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(stamp_walker), ctx);
}

// Key of a rewritten query for the answer cache: a hash of its tree with source locations removed
// (so spacing and letter case of keywords do not matter), and of the role asking.
uint64
query_cache_key(Query *q)
{
	std::string text = nodeToString(q);
	std::string normal;
	normal.reserve(text.size());
	for (size_t i = 0; i < text.size();) {
		if (text.compare(i, 10, ":location ") == 0) {
			i += 10;
			while (i < text.size() && (text[i] == '-' || isdigit(static_cast<unsigned char>(text[i]))))
				++i;
			continue;
		}
		normal += text[i++];
	}
	Oid role = GetUserId();
	normal.append(reinterpret_cast<const char *>(&role), sizeof role);
	return hash_bytes_extended(reinterpret_cast<const unsigned char *>(normal.data()), static_cast<int>(normal.size()), 0x6478);
}

// Gives the rewritten aggregates their charge ids and the query's cache key.
void
stamp_identities(Query *q, const ExtensionObjects &ext)
{
	StampContext ctx{&ext, query_cache_key(q), {}};
	query_tree_walker(q, reinterpret_cast<bool (*)()>(stamp_walker), &ctx, 0);
}

// ---- one dx aggregate ----

enum class AggKind { Count, Sum, Avg, Linear };

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
		Node *e = eval_const_expressions(nullptr, (Node *) copy_node(lsecond_node(TargetEntry, a->args)->expr));
		if (!IsA(e, Const) || castNode(Const, e)->constisnull)
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "epsilon of a dx aggregate must be a non-null constant",
			     "Write for example dx.count(col, 0.5).");
		eps = DatumGetFloat8(castNode(Const, e)->constvalue);
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

// Validates one dx aggregate and describes its per-row weight.
AggSpec
describe_aggregate(Aggref *a, const TablePolicy &policy, const ExtensionObjects &ext)
{
	AggSpec spec{a, AggKind::Count, 0, nullptr, a->aggfilter, 1, 0};
	const Oid f = a->aggfnoid;
	spec.kind = (f == ext.sum_any || f == ext.sum_any_eps)         ? AggKind::Sum
	            : (f == ext.avg_any || f == ext.avg_any_eps)       ? AggKind::Avg
	            : (f == ext.linear_any || f == ext.linear_any_eps) ? AggKind::Linear
	                                                               : AggKind::Count;
	const bool has_eps = f == ext.count_any_eps || f == ext.sum_any_eps || f == ext.avg_any_eps || f == ext.linear_any_eps;
	if (a->aggdistinct)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "DISTINCT inside dx aggregates is not supported", kShapeHint);
	if (a->aggorder)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "ORDER BY inside dx aggregates is not supported", kShapeHint);
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
	}
	return "?";
}

// ---- the whole query ----

// Validates and rewrites one SELECT that contains dx aggregates.
void
rewrite_query(Query *q, const ExtensionObjects &ext, const Discovery &d)
{
	check_shape(q, d);
	Oid relid = linitial_node(RangeTblEntry, q->rtable)->relid;
	TablePolicy policy;
	if (!load_table_policy(relid, policy)) {
		char *rel = get_rel_name(relid);
		fail(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, std::string("table \"") + (rel ? rel : "?") + "\" is not protected by dxpriv",
		     "The table owner can protect it with dx.protect_table and declare its columns with dx.set_column.");
	}
	Node *where = q->jointree->quals;
	check_row_expression(where, policy, "WHERE clauses");

	// GROUP BY columns: plain references to declared columns
	std::vector<const ColumnPolicy *> group_cols;
	ListCell *lc;
	foreach (lc, q->groupClause) {
		TargetEntry *tle = get_sortgroupclause_tle(lfirst_node(SortGroupClause, lc), q->targetList);
		Node *e = (Node *) tle->expr;
		if (!IsA(e, Var))
			fail(ERRCODE_FEATURE_NOT_SUPPORTED, "GROUP BY accepts only declared columns", kShapeHint);
		check_row_expression(e, policy, "GROUP BY");
		const ColumnPolicy *c = policy.find(castNode(Var, e)->varattno);
		if (c->is_group())
			fail(ERRCODE_FEATURE_NOT_SUPPORTED, "GROUP BY cannot use a column of a column group",
			     "Group by separately declared columns; a group such as (lon, lat) is a location, not a category.");
		if (std::find(group_cols.begin(), group_cols.end(), c) == group_cols.end())
			group_cols.push_back(c);
	}
	size_t groups = 1;
	for (const ColumnPolicy *c : group_cols) {
		groups *= c->domain.size();
		if (groups > kMaxGroups)
			fail(ERRCODE_PROGRAM_LIMIT_EXCEEDED,
			     "GROUP BY would return more than " + std::to_string(kMaxGroups) + " groups",
			     "Every group of the declared domains is returned; group by coarser columns.");
	}

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
	EmQuery em = take_em_markers(found.second, policy, ext, em_hooks);
	// ---- end of exponential mechanism dispatch ----
	// Identical aggregates (a HAVING repeat of a SELECT aggregate; BETWEEN, which the parser turns
	// into two copies of its operand) are one release: one noise draw, charged once.
	std::vector<std::pair<Aggref *, size_t>> duplicates; // (copy, index of its representative)
	std::vector<Aggref *> originals;                     // unmodified copies of the representatives
	std::vector<Aggref *> unique;
	for (Aggref *a : found.second) {
		size_t rep = 0;
		while (rep < originals.size() && !equal(originals[rep], a))
			++rep;
		if (rep < originals.size()) {
			duplicates.emplace_back(a, rep);
			continue;
		}
		originals.push_back(copy_node(a));
		unique.push_back(a);
	}
	std::vector<AggSpec> specs;
	int cells_per_group = 0;
	double eps_total = 0;
	for (Aggref *a : unique) {
		specs.push_back(describe_aggregate(a, policy, ext));
		specs.back().first_cell = cells_per_group;
		cells_per_group += specs.back().components;
		eps_total += specs.back().epsilon;
	}

	// sub-universe: every referenced column
	std::set<AttrNumber> attnos;
	collect_attnos(where, attnos);
	for (const ColumnPolicy *c : group_cols)
		attnos.insert(c->attnum);
	for (const AggSpec &s : specs) {
		collect_attnos((Node *) s.weight, attnos);
		collect_attnos((Node *) s.filter, attnos);
	}
	SubUniverse sub;
	sub.presence = policy.presence;
	std::vector<const ColumnPolicy *> cols;
	for (AttrNumber att : std::set<AttrNumber>(attnos)) {
		const ColumnPolicy *c = policy.find(att);
		for (const ColumnPolicy::Member &m : c->members) // a group is read (and clamped) as a whole
			attnos.insert(m.attnum);
		if (std::find(cols.begin(), cols.end(), c) != cols.end())
			continue;
		cols.push_back(c);
		sub.domains.push_back(c->domain);
		sub.metrics.push_back(c->metric);
	}
	check_sub_universe_size(cols);
	const size_t n = sub.size();
	const size_t m = groups * static_cast<size_t>(cells_per_group);
	if (static_cast<double>(m) * static_cast<double>(n) > kMaxCellPoints)
		fail(ERRCODE_PROGRAM_LIMIT_EXCEEDED, "query has too many output cells for its sub-universe",
		     "Group by fewer or coarser columns, use fewer aggregates, or reference fewer columns.");

	// evaluate WHERE, filters and weights at every point
	std::vector<Expr *> exprs{(Expr *) where};
	for (const AggSpec &s : specs) {
		exprs.push_back(s.filter);
		exprs.push_back(s.weight);
	}
	UniverseValues vals = evaluate_over_universe(relid, cols, sub, exprs);

	// output group of every point
	std::vector<size_t> group_of(n, 0);
	if (!group_cols.empty()) {
		std::vector<size_t> strides(cols.size(), 1);
		for (size_t c = cols.size(); c-- > 1;)
			strides[c - 1] = strides[c] * cols[c]->domain.size();
		for (size_t u = 0; u < n; ++u) {
			size_t g = 0;
			for (const ColumnPolicy *gc : group_cols) {
				size_t pos = std::find(cols.begin(), cols.end(), gc) - cols.begin();
				g = g * gc->domain.size() + (u / strides[pos]) % gc->domain.size();
			}
			group_of[u] = g;
		}
	}

	// cells: (group, aggregate component); cell k = g * cells_per_group + first_cell + c
	// and the per-point table of each aggregate: what a row at point u adds (execution by lookup)
	std::vector<std::vector<double>> q_cells(m, std::vector<double>(n, 0.0));
	std::vector<std::vector<std::optional<double>>> tables(specs.size(), std::vector<std::optional<double>>(n));
	std::vector<double> lo(specs.size(), 0), hi(specs.size(), 0);
	for (size_t j = 0; j < specs.size(); ++j) {
		const std::vector<double> &filt = vals.value[1 + 2 * j];
		const std::vector<double> &w = vals.value[2 + 2 * j];
		const std::vector<char> &w_null = vals.is_null[2 + 2 * j];
		bool seen = false;
		for (size_t u = 0; u < n; ++u) {
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
	}
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
	// What the allocation shares: every avg (per group) is one estimate, its sum and count weighted
	// by the delta method with the centre of the weight's range as the mean proxy; with an explicit
	// epsilon on any aggregate, each aggregate's cells are allocated within its own epsilon.
	AllocationRequest request;
	request.strategy = strategy;
	bool declared = false;
	for (const AggSpec &s : specs)
		declared = declared || s.explicit_epsilon;
	if (declared) {
		request.block_of.assign(m, 0);
		for (size_t j = 0; j < specs.size(); ++j) {
			request.block_epsilon.push_back(specs[j].epsilon);
			for (size_t g = 0; g < groups; ++g)
				for (int c = 0; c < specs[j].components; ++c)
					request.block_of[g * cells_per_group + specs[j].first_cell + c] = j;
		}
	}
	for (size_t j = 0; j < specs.size(); ++j)
		if (specs[j].kind == AggKind::Avg) {
			const double mu = 0.5 * (lo[j] + hi[j]);
			for (size_t g = 0; g < groups; ++g) {
				const size_t base = g * cells_per_group + specs[j].first_cell;
				request.estimates.push_back(Estimate{{base, base + 1}, {1.0, mu * mu}});
			}
		}
	// noise family of the linear cells: (epsilon, delta) families need the policy's per-query delta
	const NoiseFamily family = static_cast<NoiseFamily>(guc_noise);
	if (family != NoiseFamily::Laplace && !specs.empty() && !(policy.delta > 0)) {
		char *rel = get_rel_name(relid);
		fail(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
		     std::string("noise family \"") + noise_family_name(family) + "\" needs a delta on table \"" +
		         (rel ? rel : "?") + "\"",
		     "Use SET dxpriv.noise = 'laplace' (pure epsilon), or ask the table owner to allow (epsilon, delta) "
		     "noise with dx.set_delta(table, 1e-6) and to grant a delta budget.");
	}
	const double query_delta = family == NoiseFamily::Laplace ? 0 : policy.delta;
	// (exponential mechanism dispatch: a query may hold no linear aggregate at all)
	MultiLinearPlan plan = specs.empty() ? MultiLinearPlan{}
	                                     : plan_multi_linear_noise(sub, q_cells, eps_total, query_delta, family, request);
	bool noisy_cells = false;
	for (const LinearNoisePlan &cell : plan.cells)
		noisy_cells = noisy_cells || cell.scale > 0;

	// explain capture (dx.explain): what each cell would cost, without running anything
	if (explain_capture_active()) {
		ExplainCapture &cap = explain_capture();
		cap.relid = relid;
		cap.epsilon = eps_total;
		cap.strategy = strategy_name(strategy);
		cap.noise = noise_family_name(family);
		cap.delta = noisy_cells ? query_delta : 0;
		cap.plain_dp_scale = specs.empty() ? 0 : plain_dp_scale(sub, q_cells, eps_total); // (exponential mechanism dispatch)
		for (size_t j = 0; j < specs.size(); ++j)
			for (size_t g = 0; g < groups; ++g)
				for (int c = 0; c < specs[j].components; ++c) {
					const size_t k = g * cells_per_group + specs[j].first_cell + c;
					const LinearNoisePlan &p = plan.cells[k];
					cap.cells.push_back(ExplainCell{static_cast<int>(j) + 1, kind_name(specs[j].kind),
					                                group_cols.empty() ? "" : group_label(group_cols, g),
					                                specs[j].kind == AggKind::Avg ? (c == 0 ? "sum" : "count") : "value",
					                                plan.epsilon_share[k], p}); // what the cell received
				}
	}

	// rewrite the aggregates: each reads its weight from its per-point table at the row's point;
	// WHERE and FILTER are folded into the tables, so no expression of the query runs on a row
	ClampContext cctx{&ext, &policy};
	const bool grouped = !group_cols.empty();
	Expr *group_index = grouped ? point_index_expr(group_cols, ext) : (Expr *) int4_const(0);
	for (size_t j = 0; j < specs.size(); ++j) {
		const AggSpec &s = specs[j];
		NoiseParams p;
		p.components = s.components;
		p.epsilon = s.epsilon;
		p.relid = relid;
		p.charge_id = 0; // set by stamp_identities() once the whole query is rewritten
		p.agg_index = static_cast<int>(j);
		p.agg_count = static_cast<int>(specs.size());
		p.lo = lo[j];
		p.hi = hi[j];
		p.groups = static_cast<int>(groups);
		p.family = static_cast<int>(family);
		p.delta = noisy_cells ? query_delta : 0; // the query's delta, carried by each of its aggregates
		for (size_t g = 0; g < groups; ++g)
			for (int c = 0; c < s.components; ++c) {
				const LinearNoisePlan &cell = plan.cells[g * cells_per_group + s.first_cell + c];
				p.cells.push_back(cell.grid);
				p.cells.push_back(cell.scale);
				p.cells.push_back(cell.bound);
			}
		Expr *weight = weigh_expr(cols, tables[j], false, ext);
		if (grouped) // the empty-group rows create the group's state (so it gets a noisy answer) but add nothing
			weight = real_rows_only(weight, FLOAT8OID, nullptr);
		Aggref *a = s.aggref;
		Oid internal = s.kind == AggKind::Count ? ext.noisy_count : s.kind == AggKind::Avg ? ext.noisy_avg : ext.noisy_sum;
		Const *params = makeConst(FLOAT8ARRAYOID, -1, InvalidOid, -1, PointerGetDatum(build_noise_params(p)), false, false);
		a->aggfnoid = internal;
		a->aggargtypes = list_make3_oid(FLOAT8OID, INT4OID, FLOAT8ARRAYOID);
		a->args = list_make3(makeTargetEntry(weight, 1, nullptr, false),
		                     makeTargetEntry((Expr *) copy_node(group_index), 2, nullptr, false),
		                     makeTargetEntry((Expr *) params, 3, nullptr, false));
		a->aggstar = false;
		a->aggvariadic = false;
		a->aggfilter = nullptr;
		a->inputcollid = InvalidOid;
		a->location = kRewrittenLocation;
	}
	for (auto &[dup, rep] : duplicates) {
		const Aggref *r = specs[rep].aggref;
		dup->aggfnoid = r->aggfnoid;
		dup->aggargtypes = list_copy(r->aggargtypes);
		dup->args = static_cast<List *>(copyObjectImpl(r->args));
		dup->aggstar = r->aggstar;
		dup->aggvariadic = r->aggvariadic;
		dup->aggfilter = static_cast<Expr *>(copyObjectImpl(r->aggfilter));
		dup->inputcollid = r->inputcollid;
		dup->location = r->location;
	}

	// ---- exponential mechanism dispatch: sensitivity, parameters and rewrite (src/pg/planner/em_rewrite.h) ----
	if (!em.specs.empty()) {
		std::vector<Aggref *> linear_aggrefs;
		for (const AggSpec &s : specs)
			linear_aggrefs.push_back(s.aggref);
		rewrite_em_aggregates(q, em,
		                      EmRewriteInput{relid, &policy, &ext, where, group_cols, group_index, kRewrittenLocation,
		                                     linear_aggrefs});
	}
	// ---- end of exponential mechanism dispatch ----

	// clamp the remaining column references (GROUP BY keys, post-processing over them); the WHERE
	// clause is in every aggregate's table and is not evaluated on rows
	q->targetList = (List *) clamp((Node *) q->targetList, cctx);
	q->havingQual = clamp(q->havingQual, cctx);
	q->jointree->quals = nullptr;
	if (!grouped) {
		stamp_identities(q, ext);
		return;
	}
	// GROUP BY: read from the table plus one empty row per group
	em_collect_attnos(em, policy, attnos); // (exponential mechanism dispatch: the columns they read)
	std::vector<AttrNumber> columns(attnos.begin(), attnos.end());
	std::map<AttrNumber, AttrNumber> mapping = replace_with_group_source(q, policy, columns, group_cols);
	q->targetList = (List *) remap_vars((Node *) q->targetList, mapping);
	q->havingQual = remap_vars(q->havingQual, mapping);
	q->jointree->quals = remap_vars(q->jointree->quals, mapping);
	stamp_identities(q, ext);
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
	Discovery d{ext};
	query_tree_walker(q, reinterpret_cast<bool (*)()>(discover), &d, 0);
	if (d.internal > 0)
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "internal dxpriv aggregates cannot be called directly",
		     "Use dx.count or dx.sum; dxpriv places its internal aggregates itself.");
	if (d.rewritten > 0 && d.markers_top + d.markers_nested == 0)
		return; // a query this hook already rewrote (EXPLAIN analyses its query twice)

	const AnalystContext ac = load_analyst_context(*ext);
	set_analyst_mode(ac.analyst);
	if (ac.analyst) {
		substitute_catalog_views(top, *ext); // before the deny list: pg_stat_user_tables becomes a safe view
		if (q != top)
			substitute_catalog_views(q, *ext);
		reject_side_channels(top);
		if (count_protected_refs(q, ac) > 0) {
			const Oid read_rel = first_protected_ref(q, ac); // for refusals that name it
			const Oid hint_rel = OidIsValid(ac.policy_table(read_rel)) ? ac.policy_table(read_rel) : read_rel;
			if (top->commandType == CMD_UTILITY && !IsA(top->utilityStmt, DeclareCursorStmt))
				refuse_analyst_utility(top->utilityStmt, read_rel);
			if (definition_depth > 0 || copy_depth > 0 || is_matview(top))
				fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "analysts cannot copy or store queries over protected tables",
				     analyst_hint(hint_rel));
			check_inheritance_refs(q, ac);
			if (q->commandType == CMD_SELECT && list_length(q->rtable) == 1 && rewrite_plain_aggregates(q, *ext) > 0) {
				d = Discovery{ext};
				query_tree_walker(q, reinterpret_cast<bool (*)()>(discover), &d, 0);
			}
			if (d.markers_top == 0)
				refuse_unaggregated_read(q, ac);
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
	rewrite_query(q, *ext, d);
}

extern "C" void
dx_post_parse_analyze(ParseState *pstate, Query *query, JumbleState *jstate)
{
	if (prev_post_parse_analyze)
		prev_post_parse_analyze(pstate, query, jstate);
	if (!in_internal_query())
		guarded([&] { analyze(query); });
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
	bool defines = IsA(stmt, ViewStmt) || IsA(stmt, RuleStmt) ||
	               (IsA(stmt, CreateFunctionStmt) && castNode(CreateFunctionStmt, stmt)->sql_body != nullptr);
	bool copies = IsA(stmt, CopyStmt);
	if (copies)
		guarded([&] { check_copy(castNode(CopyStmt, stmt)); });
	int analyst_scope = 0; // EXPLAIN and result-storing statements of analysts (analyst_guard.h)
	guarded([&] { analyst_scope = enter_analyst_utility(stmt); });
	if (defines)
		definition_depth++;
	if (copies)
		copy_depth++;
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
