// Synthetic release by measured query groups (group_release.h).
#include "core/group_release.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.h"
#include "core/exponential_mechanism.h"
#include "core/linear_query.h"
#include "core/release_steps.h"

namespace dxpriv {

namespace {

constexpr std::size_t kAllOnes = std::numeric_limits<std::size_t>::max(); // the row count "cell"
constexpr double kFitFloor = 1e-6;

// epsilon / parts, rounded down so that parts * result never exceeds epsilon.
double
share(double epsilon, double parts)
{
	return epsilon / parts * (1 - 1e-12);
}

// The columns a set of cells depends on, and the cells as dense vectors over those columns only.
struct Reduced {
	SubUniverse sub;
	std::vector<std::size_t> kept; // columns of the full sub-universe kept, ascending
	std::vector<std::vector<double>> cells;
};

// Drops the columns along which every cell is constant. Exact: a column is dropped only when,
// for every cell, each support point's value equals the value at the same point with the dropped
// coordinates set to 0, and the support is the full preimage of its reduced support (checked);
// otherwise nothing is dropped. Then every edge of a dropped column has a_k = 0 for all cells, and
// the edges of kept columns and the presence edges give the same rows as over the reduced
// sub-universe: the constraints (and S_g) are those of the full universe.
Reduced
reduce(const SubUniverse &sub, const Workload &w, const std::vector<std::size_t> &cells)
{
	const std::size_t c = sub.domains.size(), n = w.universe;
	std::vector<std::size_t> size(c), stride(c, 1);
	for (std::size_t i = 0; i < c; ++i)
		size[i] = sub.domains[i].size();
	for (std::size_t i = c; i-- > 1;)
		stride[i - 1] = stride[i] * size[i];
	// candidate columns by a data-independent hash of the cells' coefficients at each point
	std::vector<std::uint64_t> h(n, 0);
	for (std::size_t t = 0; t < cells.size(); ++t) {
		const WorkloadQuery &q = w.queries[cells[t]];
		const std::uint64_t r = (0x9e3779b97f4a7c15ULL * (t + 1)) ^ 0xd1b54a32d192ed03ULL;
		for (std::size_t e = 0; e < q.index.size(); ++e)
			h[q.index[e]] += static_cast<std::uint64_t>(q.units[e]) * (r | 1);
	}
	std::vector<char> keep(c, 0);
	for (std::size_t i = 0; i < c; ++i)
		for (std::size_t u = 0; u < n && !keep[i]; ++u) {
			const std::size_t coord = (u / stride[i]) % size[i];
			if (coord && h[u] != h[u - coord * stride[i]])
				keep[i] = 1;
		}
	// exact verification
	auto base = [&](std::size_t u) {
		std::size_t b = u;
		for (std::size_t i = 0; i < c; ++i)
			if (!keep[i])
				b -= ((u / stride[i]) % size[i]) * stride[i];
		return b;
	};
	std::size_t dropped_points = 1;
	for (std::size_t i = 0; i < c; ++i)
		if (!keep[i])
			dropped_points *= size[i];
	bool ok = dropped_points > 1;
	for (std::size_t t = 0; ok && t < cells.size(); ++t) {
		const WorkloadQuery &q = w.queries[cells[t]];
		std::size_t base_support = 0;
		for (std::size_t e = 0; ok && e < q.index.size(); ++e) {
			const std::size_t b = base(q.index[e]);
			if (b == q.index[e]) {
				++base_support;
				continue;
			}
			const auto it = std::lower_bound(q.index.begin(), q.index.end(), static_cast<std::uint32_t>(b));
			ok = it != q.index.end() && *it == b && q.units[it - q.index.begin()] == q.units[e];
		}
		ok = ok && q.index.size() == base_support * dropped_points;
	}
	if (!ok)
		std::fill(keep.begin(), keep.end(), 1);
	if (std::find(keep.begin(), keep.end(), 1) == keep.end())
		keep[0] = 1; // constant cells: keep one column (still exact: fewer columns dropped)
	Reduced r;
	r.sub.presence = sub.presence;
	std::vector<std::size_t> kept;
	for (std::size_t i = 0; i < c; ++i)
		if (keep[i]) {
			kept.push_back(i);
			r.sub.domains.push_back(sub.domains[i]);
			r.sub.metrics.push_back(sub.metrics[i]);
		}
	const std::size_t m = r.sub.size();
	r.kept = kept;
	// full point -> reduced point (valid for points whose dropped coordinates are 0)
	auto reduced_index = [&](std::size_t u) {
		std::size_t p = 0;
		for (std::size_t col : kept)
			p = p * size[col] + (u / stride[col]) % size[col];
		return p;
	};
	for (std::size_t k : cells) {
		const WorkloadQuery &q = w.queries[k];
		std::vector<double> v(m, 0.0);
		for (std::size_t e = 0; e < q.index.size(); ++e)
			if (!ok || base(q.index[e]) == q.index[e])
				v[reduced_index(q.index[e])] = static_cast<double>(q.units[e]) * w.grid;
		r.cells.push_back(std::move(v));
	}
	return r;
}

// Largest row sum of a constraint set: the d_X sensitivity of sum_k |q_k(x) - c_k|.
double
max_row_sum(const ConstraintSet &cs)
{
	double s = 0;
	for (std::size_t i = 0; i < cs.count(); ++i) {
		double row = 0;
		cs.for_each(i, [&](std::size_t, double v) { row += v; });
		s = std::max(s, row);
	}
	return s;
}

double
joint_sensitivity_of(const Reduced &r)
{
	if (r.cells.size() == 1)
		return generalized_sensitivity(r.sub, r.cells[0]);
	return max_row_sum(build_constraints(r.sub, r.cells));
}

// Whether the binary cells of g are disjoint and cover every point (a partition of the universe).
bool
is_partition(const Workload &w, const std::vector<std::size_t> &g)
{
	std::vector<char> seen(w.universe, 0);
	std::size_t covered = 0;
	for (std::size_t k : g) {
		const WorkloadQuery &q = w.queries[k];
		for (std::size_t e = 0; e < q.index.size(); ++e) {
			if (q.units[e] * w.grid != 1 || seen[q.index[e]])
				return false;
			seen[q.index[e]] = 1;
			++covered;
		}
	}
	return covered == w.universe;
}

// Noisy value of cell k (sparse workload weights, rounded to the plan's grid) on counts.
double
measure_cell(const Workload &w, std::size_t k, const std::vector<std::int64_t> &counts, const LinearNoisePlan &plan,
             RandomSource &rng)
{
	const WorkloadQuery &q = w.queries[k];
	GridSum sum;
	for (std::size_t e = 0; e < q.index.size(); ++e) {
		const std::int64_t c = counts[q.index[e]];
		if (c == 0)
			continue;
		__int128 term;
		if (__builtin_mul_overflow(to_grid_units(static_cast<double>(q.units[e]) * w.grid, plan.grid),
		                           static_cast<__int128>(c), &term))
			throw CoreError(ErrorKind::DataException, "workload answer overflows", "Use smaller weights in the workload.");
		GridSum part;
		part.units = term;
		part.rows = c;
		sum.merge(part);
	}
	return sum.release(rng, plan);
}

// One I-projection of a onto {q(a) = m}.
void
project(std::vector<double> &a, const Workload &w, std::size_t k, double m)
{
	if (k == kAllOnes) {
		const double s = std::accumulate(a.begin(), a.end(), 0.0);
		const double target = std::max(m, kFitFloor);
		if (s > 0)
			for (double &v : a)
				v *= target / s;
		else
			std::fill(a.begin(), a.end(), target / static_cast<double>(a.size()));
		return;
	}
	const WorkloadQuery &q = w.queries[k];
	if (q.index.empty())
		return;
	bool binary = true, any_pos = false, any_neg = false;
	double qmax = 0;
	for (std::size_t e = 0; e < q.index.size(); ++e) {
		const double v = static_cast<double>(q.units[e]) * w.grid;
		binary = binary && v == 1;
		any_pos = any_pos || v > 0;
		any_neg = any_neg || v < 0;
		qmax = std::max(qmax, std::fabs(v));
	}
	if (binary) {
		double s = 0;
		for (std::uint32_t u : q.index)
			s += a[u];
		const double target = std::max(m, kFitFloor);
		if (s > 0) {
			const double f = target / s;
			for (std::uint32_t u : q.index)
				a[u] *= f;
		} else {
			for (std::uint32_t u : q.index)
				a[u] = target / static_cast<double>(q.index.size());
		}
		return;
	}
	// exponential tilt of the support: f(eta) = sum_j q_j a_j exp(eta q_j) is increasing in eta
	double target = m;
	if (!any_neg)
		target = std::max(target, kFitFloor);
	if (!any_pos)
		target = std::min(target, -kFitFloor);
	auto f = [&](double eta) {
		double s = 0;
		for (std::size_t e = 0; e < q.index.size(); ++e) {
			const double v = static_cast<double>(q.units[e]) * w.grid;
			s += v * a[q.index[e]] * std::exp(eta * v);
		}
		return s;
	};
	double lo = -40 / qmax, hi = 40 / qmax;
	for (int it = 0; it < 80; ++it) {
		const double mid = (lo + hi) / 2;
		(f(mid) < target ? lo : hi) = mid;
	}
	const double eta = (lo + hi) / 2;
	for (std::size_t e = 0; e < q.index.size(); ++e)
		a[q.index[e]] *= std::exp(eta * static_cast<double>(q.units[e]) * w.grid);
}

} // namespace

// See group_release.h.
std::vector<std::vector<std::size_t>>
workload_groups(const Workload &w, const std::vector<int> *user_labels)
{
	std::vector<std::vector<std::size_t>> groups;
	if (user_labels) {
		if (user_labels->size() != w.queries.size())
			throw CoreError(ErrorKind::InvalidParameter,
			                "groups must have one entry per workload query (" + std::to_string(w.queries.size()) + ")",
			                "Give each workload query a group number; queries with the same number are measured together.");
		std::vector<int> order;
		for (int l : *user_labels)
			if (std::find(order.begin(), order.end(), l) == order.end())
				order.push_back(l);
		groups.resize(order.size());
		for (std::size_t k = 0; k < w.queries.size(); ++k)
			groups[std::find(order.begin(), order.end(), (*user_labels)[k]) - order.begin()].push_back(k);
		return groups;
	}
	std::vector<std::size_t> owner(w.universe, kAllOnes);
	for (std::size_t k = 0; k < w.queries.size(); ++k) {
		bool overlap = groups.empty();
		if (!overlap)
			for (std::uint32_t u : w.queries[k].index)
				if (owner[u] == groups.size() - 1) {
					overlap = true;
					break;
				}
		if (overlap)
			groups.emplace_back();
		groups.back().push_back(k);
		for (std::uint32_t u : w.queries[k].index)
			owner[u] = groups.size() - 1;
	}
	return groups;
}

// See group_release.h. The rule (doc/analyst-guide.md "Group releases"; experiment: test/bench/group_rounds.cpp
// on 100,000 rows): T = ceil(G^0.6 (1 + epsilon)) selected groups, and the joint measurement
// instead when T >= 0.8 G (selection would measure nearly everything anyway) or T >= joint_ratio
// (the joint measurement gives every group at least the budget one of T rounds would). Measured
// best T: G = 6: 3 (eps 0.1), 4 (0.5), joint (1, 2); G = 28: 8 (0.1), 12 (0.5).
int
group_release_rounds(std::size_t groups, double joint_ratio, std::size_t universe, double epsilon)
{
	const double g = static_cast<double>(std::min<std::size_t>(groups, kMaxGroupRounds));
	if (g <= 1)
		return 1;
	const double t = std::ceil(std::pow(g, 0.6) * (1 + std::min(epsilon, 1e6)));
	if (t >= 0.8 * g || t >= joint_ratio)
		return static_cast<int>(g);
	return std::max(1, static_cast<int>(t));
}

// See group_release.h.
GroupPlan
plan_group_release(const SubUniverse &sub, const Workload &w, double epsilon, int rounds,
                   const std::vector<int> *user_labels)
{
	if (!std::isfinite(epsilon) || !(epsilon > 0))
		throw CoreError(ErrorKind::InvalidParameter, "epsilon must be positive and finite",
		                "Give the release a positive privacy budget, e.g. 1.0.");
	if (rounds < 0 || rounds > kMaxGroupRounds)
		throw CoreError(ErrorKind::InvalidParameter,
		                "rounds must be between 1 and " + std::to_string(kMaxGroupRounds),
		                "Leave rounds out (NULL) to use the rule of the documentation.");
	if (w.queries.empty() || w.universe != sub.size())
		throw CoreError(ErrorKind::Internal, "workload does not match the universe");
	GroupPlan p;
	p.groups = workload_groups(w, user_labels);
	const std::size_t g = p.groups.size();
	p.query_group.assign(w.queries.size(), 0);
	for (std::size_t i = 0; i < g; ++i)
		for (std::size_t k : p.groups[i])
			p.query_group[k] = static_cast<int>(i);

	double entries = 0;
	std::vector<Reduced> reduced;
	for (const auto &grp : p.groups) {
		reduced.push_back(reduce(sub, w, grp));
		entries += static_cast<double>(grp.size()) * static_cast<double>(reduced.back().sub.size());
		if (entries > kMaxGroupPlanEntries)
			throw CoreError(ErrorKind::ProgramLimit, "synthetic release would plan too many cells",
			                "Use fewer workload queries, fewer columns or coarser domains.");
		p.group_sensitivity.push_back(joint_sensitivity_of(reduced.back()));
	}
	p.select_sensitivity = *std::max_element(p.group_sensitivity.begin(), p.group_sensitivity.end());
	// edge classes: one-column changes of column c touch the groups that keep c; presence edges
	// (finite presence) touch every group whose cells are not all 0 at every point
	std::vector<std::size_t> touching(sub.domains.size(), 0);
	for (const Reduced &r : reduced)
		for (std::size_t c : r.kept)
			++touching[c];
	p.joint_ratio = static_cast<double>(*std::max_element(touching.begin(), touching.end()));
	if (std::isfinite(sub.presence))
		p.joint_ratio = static_cast<double>(g);

	int t = rounds;
	if (t == 0)
		t = group_release_rounds(g, p.joint_ratio, w.universe, epsilon);
	p.joint = static_cast<std::size_t>(t) >= g;
	p.rounds = p.joint ? static_cast<int>(g) : t;

	bool all_partitions = true;
	for (const auto &grp : p.groups)
		all_partitions = all_partitions && is_partition(w, grp);
	p.count_measured = !count_is_public(sub) && !all_partitions;
	p.count_epsilon = p.count_measured ? epsilon * kCountShare : 0;
	if (p.count_measured)
		p.count_scale = plan_linear_query(sub, std::vector<double>(sub.size(), 1.0), p.count_epsilon).scale;
	const double rest = epsilon - p.count_epsilon;
	if (p.joint) {
		// every group at rest / joint_ratio: on every edge, the groups it touches spend at most rest
		p.measure_epsilon = share(rest, std::max(1.0, p.joint_ratio));
	} else {
		const double per_round = share(rest, p.rounds);
		p.select_epsilon = per_round * kGroupSelectShare;
		p.measure_epsilon = per_round - p.select_epsilon;
	}
	for (std::size_t i = 0; i < g; ++i) {
		p.plan_cells.push_back(p.groups[i]);
		p.plans.push_back(
		    plan_multi_linear(reduced[i].sub, reduced[i].cells, p.measure_epsilon, AllocationStrategy::Relative));
	}
	p.query_scale.assign(w.queries.size(), 0);
	for (std::size_t i = 0; i < p.plans.size(); ++i) {
		double l1 = 0;
		for (std::size_t j = 0; j < p.plan_cells[i].size(); ++j) {
			p.query_scale[p.plan_cells[i][j]] = p.plans[i].cells[j].scale;
			l1 += p.plans[i].cells[j].scale;
		}
		p.expected_l1.push_back(l1);
	}
	return p;
}

// See group_release.h.
std::vector<__int128>
group_scores(const Workload &w, const GroupPlan &plan, const std::vector<__int128> &exact, const std::vector<double> &a)
{
	std::vector<__int128> s(plan.groups.size(), 0);
	for (std::size_t i = 0; i < plan.groups.size(); ++i) {
		__int128 v = 0;
		for (std::size_t k : plan.groups[i]) {
			const __int128 d = to_score_units(w.answer(k, a), w.grid) - exact[k];
			v += d < 0 ? -d : d;
		}
		s[i] = v - to_score_units(plan.expected_l1[i], w.grid);
	}
	return s;
}

// See group_release.h.
void
fit_measurements(std::vector<double> &a, const Workload &w, const std::vector<std::size_t> &cells,
                 const std::vector<double> &values, const std::vector<double> &scales, int passes)
{
	std::vector<char> binary(cells.size(), 1);
	for (std::size_t i = 0; i < cells.size(); ++i)
		if (cells[i] != kAllOnes)
			for (std::int64_t u : w.queries[cells[i]].units)
				if (static_cast<double>(u) * w.grid != 1) {
					binary[i] = 0;
					break;
				}
	double wmax = 0;
	for (double b : scales)
		if (b > 0)
			wmax = std::max(wmax, 1 / (b * b));
	for (int p = 0; p < passes; ++p) {
		// cyclic relaxed projections: cell i moves its support by (m_i / q_i(a))^(lambda w_i /
		// w_max), lambda = 1 in the first passes (fast fit) then decreasing (noisy overlapping
		// measurements are averaged instead of the last one being fitted exactly)
		const double lambda = std::min(1.0, 4.0 / (p + 1));
		for (std::size_t i = 0; i < cells.size(); ++i) {
			if (!binary[i]) {
				project(a, w, cells[i], values[i]);
				continue;
			}
			// an exact measurement (scale 0) is always fitted exactly
			const double expo = scales[i] > 0 ? lambda * (1 / (scales[i] * scales[i])) / wmax : 1.0;
			const double target = std::max(values[i], kFitFloor);
			if (cells[i] == kAllOnes) {
				const double s = std::accumulate(a.begin(), a.end(), 0.0);
				const double f = std::pow(target / std::max(s, 1e-300), expo);
				for (double &v : a)
					v = std::max(v * f, 1e-300);
				continue;
			}
			const WorkloadQuery &q = w.queries[cells[i]];
			double s = 0;
			for (std::uint32_t u : q.index)
				s += a[u];
			const double f = std::pow(target / std::max(s, 1e-300), expo);
			for (std::uint32_t u : q.index)
				a[u] = std::max(a[u] * f, 1e-300);
		}
	}
}

// See group_release.h.
GroupReleaseResult
run_group_release(const SubUniverse &sub, const Workload &w, const GroupPlan &plan,
                  const std::vector<std::int64_t> &counts, RandomSource &rng, const GroupProgress &progress)
{
	if (counts.size() != w.universe || w.universe != sub.size() || plan.plans.empty())
		throw CoreError(ErrorKind::Internal, "workload and histogram do not match the universe");
	GroupReleaseResult r;
	std::vector<std::size_t> hist_cells;
	std::vector<double> hist_values, hist_scales;
	double n0 = static_cast<double>(w.universe);
	if (plan.count_measured) {
		r.n_hat = std::max(0.0, measure_count(sub, counts, plan.count_epsilon, rng).value);
		n0 = r.n_hat;
		hist_cells.push_back(kAllOnes);
		hist_values.push_back(r.n_hat);
		hist_scales.push_back(plan.count_scale);
	} else if (count_is_public(sub)) {
		r.n_hat = static_cast<double>(std::accumulate(counts.begin(), counts.end(), std::int64_t{0}));
		n0 = r.n_hat;
		hist_cells.push_back(kAllOnes);
		hist_values.push_back(r.n_hat);
		hist_scales.push_back(0);
	}
	std::vector<double> a(w.universe, n0 / static_cast<double>(w.universe));
	std::vector<double> sum(w.universe, 0.0);
	auto measure_group = [&](std::size_t pi) {
		std::vector<double> values;
		for (std::size_t j = 0; j < plan.plan_cells[pi].size(); ++j) {
			const std::size_t k = plan.plan_cells[pi][j];
			values.push_back(measure_cell(w, k, counts, plan.plans[pi].cells[j], rng));
			hist_cells.push_back(k);
			hist_values.push_back(values.back());
			hist_scales.push_back(plan.plans[pi].cells[j].scale);
		}
		r.measurements.push_back(std::move(values));
	};
	// fit passes per round, bounded by the work cap
	auto passes_for = [&](int base) {
		double work = 0;
		for (std::size_t k : hist_cells)
			work += k == kAllOnes ? static_cast<double>(w.universe) : static_cast<double>(w.queries[k].index.size());
		work *= std::max(1, plan.rounds);
		return std::max(1, std::min(base, static_cast<int>(kMaxGroupFitWork / std::max(1.0, work))));
	};
	if (plan.joint) {
		for (std::size_t i = 0; i < plan.groups.size(); ++i) {
			measure_group(i);
			r.chosen.push_back(i);
		}
		fit_measurements(a, w, hist_cells, hist_values, hist_scales, passes_for(5 * kGroupFitPasses));
		sum = a;
		if (progress)
			progress(1, 1);
	} else {
		std::vector<__int128> exact(w.queries.size());
		for (std::size_t k = 0; k < exact.size(); ++k)
			exact[k] = w.exact_units(k, counts);
		const EmBeta beta = em_beta(plan.select_epsilon, plan.select_sensitivity);
		const std::uint64_t den = score_denominator(w.grid);
		for (int t = 0; t < plan.rounds; ++t) {
			const std::size_t gi = em_sample(rng, group_scores(w, plan, exact, a), den, beta);
			r.chosen.push_back(gi);
			measure_group(gi);
			fit_measurements(a, w, hist_cells, hist_values, hist_scales,
			                 passes_for(t + 1 == plan.rounds ? 5 * kGroupFitPasses : kGroupFitPasses / 4));
			for (std::size_t j = 0; j < w.universe; ++j)
				sum[j] += a[j];
			if (progress)
				progress(t + 1, plan.rounds);
		}
		for (double &v : sum)
			v /= plan.rounds;
	}
	r.histogram = a;
	r.average = sum;
	if (!plan.count_measured && !count_is_public(sub))
		r.n_hat = std::accumulate(a.begin(), a.end(), 0.0);
	return r;
}

} // namespace dxpriv
