// Dual k-d tree branch and bound for the largest change of a weight per unit of distance over all
// pairs of points, and for the pairs of largest weighted sum of several weights' changes (see
// pair_tree.h), and the exhaustive scan they are tested against.
#include "core/pair_tree.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/pair_tree_cost.h"
#include "core/point_set.h"
#include "core/progress.h"
#include "core/work_budget.h"

namespace dxpriv {

namespace {

bool tree_on = true;               // detail::set_pair_tree
bool joint_on = true;              // detail::set_pair_joint_bound
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

// A node of the tree: its points (a range of the permutation), children and bounding box.
struct TreeNode {
	std::uint32_t lo, hi;        // range of the permutation
	std::uint32_t left, right;   // children (0: leaf)
	double box_lo[kMaxTreeDims], box_hi[kMaxTreeDims];
	double xabs;                 // largest |x_d| over the box
};

// One cell's weights over one node.
struct CellFit {
	double c[kMaxTreeDims];      // least-squares slope of q over the node's points (0 when singular)
	double qmin, qmax;           // range of q
	double hmin, hmax;           // range of h = q - c.x over the node's points (computed)
	double hslack;               // rounding allowance of the computed h
	double cdual;                // dual norm of c
};

// The smallest distance between two boxes and their box of differences (B - A).
struct BoxGap {
	double dlo[kMaxTreeDims], dhi[kMaxTreeDims];
	double dmin; // 0 or NaN: the boxes touch (no bound)
};

// A candidate of a row search (a min-heap on value keeps the largest).
struct RowCandidate {
	double value;
	std::uint32_t i, j;
	bool operator>(const RowCandidate &o) const { return value > o.value; }
};

class PairTree {
public:
	// cells weight vectors w[p * stride + t]; r's q and stride give cell 0 (max_cell moves them)
	PairTree(const Rater &rate, std::size_t cells, double work_cap)
	    : r_(rate), cap_(work_cap), D_(rate.dims), cells_(cells)
	{
		const std::size_t k = r_.ps.size();
		charge_setup(pair_tree_setup_work(k, D_, cells_)); // refused here, before building, when over
		gap_ = r_.ps.min_gap() * (1 - 1e-12); // distinct points differ by at least this in some coordinate
		perm_.resize(k);
		std::iota(perm_.begin(), perm_.end(), std::uint32_t{0});
		nodes_.reserve(2 * (k / kTreeLeaf + 1) + 1);
		build(0, static_cast<std::uint32_t>(k));
		fits_.resize(nodes_.size() * cells_);
		for (std::size_t id = 0; id < nodes_.size(); id++)
			for (std::size_t t = 0; t < cells_; t++)
				fit(nodes_[id], t, fits_[id * cells_ + t]);
		// the coordinates and weights in tree order: the leaves' points are contiguous
		px_.resize(k * D_);
		pw_.resize(k * cells_);
		for (std::size_t t = 0; t < k; t++) {
			for (std::size_t d = 0; d < D_; d++)
				px_[t * D_ + d] = x(perm_[t], d);
			for (std::size_t c = 0; c < cells_; c++)
				pw_[t * cells_ + c] = qv(perm_[t], c);
		}
	}

	// pair_tree_max of cell t
	PairMax run(std::size_t t, PairExpr expr, double floor)
	{
		cell_ = t;
		expr_ = expr;
		rows_ = nullptr;
		floor_ = std::max(floor, 0.0);
		found_ = false;
		out_ = PairMax{};
		const double start = work_; // the work of every search of this tree counts against the cap
		out_.value = floor_; // only pairs above the floor are looked for
		search_start_ = start;
		covered_ = 0;
		set_costs(1, 1);
		arm();
		self(0);
		flush();
		if (out_.value == floor_ && !found_)
			out_.value = 0;
		out_.work = work_ - start;
		return out_;
	}

