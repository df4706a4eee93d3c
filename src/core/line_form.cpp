// Closed forms for piecewise-affine cells along one column (line_form.h): every quantity from the
// pieces' end points, mirroring the per-point functions step by step.
#include "core/line_form.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>

#include "core/allocation_internal.h"
#include "core/error.h"
#include "core/linear_query.h"
#include "core/point_table.h"

namespace dxpriv {

namespace {

constexpr double kLineExactScale = 1099511627776.0; // choose_grid keeps grid 1 for integer weights up to this scale
constexpr std::size_t kMaxLineCells = 16;  // build_constraints' direct path (allocation_constraints.cpp)

bool
is_integer(double x)
{
	return std::isfinite(x) && std::floor(x) == x;
}

// Whether dom is a line of exact integer ordinals within kMaxExactLineValue.
bool
exact_line_domain(const Domain &dom, std::string *why)
{
	auto no = [why](const char *w) {
		if (why)
			*why = w;
		return false;
	};
	if (dom.kind() != DomainKind::Range && dom.kind() != DomainKind::Date)
		return no("the column is not a range or date domain");
	if (!is_integer(dom.lo()) || !is_integer(dom.step()) || !(dom.step() > 0))
		return no("the domain's lower end or step is not an integer");
	if (std::fabs(dom.lo()) + static_cast<double>(dom.size()) * dom.step() > kMaxExactLineValue)
		return no("the domain's ordinals exceed 2^48");
	if (dom.size() > std::numeric_limits<std::uint32_t>::max())
		return no("the domain has more than 2^32 - 1 points");
	return true;
}

// Whether starts cover [0, n) in order (strictly increasing from 0 to n).
bool
covers(const std::vector<std::size_t> &start, std::size_t n)
{
	if (start.size() < 2 || start.front() != 0 || start.back() != n)
		return false;
	for (std::size_t p = 0; p + 1 < start.size(); p++)
		if (!(start[p] < start[p + 1]))
			return false;
	return true;
}

// Signal that the closed forms do not cover a plan (plan_multi_linear_line returns nullopt).
struct NeedsPoints {};

// The per-point weights' closed forms over one column (line_cells_exact holds).
class Line {
public:
	Line(const SubUniverse &sub, const LineCells &c)
	    : sub_(sub), dom_(sub.domains[0]), metric_(sub.metrics[0]), c_(c), m_(c.cells), n_(dom_.size())
	{
	}

	std::size_t cells() const { return m_; }
	std::size_t pieces() const { return c_.pieces(); }
	std::size_t begin(std::size_t p) const { return c_.start[p]; }
	std::size_t end(std::size_t p) const { return c_.start[p + 1]; }
	double q(std::size_t p, std::size_t k, std::size_t u) const { return c_.at(dom_, p, k, u); }
	double slope(std::size_t p, std::size_t k) const { return c_.b[p * m_ + k]; }

	// Calls f(p, u) for the end points of every piece (its first and last point, once when equal).
	template <typename F>
	void for_each_end(F &&f) const
	{
		for (std::size_t p = 0; p < pieces(); p++) {
			f(p, begin(p));
			if (end(p) - 1 != begin(p))
				f(p, end(p) - 1);
		}
	}

	// max over u of the number of non-zero cells (max_cells_per_point): at a point of a piece where
	// no sloped cell vanishes, or at the points where one does.
	std::size_t max_per_point() const
	{
		std::size_t best = 0;
		for (std::size_t p = 0; p < pieces(); p++) {
			std::vector<std::size_t> candidates;
			for (std::size_t u = begin(p); u < end(p) && u < begin(p) + m_ + 1; u++)
				candidates.push_back(u);
			for (std::size_t k = 0; k < m_; k++)
				if (slope(p, k) != 0) {
					const std::size_t z = argmin_abs(p, k);
					if (q(p, k, z) == 0)
						candidates.push_back(z);
				}
			for (std::size_t u : candidates) {
				std::size_t nz = 0;
				for (std::size_t k = 0; k < m_; k++)
					nz += q(p, k, u) != 0;
				best = std::max(best, nz);
			}
		}
		return best;
	}

