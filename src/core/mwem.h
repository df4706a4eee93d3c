// d_X-private MWEM (MECHANISMS.md §3.11, Algorithm 2, Theorems 7-8): a synthetic histogram over a
// finite universe that answers a whole workload of linear queries for one budget.
//
// Budget of a release at epsilon (the release is epsilon*d_X-private, Fact 1.2):
//   * the row count n: exact and free when it is public (presence = +inf), otherwise measured with
//     d_X Laplace at kCountShare * epsilon (n is not public in the presence model; the measured
//     n_hat replaces n everywhere below, which is post-processing);
//   * T rounds, each spending e = (remaining epsilon) / (2T) twice: the d_X exponential mechanism
//     picks the worst-approximated query with score s_t(q) = |q(A_{t-1}) - q(x)| (sensitivity
//     S_max = max_q S(q), exponential_mechanism.h with beta = e / (2 S_max)), then d_X Laplace
//     measures it (scale S(q_t)/e <= S_max/e, linear_query.h). Theorem 7's condition
//     2T e max_q |q_i - q_j| <= d(i, j) is this accounting on the record path metric.
//   * multiplicative weights: A_t(j) ∝ A_{t-1}(j) exp(q_t(j) (m_t - q_t(A_{t-1})) / (2 n_hat)),
//     rescaled to total n_hat, followed by kDefaultMwemReplayPasses sweeps of the same update over
//     all measurements so far (Hardt-Ligett-McSherry's practical improvement; post-processing);
//     the output is the average of A_1..A_T.
// Default T (§3.11 [DERIVED]): T* = (n_hat E_tot sqrt(ln|X|) / (10 ln|Q|))^{2/3} with the total
// allowance E_tot = (remaining epsilon) / S_max, rounded, at least 1, at most kMaxMwemIterations
// and lowered so that T (|Q| + entries + |X|) stays under kMaxMwemWork.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/random.h"
#include "core/release_steps.h"
#include "core/workload.h"

namespace dxpriv {

constexpr int kMaxMwemIterations = 10000;
// Replay sweeps per round (see run_mwem) by default, and at most.
constexpr int kDefaultMwemReplayPasses = 10;
constexpr int kMaxMwemReplayPasses = 100;
// Cap on T * (queries + coefficients + universe points): the elementary steps of one release.
constexpr double kMaxMwemWork = 4e9;

struct MwemResult {
	std::vector<double> histogram; // one weight per universe point, summing to n_hat (>= 0)
	std::vector<double> last;      // A_T, the last iterate (same total)
	double n_hat = 0;              // released row count (exact when public)
	int iterations = 0;
	double count_epsilon = 0;      // spent on the count (0 when public)
	double step_epsilon = 0;       // spent by each of the 2T steps
	double em_sensitivity = 0;     // S_max
	std::vector<std::size_t> chosen;   // q_t
	std::vector<double> measurements;  // m_t
	std::vector<double> scales;        // Laplace scale of m_t
};

// T* of §3.11 for n rows, allowance e_tot = epsilon / S_max, |X| points and |Q| queries (ln|Q| is
// taken as at least ln 2), clamped to [1, kMaxMwemIterations]; kMaxMwemIterations when e_tot is
// infinite (S_max == 0).
int mwem_default_iterations(double n, double e_tot, std::size_t universe, std::size_t queries);

// The argument checks of run_mwem, callable before anything is charged: epsilon > 0 finite,
// 0 <= iterations <= kMaxMwemIterations, an explicit T within kMaxMwemWork.
void check_mwem_arguments(const Workload &w, double epsilon, int iterations);

// Runs MWEM on the true histogram counts (one count >= 0 per point of sub) at epsilon > 0 finite
// with `iterations` rounds (0: the default above). Throws CoreError(InvalidParameter) for a bad
// epsilon or iteration count, (ProgramLimit) when an explicit T exceeds the work cap.
// replay_passes > 0 applies Hardt-Ligett-McSherry's practical improvement: after each round's
// update, that many further multiplicative-weights sweeps over every measurement taken so far
// (post-processing of released values: the privacy is unchanged; Theorem 8 is proven for 0).
MwemResult run_mwem(const SubUniverse &sub, const Workload &w, const std::vector<std::int64_t> &counts, double epsilon,
                    int iterations, RandomSource &rng, int replay_passes = kDefaultMwemReplayPasses);

// Theorem 8's error bound (with n_hat for n) at per-step epsilon e, for S_max = 1 workloads:
// 2 n sqrt(ln|X| / T) + 5 ln|Q| / e.
double mwem_error_bound(double n, std::size_t universe, std::size_t queries, int iterations, double step_epsilon);

} // namespace dxpriv
