// Multi-linear queries: privacy constraints over a sufficient edge set, budget allocation between
// cells (Strategies 1-3 of MECHANISMS.md §3.8 and the exact optimum) and per-cell noise plans.
#include "core/allocation.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>

#include <Eigen/Dense>
#include <Eigen/Sparse>

#include "core/error.h"

namespace dxpriv {

namespace {

using Matrix = std::vector<std::vector<double>>;

// Rejects an epsilon that is not a positive finite number.
void
check_epsilon(double epsilon)
{
	if (!std::isfinite(epsilon) || !(epsilon > 0))
		throw CoreError(ErrorKind::InvalidParameter, "epsilon must be positive and finite",
		                "Give the query a positive privacy budget.");
}

// Rejects a cell matrix whose shape does not match n points, or with a non-finite weight.
void
check_cells(const Matrix &q, std::size_t n)
{
	if (q.empty())
		throw CoreError(ErrorKind::Internal, "multi-linear query has no cells");
	for (const auto &cell : q) {
		if (cell.size() != n)
			throw CoreError(ErrorKind::Internal, "query weight vector does not match the sub-universe size");
		for (double w : cell)
			if (!std::isfinite(w))
				throw CoreError(ErrorKind::DataException, "weight of the query is not finite for some domain value",
				                "Check the query expression for overflow or division by zero on the declared domains.");
	}
}

// Validates the sub-universe like generalized_sensitivity and returns its number of points.
std::size_t
check_sub_universe(const SubUniverse &sub)
{
	const std::size_t n = sub.size();
	if (!(sub.presence > 0))
		throw CoreError(ErrorKind::InvalidParameter, "presence distance must be positive",
		                "Give a positive number, or infinity for the bounded model (public row count).");
	for (std::size_t c = 0; c < sub.domains.size(); c++)
		sub.metrics[c].validate(sub.domains[c]);
	return n;
}

// Validates an explicit metric: square, symmetric, zero diagonal, entries >= 0 (may be +inf).
void
check_dense_metric(const Matrix &d)
{
	const std::size_t n = d.size();
	for (std::size_t i = 0; i < n; i++) {
		if (d[i].size() != n)
			throw CoreError(ErrorKind::InvalidParameter, "metric matrix is not square");
		if (d[i][i] != 0)
			throw CoreError(ErrorKind::InvalidParameter, "metric matrix has a non-zero diagonal entry");
		for (std::size_t j = 0; j < i; j++)
			if (!(d[i][j] >= 0) || d[i][j] != d[j][i])
				throw CoreError(ErrorKind::InvalidParameter, "metric matrix is not symmetric and non-negative");
	}
}

// Throws the work-cap error of build_constraints / plain_dp_scale.
[[noreturn]] void
throw_work_limit()
{
	throw CoreError(ErrorKind::ProgramLimit, "the multi-cell query needs too many privacy constraints",
	                "Reference fewer protected columns, declare coarser domains or ask for fewer cells.");
}

// One edge of a column's sufficient edge set: points i < j at finite distance d.
struct ColumnEdge {
	std::uint32_t i, j;
	double d;
};

// Largest per-column edge list kept in memory while visiting the lines (64 MB).
constexpr std::size_t kMaxCachedEdges = std::size_t{1} << 22;

// Aborts an edge count from inside ColumnMetric::for_each_edge.
struct EdgeLimitExceeded {};

// Number of edges of the sufficient edge set of a column metric (ColumnMetric::for_each_edge),
// or SIZE_MAX once it exceeds limit. Closed forms for Absolute (k-1), Discrete (k(k-1)/2 or 0)
// and PerValue (k(k-1)/2, an upper bound when some budgets are infinite), so that a huge domain
// is rejected at once; other kinds are enumerated, stopping at the limit.
std::size_t
count_column_edges(const ColumnMetric &metric, const Domain &dom, double limit)
{
	const std::size_t k = dom.size();
	if (k < 2 || metric.kind() == MetricKind::None)
		return 0;
	const double pairs = 0.5 * static_cast<double>(k) * static_cast<double>(k - 1);
	double closed = -1;
	if (metric.kind() == MetricKind::Absolute)
		closed = static_cast<double>(k - 1);
	else if (metric.kind() == MetricKind::Discrete)
		closed = metric.distance(dom, 0, 1) < kInfinity ? pairs : 0;
	else if (metric.kind() == MetricKind::PerValue)
		closed = pairs;
	if (closed >= 0)
		return closed > limit ? std::numeric_limits<std::size_t>::max() : static_cast<std::size_t>(closed);
	std::size_t count = 0;
	try {
		metric.for_each_edge(dom, [&count, limit](std::size_t, std::size_t, double) {
			if (static_cast<double>(++count) > limit)
				throw EdgeLimitExceeded{};
		});
	} catch (const EdgeLimitExceeded &) {
		return std::numeric_limits<std::size_t>::max();
	}
	return count;
}

// Sufficient edge set of every column of sub; empty for a column whose list is not cached
// (more than kMaxCachedEdges edges: it is enumerated again on every line). Throws the work-cap
// error when (edges over all lines + presence edges) x m exceeds kMaxConstraintWork.
std::vector<std::vector<ColumnEdge>>
column_edges(const SubUniverse &sub, std::size_t n, std::size_t m, std::vector<std::size_t> &counts)
{
	const double md = static_cast<double>(m);
	double work = std::isfinite(sub.presence) ? static_cast<double>(n) * md : 0.0;
	std::vector<std::vector<ColumnEdge>> edges(sub.domains.size());
	counts.assign(sub.domains.size(), 0);
	for (std::size_t c = 0; c < sub.domains.size(); c++) {
		const Domain &dom = sub.domains[c];
		const double lines = static_cast<double>(n / dom.size());
		const double limit = (kMaxConstraintWork - work) / (lines * md);
		counts[c] = count_column_edges(sub.metrics[c], dom, limit);
		if (counts[c] == std::numeric_limits<std::size_t>::max())
			throw_work_limit();
		work += static_cast<double>(counts[c]) * lines * md;
		if (counts[c] > 0 && counts[c] <= kMaxCachedEdges) {
			edges[c].reserve(counts[c]);
			sub.metrics[c].for_each_edge(dom, [&edges, c](std::size_t i, std::size_t j, double d) {
				edges[c].push_back(ColumnEdge{static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j), d});
			});
		}
	}
	if (work > kMaxConstraintWork)
		throw_work_limit();
	return edges;
}

// Mixes the bits of one double into a running row hash.
inline std::uint64_t
hash_step(std::uint64_t h, double v)
{
	std::uint64_t bits;
	std::memcpy(&bits, &v, sizeof bits);
	h = ((h << 23) | (h >> 41)) ^ bits;
	return h * 0x9E3779B97F4A7C15ULL;
}

// Final avalanche of a row hash (murmur3 fmix64), so that low bits depend on every entry.
inline std::uint64_t
hash_finish(std::uint64_t h)
{
	h ^= h >> 33;
	h *= 0xFF51AFD7ED558CCDULL;
	h ^= h >> 33;
	h *= 0xC4CEB9FE1A85EC53ULL;
	return h ^ (h >> 33);
}

// Accumulates normalised rows, dropping all-zero rows and exact duplicates (open addressing).
class RowCollector {
public:
	// Starts an empty set of rows with m entries each. expected_rows (the number of edges) sizes
	// the storage: a small reservation first, then, after kSampleRows edges, one reservation for
	// the rest extrapolated from the share of rows that survived deduplication so far (growth by
	// doubling costs about as much as building the rows; reserving every edge wastes memory when
	// most rows are duplicates, as for GROUP BY indicator cells).
	RowCollector(std::size_t m, double expected_rows) : m_(m), expected_(expected_rows), scratch_(m)
	{
		set_.cells = m;
		slots_.assign(1024, 0);
		reserve_rows(std::min(expected_rows, static_cast<double>(kSampleRows)));
	}

