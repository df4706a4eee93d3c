// Dual k-d tree branch and bound for the largest change of a weight per unit of distance over all
// pairs of points (see pair_tree.h), and the exhaustive scan it is tested against.
#include "core/pair_tree.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "core/point_set.h"
#include "core/progress.h"

namespace dxpriv {

namespace {

bool tree_on = true;               // detail::set_pair_tree
std::size_t tree_min_points = 2048; // detail::set_pair_tree_min_points

constexpr std::size_t kTreeLeaf = 8;
constexpr int kMaxTreeDims = 8;
// A pair of nodes is skipped when its bound, times (1 + kPruneSlack), is at most the best value:
// covers the rounding of the rated values (a few ulps) and of the bound itself.
constexpr double kPruneSlack = 1e-9;
// Relative rounding allowance on h = q - c.x (per unit of |q| + sum |c_d x_d|; ~450 ulps).
constexpr double kResidualSlack = 1e-13;

// The pair expression of pair_tree.h, exactly as the scans it replaces compute it.
struct Rater {
	const PointSet &ps;
	PairNorm norm;
	double scale;
	const double *q;
	std::size_t stride;
	PairExpr expr;
	std::size_t dims;
	bool robust;

	double distance(std::size_t i, std::size_t j) const
	{
		switch (norm) {
		case PairNorm::L1: return ps.l1(i, j);
		case PairNorm::LInf: return ps.linf(i, j);
		case PairNorm::L2: break;
		}
		if (dims == 1)
			return ps.euclid(i, j);
		const double *a = ps.point(i), *b = ps.point(j);
		if (!robust) { // pair_max<Norm::L2>: the same sum, in dimension order
			double s = 0;
			for (std::size_t d = 0; d < dims; d++) {
				const double t = a[d] - b[d];
				s += t * t;
			}
			return std::sqrt(s);
		}
		return ps.euclid(i, j);
	}
	// value of pair (i, j), i < j
	double operator()(std::size_t i, std::size_t j) const
	{
		const double qi = q[i * stride], qj = q[j * stride];
		if (expr == PairExpr::Raw)
			return std::fabs(qj - qi) / distance(i, j);
		return std::fabs(qi - qj) / (distance(i, j) / scale);
	}
};

struct TreeNode {
	std::uint32_t lo, hi;        // range of the permutation
	std::uint32_t left, right;   // children (0: leaf)
	double box_lo[kMaxTreeDims], box_hi[kMaxTreeDims];
	double c[kMaxTreeDims];      // least-squares slope of q over the node's points (0 when singular)
	double qmin, qmax;           // range of q
	double hmin, hmax;           // range of h = q - c.x over the node's points (computed)
	double hslack;               // rounding allowance of the computed h
	double cdual;                // dual norm of c
	double xabs;                 // largest |x_d| over the box
};

class PairTree {
public:
	PairTree(const Rater &rate, double work_cap, double floor) : r_(rate), cap_(work_cap), D_(rate.dims), floor_(floor)
	{
		gap_ = r_.ps.min_gap() * (1 - 1e-12); // distinct points differ by at least this in some coordinate
		const std::size_t k = r_.ps.size();
		perm_.resize(k);
		std::iota(perm_.begin(), perm_.end(), std::uint32_t{0});
		nodes_.reserve(2 * (k / kTreeLeaf + 1) + 1);
		build(0, static_cast<std::uint32_t>(k));
		// the coordinates and weights in tree order: the leaves' points are contiguous
		px_.resize(k * D_);
		pq_.resize(k);
		for (std::size_t t = 0; t < k; t++) {
			for (std::size_t d = 0; d < D_; d++)
				px_[t * D_ + d] = x(perm_[t], d);
			pq_[t] = qv(perm_[t]);
		}
	}

