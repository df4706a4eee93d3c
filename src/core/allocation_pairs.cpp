// plan_multi_linear over all pairs of points (one points column with an l1/l2/linf metric) by
// constraint generation: the allocation runs on a small working set of the pair rows, and every
// pair and presence row is then checked against it (by passes over the pairs, or by the pair tree's
// searches); violated rows join the set until none is.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <functional>
#include <limits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/allocation_internal.h"
#include "core/error.h"
#include "core/pair_tree.h"
#include "core/progress.h"

namespace dxpriv {
namespace detail {

namespace {

bool pair_generation_on = true; // detail::set_pair_generation
std::size_t tree_generations = 0; // detail::pair_tree_generations

// Fewest pairs for which the generation replaces the stored set (below, the set is small).
constexpr double kMinGeneratedPairs = 20000;
// Most pairs the generation takes (each pass over them is checked against the work cap below).
constexpr double kMaxGeneratedPairs = 2e8;
// Pairs whose distances and their inverses are kept between passes (64 MB).
constexpr std::size_t kMaxCachedPairDistances = std::size_t{1} << 22;
// Rounds of generation before giving up (the reference set is then built).
constexpr int kMaxPairRounds = 60;
// Most violated rows added per round.
constexpr std::size_t kRowsPerRound = 512;
// Seed rows: the pairs with the largest sum_k r_k / s_k (the equal-split direction).
constexpr std::size_t kSeedRows = 256;

// The pairs of one points column: (i, j), i < j, with d = metric.distance(dom, i, j), in the
// order of ColumnMetric::for_each_edge (which lists every pair for these metrics).
class PointPairs {
public:
	// cache: keep the distances between passes (when there are few enough pairs)
	PointPairs(const SubUniverse &sub, bool cache)
	    : dom_(sub.domains[0]), metric_(sub.metrics[0]), n_(dom_.size()),
	      pairs_(0.5 * static_cast<double>(n_) * static_cast<double>(n_ > 0 ? n_ - 1 : 0))
	{
		if (cache && pairs_ <= static_cast<double>(kMaxCachedPairDistances)) {
			dist_.reserve(static_cast<std::size_t>(pairs_));
			for (std::size_t i = 0; i + 1 < n_; i++)
				for (std::size_t j = i + 1; j < n_; j++)
					dist_.push_back(metric_.distance(dom_, i, j));
			inv_.resize(dist_.size());
			for (std::size_t e = 0; e < dist_.size(); e++)
				inv_[e] = 1 / dist_[e];
		}
	}
	std::size_t points() const { return n_; }
	double pairs() const { return pairs_; }
	// Calls f(i, j, d, 1 / d) for every pair; reports progress (a cancel may stop the loop between rows).
	template <typename F>
	void for_each(F &&f) const
	{
		std::size_t e = 0;
		double done = 0, next = kProgressEvery;
		for (std::size_t i = 0; i + 1 < n_; i++) {
			done += static_cast<double>(n_ - 1 - i);
			if (done >= next) {
				report_progress("privacy constraints over pairs of points", done, pairs_);
				next = done + kProgressEvery;
			}
			if (!dist_.empty()) {
				for (std::size_t j = i + 1; j < n_; j++, e++)
					f(i, j, dist_[e], inv_[e]);
			} else {
				for (std::size_t j = i + 1; j < n_; j++) {
					const double d = metric_.distance(dom_, i, j);
					f(i, j, d, 1 / d);
				}
			}
		}
	}
	double distance(std::size_t i, std::size_t j) const { return metric_.distance(dom_, i, j); }
	// The exact maximum over the pairs of |w[i * stride] - w[j * stride]| / distance(i, j), by the
	// pair tree (pair_tree.h; its work is checked against kMaxConstraintWork).
	// Pairs at most `floor` are not looked for (value 0 when none is above it).
	PairMax tree_max(const double *w, std::size_t stride, double floor) const
	{
		return metric_.pair_ratio_max(dom_, w, stride, PairExpr::Metric, true, kMaxConstraintWork, floor);
	}
	// A pair tree over `cells` weight vectors w[u * stride + t] (nullptr: the weights are out of its range).
	std::unique_ptr<PairSearch> search(const double *w, std::size_t stride, std::size_t cells) const
	{
		return metric_.pair_search(dom_, w, stride, cells, kMaxConstraintWork);
	}

private:
	const Domain &dom_;
	const ColumnMetric &metric_;
	std::size_t n_;
	double pairs_;
	std::vector<double> dist_, inv_;
};

// A row to add to the working set: a pair (j == n for a presence row) and its ratio.
struct Candidate {
	double ratio;
	std::uint32_t i, j;
	bool operator>(const Candidate &o) const { return ratio > o.ratio; }
};

// Keeps the `cap` candidates of largest ratio (a min-heap on ratio).
class TopRows {
public:
	explicit TopRows(std::size_t cap) : cap_(cap) {}
	void offer(double ratio, std::size_t i, std::size_t j)
	{
		if (heap_.size() == cap_ && (cap_ == 0 || !(ratio > heap_.front().ratio)))
			return;
		const Candidate c{ratio, static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j)};
		if (heap_.size() == cap_) {
			std::pop_heap(heap_.begin(), heap_.end(), std::greater<Candidate>());
			heap_.back() = c;
		} else {
			heap_.push_back(c);
		}
		std::push_heap(heap_.begin(), heap_.end(), std::greater<Candidate>());
	}
	const std::vector<Candidate> &rows() const { return heap_; }

private:
	std::size_t cap_;
	std::vector<Candidate> heap_;
};

} // namespace

// See allocation_internal.h.
void
set_pair_generation(bool on)
{
	pair_generation_on = on;
}

// See allocation_internal.h.
std::size_t
pair_tree_generations()
{
	return tree_generations;
}

// See allocation_internal.h.
struct PairPlanner::Impl {
	Impl(const SubUniverse &sub, bool tree) : sub(sub), pairs(sub, !tree), tree(tree) {}
	const SubUniverse &sub;
	PointPairs pairs;
	// the pair tree rates the pair rows (ColumnMetric::pair_tree_applies): with one varying cell its
	// largest ratio dominates every pair row; with several, it finds the violated rows of each round
	bool tree;
	// the pairs of the last working set (the next weights, e.g. the grid-rounded ones, start from them)
	std::vector<std::pair<std::uint32_t, std::uint32_t>> chosen;
	// the weights, scales and epsilon of the last allocate() whose rating found no violated row
	const CellWeights *verified_for = nullptr;
	std::vector<double> verified_scales;
	double verified_epsilon = 0;
	// the pair tree of the last allocate() with two or more varying cells, and its weights
	std::unique_ptr<PairSearch> search;
	const CellWeights *search_for = nullptr;
};

PairPlanner::PairPlanner(const SubUniverse &sub, bool tree) : impl_(std::make_unique<Impl>(sub, tree)) {}
PairPlanner::~PairPlanner() = default;

// See allocation_internal.h.
std::unique_ptr<PairPlanner>
PairPlanner::make(const CellWeights &q)
{
	const SubUniverse *sub = q.universe();
	if (!pair_generation_on || !sub || !q.dense() || q.cells() < 2 || q.cells() > 16 || sub->domains.size() != 1)
		return nullptr;
	const Domain &dom = sub->domains[0];
	const MetricKind kind = sub->metrics[0].kind();
	if (dom.kind() != DomainKind::Points || dom.dims() < 2 ||
	    (kind != MetricKind::L1 && kind != MetricKind::L2 && kind != MetricKind::LInf))
		return nullptr;
	if (!(sub->presence > 0)) // the reference raises the error
		return nullptr;
	sub->metrics[0].validate(dom); // throws what the reference throws
	const double n = static_cast<double>(dom.size());
	const double pairs = 0.5 * n * (n - 1);
	if (dom.size() >= 0xFFFFFFFFu)
		return nullptr;
	if (sub->metrics[0].pair_tree_applies(dom)) // any number of pairs and of varying cells
		return std::unique_ptr<PairPlanner>(new PairPlanner(*sub, true));
	if (pairs < kMinGeneratedPairs || pairs > kMaxGeneratedPairs)
		return nullptr;
	return std::unique_ptr<PairPlanner>(new PairPlanner(*sub, false));
}

namespace {

// The weights point-major, the cells whose weights vary first: w[u * m + t] = q[cell[t]][u]; the
// cells t >= varying are constant (every pair has a_k = 0 there, only presence rows see them).
struct PairLayout {
	std::vector<double> w;
	std::vector<std::size_t> cell;
	std::size_t m = 0, varying = 0;
};

PairLayout
pair_layout(const std::vector<std::vector<double>> &q, std::size_t n)
{
	PairLayout l;
	l.m = q.size();
	for (int pass = 0; pass < 2; pass++)
		for (std::size_t k = 0; k < l.m; k++) {
			bool constant = true;
			for (std::size_t u = 1; u < n && constant; u++)
				constant = q[k][u] == q[k][0];
			if (constant == (pass == 1))
				l.cell.push_back(k);
			if (pass == 0 && !constant)
				l.varying++;
		}
	l.w.resize(n * l.m);
	for (std::size_t t = 0; t < l.m; t++)
		for (std::size_t u = 0; u < n; u++)
			l.w[u * l.m + t] = q[l.cell[t]][u];
	return l;
}

// The working set: every presence row (finite presence), then the chosen pairs in ascending order, through the
// collector of build_constraints (the same row values: a_k / d with a_k = |q_k(u) - q_k(v)|).
ConstraintSet
working_set(const SubUniverse &sub, const PairLayout &l, std::size_t n,
            const std::vector<std::pair<std::uint32_t, std::uint32_t>> &chosen, const PointPairs &pairs)
{
	const std::size_t m = l.m;
	const bool bottom = std::isfinite(sub.presence);
	const double expected = (bottom ? static_cast<double>(n) : 0.0) + static_cast<double>(chosen.size());
	// in the reference's order (i-major), whatever order the rows were found in: the set is then a
	// subsequence of the reference's rows, and the scans and the tree's searches give the same set
	std::vector<std::pair<std::uint32_t, std::uint32_t>> ordered = chosen;
	std::sort(ordered.begin(), ordered.end());
	return build_constraints_listed(m, expected, m, [&](const std::function<void(const double *, double)> &offer) {
		double a[16];
		if (bottom)
			for (std::size_t u = 0; u < n; u++) {
				for (std::size_t t = 0; t < m; t++)
					a[l.cell[t]] = std::fabs(l.w[u * m + t]);
				offer(a, sub.presence);
			}
		for (const auto &p : ordered) {
			for (std::size_t t = 0; t < m; t++)
				a[l.cell[t]] = std::fabs(l.w[p.first * m + t] - l.w[p.second * m + t]);
			offer(a, pairs.distance(p.first, p.second));
		}
	});
}

// Rates rows against scales b: sum_k a_k / (b_k eps) / d over all cells and, with budget blocks,
// sum over the block's cells / (b_k eps_block) / d; +inf when an exact cell (b_k <= 0) changes.
// Entries a are in layout order (PairLayout::cell).
class RowRater {
public:
	RowRater(const PairLayout &l, const std::vector<double> &b, const AllocationRequest &request, double epsilon)
	    : l_(l), request_(request), blocked_(!request.block_epsilon.empty()), inv_(l.m, 0.0), inv_all_(l.m, 0.0),
	      exact_(l.m, 0), part_(blocked_ ? request.block_epsilon.size() : 1)
	{
		for (std::size_t t = 0; t < l.m; t++) {
			const std::size_t k = l.cell[t];
			if (b[k] > 0) {
				inv_[t] = 1 / (b[k] * (blocked_ ? request.block_epsilon[request.block_of[k]] : epsilon));
				inv_all_[t] = 1 / (b[k] * epsilon);
			} else {
				exact_[t] = 1;
				any_exact_ = true;
			}
		}
	}
	// Ratio of the row a / d (inv_d = 1 / d: within an ulp of privacy_ratio's sum of a_k / d terms),
	// a with `count` entries (the rest are 0).
	double operator()(const double *a, double d, double inv_d, std::size_t count)
	{
		double all = 0;
		for (std::size_t t = 0; t < count; t++)
			all += a[t] * inv_all_[t];
		double ratio = all * inv_d;
		if (blocked_) {
			std::fill(part_.begin(), part_.end(), 0.0);
			for (std::size_t t = 0; t < count; t++)
				part_[request_.block_of[l_.cell[t]]] += a[t] * inv_[t];
			ratio = std::max(ratio, *std::max_element(part_.begin(), part_.end()) * inv_d);
		}
		if (any_exact_)
			for (std::size_t t = 0; t < count; t++)
				if (exact_[t] && a[t] / d > 0)
					ratio = kInfinity;
		return ratio;
	}

