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
	if (q.size() > std::numeric_limits<std::uint32_t>::max())
		throw CoreError(ErrorKind::ProgramLimit, "the query has too many output cells");
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

// The non-zero weights of every point: point u has cells cell[start[u] .. start[u+1]) (ascending)
// with weights weight[...]. GROUP BY cells are non-zero only on the points of their group.
struct PointCells {
	std::vector<std::size_t> start;
	std::vector<std::uint32_t> cell;
	std::vector<double> weight;
	std::size_t max_per_point = 0;
};

// Transposes the cell-major weights q (m x n) into per-point lists of non-zero weights.
PointCells
point_cells(const Matrix &q, std::size_t n)
{
	PointCells pc;
	pc.start.assign(n + 1, 0);
	for (const auto &cell : q)
		for (std::size_t u = 0; u < n; u++)
			pc.start[u + 1] += cell[u] != 0;
	for (std::size_t u = 0; u < n; u++) {
		pc.max_per_point = std::max(pc.max_per_point, pc.start[u + 1]);
		pc.start[u + 1] += pc.start[u];
	}
	pc.cell.resize(pc.start[n]);
	pc.weight.resize(pc.start[n]);
	std::vector<std::size_t> fill(pc.start.begin(), pc.start.end() - 1);
	for (std::size_t k = 0; k < q.size(); k++)
		for (std::size_t u = 0; u < n; u++)
			if (q[k][u] != 0) {
				pc.cell[fill[u]] = static_cast<std::uint32_t>(k);
				pc.weight[fill[u]++] = q[k][u];
			}
	return pc;
}

// Calls f(k, |q_k(u) - q_k(v)|) for every cell where the two points differ (ascending k); v == n
// stands for the absent record ⊥ (all weights 0).
template <typename F>
inline void
for_each_difference(const PointCells &pc, std::size_t n, std::size_t u, std::size_t v, F &&f)
{
	std::size_t i = pc.start[u], i_end = pc.start[u + 1];
	std::size_t j = v == n ? 0 : pc.start[v], j_end = v == n ? 0 : pc.start[v + 1];
	while (i < i_end || j < j_end) {
		if (j == j_end || (i < i_end && pc.cell[i] < pc.cell[j])) {
			f(pc.cell[i], std::fabs(pc.weight[i]));
			i++;
		} else if (i == i_end || pc.cell[j] < pc.cell[i]) {
			f(pc.cell[j], std::fabs(pc.weight[j]));
			j++;
		} else {
			const double a = std::fabs(pc.weight[i] - pc.weight[j]);
			if (a != 0)
				f(pc.cell[i], a);
			i++;
			j++;
		}
	}
}

// Row of edge (u, v) at distance d, densely: r_k = |q_k(u) - q_k(v)| / d (0 where the weights
// agree, +inf where they differ at distance 0).
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
// (more than kMaxCachedEdges edges: it is enumerated again on every line). per_edge is the work
// of one edge; throws the work-cap error when (edges over all lines + presence edges) x
// per_edge exceeds kMaxConstraintWork.
std::vector<std::vector<ColumnEdge>>
column_edges(const SubUniverse &sub, std::size_t n, double per_edge, std::vector<std::size_t> &counts)
{
	double work = std::isfinite(sub.presence) ? static_cast<double>(n) * per_edge : 0.0;
	std::vector<std::vector<ColumnEdge>> edges(sub.domains.size());
	counts.assign(sub.domains.size(), 0);
	for (std::size_t c = 0; c < sub.domains.size(); c++) {
		const Domain &dom = sub.domains[c];
		const double lines = static_cast<double>(n / dom.size());
		const double limit = (kMaxConstraintWork - work) / (lines * per_edge);
		counts[c] = count_column_edges(sub.metrics[c], dom, limit);
		if (counts[c] == std::numeric_limits<std::size_t>::max())
			throw_work_limit();
		work += static_cast<double>(counts[c]) * lines * per_edge;
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

// Calls f(u, v, d) for every edge of the constraint edge set of sub (n points): presence edges
// as (u, n, presence) when the presence distance is finite, then the column edges of every line
// (edges/counts from column_edges).
template <typename F>
void
visit_edges(const SubUniverse &sub, std::size_t n, const std::vector<std::vector<ColumnEdge>> &edges,
            const std::vector<std::size_t> &counts, F &&f)
{
	if (std::isfinite(sub.presence))
		for (std::size_t u = 0; u < n; u++)
			f(u, n, sub.presence);
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
				auto visit = [&](std::size_t i, std::size_t j, double d) { f(base + i * stride, base + j * stride, d); };
				if (!edges[c].empty())
					for (const ColumnEdge &e : edges[c])
						visit(e.i, e.j, e.d);
				else
					sub.metrics[c].for_each_edge(sub.domains[c], visit);
			}
	}
}

