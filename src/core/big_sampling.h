// Exact samplers whose parameters are rationals too wide for 64 bits (discrete Gaussian acceptance
// tests, merged-Laplace rejection steps). Same method as samplers.h (CKS 2020 Algorithm 1), with
// Boost.Multiprecision integers in place of uint64: only uniform integers and exact comparisons.
#pragma once

#include <boost/multiprecision/cpp_int.hpp>

#include "core/random.h"

namespace dxpriv {

// Arbitrary-precision signed integer (header-only Boost.Multiprecision backend).
using BigInt = boost::multiprecision::cpp_int;

// Uniform integer in [0, n) by rejection on the bit length of n (no modulo bias).
// Requires n >= 1 (CoreError(Internal) otherwise).
BigInt uniform_below_big(RandomSource &rng, const BigInt &n);

// Bernoulli(exp(-num/den)) for integers num >= 0, den >= 1 (CoreError(Internal) otherwise):
// floor(num/den) Bernoulli(exp(-1)) trials and one CKS Algorithm 1 trial for the fractional part.
bool bernoulli_exp_minus_big(RandomSource &rng, const BigInt &num, const BigInt &den);

} // namespace dxpriv
