// Accuracy of a noisy release: confidence half-widths of the discrete Laplace on a grid.
#pragma once

#include "core/linear_query.h"

namespace dxpriv {

// Smallest h (a multiple of plan.grid) with P(|noise| > h) <= 1 - confidence for the noise the
// plan adds: grid * Z, Z discrete Laplace with scale t = plan.scale / plan.grid, whose tail is
// P(|Z| >= k) = 2 a^k / (1 + a), a = exp(-1/t). 0 when the plan adds no noise. confidence in (0,1).
double confidence_half_width(const LinearNoisePlan &plan, double confidence = 0.95);

} // namespace dxpriv