// Mixes the bits of one value into a running row hash.
inline std::uint64_t
hash_step(std::uint64_t h, std::uint64_t bits)
{
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
// The caller lists the non-zero entries of a row with push() in ascending cell order, then add().
class RowCollector {
public:
	// Starts an empty set of rows of m cells, each row with at most max_entries_per_row non-zeros
	// (2 x the largest number of non-zero cells of one point). expected_rows (the edges) sizes
	// the storage: a small reservation first, then, after kSampleRows edges, one reservation for
	// the rest extrapolated from what the sample stored (growth by doubling costs about as much
	// as building the rows; reserving for every edge wastes memory when most rows are
	// duplicates, as for GROUP BY indicator cells).
	RowCollector(std::size_t m, double expected_rows, std::size_t max_entries_per_row)
	    : m_(m), expected_(expected_rows)
	{
		set_.cells = m;
		slots_.assign(1024, 0);
		const std::size_t per_row = 3 * max_entries_per_row > 2 * m ? m : max_entries_per_row;
		reserve_for(std::min(expected_rows, static_cast<double>(kSampleRows)), static_cast<double>(per_row));
	}

	// Appends one non-zero entry (cell k ascending, value r_k) to the pending row.
	void push(std::size_t k, double v)
	{
		idx_.push_back(static_cast<std::uint32_t>(k));
		val_.push_back(v);
	}

	// Stores the pending row (push() entries) unless it is empty or already present, then clears it.
	void add()
	{
		sample();
		const std::size_t nnz = val_.size();
		if (nnz == 0)
			return;
		bool infinite = false;
		std::uint64_t h = kHashSeed;
		for (std::size_t t = 0; t < nnz; t++) {
			infinite |= !(val_[t] < kInfinity); // +inf from a zero or underflowing distance (or NaN)
			h = hash_entry(h, idx_[t], val_[t]);
		}
		if (infinite) {
			clear();
			throw_infinite();
		}
		insert(hash_finish(h), 3 * nnz > 2 * m_, nullptr);
		clear();
	}

	// Stores a row given densely (m entries, zeros included) unless it is zero or already present;
	// the same row given through push() hashes and compares equal.
	void add_dense(const double *r)
	{
		sample();
		bool infinite = false;
		std::size_t nnz = 0;
		std::uint64_t h = kHashSeed;
		for (std::size_t k = 0; k < m_; k++) {
			infinite |= !(r[k] < kInfinity);
			if (r[k] != 0) {
				nnz++;
				h = hash_entry(h, static_cast<std::uint32_t>(k), r[k]);
			}
		}
		if (infinite)
			throw_infinite();
		if (nnz == 0)
			return;
		const bool dense = 3 * nnz > 2 * m_;
		if (!dense) { // store sparse: list the non-zeros
			for (std::size_t k = 0; k < m_; k++)
				if (r[k] != 0)
					push(k, r[k]);
			insert(hash_finish(h), false, nullptr);
			clear();
			return;
		}
		insert(hash_finish(h), true, r);
	}

	// Drops rows with a single non-zero entry below its column maximum (dominated by the row that
	// attains the maximum), compacts the storage and returns the set.
	ConstraintSet finish()
	{
		ConstraintSet &c = set_;
		std::vector<double> colmax(m_, 0);
		for (std::size_t e = 0; e < c.count(); e++)
			c.for_each(e, [&colmax](std::size_t k, double v) { colmax[k] = std::max(colmax[k], v); });
		std::size_t rows_out = 0, values_out = 0, indexes_out = 0;
		for (std::size_t e = 0; e < c.count(); e++) {
			std::size_t nonzero = 0, last = 0;
			c.for_each(e, [&](std::size_t k, double v) {
				if (v != 0) {
					nonzero++;
					last = k;
				}
			});
			if (nonzero == 1 && c.at(e, last) < colmax[last])
				continue;
			const std::size_t v0 = c.value_start[e], v1 = c.value_start[e + 1];
			const std::size_t i0 = c.index_start[e], i1 = c.index_start[e + 1];
			if (values_out != v0) // rows move only after the first dropped row
				std::copy(c.values.begin() + static_cast<std::ptrdiff_t>(v0),
				          c.values.begin() + static_cast<std::ptrdiff_t>(v1),
				          c.values.begin() + static_cast<std::ptrdiff_t>(values_out));
			if (indexes_out != i0)
				std::copy(c.indexes.begin() + static_cast<std::ptrdiff_t>(i0),
				          c.indexes.begin() + static_cast<std::ptrdiff_t>(i1),
				          c.indexes.begin() + static_cast<std::ptrdiff_t>(indexes_out));
			values_out += v1 - v0;
			indexes_out += i1 - i0;
			rows_out++;
			c.value_start[rows_out] = values_out; // rows_out <= e + 1: offsets not read again
			c.index_start[rows_out] = indexes_out;
		}
		c.value_start.resize(rows_out + 1);
		c.index_start.resize(rows_out + 1);
		c.values.resize(values_out);
		c.indexes.resize(indexes_out);
		// Give back memory only when much was reserved in vain (a copy of the whole set).
		auto trim = [](auto &v) {
			if (v.capacity() > v.size() + v.size() / 4 + 1024)
				v.shrink_to_fit();
		};
		trim(c.values);
		trim(c.indexes);
		trim(c.value_start);
		trim(c.index_start);
		return std::move(set_);
	}

private:
	static constexpr std::size_t kSampleRows = 1 << 16;
	static constexpr std::uint64_t kHashSeed = 0x84222325CBF29CE4ULL;

	// Mixes one entry (cell, value) into a row hash (one dependent step per entry).
	static std::uint64_t hash_entry(std::uint64_t h, std::uint32_t k, double v)
	{
		std::uint64_t bits;
		std::memcpy(&bits, &v, sizeof bits);
		return hash_step(h, bits ^ (static_cast<std::uint64_t>(k) * 0xD6E8FEB86659FD93ULL));
	}

	// Throws the error of a row with an infinite entry.
	[[noreturn]] static void throw_infinite()
	{
		throw CoreError(ErrorKind::ProgramLimit, "noise scale of the query exceeds the limit of 1e15",
		                "Raise epsilon, narrow the domain of the aggregated column, or use a coarser metric.");
	}

	// Counts an offered edge; after kSampleRows of them, reserves for the rest (see constructor).
	void sample()
	{
		if (++attempts_ == kSampleRows && expected_ > static_cast<double>(kSampleRows)) {
			const double rows_kept = static_cast<double>(hashes_.size()) / static_cast<double>(kSampleRows);
			const double entries_per_row =
			    static_cast<double>(set_.values.size()) / std::max<double>(1.0, static_cast<double>(hashes_.size()));
			reserve_for(static_cast<double>(hashes_.size()) + 1.05 * rows_kept * (expected_ - kSampleRows) + 16,
			            entries_per_row);
		}
	}

	// Stores the row with hash h unless present: from dense_row (m entries) when given, else from
	// the pending entries; `dense` selects the storage (canonical: more than 2m/3 non-zeros).
	void insert(std::uint64_t h, bool dense, const double *dense_row)
	{
		const std::size_t mask = slots_.size() - 1;
		const std::uint64_t tag = h & 0xFFFFFFFF00000000ULL;
		std::size_t pos = static_cast<std::size_t>(h) & mask;
		while (slots_[pos] != 0) {
			if ((slots_[pos] & 0xFFFFFFFF00000000ULL) == tag &&
			    equals((slots_[pos] & 0xFFFFFFFFULL) - 1, dense, dense_row))
				return;
			pos = (pos + 1) & mask;
		}
		const std::size_t entries = dense ? m_ : val_.size();
		if (set_.values.size() + entries > kMaxConstraintEntries || hashes_.size() >= 0xFFFFFFFFULL)
			throw CoreError(ErrorKind::ProgramLimit, "the multi-cell query needs too many privacy constraints",
			                "Reference fewer protected columns, declare coarser domains or ask for fewer cells.");
		if (dense_row) {
			set_.values.insert(set_.values.end(), dense_row, dense_row + m_);
		} else if (dense) {
			const std::size_t at = set_.values.size();
			set_.values.resize(at + m_, 0.0);
			for (std::size_t t = 0; t < val_.size(); t++)
				set_.values[at + idx_[t]] = val_[t];
		} else {
			set_.values.insert(set_.values.end(), val_.begin(), val_.end());
			set_.indexes.insert(set_.indexes.end(), idx_.begin(), idx_.end());
		}
		set_.value_start.push_back(set_.values.size());
		set_.index_start.push_back(set_.indexes.size());
		hashes_.push_back(h);
		slots_[pos] = tag | hashes_.size();
		if (2 * hashes_.size() > slots_.size())
			rehash();
	}

	// Clears the pending row.
	void clear()
	{
		idx_.clear();
		val_.clear();
	}

	// Whether stored row idx equals the row being inserted (dense_row, or the pending entries).
	bool equals(std::size_t idx, bool dense, const double *dense_row) const
	{
		if (set_.is_dense(idx) != dense)
			return false;
		const double *v = set_.values.data() + set_.value_start[idx];
		if (dense_row)
			return std::equal(dense_row, dense_row + m_, v);
		if (!dense) {
			const std::size_t len = set_.value_start[idx + 1] - set_.value_start[idx];
			return len == val_.size() && std::equal(val_.begin(), val_.end(), v) &&
			       std::equal(idx_.begin(), idx_.end(), set_.indexes.data() + set_.index_start[idx]);
		}
		std::size_t t = 0;
		for (std::size_t k = 0; k < m_; k++) {
			const double expected = t < idx_.size() && idx_[t] == k ? val_[t++] : 0.0;
			if (v[k] != expected)
				return false;
		}
		return true;
	}

	// Reserves storage for `rows` rows of `per_row` entries (capped at kMaxConstraintEntries).
	void reserve_for(double rows, double per_row)
	{
		const double entries = std::min(rows * per_row, static_cast<double>(kMaxConstraintEntries));
		if (entries > static_cast<double>(set_.values.capacity()))
			set_.values.reserve(static_cast<std::size_t>(entries));
		if (per_row < 2.0 * static_cast<double>(m_) / 3.0 && entries > static_cast<double>(set_.indexes.capacity()))
			set_.indexes.reserve(static_cast<std::size_t>(entries));
		const double row_count = std::min(rows, static_cast<double>(kMaxConstraintEntries));
		if (row_count > static_cast<double>(set_.value_start.capacity())) {
			set_.value_start.reserve(static_cast<std::size_t>(row_count) + 1);
			set_.index_start.reserve(static_cast<std::size_t>(row_count) + 1);
		}
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
			slots_[pos] = (h & 0xFFFFFFFF00000000ULL) | (idx + 1);
		}
	}

	std::size_t m_;
	double expected_;            // edges the caller will offer
	std::size_t attempts_ = 0;   // edges offered so far
	std::vector<std::uint32_t> idx_;
	std::vector<double> val_;
	ConstraintSet set_;
	std::vector<std::uint64_t> hashes_; // per stored row (for rehashing)
	std::vector<std::uint64_t> slots_;  // high 32 bits of the hash | (row index + 1); 0 = empty
};

