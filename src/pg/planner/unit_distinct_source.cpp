// Privacy units: the SQL of count_units through the unit profile (unit_distinct_source.h).
#include "pg/planner/unit_distinct_source.h"
#include "pg/planner/unit_shard_source.h"

#include "pg/guard.h"
#include "pg/planner/unit_profile_source.h"

extern "C" {
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
}

namespace dxpriv::pg {

namespace {

// True when node holds a count_units flag placeholder (unit_first_var) of this level.
bool
reads_unit_flag(Node *node, void *context)
{
	if (node == nullptr)
		return false;
	if (IsA(node, Var)) {
		const Var *v = reinterpret_cast<const Var *>(node);
		return v->varlevelsup == 0 && v->varno == 1 && v->varattno >= kUnitFirstPlaceholder;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(reads_unit_flag), context);
}

// True when node holds an aggregate that reads no count_units flag, a sublink, or (context
// non-null: ungrouped) a Var of this level's range table entry 1 that is a column (not a
// placeholder of the unit source).
bool
reads_unit_table_column(Node *node, void *context)
{
	if (node == nullptr)
		return false;
	if (IsA(node, Var)) {
		const Var *v = reinterpret_cast<const Var *>(node);
		return context != nullptr && v->varlevelsup == 0 && v->varno == 1 && v->varattno < kUnitFirstPlaceholder;
	}
	if (IsA(node, Query)) // (a sublink's query: its Vars of this level have varlevelsup 1; refuse)
		return true;
	if (IsA(node, Aggref) && !reads_unit_flag(reinterpret_cast<Node *>(reinterpret_cast<Aggref *>(node)->args), nullptr))
		return true; // an aggregate not fed by a count_units flag (e.g. a one-pass count(*)): every row
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(reads_unit_table_column), context);
}

} // namespace

// See unit_distinct_source.h.
bool
unit_distinct_applies(Query *q, const UnitSource &spec)
{
	const bool grouped = spec.keys != nullptr;
	// (citusunit: on a Citus table distributed by its unit column, the rows bounded per shard; its groups
	// come from one state, with no empty-group rows, planner/distributed.h)
	if (spec.distinct_weights.empty() || !spec.flag_columns.empty() || q->groupingSets != NIL ||
	    (grouped && (spec.distinct_weights.size() != 1 || (!spec.empty_groups && !spec.distributed) ||
	                 spec.group_index == nullptr)) ||
	    (!grouped && (spec.group_index != nullptr || q->groupClause != NIL)))
		return false;
	static int ungrouped_marker;
	void *columns = grouped ? nullptr : &ungrouped_marker; // grouped: the keys read the columns
	if (reads_unit_table_column((Node *) q->targetList, columns) || reads_unit_table_column(q->havingQual, columns) ||
	    reads_unit_table_column(q->jointree->quals, columns))
		return false;
	UnitSource rows = spec; // the rows' bounding, without count_units
	rows.distinct_weights.clear();
	return spec.distributed ? shard_bounding_applies(rows) : profile_bounding_applies(rows);
}

// See unit_distinct_source.h.
std::string
unit_distinct_sql(const std::string &level0, const UnitSource &spec)
{
	const TablePolicy &policy = *spec.policy;
	if (spec.keys != nullptr) {
		// grouped, one count_units: one row per (unit, group) among the rows whose weight is set, the
		// row's own columns carried (the outer query computes the group from them: the same dx_g)
		return "SELECT * FROM (SELECT DISTINCT ON (dx_u, dx_g) *, true AS dx_d0 FROM (" + level0 +
		       ") AS dx_l0 WHERE dx_w0 IS NOT NULL ORDER BY dx_u, dx_g) AS dx_x";
	}
	std::string sql = "SELECT ";
	for (size_t i = 0; i < spec.columns.size(); ++i) {
		const ColumnPolicy::Member *mem = policy.find(spec.columns[i])->member(spec.columns[i]);
		const char *t = pg_value([&] { return format_type_be_qualified(mem->type); });
		sql += std::string("NULL::") + t + " AS dx_c" + std::to_string(i) + ", ";
	}
	const size_t n = spec.distinct_weights.size();
	std::string flags, any;
	for (size_t j = 0; j < n; ++j) {
		const std::string w = "dx_w" + std::to_string(j);
		// one aggregate: the rows are filtered on its weight, so the flag is true (a DISTINCT)
		flags += std::string(j ? ", " : "") + (n == 1 ? "true" : "pg_catalog.bool_or(" + w + " IS NOT NULL)") +
		         " AS dx_d" + std::to_string(j);
		any += std::string(j ? " OR " : "") + w + " IS NOT NULL";
	}
	// one aggregate: DISTINCT ON the unit, which PostgreSQL runs as a sort of the kept rows' units
	// and a Unique (as native count(DISTINCT) sorts them); a hashed grouping of about one group per
	// row spills and took twice as long at 2M rows (2.4 s against 1.1 s, native 0.64 s). Several:
	// GROUP BY the unit with bool_or per aggregate (the planner's choice of hash or sort)
	if (n == 1)
		sql += flags + " FROM (SELECT DISTINCT ON (dx_u) dx_u FROM (" + level0 + ") AS dx_l0 WHERE " + any +
		       " ORDER BY dx_u) AS dx_x";
	else
		sql += flags + " FROM (" + level0 + ") AS dx_l0 WHERE " + any + " GROUP BY dx_u";
	return sql;
}

} // namespace dxpriv::pg