	// The rating of the pair rows (the first `count` layout cells) as a PairRowQuery's rows: the
	// whole epsilon, then one row per budget block. False when one of those cells is exact.
	bool rows(std::size_t count, PairRowQuery &query) const
	{
		const std::size_t blocks = blocked_ ? request_.block_epsilon.size() : 0;
		query.rows = 1 + blocks;
		query.coef.assign(query.rows * count, 0.0);
		for (std::size_t t = 0; t < count; t++) {
			if (exact_[t])
				return false;
			query.coef[t] = inv_all_[t];
			if (blocked_)
				query.coef[(1 + request_.block_of[l_.cell[t]]) * count + t] = inv_[t];
		}
		return true;
	}

private:
	const PairLayout &l_;
	const AllocationRequest &request_;
	bool blocked_;
	std::vector<double> inv_, inv_all_;
	std::vector<char> exact_;
	bool any_exact_ = false;
	std::vector<double> part_;
};

} // namespace

namespace {

// What allocate() and ratio() share: the weights' layout and sizes.
struct PairSetup {
	PairLayout l;
	std::size_t n = 0, m = 0, mv = 0;
	bool bottom = false; // finite presence: the presence rows are constraints
};

PairSetup
pair_setup(const SubUniverse &sub, const PointPairs &pairs, const CellWeights &weights)
{
	PairSetup s;
	s.n = pairs.points();
	s.l = pair_layout(*weights.dense(), s.n);
	s.m = s.l.m;
	s.mv = s.l.varying;
	s.bottom = std::isfinite(sub.presence);
	return s;
}

// The presence rows' column maxima (|q_k(u)| / presence; 0 without presence rows); false when
// one is not finite (the reference raises its error).
bool
presence_maxima(const SubUniverse &sub, const PairSetup &s, std::vector<double> &colmax)
{
	colmax.assign(s.m, 0.0);
	if (s.bottom)
		for (std::size_t u = 0; u < s.n; u++)
			for (std::size_t t = 0; t < s.m; t++) {
				const double r = std::fabs(s.l.w[u * s.m + t]) / sub.presence;
				if (!(r < kInfinity))
					return false;
				colmax[s.l.cell[t]] = std::max(colmax[s.l.cell[t]], r);
			}
	return true;
}

// The seeds' direction: 1 / range_k of each varying cell (range_k = max - min of q_k over the
// points; 0 for a constant cell), a scale-free proxy of the equal-split direction.
std::vector<double>
seed_direction(const PairSetup &s)
{
	std::vector<double> inv_range(s.mv, 0.0);
	for (std::size_t t = 0; t < s.mv; t++) {
		double lo = s.l.w[t], hi = s.l.w[t];
		for (std::size_t u = 1; u < s.n; u++) {
			lo = std::min(lo, s.l.w[u * s.m + t]);
			hi = std::max(hi, s.l.w[u * s.m + t]);
		}
		inv_range[t] = hi - lo > 0 ? 1 / (hi - lo) : 0.0;
	}
	return inv_range;
}

using PairList = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

std::uint64_t
pair_key(std::size_t i, std::size_t j)
{
	return (static_cast<std::uint64_t>(i) << 32) | j;
}

// The working set's pairs (chosen) and their keys.
struct ChosenPairs {
	PairList &list;
	std::unordered_set<std::uint64_t> keys;
	explicit ChosenPairs(PairList &l) : list(l)
	{
		for (const auto &p : list)
			keys.insert(pair_key(p.first, p.second));
	}
	void add(std::size_t i, std::size_t j)
	{
		if (keys.insert(pair_key(i, j)).second)
			list.emplace_back(static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j));
	}
	bool has(std::size_t i, std::size_t j) const { return keys.count(pair_key(i, j)) != 0; }
};

// The generation rounds: allocate on the working set (the presence rows and `chosen`), then rate
// the rows against the scales; rate_pairs(rate, judge) calls judge(ratio, i, j) at least for every
// pair row above 1 that is not in the set (it may skip the others) and returns the number of
// rows of the set it found above 1 + 1e-9, or -1 to give up. Rows above 1 that are not in the set
// (the 512 worst) join it and the strategy runs again; a row of the set above 1 + 1e-9, a give-up
// or 60 rounds: complete stays false (the reference decides).
template <typename RatePairs>
std::vector<double>
generation_rounds(const SubUniverse &sub, const PairSetup &s, const PointPairs &pairs, const AllocationRequest &request,
                  double epsilon, ChosenPairs &chosen, RatePairs &&rate_pairs, bool &complete)
{
	for (int round = 0; round < kMaxPairRounds; round++) {
		const ConstraintSet set = working_set(sub, s.l, s.n, chosen.list, pairs);
		std::vector<double> b = dxpriv::allocate(set, request, epsilon);
		RowRater rate(s.l, b, request, epsilon);
		TopRows top(kRowsPerRound);
		std::size_t violated = 0, member_violated = 0;
		// a row of the set holds up to the rounding check_allocation allows (1 + 1e-9); any other
		// row above 1 joins the set
		auto judge = [&](double ratio, std::size_t i, std::size_t j) {
			if (!(ratio > 1))
				return;
			const bool member = j == s.n || chosen.has(i, j);
			if (member && ratio <= 1 + 1e-9)
				return;
			violated++;
			if (member)
				member_violated++;
			else
				top.offer(ratio, i, j);
		};
		double a[16];
		if (s.bottom)
			for (std::size_t u = 0; u < s.n; u++) {
				for (std::size_t t = 0; t < s.m; t++)
					a[t] = std::fabs(s.l.w[u * s.m + t]);
				judge(rate(a, sub.presence, 1 / sub.presence, s.m), u, s.n);
			}
		const long found = rate_pairs(rate, judge);
		if (found < 0)
			break;
		member_violated += static_cast<std::size_t>(found);
		violated += static_cast<std::size_t>(found);
		if (violated == 0) {
			complete = true;
			return b;
		}
		if (member_violated > 0) // a row of the set above the rounding allowance: the reference decides
			break;
		for (const Candidate &c : top.rows())
			chosen.add(c.i, c.j);
	}
	return {};
}

// An upper bound of the rating of every pair row of a single varying cell (layout position 0)
// whose largest a / d is top: the rating of the row (top) at distance 1, widened by 1e-15 for the
// rounding of a * (1 / d) against a / d (a few ulps).
double
tree_row_bound(RowRater &rate, double top)
{
	double a[16] = {top};
	return rate(a, 1.0, 1.0, 1) * (1 + 1e-15);
}

// allocate() when at most one cell varies over the points (pair tree on): the pair rows are
// (a / d) e_k for that cell k, all dominated by the largest, found by the pair tree; the working
// set is the presence rows and the pair attaining the column maximum, allocated once and rated.
std::vector<double>
allocate_one_varying(const SubUniverse &sub, const PairSetup &s, const PointPairs &pairs,
                     const AllocationRequest &request, double epsilon, std::vector<double> &colmax, PairList &chosen,
                     bool &complete)
{
	const PairLayout &l = s.l;
	const std::size_t n = s.n, m = s.m;
	PairMax top;
	if (s.mv == 1) {
		for (std::size_t u = 0; u < n; u++)
			if (!(std::fabs(l.w[u * m]) < kInfinity))
				return {};
		// pairs at most the presence rows' maximum change neither the column maximum nor the set
		top = pairs.tree_max(l.w.data(), m, colmax[l.cell[0]]);
		if (!top.finite)
			return {}; // an infinite row: the reference raises its error
		if (top.value > colmax[l.cell[0]]) {
			colmax[l.cell[0]] = top.value;
			const std::pair<std::uint32_t, std::uint32_t> p{static_cast<std::uint32_t>(top.i),
			                                                 static_cast<std::uint32_t>(top.j)};
			if (std::find(chosen.begin(), chosen.end(), p) == chosen.end())
				chosen.push_back(p);
		}
	}
	const ConstraintSet set = working_set(sub, l, n, chosen, pairs);
	std::vector<double> b = dxpriv::allocate(set, request, epsilon);
	RowRater rate(l, b, request, epsilon);
	// every row is in the set (presence rows) or dominated by one of it (pair rows): each within the
	// rounding allowance of check_allocation, or the reference decides
	double a[16];
	if (s.bottom)
		for (std::size_t u = 0; u < n; u++) {
			for (std::size_t t = 0; t < m; t++)
				a[t] = std::fabs(l.w[u * m + t]);
			if (!(rate(a, sub.presence, 1 / sub.presence, m) <= 1 + 1e-9))
				return {};
		}
	if (s.mv == 1 && !(tree_row_bound(rate, std::max(top.value, colmax[l.cell[0]])) <= 1 + 1e-9))
		return {};
	complete = true;
	return b;
}

// allocate() over every pair, rated by passes over the pairs (no pair tree): one pass for the
// column maxima and the seeds, one per generation round.
std::vector<double>
allocate_by_scans(const SubUniverse &sub, const PairSetup &s, const PointPairs &pairs,
                  const AllocationRequest &request, double epsilon, std::vector<double> &colmax, PairList &list,
                  bool &complete)
{
	const PairLayout &l = s.l;
	const std::size_t m = s.m, mv = s.mv;
	// Column maxima over every row, and the first pair attaining each (a pair's maximum joins the
	// working set); a non-finite row, or a zero distance with a weight change, leaves the
	// reference to raise its error.
	const bool seeded = !list.empty();
	std::vector<std::pair<std::uint32_t, std::uint32_t>> argmax(m, {0, 0});
	std::vector<char> from_pair(m, 0);
	std::vector<double> top_t(mv, 0.0); // colmax in layout order
	for (std::size_t t = 0; t < mv; t++)
		top_t[t] = colmax[l.cell[t]];
	// Seeds (first weights only), found in the same pass: the pairs heaviest in the seeds'
	// direction (any choice is sound, the seeds only spare rounds).
	const std::vector<double> inv_range = seed_direction(s);
	TopRows seeds(seeded ? 0 : kSeedRows);
	bool bad = false;
	pairs.for_each([&](std::size_t i, std::size_t j, double d, double inv_d) {
		const double *wi = l.w.data() + i * m, *wj = l.w.data() + j * m;
		double score = 0;
		for (std::size_t t = 0; t < mv; t++) {
			const double a = std::fabs(wi[t] - wj[t]);
			score += a * inv_range[t];
			// a * inv_d is within a few ulps of a / d: the exact ratio only near the maximum
			if (!(a * inv_d >= top_t[t] * (1 - 1e-12)) && d > 0 && a < kInfinity)
				continue;
			const double r = a / d;
			if (r > top_t[t]) {
				top_t[t] = r;
				argmax[t] = {static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j)};
				from_pair[t] = 1;
			}
			bad |= !(r < kInfinity) || (!(d > 0) && a != 0);
		}
		if (!seeded)
			seeds.offer(score * inv_d, i, j);
	});
	if (bad)
		return {};
	for (std::size_t t = 0; t < mv; t++)
		colmax[l.cell[t]] = top_t[t];
	ChosenPairs chosen(list);
	for (std::size_t t = 0; t < mv; t++)
		if (from_pair[t])
			chosen.add(argmax[t].first, argmax[t].second);
	for (const Candidate &c : seeds.rows())
		chosen.add(c.i, c.j);
	return generation_rounds(sub, s, pairs, request, epsilon, chosen,
	                         [&](RowRater &rate, auto &judge) -> long {
		                         double a[16];
		                         pairs.for_each([&](std::size_t i, std::size_t j, double d, double inv_d) {
			                         const double *wi = l.w.data() + i * m, *wj = l.w.data() + j * m;
			                         for (std::size_t t = 0; t < mv; t++)
				                         a[t] = std::fabs(wi[t] - wj[t]);
			                         judge(rate(a, d, inv_d, mv), i, j);
		                         });
		                         return 0;
	                         },
	                         complete);
}

