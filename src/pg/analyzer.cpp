// Query analyzer: validates queries that use dx aggregates, computes each aggregate's exact
// generalized sensitivity over the declared sub-universe, and rewrites the query so that column
// values are clamped into their domains and the aggregates carry their noise parameters.
#include "pg/dxpriv.h"
#include "pg/guard.h"

#include "core/linear_query.h"
#include "core/sensitivity.h"

extern "C" {
#include "access/relation.h"
#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parse_coerce.h"
#include "tcop/utility.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
}

#include <algorithm>
#include <cmath>
#include <set>

namespace dxpriv::pg {

namespace {

// copyObject() relies on C's typeof; this is its C++ spelling.
template <class T>
T *
copy_node(T *node)
{
	return static_cast<T *>(copyObjectImpl(node));
}

post_parse_analyze_hook_type prev_post_parse_analyze = nullptr;
ProcessUtility_hook_type prev_process_utility = nullptr;
int definition_depth = 0;   // > 0 while CREATE VIEW / RULE / MATERIALIZED VIEW / atomic function runs
SystemRandom charge_id_source;

// Location stamped on the aggregates we rewrite. The parser only produces -1 or offsets >= 0, so
// SQL text cannot forge it; it lets the hook recognise a query it already rewrote (EXPLAIN calls
// post_parse_analyze_hook a second time on its analysed query).
constexpr int kRewrittenLocation = -7417;

const char *kShapeHint = "Supported: SELECT dx.count(*), dx.count(col), dx.sum(expr) [, ...] FROM <protected table> "
                         "[WHERE <conditions on declared columns>].";

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
	if (q->groupClause || q->groupingSets)
		reject("GROUP BY");
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

// Checks an expression evaluated on rows: only declared columns, immutable functions, no parameters.
void
check_row_expression(Node *expr, const TablePolicy &policy, const char *where)
{
	if (!expr)
		return;
	if (contain_mutable_functions(expr))
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, std::string("only immutable functions can be used in ") + where,
		     "Functions such as random() or now() would make the answer depend on more than the data.");
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

// ---- evaluation over the sub-universe ----

// q(u) for every point u of the sub-universe (row-major, last column fastest):
// [where(u) and filter(u)] * weight(u), with weight 1 when absent and 0 when NULL.
std::vector<double>
evaluate_weights(Oid relid, const std::vector<const ColumnPolicy *> &cols, const SubUniverse &sub, Expr *where,
                 Expr *filter, Expr *weight)
{
	const size_t n = sub.size();
	std::vector<std::vector<Datum>> points;
	for (const ColumnPolicy *c : cols)
		points.push_back(domain_datums(c->domain, c->type, c->typmod));
	std::vector<double> q(n, 0.0);
	std::vector<size_t> idx(cols.size(), 0);
	pg_call([&] {
		Relation rel = relation_open(relid, AccessShareLock);
		TupleDesc td = RelationGetDescr(rel);
		EState *estate = CreateExecutorState();
		ExprContext *econtext = GetPerTupleExprContext(estate);
		TupleTableSlot *slot = MakeSingleTupleTableSlot(td, &TTSOpsVirtual);
		ExprState *where_state = where ? ExecPrepareExpr(where, estate) : nullptr;
		ExprState *filter_state = filter ? ExecPrepareExpr(filter, estate) : nullptr;
		ExprState *weight_state = weight ? ExecPrepareExpr(weight, estate) : nullptr;
		for (size_t flat = 0; flat < n; ++flat) {
			ExecClearTuple(slot);
			for (int a = 0; a < td->natts; ++a)
				slot->tts_isnull[a] = true;
			for (size_t c = 0; c < cols.size(); ++c) {
				slot->tts_values[cols[c]->attnum - 1] = points[c][idx[c]];
				slot->tts_isnull[cols[c]->attnum - 1] = false;
			}
			ExecStoreVirtualTuple(slot);
			econtext->ecxt_scantuple = slot;
			ResetExprContext(econtext);
			bool isnull = false, pass = true;
			if (where_state) {
				Datum r = ExecEvalExprSwitchContext(where_state, econtext, &isnull);
				pass = !isnull && DatumGetBool(r);
			}
			if (pass && filter_state) {
				Datum r = ExecEvalExprSwitchContext(filter_state, econtext, &isnull);
				pass = !isnull && DatumGetBool(r);
			}
			double value = 0;
			if (pass) {
				value = 1;
				if (weight_state) {
					Datum r = ExecEvalExprSwitchContext(weight_state, econtext, &isnull);
					value = isnull ? 0 : DatumGetFloat8(r);
				}
			}
			q[flat] = value;
			for (size_t c = cols.size(); c-- > 0;) { // odometer, last column fastest
				if (++idx[c] < sub.domains[c].size())
					break;
				idx[c] = 0;
			}
		}
		ExecDropSingleTupleTableSlot(slot);
		FreeExecutorState(estate);
		relation_close(rel, AccessShareLock);
	});
	return q;
}

// ---- rewriting ----

Const *
float8_const(double v)
{
	return makeConst(FLOAT8OID, -1, InvalidOid, sizeof(float8), Float8GetDatum(v), false, FLOAT8PASSBYVAL);
}

struct ClampContext {
	const ExtensionObjects *ext;
	const TablePolicy *policy;
};

// The expression that maps column v into its declared domain.
Expr *
make_clamp(Var *v, const ColumnPolicy &col, const ExtensionObjects &ext)
{
	const Domain &d = col.domain;
	List *args;
	Oid fn;
	if (d.kind() == DomainKind::Enumerated) {
		std::vector<Datum> labels;
		for (const std::string &l : d.labels())
			labels.push_back(CStringGetTextDatum(l.c_str()));
		ArrayType *arr = construct_array(labels.data(), static_cast<int>(labels.size()), TEXTOID, -1, false, TYPALIGN_INT);
		Const *c = makeConst(TEXTARRAYOID, -1, InvalidOid, -1, PointerGetDatum(arr), false, false);
		args = list_make2(v, c);
		fn = ext.clamp_enum;
	} else {
		args = list_make4(v, float8_const(d.ordinal(0)), float8_const(d.ordinal(d.size() - 1)), float8_const(d.step()));
		fn = ext.clamp_range;
	}
	return (Expr *) makeFuncExpr(fn, v->vartype, args, v->varcollid, v->varcollid, COERCE_EXPLICIT_CALL);
}

// Replaces every column reference by its clamp expression.
Node *
clamp_mutator(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	auto *c = static_cast<ClampContext *>(ctx);
	if (IsA(node, Var)) {
		Var *v = castNode(Var, node);
		const ColumnPolicy *col = c->policy->find(v->varattno);
		if (v->varlevelsup == 0 && col)
			return (Node *) make_clamp(castNode(Var, copy_node(v)), *col, *c->ext);
		return node;
	}
	return expression_tree_mutator(node, reinterpret_cast<Node *(*) ()>(clamp_mutator), ctx);
}

Node *
clamp(Node *expr, const ClampContext &ctx)
{
	return expr ? clamp_mutator(expr, const_cast<ClampContext *>(&ctx)) : nullptr;
}

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
	return eps;
}

// Analyses one dx aggregate and rewrites it into the internal noisy aggregate.
void
rewrite_aggregate(Aggref *a, Node *where, const TablePolicy &policy, const ExtensionObjects &ext)
{
	const bool is_count = a->aggfnoid == ext.count_star || a->aggfnoid == ext.count_any || a->aggfnoid == ext.count_any_eps;
	const bool has_value = a->aggfnoid != ext.count_star;
	const bool has_eps = a->aggfnoid == ext.count_any_eps || a->aggfnoid == ext.sum_any_eps;
	if (a->aggdistinct)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "DISTINCT inside dx aggregates is not supported", kShapeHint);
	if (a->aggorder)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "ORDER BY inside dx aggregates is not supported", kShapeHint);
	const double eps = aggregate_epsilon(a, has_eps);

	Expr *value = has_value ? linitial_node(TargetEntry, a->args)->expr : nullptr;
	Expr *weight = nullptr;
	if (value && is_count) {
		weight = (Expr *) makeFuncExpr(ext.indicator, FLOAT8OID, list_make1(value), InvalidOid, InvalidOid,
		                               COERCE_EXPLICIT_CALL);
	} else if (value) {
		Oid t = exprType((Node *) value);
		if (t != INT2OID && t != INT4OID && t != INT8OID && t != FLOAT4OID && t != FLOAT8OID && t != NUMERICOID)
			fail(ERRCODE_DATATYPE_MISMATCH, std::string("dx.sum cannot sum values of type ") + format_type_be(t),
			     "Sum a numeric expression (integer, numeric or floating point).");
		weight = (Expr *) coerce_to_target_type(nullptr, (Node *) value, t, FLOAT8OID, -1, COERCION_EXPLICIT,
		                                        COERCE_IMPLICIT_CAST, -1);
	}
	check_row_expression((Node *) weight, policy, "aggregate arguments");
	check_row_expression((Node *) a->aggfilter, policy, "FILTER clauses");

	std::set<AttrNumber> attnos;
	collect_attnos(where, attnos);
	collect_attnos((Node *) weight, attnos);
	collect_attnos((Node *) a->aggfilter, attnos);
	SubUniverse sub;
	sub.presence = policy.presence;
	std::vector<const ColumnPolicy *> cols;
	for (AttrNumber att : attnos) {
		const ColumnPolicy *c = policy.find(att);
		cols.push_back(c);
		sub.domains.push_back(c->domain);
		sub.metrics.push_back(c->metric);
	}
	(void) sub.size(); // enforces the sub-universe cap before any work
	std::vector<double> q = evaluate_weights(policy.relid, cols, sub, (Expr *) where, a->aggfilter, weight);
	LinearNoisePlan plan = plan_linear_query(sub, q, eps);

	ClampContext cctx{&ext, &policy};
	int64 charge_id = static_cast<int64>(charge_id_source.next_u64() >> 1) + 1;
	Expr *clamped_weight = weight ? (Expr *) clamp((Node *) weight, cctx) : (Expr *) float8_const(1.0);
	List *args = list_make1(makeTargetEntry(clamped_weight, 1, nullptr, false));
	args = lappend(args, makeTargetEntry((Expr *) float8_const(plan.grid), 2, nullptr, false));
	args = lappend(args, makeTargetEntry((Expr *) float8_const(plan.scale), 3, nullptr, false));
	args = lappend(args, makeTargetEntry((Expr *) float8_const(eps), 4, nullptr, false));
	args = lappend(args, makeTargetEntry((Expr *) makeConst(OIDOID, -1, InvalidOid, sizeof(Oid),
	                                                        ObjectIdGetDatum(policy.relid), false, true),
	                                     5, nullptr, false));
	args = lappend(args, makeTargetEntry((Expr *) makeConst(INT8OID, -1, InvalidOid, sizeof(int64),
	                                                        Int64GetDatum(charge_id), false, FLOAT8PASSBYVAL),
	                                     6, nullptr, false));
	a->aggfnoid = is_count ? ext.noisy_count : ext.noisy_sum;
	a->aggargtypes = list_make4_oid(FLOAT8OID, FLOAT8OID, FLOAT8OID, FLOAT8OID);
	a->aggargtypes = lappend_oid(lappend_oid(a->aggargtypes, OIDOID), INT8OID);
	a->args = args;
	a->aggstar = false;
	a->aggvariadic = false;
	a->aggfilter = (Expr *) clamp((Node *) a->aggfilter, cctx);
	a->inputcollid = InvalidOid;
	a->location = kRewrittenLocation;
}

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

	std::pair<const ExtensionObjects *, std::vector<Aggref *>> found{&ext, {}};
	collect_markers((Node *) q->targetList, &found);
	collect_markers(q->havingQual, &found);
	for (Aggref *a : found.second)
		rewrite_aggregate(a, where, policy, ext);
	ClampContext cctx{&ext, &policy};
	q->jointree->quals = clamp(where, cctx);
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
	Discovery d{ext};
	query_tree_walker(q, reinterpret_cast<bool (*)()>(discover), &d, 0);
	if (d.internal > 0)
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "internal dxpriv aggregates cannot be called directly",
		     "Use dx.count or dx.sum; dxpriv places its internal aggregates itself.");
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

// Marks statements that store an analysed query for later (views, rules, atomic SQL functions).
extern "C" void
dx_process_utility(PlannedStmt *pstmt, const char *query_string, bool read_only_tree, ProcessUtilityContext context,
                   ParamListInfo params, QueryEnvironment *query_env, DestReceiver *dest, QueryCompletion *qc)
{
	Node *stmt = pstmt->utilityStmt;
	bool defines = IsA(stmt, ViewStmt) || IsA(stmt, RuleStmt) ||
	               (IsA(stmt, CreateFunctionStmt) && castNode(CreateFunctionStmt, stmt)->sql_body != nullptr);
	if (defines)
		definition_depth++;
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
