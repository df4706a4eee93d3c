// d_X-private top-k selection by the exponential mechanism (doc/mechanisms.md "Top-k under d_X"):
// k rounds of report-noisy-max peeling, each an exact exponential mechanism over the candidates
// not chosen yet, at beta_round = epsilon / (2 k S) (S: the d_X utility sensitivity of the
// candidates' scores, exponential_mechanism.h). Peeling is distributed exactly like the one-shot
// Gumbel top-k (Durfee & Rogers 2019), and by basic composition of k exponential mechanisms each
// epsilon/k * d_X-private the ordered list of k candidates is epsilon * d_X-private.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/exponential_mechanism.h"
#include "core/random.h"

namespace dxpriv {

// Largest k dx.top_k accepts (and the number of candidates it may rank).
constexpr std::size_t kMaxTopK = 1000;

// The inverse temperature of one peeling round: em_beta(epsilon / k, sensitivity). k >= 1;
// CoreError(InvalidParameter) for k == 0 or what em_beta refuses.
EmBeta top_k_round_beta(double epsilon, double sensitivity, std::size_t k);

// Draws k distinct candidates in order: round j draws, with em_sample at `beta`, among the
// candidates not drawn in rounds 1..j-1. utilities as for em_sample (integer, scaled by
// utility_den). Throws CoreError(InvalidParameter) unless 1 <= k <= utilities.size() and
// k <= kMaxTopK, or for what em_sample refuses.
std::vector<std::size_t> top_k_sample(RandomSource &rng, const std::vector<__int128> &utilities,
                                      std::uint64_t utility_den, EmBeta beta, std::size_t k);

// Exact probability (long double; tests and diagnostics only) that top_k_sample returns `order`
// (distinct indices): the product over rounds of em_probabilities among the remaining candidates.
long double top_k_probability(const std::vector<__int128> &utilities, std::uint64_t utility_den, EmBeta beta,
                              const std::vector<std::size_t> &order);

} // namespace dxpriv
