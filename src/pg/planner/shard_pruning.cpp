// Shard pruning on Citus tables: exact `distribution column = constant` conjuncts (shard_pruning.h).
#include "pg/planner/shard_pruning.h"

#include "pg/guard.h"
#include "pg/metadata/catalog.h"
#include "pg/node_build.h"
#include "pg/metadata/extension_objects.h"
#include "pg/metadata/policy.h"

extern "C" {
#include "catalog/pg_collation.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_operator.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/pg_locale.h"
}

#include <cmath>
#include <string>

namespace dxpriv::pg {

namespace {

// The attribute number of a hash-distributed Citus table's distribution column; 0 otherwise.
AttrNumber
distribution_attnum(Oid relid)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext)
		return 0;
	InternalSpi spi(ext->schema_owner);
	if (spi.exec("SELECT partkey FROM pg_catalog.pg_dist_partition WHERE logicalrelid = $1 AND partmethod = 'h'",
	             {{OIDOID, ObjectIdGetDatum(relid)}}, true) == 0 ||
	    spi.text(0, 0).empty())
		return 0;
	Node *key = nullptr;
	const std::string text = spi.text(0, 0);
	pg_call([&] { key = static_cast<Node *>(stringToNode(text.c_str())); });
	return key && IsA(key, Var) ? castNode(Var, key)->varattno : 0;
}

// The integer value of an int2/int4/int8 constant.
bool
integer_value(const Const *c, int64 &out)
{
	switch (c->consttype) {
	case INT2OID: out = DatumGetInt16(c->constvalue); return true;
	case INT4OID: out = DatumGetInt32(c->constvalue); return true;
	case INT8OID: out = DatumGetInt64(c->constvalue); return true;
	default: return false;
	}
}

// True when `column = value` holds on a row exactly when it holds at the row's point.
bool
exact_at_points(const ColumnPolicy &col, const OpExpr *op, const Const *value)
{
	const Domain &d = col.domain;
	if (d.kind() == DomainKind::Range && (col.type == INT2OID || col.type == INT4OID || col.type == INT8OID)) {
		int64 v;
		if (!integer_value(value, v) || d.step() != 1.0 || d.lo() != std::floor(d.lo()) ||
		    !op_in_opfamily(op->opno, INTEGER_BTREE_FAM_OID) ||
		    get_op_opfamily_strategy(op->opno, INTEGER_BTREE_FAM_OID) != BTEqualStrategyNumber)
			return false;
		const double first = d.lo(), last = d.lo() + static_cast<double>(d.size() - 1);
		return static_cast<double>(v) > first && static_cast<double>(v) < last; // not a clamping end
	}
	if (d.kind() == DomainKind::Enumerated && (col.type == TEXTOID || col.type == VARCHAROID)) {
		if (value->consttype != TEXTOID || op->opno != TextEqualOperator || !OidIsValid(op->inputcollid) ||
		    !get_collation_isdeterministic(op->inputcollid))
			return false;
		const long i = d.find_label(text_to_cstring(DatumGetTextPP(value->constvalue)));
		return i > 0; // point 0 also receives NULL and undeclared values
	}
	return false;
}

// The conjunct if it is `distcol = constant` (either side), exact at points; nullptr otherwise.
Node *
pruning_conjunct(Node *clause, AttrNumber distcol, const TablePolicy &policy)
{
	if (!IsA(clause, OpExpr) || list_length(castNode(OpExpr, clause)->args) != 2)
		return nullptr;
	OpExpr *op = castNode(OpExpr, clause);
	Node *a = strip_implicit_coercions(static_cast<Node *>(linitial(op->args)));
	Node *b = strip_implicit_coercions(static_cast<Node *>(lsecond(op->args)));
	Node *var = IsA(a, Var) ? a : b, *k = IsA(a, Var) ? b : a;
	if (!IsA(var, Var) || !IsA(k, Const) || castNode(Const, k)->constisnull)
		return nullptr;
	const Var *v = castNode(Var, var);
	Node *r = k;
	if (v->varlevelsup != 0 || v->varno != 1 || v->varattno != distcol)
		return nullptr;
	const ColumnPolicy *col = policy.find(distcol);
	if (!col || col->members.size() != 1 || !exact_at_points(*col, op, castNode(Const, r)))
		return nullptr;
	return (Node *) copy_node(op);
}

} // namespace

// See shard_pruning.h.
Node *
shard_pruning_quals(Node *where, Oid relid, const TablePolicy &policy)
{
	if (!where)
		return nullptr;
	const AttrNumber distcol = distribution_attnum(relid);
	if (distcol <= 0)
		return nullptr;
	Node *folded = nullptr;
	pg_call([&] { folded = eval_const_expressions(nullptr, copy_node(where)); }); // (may raise: 1/0)
	List *conjuncts = make_ands_implicit((Expr *) folded);
	List *kept = NIL;
	ListCell *lc;
	foreach (lc, conjuncts)
		if (Node *c = pruning_conjunct(static_cast<Node *>(lfirst(lc)), distcol, policy))
			kept = lappend(kept, c);
	return kept == NIL ? nullptr : (Node *) make_ands_explicit(kept);
}

} // namespace dxpriv::pg
