// One pass over the rows for every linear aggregate of a statement: the aggregates share one
// transition (dx._onepass_*: the row's point counted once in a per-group histogram) and each
// weighs the histogram with its own per-point table at the end (executor/one_pass.cpp).
#pragma once

#include "pg/metadata/extension_objects.h"
#include "pg/metadata/policy.h"
#include "pg/planner/group_keys.h"

extern "C" {
#include "nodes/primnodes.h"
}

#include <optional>
#include <vector>

namespace dxpriv::pg {

// Which columns of cols the histograms leave out because they are GROUP BY keys: when every key
// is a declared column of cols and every point of the keys' columns is its own group (the group
// number is then the point's index over the key columns, last fastest), those columns; else none.
// Within a group the key columns are constant, so the group and the histogram's point give the
// row's point of cols (executor/one_pass.cpp).
std::vector<bool> one_pass_key_columns(const GroupKeys &keys, const std::vector<const ColumnPolicy *> &cols);

// The arguments shared by every one-pass aggregate of a statement (equal nodes, so that the
// planner gives them one transition state): (layout text, [group int4], [present bool], <the
// columns' values and domain constants>). The layout is '<flags>|<columns>' (executor/one_pass.cpp):
// 'd' a dense histogram (a histogram array per group when the (non-key) points times the groups are
// few), 'g' the group is an argument, 'p' the present flag is an argument; what is constant stays
// in the layout, so per row only what varies is an argument. A range column's constants are in the
// layout ('q<lo>:<hi>:<step>;', executor/row_point.h), so only its value is an argument. group: the
// row's output group (an int4 expression; left out when it is the constant 0, or when key marks
// key columns: the transition reads the group from them on a group's first row); present: the
// "row is real" flag (false on added empty-group rows), or nullptr (every row is real). key:
// one_pass_key_columns (empty: no key column).
// open: grouped by an open key (planner/open_keys.h), one state per partition, as many as the
// table has keys: dense only for a few points, else a hash growing with the points met.
List *one_pass_args(const std::vector<const ColumnPolicy *> &cols, size_t groups, Expr *group, Expr *present,
                    const std::vector<bool> &key, bool open = false);

// Turns a rewritten linear aggregate into its one-pass form: kind 0 count, 1 sum (and linear),
// 2 avg; args: one_pass_args (copied); direct arguments: (params, its per-point table over cols
// reduced to the columns it depends on, int8[] {ncols, the sizes of cols, the kept columns[, -1,
// the key columns (key, as for one_pass_args)]}).
// The direct arguments make each aggregate distinct (its own final call); the PostgreSQL planner
// shares the transition state of aggregates with equal arguments.
void make_one_pass(Aggref *agg, int kind, List *shared_args, Const *params, const std::vector<const ColumnPolicy *> &cols,
                   std::vector<std::optional<double>> table, const ExtensionObjects &ext, const std::vector<bool> &key);
// make_one_pass with the table already reduced: its constant over the kept dimensions of cols
// (drop_constant_dimensions' result), e.g. a pieces table (planner/line_release.h).
void make_one_pass_table(Aggref *agg, int kind, List *shared_args, Const *params,
                         const std::vector<const ColumnPolicy *> &cols, Const *table, const std::vector<size_t> &kept,
                         const ExtensionObjects &ext, const std::vector<bool> &key);

} // namespace dxpriv::pg
