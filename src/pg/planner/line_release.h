// Closed-form analysis of one-column releases (issue 23): counts, sums and averages over one
// integer column whose WHERE and FILTERs are ranges of it are described by pieces (core/line_form.h)
// instead of being evaluated at every declared point.
#pragma once

#include "pg/planner/release_analysis.h"

namespace dxpriv::pg::analysis {

// Fills a.line_cells, a.line_tables, a.lo and a.hi and marks a.line when release `a` has the line
// shape, given its expressions as analyse_release lists them (WHERE, then each aggregate's FILTER
// and weight): not a join, not grouped (also not by an open key: a.open), no privacy unit, no
// exponential-mechanism aggregate, not a grouping set; one declared int2/int4/int8 column with an
// exact integer line domain (line_form.h) inside the column type's range and an absolute, discrete
// or none metric; dx.count(*), and dx.sum/dx.avg/dx.linear of the column itself; WHERE and FILTERs
// absent or ANDs of comparisons (<, <=, =, >=, >) of the column with an integer constant. Anything
// else (OR, NOT, <>, CASE, other expressions or columns, NULL constants) returns false and the
// caller evaluates every point. With dxpriv.exhaustive_analysis on it always returns false.
// a.q_cells then holds m empty vectors (the cells are a.line_cells), a.tables empty tables
// (a.line_tables).
bool analyse_line_release(ReleaseAnalysis &a, const std::vector<Expr *> &exprs, bool grouping_set);

// The per-point weights of a line release, made dense (for the consumers that need every point).
std::vector<std::vector<double>> line_dense_cells(const ReleaseAnalysis &a);

// dx._weigh of aggregate j of a line release over its column (a constant when its table is the
// same at every point), as reduced_weigh_expr gives it for the dense table.
Expr *line_weigh_expr(const ReleaseAnalysis &a, size_t j, const ExtensionObjects &ext);

// Aggregate j's table for the one-pass aggregates: the bytea constant and the kept dimensions, as
// drop_constant_dimensions leaves them for the dense table.
Const *line_one_pass_table(const ReleaseAnalysis &a, size_t j, std::vector<size_t> &kept, std::vector<size_t> &dims);

} // namespace dxpriv::pg::analysis
