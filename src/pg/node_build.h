// Small builders and tests of query-tree nodes shared by the planner-side files.
#pragma once

extern "C" {
#include "postgres.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/array.h"
#include "utils/builtins.h"
}

#include <string>
#include <vector>

#include "core/domain.h"
#include "pg/guard.h"

namespace dxpriv::pg {

// copyObject() relies on C's typeof; this is its C++ spelling.
template <class T>
T *
copy_node(T *node)
{
	return static_cast<T *>(copyObjectImpl(node));
}

// A PARAM_EXEC numbered id with v's type, typmod and collation: a public column's value, supplied
// per row by the executor.
inline Param *
exec_param_like(const Var *v, int id)
{
	Param *p = makeNode(Param);
	p->paramkind = PARAM_EXEC;
	p->paramid = id;
	p->paramtype = v->vartype;
	p->paramtypmod = v->vartypmod;
	p->paramcollid = v->varcollid;
	p->location = -1;
	return p;
}

// `sub` as a FROM entry (a subquery in FROM) named `alias` with columns `colnames`.
// CASE WHEN cond THEN value ELSE otherwise END of the given result type (otherwise: a NULL of type
// when omitted; no collation).
inline Expr *
case_when(Expr *cond, Expr *value, Oid type, Expr *otherwise = nullptr)
{
	CaseWhen *when = makeNode(CaseWhen);
	when->expr = cond;
	when->result = value;
	when->location = -1;
	CaseExpr *ce = makeNode(CaseExpr);
	ce->casetype = type;
	ce->casecollid = InvalidOid;
	ce->args = list_make1(when);
	ce->defresult = otherwise ? otherwise : (Expr *) makeNullConst(type, -1, InvalidOid);
	ce->location = -1;
	return (Expr *) ce;
}

inline RangeTblEntry *
subquery_rte(Query *sub, const char *alias, List *colnames)
{
	RangeTblEntry *rte = makeNode(RangeTblEntry);
	rte->rtekind = RTE_SUBQUERY;
	rte->subquery = sub;
	rte->alias = makeAlias(alias, NIL);
	rte->eref = makeAlias(alias, colnames);
	rte->inFromCl = true;
	return rte;
}

// expr reduced by eval_const_expressions (on a copy): the constant it folds to, or nullptr when it
// does not fold to one (it names a column or a parameter, or calls a volatile function). Folding
// runs the expression's immutable functions (1/0 raises): inside pg_call, so the error arrives as a
// PgError and unwinds C++ scopes (JoinScope and the like) before PostgreSQL sees it.
inline Const *
folded_const(Node *expr)
{
	Node *folded = nullptr;
	pg_call([&] { folded = eval_const_expressions(nullptr, copy_node(expr)); });
	return IsA(folded, Const) ? castNode(Const, folded) : nullptr;
}

// A float8 constant.
inline Const *
float8_const(double v)
{
	return makeConst(FLOAT8OID, -1, InvalidOid, sizeof(float8), Float8GetDatum(v), false, FLOAT8PASSBYVAL);
}

// An int4 constant.
inline Const *
int4_const(int32 v)
{
	return makeConst(INT4OID, -1, InvalidOid, sizeof(int32), Int32GetDatum(v), false, true);
}

// The labels of an enumerated domain as a text[] constant.
inline Const *
labels_const(const Domain &d)
{
	std::vector<Datum> labels;
	for (const std::string &l : d.labels())
		labels.push_back(CStringGetTextDatum(l.c_str()));
	ArrayType *arr = construct_array(labels.data(), static_cast<int>(labels.size()), TEXTOID, -1, false, TYPALIGN_INT);
	return makeConst(TEXTARRAYOID, -1, InvalidOid, -1, PointerGetDatum(arr), false, false);
}

// True when the expression or query contains a client-bound parameter ($1); a walker.
inline bool
contains_param(Node *node, void *ctx)
{
	if (!node)
		return false;
	if (IsA(node, Param))
		return castNode(Param, node)->paramkind == PARAM_EXTERN;
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(contains_param), ctx, 0);
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(contains_param), ctx);
}

} // namespace dxpriv::pg