// allocate() with two or more varying cells, the pair rows rated by the pair tree: each varying
// cell's column maximum by its own search, the seeds and each round's violated rows by row
// searches (only the pairs a bound cannot rule out are rated).
std::vector<double>
allocate_by_tree(const SubUniverse &sub, const PairSetup &s, PairSearch &search, const PointPairs &pairs,
                 const AllocationRequest &request, double epsilon, std::vector<double> &colmax, PairList &list,
                 bool &complete)
{
	const PairLayout &l = s.l;
	const bool seeded = !list.empty();
	ChosenPairs chosen(list);
	// each cell's largest a / d above the presence rows' maximum (the reference's double), the
	// pair attaining it joins the working set
	for (std::size_t t = 0; t < s.mv; t++) {
		const PairMax top = search.max_cell(t, PairExpr::Metric, colmax[l.cell[t]]);
		if (!top.finite)
			return {};
		if (top.value > colmax[l.cell[t]]) {
			colmax[l.cell[t]] = top.value;
			chosen.add(top.i, top.j);
		}
	}
	if (!seeded) {
		PairRowQuery query;
		query.coef = seed_direction(s);
		query.keep = kSeedRows;
		const PairRowResult seeds = search.top_rows(query);
		if (!seeds.finite)
			return {};
		for (const PairRow &r : seeds.rows)
			chosen.add(r.i, r.j);
	}
	return generation_rounds(sub, s, pairs, request, epsilon, chosen,
	                         [&](RowRater &rate, auto &judge) -> long {
		                         PairRowQuery query;
		                         if (!rate.rows(s.mv, query))
			                         return -1; // an exact cell varies: the reference decides
		                         query.threshold = 1;
		                         query.keep = kRowsPerRound;
		                         query.exclude = &chosen.keys;
		                         query.exclude_limit = 1 + 1e-9;
		                         const PairRowResult found = search.top_rows(query);
		                         if (!found.finite)
			                         return -1;
		                         for (const PairRow &r : found.rows)
			                         judge(r.value, r.i, r.j);
		                         return found.excluded_above ? 1 : 0;
	                         },
	                         complete);
}

