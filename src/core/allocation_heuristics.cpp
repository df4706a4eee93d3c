// Heuristic allocation strategies of MECHANISMS.md §3.8: equal split, equal scale and the exact
// limit of Algorithm 3 (progressive filling), with the helpers they share with the solver.
#include "core/allocation.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/allocation_internal.h"
#include "core/error.h"

namespace dxpriv {
namespace detail {

// Column maxima s_k = max_e r_k(e) of a constraint set; argmax (when given) receives the first
// row attaining each maximum (count() for an all-zero column).
std::vector<double>
column_max(const ConstraintSet &c, std::vector<std::size_t> *argmax)
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

// Progressive filling: every unfrozen x_k = 1/b_k rises as base_k + rate_k t with a common t
// (base 0 and rate 1 when not given: Strategy 3 in its exact limit); when a row's remaining budget
// reaches 0 every cell on it freezes. Returns x; the rows that froze cells are appended to
// `binding` when given. Lazy event queue: a row's binding level computed with an older set of
// frozen cells is a lower bound of its true level (freezing only slows the row down), so popping
// the smallest key and recomputing stale keys finds the rows in order. A row already full at
// t = 0 (the base uses its whole budget) freezes its cells at their base.
std::vector<double>
water_fill(const ConstraintSet &c, const std::vector<double> &colmax, double epsilon,
           std::vector<std::size_t> *binding, const std::vector<double> *base, const std::vector<double> *rate)
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
	auto base_of = [base](std::size_t k) { return base ? (*base)[k] : 0.0; };
	auto rate_of = [rate](std::size_t k) { return rate ? (*rate)[k] : 1.0; };
	// Level at which row e binds given the cells frozen so far (+inf when no cell of e is active).
	auto binding_level = [&](std::size_t e) {
		double speed = 0, used = 0;
		c.for_each(e, [&](std::size_t k, double v) {
			if (active[k]) {
				speed += v * rate_of(k);
				used += v * base_of(k);
			} else {
				used += v * x[k];
			}
		});
		return speed > 0 ? std::max(0.0, epsilon - used) / speed : kInfinity;
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
				x[k] = base_of(k) + rate_of(k) * level;
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

} // namespace detail
} // namespace dxpriv
