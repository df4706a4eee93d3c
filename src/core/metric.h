// Column metrics "per unit of epsilon": how distinguishable two values of one column may be.
#pragma once

#include <cstddef>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

#include "core/domain.h"
#include "core/pair_tree.h"

namespace dxpriv {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

enum class MetricKind {
	Discrete, // d(a,b) = w * 1[a != b]
	Absolute, // d(a,b) = |ordinal(a) - ordinal(b)| / scale   (numeric, ordinal enum, dates)
	PerValue, // d(a,b) = 1[a != b] * min(w(a), w(b), 2 * min_c w(c))  (MECHANISMS.md §3.12(c))
	None,     // d(a,b) = +inf for a != b: only the presence edge protects this column
	Matrix,   // explicit k x k table, closed under the triangle inequality (Floyd-Warshall)
	Graph,    // shortest-path distance over weighted edges (hierarchies, spanning trees, §3.12(g))
	L1,       // ||p_a - p_b||_1 / scale on Points; |ordinal(a) - ordinal(b)| / scale on 1-D kinds
	L2,       // ||p_a - p_b||_2 / scale (Euclidean location metric, §3.12(a))
	LInf,     // ||p_a - p_b||_inf / scale (time series, §3.12(f))
	Theta1,   // weight * hop count in the graph {D_ab <= tau}, D Euclidean (Blowfish, §3.12(d))
	Theta2    // weight * max(1, D_ab / tau) for a != b (Blowfish, §3.12(d))
};

// Largest domain size of an explicit Matrix metric (its closure costs k^3 operations).
constexpr std::size_t kMaxMatrixMetricSize = 4096;
// Largest number of edges of a Graph metric.
constexpr std::size_t kMaxGraphMetricEdges = 4000000;

// One undirected edge of a Graph metric: vertices a and b (domain point indexes), 0 < weight < inf.
struct GraphEdge {
	std::size_t a, b;
	double weight;
};

struct MatrixMetricData;
struct GraphMetricData;
struct MetricRowCache;

// A metric on the points of one Domain. Immutable once built.
class ColumnMetric {
public:
	// weight > 0 (may be +inf). Throws CoreError(InvalidParameter) otherwise.
	static ColumnMetric discrete(double weight);
	// scale > 0 and finite.
	static ColumnMetric absolute(double scale);
	// One budget per domain point (same order as the domain), each > 0 (may be +inf).
	static ColumnMetric per_value(std::vector<double> weights);
	static ColumnMetric none();
	// Explicit k x k table d (row-major): symmetric, zero diagonal, off-diagonal > 0 (+inf allowed
	// = unconstrained). Stored as its shortest-path closure (a symmetric matrix and its closure
	// admit the same mechanisms, MECHANISMS.md §1); *closure_changed (when not null) tells whether
	// any entry decreased. Throws CoreError(InvalidParameter), (ProgramLimit) for k > 4096.
	static ColumnMetric matrix(std::size_t k, std::vector<double> d, bool *closure_changed);
	// Shortest-path metric of an undirected graph on vertices 0..k-1 (+inf across components).
	// Every edge needs a != b < k and a finite weight > 0; parallel edges keep the lightest.
	// Throws CoreError(InvalidParameter), (ProgramLimit) beyond kMaxDomainSize vertices or
	// kMaxGraphMetricEdges edges.
	static ColumnMetric graph(std::size_t k, const std::vector<GraphEdge> &edges);
	// l_p location metric ||p_a - p_b||_p / scale: p = 1, 2, or 0 meaning l_inf; scale > 0 finite.
	// On the one-dimensional kinds (Range, Date, Enumerated ordinals) it equals absolute(scale).
	static ColumnMetric lp(int p, double scale);
	// Blowfish theta1: weight * (hop count in the graph with edges {D_ab <= tau}), +inf across
	// components, D = Euclidean distance of the points (|ordinal difference| on 1-D kinds).
	// tau > 0 finite, weight > 0 (may be +inf).
	static ColumnMetric theta1(double tau, double weight = 1);
	// Blowfish theta2: weight * max(1, D_ab / tau) for a != b. tau > 0 finite, weight > 0 (may be +inf).
	static ColumnMetric theta2(double tau, double weight = 1);

	MetricKind kind() const noexcept { return kind_; }
	// Distance between points i and j of dom (0 when i == j). Requires per_value weights to
	// have dom.size() entries (checked by validate()).
	double distance(const Domain &dom, std::size_t i, std::size_t j) const;
	// Throws CoreError(InvalidParameter) when the metric cannot be used on dom (e.g. Absolute on
	// a non-ordered domain is allowed — enum ordinals — but per_value size must match). Absolute
	// needs a one-dimensional kind; L1/L2/LInf/Theta1/Theta2 need Points or a one-dimensional
	// kind; PerValue/Matrix/Graph need exactly dom.size() points.
	void validate(const Domain &dom) const;