	// Scratch row the caller fills before add().
	double *scratch() { return scratch_.data(); }

	// Adds the scratch row (already divided by d) unless it is zero or already present.
	void add()
	{
		if (++attempts_ == kSampleRows) {
			const double kept = static_cast<double>(hashes_.size()) / static_cast<double>(kSampleRows);
			reserve_rows(static_cast<double>(hashes_.size()) +
			             1.05 * kept * std::max(0.0, expected_ - static_cast<double>(kSampleRows)) + 16);
		}
		bool nonzero = false, infinite = false;
		std::uint64_t h = 0x84222325CBF29CE4ULL;
		for (std::size_t k = 0; k < m_; k++) {
			const double v = scratch_[k];
			infinite |= !(v < kInfinity); // +inf from a zero or underflowing distance (or NaN)
			nonzero |= v != 0;
			h = hash_step(h, v);
		}
		if (infinite)
			throw CoreError(ErrorKind::ProgramLimit, "noise scale of the query exceeds the limit of 1e15",
			                "Raise epsilon, narrow the domain of the aggregated column, or use a coarser metric.");
		if (!nonzero)
			return;
		h = hash_finish(h);
		const std::size_t mask = slots_.size() - 1;
		std::size_t pos = static_cast<std::size_t>(h) & mask;
		while (slots_[pos] != 0) {
			const std::size_t idx = slots_[pos] - 1;
			if (hashes_[idx] == h && std::equal(scratch_.begin(), scratch_.end(), set_.rows.begin() + idx * m_))
				return;
			pos = (pos + 1) & mask;
		}
		if (set_.rows.size() + m_ > kMaxConstraintEntries)
			throw CoreError(ErrorKind::ProgramLimit, "the multi-cell query needs too many privacy constraints",
			                "Reference fewer protected columns, declare coarser domains or ask for fewer cells.");
		const std::size_t idx = hashes_.size();
		set_.rows.insert(set_.rows.end(), scratch_.begin(), scratch_.end());
		hashes_.push_back(h);
		slots_[pos] = idx + 1;
		if (2 * hashes_.size() > slots_.size())
			rehash();
	}

