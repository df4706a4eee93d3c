// Privacy constraints of multi-linear queries over a sufficient edge set of the record metric, the
// privacy check of an allocation, and the plain-DP baseline scale (MECHANISMS.md §3.6-3.8).
#include "core/allocation.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>

#include "core/allocation_internal.h"
#include "core/error.h"
#include "core/progress.h"

namespace dxpriv {

using detail::check_epsilon;
using detail::row_dot;

namespace {

using Matrix = std::vector<std::vector<double>>;

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
bool presence_on = true; // detail::set_presence_prefilter
bool repeat_on = true;   // detail::set_repeat_shortcut
bool direct_on = true;   // detail::set_direct_rows
bool lag_on = true;      // detail::set_insert_lag

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
	else if ((metric.kind() == MetricKind::L1 || metric.kind() == MetricKind::L2 || metric.kind() == MetricKind::LInf) &&
	         dom.kind() == DomainKind::Points && dom.dims() >= 2)
		closed = pairs; // every pair, all at finite distance
	else if (metric.kind() == MetricKind::Theta2)
		closed = metric.distance(dom, 0, 1) < kInfinity ? pairs : 0;
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

// Counts the edges a loop over the constraint edge set visits and reports them (progress.h)
// every kProgressEvery edges: a cancel may stop the loop between two edges.
class EdgeProgress {
public:
	EdgeProgress(const SubUniverse &sub, std::size_t n, const std::vector<std::size_t> &counts)
	    : total_(std::isfinite(sub.presence) ? static_cast<double>(n) : 0.0)
	{
		for (std::size_t c = 0; c < counts.size(); c++)
			total_ += static_cast<double>(counts[c]) * static_cast<double>(n / sub.domains[c].size());
	}
	// One more edge visited.
	void step()
	{
		if (++left_ < kEvery)
			return;
		done_ += static_cast<double>(left_);
		left_ = 0;
		report_progress("privacy constraints over edges", done_, total_);
	}

private:
	static constexpr std::size_t kEvery = static_cast<std::size_t>(kProgressEvery);
	double total_;
	double done_ = 0;
	std::size_t left_ = 0;
};

// Calls f(u, v, d) for every edge of the constraint edge set of sub (n points): presence edges
// as (u, n, presence) when the presence distance is finite, then the column edges of every line
// (edges/counts from column_edges).
template <typename F>
void
visit_edges(const SubUniverse &sub, std::size_t n, const std::vector<std::vector<ColumnEdge>> &edges,
            const std::vector<std::size_t> &counts, F &&f)
{
	EdgeProgress progress(sub, n, counts);
	if (std::isfinite(sub.presence))
		for (std::size_t u = 0; u < n; u++) {
			progress.step();
			f(u, n, sub.presence);
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
					progress.step();
					f(base + i * stride, base + j * stride, d);
				};
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
		enqueue(hash_finish(h), 3 * nnz > 2 * m_, nullptr);
		clear();
	}

	// add() for a row that is often the row offered just before (neighbouring edges of a line under
	// piecewise-linear weights): an exact repeat of the previous row is already stored (or was
	// all-zero) and is dropped without hashing.
	void add_repeating()
	{
		if (!repeat_on) {
			add();
			return;
		}
		if (has_last_ && idx_ == last_idx_ && val_ == last_val_) {
			sample();
			clear();
			return;
		}
		last_idx_ = idx_;
		last_val_ = val_;
		has_last_ = true;
		add();
	}

	// add_dense() with the same shortcut as add_repeating().
	void add_dense_repeating(const double *r)
	{
		if (!repeat_on) {
			add_dense(r);
			return;
		}
		if (has_last_ && last_val_.size() == m_ && last_idx_.empty() && std::equal(r, r + m_, last_val_.begin())) {
			sample();
			return;
		}
		last_idx_.clear();
		last_val_.assign(r, r + m_);
		has_last_ = true;
		add_dense(r);
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
			enqueue(hash_finish(h), false, nullptr);
			clear();
			return;
		}
		enqueue(hash_finish(h), true, r);
	}

