// Execution by lookup, planner side: the expression that maps a stored row to its point of the
// sub-universe (dxpriv's own data-independent clamping code, nothing of the analyst's query), and
// the per-point tables (core/point_table.h) that weigh, filter and place it.
//
// Contract: for a row r and the columns `cols` of a sub-universe (in the analyzer's order, last
// column fastest), point_index_expr(cols) evaluates to the flat index u of the point r clamps to,
// the same u under which evaluate_over_universe() reported the expressions' values at that point.
// A rewritten aggregate then reads dx._lookup(u, <table>) instead of evaluating any expression of
// the query on r. The index never depends on session settings: range domains compare numbers,
// enumerated domains compare the stored bytes of the column's canonical values.
#pragma once

#include "pg/dxpriv.h"

extern "C" {
#include "nodes/primnodes.h"
}

#include <optional>
#include <vector>

namespace dxpriv::pg {

// The arguments after the value that describe a column's domain to dxpriv's clamp and index
// functions: (labels) for enumerated domains, (lo, hi, step) for ranges and dates.
List *domain_arg_tail(const Domain &d);

// int4 flat index of a row's point in the sub-universe of `cols` (see the contract above).
// Column groups contribute the index of their nearest declared point.
Expr *point_index_expr(const std::vector<const ColumnPolicy *> &cols, const ExtensionObjects &ext);

// The bytea constant holding a per-point table (nullopt: the point contributes nothing).
Const *point_table_const(const std::vector<std::optional<double>> &values);

// dx._lookup(index, table) (float8) or dx._lookup_int(index, table) (int4).
Expr *lookup_expr(Expr *index, Const *table, bool integer, const ExtensionObjects &ext);

} // namespace dxpriv::pg