	// PairSearch::top_rows
	PairRowResult run_rows(const PairRowQuery &query)
	{
		rows_ = &query;
		heap_.clear();
		rows_out_ = PairRowResult{};
		const double start = work_;
		upper_.assign(cells_, 0.0);
		for (std::size_t r = 0; r < query.rows; r++)
			for (std::size_t t = 0; t < cells_; t++)
				upper_[t] = std::max(upper_[t], query.coef[r * cells_ + t]);
		cb_.resize(cells_);
		joint_ = joint_on && std::count_if(upper_.begin(), upper_.end(), [](double u) { return u > 0; }) >= 2;
		level_ = query.threshold;
		search_start_ = start;
		covered_ = 0;
		set_costs(static_cast<std::size_t>(std::count_if(upper_.begin(), upper_.end(), [](double u) { return u > 0; })),
		          query.rows);
		arm();
		if (query.keep > 0)
			self(0);
		flush();
		for (const RowCandidate &c : heap_)
			rows_out_.rows.push_back(PairRow{c.value, c.i, c.j});
		rows_out_.work = work_ - start;
		rows_ = nullptr;
		return rows_out_;
	}

	double work() const { return work_; }

private:
	double qv(std::uint32_t p, std::size_t t) const { return r_.q[static_cast<std::size_t>(p) * r_.stride + t]; }
	double x(std::uint32_t p, std::size_t d) const { return r_.ps.coord(p, d); }
	const CellFit &cf(std::uint32_t id, std::size_t t) const { return fits_[id * cells_ + t]; }

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
		for (std::uint32_t t = lo; t < hi; t++) {
			const std::uint32_t p = perm_[t];
			for (std::size_t d = 0; d < D_; d++) {
				n.box_lo[d] = std::min(n.box_lo[d], x(p, d));
				n.box_hi[d] = std::max(n.box_hi[d], x(p, d));
			}
		}
		n.xabs = 0;
		for (std::size_t d = 0; d < D_; d++)
			n.xabs = std::max({n.xabs, std::fabs(n.box_lo[d]), std::fabs(n.box_hi[d])});
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

