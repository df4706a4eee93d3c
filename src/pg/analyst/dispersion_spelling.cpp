// Analysts' stddev, variance, covar, corr and regr_* aggregates spelled as post-processing of linear dx aggregates.
#include "pg/analyst/dispersion_spelling.h"

#include "pg/guard.h"
#include "pg/metadata/policy.h"
#include "pg/node_build.h"
#include "pg/settings.h"

#include "core/dispersion.h"
#include "core/domain.h"

extern "C" {
#include "catalog/pg_aggregate.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_coerce.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
}

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace dxpriv::pg {

namespace {

// The float8 value of an aggregate argument (refused when it is not numeric).
Expr *
as_float8(Expr *e, const std::string &fn)
{
	const Oid t = exprType((Node *) e);
	if (t != INT2OID && t != INT4OID && t != INT8OID && t != FLOAT4OID && t != FLOAT8OID && t != NUMERICOID)
		fail(ERRCODE_DATATYPE_MISMATCH, fn + " of values of type " + std::string(format_type_be(t)) + " is not supported",
		     "Use a numeric declared column (integer, numeric or floating point), or an expression over one.");
	if (t == FLOAT8OID)
		return e;
	return (Expr *) coerce_to_target_type(nullptr, (Node *) e, t, FLOAT8OID, -1, COERCION_EXPLICIT, COERCE_IMPLICIT_CAST,
	                                      -1);
}

Expr *
float8_call(Oid fn, Expr *a, Expr *b)
{
	return (Expr *) makeFuncExpr(fn, FLOAT8OID, list_make2(a, b), InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
}

// e - c (e itself when c is 0).
Expr *
centred(Expr *e, double c)
{
	return c == 0 ? (Expr *) copy_node(e) : float8_call(F_FLOAT8MI, (Expr *) copy_node(e), (Expr *) float8_const(c));
}

// CASE WHEN guard THEN value END (NULL, which adds nothing, where an argument is NULL).
Expr *
when(Expr *guard, Expr *value)
{
	CaseWhen *w = makeNode(CaseWhen);
	w->expr = (Expr *) copy_node(guard);
	w->result = value;
	w->location = -1;
	CaseExpr *c = makeNode(CaseExpr);
	c->casetype = FLOAT8OID;
	c->casecollid = InvalidOid;
	c->args = list_make1(w);
	c->defresult = (Expr *) makeNullConst(FLOAT8OID, -1, InvalidOid);
	c->location = -1;
	return (Expr *) c;
}

Expr *
not_null(Expr *e)
{
	NullTest *t = makeNode(NullTest);
	t->arg = (Expr *) copy_node(e);
	t->nulltesttype = IS_NOT_NULL;
	t->argisrow = false;
	t->location = -1;
	return (Expr *) t;
}

// The centre of a column's sums: the middle point of the declared range when the argument is a
// declared range column (fixed by the declaration, not by the data), else 0.
double
centre_of(Expr *arg, const TablePolicy &policy, int rtindex)
{
	Node *e = strip_implicit_coercions((Node *) arg);
	if (!e || !IsA(e, Var) || static_cast<int>(castNode(Var, e)->varno) != rtindex || castNode(Var, e)->varlevelsup != 0)
		return 0;
	const ColumnPolicy *c = policy.find(castNode(Var, e)->varattno);
	if (!c || c->is_group() || c->domain.kind() != DomainKind::Range || c->domain.size() == 0)
		return 0;
	return c->domain.ordinal((c->domain.size() - 1) / 2);
}

// A part: dx.linear(weight, epsilon) with a's FILTER, marked by its float8[] result
// (dx._noisy_part). Its epsilon is the statistic's share (the session epsilon over its parts); the
// analysis treats it as a session-default epsilon, shared jointly by the allocation.
Node *
part_marker(Aggref *a, Expr *weight, double epsilon, const ExtensionObjects &ext)
{
	Aggref *m = copy_node(a);
	m->aggfnoid = ext.linear_any_eps;
	m->aggtype = FLOAT8ARRAYOID;
	m->aggcollid = InvalidOid;
	m->inputcollid = InvalidOid;
	m->aggtranstype = InvalidOid;
	m->aggargtypes = list_make2_oid(FLOAT8OID, FLOAT8OID);
	m->aggdirectargs = NIL;
	m->args = list_make2(makeTargetEntry(weight, 1, nullptr, false),
	                     makeTargetEntry((Expr *) float8_const(epsilon), 2, nullptr, false));
	m->aggorder = NIL;
	m->aggdistinct = NIL;
	m->aggfilter = a->aggfilter ? (Expr *) copy_node(a->aggfilter) : nullptr;
	m->aggstar = false;
	m->aggvariadic = false;
	m->aggkind = AGGKIND_NORMAL;
	return (Node *) m;
}

// In a join (a query with bound parameters, whose join is taken when it is planned): the
// protected table's columns as columns of a one-table query, a public table's column as the
// parameter $k (k-th distinct public column), as a taken join shows them (planner/public_joins.h).
struct LabelVars {
	int rtindex;
	std::vector<std::pair<Index, AttrNumber>> public_columns;
};

Node *
label_vars(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	auto *lv = static_cast<LabelVars *>(ctx);
	if (IsA(node, Var) && castNode(Var, node)->varlevelsup == 0) {
		Var *v = copy_node(castNode(Var, node));
		if (static_cast<int>(v->varno) == lv->rtindex) {
			v->varno = v->varnosyn = 1;
			return (Node *) v;
		}
		const auto key = std::make_pair(static_cast<Index>(v->varno), v->varattno);
		auto it = std::find(lv->public_columns.begin(), lv->public_columns.end(), key);
		const int id = static_cast<int>(it - lv->public_columns.begin());
		if (it == lv->public_columns.end())
			lv->public_columns.push_back(key);
		return (Node *) exec_param_like(v, id);
	}
	return expression_tree_mutator(node, reinterpret_cast<Node *(*) ()>(label_vars), ctx);
}

// "y, x" as the analyst wrote the arguments, for dx.last_release (rtindex: the protected table's
// range table entry; join: q's FROM is a join not taken yet).
std::string
label_of(Aggref *a, Oid relid, int rtindex, bool join)
{
	std::string out;
	LabelVars lv{rtindex, {}};
	Node *args = join ? label_vars((Node *) copy_node(a->args), &lv) : (Node *) a->args;
	pg_call([&] {
		char *rel = get_rel_name(relid);
		List *ctx = deparse_context_for(rel ? rel : "t", relid);
		ListCell *lc;
		foreach (lc, castNode(List, args))
			out += (out.empty() ? "" : ", ") +
			       std::string(deparse_expression((Node *) lfirst_node(TargetEntry, lc)->expr, ctx, false, false));
	});
	return out.size() > 200 ? out.substr(0, 197) + "..." : out;
}

// The range table index of the one protected table q reads directly: its only entry, or, in a join
// (before the join is taken: a query with bound parameters), its one protected base table; 0 when
// there is none or several (the join's own refusal names that). relid: that table.
int
protected_rtindex(Query *q, Oid &relid, TablePolicy &policy)
{
	int found = 0, index = 0;
	ListCell *lc;
	foreach (lc, q->rtable) {
		++index;
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
		if (rte->rtekind != RTE_RELATION)
			continue;
		TablePolicy p;
		if (list_length(q->rtable) > 1 && !load_table_policy(rte->relid, p))
			continue;
		if (found)
			return 0;
		found = index;
		relid = rte->relid;
	}
	return found && load_table_policy(relid, policy) ? found : 0;
}

} // namespace

// See dispersion_spelling.h.
Node *
dispersion_spelling(Aggref *a, const std::string &fn, Query *q, const ExtensionObjects &ext)
{
	Dispersion kind;
	if (!dispersion_from_name(fn, kind) || a->aggkind != AGGKIND_NORMAL)
		return nullptr;
	Oid relid = InvalidOid;
	TablePolicy policy;
	const int rtindex = protected_rtindex(q, relid, policy);
	if (rtindex == 0)
		return nullptr;
	const bool two = dispersion_two_columns(kind);
	if (list_length(a->args) != (two ? 2 : 1))
		return nullptr;
	if (a->aggdistinct)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, fn + "(DISTINCT ...) cannot be used on protected tables",
		     "Write " + fn + "(...) without DISTINCT: it is computed from noisy sums over the rows.");
	if (a->aggorder)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "ORDER BY inside " + fn + " is not supported",
		     "Remove the ORDER BY: it does not change the statistic.");
	// PostgreSQL's (Y, X) order: the first argument is y, the second x
	Expr *x = as_float8(two ? lsecond_node(TargetEntry, a->args)->expr : linitial_node(TargetEntry, a->args)->expr, fn);
	Expr *y = two ? as_float8(linitial_node(TargetEntry, a->args)->expr, fn) : nullptr;
	const double cx = centre_of(two ? lsecond_node(TargetEntry, a->args)->expr : linitial_node(TargetEntry, a->args)->expr,
	                            policy, rtindex);
	const double cy = two ? centre_of(linitial_node(TargetEntry, a->args)->expr, policy, rtindex) : 0;
	Expr *guard = two ? (Expr *) makeBoolExpr(AND_EXPR, list_make2(not_null(y), not_null(x)), -1) : not_null(x);
	Expr *dx = centred(x, cx), *dy = two ? centred(y, cy) : nullptr;
	std::array<Expr *, kParts> weights{};
	weights[kPartN] = when(guard, (Expr *) float8_const(1));
	weights[kPartSx] = when(guard, dx);
	weights[kPartSxx] = when(guard, float8_call(F_FLOAT8MUL, (Expr *) copy_node(dx), (Expr *) copy_node(dx)));
	if (two) {
		weights[kPartSy] = when(guard, dy);
		weights[kPartSyy] = when(guard, float8_call(F_FLOAT8MUL, (Expr *) copy_node(dy), (Expr *) copy_node(dy)));
		weights[kPartSxy] = when(guard, float8_call(F_FLOAT8MUL, (Expr *) copy_node(dx), (Expr *) copy_node(dy)));
	}
	const std::string label = label_of(a, relid, rtindex, list_length(q->rtable) > 1);
	List *args = list_make4(int4_const(static_cast<int32>(kind)),
	                        makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID, -1, CStringGetTextDatum(label.c_str()), false,
	                                  false),
	                        float8_const(cx), float8_const(cy));
	// every part of a one-column statistic costs a third of the session epsilon (its three parts: the
	// session epsilon, like avg), every part of a two-column one a sixth (corr's six parts: the
	// session epsilon; covar's four: two thirds of it): the same part of two statistics of the same
	// arguments is then one aggregate, released and charged once (corr with regr_slope: six cells)
	const double part_epsilon = guc_epsilon / (two ? 6 : 3);
	for (int p = 0; p < kParts; ++p)
		args = lappend(args, dispersion_needs(kind, p) && weights[p]
		                         ? part_marker(a, weights[p], part_epsilon, ext)
		                         : (Node *) makeNullConst(FLOAT8ARRAYOID, -1, InvalidOid));
	FuncExpr *call = makeFuncExpr(ext.dispersion, FLOAT8OID, args, InvalidOid, DEFAULT_COLLATION_OID, COERCE_EXPLICIT_CALL);
	call->location = kDispersionLocation;
	if (a->aggtype == FLOAT8OID)
		return (Node *) call;
	Node *cast = pg_value([&] {
		return coerce_to_target_type(nullptr, (Node *) call, FLOAT8OID, a->aggtype, -1, COERCION_EXPLICIT,
		                             COERCE_IMPLICIT_CAST, -1);
	});
	if (!cast)
		fail(ERRCODE_DATATYPE_MISMATCH,
		     "the answer of " + fn + " cannot be cast to " + pg_value([&] { return format_type_be(a->aggtype); }),
		     "Cast the argument to double precision.");
	return cast;
}

// See dispersion_spelling.h.
bool
dispersion_over_releases(const FuncExpr *f, const ExtensionObjects &ext)
{
	if (f->funcid != ext.dispersion || list_length(f->args) != 4 + kParts)
		return false;
	int releases = 0;
	for (int p = 0; p < kParts; ++p) {
		const Node *arg = static_cast<const Node *>(list_nth(f->args, 4 + p));
		if (IsA(arg, Const) && castNode(Const, arg)->constisnull)
			continue;
		if (!IsA(arg, FuncExpr) || castNode(FuncExpr, arg)->funcid != ext.release_part)
			return false;
		++releases;
	}
	return releases > 0;
}

} // namespace dxpriv::pg
