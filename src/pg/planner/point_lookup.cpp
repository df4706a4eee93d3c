// Execution by lookup, planner side: point index expressions and per-point table constants.
#include "pg/planner/point_lookup.h"

#include "pg/guard.h"
#include "pg/planner/node_build.h"

#include "core/point_table.h"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "parser/parse_coerce.h"
#include "utils/fmgroids.h"
}

#include <cstring>

namespace dxpriv::pg {

namespace {

// int4 arithmetic node a op b.
Expr *
int4_call(Oid fn, Expr *a, Expr *b)
{
	return (Expr *) makeFuncExpr(fn, INT4OID, list_make2(a, b), InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
}

// dx._point_index(coords, dims, ARRAY[member::float8, ...]): the nearest declared point of a group.
Expr *
group_point_index(const ColumnPolicy &col, const ExtensionObjects &ext)
{
	std::vector<Datum> coords;
	const size_t dims = col.members.size();
	for (size_t i = 0; i < col.domain.size(); ++i)
		for (size_t d = 0; d < dims; ++d)
			coords.push_back(Float8GetDatum(col.domain.coordinate(i, d)));
	ArrayType *arr = construct_array(coords.data(), static_cast<int>(coords.size()), FLOAT8OID, sizeof(float8),
	                                 FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
	ArrayExpr *row = makeNode(ArrayExpr);
	row->array_typeid = FLOAT8ARRAYOID;
	row->element_typeid = FLOAT8OID;
	row->multidims = false;
	row->location = -1;
	for (const ColumnPolicy::Member &m : col.members) {
		// the built-in cast of the member's type to float8 (numeric types only: validated at declaration)
		Var *mv = makeVar(1, m.attnum, m.type, m.typmod, m.collation, 0);
		row->elements = lappend(row->elements, coerce_to_target_type(nullptr, (Node *) mv, m.type, FLOAT8OID, -1,
		                                                             COERCION_EXPLICIT, COERCE_IMPLICIT_CAST, -1));
	}
	List *args = list_make3(makeConst(FLOAT8ARRAYOID, -1, InvalidOid, -1, PointerGetDatum(arr), false, false),
	                        int4_const(static_cast<int32>(dims)), row);
	return (Expr *) makeFuncExpr(ext.point_index, INT4OID, args, InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
}

// The index of a row's value in one column's domain.
Expr *
column_index(const ColumnPolicy &col, const ExtensionObjects &ext)
{
	if (col.is_group())
		return group_point_index(col, ext);
	Var *v = makeVar(1, col.attnum, col.type, col.typmod, col.collation, 0);
	Oid fn = col.domain.kind() == DomainKind::Enumerated ? ext.enum_index : ext.range_index;
	return (Expr *) makeFuncExpr(fn, INT4OID, lcons(v, domain_arg_tail(col.domain)), InvalidOid, col.collation,
	                             COERCE_EXPLICIT_CALL);
}

} // namespace

// See point_lookup.h.
List *
domain_arg_tail(const Domain &d)
{
	if (d.kind() == DomainKind::Enumerated)
		return list_make1(labels_const(d));
	return list_make3(float8_const(d.ordinal(0)), float8_const(d.ordinal(d.size() - 1)), float8_const(d.step()));
}

// See point_lookup.h.
Expr *
point_index_expr(const std::vector<const ColumnPolicy *> &cols, const ExtensionObjects &ext)
{
	Expr *acc = nullptr;
	for (const ColumnPolicy *c : cols) {
		Expr *idx = column_index(*c, ext);
		acc = acc ? int4_call(F_INT4PL, int4_call(F_INT4MUL, acc, (Expr *) int4_const(static_cast<int32>(c->domain.size()))), idx)
		          : idx;
	}
	return acc ? acc : (Expr *) int4_const(0);
}

// See point_lookup.h.
Const *
point_table_const(const std::vector<std::optional<double>> &values)
{
	const std::string bytes = encode_point_table(values);
	bytea *b = static_cast<bytea *>(palloc(VARHDRSZ + bytes.size()));
	SET_VARSIZE(b, VARHDRSZ + bytes.size());
	std::memcpy(VARDATA(b), bytes.data(), bytes.size());
	return makeConst(BYTEAOID, -1, InvalidOid, -1, PointerGetDatum(b), false, false);
}

// See point_lookup.h.
Expr *
lookup_expr(Expr *index, Const *table, bool integer, const ExtensionObjects &ext)
{
	return (Expr *) makeFuncExpr(integer ? ext.lookup_int : ext.lookup, integer ? INT4OID : FLOAT8OID,
	                             list_make2(index, table), InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
}

} // namespace dxpriv::pg
