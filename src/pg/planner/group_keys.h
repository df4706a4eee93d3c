// GROUP BY keys of a dx query: declared columns or any expression over them (date_trunc('month',
// visit), extract(year FROM visit), (age / 10) * 10, width_bucket, CASE buckets, ...).
//
// The output groups are the image of the declared domain under the keys, computed at analysis on
// the domain points (data-independent): every group is returned, with noise, whether or not a row
// falls in it. At execution a row's group comes from the per-point table like its weight
// (dx._weigh_int over the key columns), and each key's output value is read from the group's
// entry of a constant array (dx._group_key): no key expression runs on a stored row.
#pragma once

#include "pg/metadata/extension_objects.h"
#include "pg/metadata/policy.h"

extern "C" {
#include "nodes/parsenodes.h"
}

#include <functional>
#include <string>
#include <vector>

namespace dxpriv::pg {

struct GroupKeys {
	std::vector<TargetEntry *> keys;              // the GROUP BY target entries, in GROUP BY order
	std::vector<const ColumnPolicy *> cols;       // declared columns the keys read (attribute order)
	size_t groups = 1;                            // output groups (1 without GROUP BY)
	std::vector<size_t> group_of_point;           // per point of the sub-universe of cols
	std::vector<size_t> representative;           // per group: its first point of that sub-universe
	std::vector<std::vector<Datum>> value;        // per key, per group: the key's value
	std::vector<std::vector<char>> is_null;       // per key, per group
	bool plain_columns = true;                    // every key is a declared column (a Var)
	std::vector<std::string> names;               // per key: the column's name, else its output name
	std::vector<const ColumnPolicy *> key_column; // per key: its column when the key is one, else nullptr

	bool grouped() const { return !keys.empty(); }
	// "key=value, ..." of group g (dx.explain): a column key's declared label, else the key's output
	// text under the current settings.
	std::string label(size_t g) const;
};

// Validates the GROUP BY keys of q (check is the analyzer's row-expression check) and computes
// the groups: distinct key tuples over the keys' sub-universe, numbered by their first point in
// row-major order (so for plain columns: the product of their domains in attribute order). Refuses
// (54000) more than max_groups groups and (0A000) keys of a type without a btree ordering.
GroupKeys analyse_group_keys(Query *q, Oid relid, const TablePolicy &policy, size_t max_groups,
                             const std::function<void(Node *, const char *)> &check);

// The GROUP BY keys of a join whose keys read public columns (PARAM_EXEC), validated (check) but
// not evaluated: the groups come from the joined pairs (join_cells.h); key_column is nullptr.
GroupKeys list_join_group_keys(Query *q, const TablePolicy &policy,
                               const std::function<void(Node *, const char *)> &check);

// True when a GROUP BY key of q reads a public column of a join (a PARAM_EXEC parameter).
bool groups_by_public_columns(Query *q);

// The int4 output group of a row: dx._weigh_int over the keys' columns (constant 0 without keys).
Expr *group_index_expr(const GroupKeys &keys, const ExtensionObjects &ext);

// Replaces, outside aggregates, every occurrence of a key expression in q's target list and
// HAVING clause by dx._group_key(group_index, <the key's values per group>). Afterwards no column
// reference remains outside aggregates (else: an internal error). Returns each key's replacement.
std::vector<Expr *> replace_group_keys(Query *q, const GroupKeys &keys, Expr *group_index, const ExtensionObjects &ext);

} // namespace dxpriv::pg