	// Drops rows with a single non-zero entry below its column maximum (dominated by the row that
	// attains the maximum) and returns the set.
	ConstraintSet finish()
	{
		std::vector<double> colmax(m_, 0);
		const std::size_t count = set_.count();
		for (std::size_t e = 0; e < count; e++)
			for (std::size_t k = 0; k < m_; k++)
				colmax[k] = std::max(colmax[k], set_.rows[e * m_ + k]);
		std::size_t out = 0;
		for (std::size_t e = 0; e < count; e++) {
			const double *r = set_.rows.data() + e * m_;
			std::size_t nonzero = 0, last = 0;
			for (std::size_t k = 0; k < m_ && nonzero < 2; k++)
				if (r[k] != 0) {
					nonzero++;
					last = k;
				}
			if (nonzero == 1 && r[last] < colmax[last])
				continue;
			if (out != e)
				std::copy(r, r + m_, set_.rows.begin() + out * m_);
			out++;
		}
		set_.rows.resize(out * m_);
		set_.rows.shrink_to_fit();
		return std::move(set_);
	}

private:
	static constexpr std::size_t kSampleRows = 1 << 16;

	// Reserves storage for `rows` rows (capped at kMaxConstraintEntries entries).
	void reserve_rows(double rows)
	{
		const double entries = std::min(rows * static_cast<double>(m_), static_cast<double>(kMaxConstraintEntries));
		if (entries > static_cast<double>(set_.rows.capacity()))
			set_.rows.reserve(static_cast<std::size_t>(entries));
	}

	// Doubles the slot table.
	void rehash()
	{
		slots_.assign(slots_.size() * 2, 0);
		const std::size_t mask = slots_.size() - 1;
		for (std::size_t idx = 0; idx < hashes_.size(); idx++) {
			const std::uint64_t h = hashes_[idx];
			std::size_t pos = static_cast<std::size_t>(h) & mask;
			while (slots_[pos] != 0)
				pos = (pos + 1) & mask;
			slots_[pos] = idx + 1;
		}
	}

