// The exact allocations: a log-barrier Newton solver inside a cutting-plane loop over the privacy
// constraints. Minimises sum_k w_k b_k^2 in x_k = 1/b_k (a convex problem; MECHANISMS.md §3.8),
// optionally with floors x_k >= 1/cap_k (the relative strategy's caps b_k <= b_k^eq).
#include "core/allocation.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <Eigen/Dense>
#include <Eigen/Sparse>

#include "core/allocation_internal.h"
#include "core/progress.h"

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
	Eigen::VectorXd z;   // strictly feasible for the working set (z > 0, A z < 1)
	double objective = 0;
	double lower_bound = 0; // certified: no point feasible for the working set does better
	std::size_t newton_steps = 0;
	bool ok = false;
};

// Minimises F(z) = sum_j c_j (l_j + z_j)^-2 subject to A z <= 1 and z >= 0 (A >= 0, every column
// has a positive entry; l >= 0; c_j > 0 or l_j > 0) with a log-barrier Newton method started at
// the strictly feasible z and barrier weight mu. Without floors (l = 0) z is the normalised
// inverse scale and z > 0 is implied by F; a column with l_j > 0 gets its own barrier -mu log z_j.
// The Newton matrix diag(6 c (l+z)^-4 + mu [l>0] z^-2) + mu A^T diag(s^-2) A is assembled densely,
// or sparsely with a sparse Cholesky when the working rows are sparse (GROUP BY cells). Stops when
// the duality gap certified by lambda = mu / slack (and nu = mu / z on the floors) is below
// rel_gap * F, or when floating point allows no further progress.
BarrierResult
barrier_solve(const WorkingMatrix &A, const Eigen::VectorXd &c, const Eigen::VectorXd &l, Eigen::VectorXd z,
              double mu, double rel_gap)
{
	const double dual_const = 3.0 * std::pow(2.0, -2.0 / 3.0);
	BarrierResult res;
	const Eigen::ArrayXd floor_on = (l.array() > 0).cast<double>();
	const double floors = floor_on.sum();
	auto objective = [&](const Eigen::VectorXd &v) { return (c.array() / (l + v).array().square()).sum(); };
	auto barrier = [&](const Eigen::VectorXd &v, const Eigen::VectorXd &s, double mu_now) {
		double box = 0;
		if (floors > 0)
			box = (floor_on * v.array().max(1e-300).log()).sum();
		return objective(v) - mu_now * (s.array().log().sum() + box);
	};
	Eigen::VectorXd s, lo;
	A.slacks(z, s, lo);
	if (!((s.array() > 0).all() && (z.array() > 0).all()))
		return res;
	Eigen::MatrixXd H, B;
	Eigen::SparseMatrix<double> Hs, Bs;
	const Eigen::Index m = A.cols(), w = A.rows();
	Eigen::SimplicialLLT<Eigen::SparseMatrix<double>> sparse_llt;
	Eigen::VectorXd grad(m), dz(m), ds(w), z_try(m), s_try(w);
	bool stalled = false;
	for (int outer = 0; outer < 100 && !stalled; outer++) {
		// Centering: Newton steps on phi(z) = F(z) - mu (sum log(1 - A z) + sum_floors log z), until
		// the scale-free decrement (decrement / mu) is small; the certificate below tolerates loose
		// centring.
		bool centred = false;
		for (int it = 0; it < 60 && !centred; it++) {
			const Eigen::ArrayXd inv_s = s.array().inverse();
			const Eigen::ArrayXd y = (l + z).array();
			grad = (-2.0 * c.array() / y.cube() - mu * floor_on / z.array()).matrix() +
			       mu * A.transpose_times(inv_s.matrix());
			const Eigen::ArrayXd hess_diag = 6.0 * c.array() / y.square().square() + mu * floor_on / z.array().square();
			bool factored;
			if (A.use_sparse) {
				Bs = (std::sqrt(mu) * inv_s).matrix().asDiagonal() * A.sparse;
				Hs = Bs.transpose() * Bs;
				for (Eigen::Index j = 0; j < m; j++)
					Hs.coeffRef(j, j) += hess_diag[j];
				sparse_llt.compute(Hs);
				factored = sparse_llt.info() == Eigen::Success;
				if (factored)
					dz = -sparse_llt.solve(grad);
			} else {
				B = (std::sqrt(mu) * inv_s).matrix().asDiagonal() * A.dense;
				H.setZero(m, m);
				H.selfadjointView<Eigen::Lower>().rankUpdate(B.transpose());
				H.diagonal().array() += hess_diag;
				Eigen::LLT<Eigen::MatrixXd> llt(H);
				factored = llt.info() == Eigen::Success;
				if (factored)
					dz = -llt.solve(grad);
			}
			res.newton_steps++;
			const double decrement = factored ? -grad.dot(dz) : -1; // Newton decrement squared
			if (!(decrement >= 0) || !std::isfinite(decrement)) {
				stalled = true; // numerically singular: keep the last (feasible) point
				break;
			}
			ds = -A.times(dz);
			// Largest step keeping z and the slacks positive, then backtracking on phi; the slacks
			// are recomputed from z so that rounding can never leave the feasible set. Below a
			// scale-free decrement of 0.01 the full Newton step is safe (quadratic convergence).
			double alpha = 1;
			for (Eigen::Index j = 0; j < m; j++)
				if (dz[j] < 0)
					alpha = std::min(alpha, -0.99 * z[j] / dz[j]);
			for (Eigen::Index e = 0; e < w; e++)
				if (ds[e] < 0)
					alpha = std::min(alpha, -0.99 * s[e] / ds[e]);
			const double phi0 = barrier(z, s, mu);
			const bool tiny = decrement < 1e-2 * mu;
			bool accepted = false;
			for (; alpha > 1e-20; alpha *= 0.5) {
				z_try = z + alpha * dz;
				A.slacks(z_try, s_try, lo);
				if (!((s_try.array() > 0).all() && (z_try.array() > 0).all()))
					continue;
				if (tiny || barrier(z_try, s_try, mu) <= phi0 - 0.01 * alpha * decrement) {
					accepted = true;
					break;
				}
			}
			if (!accepted) {
				stalled = true; // no decrease representable: as centred as floating point allows
				break;
			}
			z.swap(z_try);
			s.swap(s_try);
			centred = decrement < 1e-4 * mu;
		}
		if (!centred)
			stalled = true;
		// Certificate from lambda = mu / s >= 0 and nu = min(mu / z, A^T lambda) >= 0 on the floors:
		// with t = A^T lambda - nu >= 0, D = sum_j min_{y > 0} (c_j y^-2 + t_j (y - l_j)) - sum lambda
		//   = sum_j (3 2^(-2/3) (c_j t_j^2)^(1/3) - t_j l_j) - sum lambda.
		const Eigen::VectorXd lambda = mu * s.array().inverse().matrix();
		const Eigen::ArrayXd g = A.transpose_times(lambda).array();
		const Eigen::ArrayXd nu = (floor_on * mu / z.array()).min(g);
		const Eigen::ArrayXd t = (g - nu).max(0.0);
		const double dual = dual_const * (c.array() * t.square()).unaryExpr([](double v) { return std::cbrt(v); }).sum() -
		                    (t * l.array()).sum() - lambda.sum();
		res.objective = objective(z);
		res.lower_bound = std::max(res.lower_bound, dual);
		if (res.objective - res.lower_bound <= rel_gap * res.objective)
			break;
		mu = std::min(mu / 10, (res.objective - res.lower_bound) / (4.0 * (static_cast<double>(w) + floors)));
		if (!(mu > 0))
			break;
	}
	res.z = z;
	res.objective = objective(z);
	res.ok = std::isfinite(res.objective);
	return res;
}

} // namespace

