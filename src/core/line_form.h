// Closed forms for linear cells that are piecewise affine along one column (issue 23): constraint
// rows, sensitivities, noise plans, the plain-DP baseline and the per-point tables of such cells
// from their breakpoints, equal bit for bit to the per-point computations over every point.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/allocation.h"

namespace dxpriv {

// m cells over a sub-universe of one column, given by pieces: piece p covers the points
// [start[p], start[p+1]) and there cell k weighs a[p*m + k] + b[p*m + k] * ordinal(u)
// (Domain::ordinal of the column's point u).
struct LineCells {
	std::size_t cells = 0;          // m
	std::vector<std::size_t> start; // pieces + 1 entries: 0, ..., the column's size
	std::vector<double> a, b;       // pieces x m

	std::size_t pieces() const { return start.empty() ? 0 : start.size() - 1; }
	// Weight of cell k at point u of piece p: a + b * ordinal(u).
	double at(const Domain &dom, std::size_t p, std::size_t k, std::size_t u) const
	{
		return a[p * cells + k] + b[p * cells + k] * dom.ordinal(u);
	}
	// The per-point weights q[k][u] (the reference every closed form below equals).
	std::vector<std::vector<double>> dense(const Domain &dom) const;
};

// Largest magnitude of an ordinal or a weight for which the closed forms are exact (2^48: a sum or
// difference of the weights of at most 16 cells stays an exact integer below 2^53).
constexpr double kMaxExactLineValue = 281474976710656.0;

// Whether the closed forms apply to `cells` over `sub` and are exact: one column; a Range or Date
// domain whose lower end and step are integers and whose ordinals stay within kMaxExactLineValue;
// an absolute, discrete or none metric; 1 to 16 cells; pieces that cover the column in order; every
// a and b an integer and every weight within kMaxExactLineValue (checked at the pieces' ends: a
// weight is affine on its piece). Then every ordinal, weight, difference and sum of at most 16
// weights is an exact integer: the rows of the edges inside a piece are all equal and the
// per-point functions compute, at the breakpoints, the doubles computed here. `why` (optional)
// receives the first reason it does not apply.
bool line_cells_exact(const SubUniverse &sub, const LineCells &cells, std::string *why = nullptr);

// The functions below require line_cells_exact(sub, cells) (CoreError(Internal) otherwise) and give
// exactly what the per-point function named gives on cells.dense(), errors included, with work in
// the number of pieces (and of presence rows the prefilter keeps, which build_constraints lists).

// build_constraints(sub, q): the same rows in the same order. Absolute and none metrics (a
// discrete metric with two or more cells: CoreError(Internal), the caller uses the points).
ConstraintSet build_constraints_line(const SubUniverse &sub, const LineCells &cells);

// generalized_sensitivity(sub, q_k).
double line_sensitivity(const SubUniverse &sub, const LineCells &cells, std::size_t k);

// plan_multi_linear(sub, q, epsilon, request, constraints), or nullopt when the closed forms do not
// cover the plan: a noise scale above 2^40 (a grid other than 1 rounds the weights) or a discrete
// metric with two or more cells. The caller then plans on the points.
std::optional<MultiLinearPlan> plan_multi_linear_line(const SubUniverse &sub, const LineCells &cells, double epsilon,
                                                      const AllocationRequest &request,
                                                      ConstraintSet *constraints = nullptr);

// plain_dp_scale(sub, q, epsilon, exact), or nullopt where the closed form does not cover it (a
// discrete metric when the baseline falls back to the constraint edges).
std::optional<double> plain_dp_scale_line(const SubUniverse &sub, const LineCells &cells, double epsilon,
                                          bool *exact = nullptr);

// Whether some cell takes two different values on the column (project_to_relevant_columns keeps
// the column exactly then).
bool line_cells_vary(const Domain &dom, const LineCells &cells);

// One aggregate's per-point table over the column, by pieces: on piece p a row adds
// a[p] + b[p] * ordinal(u) when present[p], nothing otherwise (same piece starts as LineCells).
struct LineTable {
	std::vector<std::size_t> start; // pieces + 1 entries
	std::vector<char> present;
	std::vector<double> a, b;
	// The per-point table (the reference encode_line_table's layout equals).
	std::vector<std::optional<double>> dense(const Domain &dom) const;
};

// Whether encode_line_table is exact for `t` on `dom`: a Range or Date domain with integer lower end
// and step, ordinals within kMaxExactLineValue, integer a and b with every present value within
// kMaxExactLineValue, pieces covering the domain in order, at most 2^32 - 1 points.
bool line_table_exact(const Domain &dom, const LineTable &t);

// The pieces layout of point_table.h for `t` (requires line_table_exact, CoreError(Internal)
// otherwise): each present piece as value = A + B * u over the point index u, with A = a + b * lo
// and B = b * step exact, so that every lookup gives the double of t.dense() at u.
std::string encode_line_table(const Domain &dom, const LineTable &t);

} // namespace dxpriv
