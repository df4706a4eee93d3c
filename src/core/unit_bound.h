// Privacy units: the bounded contribution of one unit (a person) and the unit-level calibration
// of linear queries (README "Privacy units").
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/allocation.h"
#include "core/sensitivity.h"

namespace dxpriv {

// Largest contribution bound a DBA may declare (rows of one unit, groups, rows per group).
constexpr std::size_t kMaxUnitRows = 100000;

// What one unit may contribute to one query after bounding: at most max_rows rows in total, in at
// most max_groups output groups, at most max_rows_per_group rows in each group. A query without
// GROUP BY is one group (for_query). Every field >= 1.
struct ContributionBound {
	std::size_t max_rows = 1;
	std::size_t max_groups = 1;
	std::size_t max_rows_per_group = 1;

	// The effective bound of a query from the declared k, G and kg: ungrouped {k, 1, k}; grouped
	// {k, k, k}. G and kg are validated (0: not declared) but not applied: a rule that keeps at most G
	// groups or kg rows per group must choose by group value, so moving one row between groups can
	// push other rows in or out, which the unit metric's change edge does not pay for (README "Stable
	// contribution bounding"). Throws CoreError(InvalidParameter) for k = 0 or any value above
	// kMaxUnitRows.
	static ContributionBound for_query(std::size_t k, std::size_t g, std::size_t kg, bool grouped);
	// Throws CoreError(InvalidParameter) unless 1 <= every field <= kMaxUnitRows.
	void validate() const;
	// Rows the unit puts in its largest group: min(max_rows, max_rows_per_group).
	std::size_t rows_in_one_group() const;
};

// How each of the m cells of a query aggregates the rows of one unit.
//   group[k]: the output group of cell k (cells of different groups never share a row);
//   distinct[k]: 1 when the cell counts units (dx.count_units: Q_k(X) = max over the unit's rows of
//     q_k(x), q_k in {0, 1}), 0 when it sums rows (count, sum, avg, linear: Q_k(X) = sum of q_k(x)).
struct UnitCells {
	std::vector<std::size_t> group;
	std::vector<char> distinct;
};

// The unit-presence part of the privacy condition: an upper bound on
//   max over bounded unit row sets X (|X| <= k, <= G groups, <= kg rows per group) of
//   sum_k |Q_k(X)| / (b_k * epsilon * presence),
// exact when every cell sums rows, or every cell counts units and each group's distinct cells reach
// their maximum on one point (one count_units per group). q[k] holds the weights of cell k at every
// point of the sub-universe (a point's cells all belong to the group the point is in). With R_g =
// max_u sum over g's row cells of |q_k(u)|/b_k and U_g = sum over g's distinct cells of
// max_u |q_k(u)|/b_k it returns max over s in 1..min(G, k, groups) of
// [sum of the s largest R_g + U_g] + [the k - s remaining rows spread over the s largest R_g, at most
// kg - 1 more each] (a unit with s groups has one row in each, and the rest where rows weigh most).
// 0 when presence is +inf; +inf when a cell with a non-zero weight has b_k == 0. `cells_of`
// (optional) restricts the sum to those cells (a budget block). Throws CoreError(Internal) for
// mismatched sizes.
double unit_presence_ratio(const std::vector<std::vector<double>> &q, const UnitCells &cells,
                           const ContributionBound &bound, const std::vector<double> &scales, double presence,
                           double epsilon, const std::vector<std::size_t> *cells_of = nullptr);

// The bounding rule (README "Stable contribution bounding"), exactly as the SQL of
// src/pg/planner/unit_source.cpp runs it. ranks[r]: the rank of the unit's raw row r, drawn
// independently of its declared values (in SQL: SipHash-2-4 of the row's (tableoid, ctid) under a key
// drawn for each execution of the statement, dx._unit_rank). The unit keeps its bound.max_rows rows of
// smallest rank (equal ranks: smaller r first; SQL: the sort's choice, a 2^-64 event); returns their
// indexes in rank order. Only bounds without group limits are rules (max_groups and
// max_rows_per_group >= max_rows, as for_query gives): CoreError(Internal) otherwise.
std::vector<std::size_t> unit_kept_rows(const std::vector<std::uint64_t> &ranks, const ContributionBound &bound);

// The count_units flags of the kept rows (`kept` in rank order, as unit_kept_rows returns it):
// flag[i] = 1 when row kept[i] is counted and no earlier kept row of its group is, so a count_units
// cell adds max over the kept rows of its group of the indicator. group[r], counted[r]: per raw row.
// Throws CoreError(Internal) for mismatched sizes or indexes out of range.
std::vector<char> unit_first_counted(const std::vector<std::size_t> &kept, const std::vector<std::size_t> &group,
                                     const std::vector<char> &counted);

// What plan_unit_linear did (for dx.explain and tests).
struct UnitCalibration {
	std::size_t surrogate_rows = 1; // rows of one unit the presence edges were scaled by
	double factor = 1;              // extra factor the multi-group unit presence put on every scale
};

// Calibrates the m cells of a query on a table with a privacy unit. The record becomes the unit's
// bounded row set; its neighbours (README "Privacy units") are the path metric of: the unit
// present/absent (distance presence), one of its rows changed (the record metric d(x, x')), one row
// more or less (presence). The constraints are therefore (i) the row-level change edges, (ii) the
// row-level presence edges, and (iii) the unit presence of every bounded row set X. The plan is
// plan_multi_linear on the sub-universe with presence / n1 (n1 = rows_in_one_group() when some cell
// sums rows, else 1), whose presence rows are exactly (iii) for a unit with n1 copies of one point
// and dominate (ii); then, when unit_presence_ratio shows that units spread over several groups
// need more, the whole plan is recomputed at epsilon / factor (every scale times factor, grids
// chosen again) until the ratio is <= 1 on the grid-rounded weights. The result satisfies (i)-(iii)
// at epsilon (and each budget block at its own epsilon): CoreError(Internal) otherwise. Each cell's
// `sensitivity` is its scale times its budget's epsilon: S(q) of the bounded unit for one cell.
// Laplace only. Throws like plan_multi_linear.
MultiLinearPlan plan_unit_linear(const SubUniverse &sub, const std::vector<std::vector<double>> &q, double epsilon,
                                 const AllocationRequest &request, const UnitCells &cells,
                                 const ContributionBound &bound, UnitCalibration *info = nullptr);

// The weights q rounded to each cell's grid, as the aggregates sum them (grid * round(q / grid)).
std::vector<std::vector<double>> rounded_weights(const std::vector<std::vector<double>> &q, const MultiLinearPlan &plan);

} // namespace dxpriv