	PairMax run()
	{
		out_.value = floor_; // only pairs above the floor are looked for
		self(0);
		if (out_.value == floor_ && !found_)
			out_.value = 0;
		out_.work = work_;
		return out_;
	}

private:
	double qv(std::uint32_t p) const { return r_.q[static_cast<std::size_t>(p) * r_.stride]; }
	double x(std::uint32_t p, std::size_t d) const { return r_.ps.coord(p, d); }

	std::uint32_t build(std::uint32_t lo, std::uint32_t hi)
	{
		const std::uint32_t id = static_cast<std::uint32_t>(nodes_.size());
		nodes_.emplace_back();
		TreeNode n{};
		n.lo = lo;
		n.hi = hi;
		for (std::size_t d = 0; d < D_; d++) {
			n.box_lo[d] = kInfinityD;
			n.box_hi[d] = -kInfinityD;
		}
		n.qmin = kInfinityD;
		n.qmax = -kInfinityD;
		for (std::uint32_t t = lo; t < hi; t++) {
			const std::uint32_t p = perm_[t];
			for (std::size_t d = 0; d < D_; d++) {
				n.box_lo[d] = std::min(n.box_lo[d], x(p, d));
				n.box_hi[d] = std::max(n.box_hi[d], x(p, d));
			}
			n.qmin = std::min(n.qmin, qv(p));
			n.qmax = std::max(n.qmax, qv(p));
		}
		fit(n);
		if (hi - lo > kTreeLeaf) {
			std::size_t axis = 0;
			for (std::size_t d = 1; d < D_; d++)
				if (n.box_hi[d] - n.box_lo[d] > n.box_hi[axis] - n.box_lo[axis])
					axis = d;
			const std::uint32_t mid = lo + (hi - lo) / 2;
			std::nth_element(perm_.begin() + lo, perm_.begin() + mid, perm_.begin() + hi,
			                 [&](std::uint32_t a, std::uint32_t b) { return x(a, axis) < x(b, axis); });
			n.left = build(lo, mid);
			n.right = build(mid, hi);
		}
		nodes_[id] = n;
		return id;
	}

	// Least-squares slope c of q over the node (normal equations on centred coordinates, Gaussian
	// elimination with partial pivoting; c = 0 when singular), and the range of h = q - c.x.
	void fit(TreeNode &n) const
	{
		const std::size_t count = n.hi - n.lo;
		for (std::size_t d = 0; d < D_; d++)
			n.c[d] = 0;
		if (count > D_ && n.qmax > n.qmin) {
			double mean[kMaxTreeDims] = {0}, qmean = 0;
			for (std::uint32_t t = n.lo; t < n.hi; t++) {
				for (std::size_t d = 0; d < D_; d++)
					mean[d] += x(perm_[t], d);
				qmean += qv(perm_[t]);
			}
			for (std::size_t d = 0; d < D_; d++)
				mean[d] /= static_cast<double>(count);
			qmean /= static_cast<double>(count);
			double a[kMaxTreeDims][kMaxTreeDims + 1] = {{0}};
			for (std::uint32_t t = n.lo; t < n.hi; t++) {
				double dx[kMaxTreeDims];
				for (std::size_t d = 0; d < D_; d++)
					dx[d] = x(perm_[t], d) - mean[d];
				const double dq = qv(perm_[t]) - qmean;
				for (std::size_t d = 0; d < D_; d++) {
					for (std::size_t e = 0; e < D_; e++)
						a[d][e] += dx[d] * dx[e];
					a[d][D_] += dx[d] * dq;
				}
			}
			double trace = 0;
			for (std::size_t d = 0; d < D_; d++)
				trace += a[d][d];
			bool ok = trace > 0;
			for (std::size_t col = 0; col < D_ && ok; col++) {
				std::size_t piv = col;
				for (std::size_t row = col + 1; row < D_; row++)
					if (std::fabs(a[row][col]) > std::fabs(a[piv][col]))
						piv = row;
				if (!(std::fabs(a[piv][col]) > 1e-12 * trace)) {
					ok = false;
					break;
				}
				for (std::size_t e = 0; e <= D_; e++)
					std::swap(a[col][e], a[piv][e]);
				for (std::size_t row = col + 1; row < D_; row++) {
					const double f = a[row][col] / a[col][col];
					for (std::size_t e = col; e <= D_; e++)
						a[row][e] -= f * a[col][e];
				}
			}
			if (ok) {
				for (std::size_t col = D_; col-- > 0;) {
					double s = a[col][D_];
					for (std::size_t e = col + 1; e < D_; e++)
						s -= a[col][e] * n.c[e];
					n.c[col] = s / a[col][col];
				}
				for (std::size_t d = 0; d < D_; d++)
					if (!std::isfinite(n.c[d]))
						ok = false;
			}
			if (!ok)
				for (std::size_t d = 0; d < D_; d++)
					n.c[d] = 0;
		}
		n.xabs = 0;
		for (std::size_t d = 0; d < D_; d++)
			n.xabs = std::max({n.xabs, std::fabs(n.box_lo[d]), std::fabs(n.box_hi[d])});
		n.hmin = kInfinityD;
		n.hmax = -kInfinityD;
		double habs = 0;
		for (std::uint32_t t = n.lo; t < n.hi; t++) {
			const std::uint32_t p = perm_[t];
			double h = qv(p), mag = std::fabs(qv(p));
			for (std::size_t d = 0; d < D_; d++) {
				h -= n.c[d] * x(p, d);
				mag += std::fabs(n.c[d] * x(p, d));
			}
			n.hmin = std::min(n.hmin, h);
			n.hmax = std::max(n.hmax, h);
			habs = std::max(habs, mag);
		}
		n.hslack = kResidualSlack * habs;
		n.cdual = dual_norm(n.c);
	}

