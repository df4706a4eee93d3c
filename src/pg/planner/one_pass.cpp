// One pass over the rows, planner side: the shared arguments and the one-pass Aggrefs (one_pass.h).
#include "pg/planner/one_pass.h"
#include "pg/planner/point_lookup.h"

#include "pg/guard.h"
#include "pg/node_build.h"

#include "core/error.h"
#include "core/point_table.h"

extern "C" {
#include "catalog/pg_aggregate.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "utils/array.h"
#include "utils/builtins.h"
}

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace dxpriv::pg {

namespace {

// A histogram array per output group when the points times the groups stay within 2^21 entries
// (16 MB of counts), else a hash of the points met; per partition of an open key, up to 16.
constexpr double kDenseEntries = 2097152.0;
constexpr double kDenseOpenEntries = 16.0;

Const *
int8_array_const(const std::vector<int64> &v)
{
	std::vector<Datum> d;
	for (int64 x : v)
		d.push_back(Int64GetDatum(x));
	ArrayType *arr = pg_value([&] {
		return construct_array(d.data(), static_cast<int>(d.size()), INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
		                       TYPALIGN_DOUBLE);
	});
	return makeConst(INT8ARRAYOID, -1, InvalidOid, -1, PointerGetDatum(arr), false, false);
}

// The shortest decimal text of v that reads back (strtod) as the same double, or "" when none
// of 15 to 17 significant digits does (never for a finite double).
std::string
exact_decimal(double v)
{
	char buf[64];
	for (int digits = 15; digits <= 17; ++digits) {
		std::snprintf(buf, sizeof buf, "%.*g", digits, v);
		char *end = nullptr;
		const double back = std::strtod(buf, &end);
		if (end && *end == '\0' && std::memcmp(&back, &v, sizeof v) == 0)
			return buf;
	}
	return "";
}

// The range columns' lo, hi and step moved from the arguments into the layout: 'r' (value, lo,
// hi, step) becomes 'q<lo>:<hi>:<step>;' (value), 'R' becomes 'Q...;', so that the transition's
// arguments are the columns' values and the enumerated columns' labels only (fewer interpreter
// steps per row; executor/row_point.h reads both forms). A constant without an exact decimal form
// keeps its column in the 'r' form.
void
inline_range_constants(const std::vector<const ColumnPolicy *> &cols, std::string &layout, List *&values)
{
	std::string out;
	List *args = NIL;
	int a = 0;
	for (size_t i = 0; i < cols.size() && i < layout.size(); ++i) {
		const char letter = layout[i];
		int n = letter == 'e' || letter == 'E' ? 2 : letter == 'r' || letter == 'R' ? 4
		                                                : 2 + static_cast<int>(cols[i]->members.size());
		if (letter == 'r' || letter == 'R') {
			std::string text;
			bool exact = true;
			for (int k = 1; k <= 3; ++k) {
				auto *c = static_cast<Node *>(list_nth(values, a + k));
				const std::string d = IsA(c, Const) && !castNode(Const, c)->constisnull &&
				                              castNode(Const, c)->consttype == FLOAT8OID
				                          ? exact_decimal(DatumGetFloat8(castNode(Const, c)->constvalue))
				                          : std::string();
				exact = exact && !d.empty();
				text += d + (k < 3 ? ":" : ";");
			}
			if (exact) {
				out += (letter == 'r' ? 'q' : 'Q') + text;
				args = lappend(args, list_nth(values, a));
				a += n;
				continue;
			}
		}
		out += letter;
		for (int k = 0; k < n; ++k)
			args = lappend(args, list_nth(values, a + k));
		a += n;
	}
	if (a != list_length(values) || cols.size() != layout.size())
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv one-pass layout does not match its arguments");
	layout = out;
	values = args;
}

} // namespace

// See one_pass.h.
std::vector<bool>
one_pass_key_columns(const GroupKeys &keys, const std::vector<const ColumnPolicy *> &cols)
{
	std::vector<bool> key(cols.size(), false);
	if (!keys.grouped() || !keys.plain_columns || keys.cols.empty() || keys.group_of_point.size() != keys.groups)
		return {};
	for (size_t v = 0; v < keys.group_of_point.size(); ++v)
		if (keys.group_of_point[v] != v)
			return {};
	// the keys' columns, in the order of cols (both in attribute order)
	size_t next = 0;
	for (size_t i = 0; i < cols.size() && next < keys.cols.size(); ++i)
		if (cols[i] == keys.cols[next]) {
			if (cols[i]->is_group() || cols[i]->domain.size() < 1)
				return {};
			key[i] = true;
			++next;
		}
	if (next != keys.cols.size())
		return {};
	double points = 1;
	for (const ColumnPolicy *c : keys.cols)
		points *= static_cast<double>(c->domain.size());
	if (points != static_cast<double>(keys.groups))
		return {};
	return key;
}

// See one_pass.h.
List *
one_pass_args(const std::vector<const ColumnPolicy *> &cols, size_t groups, Expr *group, Expr *present,
              const std::vector<bool> &key, bool open)
{
	double points = 1;
	for (size_t i = 0; i < cols.size(); ++i)
		if (key.empty() || !key[i])
			points *= static_cast<double>(cols[i]->domain.size());
	const bool dense = open ? points <= kDenseOpenEntries : points * static_cast<double>(groups) <= kDenseEntries;
	std::string layout;
	bool key_group = false;
	List *values = row_layout_args(cols, layout);
	if (!key.empty()) { // the key columns ('e', 'r') in upper case: left out of the histogram's point
		for (size_t i = 0; i < cols.size(); ++i)
			if (key[i])
				layout[i] = static_cast<char>(layout[i] - 'a' + 'A');
		key_group = true; // (the transition reads the group from the key columns)
	}
	inline_range_constants(cols, layout, values);
	// the flags in the layout (executor/one_pass.cpp): per row, only what varies is an argument
	std::string flags = dense ? "d" : "";
	List *head = NIL;
	const bool group_zero = key_group || !group || (IsA(group, Const) && !castNode(Const, group)->constisnull &&
	                                                  castNode(Const, group)->consttype == INT4OID &&
	                                                  DatumGetInt32(castNode(Const, group)->constvalue) == 0);
	if (!group_zero) {
		flags += 'g';
		head = lappend(head, group);
	}
	const bool all_real = !present || (IsA(present, Const) && !castNode(Const, present)->constisnull &&
	                                   castNode(Const, present)->consttype == BOOLOID &&
	                                   DatumGetBool(castNode(Const, present)->constvalue));
	if (!all_real) {
		flags += 'p';
		head = lappend(head, present);
	}
	layout = flags + "|" + layout;
	Const *layout_const = makeConst(TEXTOID, -1, InvalidOid, -1, CStringGetTextDatum(layout.c_str()), false, false);
	return list_concat(lcons(layout_const, head), values);
}

// See one_pass.h.
void
make_one_pass(Aggref *agg, int kind, List *shared_args, Const *params, const std::vector<const ColumnPolicy *> &cols,
              std::vector<std::optional<double>> table, const ExtensionObjects &ext, const std::vector<bool> &key)
{
	std::vector<size_t> dims;
	const std::vector<size_t> kept = drop_constant_columns(cols, table, dims);
	make_one_pass_table(agg, kind, shared_args, params, cols, point_table_constant(table, dims), kept, ext, key);
}

// See one_pass.h.
void
make_one_pass_table(Aggref *agg, int kind, List *shared_args, Const *params, const std::vector<const ColumnPolicy *> &cols,
                    Const *table, const std::vector<size_t> &kept, const ExtensionObjects &ext,
                    const std::vector<bool> &key)
{
	std::vector<int64> shape{static_cast<int64>(cols.size())};
	for (const ColumnPolicy *c : cols)
		shape.push_back(static_cast<int64>(c->domain.size()));
	for (size_t k : kept)
		shape.push_back(static_cast<int64>(k));
	if (!key.empty()) {
		shape.push_back(-1);
		for (size_t i = 0; i < key.size(); ++i)
			if (key[i])
				shape.push_back(static_cast<int64>(i));
	}
	agg->aggfnoid = kind == 0 ? ext.onepass_count : kind == 2 ? ext.onepass_avg : ext.onepass_sum;
	agg->aggkind = AGGKIND_NORMAL;
	agg->aggdirectargs = list_make3(params, table, int8_array_const(shape));
	List *args = NIL;
	List *types = NIL;
	int i = 1;
	ListCell *lc;
	foreach (lc, shared_args) {
		Expr *e = (Expr *) copyObjectImpl(lfirst(lc));
		args = lappend(args, makeTargetEntry(e, static_cast<AttrNumber>(i++), nullptr, false));
		types = lappend_oid(types, exprType((Node *) e));
	}
	agg->args = args;
	agg->aggargtypes = types;
}

} // namespace dxpriv::pg