// Refuses, with the numbers, a statement whose pair rows the generation could not settle when
// the reference's stored set of every pair would pass the work cap.
void
refuse_stored_pairs(const PairSetup &s, std::size_t cells)
{
	const double n = static_cast<double>(s.n);
	const double edges = 0.5 * n * (n - 1) + (s.bottom ? n : 0.0);
	const double work = edges * 32, cap = kMaxConstraintWork;
	if (!(work > cap))
		return;
	char msg[320];
	std::snprintf(msg, sizeof msg,
	              "the %zu cells of this query need %.3g privacy constraints (%zu of the cells vary over the points) "
	              "that the pair search could not settle, a work of at least %.3g, %.3g times the limit of %.3g",
	              cells, edges, s.mv, work, work / cap, cap);
	throw CoreError(ErrorKind::ProgramLimit, msg,
	                "Every pair of points of an l1, l2 or linf column is one constraint when two or more cells vary "
	                "over the points: ask for fewer aggregates per query, or ask the table owner for fewer points.");
}

} // namespace

// See allocation_internal.h.
std::vector<double>
PairPlanner::allocate(const CellWeights &weights, const AllocationRequest &request, double epsilon,
                      std::vector<double> &colmax, bool &complete)
{
	const SubUniverse &sub = impl_->sub;
	const PointPairs &pairs = impl_->pairs;
	const PairSetup s = pair_setup(sub, pairs, weights);
	impl_->verified_for = nullptr;
	complete = false;
	if (!presence_maxima(sub, s, colmax))
		return {};
	std::vector<double> b;
	if (!impl_->tree) {
		b = allocate_by_scans(sub, s, pairs, request, epsilon, colmax, impl_->chosen, complete);
	} else if (s.mv <= 1) {
		b = allocate_one_varying(sub, s, pairs, request, epsilon, colmax, impl_->chosen, complete);
	} else {
		impl_->search = pairs.search(s.l.w.data(), s.m, s.mv);
		impl_->search_for = impl_->search ? &weights : nullptr;
		if (impl_->search)
			b = allocate_by_tree(sub, s, *impl_->search, pairs, request, epsilon, colmax, impl_->chosen, complete);
		tree_generations += complete;
		if (!complete)
			refuse_stored_pairs(s, weights.cells());
	}
	if (!complete)
		return {};
	impl_->verified_for = &weights;
	impl_->verified_scales = b;
	impl_->verified_epsilon = epsilon;
	return b;
}