	double dual_norm(const double *c) const
	{
		double s = 0;
		for (std::size_t d = 0; d < D_; d++) {
			switch (r_.norm) {
			case PairNorm::L1: s = std::max(s, std::fabs(c[d])); break;   // l_inf
			case PairNorm::L2: s += c[d] * c[d]; break;
			case PairNorm::LInf: s += std::fabs(c[d]); break;             // l_1
			}
		}
		return r_.norm == PairNorm::L2 ? std::sqrt(s) : s;
	}

	// Upper bound of max |c.v| / ||v|| over the box of differences [dlo, dhi] (0 not in it),
	// ||v|| >= dmin on it.
	double direction_bound(const double *c, double cdual, const double *dlo, const double *dhi, double dmin) const
	{
		if (cdual == 0)
			return 0;
		double hi_dot = 0, lo_dot = 0;
		for (std::size_t d = 0; d < D_; d++) {
			const double u = c[d] * dlo[d], w = c[d] * dhi[d];
			hi_dot += std::max(u, w);
			lo_dot += std::min(u, w);
		}
		double best = std::min(cdual, std::max(hi_dot, -lo_dot) / dmin * (1 + 1e-12));
		if (r_.norm == PairNorm::L2) {
			// (c.v)^2 = |c|^2 |v|^2 - sum_{d<e} (c_d v_e - c_e v_d)^2 (Lagrange's identity)
			double cross = 0, vmax2 = 0;
			for (std::size_t d = 0; d < D_; d++) {
				vmax2 += std::max(dlo[d] * dlo[d], dhi[d] * dhi[d]);
				for (std::size_t e = d + 1; e < D_; e++) {
					const double a1 = c[d] * dlo[e], a2 = c[d] * dhi[e];
					const double b1 = c[e] * dlo[d], b2 = c[e] * dhi[d];
					const double lo = std::min(a1, a2) - std::max(b1, b2);
					const double hi = std::max(a1, a2) - std::min(b1, b2);
					const double m = lo > 0 ? lo : hi < 0 ? -hi : 0.0;
					cross += m * m;
				}
			}
			const double t = cdual * cdual - cross / (vmax2 * (1 + 1e-12)) * (1 - 1e-12);
			const double lag = std::sqrt(std::max(t, 0.0)) + 1e-7 * cdual;
			best = std::min(best, lag);
		} else if (r_.norm == PairNorm::L1 && D_ <= 3) {
			// c.v / ||v||_1 is linear-fractional on each orthant piece of the box: its maximum is at a
			// vertex of a piece (coordinates dlo, dhi, or 0 where the box crosses 0)
			double vals[3][3];
			int cnt[3];
			for (std::size_t d = 0; d < D_; d++) {
				cnt[d] = 0;
				vals[d][cnt[d]++] = dlo[d];
				vals[d][cnt[d]++] = dhi[d];
				if (dlo[d] < 0 && dhi[d] > 0)
					vals[d][cnt[d]++] = 0;
			}
			double vmax = 0;
			int idx[3] = {0, 0, 0};
			for (;;) {
				double dot = 0, len = 0;
				for (std::size_t d = 0; d < D_; d++) {
					const double v = vals[d][idx[d]];
					dot += c[d] * v;
					len += std::fabs(v);
				}
				if (len > 0)
					vmax = std::max(vmax, std::fabs(dot) / len);
				std::size_t d = 0;
				while (d < D_ && ++idx[d] == cnt[d])
					idx[d++] = 0;
				if (d == D_)
					break;
			}
			best = std::min(best, vmax * (1 + 1e-12));
		}
		return best;
	}

