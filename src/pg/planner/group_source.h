// GROUP BY support: every output group of the keys is returned, even when it has no row.
#pragma once

#include "pg/metadata/policy.h"
#include "pg/planner/group_keys.h"

extern "C" {
#include "nodes/parsenodes.h"
}

#include <map>
#include <string>
#include <vector>

namespace dxpriv::pg {

// Attribute number of a placeholder Var for the "row is real" flag, remapped by remap_vars().
constexpr AttrNumber kPresentPlaceholder = 32000;

// Attribute number of a placeholder Var for a row's group slot (GROUP BY public columns: a row is
// repeated once per slot, and its point's slot-th group is its group; an empty-group row carries
// its group number here), remapped by remap_vars().
constexpr AttrNumber kSlotPlaceholder = 32001;

// A Var for the flag that is true on the table's rows and false on the added empty-group rows.
Var *present_flag_var();

// A Var (int4) for the slot column of replace_with_slot_group_source.
Var *slot_var();

// CASE WHEN <row is real> [AND filter] THEN value END: the added empty-group rows reach an
// aggregate with NULL (they create their group's state and add nothing). filter may be nullptr.
Expr *real_rows_only(Expr *value, Oid type, Expr *filter);


// Replaces the protected table (range table entry 1 of q) by the subquery
//   SELECT <columns>, true FROM <table>
//   UNION ALL SELECT <the key columns at a group's representative point, or NULL>, false FROM <groups>
// so that grouping sees at least one row per output group of the keys. Returns the new attribute
// number of each column (and of kPresentPlaceholder). where (not empty): a qual of the table's rows
// (a unit profile's keep qual, planner/unit_profile_source.h).
std::map<AttrNumber, AttrNumber> replace_with_group_source(Query *q, const TablePolicy &policy,
                                                           const std::vector<AttrNumber> &columns,
                                                           const GroupKeys &keys, const std::string &where = "");

// SELECT <the key columns at each group's representative point, or NULL for the other columns>,
// <extra> false FROM <one row per group>: the empty-group rows of replace_with_group_source (extra:
// more output columns before the final false, each ending with ", ").
std::string empty_group_rows_sql(const TablePolicy &policy, const std::vector<AttrNumber> &columns,
                                 const GroupKeys &keys, const std::string &extra);

// GROUP BY public columns of a join (a point may fall in several groups): replaces the protected
// table (range table entry 1 of q) by the subquery
//   SELECT <columns>, true, s FROM <table>, generate_series(0, slots - 1) s
//   UNION ALL SELECT <NULLs>, false, g FROM generate_series(0, groups - 1) g
// (without the generate_series for one slot: s = 0; without the UNION ALL when !empty_groups, for
// a Citus table, whose groups come from one state: planner/distributed.h). Returns the new
// attribute number of each column and of kPresentPlaceholder and kSlotPlaceholder.
std::map<AttrNumber, AttrNumber> replace_with_slot_group_source(Query *q, const TablePolicy &policy,
                                                                const std::vector<AttrNumber> &columns, size_t slots,
                                                                size_t groups, bool empty_groups = true);

// Replaces range table entry 1 of q by the subquery `sql` (dxpriv's own SQL, analysed without the
// hooks) with output column names colnames.
void replace_rte_with_sql(Query *q, const std::string &sql, List *colnames);

// A literal array of the column's type holding the given declared labels: '{...}'::type[].
std::string declared_values_sql(const ColumnPolicy &col, const std::vector<std::string> &labels);

// Renumbers every level-0 Var of range table entry 1 in node by `mapping`.
Node *remap_vars(Node *node, const std::map<AttrNumber, AttrNumber> &mapping);

} // namespace dxpriv::pg