	// A point of piece p where |q_k| is smallest (|q_k| is convex along the piece).
	std::size_t argmin_abs(std::size_t p, std::size_t k) const
	{
		const std::size_t lo = begin(p), hi = end(p) - 1;
		if (slope(p, k) == 0)
			return lo;
		// the real zero of a + b * (l + s * u), then the integers around it, clamped to the piece
		const double a = c_.a[p * m_ + k], b = c_.b[p * m_ + k];
		const double u0 = (-a / b - dom_.lo()) / dom_.step();
		std::size_t best = lo;
		double best_v = std::fabs(q(p, k, lo));
		auto consider = [&](double x) {
			const double clamped = std::min(std::max(x, static_cast<double>(lo)), static_cast<double>(hi));
			const std::size_t u = static_cast<std::size_t>(clamped);
			const double v = std::fabs(q(p, k, u));
			if (v < best_v || (v == best_v && u < best)) {
				best_v = v;
				best = u;
			}
		};
		consider(static_cast<double>(hi));
		if (std::isfinite(u0))
			for (double x = std::floor(u0) - 2; x <= std::ceil(u0) + 2; x += 1)
				consider(x);
		return best;
	}

	// The points of piece p where |q_k(u)| <= bound, an interval [first, last] (first > last: none).
	std::pair<std::size_t, std::size_t> within(std::size_t p, std::size_t k, double bound) const
	{
		const std::size_t lo = begin(p), hi = end(p) - 1;
		auto g = [&](std::size_t u) { return std::fabs(q(p, k, u)); };
		const std::size_t um = argmin_abs(p, k);
		if (g(um) > bound)
			return {1, 0};
		std::size_t l = lo, r = um; // g non-increasing on [lo, um]: the first u with g(u) <= bound
		while (l < r) {
			const std::size_t mid = l + (r - l) / 2;
			if (g(mid) <= bound)
				r = mid;
			else
				l = mid + 1;
		}
		const std::size_t first = l;
		l = um;
		r = hi; // g non-decreasing on [um, hi]: the last u with g(u) <= bound
		while (l < r) {
			const std::size_t mid = l + (r - l + 1) / 2;
			if (g(mid) <= bound)
				l = mid;
			else
				r = mid - 1;
		}
		return {first, l};
	}

	// The presence points build_constraints offers, ascending: every point, less those whose
	// presence row a champion's dominates (dominated_presence in allocation_constraints.cpp).
	template <typename F>
	void for_each_presence_point(F &&f) const
	{
		std::vector<std::size_t> champions; // per cell, the first point where |q_k| is largest
		std::vector<std::size_t> champion_piece;
		const bool filter = detail::presence_prefilter() && std::isfinite(sub_.presence) && m_ <= kMaxLineCells;
		for (std::size_t k = 0; filter && k < m_; k++) {
			std::size_t best = n_, best_p = 0;
			double top = 0;
			for (std::size_t p = 0; p < pieces(); p++) {
				std::size_t u = begin(p);
				double v = std::fabs(q(p, k, u));
				if (slope(p, k) != 0 && std::fabs(q(p, k, end(p) - 1)) > v) {
					u = end(p) - 1;
					v = std::fabs(q(p, k, u));
				}
				if (v > top) {
					top = v;
					best = u;
					best_p = p;
				}
			}
			if (best < n_ && std::find(champions.begin(), champions.end(), best) == champions.end()) {
				champions.push_back(best);
				champion_piece.push_back(best_p);
			}
		}
		for (std::size_t p = 0; p < pieces(); p++) {
			// the points of the piece some champion dominates: one interval per champion
			std::vector<std::pair<std::size_t, std::size_t>> covered;
			for (std::size_t i = 0; i < champions.size(); i++) {
				std::size_t first = begin(p), last = end(p) - 1;
				for (std::size_t k = 0; k < m_ && first <= last; k++) {
					const auto w = within(p, k, std::fabs(q(champion_piece[i], k, champions[i])));
					first = std::max(first, w.first);
					last = std::min(last, w.second);
					if (w.first > w.second)
						first = last + 1;
				}
				if (first <= last)
					covered.emplace_back(first, last);
			}
			std::sort(covered.begin(), covered.end());
			std::size_t u = begin(p);
			auto emit_to = [&](std::size_t stop) { // points [u, stop) are offered
				for (; u < stop; u++)
					f(p, u);
			};
			for (const auto &iv : covered) {
				if (iv.second + 1 <= u)
					continue;
				emit_to(std::max(u, iv.first));
				std::vector<std::size_t> inside; // champions are never skipped
				for (std::size_t c : champions)
					if (c >= u && c <= iv.second)
						inside.push_back(c);
				std::sort(inside.begin(), inside.end());
				for (std::size_t c : inside)
					f(p, c);
				u = iv.second + 1;
			}
			emit_to(end(p));
		}
	}

