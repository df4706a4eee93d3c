// The workers' GROUP BY of a Citus grouped release by the raw columns of its group index (the
// lookup that maps those columns to the output group then runs on the coordinator, once per
// column group instead of once per row).
#pragma once

#include "pg/metadata/extension_objects.h"

extern "C" {
#include "nodes/parsenodes.h"
#include "nodes/primnodes.h"
}

#include <vector>

namespace dxpriv::pg::dist {

// The plain columns of a release's group index when the workers may group by them instead: the
// index is dx._weigh_int(<constant table>, <constant layout>, ...) whose layout is only 'r' columns
// (value, lo, hi, step), each value a column of this level of type int2, int4 or int8 and each step
// 1 (so a worker sends at most one row per declared integer, plus one per value outside the
// domain, as PostgreSQL's own GROUP BY of that column). Empty when the index has another shape
// (the workers then group by the index itself, as before).
std::vector<Var *> raw_group_columns(Node *group_index, const ExtensionObjects &ext);

// The group index over the columns of a grouped subquery: a copy of `group_index` where the i-th
// column of `columns` is column i + 1 of range table entry 1 (the workers' grouped sums), so the
// coordinator maps each grouped row to its output group with the same lookup, table and layout.
Expr *group_index_over_columns(Node *group_index, const std::vector<Var *> &columns);

// Gives the first columns.size() GROUP BY clauses of a level built by grouped_by_first (int4
// operators) the equality and sort operators of each column's type.
void type_group_clauses(Query *grouped, const std::vector<Var *> &columns);

} // namespace dxpriv::pg::dist
