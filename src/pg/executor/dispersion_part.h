// A released part of a dispersion statistic as the float8[] dx._dispersion reads (dx._noisy_part's
// final function on a local table, dx._release_part on the coordinator of a Citus table).
#pragma once

#include "pg/executor/linear_state.h"

extern "C" {
#include "utils/array.h"
}

namespace dxpriv::pg {

// {answer, noise variance, charge id high and low 32 bits, group, weight lo, weight hi, noise excess
// kurtosis} of state s, whose part was released (release_linear_state(s, LinearRelease::Part))
// as `answer`. Allocated in the current memory context.
ArrayType *released_part_array(const LinearState *s, double answer);

} // namespace dxpriv::pg