// See allocation_internal.h.
bool
PairPlanner::verified(const CellWeights &weights, const std::vector<double> &scales, double epsilon) const
{
	return impl_->verified_for == &weights && impl_->verified_scales == scales && impl_->verified_epsilon == epsilon;
}

// See allocation_internal.h.
double
PairPlanner::ratio(const CellWeights &weights, const std::vector<double> &scales, double epsilon,
                   const std::vector<std::size_t> *cells) const
{
	const SubUniverse &sub = impl_->sub;
	const PointPairs &pairs = impl_->pairs;
	const PairSetup s = pair_setup(sub, pairs, weights);
	const PairLayout &l = s.l;
	const std::size_t n = s.n, m = s.m, mv = s.mv;
	std::vector<double> b(m, 0.0); // cells outside `cells` count as 0: infinite scales
	for (std::size_t k = 0; k < m; k++)
		b[k] = cells ? kInfinity : scales[k];
	if (cells)
		for (std::size_t k : *cells)
			b[k] = scales[k];
	RowRater rate(l, b, AllocationRequest{}, epsilon);
	double worst = 0;
	double a[16];
	if (s.bottom)
		for (std::size_t u = 0; u < n; u++) {
			for (std::size_t t = 0; t < m; t++)
				a[t] = std::fabs(l.w[u * m + t]);
			worst = std::max(worst, rate(a, sub.presence, 1 / sub.presence, m));
		}
	if (impl_->tree && mv == 1) {
		double floor = 0; // the presence rows' largest ratio in the cell: pairs below it are dominated
		if (s.bottom)
			for (std::size_t u = 0; u < n; u++)
				floor = std::max(floor, std::fabs(l.w[u * m]) / sub.presence);
		const PairMax top = pairs.tree_max(l.w.data(), m, floor);
		if (!top.finite)
			return kInfinity;
		return std::max(worst, tree_row_bound(rate, std::max(top.value, floor)));
	}
	if (impl_->tree && mv > 1) { // the largest pair row, by a row search
		std::unique_ptr<PairSearch> own;
		PairSearch *search = impl_->search_for == &weights ? impl_->search.get() : nullptr;
		if (!search) {
			own = pairs.search(l.w.data(), m, mv);
			search = own.get();
		}
		PairRowQuery query;
		if (!search || !rate.rows(mv, query))
			return kInfinity; // weights out of the tree's range, or an exact cell that varies
		const PairRowResult top = search->top_rows(query);
		if (!top.finite)
			return kInfinity;
		for (const PairRow &r : top.rows)
			worst = std::max(worst, r.value);
		return worst;
	}
	if (impl_->tree)
		return worst;
	pairs.for_each([&](std::size_t i, std::size_t j, double d, double inv_d) {
		for (std::size_t t = 0; t < mv; t++)
			a[t] = std::fabs(l.w[i * m + t] - l.w[j * m + t]);
		worst = std::max(worst, rate(a, d, inv_d, mv));
	});
	return worst;
}

} // namespace detail
} // namespace dxpriv
