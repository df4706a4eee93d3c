// dx.last_release() of a release grouped by an open key: the HAVING that labels kept partitions.
#include "pg/planner/open_release_log.h"

#include "pg/guard.h"
#include "pg/node_build.h"

extern "C" {
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/tlist.h"
#include "utils/array.h"
#include "utils/builtins.h"
}

namespace dxpriv::pg::analysis {

namespace {

// dx._open_cells(kept, names, values).
Expr *
open_cells_call(const ExtensionObjects &ext, bool kept, Node *names, Node *values)
{
	return (Expr *) makeFuncExpr(ext.open_cells, BOOLOID,
	                             list_make3(makeBoolConst(kept, false), names, values), InvalidOid, InvalidOid,
	                             COERCE_EXPLICIT_CALL);
}

} // namespace

// See planner/open_release_log.h.
Node *
open_release_having(Query *q, const ExtensionObjects &ext, Expr *selection, Node *having)
{
	Node *result = nullptr;
	pg_call([&] {
		List *names = NIL, *values = NIL;
		ListCell *lc;
		foreach (lc, q->groupClause) {
			TargetEntry *tle = get_sortgroupclause_tle(lfirst_node(SortGroupClause, lc), q->targetList);
			names = lappend(names, makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID, -1,
			                                 CStringGetTextDatum(tle->resname ? tle->resname : "?column?"), false, false));
			Expr *e = copy_node(tle->expr);
			if (exprType((Node *) e) != TEXTOID) {
				CoerceViaIO *c = makeNode(CoerceViaIO);
				c->arg = e;
				c->resulttype = TEXTOID;
				c->resultcollid = DEFAULT_COLLATION_OID;
				c->coerceformat = COERCE_EXPLICIT_CAST;
				c->location = -1;
				e = (Expr *) c;
			}
			values = lappend(values, e);
		}
		auto array = [](List *elements) {
			ArrayExpr *a = makeNode(ArrayExpr);
			a->array_typeid = TEXTARRAYOID;
			a->array_collid = DEFAULT_COLLATION_OID;
			a->element_typeid = TEXTOID;
			a->elements = elements;
			a->multidims = false;
			a->location = -1;
			return (Node *) a;
		};
		Expr *kept = open_cells_call(ext, true, array(names), array(values));
		if (having)
			kept = makeBoolExpr(AND_EXPR, list_make2(kept, having), -1);
		Node *null_array = (Node *) makeNullConst(TEXTARRAYOID, -1, InvalidOid);
		result = (Node *) case_when(selection, kept, BOOLOID,
		                            open_cells_call(ext, false, null_array, copy_node(null_array)));
	});
	return result;
}

} // namespace dxpriv::pg::analysis