// Minimiser of sum_k w_k b_k^2 over private scales with x_k >= x_floor_k (x = 1/b): cutting planes
// over the rows around the barrier solver. Works in y_k = x_k s_k / epsilon (A = R diag(1/s), column
// maxima 1) shifted by the floors: z = y - l, rows A z <= h_e = 1 - A_e l, normalised by h_e. Cells
// on a row that the floors already fill (h_e <= 1e-12) are pinned at their floor. Started from
// x_start (feasible, >= the floors; 0.9 of the way from the floors to it, which is strictly
// interior when x_start is strictly above the floor of every cell not pinned) and the seed rows.
// Returns the inverse scales x (0 for exact cells), or an empty vector when the solver failed.
std::vector<double>
weighted_inverse(const ConstraintSet &c, const std::vector<double> &colmax, const std::vector<std::size_t> &argmax,
                 const std::vector<double> &weight, const std::vector<double> &x_floor,
                 const std::vector<double> &x_start, const std::vector<std::size_t> &seed_rows, double epsilon,
                 AllocationStats *stats)
{
	const std::size_t m = c.cells, count = c.count();
	// Floors in y units and the rows' room above them.
	std::vector<double> l_cell(m, 0.0);
	bool any_floor = false;
	for (std::size_t k = 0; k < m; k++)
		if (colmax[k] > 0 && !x_floor.empty() && x_floor[k] > 0) {
			l_cell[k] = x_floor[k] * colmax[k] / epsilon;
			any_floor = true;
		}
	std::vector<double> h(any_floor ? count : 0, 1.0);
	std::vector<char> pinned(m, 0);
	if (any_floor) {
		std::vector<double> l_x(m, 0.0); // A_e l = sum_k r_k(e) l_k / s_k
		for (std::size_t k = 0; k < m; k++)
			if (colmax[k] > 0)
				l_x[k] = l_cell[k] / colmax[k];
		for (std::size_t e = 0; e < count; e++) {
			h[e] = 1 - row_dot(c, e, l_x.data());
			if (h[e] <= 1e-12)
				c.for_each(e, [&pinned](std::size_t k, double v) {
					if (v > 0)
						pinned[k] = 1;
				});
		}
	}
	auto room = [&](std::size_t e) { return any_floor ? h[e] : 1.0; };

	std::vector<std::size_t> cols;                      // free cells
	std::vector<Eigen::Index> position(m, -1);          // cell -> column of the working matrix
	for (std::size_t k = 0; k < m; k++)
		if (colmax[k] > 0 && !pinned[k]) {
			position[k] = static_cast<Eigen::Index>(cols.size());
			cols.push_back(k);
		}
	const Eigen::Index ma = static_cast<Eigen::Index>(cols.size());
	std::vector<double> x(m, 0);
	for (std::size_t k = 0; k < m; k++)
		if (pinned[k])
			x[k] = x_floor[k];
	if (ma == 0) {
		if (stats)
			stats->relative_gap = 0;
		return x;
	}

	// Objective sum_j c_j (l_j + z_j)^-2 with c_j = w_j s_j^2 (1/epsilon^2 dropped), divided by its
	// value at the start.
	Eigen::VectorXd z0(ma), cw(ma), l(ma), y_start(ma);
	for (Eigen::Index j = 0; j < ma; j++) {
		const std::size_t k = cols[static_cast<std::size_t>(j)];
		l[j] = l_cell[k];
		y_start[j] = x_start[k] * colmax[k] / epsilon;
		z0[j] = 0.9 * (y_start[j] - l[j]);
		cw[j] = weight[k] * colmax[k] * colmax[k];
	}
	const double start_value = (cw.array() / y_start.array().square()).sum();
	if (!(start_value > 0) || !std::isfinite(start_value))
		return {};
	cw /= start_value;

	std::vector<char> in_set(count, 0);
	std::vector<std::size_t> work;
	auto add_row = [&](std::size_t e) {
		if (e < count && !in_set[e] && room(e) > 1e-12) {
			bool free_cell = false;
			c.for_each(e, [&](std::size_t k, double v) { free_cell |= v > 0 && position[k] >= 0; });
			in_set[e] = 1;
			if (free_cell)
				work.push_back(e);
		}
	};
	for (std::size_t e : seed_rows)
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
			const std::size_t e = work[static_cast<std::size_t>(filled)];
			const double he = room(e);
			A.dense.row(filled).setZero();
			double nnz = 0;
			c.for_each(e, [&](std::size_t k, double v) {
				if (v != 0 && position[k] >= 0) {
					A.dense(filled, position[k]) = v / colmax[k] / he;
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

	std::vector<double> zc(m, 0.0), v(count);
	std::vector<char> covered(m, 0);
	const std::size_t batch = 16;
	Eigen::VectorXd z = z0;
	double mu = 0.1 / static_cast<double>(work.size() + cols.size());
	BarrierResult res;
	double max_v = 0;
	for (std::size_t round = 0; round < 1000; round++) {
		report_progress("allocation: cutting-plane rounds", static_cast<double>(round), 1000); // may throw (cancel)
		sync_matrix();
		res = barrier_solve(A, cw, l, z, mu, 1e-10);
		if (stats) {
			stats->rounds += 1;
			stats->newton_steps += res.newton_steps;
			stats->working_rows = std::max(stats->working_rows, work.size());
		}
		if (!res.ok)
			return {};
		// Separation over every row: v_e = sum_k r_k(e) z_k / (s_k h_e) (<= 1 when feasible).
		for (Eigen::Index j = 0; j < ma; j++)
			zc[cols[static_cast<std::size_t>(j)]] = res.z[j] / colmax[cols[static_cast<std::size_t>(j)]];
		max_v = 0;
		for (std::size_t e = 0; e < count; e++) {
			const double he = room(e);
			v[e] = he > 1e-12 ? row_dot(c, e, zc.data()) / he : 0.0;
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
		z = res.z * (0.98 / max_v);
		mu = std::max(1e-4 * res.objective, 2 * (res.objective - res.lower_bound)) / static_cast<double>(work.size());
	}
	if (!(max_v <= 1 + 1e-12))
		return {};
	const double shrink = std::max(max_v, 0.0) > 0 ? max_v : 1.0; // touch the boundary exactly
	if (stats) { // the working-set bound also bounds the full problem
		const double final_objective = (cw.array() / (l + res.z / shrink).array().square()).sum();
		stats->relative_gap = std::max(0.0, (final_objective - res.lower_bound) / final_objective);
	}
	for (Eigen::Index j = 0; j < ma; j++) {
		const std::size_t k = cols[static_cast<std::size_t>(j)];
		x[k] = epsilon * (l[j] + res.z[j] / shrink) / colmax[k];
	}
	return x;
}

} // namespace detail
} // namespace dxpriv