	// Calls offer(a, d) for build_constraints' edges (see build_constraints_listed).
	template <typename F>
	void list_edges(F &&offer) const
	{
		double a[kMaxLineCells];
		if (std::isfinite(sub_.presence))
			for_each_presence_point([&](std::size_t p, std::size_t u) {
				for (std::size_t k = 0; k < m_; k++)
					a[k] = std::fabs(q(p, k, u));
				offer(a, sub_.presence);
			});
		if (n_ < 2 || metric_.kind() == MetricKind::None)
			return;
		if (metric_.kind() != MetricKind::Absolute)
			throw NeedsPoints{};
		for (std::size_t p = 0; p < pieces(); p++) {
			if (end(p) - begin(p) >= 2) { // the edges inside the piece: all this row
				const std::size_t u = begin(p);
				for (std::size_t k = 0; k < m_; k++)
					a[k] = std::fabs(q(p, k, u) - q(p, k, u + 1));
				offer(a, metric_.distance(dom_, u, u + 1));
			}
			if (end(p) < n_) { // the edge to the next piece
				const std::size_t u = end(p) - 1;
				for (std::size_t k = 0; k < m_; k++)
					a[k] = std::fabs(q(p, k, u) - q(p + 1, k, u + 1));
				offer(a, metric_.distance(dom_, u, u + 1));
			}
		}
	}

	// The checks of check_sub_universe (allocation_constraints.cpp) and generalized_sensitivity.
	void check_sub() const
	{
		(void) sub_.size();
		if (!(sub_.presence > 0))
			throw CoreError(ErrorKind::InvalidParameter, "presence distance must be positive",
			                "Give a positive number, or infinity for the bounded model (public row count).");
		metric_.validate(dom_);
	}

	ConstraintSet constraints() const
	{
		check_sub();
		if (n_ >= 2 && metric_.kind() != MetricKind::None && metric_.kind() != MetricKind::Absolute)
			throw NeedsPoints{};
		const std::size_t mpp = max_per_point();
		double expected = std::isfinite(sub_.presence) ? static_cast<double>(n_) : 0.0;
		if (n_ >= 2 && metric_.kind() == MetricKind::Absolute)
			expected += static_cast<double>(n_ - 1);
		return detail::build_constraints_listed(m_, expected, mpp, [this](const auto &offer) { list_edges(offer); });
	}

