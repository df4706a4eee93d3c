// Private steps shared by the synthetic-release mechanisms (release_steps.h).
#include "core/release_steps.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace dxpriv {

namespace {

// grid * (sum_u units(q_u) * counts_u + noise) under plan (GridSum::release on the exact sum).
Measurement
release_dense(const std::vector<double> &q, const std::vector<std::int64_t> &counts, const LinearNoisePlan &plan,
              RandomSource &rng)
{
	GridSum sum;
	for (std::size_t u = 0; u < q.size(); ++u) {
		if (q[u] == 0 || counts[u] == 0)
			continue;
		__int128 term;
		if (__builtin_mul_overflow(to_grid_units(q[u], plan.grid), static_cast<__int128>(counts[u]), &term))
			throw CoreError(ErrorKind::DataException, "workload answer overflows", "Use smaller weights in the workload.");
		GridSum part;
		part.units = term;
		part.rows = counts[u];
		sum.merge(part);
	}
	return Measurement{sum.release(rng, plan), plan.scale};
}

} // namespace

// See release_steps.h.
bool
count_is_public(const SubUniverse &sub)
{
	return generalized_sensitivity(sub, std::vector<double>(sub.size(), 1.0)) == 0;
}

// See release_steps.h.
Measurement
measure_query(const SubUniverse &sub, const Workload &w, std::size_t k, const std::vector<std::int64_t> &counts,
              double epsilon, RandomSource &rng)
{
	if (counts.size() != w.universe)
		throw CoreError(ErrorKind::Internal, "histogram does not match the workload's universe");
	const std::vector<double> q = w.dense(k);
	return release_dense(q, counts, plan_linear_query(sub, q, epsilon), rng);
}

// See release_steps.h.
Measurement
measure_count(const SubUniverse &sub, const std::vector<std::int64_t> &counts, double epsilon, RandomSource &rng)
{
	const std::vector<double> ones(sub.size(), 1.0);
	if (count_is_public(sub)) {
		LinearNoisePlan exact; // scale 0, grid 1: the exact sum
		return release_dense(ones, counts, exact, rng);
	}
	return release_dense(ones, counts, plan_linear_query(sub, ones, epsilon), rng);
}

// See release_steps.h.
double
max_sensitivity(const std::vector<double> &sensitivities)
{
	double s = 0;
	for (double v : sensitivities)
		s = std::max(s, v);
	return s;
}

// See release_steps.h.
__int128
to_score_units(double v, double grid)
{
	const double x = std::round(v / grid);
	constexpr double kLimit = 1267650600228229401496703205376.0; // 2^100
	if (!(x < kLimit))
		return static_cast<__int128>(kLimit);
	if (!(x > -kLimit))
		return -static_cast<__int128>(kLimit);
	return static_cast<__int128>(x);
}

// See release_steps.h.
std::vector<__int128>
workload_scores(const Workload &w, const std::vector<__int128> &exact, const std::vector<double> &a)
{
	std::vector<__int128> scores(w.queries.size());
	for (std::size_t k = 0; k < scores.size(); ++k) {
		const __int128 diff = to_score_units(w.answer(k, a), w.grid) - exact[k];
		scores[k] = diff < 0 ? -diff : diff;
	}
	return scores;
}

// See release_steps.h.
std::uint64_t
score_denominator(double grid)
{
	return static_cast<std::uint64_t>(std::llround(1.0 / grid));
}

} // namespace dxpriv