// Column maxima s_k = max_e r_k(e) of a constraint set; argmax (when given) receives the first
// row attaining each maximum (count() for an all-zero column).
std::vector<double>
column_max(const ConstraintSet &c, std::vector<std::size_t> *argmax = nullptr)
{
	std::vector<double> s(c.cells, 0);
	std::vector<std::size_t> arg(c.cells, c.count());
	for (std::size_t e = 0; e < c.count(); e++)
		c.for_each(e, [&](std::size_t k, double v) {
			if (v > s[k]) {
				s[k] = v;
				arg[k] = e;
			}
		});
	if (argmax)
		*argmax = std::move(arg);
	return s;
}

// Dot product of row e with a dense vector z (m entries).
inline double
row_dot(const ConstraintSet &c, std::size_t e, const double *z)
{
	const double *v = c.values.data() + c.value_start[e];
	const std::size_t len = c.value_start[e + 1] - c.value_start[e];
	double sum = 0;
	if (c.is_dense(e)) {
		for (std::size_t k = 0; k < len; k++)
			sum += v[k] * z[k];
	} else {
		const std::uint32_t *idx = c.indexes.data() + c.index_start[e];
		for (std::size_t t = 0; t < len; t++)
			sum += v[t] * z[idx[t]];
	}
	return sum;
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
		std::size_t row;
		std::uint32_t version;
		// Min-heap order on level (std heaps are max-heaps).
		bool operator<(const Event &o) const { return level > o.level; }
	};
	std::uint32_t version = 0;
	// Level at which row e binds given the cells frozen so far (+inf when no cell of e is active).
	auto binding_level = [&](std::size_t e) {
		double rate = 0, used = 0;
		c.for_each(e, [&](std::size_t k, double v) {
			if (active[k])
				rate += v;
			else
				used += v * x[k];
		});
		return rate > 0 ? std::max(0.0, epsilon - used) / rate : kInfinity;
	};
	std::vector<Event> heap;
	heap.reserve(count);
	for (std::size_t e = 0; e < count; e++) {
		const double level = binding_level(e);
		if (level < kInfinity)
			heap.push_back(Event{level, e, version});
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
		c.for_each(ev.row, [&](std::size_t k, double v) {
			if (active[k] && v > 0) {
				active[k] = 0;
				x[k] = level;
				n_active--;
			}
		});
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
		const double *v = c.values.data() + c.value_start[e];
		double s = 0;
		for (std::size_t t = 0; t < c.value_start[e + 1] - c.value_start[e]; t++)
			s += v[t];
		worst = std::max(worst, s);
	}
	std::vector<double> b(colmax.size(), 0);
	for (std::size_t k = 0; k < b.size(); k++)
		if (colmax[k] > 0)
			b[k] = worst / epsilon;
	return b;
}

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