	double sensitivity(std::size_t k) const
	{
		(void) sub_.size();
		if (!(sub_.presence > 0))
			throw CoreError(ErrorKind::InvalidParameter, "presence distance must be positive",
			                "Give a positive number, or infinity for the bounded model (public row count).");
		metric_.validate(dom_);
		double top = 0, lo = 0, hi = 0;
		bool first = true;
		for_each_end([&](std::size_t p, std::size_t u) {
			const double w = q(p, k, u);
			top = std::max(top, std::fabs(w));
			lo = first ? w : std::min(lo, w);
			hi = first ? w : std::max(hi, w);
			first = false;
		});
		double s = top / sub_.presence; // presence edges u -> ⊥
		if (n_ < 2 || metric_.kind() == MetricKind::None)
			return s;
		if (metric_.kind() == MetricKind::Discrete)
			return std::max(s, hi > lo ? (hi - lo) / metric_.distance(dom_, 0, 1) : 0.0);
		if (metric_.kind() != MetricKind::Absolute)
			throw CoreError(ErrorKind::Internal, "line cells need an absolute, discrete or none metric");
		double line = 0;
		auto edge = [&](double diff, std::size_t u) {
			if (diff > 0)
				line = std::max(line, diff / metric_.distance(dom_, u, u + 1));
		};
		for (std::size_t p = 0; p < pieces(); p++) {
			if (end(p) - begin(p) >= 2)
				edge(std::fabs(q(p, k, begin(p) + 1) - q(p, k, begin(p))), begin(p));
			if (end(p) < n_)
				edge(std::fabs(q(p + 1, k, end(p)) - q(p, k, end(p) - 1)), end(p) - 1);
		}
		return std::max(s, line);
	}

private:
	const SubUniverse &sub_;
	const Domain &dom_;
	const ColumnMetric &metric_;
	const LineCells &c_;
	std::size_t m_, n_;
};

// plan_multi_linear's view of line cells (allocation_internal.h): integer weights, so grid 1 up to
// a scale of 2^40 and rounding changes nothing; beyond, NeedsPoints.
class LineCellWeights final : public detail::CellWeights {
public:
	LineCellWeights(const SubUniverse &sub, const LineCells &c) : line_(sub, c) {}
	std::size_t cells() const override { return line_.cells(); }

