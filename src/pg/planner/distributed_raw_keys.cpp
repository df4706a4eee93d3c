// The workers' GROUP BY of a Citus grouped release by the raw columns of its group index.
#include "pg/planner/distributed_raw_keys.h"

#include "pg/guard.h"
#include "pg/node_build.h"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_oper.h"
#include "utils/builtins.h"
}

#include <cstring>
#include <string>

namespace dxpriv::pg::dist {

namespace {

// A non-NULL float8 constant equal to `v`.
bool
float8_const_is(Node *n, double v)
{
	return n && IsA(n, Const) && castNode(Const, n)->consttype == FLOAT8OID && !castNode(Const, n)->constisnull &&
	       DatumGetFloat8(castNode(Const, n)->constvalue) == v;
}

bool
is_float8_const(Node *n)
{
	return n && IsA(n, Const) && castNode(Const, n)->consttype == FLOAT8OID && !castNode(Const, n)->constisnull;
}

// Mutator of group_index_over_columns: the i-th listed column becomes column i + 1 of entry 1.
struct OverColumns {
	const std::vector<Var *> *columns;
};

Node *
over_columns_mutator(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	const auto *c = static_cast<const OverColumns *>(ctx);
	if (IsA(node, Var))
		for (size_t i = 0; i < c->columns->size(); ++i)
			if (equal(node, (*c->columns)[i])) {
				const Var *v = (*c->columns)[i];
				return (Node *) makeVar(1, static_cast<AttrNumber>(i + 1), v->vartype, v->vartypmod, v->varcollid, 0);
			}
	return expression_tree_mutator(node, reinterpret_cast<Node *(*) ()>(over_columns_mutator), ctx);
}

} // namespace

// See distributed_raw_keys.h.
std::vector<Var *>
raw_group_columns(Node *group_index, const ExtensionObjects &ext)
{
	std::vector<Var *> none, out;
	if (!group_index || !IsA(group_index, FuncExpr))
		return none;
	FuncExpr *f = castNode(FuncExpr, group_index);
	if (f->funcid != ext.weigh_int || f->funcvariadic || list_length(f->args) < 6)
		return none;
	Node *table = static_cast<Node *>(linitial(f->args)), *layout = static_cast<Node *>(lsecond(f->args));
	if (!IsA(table, Const) || castNode(Const, table)->constisnull || !IsA(layout, Const) ||
	    castNode(Const, layout)->constisnull || castNode(Const, layout)->consttype != TEXTOID)
		return none;
	const std::string letters = pg_value([&] { return text_to_cstring(DatumGetTextPP(castNode(Const, layout)->constvalue)); });
	if (letters.empty() || letters.find_first_not_of('r') != std::string::npos ||
	    list_length(f->args) != 2 + 4 * static_cast<int>(letters.size()))
		return none;
	for (size_t k = 0; k < letters.size(); ++k) {
		const int at = 2 + 4 * static_cast<int>(k);
		Node *value = static_cast<Node *>(list_nth(f->args, at));
		if (!IsA(value, Var) || castNode(Var, value)->varlevelsup != 0 ||
		    (castNode(Var, value)->vartype != INT2OID && castNode(Var, value)->vartype != INT4OID &&
		     castNode(Var, value)->vartype != INT8OID) ||
		    !is_float8_const(static_cast<Node *>(list_nth(f->args, at + 1))) ||
		    !is_float8_const(static_cast<Node *>(list_nth(f->args, at + 2))) ||
		    !float8_const_is(static_cast<Node *>(list_nth(f->args, at + 3)), 1.0))
			return none;
		bool seen = false;
		for (Var *v : out)
			seen = seen || equal(v, value);
		if (!seen)
			out.push_back(castNode(Var, value));
	}
	return out;
}

// See distributed_raw_keys.h.
Expr *
group_index_over_columns(Node *group_index, const std::vector<Var *> &columns)
{
	OverColumns c{&columns};
	return (Expr *) over_columns_mutator(copy_node(group_index), &c);
}

// See distributed_raw_keys.h.
void
type_group_clauses(Query *grouped, const std::vector<Var *> &columns)
{
	for (size_t i = 0; i < columns.size(); ++i) {
		auto *by = static_cast<SortGroupClause *>(list_nth(grouped->groupClause, static_cast<int>(i)));
		Oid sortop = InvalidOid, eqop = InvalidOid;
		bool hashable = false;
		pg_call([&] { get_sort_group_operators(columns[i]->vartype, true, true, false, &sortop, &eqop, nullptr, &hashable); });
		by->eqop = eqop;
		by->sortop = sortop;
		by->hashable = hashable;
	}
}

} // namespace dxpriv::pg::dist
