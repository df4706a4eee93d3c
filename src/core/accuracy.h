// Accuracy of a noisy release: confidence half-widths of the noise families on a grid.
#pragma once

#include "core/linear_query.h"

namespace dxpriv {

// Smallest h (a multiple of plan.grid) with P(|noise| > h) <= 1 - confidence for the noise the
// plan adds, grid * Z: Laplace, Z discrete Laplace with scale t = plan.scale / plan.grid, whose tail
// is P(|Z| >= k) = 2 a^k / (1 + a), a = exp(-1/t); TruncatedLaplace, the same law cut at
// |Z| <= bound/grid (closed-form tail, never above the bound); Gaussian, N_Z(0, t^2) with its tail
// summed exactly for t <= 1e4 and the continuous normal quantile beyond (rounded up to a step).
// 0 when the plan adds no noise. confidence in (0,1).
double confidence_half_width(const LinearNoisePlan &plan, double confidence = 0.95);

// Variance of the noise the plan adds (answer units): Laplace grid² · 2a/(1-a)², a = exp(-grid/scale)
// (the discrete Laplace; 2·scale² in the limit); Gaussian scale²; TruncatedLaplace the Laplace
// value (an upper bound: truncation only removes tail mass). 0 when the plan adds no noise.
double noise_variance(const LinearNoisePlan &plan);

} // namespace dxpriv
