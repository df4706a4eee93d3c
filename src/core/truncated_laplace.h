// Generalized truncated Laplacian (GTL) noise for (epsilon, delta)-DP (Mugunthan, Xiao, Kagal 2020;
// the symmetric member is the truncated Laplacian of Geng, Ding, Guo, Kumar). MECHANISMS.md §5.1–5.5.
//
// Density f(x) = M exp(-|x|/lambda) on [A, B] (A < 0 < B), lambda = sensitivity/epsilon. Within the
// support ln f is (1/lambda)-Lipschitz, so the only privacy loss beyond epsilon is the mass a shift by
// at most the sensitivity pushes off the support: delta = max(P[A, A+D], P[B-D, B]) (§5.2, exact).
#pragma once

#include <cstdint>

#include "core/random.h"

namespace dxpriv {

// The GTL law with scale lambda and support [lower, upper]. Immutable; all members are cheap.
class GeneralizedTruncatedLaplace {
public:
	// scale > 0 finite, lower < 0 < upper both finite; CoreError(InvalidParameter) otherwise.
	GeneralizedTruncatedLaplace(double scale, double lower, double upper);

	double scale() const { return scale_; }
	double lower() const { return lower_; }
	double upper() const { return upper_; }
	// The normalising constant M = 1 / (lambda (2 - e^{A/lambda} - e^{-B/lambda})).
	double normaliser() const { return normaliser_; }
	// f(x): M exp(-|x|/lambda) on [A, B], 0 outside.
	double density(double x) const;
	// P(X <= x).
	double cdf(double x) const;
	// P(lo <= X <= hi) for lo <= hi (clipped to the support), computed without cancellation.
	double mass(double lo, double hi) const;
	// Inverse CDF (§5.5) for u in [0, 1]. Floating point: for tests and plots, not for releases.
	double quantile(double u) const;
	// E[X] (zero iff the support is symmetric).
	double mean() const;
	// E|X|, the "noise amplitude" cost L1.
	double mean_abs() const;
	// E[X^2], the "noise power" cost L2.
	double second_moment() const;
	// Exact delta of q(D) + X for |q(D) - q(D')| <= sensitivity at every epsilon >= sensitivity/scale
	// (the profile is flat there): max(P[A, A + sensitivity], P[B - sensitivity, B]); 1 when the support
	// is narrower than the sensitivity. sensitivity > 0 finite (CoreError(InvalidParameter)).
	double privacy_delta(double sensitivity) const;

private:
	double scale_;
	double lower_;
	double upper_;
	double normaliser_;
};

// Half-width T = lambda ln(1 + (e^epsilon - 1)/(2 delta)) of the symmetric member calibrated to
// (epsilon, delta), lambda = sensitivity/epsilon. sensitivity > 0, epsilon > 0 finite,
// delta in (0, 1/2) (at 1/2 the support would shrink to the sensitivity); CoreError(InvalidParameter).
double gtl_symmetric_bound(double sensitivity, double epsilon, double delta);

// The symmetric GTL [-T, T] calibrated to (epsilon, delta): privacy_delta(sensitivity) == delta up to
// rounding. This is the member the paper evaluates, and it minimises E|X| and E[X^2] in the family.
// Same contract as gtl_symmetric_bound.
GeneralizedTruncatedLaplace gtl_symmetric(double sensitivity, double epsilon, double delta);

// The asymmetric GTL calibrated to (epsilon, delta) with the given far endpoint (negative: support
// [far, near]; positive: [-near, far]). The near endpoint is the closed-form solution of "near-end
// mass = delta": near = lambda ln((e^epsilon - 1 + delta) / (delta (2 - e^{-|far|/lambda}))).
// Requires |far| >= T (gtl_symmetric_bound) and finite, and a resulting near endpoint >= sensitivity
// (always true for epsilon >= ln((1 - delta)/(1 - 2 delta)); otherwise |far| is bounded), plus the
// gtl_symmetric_bound contract; CoreError(InvalidParameter) otherwise.
GeneralizedTruncatedLaplace gtl_with_far_endpoint(double sensitivity, double epsilon, double delta,
                                                  double far_endpoint);

// The (epsilon, delta) pair delivered by gtl_on_grid's exact discrete law (see below).
struct GridPrivacy {
	double epsilon;
	double delta;
};

// Exact GTL noise on the grid `grid`·Z: grid * Z with P(Z = z) ∝ exp(-|z|/t) for the integers z in
// [ceil(A/grid), floor(B/grid)], t = rational_at_least(lambda/grid) >= lambda/grid. Exactness: Z is
// built from the exact discrete Laplace only (the non-negative half of DLap(t) is exactly geometric,
// its remainder modulo m+1 is exactly geometric truncated to [0, m], a fair sign with "-0" rejected
// makes it two-sided, and rejection outside [lo, hi] truncates it), so no floating-point inversion
// ever shapes the law; expected rounds are O(1) for every support. scale/grid <= 2^43, |A|/grid and
// B/grid <= 2^62 (CoreError(ProgramLimit)); grid > 0 a power of two (CoreError(InvalidParameter)).
double gtl_on_grid(RandomSource &rng, const GeneralizedTruncatedLaplace &law, double grid);

// The integer Z of gtl_on_grid (noise = grid * Z). Same contract as gtl_on_grid.
std::int64_t gtl_grid_steps(RandomSource &rng, const GeneralizedTruncatedLaplace &law, double grid);

// Privacy of grid * Z from gtl_on_grid when answers are rounded to the same grid, so that
// neighbouring answers differ by at most k = ceil(sensitivity/grid) steps: epsilon = k/t and
// delta = max(P(Z <= lo + k - 1), P(Z >= hi - k + 1)) (exact law, evaluated in long double). With
// sensitivity a multiple of the grid, epsilon <= sensitivity/lambda. Same contract as gtl_on_grid,
// plus sensitivity > 0 finite.
GridPrivacy gtl_grid_privacy(const GeneralizedTruncatedLaplace &law, double sensitivity, double grid);

} // namespace dxpriv