	// plan_linear_query on the line, step by step (linear_query.cpp).
	LinearNoisePlan single(double epsilon) const override
	{
		if (!std::isfinite(epsilon) || !(epsilon > 0))
			throw CoreError(ErrorKind::InvalidParameter, "epsilon must be positive and finite",
			                "Give the query a positive privacy budget.");
		const double s_raw = line_.sensitivity(0);
		LinearNoisePlan plan;
		double t = s_raw / epsilon;
		check_noise_scale(t);
		if (s_raw > 0)
			t = std::max(t, std::numeric_limits<double>::min());
		plan.grid = grid(0, t, plan.integer_weights);
		if (s_raw == 0)
			return plan;
		plan.sensitivity = s_raw; // the weights on grid 1 are the weights
		finish_noise_scale(plan, epsilon);
		return plan;
	}
	ConstraintSet constraints() const override { return line_.constraints(); }
	double sensitivity(std::size_t k) const override { return line_.sensitivity(k); }
	double grid(std::size_t, double t, bool &integer_weights) const override
	{
		integer_weights = true; // integers of magnitude <= 2^48
		if (t <= kLineExactScale)
			return 1;
		throw NeedsPoints{};
	}
	std::unique_ptr<detail::CellWeights> rounded(const std::vector<LinearNoisePlan> &) const override
	{
		return nullptr; // integer weights on grid 1
	}

private:
	Line line_;
};

void
require_exact(const SubUniverse &sub, const LineCells &cells)
{
	std::string why;
	if (!line_cells_exact(sub, cells, &why))
		throw CoreError(ErrorKind::Internal, "line cells are not exact: " + why);
}

} // namespace

// See line_form.h.
std::vector<std::vector<double>>
LineCells::dense(const Domain &dom) const
{
	std::vector<std::vector<double>> q(cells, std::vector<double>(dom.size(), 0.0));
	for (std::size_t p = 0; p < pieces(); p++)
		for (std::size_t u = start[p]; u < start[p + 1]; u++)
			for (std::size_t k = 0; k < cells; k++)
				q[k][u] = at(dom, p, k, u);
	return q;
}

// See line_form.h.
bool
line_cells_exact(const SubUniverse &sub, const LineCells &cells, std::string *why)
{
	auto no = [why](const char *w) {
		if (why)
			*why = w;
		return false;
	};
	if (sub.domains.size() != 1 || sub.metrics.size() != 1)
		return no("not one column");
	const Domain &dom = sub.domains[0];
	if (!exact_line_domain(dom, why))
		return false;
	const MetricKind kind = sub.metrics[0].kind();
	if (kind != MetricKind::Absolute && kind != MetricKind::Discrete && kind != MetricKind::None)
		return no("the metric is not absolute, discrete or none");
	if (cells.cells == 0 || cells.cells > kMaxLineCells)
		return no("not 1 to 16 cells");
	if (!covers(cells.start, dom.size()) || cells.a.size() != cells.pieces() * cells.cells ||
	    cells.b.size() != cells.a.size())
		return no("the pieces do not cover the column");
	for (std::size_t i = 0; i < cells.a.size(); i++)
		if (!is_integer(cells.a[i]) || !is_integer(cells.b[i]))
			return no("a coefficient is not an integer");
	for (std::size_t p = 0; p < cells.pieces(); p++)
		for (std::size_t k = 0; k < cells.cells; k++) {
			// |a| + |b| * max|ordinal| bounds every weight of the piece and every product on the way
			const double bound = std::fabs(cells.a[p * cells.cells + k]) +
			                     std::fabs(cells.b[p * cells.cells + k]) *
			                         (std::fabs(dom.lo()) + static_cast<double>(dom.size()) * dom.step());
			if (!(bound <= kMaxExactLineValue))
				return no("a weight exceeds 2^48");
		}
	return true;
}

// See line_form.h.
ConstraintSet
build_constraints_line(const SubUniverse &sub, const LineCells &cells)
{
	require_exact(sub, cells);
	try {
		return Line(sub, cells).constraints();
	} catch (const NeedsPoints &) {
		throw CoreError(ErrorKind::Internal, "line constraints need an absolute or none metric");
	}
}

// See line_form.h.
double
line_sensitivity(const SubUniverse &sub, const LineCells &cells, std::size_t k)
{
	require_exact(sub, cells);
	if (k >= cells.cells)
		throw CoreError(ErrorKind::Internal, "line cell out of range");
	return Line(sub, cells).sensitivity(k);
}

// See line_form.h.
std::optional<MultiLinearPlan>
plan_multi_linear_line(const SubUniverse &sub, const LineCells &cells, double epsilon, const AllocationRequest &request,
                       ConstraintSet *constraints)
{
	require_exact(sub, cells);
	try {
		return detail::plan_multi_linear(LineCellWeights(sub, cells), epsilon, request, constraints);
	} catch (const NeedsPoints &) {
		return std::nullopt;
	}
}

// See line_form.h.
std::optional<double>
plain_dp_scale_line(const SubUniverse &sub, const LineCells &cells, double epsilon, bool *exact)
{
	require_exact(sub, cells);
	if (!std::isfinite(epsilon) || !(epsilon > 0))
		throw CoreError(ErrorKind::InvalidParameter, "epsilon must be positive and finite",
		                "Give the query a positive privacy budget.");
	const Line line(sub, cells);
	line.check_sub();
	const Domain &dom = sub.domains[0];
	const ColumnMetric &metric = sub.metrics[0];
	const std::size_t n = dom.size(), m = cells.cells;
	const bool bottom = std::isfinite(sub.presence);
	double eps_min = bottom ? sub.presence : kInfinity;
	bool is_exact = true;
	if (n >= 2 && metric.kind() != MetricKind::None) // discrete: its one distance; absolute: every edge's
		eps_min = std::min(eps_min, metric.distance(dom, 0, 1));
	const double nd = static_cast<double>(n), md = static_cast<double>(m);
	const double per_pair = 1.0 + static_cast<double>(std::min(m, 2 * line.max_per_point()));
	double delta = 0;
	if (0.5 * nd * nd * per_pair <= kMaxBaselineWork ||
	    (m <= 30 && std::ldexp(nd * md, static_cast<int>(m) - 1) <= kMaxBaselineWork)) {
		// the largest L1 difference over all pairs (⊥ included): max over sign vectors of the spread
		// of sigma . q, affine on every piece, hence attained at the pieces' ends (exact integers)
		for (std::uint64_t mask = 0; mask < (std::uint64_t{1} << (m - 1)); mask++) {
			double lo = bottom ? 0 : kInfinity, hi = bottom ? 0 : -kInfinity;
			line.for_each_end([&](std::size_t p, std::size_t u) {
				double s = line.q(p, 0, u);
				for (std::size_t k = 1; k < m; k++)
					s += (mask >> (k - 1) & 1) ? -line.q(p, k, u) : line.q(p, k, u);
				lo = std::min(lo, s);
				hi = std::max(hi, s);
			});
			delta = std::max(delta, hi - lo);
		}
	} else {
		// the maximum over the constraint edges (presence edges included)
		is_exact = false;
		if (n >= 2 && metric.kind() == MetricKind::Discrete)
			return std::nullopt;
		auto l1 = [&](std::size_t p, std::size_t u, std::size_t pv, std::size_t v, bool absent) {
			double s = 0;
			for (std::size_t k = 0; k < m; k++) {
				const double a = absent ? std::fabs(line.q(p, k, u)) : std::fabs(line.q(p, k, u) - line.q(pv, k, v));
				if (a != 0)
					s += a;
			}
			delta = std::max(delta, s);
		};
		if (bottom)
			line.for_each_end([&](std::size_t p, std::size_t u) { l1(p, u, p, u, true); });
		for (std::size_t p = 0; n >= 2 && metric.kind() == MetricKind::Absolute && p < line.pieces(); p++) {
			if (line.end(p) - line.begin(p) >= 2)
				l1(p, line.begin(p), p, line.begin(p) + 1, false);
			if (line.end(p) < n)
				l1(p, line.end(p) - 1, p + 1, line.end(p), false);
		}
	}
	if (exact)
		*exact = is_exact;
	if (delta == 0 || !(eps_min < kInfinity))
		return 0.0;
	return delta / (eps_min * epsilon);
}

// See line_form.h.
bool
line_cells_vary(const Domain &dom, const LineCells &cells)
{
	for (std::size_t k = 0; k < cells.cells; k++) {
		const double first = cells.at(dom, 0, k, 0);
		for (std::size_t p = 0; p < cells.pieces(); p++)
			if (cells.at(dom, p, k, cells.start[p]) != first || cells.at(dom, p, k, cells.start[p + 1] - 1) != first)
				return true;
	}
	return false;
}

// See line_form.h.
std::vector<std::optional<double>>
LineTable::dense(const Domain &dom) const
{
	std::vector<std::optional<double>> out(dom.size());
	for (std::size_t p = 0; p + 1 < start.size(); p++)
		if (present[p])
			for (std::size_t u = start[p]; u < start[p + 1]; u++)
				out[u] = a[p] + b[p] * dom.ordinal(u);
	return out;
}

// See line_form.h.
bool
line_table_exact(const Domain &dom, const LineTable &t)
{
	if (!exact_line_domain(dom, nullptr) || !covers(t.start, dom.size()))
		return false;
	const std::size_t pieces = t.start.size() - 1;
	if (t.present.size() != pieces || t.a.size() != pieces || t.b.size() != pieces)
		return false;
	const double ordinal_bound = std::fabs(dom.lo()) + static_cast<double>(dom.size()) * dom.step();
	for (std::size_t p = 0; p < pieces; p++) {
		if (!is_integer(t.a[p]) || !is_integer(t.b[p]))
			return false;
		if (t.present[p] && !(std::fabs(t.a[p]) + std::fabs(t.b[p]) * ordinal_bound <= kMaxExactLineValue))
			return false;
	}
	return true;
}

// See line_form.h.
std::string
encode_line_table(const Domain &dom, const LineTable &t)
{
	if (!line_table_exact(dom, t))
		throw CoreError(ErrorKind::Internal, "line table is not exact");
	std::vector<PointTablePiece> pieces;
	for (std::size_t p = 0; p + 1 < t.start.size(); p++) {
		PointTablePiece piece;
		piece.start = t.start[p];
		piece.present = t.present[p] != 0;
		// a + b * (lo + step * u) = (a + b * lo) + (b * step) * u, every term an exact integer
		piece.a = piece.present ? t.a[p] + t.b[p] * dom.lo() : 0.0;
		piece.b = piece.present ? t.b[p] * dom.step() : 0.0;
		pieces.push_back(piece);
	}
	return encode_point_table_pieces(dom.size(), pieces);
}

} // namespace dxpriv
