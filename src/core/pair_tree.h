// Exact maximum over all pairs of points of a weight's change per unit of l1/l2/linf distance, by a
// dual k-d tree branch and bound whose node bounds are tight for weights affine in the coordinates.
#pragma once

#include <cstddef>

namespace dxpriv {

class PointSet;

// The norm of the distance D(i, j) between two points (l2: PointSet::euclid, scaled formula when
// PointSet::robust_l2()).
enum class PairNorm { L1, L2, LInf };

// Which expression a pair (i, j) is rated with: the one of the exhaustive scan it replaces, so
// that the maximum is the same double.
enum class PairExpr {
	Raw,   // |q_j - q_i| / D(i, j): ColumnMetric::line_sensitivity's all-pairs scan (before its * scale)
	Metric // |q_i - q_j| / (D(i, j) / scale): PairPlanner's a / d with d = ColumnMetric::distance
};

// The maximum of a pair expression over all pairs i < j of a point set.
struct PairMax {
	double value = 0;         // the maximum (0 when the weights are all equal)
	std::size_t i = 0, j = 0; // a pair attaining it (i < j) when value > 0
	bool finite = true;       // false when some pair's value is +inf or NaN (value is then meaningless)
	double work = 0;          // node pairs bounded plus point pairs rated
};

// Exact max over pairs i < j of the expression `expr` of the weights q[0], q[stride], ... of the
// ps.size() points (the same double as pair_scan_max, which rates every pair: a pair is skipped
// only when a rigorous upper bound of its value, widened by 1e-9 relative, is at most the best
// value found). Node bound for a pair of boxes A, B and each of c = 0, c_A, c_B (least-squares
// slopes of q over the nodes): max_{v in B - A} |c.v| / ||v|| + (range of h = q - c.x over both
// nodes, widened for rounding) / (smallest distance between the boxes). Throws
// CoreError(ProgramLimit) when the work passes work_cap. Weights of magnitude above 1e300 (or
// not finite) are rated by the scan. floor > 0: only values above it are looked for (pairs whose
// bound is at most the floor are skipped); when no pair exceeds it the result is value 0 (and
// then every pair's value is at most the floor, up to the rounding of the values).
PairMax pair_tree_max(const PointSet &ps, PairNorm norm, double scale, const double *q, std::size_t stride,
                      PairExpr expr, double work_cap, double floor = 0);

// The exhaustive reference: every pair rated (i-major order; the first pair attaining the maximum).
PairMax pair_scan_max(const PointSet &ps, PairNorm norm, double scale, const double *q, std::size_t stride,
                      PairExpr expr);

namespace detail {
// Whether ColumnMetric::line_sensitivity and PairPlanner use pair_tree_max (default true; false:
// the exhaustive scans, for the equality tests and dxpriv.exhaustive_analysis).
void set_pair_tree(bool on);
bool pair_tree();
// Fewest points for which the tree replaces the scan (default 2048; tests lower it).
void set_pair_tree_min_points(std::size_t k);
std::size_t pair_tree_min_points();
} // namespace detail

} // namespace dxpriv
