// Builds the bounded row source of a query on a table with a privacy unit (window functions over
// dxpriv's keyed hash), with dxpriv's own group and weight lookups injected into its innermost level.
#include "pg/planner/unit_source.h"

#include "pg/guard.h"
#include "pg/planner/group_source.h"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

#include <string>

namespace dxpriv::pg {

namespace {

// Puts dxpriv's expressions into the level that reads the table: the target entries named dx_g
// (the group) and dx_w<j> (count_units weights), written as typed NULLs in the generated SQL.
void
inject_lookups(Query *q, Oid relid, const UnitSource &spec, int &done)
{
	ListCell *lc;
	foreach (lc, q->rtable) {
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
		if (rte->rtekind == RTE_SUBQUERY)
			inject_lookups(rte->subquery, relid, spec, done);
	}
	if (list_length(q->rtable) != 1 || linitial_node(RangeTblEntry, q->rtable)->relid != relid)
		return;
	foreach (lc, q->targetList) {
		TargetEntry *te = lfirst_node(TargetEntry, lc);
		if (!te->resname)
			continue;
		const std::string name = te->resname;
		if (name == "dx_g" && spec.group_index) {
			te->expr = static_cast<Expr *>(copyObjectImpl(spec.group_index));
			done++;
		} else if (name.rfind("dx_w", 0) == 0) {
			const size_t j = std::stoul(name.substr(4));
			te->expr = static_cast<Expr *>(copyObjectImpl(spec.distinct_weights.at(j)));
			done++;
		}
	}
}

} // namespace

// See unit_source.h.
Var *
unit_first_var(size_t j)
{
	return makeVar(1, static_cast<AttrNumber>(kUnitFirstPlaceholder + j), BOOLOID, -1, InvalidOid, 0);
}

// See unit_source.h.
Expr *
unit_count_weight(size_t j, bool grouped)
{
	Expr *one = (Expr *) makeConst(FLOAT8OID, -1, InvalidOid, sizeof(float8), Float8GetDatum(1.0), false, FLOAT8PASSBYVAL);
	if (grouped)
		return real_rows_only(one, FLOAT8OID, (Expr *) unit_first_var(j));
	return case_when((Expr *) unit_first_var(j), one, FLOAT8OID);
}

// See unit_source.h.
std::map<AttrNumber, AttrNumber>
replace_with_unit_source(Query *q, const UnitSource &spec)
{
	const TablePolicy &policy = *spec.policy;
	const UnitPolicy &unit = policy.unit;
	if (!unit.present() || unit.key_hex.size() != 32)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv: the table has no privacy unit key");
	RangeTblEntry *rte = linitial_node(RangeTblEntry, q->rtable);
	const std::string table = std::string(rte->inh ? "" : "ONLY ") + qualified_relation_name(policy.relid);
	const std::string key = "'\\x" + unit.key_hex + "'::pg_catalog.bytea";
	const bool grouped = spec.keys != nullptr;
	const ContributionBound &b = spec.bound;

	// level 0: the columns read, the unit, the row's rank hash (unit and every declared column),
	// and the lookups (injected below)
	std::string hashed = quote_identifier(unit.column.c_str());
	for (const ColumnPolicy &c : policy.columns)
		for (const ColumnPolicy::Member &m : c.members)
			hashed += std::string(", ") + quote_identifier(m.name.c_str());
	std::string sql = "SELECT ";
	for (size_t i = 0; i < spec.columns.size(); ++i)
		sql += std::string(quote_identifier(policy.find(spec.columns[i])->member(spec.columns[i])->name.c_str())) +
		       " AS dx_c" + std::to_string(i) + ", ";
	// the rank is (hash, tableoid, ctid): a total order, so that every window pass orders a unit's
	// rows alike even when two of them hash equally (identical rows, interchangeable for any query)
	sql += std::string(quote_identifier(unit.column.c_str())) + " AS dx_u, dx._unit_hash(" + key + ", " + hashed +
	       ") AS dx_h, tableoid AS dx_o, ctid AS dx_t";
	if (grouped)
		sql += ", NULL::pg_catalog.int4 AS dx_g";
	for (size_t j = 0; j < spec.distinct_weights.size(); ++j)
		sql += ", NULL::pg_catalog.float8 AS dx_w" + std::to_string(j);
	sql += " FROM " + table;
	int level = 0;
	auto wrap = [&](const std::string &select, const std::string &where) {
		const std::string alias = "dx_l" + std::to_string(level++);
		sql = "SELECT " + alias + ".*" + select + " FROM (" + sql + ") AS " + alias;
		if (!where.empty())
			sql = "SELECT * FROM (" + sql + ") AS dx_f" + std::to_string(level) + " WHERE " + where;
	};
	// GROUP BY: a unit's groups are ordered by their keyed group hash dx_gh, its rows in a group by
	// rank; every bound and flag below reads one sort of (unit, dx_gh, group, rank)
	const std::string row_order = grouped ? "dx_gh, dx_g, dx_h, dx_o, dx_t" : "dx_h, dx_o, dx_t";
	const std::string in_group = grouped ? "PARTITION BY dx_u, dx_gh, dx_g ORDER BY dx_h, dx_o, dx_t"
	                                     : "PARTITION BY dx_u ORDER BY dx_h, dx_o, dx_t";
	if (grouped)
		wrap(", dx._unit_hash(" + key + ", dx_u, dx_g) AS dx_gh", "");
	// count_units: each unit's first counted row (in rank order) of each group carries the 1. The rows
	// the bounds keep of a group are a prefix of its rows in rank order, so the flagged row survives
	// exactly when some counted row of the unit survives in that group.
	std::string flags;
	for (size_t j = 0; j < spec.distinct_weights.size(); ++j) {
		const std::string w = "dx_w" + std::to_string(j);
		flags += ", (" + w + " IS NOT NULL AND pg_catalog.count(" + w + ") OVER (" + in_group +
		         " ROWS UNBOUNDED PRECEDING) = 1) AS dx_d" + std::to_string(j);
	}
	// GROUP BY: the max_groups first groups of a unit, the max_rows_per_group first rows of each
	std::string select = flags, where;
	const bool per_group = grouped && b.max_rows_per_group < b.max_rows, groups = grouped && b.max_groups < b.max_rows;
	if (per_group) {
		select += ", pg_catalog.row_number() OVER (" + in_group + ") AS dx_rg";
		where = "dx_rg <= " + std::to_string(b.max_rows_per_group);
	}
	if (groups) {
		select += ", pg_catalog.dense_rank() OVER (PARTITION BY dx_u ORDER BY dx_gh, dx_g) AS dx_gr";
		where += std::string(where.empty() ? "" : " AND ") + "dx_gr <= " + std::to_string(b.max_groups);
	}
	// every query: the max_rows first rows that remain, unless both group filters run and imply it
	const bool total = !(per_group && groups && b.max_groups * b.max_rows_per_group <= b.max_rows);
	if (total && where.empty()) { // one pass: the flags and the total rank share the sort
		select += ", pg_catalog.row_number() OVER (PARTITION BY dx_u ORDER BY " + row_order + ") AS dx_r";
		where = "dx_r <= " + std::to_string(b.max_rows);
		wrap(select, where);
	} else {
		if (!select.empty())
			wrap(select, where);
		if (total)
			wrap(", pg_catalog.row_number() OVER (PARTITION BY dx_u ORDER BY " + row_order + ") AS dx_r",
			     "dx_r <= " + std::to_string(b.max_rows));
	}
	// the output columns, in the order of the mapping
	std::string out = "SELECT ";
	std::map<AttrNumber, AttrNumber> mapping;
	List *colnames = NIL;
	AttrNumber next = 1;
	for (size_t i = 0; i < spec.columns.size(); ++i) {
		const ColumnPolicy::Member *mem = policy.find(spec.columns[i])->member(spec.columns[i]);
		out += "dx_c" + std::to_string(i) + ", ";
		colnames = lappend(colnames, makeString(pstrdup(mem->name.c_str())));
		mapping[spec.columns[i]] = next++;
	}
	std::string empty_flags;
	for (size_t j = 0; j < spec.distinct_weights.size(); ++j) {
		out += "dx_d" + std::to_string(j) + ", ";
		empty_flags += "false, ";
		colnames = lappend(colnames, makeString(pstrdup(("dx_d" + std::to_string(j)).c_str())));
		mapping[static_cast<AttrNumber>(kUnitFirstPlaceholder + j)] = next++;
	}
	if (grouped) {
		sql = out + "true AS dx_present FROM (" + sql + ") AS dx_bounded UNION ALL " +
		      empty_group_rows_sql(policy, spec.columns, *spec.keys, empty_flags);
		colnames = lappend(colnames, makeString(pstrdup("dx_present")));
		mapping[kPresentPlaceholder] = next++;
	} else {
		if (out.size() > 7)
			out.resize(out.size() - 2); // the last ", " (an empty list is valid: SELECT FROM)
		sql = out + " FROM (" + sql + ") AS dx_bounded";
	}
	replace_rte_with_sql(q, sql, colnames);
	int done = 0;
	inject_lookups(linitial_node(RangeTblEntry, q->rtable)->subquery, policy.relid, spec, done);
	if (done != static_cast<int>(spec.distinct_weights.size()) + (spec.group_index ? 1 : 0))
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv could not place its lookups in the bounded row source");
	return mapping;
}

} // namespace dxpriv::pg
