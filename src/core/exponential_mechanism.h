// d_X-private exponential mechanism over the declared points of one column (MECHANISMS.md §2.1,
// §3.3, §3.9): dx.mode, dx.quantile and dx.median.
//
// Candidates are the K points 0..K-1 of a declared column domain. The per-group histogram
// counts[r] = number of counted rows (WHERE and FILTER true) whose clamped value is point r fixes
// every candidate's utility:
//   mode:        u_r = counts[r]
//   quantile p:  u_r = -max(0, L_r - p N, p N - C_r)    L_r = #{value < r}, C_r = #{value <= r},
//                                                       N = #rows; median: p = 1/2
// The quantile utility is 0 exactly on the true p-quantiles (the r with L_r <= pN <= C_r) and
// minus the rank distance to them elsewhere. (The simpler -|C_r - pN| ties the median of an
// odd number of rows with the value below it, so a huge epsilon would not recover the median.)
// p is rounded to p_num / 2^20, which makes every utility an integer multiple of 2^-20.
//
// Privacy (Theorem 3 generalised to GROUP BY): each u_r is (a max of 0 and) linear queries with
// per-row weights w(row) = counted(row) * phi(value), so for one record edge (x, y) the change of
// the released vector of per-group choices is bounded by
//   L(x, y) = sum over groups g of max over the linear queries q of |W_gq(x) - W_gq(y)|,
// W_gq(row) = 1[group(row) = g] w_q(row), and the absent record ⊥ has W = 0. L is a pseudometric,
// so S_EM = max over edges of L / d is attained on the edges of the record path metric (one-column
// changes and presence edges), exactly as for generalized_sensitivity (sensitivity.h). Sampling
// r with probability ∝ exp(beta u_r) per group, beta <= epsilon / (2 S_EM), is then epsilon*d_X-
// private for the whole grouped release (numerator and normaliser each move by at most
// exp(beta L(x, y)) <= exp(epsilon d(x, y) / 2)).
//
// Sampling is exact: integer utilities, beta a rational num / 2^20 rounded DOWN (a smaller beta
// only lowers the privacy loss), and rejection sampling with uniform proposals accepted with
// probability exp(-beta (u_max - u_r)) by the Canonne–Kamath–Steinke Bernoulli (samplers.h).
// No floating point touches the sampled law.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/random.h"
#include "core/sensitivity.h"

