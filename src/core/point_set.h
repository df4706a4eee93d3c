// Internal: the points of a Points domain with a k-d tree for nearest-point and radius queries.
// Used by Domain (value-to-point mapping) and ColumnMetric (location and threshold metrics).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dxpriv {

// l1 distance between two points of dims coordinates (PointSet::l1 and the pair tree's leaves:
// one formula, so both give the same double).
inline double
coordinates_l1(const double *a, const double *b, std::size_t dims) noexcept
{
	double s = 0;
	for (std::size_t d = 0; d < dims; d++)
		s += std::fabs(a[d] - b[d]);
	return s;
}

// l_inf distance between two points of dims coordinates.
inline double
coordinates_linf(const double *a, const double *b, std::size_t dims) noexcept
{
	double s = 0;
	for (std::size_t d = 0; d < dims; d++)
		s = std::max(s, std::fabs(a[d] - b[d]));
	return s;
}

// Euclidean distance between two points of dims coordinates; robust: the scaled form, which
// avoids underflow of squared tiny differences (PointSet::robust_l2()).
inline double
coordinates_euclid(const double *a, const double *b, std::size_t dims, bool robust) noexcept
{
	double s = 0;
	if (!robust) {
		for (std::size_t d = 0; d < dims; d++) {
			const double t = a[d] - b[d];
			s += t * t;
		}
		return std::sqrt(s);
	}
	const double m = coordinates_linf(a, b, dims);
	if (m == 0)
		return 0;
	for (std::size_t d = 0; d < dims; d++) {
		const double t = (a[d] - b[d]) / m;
		s += t * t;
	}
	return m * std::sqrt(s);
}

// Immutable set of k distinct points in R^dims (dims <= 8), validated by Domain::points().
class PointSet {
public:
	// Builds the derived tables (axis-major copy, bounding box, gaps, k-d tree) of validated points.
	PointSet(std::size_t dims, std::vector<double> coords);

	// Number of points.
	std::size_t size() const noexcept { return k_; }
	// Dimension of every point.
	std::size_t dims() const noexcept { return dims_; }
	// Coordinate d of point i.
	double coord(std::size_t i, std::size_t d) const noexcept { return coords_[i * dims_ + d]; }
	// Coordinates of point i (dims() values).
	const double *point(std::size_t i) const noexcept { return coords_.data() + i * dims_; }
	// Coordinate d of every point, contiguous (axis-major copy for vectorised pair scans).
	const double *axis(std::size_t d) const noexcept { return axis_major_.data() + d * k_; }
	// Smallest nonzero difference between two coordinates of one dimension (+inf when none): a
	// lower bound on every distance between distinct points, in every l_p norm.
	double min_gap() const noexcept { return min_gap_; }
	// True when squared coordinate differences may underflow, so l2 needs the scaled formula.
	bool robust_l2() const noexcept { return robust_l2_; }
	// dims() == 1: point indexes sorted by increasing coordinate (empty otherwise).
	const std::vector<std::uint32_t> &line_order() const noexcept { return line_order_; }

	// Euclidean distance between points i and j (scaled formula when robust_l2()).
	double euclid(std::size_t i, std::size_t j) const noexcept;
	// l1 distance between points i and j.
	double l1(std::size_t i, std::size_t j) const noexcept;
	// l_inf distance between points i and j.
	double linf(std::size_t i, std::size_t j) const noexcept;

	// Index of the point nearest (squared Euclidean distance, computed in double precision) to x
	// after clamping every coordinate of x into [lo_d - s, hi_d + s] (bounding box widened by its
	// largest extent s; s = 1 for one point). Ties go to the lowest index. x must not contain NaN.
	std::size_t nearest(const double *x) const noexcept;
	// Clamps a query coordinate of dimension d into the widened bounding box used by nearest().
	double clamp_query(std::size_t d, double v) const noexcept;

	// Calls f(j) for every point j != i with euclid(i, j) <= radius (any order).
	template <class F>
	void for_each_within(std::size_t i, double radius, F &&f) const;

private:
	struct Node {
		std::uint32_t lo, hi;       // range of perm_ covered by the node
		std::uint32_t left, right;  // child nodes (0 for a leaf: the root is never a child)
		std::uint32_t axis;
		double split;               // left child: coordinate <= split, right child: >= split
	};
	static constexpr std::size_t kLeafSize = 8;

	// Recursively builds the subtree over perm_[lo, hi) and returns its node index.
	std::uint32_t build(std::uint32_t lo, std::uint32_t hi);
	// Squared Euclidean distance between query x and point i.
	double dist2(const double *x, std::size_t i) const noexcept;

	std::size_t k_, dims_;
	std::vector<double> coords_;     // row-major
	std::vector<double> axis_major_; // axis_major_[d * k + i]
	std::vector<double> lo_, hi_;    // bounding box
	double margin_ = 1;              // widening of the bounding box for query clamping
	double min_gap_;
	bool robust_l2_;
	std::vector<std::uint32_t> line_order_;
	std::vector<std::uint32_t> perm_; // point indexes, grouped by tree node
	std::vector<Node> nodes_;         // nodes_[0] is the root
};

// Radius search: depth-first over the k-d tree, pruning subtrees beyond the splitting plane.
template <class F>
void
PointSet::for_each_within(std::size_t i, double radius, F &&f) const
{
	const double *x = point(i);
	// The plane test must never prune a point the exact check accepts; widen it against rounding.
	const double prune = radius * (1 + 1e-9);
	std::uint32_t stack[128];
	std::size_t top = 0;
	stack[top++] = 0;
	while (top > 0) {
		const Node &n = nodes_[stack[--top]];
		if (n.left == 0) {
			for (std::uint32_t p = n.lo; p < n.hi; p++) {
				const std::size_t j = perm_[p];
				if (j != i && euclid(i, j) <= radius)
					f(j);
			}
			continue;
		}
		const double diff = x[n.axis] - n.split;
		if (diff <= prune)
			stack[top++] = n.left;
		if (-diff <= prune)
			stack[top++] = n.right;
	}
}

} // namespace dxpriv