	// Upper bound of |q_i - q_j| / D(i, j) over i in a, j in b (distinct nodes).
	double bound(const TreeNode &a, const TreeNode &b) const
	{
		double dlo[kMaxTreeDims], dhi[kMaxTreeDims], gap[kMaxTreeDims];
		bool apart = false;
		for (std::size_t d = 0; d < D_; d++) {
			dlo[d] = b.box_lo[d] - a.box_hi[d];
			dhi[d] = b.box_hi[d] - a.box_lo[d];
			gap[d] = std::max({0.0, dlo[d], -dhi[d]});
			apart |= gap[d] > 0;
		}
		if (!apart)
			return kInfinityD;
		double dmin = 0;
		for (std::size_t d = 0; d < D_; d++) {
			switch (r_.norm) {
			case PairNorm::L1: dmin += gap[d]; break;
			case PairNorm::L2: dmin += gap[d] * gap[d]; break;
			case PairNorm::LInf: dmin = std::max(dmin, gap[d]); break;
			}
		}
		if (r_.norm == PairNorm::L2)
			dmin = std::sqrt(dmin);
		dmin *= 1 - 1e-12;
		if (!(dmin > 0))
			return kInfinityD;
		double best = std::max(b.qmax - a.qmin, a.qmax - b.qmin) / dmin;
		// c = c_a, then c = c_b: h over the other node is its own h plus (c_own - c) . x over its box
		for (int side = 0; side < 2; side++) {
			const TreeNode &own = side == 0 ? a : b, &other = side == 0 ? b : a;
			if (own.cdual == 0)
				continue;
			double shift_lo = 0, shift_hi = 0, shift_mag = 0;
			for (std::size_t d = 0; d < D_; d++) {
				const double dc = other.c[d] - own.c[d];
				const double u = dc * other.box_lo[d], w = dc * other.box_hi[d];
				shift_lo += std::min(u, w);
				shift_hi += std::max(u, w);
				shift_mag += std::fabs(dc) * other.xabs;
			}
			const double slack = own.hslack + other.hslack + kResidualSlack * shift_mag;
			const double olo = other.hmin + shift_lo, ohi = other.hmax + shift_hi;
			const double dh = std::max(ohi - own.hmin, own.hmax - olo) + 2 * slack;
			const double dir = direction_bound(own.c, own.cdual, dlo, dhi, dmin);
			best = std::min(best, dir + std::max(dh, 0.0) / dmin * (1 + 1e-12));
		}
		return best;
	}