	// Drops rows with a single non-zero entry below its column maximum (dominated by the row that
	// attains the maximum), compacts the storage and returns the set.
	ConstraintSet finish()
	{
		while (queued_ > 0)
			drain_one();
		clear();
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
			const double rows = static_cast<double>(hashes_.size()) + 1.05 * rows_kept * (expected_ - kSampleRows) + 16;
			reserve_for(rows, entries_per_row);
			// and the slot table at once, at most half full (instead of doubling through every size)
			std::size_t slots = slots_.size();
			while (static_cast<double>(slots) < 2 * std::min(rows, static_cast<double>(kMaxConstraintEntries)))
				slots *= 2;
			if (slots > slots_.size())
				resize_slots(slots);
		}
	}

	// Queues a hashed row for insert() (the pending entries, or dense_row when given) and prefetches
	// its slot; the row queued kLag rows earlier is inserted now. Rows are inserted in the order
	// they are offered, so the set (first occurrences, in order) is the one of inserting at once;
	// the lag only hides the cache miss of the probe. The pending entries are taken (idx_ and val_
	// are left with stale contents for the caller to clear).
	void enqueue(std::uint64_t h, bool dense, const double *dense_row)
	{
		Pending &p = ring_[(head_ + queued_) % ring_.size()];
		p.h = h;
		p.dense = dense;
		p.has_row = dense_row != nullptr;
		if (dense_row) {
			p.val.assign(dense_row, dense_row + m_);
		} else {
			std::swap(p.idx, idx_);
			std::swap(p.val, val_);
		}
		__builtin_prefetch(&slots_[static_cast<std::size_t>(h) & (slots_.size() - 1)]);
		if (++queued_ > (lag_on ? kLag : 0))
			drain_one();
	}

	// Inserts the oldest queued row.
	void drain_one()
	{
		Pending &p = ring_[head_];
		head_ = (head_ + 1) % ring_.size();
		queued_--;
		clear();
		std::swap(p.idx, idx_);
		std::swap(p.val, val_);
		insert(p.h, p.dense, p.has_row ? val_.data() : nullptr);
		std::swap(p.idx, idx_);
		std::swap(p.val, val_);
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
	void rehash() { resize_slots(slots_.size() * 2); }

	// Rebuilds the slot table with `size` slots (a power of two above twice the stored rows).
	void resize_slots(std::size_t size)
	{
		slots_.assign(size, 0);
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
	bool has_last_ = false;                // last_idx_/last_val_ hold the previous row offered
	std::vector<std::uint32_t> last_idx_;  // (add_repeating: its entries; add_dense_repeating: empty
	std::vector<double> last_val_;         //  indexes and the m dense values)
	double expected_;            // edges the caller will offer
	std::size_t attempts_ = 0;   // edges offered so far
	std::vector<std::uint32_t> idx_;
	std::vector<double> val_;
	ConstraintSet set_;
	// Rows hashed but not yet inserted (enqueue): a ring of kLag + 1 entries from head_.
	struct Pending {
		std::uint64_t h = 0;
		bool dense = false, has_row = false;
		std::vector<std::uint32_t> idx;
		std::vector<double> val;
	};
	static constexpr std::size_t kLag = 12;
	std::array<Pending, kLag + 1> ring_;
	std::size_t head_ = 0, queued_ = 0;
	std::vector<std::uint64_t> hashes_; // per stored row (for rehashing)
	std::vector<std::uint64_t> slots_;  // high 32 bits of the hash | (row index + 1); 0 = empty
};

// Fixed cost of one edge in work units (hashing, table probe, bookkeeping): measured at about
// 30 times the cost of one cell entry.
constexpr double kEdgeOverhead = 32;

// Work units of one edge for the work cap: a fixed overhead plus the cells it touches (at most
// the two points' non-zero cells).
double
work_per_edge(std::size_t max_per_point, std::size_t m)
{
	return kEdgeOverhead + static_cast<double>(std::min(m, 2 * max_per_point));
}

double
work_per_edge(const PointCells &pc, std::size_t m)
{
	return work_per_edge(pc.max_per_point, m);
}

// Largest number of cells for which presence rows are pre-filtered (the check costs O(m) per
// champion and point).
constexpr std::size_t kMaxPrefilterCells = 16;

// Points whose presence row |q(u)| / presence is dominated entrywise by the presence row of a
// champion (for each cell, the first point where |q_k| is largest): those rows never bind (the
// champion's constraint implies theirs; ConstraintSet allows dropping them) and are skipped before
// hashing. Champions are never skipped, so column maxima and the binding rows are unchanged.
// Empty when the presence distance is infinite, m is large or the filter is off.
std::vector<char>
dominated_presence(const SubUniverse &sub, const Matrix &q, std::size_t n)
{
	const std::size_t m = q.size();
	if (!presence_on || !std::isfinite(sub.presence) || m == 0 || m > kMaxPrefilterCells)
		return {};
	std::vector<std::size_t> champions;
	for (std::size_t k = 0; k < m; k++) {
		std::size_t best = n;
		double top = 0;
		for (std::size_t u = 0; u < n; u++)
			if (std::fabs(q[k][u]) > top) {
				top = std::fabs(q[k][u]);
				best = u;
			}
		if (best < n && std::find(champions.begin(), champions.end(), best) == champions.end())
			champions.push_back(best);
	}
	std::vector<char> skip(n, 0);
	std::vector<char> champion(n, 0);
	for (std::size_t c : champions)
		champion[c] = 1;
	for (std::size_t u = 0; u < n; u++) {
		if (champion[u])
			continue;
		for (std::size_t c : champions) {
			bool below = true;
			for (std::size_t k = 0; k < m && below; k++)
				below = std::fabs(q[k][u]) <= std::fabs(q[k][c]);
			if (below) {
				skip[u] = 1;
				break;
			}
		}
	}
	return skip;
}

} // namespace

