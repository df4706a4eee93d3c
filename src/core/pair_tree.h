// Exact maximum over all pairs of points of a weight's change per unit of l1/l2/linf distance, and
// the pairs of largest weighted sum of several weights' changes (PairSearch), by a dual k-d tree
// branch and bound whose node bounds are tight for weights affine in the coordinates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_set>
#include <vector>

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

// A search for the pairs of largest row value: a pair (i, j), i < j, with a_t = |w_t(i) - w_t(j)| for
// the cells t < cells and d = D(i, j) / scale (ColumnMetric::distance) has the value
//     max over r < rows of (sum over t, ascending, of a_t * coef[r * cells + t]) * (1 / d),
// the expression of PairPlanner's row rating (a sum of the cells' changes per unit of distance,
// each weighted; one row per budget block).
struct PairRowQuery {
	std::vector<double> coef;  // rows x cells, each finite and >= 0
	std::size_t rows = 1;
	double threshold = 0;      // only values above it are looked for
	std::size_t keep = 1;      // the `keep` largest values above the threshold
	// pairs (i << 32 | j) never kept; one of them rated above exclude_limit sets excluded_above
	// (a pair is rated only where it could enter the kept ones: complete when none is kept)
	const std::unordered_set<std::uint64_t> *exclude = nullptr;
	double exclude_limit = 0;
};
struct PairRow {
	double value;
	std::size_t i, j; // i < j
};
struct PairRowResult {
	std::vector<PairRow> rows;   // the kept pairs, any order
	bool finite = true;          // false when some rated pair's value is +inf or NaN
	bool excluded_above = false; // see PairRowQuery::exclude
	double work = 0;             // node pairs bounded plus point pairs rated
};

// The dual k-d tree of pair_tree_max over `cells` weight vectors w[u * stride + t] (t < cells <=
// 16), built once and searched several times. Exact: a pair of nodes is skipped only when an upper
// bound of its pairs' values, widened by 1e-9 relative, is at most the level sought (the largest
// value found, or the threshold / the smallest kept value); a row value's bound is the weighted sum
// of the cells' bounds of pair_tree_max (the bound of a sum of absolute changes is at most the sum
// of their bounds), and the largest over the rows. A search throws CoreError(ProgramLimit) when
// the work of all the searches of this object so far passes work_cap (one budget for a
// statement's searches, so that a statement the bounds cannot prune is refused after at most
// work_cap, not once per search). Construct only when applies().
class PairSearch {
public:
	PairSearch(const PointSet &ps, PairNorm norm, double scale, const double *w, std::size_t stride,
	           std::size_t cells, double work_cap);
	~PairSearch();
	// Whether the tree takes these points and weights (at most 8 dimensions, fewer than 2^32 points,
	// every weight finite and of magnitude at most 1e300).
	static bool applies(const PointSet &ps, const double *w, std::size_t stride, std::size_t cells);
	// pair_tree_max of cell t (the same double, pair and floor semantics).
	PairMax max_cell(std::size_t t, PairExpr expr, double floor);
	// The query's `keep` pairs of largest value above its threshold (all of them when fewer).
	PairRowResult top_rows(const PairRowQuery &query);
	// The work of every search so far.
	double work() const;

private:
	struct Impl;
	std::unique_ptr<Impl> impl_;
};

namespace detail {
// Whether ColumnMetric::line_sensitivity and PairPlanner use pair_tree_max (default true; false:
// the exhaustive scans, for the equality tests and dxpriv.exhaustive_analysis).
void set_pair_tree(bool on);
bool pair_tree();
// Whether a row search with two or more cells also tries, where the sum of the cells' bounds
// cannot prune a pair of nodes, the joint bound over one direction (default true; false for the
// equality tests and the benchmarks: the same kept values, pairs and order either way).
void set_pair_joint_bound(bool on);
// Fewest points for which the tree replaces the scan (default 2048; tests lower it).
void set_pair_tree_min_points(std::size_t k);
std::size_t pair_tree_min_points();
} // namespace detail

} // namespace dxpriv
