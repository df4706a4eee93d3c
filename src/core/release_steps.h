// Private steps shared by the synthetic-release mechanisms (MWEM, SmallDB, median mechanism):
// measuring the row count, measuring one workload query with d_X Laplace noise, and choosing a
// query or a candidate with the d_X exponential mechanism. Each step at epsilon e is e*d_X-private
// (MECHANISMS.md §3.6, §3.9); a mechanism's guarantee is the sum of its steps' (Fact 1.2).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/exponential_mechanism.h"
#include "core/linear_query.h"
#include "core/random.h"
#include "core/workload.h"

namespace dxpriv {

// Share of a release's epsilon spent on the row count when the count is not public.
constexpr double kCountShare = 0.1;

// True when the row count is public: the constant query 1 has sensitivity 0, i.e. the presence
// distance is +inf (bounded model, MECHANISMS.md §3.1). Then measure_count is exact and free.
bool count_is_public(const SubUniverse &sub);

// A released value and the scale of the Laplace noise it carries (0: exact).
struct Measurement {
	double value = 0;
	double scale = 0;
};

// d_X Laplace measurement of query k of w on the true histogram `counts` (one count per point) at
// epsilon (plan_linear_query: scale S(q)/epsilon, exact grid sum, discrete Laplace on the grid).
Measurement measure_query(const SubUniverse &sub, const Workload &w, std::size_t k,
                          const std::vector<std::int64_t> &counts, double epsilon, RandomSource &rng);

// The row count sum(counts) measured with d_X Laplace at epsilon (exact when count_is_public;
// epsilon is then ignored and may be 0).
Measurement measure_count(const SubUniverse &sub, const std::vector<std::int64_t> &counts, double epsilon,
                          RandomSource &rng);

// Largest S(q) over the workload: the d_X sensitivity of every score of the form
// |q(x) - c_q| or max_q |q(x) - c_q(y)| with c data-independent (one edge moves q(x) by at most
// S(q) d(u, v)).
double max_sensitivity(const std::vector<double> &sensitivities);

// Rounds a real value to workload grid units (for scores): round(v / grid), saturated to +-2^100.
__int128 to_score_units(double v, double grid);

// MWEM's scores |q(a) - q(x)| in workload grid units for every query, from the exact answers on
// the true histogram (exact[k] = w.exact_units(k, counts)) and a synthetic histogram a.
std::vector<__int128> workload_scores(const Workload &w, const std::vector<__int128> &exact, const std::vector<double> &a);

// 1/grid as the utility denominator of em_sample (grid = 1 or 2^-kWorkloadGridBits).
std::uint64_t score_denominator(double grid);

} // namespace dxpriv