// See allocation_internal.h.
void
detail::set_presence_prefilter(bool on)
{
	presence_on = on;
}

// See allocation_internal.h.
void
detail::set_repeat_shortcut(bool on)
{
	repeat_on = on;
}

// See allocation_internal.h.
bool
detail::presence_prefilter()
{
	return presence_on;
}

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

namespace {

// Largest number of cells for which build_constraints computes each row directly from the
// cell-major weights (m differences per edge) instead of through the per-point lists.
constexpr std::size_t kMaxDirectCells = 16;

// The largest number of non-zero cells of one point (PointCells::max_per_point without the lists).
std::size_t
max_cells_per_point(const Matrix &q, std::size_t n)
{
	std::vector<std::uint8_t> nz(n, 0); // m <= kMaxDirectCells < 256
	for (const auto &cell : q)
		for (std::size_t u = 0; u < n; u++)
			nz[u] += cell[u] != 0;
	return n == 0 ? 0 : *std::max_element(nz.begin(), nz.end());
}

// The rows of the direct path: offer(a, d) stores the row a / d of one edge (a[k] = |q_k(u) -
// q_k(v)|) unless it repeats the previous edge's row (values and non-zero pattern), with the same
// collector calls and entries as the per-point path (a sparse row: the cells whose weights differ,
// ascending; a dense row: all m entries).
class DirectRows {
public:
	DirectRows(std::size_t m, double expected, std::size_t max_per_point)
	    : m_(m), rows_(m, expected, std::min(m, 2 * max_per_point)), dense_(3 * max_per_point > 2 * m)
	{
	}
	void offer(const double *a, double d)
	{
		bool same = has_last_;
		for (std::size_t k = 0; k < m_; k++) {
			nz_[k] = a[k] != 0;
			r_[k] = d > 0 ? a[k] / d : (nz_[k] ? kInfinity : 0.0);
			same = same && r_[k] == last_[k] && nz_[k] == last_nz_[k];
		}
		if (same && d > 0) // the collector would drop it as a repeat of the previous row
			return;
		if (dense_) {
			rows_.add_dense_repeating(r_);
		} else {
			for (std::size_t k = 0; k < m_; k++)
				if (nz_[k])
					rows_.push(k, r_[k]);
			rows_.add_repeating();
		}
		std::copy(r_, r_ + m_, last_);
		std::copy(nz_, nz_ + m_, last_nz_);
		has_last_ = true;
	}
	ConstraintSet finish() { return rows_.finish(); }

private:
	std::size_t m_;
	RowCollector rows_;
	bool dense_;
	double r_[kMaxDirectCells], last_[kMaxDirectCells];
	bool nz_[kMaxDirectCells], last_nz_[kMaxDirectCells];
	bool has_last_ = false;
};

// build_constraints for m <= kMaxDirectCells: the same edges in the same order, each row offered
// to the same collector calls with the same entries as the per-point path, so the set is
// identical row for row. What it saves: the per-point lists, and the whole row assembly of an
// edge whose row (values and non-zero pattern) equals the row offered just before, which the
// collector would drop as a repeat: along a line under piecewise-linear weights only the rows at
// the breakpoints are assembled and hashed.
ConstraintSet
build_constraints_direct(const SubUniverse &sub, const Matrix &q, std::size_t n)
{
	const std::size_t m = q.size();
	const std::size_t max_per_point = max_cells_per_point(q, n);
	std::vector<std::size_t> counts;
	const std::vector<std::vector<ColumnEdge>> edges = column_edges(sub, n, work_per_edge(max_per_point, m), counts);
	double expected = std::isfinite(sub.presence) ? static_cast<double>(n) : 0.0;
	for (std::size_t c = 0; c < counts.size(); c++)
		expected += static_cast<double>(counts[c]) * static_cast<double>(n / sub.domains[c].size());
	DirectRows rows(m, expected, max_per_point);
	const std::vector<char> skip = dominated_presence(sub, q, n);
	double a[kMaxDirectCells];
	visit_edges(sub, n, edges, counts, [&](std::size_t u, std::size_t v, double d) {
		if (v == n && !skip.empty() && skip[u])
			return;
		for (std::size_t k = 0; k < m; k++)
			a[k] = v == n ? std::fabs(q[k][u]) : std::fabs(q[k][u] - q[k][v]);
		rows.offer(a, d);
	});
	return rows.finish();
}

} // namespace