	// Exact max over pairs i != j of |q[i*stride] - q[j*stride]| / distance(i, j) for the
	// dom.size() values q[0], q[stride], ...; 0 when all values are equal. Uses adjacent pairs
	// for Absolute and l_p on a line (path metric on a line), max-min for Discrete, a sorted sweep
	// for PerValue, the graph edges for Graph, the threshold edges for Theta1 (path metrics attain
	// the maximum on their edges), and all pairs for Matrix, Theta2 and l_p on points in 2+ dims.
	// floor (>= 0): a result at most floor may be returned as any value at most floor (the pair tree
	// then skips the pairs that cannot exceed it); callers that take max(floor, result) get the same.
	double line_sensitivity(const Domain &dom, const double *q, std::size_t stride, double floor = 0) const;

	// Calls fn(i, j, d) (i < j, d = distance(dom, i, j) finite) for a sufficient edge set: its
	// shortest-path closure equals the metric. Absolute and l_p on a line: adjacent points in
	// coordinate order; Graph: its (deduplicated) edges; Theta1: the threshold pairs; None:
	// nothing; every other kind: all pairs at finite distance (k(k-1)/2 calls). Call validate() first.
	void for_each_edge(const Domain &dom, const std::function<void(std::size_t i, std::size_t j, double d)> &fn) const;

	// Smallest d over for_each_edge (+inf when there is no edge): the same value as taking the
	// minimum over for_each_edge (every candidate pair's distance() is evaluated), found for l_p on
	// points in 2+ dimensions by a sweep in the order of the first coordinate that skips the pairs
	// whose coordinate gap alone exceeds the best distance (with a 1e-9 relative slack, so rounding
	// never skips the closest pair). Call validate() first.
	double min_edge_distance(const Domain &dom) const;

	// Approximate number of elementary steps of one line_sensitivity() call on dom (used to cap
	// the work of generalized_sensitivity before it starts). For l1/l2/linf on points in 2+
	// dimensions, the all-pairs count; sensitivity_line_cost() is the cost with the pair tree.
	double line_cost(const Domain &dom) const;
	// line_cost(), except for l1/l2/linf on points in 2+ dimensions of at least
	// detail::pair_tree_min_points() points with the pair tree on: k * log2(k), a lower estimate of
	// the tree's work (which counts itself against kMaxSensitivityWork as it goes).
	double sensitivity_line_cost(const Domain &dom) const;
	// Whether the pair tree rates this metric's pairs on dom (l1/l2/linf, Points of 2+ dimensions,
	// at least detail::pair_tree_min_points() points, detail::pair_tree() on).
	bool pair_tree_applies(const Domain &dom) const;
	// pair_tree_max (or pair_scan_max when tree is false, then floor is ignored) over the points of
	// dom for the l1/l2/linf metrics on Points of 2+ dimensions, with this metric's scale
	// (pair_tree.h). Throws
	// CoreError(Internal) for other metrics or domains.
	PairMax pair_ratio_max(const Domain &dom, const double *q, std::size_t stride, PairExpr expr, bool tree,
	                       double work_cap, double floor = 0) const;
	// A PairSearch (pair_tree.h) over the points of dom and `cells` weight vectors w[u * stride + t]
	// with this metric's norm and scale, when pair_tree_applies(dom) and PairSearch::applies;
	// nullptr otherwise.
	std::unique_ptr<PairSearch> pair_search(const Domain &dom, const double *w, std::size_t stride, std::size_t cells,
	                                        double work_cap) const;

private:
	// Shortest-path row from point src (Graph or Theta1), cached per metric and domain.
	double path_distance(const Domain &dom, std::size_t i, std::size_t j) const;

	MetricKind kind_ = MetricKind::None;
	double param_ = kInfinity;      // weight (Discrete, Theta1, Theta2) or scale (Absolute, L1, L2, LInf)
	std::vector<double> weights_;   // PerValue
	double closure_cap_ = kInfinity; // PerValue: 2 * min weight
	double tau_ = 0;                 // Theta1, Theta2 threshold
	std::shared_ptr<const MatrixMetricData> matrix_; // Matrix: closed table (shared by copies)
	std::shared_ptr<const GraphMetricData> graph_;   // Graph: adjacency and edges (shared by copies)
	std::shared_ptr<MetricRowCache> rows_;           // Graph, Theta1: shortest-path rows (thread-safe)
};

} // namespace dxpriv