// Fixed cost of one edge in work units (hashing, table probe, bookkeeping): measured at about
// 30 times the cost of one cell entry.
constexpr double kEdgeOverhead = 32;

// Work units of one edge for the work cap: a fixed overhead plus the cells it touches (at most
// the two points' non-zero cells).
double
work_per_edge(const PointCells &pc, std::size_t m)
{
	return kEdgeOverhead + static_cast<double>(std::min(m, 2 * pc.max_per_point));
}

} // namespace

// Entry r_k of row i (0 when not stored).
double
ConstraintSet::at(std::size_t i, std::size_t k) const
{
	double out = 0;
	for_each(i, [&out, k](std::size_t cell, double v) {
		if (cell == k)
			out = v;
	});
	return out;
}

// Dense copy of row i.
std::vector<double>
ConstraintSet::row(std::size_t i) const
{
	std::vector<double> out(cells, 0);
	for_each(i, [&out](std::size_t k, double v) { out[k] = v; });
	return out;
}

// Constraints of several cells over a sub-universe (presence and one-column edges).
ConstraintSet
build_constraints(const SubUniverse &sub, const std::vector<std::vector<double>> &q)
{
	const std::size_t n = check_sub_universe(sub);
	check_cells(q, n);
	const std::size_t m = q.size();
	const PointCells pc = point_cells(q, n);
	std::vector<std::size_t> counts;
	const std::vector<std::vector<ColumnEdge>> edges = column_edges(sub, n, work_per_edge(pc, m), counts);
	double expected = std::isfinite(sub.presence) ? static_cast<double>(n) : 0.0;
	for (std::size_t c = 0; c < counts.size(); c++)
		expected += static_cast<double>(counts[c]) * static_cast<double>(n / sub.domains[c].size());

	RowCollector rows(m, expected, std::min(m, 2 * pc.max_per_point));
	if (3 * pc.max_per_point > 2 * m) {
		// Dense weights (e.g. random real cells): fill whole rows, as for an explicit metric.
		std::vector<double> r(m);
		visit_edges(sub, n, edges, counts, [&](std::size_t u, std::size_t v, double d) {
			if (v == n) { // presence edge: q(⊥) = 0
				for (std::size_t k = 0; k < m; k++)
					r[k] = std::fabs(q[k][u]) / d;
			} else {
				fill_row(q, u, v, d, r.data());
			}
			rows.add_dense(r.data());
		});
		return rows.finish();
	}
	visit_edges(sub, n, edges, counts, [&](std::size_t u, std::size_t v, double d) {
		if (d > 0)
			for_each_difference(pc, n, u, v, [&rows, d](std::size_t k, double a) { rows.push(k, a / d); });
		else
			for_each_difference(pc, n, u, v, [&rows](std::size_t k, double) { rows.push(k, kInfinity); });
		rows.add();
	});
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
	const PointCells pc = point_cells(q, n);
	const double pairs = 0.5 * static_cast<double>(n) * static_cast<double>(n);
	if (pairs * work_per_edge(pc, m) > kMaxConstraintWork)
		throw_work_limit();
	RowCollector rows(m, pairs, std::min(m, 2 * pc.max_per_point));
	const bool dense_weights = 3 * pc.max_per_point > 2 * m;
	std::vector<double> r(dense_weights ? m : 0);
	for (std::size_t i = 0; i < n; i++)
		for (std::size_t j = i + 1; j < n; j++) {
			const double dij = d[i][j];
			if (!(dij < kInfinity))
				continue;
			if (dense_weights) {
				fill_row(q, i, j, dij, r.data());
				rows.add_dense(r.data());
				continue;
			}
			if (dij > 0)
				for_each_difference(pc, n, i, j, [&rows, dij](std::size_t k, double a) { rows.push(k, a / dij); });
			else
				for_each_difference(pc, n, i, j, [&rows](std::size_t k, double) { rows.push(k, kInfinity); });
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
	if (c.cells == 0 || c.value_start.size() != c.index_start.size() || c.value_start.back() != c.values.size())
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
	const std::size_t m = c.cells;
	std::vector<double> inv(m, 0);
	std::vector<char> exact(m, 0); // cells without noise (scale 0, negative or NaN)
	bool any_exact = false;
	for (std::size_t k = 0; k < m; k++) {
		if (scales[k] > 0) {
			inv[k] = 1 / (scales[k] * epsilon);
		} else {
			exact[k] = 1;
			any_exact = true;
		}
	}
	double worst = 0;
	for (std::size_t e = 0; e < c.count(); e++) {
		if (any_exact) {
			bool leak = false;
			c.for_each(e, [&](std::size_t k, double v) { leak |= exact[k] && v > 0; });
			if (leak)
				return kInfinity;
		}
		worst = std::max(worst, row_dot(c, e, inv.data()));
	}
	return worst;
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
                  AllocationStrategy s, ConstraintSet *constraints)
{
	check_epsilon(epsilon);
	const std::size_t m = q.size();
	if (m == 1) { // one cell: the single-query calibration, without enumerating pair constraints
		MultiLinearPlan plan;
		plan.strategy = s;
		plan.cells.push_back(plan_linear_query(sub, q[0], epsilon));
		if (constraints)
			*constraints = ConstraintSet();
		return plan;
	}
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
	ConstraintSet rounded = unchanged ? std::move(raw) : build_constraints(sub, q_grid);
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
	if (constraints)
		*constraints = std::move(rounded);
	return plan;
}

// Plain epsilon-DP scale for the same cells: max L1 difference over all record pairs / eps_min / epsilon.
double
plain_dp_scale(const SubUniverse &sub, const std::vector<std::vector<double>> &q, double epsilon, bool *exact)
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
	bool is_exact = true;
	const PointCells pc = point_cells(q, n);
	const double per_pair = 1.0 + static_cast<double>(std::min(m, 2 * pc.max_per_point));
	if (0.5 * nd * nd * per_pair <= kMaxBaselineWork) {
		for (std::size_t u = 0; u < n; u++)
			for (std::size_t v = u + 1; v <= n; v++) {
				if (v == n && !bottom)
					break;
				double s = 0;
				for_each_difference(pc, n, u, v, [&s](std::size_t, double a) { s += a; });
				delta = std::max(delta, s);
			}
	} else if (m <= 30 && std::ldexp(nd * md, static_cast<int>(m) - 1) <= kMaxBaselineWork) {
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
		// Too many pairs: the maximum over the constraint edges (presence edges included), a lower
		// bound of the all-pairs value, so that the baseline is never overstated.
		is_exact = false;
		std::vector<std::size_t> counts;
		const std::vector<std::vector<ColumnEdge>> edges = column_edges(sub, n, work_per_edge(pc, m), counts);
		visit_edges(sub, n, edges, counts, [&](std::size_t u, std::size_t v, double) {
			double s = 0;
			for_each_difference(pc, n, u, v, [&s](std::size_t, double a) { s += a; });
			delta = std::max(delta, s);
		});
	}
	if (exact)
		*exact = is_exact;
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
	const PointCells pc = point_cells(q, n);
	double delta = 0, eps_min = kInfinity;
	for (std::size_t i = 0; i < n; i++)
		for (std::size_t j = i + 1; j < n; j++) {
			eps_min = std::min(eps_min, d[i][j]);
			double s = 0;
			for_each_difference(pc, n, i, j, [&s](std::size_t, double a) { s += a; });
			delta = std::max(delta, s);
		}
	if (delta == 0 || !(eps_min < kInfinity))
		return 0;
	return delta / (eps_min * epsilon);
}

} // namespace dxpriv