// See allocation_internal.h.
ConstraintSet
detail::build_constraints_listed(std::size_t m, double expected_edges, std::size_t max_per_point,
                                 const std::function<void(const std::function<void(const double *, double)> &)> &list)
{
	if (m == 0 || m > kMaxDirectCells)
		throw CoreError(ErrorKind::Internal, "listed constraint rows need 1 to 16 cells");
	DirectRows rows(m, expected_edges, max_per_point);
	list([&rows](const double *a, double d) { rows.offer(a, d); });
	return rows.finish();
}

// See allocation_internal.h.
void
detail::set_direct_rows(bool on)
{
	direct_on = on;
}

// See allocation_internal.h.
void
detail::set_insert_lag(bool on)
{
	lag_on = on;
}

// Constraints of several cells over a sub-universe (presence and one-column edges).
ConstraintSet
build_constraints(const SubUniverse &sub, const std::vector<std::vector<double>> &q)
{
	const std::size_t n = check_sub_universe(sub);
	check_cells(q, n);
	const std::size_t m = q.size();
	if (direct_on && m <= kMaxDirectCells)
		return build_constraints_direct(sub, q, n);
	const PointCells pc = point_cells(q, n);
	std::vector<std::size_t> counts;
	const std::vector<std::vector<ColumnEdge>> edges = column_edges(sub, n, work_per_edge(pc, m), counts);
	double expected = std::isfinite(sub.presence) ? static_cast<double>(n) : 0.0;
	for (std::size_t c = 0; c < counts.size(); c++)
		expected += static_cast<double>(counts[c]) * static_cast<double>(n / sub.domains[c].size());

	RowCollector rows(m, expected, std::min(m, 2 * pc.max_per_point));
	const std::vector<char> skip = dominated_presence(sub, q, n);
	if (3 * pc.max_per_point > 2 * m) {
		// Dense weights (e.g. random real cells): fill whole rows, as for an explicit metric.
		std::vector<double> r(m);
		visit_edges(sub, n, edges, counts, [&](std::size_t u, std::size_t v, double d) {
			if (v == n && !skip.empty() && skip[u])
				return;
			if (v == n) { // presence edge: q(⊥) = 0
				for (std::size_t k = 0; k < m; k++)
					r[k] = std::fabs(q[k][u]) / d;
			} else {
				fill_row(q, u, v, d, r.data());
			}
			rows.add_dense_repeating(r.data());
		});
		return rows.finish();
	}
	visit_edges(sub, n, edges, counts, [&](std::size_t u, std::size_t v, double d) {
		if (v == n && !skip.empty() && skip[u])
			return;
		if (d > 0)
			for_each_difference(pc, n, u, v, [&rows, d](std::size_t k, double a) { rows.push(k, a / d); });
		else
			for_each_difference(pc, n, u, v, [&rows](std::size_t k, double) { rows.push(k, kInfinity); });
		rows.add_repeating();
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
	for (std::size_t i = 0; i < n; i++) {
		report_progress("privacy constraints over pairs of points", static_cast<double>(i), static_cast<double>(n));
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
	}
	return rows.finish();
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
// Plain epsilon-DP scale for the same cells: max L1 difference over all record pairs / eps_min / epsilon.
double
plain_dp_scale(const SubUniverse &sub, const std::vector<std::vector<double>> &q, double epsilon, bool *exact)
{
	check_epsilon(epsilon);
	const std::size_t n = check_sub_universe(sub);
	check_cells(q, n);
	const std::size_t m = q.size();
	const bool bottom = std::isfinite(sub.presence);

	// Smallest distance between two distinct records: attained on an edge of the path metric. A
	// discrete column's pairs are all at its one distance (no enumeration); a column with more
	// edges than the work cap is left out, so eps_min can only be overstated and the baseline is
	// then a lower bound (not exact).
	double eps_min = bottom ? sub.presence : kInfinity;
	bool is_exact = true;
	for (std::size_t c = 0; c < sub.domains.size(); c++) {
		if (sub.metrics[c].kind() == MetricKind::Discrete && sub.domains[c].size() >= 2)
			eps_min = std::min(eps_min, sub.metrics[c].distance(sub.domains[c], 0, 1));
		else if (count_column_edges(sub.metrics[c], sub.domains[c], kMaxConstraintWork) ==
		         std::numeric_limits<std::size_t>::max())
			is_exact = false;
		else if (sub.domains[c].size() >= 2 && sub.metrics[c].kind() != MetricKind::None)
			eps_min = std::min(eps_min, sub.metrics[c].min_edge_distance(sub.domains[c]));
	}

	// Delta Q: max over all pairs (⊥ included) of the L1 difference of the cell vectors.
	double delta = 0;
	const double nd = static_cast<double>(n), md = static_cast<double>(m);
	// the largest number of non-zero cells of one point (the transposition is built only when pairs
	// or edges are enumerated below)
	std::size_t max_per_point = 0;
	for (std::size_t u = 0; u < n; u++) {
		std::size_t nz = 0;
		for (std::size_t k = 0; k < m; k++)
			nz += q[k][u] != 0;
		max_per_point = std::max(max_per_point, nz);
	}
	const double per_pair = 1.0 + static_cast<double>(std::min(m, 2 * max_per_point));
	if (0.5 * nd * nd * per_pair <= kMaxBaselineWork && m <= kMaxDirectCells) {
		// The same sums densely: sum over ascending k of |q_k(u) - q_k(v)| adds exactly what the
		// sparse merge adds (its skipped terms are zeros), and a cell constant over the points adds 0
		// to every pair (the absent record's sums keep every cell).
		std::vector<std::size_t> varying;
		for (std::size_t k = 0; k < m; k++)
			for (std::size_t u = 1; u < n; u++)
				if (q[k][u] != q[k][0]) {
					varying.push_back(k);
					break;
				}
		const std::size_t mv = varying.size();
		std::vector<double> w(n * mv);
		for (std::size_t t = 0; t < mv; t++)
			for (std::size_t u = 0; u < n; u++)
				w[u * mv + t] = q[varying[t]][u];
		for (std::size_t u = 0; u < n; u++) {
			if ((u & 1023) == 0)
				report_progress("plain-DP baseline over pairs of points", static_cast<double>(u), nd);
			const double *wu = w.data() + u * mv;
			for (std::size_t v = u + 1; v < n; v++) {
				const double *wv = w.data() + v * mv;
				double s = 0;
				for (std::size_t t = 0; t < mv; t++)
					s += std::fabs(wu[t] - wv[t]);
				delta = std::max(delta, s);
			}
			if (bottom) {
				double s = 0;
				for (std::size_t k = 0; k < m; k++)
					s += std::fabs(q[k][u]);
				delta = std::max(delta, s);
			}
		}
	} else if (0.5 * nd * nd * per_pair <= kMaxBaselineWork) {
		const PointCells pc = point_cells(q, n);
		for (std::size_t u = 0; u < n; u++) {
			if ((u & 1023) == 0)
				report_progress("plain-DP baseline over pairs of points", static_cast<double>(u), nd);
			for (std::size_t v = u + 1; v <= n; v++) {
				if (v == n && !bottom)
					break;
				double s = 0;
				for_each_difference(pc, n, u, v, [&s](std::size_t, double a) { s += a; });
				delta = std::max(delta, s);
			}
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
		const PointCells pc = point_cells(q, n);
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
