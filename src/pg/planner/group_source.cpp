// Builds the row source of a GROUP BY query: the table's rows plus one empty row per group.
#include "pg/planner/group_source.h"

#include "pg/metadata/catalog.h"
#include "pg/guard.h"
#include "pg/node_build.h"
#include "pg/elevated/sealed_execution.h"
#include "pg/metadata/policy.h"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

#include <string>

namespace dxpriv::pg {

namespace {

// An array literal element: double-quoted with backslash escapes (array_in syntax).
std::string
array_element(const std::string &label)
{
	std::string out = "\"";
	for (char ch : label) {
		if (ch == '"' || ch == '\\')
			out += '\\';
		out += ch;
	}
	return out + "\"";
}

// unnest('{...}'::type[], ...) AS g(v0, ...) listing the key columns' values at every group's
// representative point, as their canonical text (one row per output group).
std::string
group_points_sql(const GroupKeys &keys)
{
	std::string args, names;
	for (size_t i = 0; i < keys.cols.size(); ++i) {
		const ColumnPolicy &col = *keys.cols[i];
		size_t stride = 1;
		for (size_t j = i + 1; j < keys.cols.size(); ++j)
			stride *= keys.cols[j]->domain.size();
		std::vector<std::string> labels;
		for (size_t g = 0; g < keys.groups; ++g)
			labels.push_back(col.domain.label((keys.representative[g] / stride) % col.domain.size()));
		args += std::string(i ? ", " : "") + declared_values_sql(col, labels);
		names += (i ? ", v" : "v") + std::to_string(i);
	}
	return "unnest(" + args + ") AS g(" + names + ")";
}

// Appends "<column>, " for every column read to select, their names to colnames, and maps each
// attribute to its position (1, 2, ...); returns the next free position.
AttrNumber
list_columns(const TablePolicy &policy, const std::vector<AttrNumber> &columns, std::string &select, List *&colnames,
             std::map<AttrNumber, AttrNumber> &mapping)
{
	AttrNumber next = 1;
	for (AttrNumber att : columns) {
		const ColumnPolicy::Member *mem = policy.find(att)->member(att);
		select += std::string(quote_identifier(mem->name.c_str())) + ", ";
		colnames = lappend(colnames, makeString(pstrdup(mem->name.c_str())));
		mapping[att] = next++;
	}
	return next;
}

struct RemapContext {
	const std::map<AttrNumber, AttrNumber> *mapping;
};

// Mutator behind remap_vars.
Node *
remap_mutator(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	if (IsA(node, Var)) {
		Var *v = castNode(Var, node);
		if (v->varno == 1 && v->varlevelsup == 0) {
			auto *c = static_cast<RemapContext *>(ctx);
			auto it = c->mapping->find(v->varattno);
			if (it == c->mapping->end())
				fail(ERRCODE_INTERNAL_ERROR, "dxpriv could not remap a column reference");
			Var *nv = static_cast<Var *>(copyObjectImpl(v));
			nv->varattno = it->second;
			nv->varattnosyn = it->second;
			nv->varnosyn = 1;
			return (Node *) nv;
		}
		return node;
	}
	return expression_tree_mutator(node, reinterpret_cast<Node *(*) ()>(remap_mutator), ctx);
}

} // namespace

// See group_source.h.
Var *
present_flag_var()
{
	return makeVar(1, kPresentPlaceholder, BOOLOID, -1, InvalidOid, 0);
}

// See group_source.h.
Var *
slot_var()
{
	return makeVar(1, kSlotPlaceholder, INT4OID, -1, InvalidOid, 0);
}

// See group_source.h.
Expr *
real_rows_only(Expr *value, Oid type, Expr *filter)
{
	Expr *cond = filter ? (Expr *) makeBoolExpr(AND_EXPR, list_make2(present_flag_var(), filter), -1)
	                    : (Expr *) present_flag_var();
	return case_when(cond, value, type);
}

// See group_source.h.
Node *
remap_vars(Node *node, const std::map<AttrNumber, AttrNumber> &mapping)
{
	RemapContext ctx{&mapping};
	return remap_mutator(node, &ctx);
}

// See group_source.h.
void
replace_rte_with_sql(Query *q, const std::string &sql, List *colnames)
{
	RangeTblEntry *rte = linitial_node(RangeTblEntry, q->rtable);
	Query *sub = nullptr;
	InternalScope internal; // the generated SQL is dxpriv's own: the hooks must not re-analyse it
	pg_call([&] {
		List *raw = raw_parser(sql.c_str(), RAW_PARSE_DEFAULT);
		sub = parse_analyze_fixedparams(linitial_node(RawStmt, raw), sql.c_str(), nullptr, 0, nullptr);
	});
	rte->rtekind = RTE_SUBQUERY;
	rte->subquery = sub;
	rte->relid = InvalidOid;
	rte->relkind = 0;
	rte->rellockmode = 0;
	rte->tablesample = nullptr;
	rte->inh = false;
	rte->requiredPerms = 0;
	rte->checkAsUser = InvalidOid;
	rte->selectedCols = nullptr;
	rte->insertedCols = nullptr;
	rte->updatedCols = nullptr;
	rte->extraUpdatedCols = nullptr;
	rte->security_barrier = false;
	rte->eref = makeAlias(rte->eref->aliasname, colnames);
}

// See group_source.h.
std::string
declared_values_sql(const ColumnPolicy &col, const std::vector<std::string> &labels)
{
	std::string arr = "{";
	for (size_t i = 0; i < labels.size(); ++i)
		arr += (i ? "," : "") + array_element(labels[i]);
	arr += "}";
	const char *type = pg_value([&] { return format_type_with_typemod(col.type, col.typmod); });
	return quote_literal_cstr(arr.c_str()) + std::string("::") + type + "[]";
}

// See group_source.h.
std::string
empty_group_rows_sql(const TablePolicy &policy, const std::vector<AttrNumber> &columns, const GroupKeys &keys,
                     const std::string &extra)
{
	std::string empty = "SELECT ";
	for (AttrNumber att : columns) {
		const ColumnPolicy *col = policy.find(att);
		const ColumnPolicy::Member *mem = col->member(att);
		int key_pos = -1;
		for (size_t i = 0; i < keys.cols.size(); ++i)
			if (keys.cols[i] == col)
				key_pos = static_cast<int>(i);
		if (key_pos >= 0)
			empty += "g.v" + std::to_string(key_pos) + ", ";
		else
			empty += std::string("NULL::") + pg_value([&] { return format_type_with_typemod(mem->type, mem->typmod); }) + ", ";
	}
	return empty + extra + "false FROM " + group_points_sql(keys);
}

// See group_source.h.
std::map<AttrNumber, AttrNumber>
replace_with_group_source(Query *q, const TablePolicy &policy, const std::vector<AttrNumber> &columns,
                          const GroupKeys &keys, const std::string &where)
{
	RangeTblEntry *rte = linitial_node(RangeTblEntry, q->rtable);
	std::string table = std::string(rte->inh ? "" : "ONLY ") + qualified_relation_name(policy.relid);
	if (!where.empty())
		table += " WHERE " + where;
	std::string real = "SELECT ";
	std::map<AttrNumber, AttrNumber> mapping;
	List *colnames = NIL;
	const AttrNumber next = list_columns(policy, columns, real, colnames, mapping);
	std::string sql = real + "true AS dx_present FROM " + table + " UNION ALL " + empty_group_rows_sql(policy, columns, keys, "");
	colnames = lappend(colnames, makeString(pstrdup("dx_present")));
	mapping[kPresentPlaceholder] = next;

	replace_rte_with_sql(q, sql, colnames);
	return mapping;
}

// See group_source.h.
std::map<AttrNumber, AttrNumber>
replace_with_slot_group_source(Query *q, const TablePolicy &policy, const std::vector<AttrNumber> &columns,
                               size_t slots, size_t groups, bool empty_groups)
{
	RangeTblEntry *rte = linitial_node(RangeTblEntry, q->rtable);
	const std::string table = std::string(rte->inh ? "" : "ONLY ") + qualified_relation_name(policy.relid);
	std::string real = "SELECT ", empty = "SELECT ";
	std::map<AttrNumber, AttrNumber> mapping;
	List *colnames = NIL;
	AttrNumber next = list_columns(policy, columns, real, colnames, mapping);
	for (AttrNumber att : columns) {
		const ColumnPolicy::Member *mem = policy.find(att)->member(att);
		empty += std::string("NULL::") + pg_value([&] { return format_type_with_typemod(mem->type, mem->typmod); }) + ", ";
	}
	const std::string sql = real + "true AS dx_present, " +
	                        (slots > 1 ? "s.dx_slot FROM " + table + " CROSS JOIN pg_catalog.generate_series(0, " +
	                                         std::to_string(slots - 1) + ") AS s(dx_slot)"
	                                   : "0 AS dx_slot FROM " + table) +
	                        (empty_groups ? " UNION ALL " + empty + "false, g.dx_slot FROM pg_catalog.generate_series(0, " +
	                                            std::to_string(groups - 1) + ") AS g(dx_slot)"
	                                      : std::string());
	colnames = lappend(colnames, makeString(pstrdup("dx_present")));
	mapping[kPresentPlaceholder] = next++;
	colnames = lappend(colnames, makeString(pstrdup("dx_slot")));
	mapping[kSlotPlaceholder] = next;
	replace_rte_with_sql(q, sql, colnames);
	return mapping;
}

} // namespace dxpriv::pg
