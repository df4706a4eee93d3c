// Builds the bounded row source of a query on a table with a privacy unit (window functions over
// dxpriv's per-execution row rank), with dxpriv's own group and weight lookups injected into its
// innermost level.
#include "pg/planner/unit_source.h"

#include "pg/guard.h"
#include "pg/node_build.h"
#include "pg/settings.h"
#include "pg/planner/unit_hash_source.h"
#include "pg/planner/unit_profile_source.h"
#include "pg/planner/unit_shard_source.h"
#include "pg/planner/unit_distinct_source.h"
#include "pg/planner/unit_count_set.h"
#include "pg/planner/unit_order_check.h"
#include "pg/planner/group_source.h"
#include "pg/metadata/policy.h"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

#include <algorithm>
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
	if (!unit.present())
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv: the table has no privacy unit");
	const ContributionBound &b = spec.bound;
	const bool grouped = spec.keys != nullptr;
	const bool empty_rows = grouped && spec.empty_groups;
	// the rule of unit_kept_rows (core/unit_bound.h): the max_rows rows of smallest rank, no group limit
	if (b.max_rows_per_group < b.max_rows || (b.max_groups < b.max_rows && b.max_groups > 1))
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv: the bounded row source keeps rows by rank only");
	RangeTblEntry *rte = linitial_node(RangeTblEntry, q->rtable);
	const std::string table = std::string(rte->inh ? "" : "ONLY ") + qualified_relation_name(policy.relid);

	// level 0: the columns read, the unit, the row's rank (dx._unit_rank of its physical identity under
	// a key drawn for this execution: independent of every value) and the lookups (injected below).
	// dx._unit_rank is VOLATILE, so this level is not pulled up: each row's rank is computed once and
	// every window pass above reads the column dx_h.
	std::string sql = "SELECT ";
	for (size_t i = 0; i < spec.columns.size(); ++i)
		sql += std::string(quote_identifier(policy.find(spec.columns[i])->member(spec.columns[i])->name.c_str())) +
		       " AS dx_c" + std::to_string(i) + ", ";
	// (unit profiles, planner/unit_profile_source.h: no rank column, the kept rows are a qual)
	const bool distinct = unit_distinct_applies(q, spec); // (unitdistinct: count_units by the profile)
	// (citusunit: a Citus table distributed by its unit column, bounded per shard on the workers)
	const bool shard = spec.distributed && (distinct || shard_bounding_applies(spec));
	const bool profile = distinct || shard || profile_bounding_applies(spec);
	sql += std::string(quote_identifier(unit.column.c_str())) + " AS dx_u" +
	       (profile ? "" : ", dx._unit_rank(tableoid, ctid) AS dx_h");
	if (grouped)
		sql += ", NULL::pg_catalog.int4 AS dx_g";
	for (size_t j = 0; j < spec.distinct_weights.size(); ++j)
		sql += ", NULL::pg_catalog.float8 AS dx_w" + std::to_string(j);
	sql += " FROM " + table;
	if (profile)
		sql += " WHERE " + (shard ? shard_keep_clause(spec) : profile_keep_clause(spec, rte->inh));
	int level = 0;
	auto wrap = [&](const std::string &select, const std::string &where) {
		const std::string alias = "dx_l" + std::to_string(level++);
		sql = "SELECT " + alias + ".*" + select + " FROM (" + sql + ") AS " + alias;
		if (!where.empty())
			sql = "SELECT * FROM (" + sql + ") AS dx_f" + std::to_string(level) + " WHERE " + where;
	};
	// count_units flags per (unit, group, flag columns): the hash pass flags per int4 group only
	std::string flag_extra;
	for (AttrNumber att : spec.flag_columns) {
		const auto at = std::find(spec.columns.begin(), spec.columns.end(), att);
		if (at == spec.columns.end())
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv: a count_units flag column is not read");
		flag_extra += ", dx_c" + std::to_string(at - spec.columns.begin());
	}
	const bool extra_flags = !flag_extra.empty() && !spec.distinct_weights.empty();
	// every path but the profile's qual and the hash pass sorts or groups by dx_u in this statement
	if (distinct || (!profile && !(guc_unit_bounding == 0 && !spec.distributed && !extra_flags)))
		refuse_unsealed_unit_order(policy);
	if (distinct) {
		sql = unit_distinct_sql(sql, spec); // (planner/unit_distinct_source.h)
	} else if (profile) {
		// the level that reads the table keeps exactly the bounded rows
	} else if (guc_unit_bounding == 0 && !spec.distributed && !extra_flags) {
		sql = hash_bounded_sql(sql, spec); // (planner/unit_hash_source.h)
	} else {
		// count_units: each unit's first counted row (in rank order) of each group carries the 1, so a
		// group's weight is the max over the unit's kept rows (unit_first_counted)
		auto flags = [&](const std::string &partition) {
			std::string f;
			for (size_t j = 0; j < spec.distinct_weights.size(); ++j) {
				const std::string w = "dx_w" + std::to_string(j);
				f += ", (" + w + " IS NOT NULL AND pg_catalog.count(" + w + ") OVER (PARTITION BY " + partition +
				     " ORDER BY dx_h ROWS UNBOUNDED PRECEDING) = 1) AS dx_d" + std::to_string(j);
			}
			return f;
		};
		const std::string cut = ", pg_catalog.row_number() OVER (PARTITION BY dx_u ORDER BY dx_h) AS dx_r";
		const std::string keep = "dx_r <= " + std::to_string(b.max_rows);
		if (!grouped) {
			// one sort of (unit, rank): the kept rows are a prefix, so a flagged row survives exactly when
			// some counted row of the unit does
			wrap(flags("dx_u" + flag_extra) + cut, keep);
		} else {
			// the cut by rank (one sort of (unit, rank)); with count_units, the flags of the kept rows per
			// (unit, group): a second sort, of the kept rows only
			wrap(cut, keep);
			if (!spec.distinct_weights.empty())
				wrap(flags("dx_u, dx_g" + flag_extra), "");
		}
	}
	// the output columns, in the order of the mapping
	std::string out = "SELECT ";
	std::map<AttrNumber, AttrNumber> mapping;
	List *colnames = NIL;
	AttrNumber next = 1;
	for (size_t i = 0; i < spec.columns.size(); ++i) {
		const ColumnPolicy::Member *mem = policy.find(spec.columns[i])->member(spec.columns[i]);
		// named as the column: Citus deparses the outer levels' references by these names
		out += "dx_c" + std::to_string(i) + " AS " + quote_identifier(mem->name.c_str()) + ", ";
		colnames = lappend(colnames, makeString(pstrdup(mem->name.c_str())));
		mapping[spec.columns[i]] = next++;
	}
	if (spec.unit_value) { // (planner/unit_count_set.h: dx._noisy_count_units reads it)
		if (!profile || grouped)
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv: the unit's value is read only from a profile's kept rows");
		out += "dx_u AS dx_unit, ";
		colnames = lappend(colnames, makeString(pstrdup("dx_unit")));
		mapping[kUnitValuePlaceholder] = next++;
	}
	std::string empty_flags;
	for (size_t j = 0; j < spec.distinct_weights.size(); ++j) {
		out += "dx_d" + std::to_string(j) + ", ";
		empty_flags += "false, ";
		colnames = lappend(colnames, makeString(pstrdup(("dx_d" + std::to_string(j)).c_str())));
		mapping[static_cast<AttrNumber>(kUnitFirstPlaceholder + j)] = next++;
	}
	if (empty_rows) {
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
