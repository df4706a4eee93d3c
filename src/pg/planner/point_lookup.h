// Execution by lookup, planner side: the expression that maps a stored row to its point of the
// sub-universe (dxpriv's own data-independent clamping code, nothing of the analyst's query), and
// the per-point tables (core/point_table.h) that weigh, filter and place it.
//
// Contract: for a row r and the columns `cols` of a sub-universe (in the analyzer's order, last
// column fastest), the row's point is the flat index u of the point r clamps to, the same u under
// which evaluate_over_universe() reported the expressions' values at that point. A rewritten
// aggregate then reads weigh_expr(cols, <table>) -- the table's value at u -- instead of evaluating
// any expression of the query on r. The index never depends on session settings: range domains compare numbers,
// enumerated domains compare the stored bytes of the column's canonical values.
#pragma once

#include "pg/metadata/extension_objects.h"
#include "pg/metadata/policy.h"

extern "C" {
#include "nodes/primnodes.h"
}

#include <optional>
#include <string>
#include <vector>

namespace dxpriv::pg {

// The arguments after the value that describe a column's domain to dxpriv's clamp and index
// functions: (labels) for enumerated domains, (lo, hi, step) for ranges and dates.
List *domain_arg_tail(const Domain &d);

// The bytea constant of a per-point table (core/point_table.h; nullopt: the point contributes
// nothing) over a sub-universe of the given domain sizes.
Const *point_table_constant(const std::vector<std::optional<double>> &values, const std::vector<size_t> &dims);

// The bytea constant of an encoded per-point table.
Const *bytes_constant(const std::string &bytes);

// weigh_expr over cols (no slot) with an already encoded table (e.g. core/line_form.h's pieces).
Expr *weigh_expr_bytes(const std::vector<const ColumnPolicy *> &cols, const std::string &table, bool integer,
                       const ExtensionObjects &ext);

// The value arguments of the columns with their domain constants, as dx._weigh takes them after
// its table and layout; appends each column's layout letter ('e', 'r', 'p') to layout.
List *row_layout_args(const std::vector<const ColumnPolicy *> &cols, std::string &layout);

// dx._weigh(table, layout, <columns of cols with their domain constants>) (float8), or
// dx._weigh_int(...) (int4): the row's value in `table` at its point of the sub-universe of `cols`
// (see the contract above); one function call per row. Without columns (the sub-universe has one
// point) the table's only value, as a constant. With a slot expression (int4, 0 .. slots - 1), the
// table is over the sub-universe times the slots, the slot as a last, fastest column.
Expr *weigh_expr(const std::vector<const ColumnPolicy *> &cols, const std::vector<std::optional<double>> &table,
                 bool integer, const ExtensionObjects &ext, Expr *slot = nullptr, size_t slots = 1);

// weigh_expr(cols, table) over only the columns the table depends on (core
// drop_constant_dimensions: every row is mapped to a point of every column, so a column along
// which the table is constant does not change the row's value): fewer values mapped per row, a
// smaller table, and a constant when the table is the same at every point (a count without
// conditions). No slot.
Expr *reduced_weigh_expr(const std::vector<const ColumnPolicy *> &cols, std::vector<std::optional<double>> table,
                         bool integer, const ExtensionObjects &ext);

// drop_constant_dimensions (core/point_table.h) of a per-point table over cols: sets dims to the
// columns' domain sizes, reduces `table` in place to the columns it varies in and returns their
// indices. A table that does not match the columns is an internal error.
std::vector<size_t> drop_constant_columns(const std::vector<const ColumnPolicy *> &cols,
                                          std::vector<std::optional<double>> &table, std::vector<size_t> &dims);

} // namespace dxpriv::pg
