// d_X-private small database mechanism (MECHANISMS.md §3.10, Algorithm 1, Theorems 5-6): the
// exponential mechanism over all small histograms y of m rows on a tiny universe, scored by how
// well they answer the workload.
//
// Unnormalised form used here (the presence model has no public n): the row count is released
// first (exact when public, otherwise d_X Laplace at kCountShare * epsilon), and a candidate y of
// m rows stands for the histogram n_hat * y / m. The score
//   u(x, y) = - max_q | q(x) - n_hat q(y) / m |
// moves by at most max_q |q(u) - q(v)| on a record edge (u, v) (and |q(u)| on a presence edge),
// so its d_X sensitivity is S_max = max_q S(q), and sampling y with probability ∝ exp(e u / (2
// S_max)) is e*d_X-private (§3.9, Theorem 5 with the 1/n normalisation moved into the score).
// Default m (Theorem 6, beta = 0.05): alpha = ((16 ln|X| ln|Q| + 4 ln(1/beta)) / e_n)^{1/3}, with
// the normalised epsilon e_n = e n_hat / S_max, capped at 1, and m = ceil(ln|Q| / (alpha/2)^2);
// then lowered until the candidate set C(|X| + m - 1, m) fits kMaxSmallDbCandidates and the work
// cap. Exact sampling needs every candidate's score, so the mechanism is for tiny universes only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/random.h"
#include "core/release_steps.h"
#include "core/workload.h"

namespace dxpriv {

// Largest candidate set (number of small databases) SmallDB enumerates.
constexpr double kMaxSmallDbCandidates = 1000000;
// Cap on candidates * queries * m (the work of scoring every candidate).
constexpr double kMaxSmallDbWork = 4e8;

struct SmallDbResult {
	std::vector<double> histogram;   // n_hat * y / m per universe point
	std::vector<std::int64_t> rows;  // y (m rows in total)
	int size = 0;                    // m
	double candidates = 0;           // C(|X| + m - 1, m)
	double n_hat = 0;
	double count_epsilon = 0;
	double em_epsilon = 0;
	double em_sensitivity = 0;
};

// C(universe + m - 1, m) as a double (+inf when it overflows).
double smalldb_candidates(std::size_t universe, int m);

// Theorem 6's database size for n_hat rows at em epsilon e (see the top of this file), before the
// caps; at least 1.
int smalldb_theorem_size(double n_hat, double em_epsilon, double s_max, std::size_t universe, std::size_t queries);

// The score of every candidate of m rows (enumeration order: non-decreasing sequences of points,
// lexicographic), in workload grid units: -max_q |round(n_hat q(y) / m) - q(x)|. Throws
// CoreError(ProgramLimit) beyond the caps.
std::vector<__int128> smalldb_scores(const Workload &w, const std::vector<std::int64_t> &counts, double n_hat, int m);

// q_k(y) of every candidate y of m rows (enumeration order), in the query's units (not scaled).
std::vector<double> smalldb_query_values(const Workload &w, std::size_t k, int m);

// The candidate of m rows with enumeration number `pick`, as counts per point.
std::vector<std::int64_t> smalldb_candidate(std::size_t universe, int m, std::size_t pick);

// The argument checks of run_smalldb, callable before anything is charged: epsilon > 0 finite,
// size >= 0, and the candidate set of the given size (of size 1 for the default) within the caps.
void check_smalldb_arguments(const Workload &w, double epsilon, int size);

// Runs SmallDB at epsilon > 0 finite with databases of `size` rows (0: the default above).
// Throws CoreError(ProgramLimit) when the candidate set of the chosen size (or of size 1) exceeds
// the caps, naming the numbers; (InvalidParameter) for a bad epsilon or size.
SmallDbResult run_smalldb(const SubUniverse &sub, const Workload &w, const std::vector<std::int64_t> &counts,
                          double epsilon, int size, RandomSource &rng);

} // namespace dxpriv
