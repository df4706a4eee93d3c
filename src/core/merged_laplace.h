// Merged ("fused") Laplacian noise (Mugunthan, Xiao, Kagal 2020; MECHANISMS.md §5.8–5.9): a
// symmetric density with one Laplace slope per band of |x|, continuous at the breakpoints,
//   f(x) = a_k exp(-|x|/lambda_k) for c_{k-1} <= |x| < c_k, lambda_k = sensitivity/epsilon_k.
// This implements the CORRECTED density of the §5.9 erratum (the reference code's three-band a_3 has
// the wrong sign on c_2/lambda_3, which makes it discontinuous and not a probability density).
// ln f is continuous and piecewise linear in |x|, so the mechanism is pure epsilon-DP with epsilon at
// most max_k epsilon_k, and no merged Laplacian has lower cost than Lap(sensitivity/max_k epsilon_k).
#pragma once

#include <cstddef>
#include <vector>

#include "core/random.h"

namespace dxpriv {

// One merged Laplacian law. Immutable.
class MergedLaplace {
public:
	// epsilons: one per band (K >= 1), each > 0 finite; breakpoints: K-1 finite values with
	// 0 < c_1 < ... < c_{K-1}; sensitivity > 0 finite. CoreError(InvalidParameter) otherwise.
	MergedLaplace(double sensitivity, std::vector<double> epsilons, std::vector<double> breakpoints);

	std::size_t bands() const { return scales_.size(); }
	double sensitivity() const { return sensitivity_; }
	// lambda_k = sensitivity/epsilon_k for band k (0-based).
	double band_scale(std::size_t k) const { return scales_.at(k); }
	// Breakpoint c_k for k = 1..K-1 (c_0 = 0, c_K = +inf).
	double breakpoint(std::size_t k) const;
	// a_k (0-based k), the band's coefficient: f(x) = a_k exp(-|x|/lambda_k) in band k.
	double band_coefficient(std::size_t k) const;
	// P(|X| in band k) = 2 a_k lambda_k (e^{-c_{k-1}/lambda_k} - e^{-c_k/lambda_k}) (0-based k).
	double band_probability(std::size_t k) const;
	// ln f(x).
	double log_density(double x) const;
	// f(x).
	double density(double x) const;
	// P(X > x) for any x (accurate in the upper tail).
	double survival(double x) const;
	// P(X <= x).
	double cdf(double x) const;
	// E|X| (cost L1), closed form per band (§5.8).
	double mean_abs() const;
	// E[X^2] (cost L2), closed form per band (§5.8). E[X] = 0 by symmetry.
	double second_moment() const;
	// max_k epsilon_k: the pure-DP guarantee quoted by the paper (an upper bound on privacy_epsilon).
	double max_epsilon() const;
	// Exact privacy loss sup_{x, |s| <= sensitivity} |ln f(x) - ln f(x + s)|: the largest increase of
	// the piecewise-linear -ln f over a window of length `sensitivity` in |x|. Equals max_epsilon()
	// when the steepest band is the outer one or at least `sensitivity` wide; smaller otherwise.
	double privacy_epsilon() const;

private:
	double sensitivity_;
	std::vector<double> scales_;      // lambda_k
	std::vector<double> edges_;       // c_0 = 0, c_1, ..., c_{K-1}
	std::vector<double> log_height_;  // h(c_{k-1}) = sum_{j<k} (c_j - c_{j-1})/lambda_j
	double log_a1_;                   // ln a_1 (ln f(0))
};

// Exact merged-Laplace noise on the grid `grid`·Z: grid * Z with P(Z = z) ∝ exp(-H(|z|)), where H is
// piecewise linear with slope 1/t_k in band k, t_k = rational_at_least(lambda_k/grid) >= lambda_k/grid,
// and breakpoints round(c_k/grid). Exactness: Z is drawn from the exact DLap(t_max) (the flattest
// band) and accepted with probability exp(-(H(|z|) - |z|/t_max)) <= 1, evaluated as an exact wide
// rational by bernoulli_exp_minus_big; accepted values follow exactly the target law. Expected rounds
// are at most about t_max/t_min. grid > 0 a power of two (CoreError(InvalidParameter)); lambda_k/grid
// <= 2^43 and c_k/grid <= 2^62 (CoreError(ProgramLimit)).
double merged_laplace_on_grid(RandomSource &rng, const MergedLaplace &law, double grid);

// Exact pure-DP epsilon of merged_laplace_on_grid's law for answers rounded to the same grid
// (neighbours differ by at most k = ceil(sensitivity/grid) steps): the largest increase of H over k
// consecutive steps. At most max_epsilon() when the sensitivity is a multiple of the grid. Same
// contract as merged_laplace_on_grid.
double merged_laplace_grid_epsilon(const MergedLaplace &law, double grid);

} // namespace dxpriv
