// Time buckets of an open date column: recognition and the guarded expression dxpriv runs.
#include "pg/planner/open_buckets.h"

#include "pg/guard.h"
#include "pg/node_build.h"

extern "C" {
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/fmgroids.h"
}

#include <string>

namespace dxpriv::pg::analysis {

namespace {

const char *const kUnits[] = {"microseconds", "milliseconds", "second", "minute", "hour", "day", "week",
                              "month", "quarter", "year", "decade", "century", "millennium"};

bool
is_open_var(Node *n, const std::set<AttrNumber> &open, AttrNumber &att)
{
	if (!n || !IsA(n, Var))
		return false;
	Var *v = castNode(Var, n);
	if (v->varno != 1 || v->varlevelsup != 0 || !open.count(v->varattno) || v->vartype != DATEOID)
		return false;
	att = v->varattno;
	return true;
}

// date_trunc(unit, d::timestamp[tz]): the open column, or 0.
AttrNumber
trunc_of_open(Node *n, const std::set<AttrNumber> &open)
{
	if (!n || !IsA(n, FuncExpr))
		return 0;
	FuncExpr *f = castNode(FuncExpr, n);
	if ((f->funcid != F_DATE_TRUNC_TEXT_TIMESTAMPTZ && f->funcid != F_DATE_TRUNC_TEXT_TIMESTAMP) ||
	    list_length(f->args) != 2)
		return 0;
	Node *unit = static_cast<Node *>(linitial(f->args));
	if (!IsA(unit, Const) || castNode(Const, unit)->constisnull || castNode(Const, unit)->consttype != TEXTOID)
		return 0;
	const std::string u = pg_value([&] { return text_to_cstring(DatumGetTextPP(castNode(Const, unit)->constvalue)); });
	bool known = false;
	for (const char *k : kUnits)
		known = known || u == k;
	if (!known)
		return 0;
	Node *arg = static_cast<Node *>(lsecond(f->args));
	if (!IsA(arg, FuncExpr))
		return 0;
	FuncExpr *cast = castNode(FuncExpr, arg);
	const Oid want = f->funcid == F_DATE_TRUNC_TEXT_TIMESTAMPTZ ? F_TIMESTAMPTZ_DATE : F_TIMESTAMP_DATE;
	AttrNumber att = 0;
	if (cast->funcid != want || list_length(cast->args) != 1 || !is_open_var(static_cast<Node *>(linitial(cast->args)), open, att))
		return 0;
	return att;
}

Const *
date_const(const char *text)
{
	const Datum d = pg_value([&] { return DirectFunctionCall1(date_in, CStringGetDatum(text)); });
	return makeConst(DATEOID, -1, InvalidOid, sizeof(DateADT), d, false, true);
}

} // namespace

// See open_buckets.h.
AttrNumber
open_key_column(Expr *expr, const std::set<AttrNumber> &open, bool *bucket)
{
	*bucket = false;
	Node *n = reinterpret_cast<Node *>(expr);
	if (n && IsA(n, Var)) {
		Var *v = castNode(Var, n);
		return v->varno == 1 && v->varlevelsup == 0 && open.count(v->varattno) ? v->varattno : 0;
	}
	// date_trunc(...)::date
	if (n && IsA(n, FuncExpr)) {
		FuncExpr *f = castNode(FuncExpr, n);
		if ((f->funcid == F_DATE_TIMESTAMPTZ || f->funcid == F_DATE_TIMESTAMP) && list_length(f->args) == 1) {
			const AttrNumber att = trunc_of_open(static_cast<Node *>(linitial(f->args)), open);
			*bucket = att != 0;
			return att;
		}
	}
	const AttrNumber att = trunc_of_open(n, open);
	*bucket = att != 0;
	return att;
}

// See open_buckets.h.
Expr *
guarded_bucket(Expr *expr)
{
	Expr *bucket = static_cast<Expr *>(copy_node(expr));
	// the open Var inside (found again: the shapes above)
	FuncExpr *f = castNode(FuncExpr, bucket);
	if (f->funcid == F_DATE_TIMESTAMPTZ || f->funcid == F_DATE_TIMESTAMP)
		f = castNode(FuncExpr, linitial(f->args));
	FuncExpr *cast = castNode(FuncExpr, lsecond(f->args));
	Var *v = castNode(Var, linitial(cast->args));
	FuncExpr *ge = makeFuncExpr(F_DATE_GE, BOOLOID, list_make2(copy_node(v), date_const("0001-01-01")), InvalidOid,
	                            InvalidOid, COERCE_EXPLICIT_CALL);
	FuncExpr *le = makeFuncExpr(F_DATE_LE, BOOLOID, list_make2(copy_node(v), date_const("9999-12-31")), InvalidOid,
	                            InvalidOid, COERCE_EXPLICIT_CALL);
	return case_when(makeBoolExpr(AND_EXPR, list_make2(ge, le), -1), bucket, exprType(reinterpret_cast<Node *>(bucket)));
}

} // namespace dxpriv::pg::analysis