	void tick(double w)
	{
		work_ += w;
		if (work_ >= next_) {
			if (work_ > cap_)
				throw CoreError(ErrorKind::ProgramLimit,
				                "computing the sensitivity of this query needs more than 2e9 distance evaluations",
				                "Declare fewer points or coarser domains, or use a metric with few edges (absolute, "
				                "graph, theta1).");
			report_progress("sensitivity over pairs of points (tree)", std::min(work_, cap_), cap_);
			next_ = work_ + kProgressEvery;
		}
	}

	// D(i, j) of the points at tree positions a and b, with PointSet's formulas (l1, linf, euclid)
	// and pair_max's, which agree: the same double as Rater::distance.
	double tree_distance(std::size_t a, std::size_t b) const
	{
		const double *u = px_.data() + a * D_, *w = px_.data() + b * D_;
		switch (r_.norm) {
		case PairNorm::L1:
			return coordinates_l1(u, w, D_);
		case PairNorm::LInf:
			return coordinates_linf(u, w, D_);
		case PairNorm::L2:
			break;
		}
		return coordinates_euclid(u, w, D_, r_.robust);
	}

	// Rates the pair at tree positions a and b (Rater's expression on the tree-order copies).
	void rate_at(std::uint32_t a, std::uint32_t b)
	{
		const double dist = tree_distance(a, b);
		const double v = r_.expr == PairExpr::Raw ? std::fabs(pq_[b] - pq_[a]) / dist
		                                          : std::fabs(pq_[a] - pq_[b]) / (dist / r_.scale);
		if (!(v < kInfinityD)) { // +inf or NaN
			out_.finite = false;
			return;
		}
		if (v > out_.value) {
			out_.value = v;
			out_.i = std::min(perm_[a], perm_[b]);
			out_.j = std::max(perm_[a], perm_[b]);
			found_ = true;
		}
	}

	// Upper bound of |q_i - q_j| / D(i, j) over the pairs inside node n (D >= the smallest gap).
	double self_bound(const TreeNode &n) const
	{
		if (!(gap_ > 0))
			return kInfinityD;
		const double dh = n.hmax - n.hmin + 2 * n.hslack;
		return std::min((n.qmax - n.qmin) / gap_, n.cdual + dh / gap_) * (1 + 1e-12);
	}

	bool prunable(double ub) const
	{
		// scaled to the expression: Metric rates (|dq| / D) * scale
		const double f = r_.expr == PairExpr::Metric ? r_.scale : 1.0;
		return ub * f * (1 + kPruneSlack) <= out_.value;
	}

	void self(std::uint32_t id)
	{
		const TreeNode &n = nodes_[id];
		if (n.qmax == n.qmin)
			return; // no change inside
		tick(1);
		if (prunable(self_bound(n)))
			return;
		if (n.left == 0) {
			tick(0.5 * (n.hi - n.lo) * (n.hi - n.lo));
			for (std::uint32_t s = n.lo; s + 1 < n.hi; s++)
				for (std::uint32_t t = s + 1; t < n.hi; t++)
					rate_at(s, t);
			return;
		}
		self(n.left);
		self(n.right);
		cross(n.left, n.right, bound(nodes_[n.left], nodes_[n.right]));
	}