	std::size_t m_;
	double expected_;            // edges the caller will offer
	std::size_t attempts_ = 0;   // edges offered so far
	std::vector<double> scratch_;
	ConstraintSet set_;
	std::vector<std::uint64_t> hashes_; // per stored row
	std::vector<std::size_t> slots_;    // row index + 1, 0 = empty
};

// Row of edge (u, v) at distance d: r_k = |q_k(u) - q_k(v)| / d (0 where the weights agree,
// +inf where they differ at distance 0).
inline void
fill_row(const Matrix &q, std::size_t u, std::size_t v, double d, double *r)
{
	const std::size_t m = q.size();
	if (d > 0) { // branch-free common case
		for (std::size_t k = 0; k < m; k++)
			r[k] = std::fabs(q[k][u] - q[k][v]) / d;
	} else {
		for (std::size_t k = 0; k < m; k++)
			r[k] = q[k][u] == q[k][v] ? 0 : kInfinity;
	}
}

// Column maxima s_k = max_e r_k(e) of a constraint set; argmax (when given) receives the first
// row attaining each maximum (count() for an all-zero column).
std::vector<double>
column_max(const ConstraintSet &c, std::vector<std::size_t> *argmax = nullptr)
{
	std::vector<double> s(c.cells, 0);
	std::vector<std::size_t> arg(c.cells, c.count());
	for (std::size_t e = 0; e < c.count(); e++) {
		const double *r = c.row(e);
		for (std::size_t k = 0; k < c.cells; k++)
			if (r[k] > s[k]) {
				s[k] = r[k];
				arg[k] = e;
			}
	}
	if (argmax)
		*argmax = std::move(arg);
	return s;
}

// Strategy 3 in its exact limit (progressive filling): all unfrozen x_k = 1/b_k rise together;
// when a row's remaining budget reaches 0 every cell on it freezes. Returns x; the rows that froze
// cells are appended to `binding` when given. Lazy event queue: a row's binding level computed
// with an older set of frozen cells is a lower bound of its true level (freezing only slows the
// row down), so popping the smallest key and recomputing stale keys finds the rows in order.
std::vector<double>
water_fill(const ConstraintSet &c, const std::vector<double> &colmax, double epsilon,
           std::vector<std::size_t> *binding)
{
	const std::size_t m = c.cells, count = c.count();
	std::vector<char> active(m);
	std::size_t n_active = 0;
	for (std::size_t k = 0; k < m; k++) {
		active[k] = colmax[k] > 0;
		n_active += active[k];
	}
	std::vector<double> x(m, 0);
	struct Event {
		double level;
		std::uint32_t row, version;
		// Min-heap order on level (std heaps are max-heaps).
		bool operator<(const Event &o) const { return level > o.level; }
	};
	std::uint32_t version = 0;
	// Level at which row e binds given the cells frozen so far (+inf when no cell of e is active).
	auto binding_level = [&](std::size_t e) {
		const double *r = c.row(e);
		double rate = 0, used = 0;
		for (std::size_t k = 0; k < m; k++) {
			if (active[k])
				rate += r[k];
			else
				used += r[k] * x[k];
		}
		return rate > 0 ? std::max(0.0, epsilon - used) / rate : kInfinity;
	};
	std::vector<Event> heap;
	heap.reserve(count);
	for (std::size_t e = 0; e < count; e++) {
		const double level = binding_level(e);
		if (level < kInfinity)
			heap.push_back(Event{level, static_cast<std::uint32_t>(e), version});
	}
	std::make_heap(heap.begin(), heap.end());
	double level = 0;
	while (n_active > 0 && !heap.empty()) {
		std::pop_heap(heap.begin(), heap.end());
		Event ev = heap.back();
		heap.pop_back();
		if (ev.version != version) { // stale: recompute, requeue unless the row is done
			ev.level = binding_level(ev.row);
			ev.version = version;
			if (ev.level < kInfinity) {
				heap.push_back(ev);
				std::push_heap(heap.begin(), heap.end());
			}
			continue;
		}
		level = std::max(level, ev.level);
		const double *r = c.row(ev.row);
		for (std::size_t k = 0; k < m; k++)
			if (active[k] && r[k] > 0) {
				active[k] = 0;
				x[k] = level;
				n_active--;
			}
		if (binding)
			binding->push_back(ev.row);
		version++;
	}
	if (n_active > 0)
		throw CoreError(ErrorKind::Internal, "budget distribution left a cell without a binding constraint");
	return x;
}

// Scales from inverse scales x (0 -> exact answer), raised if rounding left them infeasible.
std::vector<double>
scales_from_inverse(const ConstraintSet &c, const std::vector<double> &x, double epsilon)
{
	std::vector<double> b(x.size(), 0);
	for (std::size_t k = 0; k < x.size(); k++)
		b[k] = x[k] > 0 ? 1 / x[k] : 0;
	const double ratio = privacy_ratio(c, b, epsilon);
	if (ratio > 1)
		for (double &v : b)
			v *= ratio;
	return b;
}

// Number of cells that get noise (scale > 0).
std::size_t
count_noisy(const std::vector<double> &b)
{
	return static_cast<std::size_t>(std::count_if(b.begin(), b.end(), [](double v) { return v > 0; }));
}

// Objective of the allocation problem: sum of squared scales.
double
sum_squares(const std::vector<double> &b)
{
	double s = 0;
	for (double v : b)
		s += v * v;
	return s;
}

// Strategy 1: b_k = m_active * s_k / epsilon.
std::vector<double>
equal_split(const std::vector<double> &colmax, std::size_t n_active, double epsilon)
{
	std::vector<double> b(colmax.size(), 0);
	for (std::size_t k = 0; k < b.size(); k++)
		if (colmax[k] > 0)
			b[k] = static_cast<double>(n_active) * colmax[k] / epsilon;
	return b;
}

// Strategy 2: one scale max_e sum_k r_k(e) / epsilon for every noisy cell.
std::vector<double>
equal_scale(const ConstraintSet &c, const std::vector<double> &colmax, double epsilon)
{
	double worst = 0;
	for (std::size_t e = 0; e < c.count(); e++) {
		const double *r = c.row(e);
		double s = 0;
		for (std::size_t k = 0; k < c.cells; k++)
			s += r[k];
		worst = std::max(worst, s);
	}
	std::vector<double> b(colmax.size(), 0);
	for (std::size_t k = 0; k < b.size(); k++)
		if (colmax[k] > 0)
			b[k] = worst / epsilon;
	return b;
}

// Slacks s = 1 - A y with a compensated (Dot2) sum: accurate even when A y is within 1e-16 of 1,
// which the barrier's dual estimate mu / s and its gap certificate depend on.
void
compensated_slacks(const Eigen::MatrixXd &A, const Eigen::VectorXd &y, Eigen::VectorXd &s, Eigen::VectorXd &lo)
{
	const Eigen::Index w = A.rows(), m = A.cols();
	s.setOnes(w);
	lo.setZero(w);
	for (Eigen::Index j = 0; j < m; j++) {
		const double yj = y[j];
		const double *col = A.data() + j * w;
		for (Eigen::Index e = 0; e < w; e++) {
			const double p = col[e] * yj;
			const double pe = std::fma(col[e], yj, -p); // col[e] * yj == p + pe exactly
			const double hi = s[e];
			const double t = hi - p;                    // TwoSum(hi, -p)
			const double z = t - hi;
			const double te = (hi - (t - z)) + (-p - z);
			s[e] = t;
			lo[e] += te - pe;
		}
	}
	s += lo;
}

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
// The Newton matrix diag(6 c y^-4) + mu A^T diag(s^-2) A is assembled densely, or from
// `sparse` (the same matrix as A, stored sparse; may be null) with a sparse Cholesky when the
// working rows are sparse (GROUP BY cells). Stops when the duality gap certified by
// lambda = mu / slack is below rel_gap * F, or when floating point allows no further progress.
BarrierResult
barrier_solve(const Eigen::MatrixXd &A, const Eigen::SparseMatrix<double> *sparse, const Eigen::VectorXd &c,
              Eigen::VectorXd y, double mu, double rel_gap)
{
	const Eigen::Index m = A.cols(), w = A.rows();
	const double dual_const = 3.0 * std::pow(2.0, -2.0 / 3.0);
	BarrierResult res;
	auto objective = [&c](const Eigen::VectorXd &v) { return (c.array() / v.array().square()).sum(); };
	auto barrier = [&](const Eigen::VectorXd &v, const Eigen::VectorXd &s, double mu_now) {
		return objective(v) - mu_now * s.array().log().sum();
	};
	Eigen::VectorXd s, lo;
	compensated_slacks(A, y, s, lo);
	if (!((s.array() > 0).all() && (y.array() > 0).all()))
		return res;
	Eigen::MatrixXd H, B;
	Eigen::SparseMatrix<double> Hs, Bs;
	Eigen::SimplicialLLT<Eigen::SparseMatrix<double>> sparse_llt;
	Eigen::VectorXd grad(m), dy(m), ds(w), y_try(m), s_try(w);
	bool stalled = false;
	for (int outer = 0; outer < 100 && !stalled; outer++) {
		// Centering: Newton steps on phi(y) = F(y) - mu sum log(1 - A y), until the scale-free
		// decrement (decrement / mu) is small; the certificate below tolerates loose centring.
		bool centred = false;
		for (int it = 0; it < 60 && !centred; it++) {
			const Eigen::ArrayXd inv_s = s.array().inverse();
			grad = (-2.0 * c.array() / y.array().cube()).matrix() + mu * (A.transpose() * inv_s.matrix());
			const Eigen::ArrayXd hess_diag = 6.0 * c.array() / y.array().square().square();
			bool factored;
			if (sparse) {
				Bs = (std::sqrt(mu) * inv_s).matrix().asDiagonal() * (*sparse);
				Hs = Bs.transpose() * Bs;
				for (Eigen::Index j = 0; j < m; j++)
					Hs.coeffRef(j, j) += hess_diag[j];
				sparse_llt.compute(Hs);
				factored = sparse_llt.info() == Eigen::Success;
				if (factored)
					dy = -sparse_llt.solve(grad);
			} else {
				B = (std::sqrt(mu) * inv_s).matrix().asDiagonal() * A;
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
			ds = -(A * dy);
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
				compensated_slacks(A, y_try, s_try, lo);
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
		const Eigen::VectorXd g = A.transpose() * lambda;
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

// Exact minimiser of sum_k b_k^2 (x_k = 1/b_k): cutting planes over the rows around the barrier
// solver, started from the binding rows of Strategy 3. Returns the inverse scales x (0 for
// exact cells), or an empty vector when the solver failed.
std::vector<double>
optimal_inverse(const ConstraintSet &c, const std::vector<double> &colmax, const std::vector<std::size_t> &argmax,
                const std::vector<double> &x3,
                const std::vector<std::size_t> &binding, double epsilon, AllocationStats *stats)
{
	const std::size_t m = c.cells, count = c.count();
	std::vector<std::size_t> cols; // active cells
	for (std::size_t k = 0; k < m; k++)
		if (colmax[k] > 0)
			cols.push_back(k);
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

	Eigen::MatrixXd A;
	Eigen::Index filled = 0;
	auto sync_matrix = [&]() {
		A.conservativeResize(static_cast<Eigen::Index>(work.size()), ma);
		for (; filled < static_cast<Eigen::Index>(work.size()); filled++) {
			const double *r = c.row(work[filled]);
			for (Eigen::Index j = 0; j < ma; j++)
				A(filled, j) = r[cols[j]] / colmax[cols[j]];
		}
	};

	using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
	const Eigen::Map<const RowMajor> R(c.rows.data(), static_cast<Eigen::Index>(count), static_cast<Eigen::Index>(m));
	Eigen::VectorXd z = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(m)), v;
	const std::size_t batch = std::max<std::size_t>(cols.size(), 16);

	Eigen::VectorXd y = 0.9 * y3;
	double mu = 0.1 / static_cast<double>(work.size() + cols.size());
	BarrierResult res;
	double max_v = 0;
	for (std::size_t round = 0; round < 1000; round++) {
		sync_matrix();
		res = barrier_solve(A, cw, y, mu, 1e-11);
		if (stats) {
			stats->rounds = round + 1;
			stats->newton_steps += res.newton_steps;
			stats->working_rows = work.size();
		}
		if (!res.ok)
			return {};
		// Separation over every row: v_e = sum_k r_k(e) y_k / s_k (<= 1 when feasible).
		for (Eigen::Index j = 0; j < ma; j++)
			z[static_cast<Eigen::Index>(cols[j])] = res.y[j] / colmax[cols[j]];
		v = R * z;
		max_v = v.maxCoeff();
		if (max_v <= 1 + 1e-12)
			break;
		std::vector<std::size_t> violated;
		for (std::size_t e = 0; e < count; e++)
			if (v[static_cast<Eigen::Index>(e)] > 1 + 1e-12 && !in_set[e])
				violated.push_back(e);
		if (violated.empty())
			return {}; // violation on a working row: numerical failure
		if (violated.size() > batch) {
			std::nth_element(violated.begin(), violated.begin() + static_cast<std::ptrdiff_t>(batch), violated.end(),
			                 [&v](std::size_t a, std::size_t b) {
				                 return v[static_cast<Eigen::Index>(a)] > v[static_cast<Eigen::Index>(b)];
			                 });
			violated.resize(batch);
		}
		for (std::size_t e : violated)
			add_row(e);
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
	for (Eigen::Index j = 0; j < ma; j++)
		x[cols[j]] = epsilon * (res.y[j] / max_v) / colmax[cols[j]]; // touch the boundary exactly
	return x;
}

} // namespace

// Constraints of several cells over a sub-universe (presence and one-column edges).
ConstraintSet
build_constraints(const SubUniverse &sub, const std::vector<std::vector<double>> &q)
{
	const std::size_t n = check_sub_universe(sub);
	check_cells(q, n);
	const std::size_t m = q.size();
	std::vector<std::size_t> counts;
	const std::vector<std::vector<ColumnEdge>> edges = column_edges(sub, n, m, counts);
	double expected = std::isfinite(sub.presence) ? static_cast<double>(n) : 0.0;
	for (std::size_t c = 0; c < counts.size(); c++)
		expected += static_cast<double>(counts[c]) * static_cast<double>(n / sub.domains[c].size());

	RowCollector rows(m, expected);
	double *r = rows.scratch();
	if (std::isfinite(sub.presence))
		for (std::size_t u = 0; u < n; u++) {
			for (std::size_t k = 0; k < m; k++)
				r[k] = std::fabs(q[k][u]) / sub.presence; // q(⊥) = 0
			rows.add();
		}

	// Lines along column c: all points equal except column c, which moves by `stride`.
	std::size_t stride = n;
	for (std::size_t c = 0; c < sub.domains.size(); c++) {
		const std::size_t k_size = sub.domains[c].size();
		stride /= k_size;
		if (counts[c] == 0)
			continue;
		const std::size_t block = k_size * stride;
		for (std::size_t outer = 0; outer < n; outer += block)
			for (std::size_t off = 0; off < stride; off++) {
				const std::size_t base = outer + off;
				auto visit = [&](std::size_t i, std::size_t j, double d) {
					fill_row(q, base + i * stride, base + j * stride, d, r);
					rows.add();
				};
				if (!edges[c].empty())
					for (const ColumnEdge &e : edges[c])
						visit(e.i, e.j, e.d);
				else
					sub.metrics[c].for_each_edge(sub.domains[c], visit);
			}
	}
	return rows.finish();
}

// Constraints of several cells over an explicit metric (all finite-distance pairs).
ConstraintSet
build_constraints_dense(const std::vector<std::vector<double>> &d, const std::vector<std::vector<double>> &q)
{
	check_dense_metric(d);
	const std::size_t n = d.size();
	check_cells(q, n);
	const std::size_t m = q.size();
	if (0.5 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(m) > kMaxConstraintWork)
		throw_work_limit();
	RowCollector rows(m, 0.5 * static_cast<double>(n) * static_cast<double>(n));
	double *r = rows.scratch();
	for (std::size_t i = 0; i < n; i++)
		for (std::size_t j = i + 1; j < n; j++) {
			if (!(d[i][j] < kInfinity))
				continue;
			fill_row(q, i, j, d[i][j], r);
			rows.add();
		}
	return rows.finish();
}

// SQL-facing name of a strategy.
const char *
strategy_name(AllocationStrategy s)
{
	switch (s) {
	case AllocationStrategy::EqualSplit:
		return "equal_split";
	case AllocationStrategy::EqualScale:
		return "equal_scale";
	case AllocationStrategy::BudgetDistribution:
		return "algorithm3";
	case AllocationStrategy::Optimal:
		return "optimal";
	}
	return "unknown";
}

// Strategy from its name (case-insensitive).
bool
parse_strategy(const std::string &name, AllocationStrategy &out)
{
	std::string lower(name);
	for (char &ch : lower)
		ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
	for (AllocationStrategy s : {AllocationStrategy::EqualSplit, AllocationStrategy::EqualScale,
	                             AllocationStrategy::BudgetDistribution, AllocationStrategy::Optimal})
		if (lower == strategy_name(s)) {
			out = s;
			return true;
		}
	return false;
}

// Laplace scales of the cells under the chosen strategy.
std::vector<double>
allocate(const ConstraintSet &c, AllocationStrategy s, double epsilon, AllocationStats *stats)
{
	check_epsilon(epsilon);
	if (c.cells == 0 || c.rows.size() % c.cells != 0)
		throw CoreError(ErrorKind::Internal, "malformed constraint set");
	if (stats)
		*stats = AllocationStats{};
	std::vector<std::size_t> argmax;
	const std::vector<double> colmax = column_max(c, &argmax);
	std::size_t n_active = 0;
	for (double v : colmax)
		n_active += v > 0;
	if (stats)
		stats->winner = s;
	if (n_active <= 1) // one noisy cell: s/epsilon is optimal for every strategy
		return equal_split(colmax, n_active, epsilon);

	switch (s) {
	case AllocationStrategy::EqualSplit:
		return equal_split(colmax, n_active, epsilon);
	case AllocationStrategy::EqualScale:
		return equal_scale(c, colmax, epsilon);
	case AllocationStrategy::BudgetDistribution:
		return scales_from_inverse(c, water_fill(c, colmax, epsilon, nullptr), epsilon);
	case AllocationStrategy::Optimal:
		break;
	}

	std::vector<std::size_t> binding;
	const std::vector<double> x3 = water_fill(c, colmax, epsilon, &binding);
	std::vector<double> best = scales_from_inverse(c, x3, epsilon);
	AllocationStrategy winner = AllocationStrategy::BudgetDistribution;
	for (auto [cand, who] : {std::make_pair(equal_split(colmax, n_active, epsilon), AllocationStrategy::EqualSplit),
	                         std::make_pair(equal_scale(c, colmax, epsilon), AllocationStrategy::EqualScale)})
		if (sum_squares(cand) < sum_squares(best)) {
			best = cand;
			winner = who;
		}
	const std::vector<double> x = optimal_inverse(c, colmax, argmax, x3, binding, epsilon, stats);
	if (!x.empty()) {
		std::vector<double> b = scales_from_inverse(c, x, epsilon);
		if (sum_squares(b) <= sum_squares(best)) {
			best = b;
			winner = AllocationStrategy::Optimal;
		}
	}
	if (stats)
		stats->winner = winner;
	return best;
}

// Worst-case privacy loss of an allocation, in units of epsilon.
double
privacy_ratio(const ConstraintSet &c, const std::vector<double> &scales, double epsilon)
{
	if (scales.size() != c.cells)
		throw CoreError(ErrorKind::Internal, "allocation has a different number of cells than the constraints");
	const std::size_t m = c.cells, count = c.count();
	if (count == 0)
		return 0;
	Eigen::VectorXd inv = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(m));
	std::vector<std::size_t> exact; // cells without noise (scale 0, negative or NaN)
	for (std::size_t k = 0; k < m; k++) {
		if (scales[k] > 0)
			inv[static_cast<Eigen::Index>(k)] = 1 / (scales[k] * epsilon);
		else
			exact.push_back(k);
	}
	if (!exact.empty())
		for (std::size_t e = 0; e < count; e++)
			for (std::size_t k : exact)
				if (c.row(e)[k] > 0)
					return kInfinity;
	using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
	const Eigen::Map<const RowMajor> R(c.rows.data(), static_cast<Eigen::Index>(count), static_cast<Eigen::Index>(m));
	const Eigen::VectorXd usage = R * inv;
	return usage.maxCoeff();
}

// Refuses an allocation that is not private (last line of defence before any release).
void
check_allocation(const ConstraintSet &c, const std::vector<double> &scales, double epsilon)
{
	if (!(privacy_ratio(c, scales, epsilon) <= 1 + 1e-9))
		throw CoreError(ErrorKind::Internal, "allocation violates the privacy condition");
}

// Calibrates several cells of one query together (grids as plan_linear_query, then allocation).
MultiLinearPlan
plan_multi_linear(const SubUniverse &sub, const std::vector<std::vector<double>> &q, double epsilon,
                  AllocationStrategy s)
{
	check_epsilon(epsilon);
	const std::size_t m = q.size();
	ConstraintSet raw = build_constraints(sub, q);
	const std::vector<double> raw_scales = allocate(raw, s, epsilon);
	std::vector<double> pre = raw_scales;
	// One noisy cell: its scale is S(q_k)/epsilon for every strategy; take S from
	// generalized_sensitivity so that the plan is bit-for-bit the one of plan_linear_query.
	if (count_noisy(pre) == 1)
		for (std::size_t k = 0; k < m; k++)
			if (pre[k] > 0)
				pre[k] = generalized_sensitivity(sub, q[k]) / epsilon;

	MultiLinearPlan plan;
	plan.strategy = s;
	plan.cells.resize(m);
	std::vector<std::vector<double>> q_grid(m);
	bool unchanged = true; // every weight already lies on its grid (e.g. integer weights, grid 1)
	for (std::size_t k = 0; k < m; k++) {
		LinearNoisePlan &cell = plan.cells[k];
		double t = pre[k];
		check_noise_scale(t);
		if (t > 0)
			t = std::max(t, std::numeric_limits<double>::min()); // never let a positive scale underflow to 0
		cell.grid = choose_grid(t, q[k], cell.integer_weights);
		q_grid[k].resize(q[k].size());
		for (std::size_t u = 0; u < q[k].size(); u++) {
			q_grid[k][u] = static_cast<double>(to_grid_units(q[k][u], cell.grid)) * cell.grid;
			unchanged &= q_grid[k][u] == q[k][u];
		}
	}

	// Calibrate on exactly what is summed: the grid-rounded weights (the raw constraints and
	// scales when rounding changed nothing).
	const ConstraintSet rounded = unchanged ? std::move(raw) : build_constraints(sub, q_grid);
	const std::vector<double> fin = unchanged ? raw_scales : allocate(rounded, s, epsilon);
	const bool single = count_noisy(fin) == 1;
	for (std::size_t k = 0; k < m; k++) {
		LinearNoisePlan &cell = plan.cells[k];
		if (!(fin[k] > 0))
			continue; // constant on every finite-distance edge after rounding: exact answer
		if (single) {
			cell.sensitivity = generalized_sensitivity(sub, q_grid[k]);
			cell.scale = cell.sensitivity / epsilon;
		} else {
			cell.scale = fin[k];
			cell.sensitivity = cell.scale * epsilon;
		}
		cell.scale = std::max(cell.scale, std::numeric_limits<double>::min());
		check_noise_scale(cell.scale);
		check_grid_ratio(cell.scale, cell.grid);
	}
	std::vector<double> scales(m);
	for (std::size_t k = 0; k < m; k++)
		scales[k] = plan.cells[k].scale;
	check_allocation(rounded, scales, epsilon);
	return plan;
}

// Plain epsilon-DP scale for the same cells: max L1 difference over all record pairs / eps_min / epsilon.
double
plain_dp_scale(const SubUniverse &sub, const std::vector<std::vector<double>> &q, double epsilon)
{
	check_epsilon(epsilon);
	const std::size_t n = check_sub_universe(sub);
	check_cells(q, n);
	const std::size_t m = q.size();
	const bool bottom = std::isfinite(sub.presence);

	// Smallest distance between two distinct records: attained on an edge of the path metric.
	double eps_min = bottom ? sub.presence : kInfinity;
	for (std::size_t c = 0; c < sub.domains.size(); c++) {
		if (count_column_edges(sub.metrics[c], sub.domains[c], kMaxConstraintWork) ==
		    std::numeric_limits<std::size_t>::max())
			throw_work_limit();
		if (sub.metrics[c].kind() == MetricKind::Discrete && sub.domains[c].size() >= 2)
			eps_min = std::min(eps_min, sub.metrics[c].distance(sub.domains[c], 0, 1));
		else if (sub.domains[c].size() >= 2 && sub.metrics[c].kind() != MetricKind::None)
			sub.metrics[c].for_each_edge(sub.domains[c], [&eps_min](std::size_t, std::size_t, double d) {
				eps_min = std::min(eps_min, d);
			});
	}

	// Delta Q: max over all pairs (⊥ included) of the L1 difference of the cell vectors.
	double delta = 0;
	const double nd = static_cast<double>(n), md = static_cast<double>(m);
	if (0.5 * nd * nd * md <= kMaxConstraintWork) {
		for (std::size_t u = 0; u < n; u++) {
			if (bottom) {
				double s = 0;
				for (std::size_t k = 0; k < m; k++)
					s += std::fabs(q[k][u]);
				delta = std::max(delta, s);
			}
			for (std::size_t v = u + 1; v < n; v++) {
				double s = 0;
				for (std::size_t k = 0; k < m; k++)
					s += std::fabs(q[k][u] - q[k][v]);
				delta = std::max(delta, s);
			}
		}
	} else if (m <= 30 && std::ldexp(nd * md, static_cast<int>(m) - 1) <= kMaxConstraintWork) {
		// ||a - b||_1 = max over sign vectors sigma of sigma . (a - b); fix sigma_0 = +1 by symmetry.
		for (std::uint64_t mask = 0; mask < (std::uint64_t{1} << (m - 1)); mask++) {
			double lo = bottom ? 0 : kInfinity, hi = bottom ? 0 : -kInfinity;
			for (std::size_t u = 0; u < n; u++) {
				double s = q[0][u];
				for (std::size_t k = 1; k < m; k++)
					s += (mask >> (k - 1) & 1) ? -q[k][u] : q[k][u];
				lo = std::min(lo, s);
				hi = std::max(hi, s);
			}
			delta = std::max(delta, hi - lo);
		}
	} else {
		throw_work_limit();
	}
	if (delta == 0 || !(eps_min < kInfinity))
		return 0;
	return delta / (eps_min * epsilon);
}

// Plain epsilon-DP scale over an explicit metric (MECHANISMS.md §3.8 baseline).
double
plain_dp_scale_dense(const std::vector<std::vector<double>> &d, const std::vector<std::vector<double>> &q,
                     double epsilon)
{
	check_epsilon(epsilon);
	check_dense_metric(d);
	const std::size_t n = d.size();
	check_cells(q, n);
	double delta = 0, eps_min = kInfinity;
	for (std::size_t i = 0; i < n; i++)
		for (std::size_t j = i + 1; j < n; j++) {
			eps_min = std::min(eps_min, d[i][j]);
			double s = 0;
			for (const auto &cell : q)
				s += std::fabs(cell[i] - cell[j]);
			delta = std::max(delta, s);
		}
	if (delta == 0 || !(eps_min < kInfinity))
		return 0;
	return delta / (eps_min * epsilon);
}

} // namespace dxpriv
