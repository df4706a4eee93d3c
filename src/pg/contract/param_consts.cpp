// Where the parameter arrays sit in rewritten query and plan nodes (see param_consts.h).
#include "pg/contract/param_consts.h"
#include "pg/metadata/extension_objects.h"

extern "C" {
#include "catalog/pg_aggregate.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
}

namespace dxpriv::pg {

// See param_consts.h.
Const *
aggref_params_const(Aggref *aggref)
{
	// a one-pass aggregate: (parameters, point table, shape) as direct arguments, its arguments shared
	if (aggref->aggkind == AGGKIND_NORMAL && list_length(aggref->aggdirectargs) == 3) {
		Node *e = (Node *) linitial(aggref->aggdirectargs);
		return IsA(e, Const) && !castNode(Const, e)->constisnull && castNode(Const, e)->consttype == FLOAT8ARRAYOID
		           ? castNode(Const, e)
		           : nullptr;
	}
	if (list_length(aggref->args) < 3) // (weight, group, parameters [, count weight])
		return nullptr;
	Node *e = (Node *) castNode(TargetEntry, lthird(aggref->args))->expr;
	return IsA(e, Const) && !castNode(Const, e)->constisnull ? castNode(Const, e) : nullptr;
}

// See param_consts.h.
Const *
release_params_const(Node *node, const ExtensionObjects &ext)
{
	if (!node || !IsA(node, FuncExpr) || !ext.is_release(castNode(FuncExpr, node)->funcid) ||
	    list_length(castNode(FuncExpr, node)->args) != 3)
		return nullptr;
	Node *e = static_cast<Node *>(lsecond(castNode(FuncExpr, node)->args));
	return IsA(e, Const) && !castNode(Const, e)->constisnull ? castNode(Const, e) : nullptr;
}

// See param_consts.h.
Const *
native_partial_params_const(Node *node, const ExtensionObjects &ext)
{
	Node *e = nullptr;
	if (node && IsA(node, FuncExpr) && castNode(FuncExpr, node)->funcid == ext.state_of &&
	    list_length(castNode(FuncExpr, node)->args) == 4)
		e = static_cast<Node *>(lthird(castNode(FuncExpr, node)->args));
	else if (node && IsA(node, Aggref) && castNode(Aggref, node)->aggfnoid == ext.collect &&
	         list_length(castNode(Aggref, node)->args) == 4)
		e = (Node *) castNode(TargetEntry, lfourth(castNode(Aggref, node)->args))->expr;
	else if (node && IsA(node, FuncExpr) && OidIsValid(ext.grouped_partials) &&
	         castNode(FuncExpr, node)->funcid == ext.grouped_partials && list_length(castNode(FuncExpr, node)->args) == 3)
		e = static_cast<Node *>(lsecond(castNode(FuncExpr, node)->args));
	else if (node && IsA(node, Aggref) && castNode(Aggref, node)->aggfnoid == ext.em_collect)
		return aggref_params_const(castNode(Aggref, node));
	return e && IsA(e, Const) && !castNode(Const, e)->constisnull ? castNode(Const, e) : nullptr;
}

} // namespace dxpriv::pg
