// Execution by lookup, planner side: the dx._weigh calls and their per-point table constants.
#include "pg/planner/point_lookup.h"

#include "pg/guard.h"
#include "pg/node_build.h"
#include "pg/metadata/extension_objects.h"
#include "pg/metadata/policy.h"

#include "core/error.h"
#include "core/point_table.h"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
}

#include <cstring>

namespace dxpriv::pg {

namespace {

// A text constant.
Const *
text_const(const std::string &s)
{
	return makeConst(TEXTOID, -1, InvalidOid, -1, CStringGetTextDatum(s.c_str()), false, false);
}

// The bytea constant holding a per-point table (nullopt: the point contributes nothing) over a
// sub-universe of the given domain sizes.
Const *
bytes_const(const std::string &bytes)
{
	bytea *b = static_cast<bytea *>(palloc(VARHDRSZ + bytes.size()));
	SET_VARSIZE(b, VARHDRSZ + bytes.size());
	std::memcpy(VARDATA(b), bytes.data(), bytes.size());
	return makeConst(BYTEAOID, -1, InvalidOid, -1, PointerGetDatum(b), false, false);
}

Const *
point_table_const(const std::vector<std::optional<double>> &values, const std::vector<size_t> &dims)
{
	return bytes_const(encode_point_table(values, dims));
}

} // namespace

// See point_lookup.h.
Const *
bytes_constant(const std::string &bytes)
{
	return bytes_const(bytes);
}

// See point_lookup.h.
Expr *
weigh_expr_bytes(const std::vector<const ColumnPolicy *> &cols, const std::string &table, bool integer,
                 const ExtensionObjects &ext)
{
	std::string layout;
	List *args = list_concat(list_make2(bytes_const(table), nullptr), row_layout_args(cols, layout));
	lsecond(args) = text_const(layout);
	return (Expr *) makeFuncExpr(integer ? ext.weigh_int : ext.weigh, integer ? INT4OID : FLOAT8OID, args, InvalidOid,
	                             InvalidOid, COERCE_EXPLICIT_CALL);
}

// See point_lookup.h.
List *
domain_arg_tail(const Domain &d)
{
	if (d.kind() == DomainKind::Enumerated)
		return list_make1(labels_const(d));
	return list_make3(float8_const(d.ordinal(0)), float8_const(d.ordinal(d.size() - 1)), float8_const(d.step()));
}

// See point_lookup.h.
Const *
point_table_constant(const std::vector<std::optional<double>> &values, const std::vector<size_t> &dims)
{
	return point_table_const(values, dims);
}

// See point_lookup.h.
List *
row_layout_args(const std::vector<const ColumnPolicy *> &cols, std::string &layout)
{
	List *args = NIL;
	for (const ColumnPolicy *c : cols) {
		if (c->is_group()) {
			// 'p': coords, dims, then the members' values (numeric types, validated at declaration)
			layout += 'p';
			std::vector<Datum> coords;
			const size_t dims = c->members.size();
			for (size_t i = 0; i < c->domain.size(); ++i)
				for (size_t d = 0; d < dims; ++d)
					coords.push_back(Float8GetDatum(c->domain.coordinate(i, d)));
			ArrayType *arr = pg_value([&] {
				return construct_array(coords.data(), static_cast<int>(coords.size()), FLOAT8OID, sizeof(float8),
				                       FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
			});
			args = lappend(args, makeConst(FLOAT8ARRAYOID, -1, InvalidOid, -1, PointerGetDatum(arr), false, false));
			args = lappend(args, int4_const(static_cast<int32>(dims)));
			for (const ColumnPolicy::Member &m : c->members)
				args = lappend(args, makeVar(1, m.attnum, m.type, m.typmod, m.collation, 0));
			continue;
		}
		// 'e': value, labels; 'r': value, lo, hi, step
		layout += c->domain.kind() == DomainKind::Enumerated ? 'e' : 'r';
		args = lappend(args, makeVar(1, c->attnum, c->type, c->typmod, c->collation, 0));
		args = list_concat(args, domain_arg_tail(c->domain));
	}
	return args;
}

// See point_lookup.h.
Expr *
weigh_expr(const std::vector<const ColumnPolicy *> &cols, const std::vector<std::optional<double>> &table,
           bool integer, const ExtensionObjects &ext, Expr *slot, size_t slots)
{
	const Oid type = integer ? INT4OID : FLOAT8OID;
	if (cols.empty() && !slot) {
		if (table.size() != 1)
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv point table of a query without columns must have one point");
		if (!table[0])
			return (Expr *) makeNullConst(type, -1, InvalidOid);
		return (Expr *) (integer ? int4_const(static_cast<int32>(*table[0])) : float8_const(*table[0]));
	}
	std::vector<size_t> dims;
	for (const ColumnPolicy *c : cols)
		dims.push_back(c->domain.size());
	std::string layout;
	List *args = list_concat(list_make2(point_table_const(table, dims), nullptr), row_layout_args(cols, layout));
	if (slot) { // a range 0 .. slots - 1, last and fastest
		layout += 'r';
		dims.push_back(slots);
		args = lappend(args, slot);
		args = list_concat(args, list_make3(float8_const(0), float8_const(static_cast<double>(slots - 1)), float8_const(1)));
		linitial(args) = point_table_const(table, dims);
	}
	lsecond(args) = text_const(layout);
	return (Expr *) makeFuncExpr(integer ? ext.weigh_int : ext.weigh, type, args, InvalidOid, InvalidOid,
	                             COERCE_EXPLICIT_CALL);
}

// See point_lookup.h.
std::vector<size_t>
drop_constant_columns(const std::vector<const ColumnPolicy *> &cols, std::vector<std::optional<double>> &table,
                      std::vector<size_t> &dims)
{
	dims.clear();
	for (const ColumnPolicy *c : cols)
		dims.push_back(c->domain.size());
	try {
		return drop_constant_dimensions(table, dims);
	} catch (const CoreError &) {
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv per-point table does not match its columns");
	}
}

// See point_lookup.h.
Expr *
reduced_weigh_expr(const std::vector<const ColumnPolicy *> &cols, std::vector<std::optional<double>> table,
                   bool integer, const ExtensionObjects &ext)
{
	std::vector<size_t> dims;
	const std::vector<size_t> kept = drop_constant_columns(cols, table, dims);
	std::vector<const ColumnPolicy *> used;
	for (size_t i : kept)
		used.push_back(cols[i]);
	return weigh_expr(used, table, integer, ext);
}

} // namespace dxpriv::pg
