// GROUP BY keys computed in the row source: each key's dx._group_key call becomes a column of the
// table-plus-empty-groups subquery (planner/group_source.h), so the aggregation reads it as a plain
// column and no projection node runs above the UNION ALL.
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

#include "pg/metadata/extension_objects.h"

#include <map>
#include <vector>

namespace dxpriv::pg {

// Attribute numbers of placeholder Vars for the key columns (kKeyPlaceholder + k for key k), remapped
// by remap_vars() like kPresentPlaceholder.
constexpr AttrNumber kKeyPlaceholder = 32100;

// Contract: q's range table entry 1 is the subquery of replace_with_group_source (columns in mapping,
// attribute numbers of the table before it); replacements[k] is key k's dx._group_key expression
// over the table's columns (replace_group_keys' result), which q's target list and HAVING clause
// hold outside aggregates. Appends one output column per key to both branches of the subquery (the
// table's branch computes the expression on the stored row's columns, the empty-group branch on the
// group's representative values: the same expression as before, computed in the scan), replaces
// every occurrence of replacements[k] in q's target list and HAVING clause by a Var of its column
// (attribute kKeyPlaceholder + k, to be remapped) and adds the columns to mapping. The key values,
// their types and collations are those of the expressions, so the grouping, the sorting and the
// hashing of the groups are unchanged. A key dx._group_key(dx._weigh_int(table, layout, <columns>),
// values) is placed as the one call dx._group_key_int(table, layout, values, <columns>) (the same
// value: one function call per row and key instead of two). Refuses (internal error) a replacement
// made of anything but the table's columns, constants, dx._group_key and dx._weigh_int: no analyst
// expression reaches the scan.
void key_columns_into_source(Query *q, const std::vector<Expr *> &replacements,
                             std::map<AttrNumber, AttrNumber> &mapping, const ExtensionObjects &ext);

} // namespace dxpriv::pg
