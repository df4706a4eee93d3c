// The median mechanism (Roth & Roughgarden 2010; MECHANISMS.md §7) as an interactive d_X-private
// session over a declared workload on a tiny universe.
//
// State: the released row count n_hat, the kept set C of candidate databases (every histogram of
// m rows on the universe, as for SmallDB; a candidate S stands for n_hat S / m), the noisy
// threshold of the current sparse-vector run and the answers given so far.
// For workload query q (counts; f(S) = n_hat q(S) / m):
//   easiness  r(x) = (1/|C|) sum_{S in C} exp(-|q(x) - f(S)| / (alpha n_hat))
//   classify  hard when r(x) + Lap(4 Delta / e_svt) < T_hat, T_hat = 3/4 + Lap(2 Delta / e_svt) drawn at
//             the start of every run, Delta = S_max / (alpha n_hat): one record edge (u, v) moves q(x)
//             by at most S(q) d(u, v) and exp(-|.|/c) is 1/c-Lipschitz, so |r(x) - r(x')| <= Delta d.
//   easy      answer the median of {f(S) : S in C}: post-processing of earlier releases, free;
//   hard      answer a = q(x) + Lap(S(q) / e_meas) (d_X Laplace), keep C <- {S : |f(S) - a| <= alpha n_hat / 50}
//             (the candidates nearest to a when none is that close), start a new run.
// Privacy and charging (d_X sparse vector, Dwork-Roth's AboveThreshold with |r(x) - r(x')| <= Delta d):
// each run, up to and including its first hard query, is e_svt * d_X-private; each hard
// measurement e_meas * d_X-private. Opening a session pays the first run (e_svt) and the row count
// (exact and free when public, else d_X Laplace at e_svt); each hard query pays its measurement and
// the next run: e_hard = e_meas + e_svt, e_svt = e_meas = e_hard / 2. Easy queries cost nothing.
//
// Constants. The lecture notes (§7) lost the noise scales, thresholds, database size and abort rule.
// Roth & Roughgarden's are: databases of m = 160000 ln|X| ln(4k/alpha) / alpha^2 rows, threshold
// t_i = 3/4 + j gamma after j hard queries with gamma = (4 / (eps' alpha n)) ln(2k/alpha), noise
// Lap(2 / (eps' alpha n)) on r_i, eps' = eps / (720 m ln|X|), the kept-set radius alpha/50, and abort
// at the (20 m ln|X|)-th hard query. Their m makes C astronomically large; this implementation keeps
// their easiness score, the base threshold 3/4, the radius alpha/50 and the abort rule, but takes m
// (default: Theorem 6's SmallDB size, capped like SmallDB at 10^6 candidates) and the per-hard-query
// epsilon from the caller, and replaces their threshold schedule and noise calibration by the sparse
// vector technique above, whose accounting (per run, per hard query) is exact in the d_X setting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/random.h"
#include "core/workload.h"

namespace dxpriv {

// The serialisable state of one session (see the top of this file).
struct MedianSession {
	int size = 0;             // m
	double n_hat = 0;
	double alpha = 0;         // accuracy, a fraction of n_hat
	double eps_svt = 0, eps_meas = 0;
	double s_max = 0;         // largest S(q) of the workload
	double threshold = 0;     // T_hat of the current run
	int hard = 0, max_hard = 0;
	std::vector<std::uint8_t> alive;   // one bit per candidate (enumeration order of smalldb.h)
	std::vector<double> answers;       // per workload query; NaN until answered
	std::vector<std::uint8_t> was_hard;

	// Binary form (version byte first); parse() throws CoreError(InvalidParameter) on a malformed one.
	std::string serialize() const;
	static MedianSession parse(const std::string &bytes);
	std::size_t kept() const;
};

constexpr double kMedianThreshold = 0.75;
constexpr double kMedianRadius = 1.0 / 50; // of alpha n_hat

// Opens a session: releases the row count (exact when public, else d_X Laplace at eps_hard / 2) and
// draws the first threshold. eps_hard > 0 finite; 0 < alpha <= 1; size >= 0 (0: Theorem 6's
// SmallDB size at eps_hard / 2, capped); max_hard >= 0 (0: min(|Q|, ceil(20 m ln|X|))). Returns the
// epsilon the opening spends in *open_epsilon. CoreError(ProgramLimit) beyond SmallDB's caps.
MedianSession median_open(const SubUniverse &sub, const Workload &w, const std::vector<std::int64_t> &counts,
                          double eps_hard, double alpha, int size, int max_hard, RandomSource &rng,
                          double *open_epsilon);

// The argument checks of median_open, before anything is charged.
void check_median_arguments(const Workload &w, double eps_hard, double alpha, int size);

// r(x) of query k on the kept set.
double median_easiness(const MedianSession &s, const Workload &w, std::size_t k,
                       const std::vector<std::int64_t> &counts);

// The d_X sensitivity Delta of the easiness score (see the top of this file).
double median_easiness_sensitivity(const MedianSession &s);

// The sparse-vector classification of query k (draws the query noise): true when hard.
bool median_is_hard(const MedianSession &s, const Workload &w, std::size_t k, const std::vector<std::int64_t> &counts,
                    RandomSource &rng);

// Easy: the median over the kept set (no randomness, no data). Records the answer.
double median_answer_easy(MedianSession &s, const Workload &w, std::size_t k);

// Hard (after it was paid): measures query k with d_X Laplace, filters the kept set, records the
// answer and starts a new run. Returns the answer; *scale receives the Laplace scale.
double median_answer_hard(MedianSession &s, const SubUniverse &sub, const Workload &w, std::size_t k,
                          const std::vector<std::int64_t> &counts, RandomSource &rng, double *scale);

} // namespace dxpriv
