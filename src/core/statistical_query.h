// The statistical-query variant for k-way marginal frequencies (MECHANISMS.md §3.13, Appendix C,
// Theorems 10-11, problems 13-14): answer phi(D) = (1/n) #{rows with x_l = v_l for l in S} by a
// product surrogate psi(x) = prod_l psi_l(x_l) plus Lap(1/eps'), choosing psi and eps' to minimise
// the squared-error bound (sum_l ||psi_l - phi_l||_inf)^2 + 2/eps'^2 under the d_X constraints.
//
// With the record metric d = sum_l d_l (per unit of epsilon) and budget epsilon, the constraint of
// Theorem 10 on attribute l reads eps' |psi_l(a) - psi_l(b)| <= n epsilon d_l(a, b) (the separable
// relaxation (14)), and on presence edges eps' <= n epsilon presence (|psi| <= 1, psi(⊥) = 0).
// For phi_l = 1{a = v_l} problem (14) has a closed form [DERIVED]: with
// c = n epsilon min_{a != v_l} d_l(v_l, a) / eps', the optimum is t_l = max(0, (1 - c) / 2), attained
// by psi_l(v_l) = 1 - t_l and psi_l(a) = max(0, 1 - t_l - n epsilon d_l(v_l, a) / eps'); no feasible
// psi_l does better because (1 - psi_l(v_l)) + psi_l(a) >= 1 - |psi_l(v_l) - psi_l(a)|. The outer
// one-dimensional search over eps' is a log-spaced scan refined by golden section.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/random.h"
#include "core/sensitivity.h"

namespace dxpriv {

// A k-way marginal frequency: the columns S (positions in the sub-universe) and their values.
struct MarginalCell {
	std::vector<std::size_t> columns;
	std::vector<std::size_t> values;
};

struct SurrogatePlan {
	double eps_prime = 0;        // inverse noise scale on the frequency
	double bias = 0;             // sum_l t_l >= ||psi - phi||_inf
	double objective = 0;        // bias^2 + 2 / eps'^2
	std::vector<double> t;       // per column of the cell
	std::vector<std::vector<double>> psi; // per column of the cell, per domain value
	double plain_eps_prime = 0;  // the largest eps' with psi = phi (the plain d_X Laplace answer)
	double plain_objective = 0;  // 2 / plain_eps_prime^2
};

// Recognises a k-way marginal count: q (one weight per point of sub) is the indicator of
// {u : u_l = v_l for l in S} for a non-empty set S of columns. Fills *cell and returns true then.
bool marginal_cell_of(const SubUniverse &sub, const std::vector<double> &q, MarginalCell *cell);

// Optimal ||psi_l - phi_l||_inf of problem (14) for one column at eps' (see above), and psi_l.
double separable_column_optimum(const Domain &dom, const ColumnMetric &metric, std::size_t value, double n_epsilon,
                                double eps_prime, std::vector<double> *psi);

// Solves (13) through (14) with the outer search. n > 0 rows (public: the bounded model), epsilon > 0.
// Throws CoreError(InvalidParameter) for a bad cell, n or epsilon.
SurrogatePlan plan_marginal_surrogate(const SubUniverse &sub, const MarginalCell &cell, double n, double epsilon);

// The surrogate frequency psi(D) = (1/n) sum_u counts[u] prod_l psi_l(u_l) of the histogram counts
// (one per sub-universe point).
double surrogate_frequency(const SubUniverse &sub, const MarginalCell &cell, const SurrogatePlan &plan,
                           const std::vector<std::int64_t> &counts, double n);

// The mechanism (12): surrogate_frequency + Laplace noise of scale 1/eps' on a 2^-40 grid (exact
// discrete sampler, samplers.h).
double release_marginal_frequency(const SubUniverse &sub, const MarginalCell &cell, const SurrogatePlan &plan,
                                  const std::vector<std::int64_t> &counts, double n, RandomSource &rng);

} // namespace dxpriv
