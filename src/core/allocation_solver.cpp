// The exact allocation: a log-barrier Newton solver inside a cutting-plane loop over the privacy
// constraints (minimises sum_k b_k^2 in x_k = 1/b_k, a convex problem; MECHANISMS.md §3.8).
#include "core/allocation.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <Eigen/Dense>
#include <Eigen/Sparse>

#include "core/allocation_internal.h"

namespace dxpriv {
namespace detail {

namespace {

// One step of a compensated (Dot2) accumulation of s - a * y: s holds the rounded running value,
// lo the accumulated rounding errors.
inline void
dot2_subtract(double &s, double &lo, double a, double y)
{
	const double p = a * y;
	const double pe = std::fma(a, y, -p); // a * y == p + pe exactly
	const double t = s - p;               // TwoSum(s, -p)
	const double z = t - s;
	lo += ((s - (t - z)) + (-p - z)) - pe;
	s = t;
}

// The working-set matrix A (w x m, entries >= 0) of the barrier solver, dense, or also sparse
// (row-major) when its rows are sparse; products use whichever is cheaper.
struct WorkingMatrix {
	Eigen::MatrixXd dense;
	Eigen::SparseMatrix<double, Eigen::RowMajor> sparse;
	bool use_sparse = false;

	Eigen::Index rows() const { return dense.rows(); }
	Eigen::Index cols() const { return dense.cols(); }
	// A v.
	Eigen::VectorXd times(const Eigen::VectorXd &v) const { return use_sparse ? Eigen::VectorXd(sparse * v) : Eigen::VectorXd(dense * v); }
	// A^T v.
	Eigen::VectorXd transpose_times(const Eigen::VectorXd &v) const
	{
		return use_sparse ? Eigen::VectorXd(sparse.transpose() * v) : Eigen::VectorXd(dense.transpose() * v);
	}
	// Slacks s = 1 - A y with a compensated sum: accurate even when A y is within 1e-16 of 1,
	// which the barrier's dual estimate mu / s and its gap certificate depend on.
	void slacks(const Eigen::VectorXd &y, Eigen::VectorXd &s, Eigen::VectorXd &lo) const
	{
		const Eigen::Index w = rows(), m = cols();
		s.setOnes(w);
		lo.setZero(w);
		if (use_sparse) {
			for (Eigen::Index e = 0; e < w; e++)
				for (Eigen::SparseMatrix<double, Eigen::RowMajor>::InnerIterator it(sparse, e); it; ++it)
					dot2_subtract(s[e], lo[e], it.value(), y[it.col()]);
		} else {
			for (Eigen::Index j = 0; j < m; j++) {
				const double yj = y[j];
				const double *col = dense.data() + j * w;
				for (Eigen::Index e = 0; e < w; e++)
					dot2_subtract(s[e], lo[e], col[e], yj);
			}
		}
		s += lo;
	}
};

// Result of the barrier solver on one working set.
struct BarrierResult {
	Eigen::VectorXd y;   // strictly feasible for the working set
	double objective = 0;
	double lower_bound = 0; // certified: no point feasible for the working set does better
	std::size_t newton_steps = 0;
	bool ok = false;
};

// Minimises F(y) = sum_j c_j y_j^-2 subject to A y <= 1 (A >= 0, every column has a positive entry)
// with a log-barrier Newton method started at the strictly feasible y0 and barrier weight mu.
// The Newton matrix diag(6 c y^-4) + mu A^T diag(s^-2) A is assembled densely, or sparsely with a
// sparse Cholesky when the working rows are sparse (GROUP BY cells). Stops when the duality gap certified by
// lambda = mu / slack is below rel_gap * F, or when floating point allows no further progress.
BarrierResult
barrier_solve(const WorkingMatrix &A, const Eigen::VectorXd &c, Eigen::VectorXd y, double mu, double rel_gap)
{
	const double dual_const = 3.0 * std::pow(2.0, -2.0 / 3.0);
	BarrierResult res;
	auto objective = [&c](const Eigen::VectorXd &v) { return (c.array() / v.array().square()).sum(); };
	auto barrier = [&](const Eigen::VectorXd &v, const Eigen::VectorXd &s, double mu_now) {
		return objective(v) - mu_now * s.array().log().sum();
	};
	Eigen::VectorXd s, lo;
	A.slacks(y, s, lo);
	if (!((s.array() > 0).all() && (y.array() > 0).all()))
		return res;
	Eigen::MatrixXd H, B;
	Eigen::SparseMatrix<double> Hs, Bs;
	const Eigen::Index m = A.cols(), w = A.rows();
	Eigen::SimplicialLLT<Eigen::SparseMatrix<double>> sparse_llt;
	Eigen::VectorXd grad(m), dy(m), ds(w), y_try(m), s_try(w);
	bool stalled = false;
	for (int outer = 0; outer < 100 && !stalled; outer++) {
		// Centering: Newton steps on phi(y) = F(y) - mu sum log(1 - A y), until the scale-free
		// decrement (decrement / mu) is small; the certificate below tolerates loose centring.
		bool centred = false;
		for (int it = 0; it < 60 && !centred; it++) {
			const Eigen::ArrayXd inv_s = s.array().inverse();
			grad = (-2.0 * c.array() / y.array().cube()).matrix() + mu * A.transpose_times(inv_s.matrix());
			const Eigen::ArrayXd hess_diag = 6.0 * c.array() / y.array().square().square();
			bool factored;
			if (A.use_sparse) {
				Bs = (std::sqrt(mu) * inv_s).matrix().asDiagonal() * A.sparse;
				Hs = Bs.transpose() * Bs;
				for (Eigen::Index j = 0; j < m; j++)
					Hs.coeffRef(j, j) += hess_diag[j];
				sparse_llt.compute(Hs);
				factored = sparse_llt.info() == Eigen::Success;
				if (factored)
					dy = -sparse_llt.solve(grad);
			} else {
				B = (std::sqrt(mu) * inv_s).matrix().asDiagonal() * A.dense;
				H.setZero(m, m);
				H.selfadjointView<Eigen::Lower>().rankUpdate(B.transpose());
				H.diagonal().array() += hess_diag;
				Eigen::LLT<Eigen::MatrixXd> llt(H);
				factored = llt.info() == Eigen::Success;
				if (factored)
					dy = -llt.solve(grad);
			}
			res.newton_steps++;
			const double decrement = factored ? -grad.dot(dy) : -1; // Newton decrement squared
			if (!(decrement >= 0) || !std::isfinite(decrement)) {
				stalled = true; // numerically singular: keep the last (feasible) point
				break;
			}
			ds = -A.times(dy);
			// Largest step keeping y and the slacks positive, then backtracking on phi; the slacks
			// are recomputed from y so that rounding can never leave the feasible set. Below a
			// scale-free decrement of 0.01 the full Newton step is safe (quadratic convergence).
			double alpha = 1;
			for (Eigen::Index j = 0; j < m; j++)
				if (dy[j] < 0)
					alpha = std::min(alpha, -0.99 * y[j] / dy[j]);
			for (Eigen::Index e = 0; e < w; e++)
				if (ds[e] < 0)
					alpha = std::min(alpha, -0.99 * s[e] / ds[e]);
			const double phi0 = barrier(y, s, mu);
			const bool tiny = decrement < 1e-2 * mu;
			bool accepted = false;
			for (; alpha > 1e-20; alpha *= 0.5) {
				y_try = y + alpha * dy;
				A.slacks(y_try, s_try, lo);
				if (!((s_try.array() > 0).all() && (y_try.array() > 0).all()))
					continue;
				if (tiny || barrier(y_try, s_try, mu) <= phi0 - 0.01 * alpha * decrement) {
					accepted = true;
					break;
				}
			}
			if (!accepted) {
				stalled = true; // no decrease representable: as centred as floating point allows
				break;
			}
			y.swap(y_try);
			s.swap(s_try);
			centred = decrement < 1e-4 * mu;
		}
		if (!centred)
			stalled = true;
		// Certificate from lambda = mu / s >= 0: D(lambda) = sum_j min_y (c_j y^-2 + g_j y) - sum lambda.
		const Eigen::VectorXd lambda = mu * s.array().inverse().matrix();
		const Eigen::VectorXd g = A.transpose_times(lambda);
		const double dual =
		    dual_const * (c.array() * g.array().square()).unaryExpr([](double t) { return std::cbrt(t); }).sum() -
		    lambda.sum();
		res.objective = objective(y);
		res.lower_bound = std::max(res.lower_bound, dual);
		if (res.objective - res.lower_bound <= rel_gap * res.objective)
			break;
		mu = std::min(mu / 10, (res.objective - res.lower_bound) / (4.0 * static_cast<double>(w)));
		if (!(mu > 0))
			break;
	}
	res.y = y;
	res.objective = objective(y);
	res.ok = std::isfinite(res.objective);
	return res;
}

} // namespace

// Exact minimiser of sum_k b_k^2 (x_k = 1/b_k): cutting planes over the rows around the barrier
// solver, started from the binding rows of Strategy 3. Returns the inverse scales x (0 for
// exact cells), or an empty vector when the solver failed.
std::vector<double>
optimal_inverse(const ConstraintSet &c, const std::vector<double> &colmax, const std::vector<std::size_t> &argmax,
                const std::vector<double> &x3, const std::vector<std::size_t> &binding, double epsilon,
                AllocationStats *stats)
{
	const std::size_t m = c.cells, count = c.count();
	std::vector<std::size_t> cols;                      // active cells
	std::vector<Eigen::Index> position(m, -1);          // cell -> column of the working matrix
	for (std::size_t k = 0; k < m; k++)
		if (colmax[k] > 0) {
			position[k] = static_cast<Eigen::Index>(cols.size());
			cols.push_back(k);
		}
	const Eigen::Index ma = static_cast<Eigen::Index>(cols.size());

	// Normalised variables y_j = x_k s_k / epsilon, so A = R diag(1/s) has column maxima 1 and the
	// constraint is A y <= 1; objective sum_j s_j^2 y_j^-2 divided by its value at Strategy 3.
	Eigen::VectorXd y3(ma), cw(ma);
	for (Eigen::Index j = 0; j < ma; j++) {
		y3[j] = x3[cols[j]] * colmax[cols[j]] / epsilon;
		cw[j] = colmax[cols[j]] * colmax[cols[j]];
	}
	cw /= (cw.array() / y3.array().square()).sum();

	std::vector<char> in_set(count, 0);
	std::vector<std::size_t> work;
	auto add_row = [&](std::size_t e) {
		if (!in_set[e]) {
			in_set[e] = 1;
			work.push_back(e);
		}
	};
	for (std::size_t e : binding)
		add_row(e);
	for (std::size_t k : cols) // the row attaining each column maximum bounds every y_j by 1
		add_row(argmax[k]);

	// Working-set matrix, dense; also sparse when the rows are sparse enough for the sparse
	// Newton matrix to pay off (GROUP BY cells: each row touches the cells of one or two groups).
	WorkingMatrix A;
	Eigen::Index filled = 0;
	double nnz_squares = 0; // sum over working rows of (non-zeros)^2: cost of a sparse assembly
	auto sync_matrix = [&]() {
		A.dense.conservativeResize(static_cast<Eigen::Index>(work.size()), ma);
		for (; filled < static_cast<Eigen::Index>(work.size()); filled++) {
			A.dense.row(filled).setZero();
			double nnz = 0;
			c.for_each(work[static_cast<std::size_t>(filled)], [&](std::size_t k, double v) {
				if (v != 0) {
					A.dense(filled, position[k]) = v / colmax[k];
					nnz++;
				}
			});
			nnz_squares += nnz * nnz;
		}
		const double dense_cost = static_cast<double>(A.rows()) * static_cast<double>(ma) * static_cast<double>(ma);
		A.use_sparse = ma >= 32 && nnz_squares <= 0.1 * dense_cost;
		if (A.use_sparse)
			A.sparse = A.dense.sparseView();
	};

	std::vector<double> z(m, 0.0), v(count);
	std::vector<char> covered(m, 0);
	const std::size_t batch = 16;
	Eigen::VectorXd y = 0.9 * y3;
	double mu = 0.1 / static_cast<double>(work.size() + cols.size());
	BarrierResult res;
	double max_v = 0;
	for (std::size_t round = 0; round < 1000; round++) {
		sync_matrix();
		res = barrier_solve(A, cw, y, mu, 1e-10);
		if (stats) {
			stats->rounds = round + 1;
			stats->newton_steps += res.newton_steps;
			stats->working_rows = work.size();
		}
		if (!res.ok)
			return {};
		// Separation over every row: v_e = sum_k r_k(e) y_k / s_k (<= 1 when feasible).
		for (Eigen::Index j = 0; j < ma; j++)
			z[cols[static_cast<std::size_t>(j)]] = res.y[j] / colmax[cols[static_cast<std::size_t>(j)]];
		max_v = 0;
		for (std::size_t e = 0; e < count; e++) {
			v[e] = row_dot(c, e, z.data());
			max_v = std::max(max_v, v[e]);
		}
		if (max_v <= 1 + 1e-12)
			break;
		// New rows: the `batch` most violated rows, then a greedy matching over the violated rows in
		// decreasing violation (a row joins only if none of its cells is covered yet this round).
		// Degenerate, symmetric families of rows (a pair row for every two groups of a GROUP BY)
		// need a working set without a dominant hub; the most violated row of every cell would
		// form a star around the most over-allocated cell and take one round per cell.
		std::vector<std::size_t> violated;
		for (std::size_t e = 0; e < count; e++)
			if (v[e] > 1 + 1e-12 && !in_set[e])
				violated.push_back(e);
		if (violated.empty())
			return {}; // violation on a working row: numerical failure
		std::sort(violated.begin(), violated.end(), [&v](std::size_t a, std::size_t b) { return v[a] > v[b]; });
		for (std::size_t t = 0; t < violated.size() && t < batch; t++)
			add_row(violated[t]);
		std::fill(covered.begin(), covered.end(), 0);
		std::size_t matched = 0;
		for (std::size_t e : violated) {
			if (matched >= cols.size())
				break;
			bool free = true;
			c.for_each(e, [&](std::size_t k, double r) { free &= !(r > 0 && covered[k]); });
			if (!free)
				continue;
			c.for_each(e, [&](std::size_t k, double r) {
				if (r > 0)
					covered[k] = 1;
			});
			add_row(e);
			matched++;
		}
		// Warm start: scale down into the interior of the enlarged working set.
		y = res.y * (0.98 / max_v);
		mu = std::max(1e-4 * res.objective, 2 * (res.objective - res.lower_bound)) / static_cast<double>(work.size());
	}
	if (!(max_v <= 1 + 1e-12))
		return {};
	if (stats) { // the final point is res.y / max_v; the working-set bound also bounds the full problem
		const double final_objective = res.objective * max_v * max_v;
		stats->relative_gap = std::max(0.0, (final_objective - res.lower_bound) / final_objective);
	}
	std::vector<double> x(m, 0);
	for (Eigen::Index j = 0; j < ma; j++) {
		const std::size_t k = cols[static_cast<std::size_t>(j)];
		x[k] = epsilon * (res.y[j] / max_v) / colmax[k]; // touch the boundary exactly
	}
	return x;
}

} // namespace detail
} // namespace dxpriv
