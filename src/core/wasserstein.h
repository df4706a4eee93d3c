// Attribute-private Wasserstein mechanism (MECHANISMS.md §6.7; Song, Wang, Chaudhuri 2017,
// Algorithm 4 of the attribute-privacy seed): F(X) + Lap(W / epsilon), with W the largest
// infinity-Wasserstein distance between the laws of F(X) under two secrets of a pair, over the
// declared models. (epsilon, 0)-private for both dataset and distributional attribute privacy.
//
// Scope: small declared models whose conditional laws of F are given explicitly on the integers
// 0..K-1 (counts); the supremum over a continuous Theta is taken over the grid the caller
// enumerates. W_inf on the line is the largest gap of the quantile coupling (§6.7 [DERIVED]),
// computed as the smallest integer shift t with F_q(k) <= F_p(k + t) and F_p(k) <= F_q(k + t) for
// all k; each comparison is made in the tail whose sum is accurate (lower sums below 1/2, upper
// sums above), so a wide law's CDF rounding to 1 early opens no false gap. Tail probabilities
// equal within a relative 1e-11 are ties (the same law computed two ways differs in its last
// bits, which must not open a gap of 1 between identical laws); a true difference below that
// resolution, beneath the laws' own floating-point accuracy, is not resolved.
#pragma once

#include <vector>

#include "core/random.h"

namespace dxpriv {

// A probability mass function on 0..size()-1: finite, >= 0, summing to 1 within 1e-9.
using IntegerPmf = std::vector<double>;

// Validates p (CoreError(InvalidParameter) with a hint otherwise).
void validate_pmf(const IntegerPmf &p);

// W_inf(p, q) = sup_{u in (0,1)} |F_p^{-1}(u) - F_q^{-1}(u)| for laws on the integers.
double winf_integer(const IntegerPmf &p, const IntegerPmf &q);

// W = max over models and over every pair of secrets of W_inf: conditionals[t][s] is the law of F
// given secret s under model t (all pairs of secrets of a model are discriminative pairs).
double wasserstein_sensitivity(const std::vector<std::vector<IntegerPmf>> &conditionals);

// Bin(n, p) on 0..n (n >= 0, p in [0, 1]).
IntegerPmf binomial_pmf(int n, double p);
// Law of X + Y for independent X ~ a, Y ~ b.
IntegerPmf convolve(const IntegerPmf &a, const IntegerPmf &b);

// The scale W / epsilon of the Laplace noise (epsilon > 0 finite, W >= 0 finite).
double wasserstein_scale(double w, double epsilon);

// F + Laplace(scale) on a power-of-two grid (exact when scale == 0): the integer count F plus
// grid * DLap(scale / grid) with scale / grid in [2^10, 2^11) (laplace_on_grid).
double laplace_release(RandomSource &rng, double exact, double scale);

} // namespace dxpriv
