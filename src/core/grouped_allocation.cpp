// Constraint generation over the rows between the groups of a key column (grouped_allocation.h):
// the reference's allocation without building its G(G-1)/2 rows per line point.
#include "core/grouped_allocation.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/allocation_internal.h"
#include "core/error.h"
#include "core/linear_query.h"
#include "core/progress.h"
#include "core/sensitivity.h"

namespace dxpriv {

namespace {

using GroupedMatrix = std::vector<std::vector<double>>;

bool grouped_generation_on = true; // detail::set_grouped_generation

// Largest L * L distance evaluations spent on recognising one key column's metric.
constexpr double kMaxKeyDistanceChecks = 4e7;
// Most allocations constraint generation runs on one set of weights before giving up (the caller
// then runs the reference).
constexpr std::size_t kMaxGenerationRounds = 200;
// A pair row is added when the allocation exceeds it by more than this (relative).
constexpr double kGenerationSlack = 1e-12;
// Largest L x points a round spends on the most violated pair of every point of a per_value key
// (beyond it: the most violated pair and a matching per line, as for a uniform distance).
constexpr double kMaxPointScan = 2e8;

// A key column: position, size L, stride in the row-major sub-universe, and reach e_i with
// d(i, j) = min(e_i, e_j) for i != j; order lists its points by decreasing reach, nearest[i] is
// the smallest distance from point i to another point.
struct KeyColumn {
	std::size_t column = 0, size = 0, stride = 0;
	std::vector<double> reach;
	std::vector<std::uint32_t> order;
	std::vector<double> nearest;
	bool uniform = false; // every pair at the same distance
};

// Non-zero cells of every point (q transposed): cells cell[start[u] .. start[u+1]) ascending, with
// magnitudes |q_k(u)| in magnitude[...].
struct GroupedPoints {
	std::vector<std::size_t> start;
	std::vector<std::uint32_t> cell;
	std::vector<double> magnitude;
};

// Transposes q (m x n); false when a weight is not finite or a cell has the wrong size.
bool
grouped_points(const GroupedMatrix &q, std::size_t n, GroupedPoints &out)
{
	out.start.assign(n + 1, 0);
	for (const auto &cell : q) {
		if (cell.size() != n)
			return false;
		for (std::size_t u = 0; u < n; u++) {
			if (!std::isfinite(cell[u]))
				return false;
			out.start[u + 1] += cell[u] != 0;
		}
	}
	for (std::size_t u = 0; u < n; u++)
		out.start[u + 1] += out.start[u];
	out.cell.resize(out.start[n]);
	out.magnitude.resize(out.start[n]);
	std::vector<std::size_t> fill(out.start.begin(), out.start.end() - 1);
	for (std::size_t k = 0; k < q.size(); k++)
		for (std::size_t u = 0; u < n; u++)
			if (q[k][u] != 0) {
				out.cell[fill[u]] = static_cast<std::uint32_t>(k);
				out.magnitude[fill[u]++] = std::fabs(q[k][u]);
			}
	return true;
}

// Column c as a key column, or false: Discrete or PerValue, L >= 2, every distance finite, > 0
// and equal to min(e_i, e_j).
bool
key_metric(const SubUniverse &sub, std::size_t c, KeyColumn &kc)
{
	const ColumnMetric &metric = sub.metrics[c];
	const Domain &dom = sub.domains[c];
	const std::size_t L = dom.size();
	if ((metric.kind() != MetricKind::Discrete && metric.kind() != MetricKind::PerValue) || L < 2)
		return false;
	kc.column = c;
	kc.size = L;
	kc.reach.assign(L, 0.0);
	if (metric.kind() == MetricKind::Discrete) {
		const double d = metric.distance(dom, 0, 1);
		if (!(d > 0) || !(d < kInfinity))
			return false;
		kc.reach.assign(L, d);
	} else {
		if (static_cast<double>(L) * static_cast<double>(L) > kMaxKeyDistanceChecks)
			return false;
		for (std::size_t i = 0; i < L; i++)
			for (std::size_t j = i + 1; j < L; j++) {
				const double d = metric.distance(dom, i, j);
				if (!(d > 0) || !(d < kInfinity))
					return false;
				kc.reach[i] = std::max(kc.reach[i], d);
				kc.reach[j] = std::max(kc.reach[j], d);
			}
		for (std::size_t i = 0; i < L; i++)
			for (std::size_t j = i + 1; j < L; j++)
				if (metric.distance(dom, i, j) != std::min(kc.reach[i], kc.reach[j]))
					return false;
	}
	kc.order.resize(L);
	for (std::size_t i = 0; i < L; i++)
		kc.order[i] = static_cast<std::uint32_t>(i);
	std::stable_sort(kc.order.begin(), kc.order.end(),
	                 [&kc](std::uint32_t a, std::uint32_t b) { return kc.reach[a] > kc.reach[b]; });
	kc.uniform = kc.reach[kc.order[0]] == kc.reach[kc.order[L - 1]];
	// nearest[i] = min(e_i, min_{j != i} e_j): the two smallest reaches
	const double low1 = kc.reach[kc.order[L - 1]], low2 = kc.reach[kc.order[L - 2]];
	kc.nearest.resize(L);
	for (std::size_t i = 0; i < L; i++)
		kc.nearest[i] = std::min(kc.reach[i], i == kc.order[L - 1] ? low2 : low1);
	return true;
}

// Calls f(base) for the first point of every line along key column kc (n points).
template <typename F>
void
for_each_key_line(std::size_t n, const KeyColumn &kc, F &&f)
{
	const std::size_t block = kc.size * kc.stride;
	for (std::size_t outer = 0; outer < n; outer += block)
		for (std::size_t off = 0; off < kc.stride; off++)
			f(outer + off);
}

// Whether every cell is non-zero at one point at most of every line along kc.
bool
disjoint_on_lines(const GroupedPoints &pts, std::size_t n, std::size_t m, const KeyColumn &kc)
{
	std::vector<std::size_t> mark(m, std::numeric_limits<std::size_t>::max());
	bool ok = true;
	for_each_key_line(n, kc, [&](std::size_t base) {
		for (std::size_t i = 0; i < kc.size && ok; i++) {
			const std::size_t u = base + i * kc.stride;
			for (std::size_t t = pts.start[u]; t < pts.start[u + 1]; t++) {
				if (mark[pts.cell[t]] == base) {
					ok = false;
					break;
				}
				mark[pts.cell[t]] = base;
			}
		}
	});
	return ok;
}

// The key columns of sub for the weights pts (empty when there is none).
std::vector<KeyColumn>
key_columns(const SubUniverse &sub, const GroupedPoints &pts, std::size_t n, std::size_t m)
{
	std::vector<KeyColumn> keys;
	std::size_t stride = n;
	for (std::size_t c = 0; c < sub.domains.size(); c++) {
		stride /= sub.domains[c].size();
		KeyColumn kc;
		if (!key_metric(sub, c, kc))
			continue;
		kc.stride = stride;
		if (disjoint_on_lines(pts, n, m, kc))
			keys.push_back(std::move(kc));
	}
	return keys;
}

// Point index of flat point u along key column kc.
inline std::size_t
key_index(const KeyColumn &kc, std::size_t u)
{
	return (u / kc.stride) % kc.size;
}

// Appends a row (entries ascending by cell, all > 0) to c, dense when it has more than 2m/3 of them.
void
append_row(ConstraintSet &c, const std::vector<std::pair<std::uint32_t, double>> &entries)
{
	if (3 * entries.size() > 2 * c.cells) {
		const std::size_t at = c.values.size();
		c.values.resize(at + c.cells, 0.0);
		for (const auto &e : entries)
			c.values[at + e.first] = e.second;
	} else {
		for (const auto &e : entries) {
			c.indexes.push_back(e.first);
			c.values.push_back(e.second);
		}
	}
	c.value_start.push_back(c.values.size());
	c.index_start.push_back(c.indexes.size());
}

// Rows appended to a constraint set, without exact duplicates.
class AppendedRows {
public:
	// Appends the row unless an identical one was appended before; true when appended.
	bool add(ConstraintSet &c, const std::vector<std::pair<std::uint32_t, double>> &entries)
	{
		std::uint64_t h = 0x243F6A8885A308D3ULL;
		for (const auto &e : entries) {
			std::uint64_t bits;
			std::memcpy(&bits, &e.second, sizeof bits);
			h = (h ^ e.first) * 0x9E3779B97F4A7C15ULL;
			h = (h ^ bits) * 0xC2B2AE3D27D4EB4FULL;
		}
		auto range = seen_.equal_range(h);
		for (auto it = range.first; it != range.second; ++it) {
			scratch_.clear();
			c.for_each(it->second, [this](std::size_t k, double v) {
				if (v != 0)
					scratch_.emplace_back(static_cast<std::uint32_t>(k), v);
			});
			if (scratch_ == entries)
				return false;
		}
		append_row(c, entries);
		seen_.emplace(h, c.count() - 1);
		return true;
	}

private:
	std::unordered_multimap<std::uint64_t, std::size_t> seen_;
	std::vector<std::pair<std::uint32_t, double>> scratch_;
};

// The reference's row of the edge (u, v) of a key column at distance d: (|q(u)| + |q(v)|) / d
// (disjoint cells), or the part of it on u alone (v == n).
void
pair_entries(const GroupedPoints &pts, std::size_t n, std::size_t u, std::size_t v, double d,
             std::vector<std::pair<std::uint32_t, double>> &out)
{
	out.clear();
	for (std::size_t t = pts.start[u]; t < pts.start[u + 1]; t++)
		out.emplace_back(pts.cell[t], pts.magnitude[t] / d);
	if (v < n)
		for (std::size_t t = pts.start[v]; t < pts.start[v + 1]; t++)
			out.emplace_back(pts.cell[t], pts.magnitude[t] / d);
	std::sort(out.begin(), out.end());
}

// A pair row the scales exceed: points u, v of one line at distance d, and by how much.
struct PairViolation {
	std::size_t u, v;
	double d;
};

// Budgets the pair rows are checked against: the query's epsilon over every cell and, with budget
// blocks, each block's epsilon over its own cells. inv[j][k] = 1 / (b_k eps_j) for the cells of
// budget j (0 elsewhere; +inf for a cell without noise).
std::vector<std::vector<double>>
pair_budgets(const std::vector<double> &scales, double epsilon, const AllocationRequest &request)
{
	const std::size_t m = scales.size();
	std::vector<std::vector<double>> inv(1, std::vector<double>(m, 0.0));
	const bool blocked = !request.block_epsilon.empty();
	if (blocked)
		inv.resize(1 + request.block_epsilon.size(), std::vector<double>(m, 0.0));
	for (std::size_t k = 0; k < m; k++) {
		inv[0][k] = scales[k] > 0 ? 1 / (scales[k] * epsilon) : kInfinity;
		if (blocked) {
			const double eb = request.block_epsilon[request.block_of[k]];
			inv[1 + request.block_of[k]][k] = scales[k] > 0 ? 1 / (scales[k] * eb) : kInfinity;
		}
	}
	return inv;
}

// Max over every pair row of every key column (and every budget) of its ratio; the most violated
// pair of each line and budget beyond 1 + slack is appended to out (when given).
double
separate_pairs(const std::vector<KeyColumn> &keys, const GroupedPoints &pts, std::size_t n,
               const std::vector<std::vector<double>> &inv, double slack, std::vector<PairViolation> *out)
{
	double worst = 0;
	std::vector<double> load(n);
	std::vector<std::pair<double, std::uint32_t>> ranked;
	for (const std::vector<double> &w : inv) {
		for (std::size_t u = 0; u < n; u++) {
			double s = 0;
			for (std::size_t t = pts.start[u]; t < pts.start[u + 1]; t++) {
				const double x = w[pts.cell[t]];
				if (x != 0) // a cell of another budget is 0; a cell without noise +inf
					s += pts.magnitude[t] * x;
			}
			load[u] = s;
		}
		for (const KeyColumn &kc : keys)
			for_each_key_line(n, kc, [&](std::size_t base) {
				// sweep by decreasing reach: the pair (i, j) with j before i is at distance e_i
				double best_prev = -1, line_worst = 0;
				std::size_t prev_u = n, arg_u = n, arg_v = n;
				double arg_d = 0;
				for (std::uint32_t i : kc.order) {
					const std::size_t u = base + i * kc.stride;
					if (prev_u < n) {
						const double ratio = (load[u] + best_prev) / kc.reach[i];
						if (ratio > line_worst || std::isnan(ratio)) {
							line_worst = std::isnan(ratio) ? kInfinity : ratio;
							arg_u = u, arg_v = prev_u, arg_d = kc.reach[i];
						}
					}
					if (load[u] > best_prev) {
						best_prev = load[u];
						prev_u = u;
					}
				}
				worst = std::max(worst, line_worst);
				if (!out || !(line_worst > 1 + slack) || arg_u >= n)
					return;
				out->push_back(PairViolation{std::min(arg_u, arg_v), std::max(arg_u, arg_v), arg_d});
				if (!kc.uniform && static_cast<double>(kc.size) * static_cast<double>(n) <= kMaxPointScan) {
					// per_value: the most violated pair of every point (L^2 per line)
					for (std::size_t i = 0; i < kc.size; i++) {
						const std::size_t u = base + i * kc.stride;
						double best = 0;
						std::size_t best_j = kc.size;
						for (std::size_t j = 0; j < kc.size; j++) {
							if (j == i)
								continue;
							const double r = (load[u] + load[base + j * kc.stride]) / std::min(kc.reach[i], kc.reach[j]);
							if (r > best) {
								best = r;
								best_j = j;
							}
						}
						if (best > 1 + slack && best_j < kc.size) {
							const std::size_t v = base + best_j * kc.stride;
							out->push_back(PairViolation{std::min(u, v), std::max(u, v),
							                             std::min(kc.reach[i], kc.reach[best_j])});
						}
					}
					return;
				}
				// uniform distance: a matching of the line's points by decreasing load (a star around
				// the most loaded point would take one round per group of a symmetric statement)
				ranked.clear();
				for (std::uint32_t i : kc.order)
					ranked.emplace_back(load[base + i * kc.stride], i);
				std::stable_sort(ranked.begin(), ranked.end(),
				                 [](const auto &a, const auto &b) { return a.first > b.first; });
				for (std::size_t t = 0; t + 1 < ranked.size(); t += 2) {
					const std::uint32_t i = ranked[t].second, j = ranked[t + 1].second;
					const double d = std::min(kc.reach[i], kc.reach[j]);
					if ((ranked[t].first + ranked[t + 1].first) / d > 1 + slack) {
						const std::size_t u = base + i * kc.stride, v = base + j * kc.stride;
						out->push_back(PairViolation{std::min(u, v), std::max(u, v), d});
					}
				}
			});
	}
	return worst;
}

// Generation failed to converge (the caller falls back to the reference).
struct GenerationFailed {};

// What the weights of one statement share: the sub-universe, its key columns and the request.
struct GroupedContext {
	const SubUniverse &sub;
	const std::vector<KeyColumn> &keys;
	double epsilon;
	const AllocationRequest &request;
	GroupedStats &stats;
};

// The rows of q handed to the allocator: sub's rows without the key columns' edges, the part of
// every pair row on one point where it exceeds the presence row, and the pair rows constraint
// generation adds until the allocation satisfies every pair row.
ConstraintSet
generate_rows(const GroupedContext &ctx, const GroupedMatrix &q, const GroupedPoints &pts, std::vector<double> &scales)
{
	const std::size_t n = ctx.sub.size(), m = q.size();
	// nearest[u]: the smallest distance of u to another point of one of its key lines
	std::vector<double> nearest(n, kInfinity);
	bool dominated = true; // every presence row lies below the part of a pair row on its point
	for (std::size_t u = 0; u < n; u++) {
		for (const KeyColumn &kc : ctx.keys)
			nearest[u] = std::min(nearest[u], kc.nearest[key_index(kc, u)]);
		dominated &= nearest[u] <= ctx.sub.presence;
	}
	SubUniverse reduced = ctx.sub;
	for (const KeyColumn &kc : ctx.keys)
		reduced.metrics[kc.column] = ColumnMetric::none();
	if (dominated)
		reduced.presence = kInfinity; // the seed pairs and singles below dominate every presence row
	ConstraintSet rows = build_constraints(reduced, q);
	rows.cells = m;
	AppendedRows appended;
	std::vector<std::pair<std::uint32_t, double>> entries;
	// Seeds: on every line, the points paired in decreasing reach (the pairs a symmetric optimum
	// binds), then every point not on a seed pair at its nearest distance gets its part of a pair
	// row alone (so that column maxima, estimate errors and caps are the reference's).
	std::vector<char> covered(n, 0);
	std::vector<std::pair<std::size_t, std::size_t>> seeds; // positions in kc.order
	for (const KeyColumn &kc : ctx.keys) {
		if (!grouped_generation_on)
			break; // (test switch: no pair row at all)
		// pairs (0, 1), (2, 3), ...; an odd last point closes a triangle with the pair before it
		seeds.clear();
		for (std::size_t t = 0; t + 1 < kc.size; t += 2)
			seeds.emplace_back(t, t + 1);
		if (kc.size % 2 == 1 && kc.size >= 3) {
			seeds.emplace_back(kc.size - 2, kc.size - 1);
			seeds.emplace_back(kc.size - 3, kc.size - 1);
		}
		for_each_key_line(n, kc, [&](std::size_t base) {
			for (const auto &seed : seeds) {
				const std::uint32_t i = kc.order[seed.first], j = kc.order[seed.second];
				const std::size_t u = base + i * kc.stride, v = base + j * kc.stride;
				const double d = std::min(kc.reach[i], kc.reach[j]);
				pair_entries(pts, n, std::min(u, v), std::max(u, v), d, entries);
				if (entries.empty())
					continue;
				appended.add(rows, entries);
				covered[u] |= d == nearest[u];
				covered[v] |= d == nearest[v];
			}
		});
	}
	for (std::size_t u = 0; u < n; u++) {
		if (covered[u] || pts.start[u] == pts.start[u + 1])
			continue;
		if (!dominated && !(nearest[u] < ctx.sub.presence))
			continue; // the presence row (or a presence row dominating it) is at least as tight
		pair_entries(pts, n, u, n, nearest[u], entries);
		appended.add(rows, entries);
	}
	ctx.stats.base_rows += rows.count();
	std::vector<PairViolation> violations;
	for (std::size_t round = 0; round < kMaxGenerationRounds; round++) {
		report_progress("grouped allocation: constraint generation rounds", static_cast<double>(round),
		                static_cast<double>(kMaxGenerationRounds)); // may throw (cancel)
		scales = allocate(rows, ctx.request, ctx.epsilon);
		ctx.stats.rounds++;
		if (!grouped_generation_on)
			return rows;
		violations.clear();
		separate_pairs(ctx.keys, pts, n, pair_budgets(scales, ctx.epsilon, ctx.request), kGenerationSlack, &violations);
		if (violations.empty())
			return rows;
		std::size_t added = 0;
		for (const PairViolation &v : violations) {
			pair_entries(pts, n, v.u, v.v, v.d, entries);
			added += appended.add(rows, entries);
		}
		if (added == 0)
			throw GenerationFailed{}; // a row already handed to the allocator is exceeded
		ctx.stats.generated_rows += added;
	}
	throw GenerationFailed{};
}

// The cells of a grouped statement for detail::plan_multi_linear: constraints() runs constraint
// generation for the statement's request and epsilon and keeps the last allocation, which
// allocation() returns for that set (allocate is deterministic); everything else is
// DenseCellWeights'. pts: the non-zero cells of q by point.
class GroupedCellWeights final : public detail::CellWeights {
public:
	GroupedCellWeights(const GroupedContext &ctx, const GroupedMatrix &q, const GroupedPoints &pts)
	    : ctx_(ctx), q_(q), pts_(pts)
	{
	}
	GroupedCellWeights(const GroupedContext &ctx, GroupedMatrix &&q, GroupedPoints &&pts)
	    : ctx_(ctx), owned_(std::move(q)), owned_pts_(std::move(pts)), q_(owned_), pts_(owned_pts_)
	{
	}
	std::size_t cells() const override { return q_.size(); }
	LinearNoisePlan single(double epsilon) const override { return plan_linear_query(ctx_.sub, q_[0], epsilon); }
	ConstraintSet constraints() const override
	{
		ConstraintSet rows = generate_rows(ctx_, q_, pts_, last_scales_);
		last_rows_ = rows.count();
		last_entries_ = rows.stored_entries();
		return rows;
	}
	std::vector<double> allocation(const ConstraintSet &c, const AllocationRequest &request, double epsilon) const override
	{
		if (&request == &ctx_.request && epsilon == ctx_.epsilon && c.count() == last_rows_ &&
		    c.stored_entries() == last_entries_ && last_scales_.size() == c.cells)
			return last_scales_;
		return allocate(c, request, epsilon);
	}
	double sensitivity(std::size_t k) const override { return generalized_sensitivity(ctx_.sub, q_[k]); }
	double grid(std::size_t k, double t, bool &integer_weights) const override
	{
		return choose_grid(t, q_[k], integer_weights);
	}
	std::unique_ptr<detail::CellWeights> rounded(const std::vector<LinearNoisePlan> &cells) const override
	{
		GroupedMatrix r = detail::weights_on_grids(q_, cells);
		if (r.empty())
			return nullptr;
		GroupedPoints pts;
		if (!grouped_points(r, ctx_.sub.size(), pts))
			throw GenerationFailed{};
		return std::make_unique<GroupedCellWeights>(ctx_, std::move(r), std::move(pts));
	}

private:
	const GroupedContext &ctx_;
	GroupedMatrix owned_;
	GroupedPoints owned_pts_;
	const GroupedMatrix &q_;
	const GroupedPoints &pts_;
	mutable std::vector<double> last_scales_;
	mutable std::size_t last_rows_ = 0, last_entries_ = 0;
};

} // namespace

// See grouped_allocation.h.
void
detail::set_grouped_generation(bool on)
{
	grouped_generation_on = on;
}

// See grouped_allocation.h.
double
grouped_pair_ratio(const SubUniverse &sub, const std::vector<std::vector<double>> &q,
                   const std::vector<double> &scales, double epsilon, const AllocationRequest &request)
{
	detail::check_epsilon(epsilon);
	const std::size_t n = sub.size(), m = q.size();
	GroupedPoints pts;
	if (scales.size() != m || !grouped_points(q, n, pts))
		throw CoreError(ErrorKind::Internal, "grouped pair check: cells and scales do not match the sub-universe");
	const std::vector<KeyColumn> keys = key_columns(sub, pts, n, m);
	if (keys.empty())
		return 0;
	return separate_pairs(keys, pts, n, pair_budgets(scales, epsilon, request), 0, nullptr);
}

// See grouped_allocation.h.
std::optional<MultiLinearPlan>
plan_multi_linear_grouped(const SubUniverse &sub, const std::vector<std::vector<double>> &q, double epsilon,
                          const AllocationRequest &request, GroupedStats *stats, double min_pair_rows)
{
	GroupedStats local;
	GroupedStats &st = stats ? *stats : local;
	st = GroupedStats{};
	const std::size_t m = q.size();
	if (m < 2 || !(sub.presence > 0))
		return std::nullopt;
	const std::size_t n = sub.size();
	GroupedPoints pts;
	if (!grouped_points(q, n, pts))
		return std::nullopt;
	const std::vector<KeyColumn> keys = key_columns(sub, pts, n, m);
	st.key_columns = keys.size();
	for (const KeyColumn &kc : keys)
		st.pair_rows += static_cast<double>(n) * static_cast<double>(kc.size - 1) / 2;
	if (keys.empty() || st.pair_rows < min_pair_rows)
		return std::nullopt;
	const GroupedContext ctx{sub, keys, epsilon, request, st};
	MultiLinearPlan plan;
	try {
		plan = detail::plan_multi_linear(GroupedCellWeights(ctx, q, pts), epsilon, request, nullptr);
	} catch (const GenerationFailed &) {
		st.fell_back = true;
		return std::nullopt;
	} catch (const CoreError &) { // the reference decides (and reports its own error, if any)
		st.fell_back = true;
		return std::nullopt;
	}
	// Privacy never depends on the reduction: every pair row, on exactly the weights summed.
	std::vector<double> scales(m);
	for (std::size_t k = 0; k < m; k++)
		scales[k] = plan.cells[k].scale;
	const GroupedMatrix rounded = detail::weights_on_grids(q, plan.cells);
	GroupedPoints rounded_pts;
	if (!rounded.empty() && !grouped_points(rounded, n, rounded_pts)) {
		st.fell_back = true;
		return std::nullopt;
	}
	st.pair_ratio = separate_pairs(keys, rounded.empty() ? pts : rounded_pts, n, pair_budgets(scales, epsilon, request),
	                               0, nullptr);
	if (!(st.pair_ratio <= 1 + 1e-9)) {
		st.fell_back = true;
		return std::nullopt;
	}
	return plan;
}

} // namespace dxpriv