	// Least-squares slope c of cell t's q over the node (normal equations on centred coordinates,
	// Gaussian elimination with partial pivoting; c = 0 when singular), and the range of h = q - c.x.
	void fit(const TreeNode &node, std::size_t cell, CellFit &n) const
	{
		const std::size_t count = node.hi - node.lo;
		n.qmin = kInfinityD;
		n.qmax = -kInfinityD;
		for (std::uint32_t t = node.lo; t < node.hi; t++) {
			n.qmin = std::min(n.qmin, qv(perm_[t], cell));
			n.qmax = std::max(n.qmax, qv(perm_[t], cell));
		}
		for (std::size_t d = 0; d < D_; d++)
			n.c[d] = 0;
		if (count > D_ && n.qmax > n.qmin) {
			double mean[kMaxTreeDims] = {0}, qmean = 0;
			for (std::uint32_t t = node.lo; t < node.hi; t++) {
				for (std::size_t d = 0; d < D_; d++)
					mean[d] += x(perm_[t], d);
				qmean += qv(perm_[t], cell);
			}
			for (std::size_t d = 0; d < D_; d++)
				mean[d] /= static_cast<double>(count);
			qmean /= static_cast<double>(count);
			double a[kMaxTreeDims][kMaxTreeDims + 1] = {{0}};
			for (std::uint32_t t = node.lo; t < node.hi; t++) {
				double dx[kMaxTreeDims];
				for (std::size_t d = 0; d < D_; d++)
					dx[d] = x(perm_[t], d) - mean[d];
				const double dq = qv(perm_[t], cell) - qmean;
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
		n.hmin = kInfinityD;
		n.hmax = -kInfinityD;
		double habs = 0;
		for (std::uint32_t t = node.lo; t < node.hi; t++) {
			const std::uint32_t p = perm_[t];
			double h = qv(p, cell), mag = std::fabs(qv(p, cell));
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

	// The box of differences of two nodes and their smallest distance (dmin > 0, or no bound).
	bool box_gap(const TreeNode &a, const TreeNode &b, BoxGap &g) const
	{
		double gap[kMaxTreeDims];
		bool apart = false;
		for (std::size_t d = 0; d < D_; d++) {
			g.dlo[d] = b.box_lo[d] - a.box_hi[d];
			g.dhi[d] = b.box_hi[d] - a.box_lo[d];
			gap[d] = std::max({0.0, g.dlo[d], -g.dhi[d]});
			apart |= gap[d] > 0;
		}
		if (!apart)
			return false;
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
		g.dmin = dmin;
		return dmin > 0;
	}

	// Upper bound of one cell's |q_i - q_j| / D(i, j) over i in a, j in b (distinct nodes, apart).
	double cell_bound(const TreeNode &a, const CellFit &fa, const TreeNode &b, const CellFit &fb,
	                  const BoxGap &g) const
	{
		const double dmin = g.dmin;
		double best = std::max(fb.qmax - fa.qmin, fa.qmax - fb.qmin) / dmin;
		// c = c_a, then c = c_b: h over the other node is its own h plus (c_own - c) . x over its box
		for (int side = 0; side < 2; side++) {
			const CellFit &own = side == 0 ? fa : fb, &other = side == 0 ? fb : fa;
			const TreeNode &other_box = side == 0 ? b : a;
			if (own.cdual == 0)
				continue;
			const double dir = direction_bound(own.c, own.cdual, g.dlo, g.dhi, dmin);
			best = std::min(best, dir + residual_term(own, other, other_box, g));
		}
		return best;
	}

	// The residual term of cell_bound for c = the slope of `own` (the node on `side`): (range of
	// h = q - c.x over both nodes, widened for rounding) / dmin.
	double residual_term(const CellFit &own, const CellFit &other, const TreeNode &other_box, const BoxGap &g) const
	{
		double shift_lo = 0, shift_hi = 0, shift_mag = 0;
		for (std::size_t d = 0; d < D_; d++) {
			const double dc = other.c[d] - own.c[d];
			const double u = dc * other_box.box_lo[d], w = dc * other_box.box_hi[d];
			shift_lo += std::min(u, w);
			shift_hi += std::max(u, w);
			shift_mag += std::fabs(dc) * other_box.xabs;
		}
		const double slack = own.hslack + other.hslack + kResidualSlack * shift_mag;
		const double olo = other.hmin + shift_lo, ohi = other.hmax + shift_hi;
		const double dh = std::max(ohi - own.hmin, own.hmax - olo) + 2 * slack;
		return std::max(dh, 0.0) / g.dmin * (1 + 1e-12);
	}

	// A second bound of a row search's value over i in node ia, j in node ib (apart), tried where
	// the sum of the cells' bounds (bound()) cannot prune: that sum maximises each cell's change
	// over its own direction, while one pair has one direction v. With one slope per cell (the
	// node on one side's c_t, or 0 where the cell's bound with 0 is smaller), a row's value is at
	// most sum_t coef_t (|c_t . v| / |v| + res_t), and sum_t coef_t |c_t . v| is the largest over
	// signs s of (sum_t s_t coef_t c_t) . v, each bounded by direction_bound; a cell whose c_t . v
	// keeps one sign over the box of differences has its sign fixed (at most 2 cells of either
	// sign, 4 patterns, else no bound). Each direction_bound it calls counts in joint_calls_. The smaller of the two sides' bounds, per row; in the units of
	// row_bound. Pruning by it skips only pairs the traversal would have rated below the level,
	// in the same order: the kept values, the pairs and the work of the other pairs are unchanged.
	double joint_bound(std::uint32_t ia, std::uint32_t ib)
	{
		const TreeNode &a = nodes_[ia], &b = nodes_[ib];
		BoxGap g;
		if (!box_gap(a, b, g))
			return kInfinityD;
		const std::size_t rows = rows_->rows;
		double best_rows[8];
		if (rows > 8)
			return kInfinityD;
		for (std::size_t r = 0; r < rows; r++)
			best_rows[r] = kInfinityD;
		for (int side = 0; side < 2; side++) {
			const TreeNode &other_box = side == 0 ? b : a;
			std::size_t lin[16], free_cells[16];
			std::size_t nlin = 0, nfree = 0;
			double konst[16], sign[16];
			bool ok = true;
			for (std::size_t t = 0; t < cells_ && ok; t++) {
				konst[t] = 0;
				sign[t] = 0;
				if (upper_[t] == 0)
					continue;
				const CellFit &fa = cf(ia, t), &fb = cf(ib, t);
				if (fa.qmin == fa.qmax && fb.qmin == fb.qmax && fa.qmin == fb.qmin)
					continue; // constant over both nodes
				const CellFit &own = side == 0 ? fa : fb, &other = side == 0 ? fb : fa;
				const double b0 = std::max(fb.qmax - fa.qmin, fa.qmax - fb.qmin) / g.dmin;
				if (own.cdual == 0) {
					konst[t] = b0;
					continue;
				}
				const double res = residual_term(own, other, other_box, g);
				if (b0 <= own.cdual + res) { // c = 0 at least as good as the slope in any direction
					konst[t] = b0;
					continue;
				}
				// rounding of the combined slopes: 1e-12 of the cell's largest |c.v| / |v|
				konst[t] = res + 1e-12 * own.cdual;
				lin[nlin++] = t;
				double lo = 0, hi = 0;
				for (std::size_t d = 0; d < D_; d++) {
					const double u = own.c[d] * g.dlo[d], w = own.c[d] * g.dhi[d];
					lo += std::min(u, w);
					hi += std::max(u, w);
				}
				if (lo >= 0)
					sign[t] = 1;
				else if (hi <= 0)
					sign[t] = -1;
				else if (nfree < 2)
					free_cells[nfree++] = t;
				else
					ok = false;
			}
			if (!ok)
				continue;
			for (std::size_t r = 0; r < rows; r++) {
				const double *coef = rows_->coef.data() + r * cells_;
				double base = 0;
				for (std::size_t t = 0; t < cells_; t++)
					if (coef[t] > 0)
						base += coef[t] * konst[t];
				double dir = 0;
				// every sign pattern of the free cells (the fixed cells' signs break the symmetry of s and -s)
				const std::size_t patterns = std::size_t{1} << nfree;
				for (std::size_t p = 0; p < patterns; p++) {
					for (std::size_t f = 0; f < nfree; f++)
						sign[free_cells[f]] = ((p >> f) & 1) ? -1.0 : 1.0;
					double gsum[kMaxTreeDims] = {0};
					for (std::size_t l = 0; l < nlin; l++) {
						const std::size_t t = lin[l];
						if (!(coef[t] > 0))
							continue;
						const double *c = (side == 0 ? cf(ia, t) : cf(ib, t)).c;
						for (std::size_t d = 0; d < D_; d++)
							gsum[d] += sign[t] * coef[t] * c[d];
					}
					dir = std::max(dir, direction_bound(gsum, dual_norm(gsum), g.dlo, g.dhi, g.dmin));
					joint_calls_++;
				}
				best_rows[r] = std::min(best_rows[r], (base + dir) * (1 + 1e-12));
			}
		}
		double best = 0;
		for (std::size_t r = 0; r < rows; r++)
			best = std::max(best, best_rows[r]);
		return best * r_.scale;
	}

	// Upper bound of the searched expression over i in node ia, j in node ib (distinct nodes), in
	// the units of the value compared with the level (see prunable).
	double bound(std::uint32_t ia, std::uint32_t ib)
	{
		const TreeNode &a = nodes_[ia], &b = nodes_[ib];
		BoxGap g;
		if (!box_gap(a, b, g))
			return kInfinityD;
		if (!rows_)
			return cell_bound(a, cf(ia, cell_), b, cf(ib, cell_), g);
		for (std::size_t t = 0; t < cells_; t++) {
			cb_[t] = 0;
			if (upper_[t] == 0)
				continue;
			const CellFit &fa = cf(ia, t), &fb = cf(ib, t);
			if (fa.qmin == fa.qmax && fb.qmin == fb.qmax && fa.qmin == fb.qmin)
				continue; // constant over both nodes
			cb_[t] = cell_bound(a, fa, b, fb, g);
		}
		return row_bound();
	}

	// The largest row of the query applied to the cells' bounds cb_ (times the scale: a row's value
	// divides by D / scale).
	double row_bound() const
	{
		double best = 0;
		for (std::size_t r = 0; r < rows_->rows; r++) {
			const double *coef = rows_->coef.data() + r * cells_;
			double s = 0;
			for (std::size_t t = 0; t < cells_; t++)
				if (coef[t] > 0)
					s += coef[t] * cb_[t];
			best = std::max(best, s);
		}
		return best * r_.scale;
	}

	// The units of one operation of the search under way (pair_tree_units: about one CPU cost per
	// unit whatever the dimension and the number of cells), for `varying` cells bounded and `rows`
	// rows rated.
	void set_costs(std::size_t varying, std::size_t rows)
	{
		const PairTreeCosts c = pair_tree_costs(D_, cells_, varying, rows, r_.norm);
		rate_units_ = c.rate;
		bound_units_ = c.bound;
		self_units_ = c.self;
		joint_units_ = c.joint;
		direction_units_ = c.direction;
	}

	// Charges the tree's construction (its estimate, known before it is built) to the statement's
	// budget, or to this tree's cap without one; refuses before building when it does not fit.
	void charge_setup(double units)
	{
		const double left = work_budget_limit(cap_) - work_budget_spent();
		if (units > left) {
			const double k = static_cast<double>(r_.ps.size());
			char msg[480];
			std::snprintf(msg, sizeof msg,
			              "computing the sensitivity of this query needs more than %.3g units of work: building the "
			              "pair tree over %.0f points (%zu dimensions, %.3g pairs) with the weights of %zu %s needs "
			              "%.3g before any search, and %.3g were spent before",
			              work_budget_limit(cap_), k, D_, 0.5 * k * (k - 1), cells_, cells_ == 1 ? "cell" : "cells",
			              units, work_budget_spent());
			throw CoreError(ErrorKind::ProgramLimit, msg, refusal_hint(work_budget_limit(cap_)));
		}
		work_budget_charge(units);
	}

	void tick(double w)
	{
		work_ += w;
		if (work_ >= next_)
			checkpoint();
	}

	// Every kProgressEvery units (and where the budget would run out): charges the statement's
	// work budget (work_budget.h; without one, this tree's cap), refuses with the numbers when it
	// is spent, and reports progress (a cancel or a statement timeout throws from there).
	void checkpoint()
	{
		const double left = work_budget_charge(work_ - charged_);
		charged_ = work_;
		const bool budgeted = std::isfinite(left);
		if (budgeted ? left < 0 : work_ > cap_)
			refuse();
		report_progress("sensitivity over pairs of points (tree)", std::min(work_, cap_), cap_);
		next_ = work_ + std::min(kProgressEvery, std::max(budgeted ? left : cap_ - work_, 0.0));
	}

	// The work limit is spent: the refusal, with the search's numbers.
	[[noreturn]] void refuse() const
	{
		const double k = static_cast<double>(r_.ps.size());
		const double pairs = 0.5 * k * (k - 1);
		const double limit = work_budget_limit(cap_), spent = std::max(work_budget_spent(), work_);
		std::size_t varying = 0; // cells of the search under way
		for (std::size_t t = 0; t < cells_; t++)
			varying += rows_ ? upper_[t] > 0 : t == cell_;
		char msg[480];
		std::snprintf(msg, sizeof msg,
		              "computing the sensitivity of this query needs more than %.3g units of work: the pair "
		              "tree over %.0f points (%.3g pairs, %zu %s) spent %.3g of them, %.3g in a search for %s that "
		              "had settled %.2g%% of the pairs",
		              limit, k, pairs, cells_, cells_ == 1 ? "cell" : "cells varying over them", spent,
		              work_ - search_start_,
		              rows_ ? (varying == 1 ? "the pairs of largest privacy ratio of 1 cell"
		                                    : "the pairs of largest privacy ratio of several cells")
		                    : "the largest change of one cell per unit of distance",
		              pairs > 0 ? 100 * covered_ / pairs : 100.0);
		throw CoreError(ErrorKind::ProgramLimit, msg, refusal_hint(limit));
	}

	static std::string refusal_hint(double limit)
	{
		char hint[400];
		std::snprintf(hint, sizeof hint,
		              "Declare fewer points or a coarser domain, ask for fewer aggregates or FILTERed cells per "
		              "query (dx.explain shows the plan of a query that is accepted), or ask a superuser to raise "
		              "dxpriv.analysis_work_limit (now %.3g; the work is counted before any row is read).",
		              limit);
		return hint;
	}

	// The next checkpoint: at most kProgressEvery units on, and where the statement's budget (as
	// other searches left it) would run out.
	void arm()
	{
		const double left = work_budget_limit(kInfinityD) - work_budget_spent() - (work_ - charged_);
		next_ = work_ + std::min(kProgressEvery, std::max(std::isfinite(left) ? left : cap_ - work_, 0.0));
	}

	// Flushes the work not charged yet to the statement's budget (at the end of a search).
	void flush()
	{
		work_budget_charge(work_ - charged_);
		charged_ = work_;
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
		if (rows_) {
			rate_row(a, b);
			return;
		}
		const double dist = tree_distance(a, b);
		const double qa = pw_[a * cells_ + cell_], qb = pw_[b * cells_ + cell_];
		const double v = expr_ == PairExpr::Raw ? std::fabs(qb - qa) / dist : std::fabs(qa - qb) / (dist / r_.scale);
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

	// Rates the pair at tree positions a and b with the query's rows (PairRowQuery's expression).
	void rate_row(std::uint32_t a, std::uint32_t b)
	{
		const double d = tree_distance(a, b) / r_.scale, inv_d = 1 / d;
		const double *wa = pw_.data() + a * cells_, *wb = pw_.data() + b * cells_;
		double diff[16];
		for (std::size_t t = 0; t < cells_; t++)
			diff[t] = std::fabs(wa[t] - wb[t]);
		double v = 0;
		for (std::size_t r = 0; r < rows_->rows; r++) {
			const double *coef = rows_->coef.data() + r * cells_;
			double s = 0;
			for (std::size_t t = 0; t < cells_; t++)
				s += diff[t] * coef[t];
			v = r == 0 ? s * inv_d : std::max(v, s * inv_d);
		}
		if (!(v < kInfinityD)) {
			rows_out_.finite = false;
			return;
		}
		if (!(v > level_))
			return;
		const std::uint32_t i = std::min(perm_[a], perm_[b]), j = std::max(perm_[a], perm_[b]);
		if (rows_->exclude && rows_->exclude->count((static_cast<std::uint64_t>(i) << 32) | j)) {
			rows_out_.excluded_above |= v > rows_->exclude_limit;
			return;
		}
		const RowCandidate c{v, i, j};
		if (heap_.size() == rows_->keep) {
			std::pop_heap(heap_.begin(), heap_.end(), std::greater<RowCandidate>());
			heap_.back() = c;
		} else {
			heap_.push_back(c);
		}
		std::push_heap(heap_.begin(), heap_.end(), std::greater<RowCandidate>());
		if (heap_.size() == rows_->keep)
			level_ = std::max(rows_->threshold, heap_.front().value);
	}

	// Upper bound of one cell's |q_i - q_j| / D(i, j) over the pairs inside a node (D >= the
	// smallest gap).
	double cell_self_bound(const CellFit &n) const
	{
		if (!(gap_ > 0))
			return kInfinityD;
		const double dh = n.hmax - n.hmin + 2 * n.hslack;
		return std::min((n.qmax - n.qmin) / gap_, n.cdual + dh / gap_) * (1 + 1e-12);
	}

	// Whether no pair inside the node changes the searched expression's cells.
	bool constant(std::uint32_t id) const
	{
		if (!rows_)
			return cf(id, cell_).qmax == cf(id, cell_).qmin;
		for (std::size_t t = 0; t < cells_; t++)
			if (upper_[t] > 0 && cf(id, t).qmax != cf(id, t).qmin)
				return false;
		return true;
	}

	double self_bound(std::uint32_t id)
	{
		if (!rows_)
			return cell_self_bound(cf(id, cell_));
		for (std::size_t t = 0; t < cells_; t++) {
			cb_[t] = 0;
			if (upper_[t] > 0 && cf(id, t).qmax != cf(id, t).qmin)
				cb_[t] = cell_self_bound(cf(id, t));
		}
		return row_bound();
	}

	bool prunable(double ub) const
	{
		if (rows_)
			return ub * (1 + kPruneSlack) <= level_;
		// scaled to the expression: Metric rates (|dq| / D) * scale
		const double f = expr_ == PairExpr::Metric ? r_.scale : 1.0;
		return ub * f * (1 + kPruneSlack) <= out_.value;
	}

	void self(std::uint32_t id)
	{
		const TreeNode &n = nodes_[id];
		const double inside = 0.5 * static_cast<double>(n.hi - n.lo) * static_cast<double>(n.hi - n.lo - 1);
		if (constant(id)) {
			covered_ += inside;
			return; // no change inside
		}
		tick(self_units_);
		if (prunable(self_bound(id))) {
			covered_ += inside;
			return;
		}
		if (n.left == 0) {
			tick(0.5 * (n.hi - n.lo) * (n.hi - n.lo) * rate_units_);
			for (std::uint32_t s = n.lo; s + 1 < n.hi; s++)
				for (std::uint32_t t = s + 1; t < n.hi; t++)
					rate_at(s, t);
			covered_ += inside;
			return;
		}
		self(n.left);
		self(n.right);
		cross(n.left, n.right, bound(n.left, n.right));
	}

	void cross(std::uint32_t ia, std::uint32_t ib, double ub)
	{
		const TreeNode &a = nodes_[ia], &b = nodes_[ib];
		const double between = static_cast<double>(a.hi - a.lo) * static_cast<double>(b.hi - b.lo);
		tick(bound_units_);
		bool skip = prunable(ub);
		if (!skip && joint_ && rows_) {
			joint_calls_ = 0;
			skip = prunable(joint_bound(ia, ib));
			tick(joint_units_ + static_cast<double>(joint_calls_) * direction_units_);
		}
		if (skip) {
			covered_ += between;
			return;
		}
		if (a.left == 0 && b.left == 0) {
			tick(between * rate_units_);
			for (std::uint32_t s = a.lo; s < a.hi; s++)
				for (std::uint32_t t = b.lo; t < b.hi; t++)
					rate_at(s, t);
			covered_ += between;
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
		double u1 = bound(p1, fixed), u2 = bound(p2, fixed);
		if (u2 > u1) {
			std::swap(p1, p2);
			std::swap(u1, u2);
		}
		cross(p1, fixed, u1);
		cross(p2, fixed, u2);
	}

	static constexpr double kInfinityD = std::numeric_limits<double>::infinity();
	const Rater r_;
	double cap_;
	std::size_t D_, cells_;
	double gap_ = 0;
	std::vector<std::uint32_t> perm_;
	std::vector<double> px_, pw_; // coordinates (D_ per point) and weights (cells_ per point) in tree order
	std::vector<TreeNode> nodes_;
	std::vector<CellFit> fits_;   // per node, cells_ each
	// the search under way: one cell's maximum (rows_ null) or a row query
	std::size_t cell_ = 0;
	PairExpr expr_ = PairExpr::Raw;
	double floor_ = 0;
	bool found_ = false;
	PairMax out_;
	const PairRowQuery *rows_ = nullptr;
	std::vector<double> upper_, cb_; // per cell: largest coefficient, bound of the node pair
	std::vector<RowCandidate> heap_;
	double level_ = 0;
	PairRowResult rows_out_;
	double work_ = 0, next_ = kProgressEvery;
	bool joint_ = joint_on;   // detail::set_pair_joint_bound, and two or more cells in the row search
	std::size_t joint_calls_ = 0; // direction bounds of the last joint_bound
	double charged_ = 0;      // work_ already charged to the statement's budget
	// units per operation of the search under way (set_costs)
	double rate_units_ = 1, bound_units_ = 1, self_units_ = 1, joint_units_ = 0, direction_units_ = 1;
	double search_start_ = 0; // work_ when the search under way began
	double covered_ = 0;      // point pairs the search under way has settled (rated or bounded off)
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
		const double left = work_budget_limit(work_cap) - work_budget_spent();
		if (0.5 * static_cast<double>(k) * static_cast<double>(k) > left) {
			char msg[300];
			std::snprintf(msg, sizeof msg,
			              "computing the sensitivity of this query needs %.3g distance evaluations (every pair of %zu "
			              "points), more than the %.3g left of the limit of %.3g",
			              0.5 * static_cast<double>(k) * static_cast<double>(k - 1), k, std::max(left, 0.0),
			              work_budget_limit(work_cap));
			throw CoreError(ErrorKind::ProgramLimit, msg,
			                "Declare fewer points or coarser domains, or use a metric with few edges (absolute, graph, "
			                "theta1); a superuser may raise dxpriv.analysis_work_limit.");
		}
		PairMax all = pair_scan_max(ps, norm, scale, q, stride, expr);
		work_budget_charge(all.work);
		if (!(all.value > floor)) // below the floor: reported as none, like the tree
			all = PairMax{0, 0, 0, all.finite, all.work};
		return all;
	}
	PairTree tree(make_rater(ps, norm, scale, q, stride, expr), 1, work_cap);
	return tree.run(0, expr, floor);
}

// See pair_tree.h.
struct PairSearch::Impl {
	PairTree tree;
};

// See pair_tree.h.
PairSearch::PairSearch(const PointSet &ps, PairNorm norm, double scale, const double *w, std::size_t stride,
                       std::size_t cells, double work_cap)
    : impl_(new Impl{PairTree(make_rater(ps, norm, scale, w, stride, PairExpr::Metric), cells, work_cap)})
{
}

PairSearch::~PairSearch() = default;

// See pair_tree.h.
bool
PairSearch::applies(const PointSet &ps, const double *w, std::size_t stride, std::size_t cells)
{
	const std::size_t k = ps.size();
	if (ps.dims() > static_cast<std::size_t>(kMaxTreeDims) || k >= 0xFFFFFFFFu || k < 2 || cells > 16)
		return false;
	for (std::size_t i = 0; i < k; i++)
		for (std::size_t t = 0; t < cells; t++)
			if (!(std::fabs(w[i * stride + t]) <= 1e300))
				return false;
	return true;
}

// See pair_tree.h.
PairMax
PairSearch::max_cell(std::size_t t, PairExpr expr, double floor)
{
	return impl_->tree.run(t, expr, floor);
}

// See pair_tree.h.
double
PairSearch::work() const
{
	return impl_->tree.work();
}

// See pair_tree.h.
PairRowResult
PairSearch::top_rows(const PairRowQuery &query)
{
	return impl_->tree.run_rows(query);
}

namespace detail {

// See pair_tree.h.
void
set_pair_joint_bound(bool on)
{
	joint_on = on;
}

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
