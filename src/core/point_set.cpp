// Internal: derived tables and k-d tree of a Points domain.
#include "core/point_set.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace dxpriv {

namespace {

// Below this gap a squared coordinate difference may leave the normal double range.
constexpr double kPlainL2MinGap = 1e-150;

} // namespace

// Builds the axis-major copy, bounding box, coordinate gaps, 1-D order and k-d tree.
PointSet::PointSet(std::size_t dims, std::vector<double> coords)
    : k_(coords.size() / dims), dims_(dims), coords_(std::move(coords))
{
	axis_major_.resize(k_ * dims_);
	lo_.assign(dims_, std::numeric_limits<double>::infinity());
	hi_.assign(dims_, -std::numeric_limits<double>::infinity());
	for (std::size_t i = 0; i < k_; i++)
		for (std::size_t d = 0; d < dims_; d++) {
			const double v = coords_[i * dims_ + d];
			axis_major_[d * k_ + i] = v;
			lo_[d] = std::min(lo_[d], v);
			hi_[d] = std::max(hi_[d], v);
		}
	double extent = 0;
	for (std::size_t d = 0; d < dims_; d++)
		extent = std::max(extent, hi_[d] - lo_[d]);
	margin_ = extent > 0 ? extent : 1;

	min_gap_ = std::numeric_limits<double>::infinity();
	std::vector<double> vals(k_);
	for (std::size_t d = 0; d < dims_; d++) {
		std::copy(axis(d), axis(d) + k_, vals.begin());
		std::sort(vals.begin(), vals.end());
		for (std::size_t i = 1; i < k_; i++)
			if (vals[i] > vals[i - 1])
				min_gap_ = std::min(min_gap_, vals[i] - vals[i - 1]);
	}
	robust_l2_ = min_gap_ < kPlainL2MinGap;

	if (dims_ == 1) {
		line_order_.resize(k_);
		std::iota(line_order_.begin(), line_order_.end(), std::uint32_t{0});
		std::sort(line_order_.begin(), line_order_.end(),
		          [this](std::uint32_t a, std::uint32_t b) { return coords_[a] < coords_[b]; });
	}

	perm_.resize(k_);
	std::iota(perm_.begin(), perm_.end(), std::uint32_t{0});
	nodes_.reserve(2 * (k_ / kLeafSize + 1));
	build(0, static_cast<std::uint32_t>(k_));
}

// Splits perm_[lo, hi) at the median of its widest axis until leaves hold at most kLeafSize points.
std::uint32_t
PointSet::build(std::uint32_t lo, std::uint32_t hi)
{
	const std::uint32_t id = static_cast<std::uint32_t>(nodes_.size());
	nodes_.push_back(Node{lo, hi, 0, 0, 0, 0});
	if (hi - lo <= kLeafSize)
		return id;
	std::uint32_t best_axis = 0;
	double best_spread = -1;
	for (std::size_t d = 0; d < dims_; d++) {
		const double *a = axis(d);
		double mn = a[perm_[lo]], mx = mn;
		for (std::uint32_t p = lo + 1; p < hi; p++) {
			mn = std::min(mn, a[perm_[p]]);
			mx = std::max(mx, a[perm_[p]]);
		}
		if (mx - mn > best_spread) {
			best_spread = mx - mn;
			best_axis = static_cast<std::uint32_t>(d);
		}
	}
	const double *a = axis(best_axis);
	const std::uint32_t mid = lo + (hi - lo) / 2;
	std::nth_element(perm_.begin() + lo, perm_.begin() + mid, perm_.begin() + hi,
	                 [a](std::uint32_t x, std::uint32_t y) { return a[x] < a[y] || (a[x] == a[y] && x < y); });
	const double split = a[perm_[mid]];
	const std::uint32_t left = build(lo, mid);
	const std::uint32_t right = build(mid, hi);
	Node &n = nodes_[id];
	n.left = left;
	n.right = right;
	n.axis = best_axis;
	n.split = split;
	return id;
}

// Euclidean distance; the scaled form avoids underflow of squared tiny differences.
double
PointSet::euclid(std::size_t i, std::size_t j) const noexcept
{
	const double *a = point(i), *b = point(j);
	if (dims_ == 1)
		return std::fabs(a[0] - b[0]);
	return coordinates_euclid(a, b, dims_, robust_l2_);
}

// Sum of absolute coordinate differences.
double
PointSet::l1(std::size_t i, std::size_t j) const noexcept
{
	return coordinates_l1(point(i), point(j), dims_);
}

// Largest absolute coordinate difference.
double
PointSet::linf(std::size_t i, std::size_t j) const noexcept
{
	return coordinates_linf(point(i), point(j), dims_);
}

// Clamps one query coordinate into the widened bounding box (also maps +-inf to its faces).
double
PointSet::clamp_query(std::size_t d, double v) const noexcept
{
	return std::min(std::max(v, lo_[d] - margin_), hi_[d] + margin_);
}

// Squared Euclidean distance from query x to point i, summed in dimension order.
double
PointSet::dist2(const double *x, std::size_t i) const noexcept
{
	const double *p = point(i);
	double s = 0;
	for (std::size_t d = 0; d < dims_; d++) {
		const double t = x[d] - p[d];
		s += t * t;
	}
	return s;
}

// Exact nearest-point search on the k-d tree (the plane bound never exceeds a true distance).
std::size_t
PointSet::nearest(const double *x_in) const noexcept
{
	double x[8];
	for (std::size_t d = 0; d < dims_; d++)
		x[d] = clamp_query(d, x_in[d]);
	std::size_t best = 0;
	double best_d2 = std::numeric_limits<double>::infinity();
	std::uint32_t stack[128];
	double bound[128]; // squared distance from x to the splitting plane that led to the node
	std::size_t top = 0;
	stack[top] = 0;
	bound[top++] = 0;
	while (top > 0) {
		--top;
		if (bound[top] > best_d2)
			continue;
		const Node &n = nodes_[stack[top]];
		if (n.left == 0) {
			for (std::uint32_t p = n.lo; p < n.hi; p++) {
				const std::size_t i = perm_[p];
				const double d2 = dist2(x, i);
				if (d2 < best_d2 || (d2 == best_d2 && i < best)) {
					best_d2 = d2;
					best = i;
				}
			}
			continue;
		}
		const double diff = x[n.axis] - n.split;
		const std::uint32_t near = diff < 0 ? n.left : n.right;
		const std::uint32_t far = diff < 0 ? n.right : n.left;
		// Push the far side first so the near side is searched first. Ties with the plane must
		// still be searched (a lower index may sit at the same distance), hence "> best" above.
		stack[top] = far;
		bound[top++] = diff * diff;
		stack[top] = near;
		bound[top++] = 0;
	}
	return best;
}

} // namespace dxpriv