	void cross(std::uint32_t ia, std::uint32_t ib, double ub)
	{
		tick(1);
		if (prunable(ub))
			return;
		const TreeNode &a = nodes_[ia], &b = nodes_[ib];
		if (a.left == 0 && b.left == 0) {
			tick(static_cast<double>(a.hi - a.lo) * (b.hi - b.lo));
			for (std::uint32_t s = a.lo; s < a.hi; s++)
				for (std::uint32_t t = b.lo; t < b.hi; t++)
					rate_at(s, t);
			return;
		}
		const bool split_a = b.left == 0 || (a.left != 0 && a.hi - a.lo >= b.hi - b.lo);
		std::uint32_t p1, p2, fixed = split_a ? ib : ia;
		if (split_a) {
			p1 = a.left;
			p2 = a.right;
		} else {
			p1 = b.left;
			p2 = b.right;
		}
		double u1 = bound(nodes_[p1], nodes_[fixed]), u2 = bound(nodes_[p2], nodes_[fixed]);
		if (u2 > u1) {
			std::swap(p1, p2);
			std::swap(u1, u2);
		}
		cross(p1, fixed, u1);
		cross(p2, fixed, u2);
	}

	static constexpr double kInfinityD = std::numeric_limits<double>::infinity();
	const Rater &r_;
	double cap_;
	std::size_t D_;
	double floor_, gap_ = 0;
	bool found_ = false;
	std::vector<std::uint32_t> perm_;
	std::vector<double> px_, pq_; // coordinates (D_ per point) and weights in tree order
	std::vector<TreeNode> nodes_;
	PairMax out_;
	double work_ = 0, next_ = kProgressEvery;
};

Rater
make_rater(const PointSet &ps, PairNorm norm, double scale, const double *q, std::size_t stride, PairExpr expr)
{
	return Rater{ps, norm, scale, q, stride, expr, ps.dims(), ps.robust_l2()};
}

} // namespace

// See pair_tree.h.
PairMax
pair_scan_max(const PointSet &ps, PairNorm norm, double scale, const double *q, std::size_t stride, PairExpr expr)
{
	const Rater r = make_rater(ps, norm, scale, q, stride, expr);
	PairMax out;
	const std::size_t k = ps.size();
	for (std::size_t i = 0; i + 1 < k; i++)
		for (std::size_t j = i + 1; j < k; j++) {
			const double v = r(i, j);
			out.work += 1;
			if (!(v < std::numeric_limits<double>::infinity())) { // +inf or NaN
				out.finite = false;
				continue;
			}
			if (v > out.value) {
				out.value = v;
				out.i = i;
				out.j = j;
			}
		}
	return out;
}

// See pair_tree.h.
PairMax
pair_tree_max(const PointSet &ps, PairNorm norm, double scale, const double *q, std::size_t stride, PairExpr expr,
              double work_cap, double floor)
{
	const std::size_t k = ps.size();
	bool tame = ps.dims() <= static_cast<std::size_t>(kMaxTreeDims) && k < 0xFFFFFFFFu;
	for (std::size_t i = 0; i < k && tame; i++)
		tame = std::fabs(q[i * stride]) <= 1e300;
	if (!tame || k < 2) {
		if (0.5 * static_cast<double>(k) * static_cast<double>(k) > work_cap)
			throw CoreError(ErrorKind::ProgramLimit,
			                "computing the sensitivity of this query needs more than 2e9 distance evaluations",
			                "Declare fewer points or coarser domains, or use a metric with few edges (absolute, graph, "
			                "theta1).");
		PairMax all = pair_scan_max(ps, norm, scale, q, stride, expr);
		if (!(all.value > floor)) // below the floor: reported as none, like the tree
			all = PairMax{0, 0, 0, all.finite, all.work};
		return all;
	}
	const Rater r = make_rater(ps, norm, scale, q, stride, expr);
	PairTree tree(r, work_cap, std::max(floor, 0.0));
	return tree.run();
}

namespace detail {

// See pair_tree.h.
void
set_pair_tree(bool on)
{
	tree_on = on;
}

// See pair_tree.h.
bool
pair_tree()
{
	return tree_on;
}

// See pair_tree.h.
void
set_pair_tree_min_points(std::size_t k)
{
	tree_min_points = k;
}

// See pair_tree.h.
std::size_t
pair_tree_min_points()
{
	return tree_min_points;
}

} // namespace detail

} // namespace dxpriv