namespace dxpriv {

// Distinct: not an exponential mechanism but the same analysis (count_distinct): the number of
// candidates with a counted row, released with discrete Laplace noise (em_distinct_release).
enum class EmKind { Mode, Quantile, Distinct };

// Quantile levels are p_num / 2^20.
constexpr int kQuantileBits = 20;
constexpr std::uint32_t kQuantileOne = std::uint32_t{1} << kQuantileBits;
// beta = num / 2^20 per unit of utility (rows); num is capped at 2^44 (beta <= 2^24), which keeps
// num * (utility gap in 2^-20 units) below 2^127 for any int64 row count.
constexpr int kEmBetaBits = 20;
constexpr std::uint64_t kEmMaxBetaNum = std::uint64_t{1} << 44;

// What the candidates are scored by.
struct EmUtility {
	EmKind kind = EmKind::Mode;
	std::uint32_t p_num = 0; // quantile level p = p_num / 2^20 (0 <= p_num <= 2^20); unused for mode
};

// round(p * 2^20). Throws CoreError(InvalidParameter) unless 0 <= p <= 1.
std::uint32_t quantile_numerator(double p);

// Scale of the integer utilities: 1 for mode (u_r = U_r), 2^20 for quantiles (u_r = U_r / 2^20).
std::uint64_t em_utility_denominator(const EmUtility &u);

// Integer utilities U_r (see the top of this file) of the K = counts.size() candidates.
// counts[r] >= 0. Throws CoreError(InvalidParameter) for an empty or negative histogram and
// CoreError(DataException) when the total row count overflows int64.
std::vector<__int128> em_utilities(const EmUtility &u, const std::vector<std::int64_t> &counts);

// Largest change of a candidate's utility caused by one counted row appearing or disappearing:
// 1 for mode, max(p, 1 - p) for quantiles (0 when there is a single candidate).
double em_row_bound(const EmUtility &u, std::size_t candidates);

// Exact d_X utility sensitivity S_EM (top of this file) of the exponential mechanism over the
// points of column `candidate_column` of `sub`, run once per output group. counted[u] (one entry
// per sub-universe point, row-major like SubUniverse::unflatten) tells whether a row equal to
// point u is counted (WHERE and FILTER true); group_columns are the positions of the GROUP BY
// columns in sub (may contain candidate_column; empty without GROUP BY). Edges along a GROUP BY
// column move a row between groups and cost the row's bound in both. Throws CoreError(Internal)
// for inconsistent arguments, (InvalidParameter) for a non-positive presence distance or a metric
// that does not fit its domain, (ProgramLimit) beyond kMaxSensitivityWork steps.
double em_utility_sensitivity(const SubUniverse &sub, const std::vector<char> &counted, std::size_t candidate_column,
                              const std::vector<std::size_t> &group_columns, const EmUtility &u);

// Inverse temperature beta of the sampler: num / 2^20 per unit of utility, or infinite.
struct EmBeta {
	bool infinite = false;   // S_EM == 0: the utility does not depend on protected data; the
	                         // mechanism returns a maximiser (uniformly among ties)
	std::uint64_t num = 0;   // beta = num / 2^20 <= epsilon / (2 S_EM), num <= kEmMaxBetaNum
};

// beta = epsilon / (2 sensitivity) rounded down to a multiple of 2^-20 (and below 2^24); infinite
// when sensitivity == 0. epsilon > 0 finite, sensitivity >= 0 finite; CoreError(InvalidParameter)
// otherwise.
EmBeta em_beta(double epsilon, double sensitivity);

// The scale recorded in the ledger for an exponential-mechanism aggregate: 2 S_EM / epsilon (the
// temperature 1/beta before rounding; 0 when the answer needs no randomness). Throws
// CoreError(ProgramLimit) when it is not finite.
double em_scale(double epsilon, double sensitivity);

// Draws r in [0, K) with P(r) = exp(beta U_r / den) / sum_s exp(beta U_s / den) exactly, den =
// utility_den (infinite beta: uniform among the maximisers). Rejection sampling: r uniform,
// accepted with probability exp(-beta (U_max - U_r) / den) (exact Bernoulli); every proposal is
// accepted with probability >= 1/K, so at most K proposals are expected.
// Throws CoreError(InvalidParameter) for an empty vector or den == 0.
std::size_t em_sample(RandomSource &rng, const std::vector<__int128> &utilities, std::uint64_t utility_den,
                      EmBeta beta);

// Reference probabilities of em_sample in long double (tests and diagnostics only).
std::vector<long double> em_probabilities(const std::vector<__int128> &utilities, std::uint64_t utility_den,
                                          EmBeta beta);

// Theorem 4: P[u(output) <= OPT - (ln K + t) / beta] <= exp(-t). Returns (ln K + t) / beta in
// utility units (rows), 0 for an infinite beta and +inf for beta == 0. t >= 0.
double em_utility_loss_bound(EmBeta beta, std::size_t candidates, double t);

// count_distinct (EmKind::Distinct): D_g = #{r : counts_g[r] > 0}, the number of declared values
// with a counted row in group g. One record moving from point x to point y (or appearing, y = ⊥)
// changes counts_g[r] by at most 1 in absolute value for every (g, r), and D_g only when some
// count crosses 0, which needs |Δ counts_g[r]| = 1 for that r: |ΔD_g| <= max_r |Δ counts_g[r]|,
// so Σ_g |ΔD_g| <= L(x, y), the pseudometric of dx.mode above (row bound 1, also with a single
// candidate: D is then 0 or 1). Hence Σ_g |ΔD_g| <= S_EM · d(x, y) with S_EM the mode utility
// sensitivity, and adding discrete Laplace noise of scale S_EM / epsilon to every D_g is
// epsilon·d_X-private for the grouped release (the L1 Laplace mechanism).
// The scale used is 1 / (2 beta) = 2^19 / beta.num, beta = em_beta(epsilon, S_EM) rounded down, so
// at least S_EM / epsilon; 0 for an infinite beta (S_EM = 0, exact). Throws
// CoreError(ProgramLimit) when beta.num is 0 (a noise scale beyond 2^19).
double em_distinct_scale(EmBeta beta);
// D for one group's counts plus that noise (exact discrete Laplace, CKS). CoreError as above and
// (InvalidParameter) for a negative count.
std::int64_t em_distinct_release(RandomSource &rng, const std::vector<std::int64_t> &counts, EmBeta beta);

// Bernoulli(exp(-num/den)) for a 128-bit numerator (exact; CKS Algorithm 1 by integer parts).
bool bernoulli_exp_minus_wide(RandomSource &rng, unsigned __int128 num, std::uint64_t den);

} // namespace dxpriv
