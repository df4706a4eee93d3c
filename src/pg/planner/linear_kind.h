// The linear release kind: dx.count, dx.sum, dx.avg, dx.linear and dx.count_units behind the release-kind interface.
#pragma once

#include "pg/planner/release_kind.h"

namespace dxpriv::pg::analysis {

// The linear kind (release_kind.h): ANALYSE merges identical aggregates into one release and
// describes each (describe_aggregate); ALLOCATE adds their cells to the linear request (avg as one
// estimate) and their epsilon; REWRITE gives each its noisy internal aggregate over its per-point
// table with its cells' noise (NoiseParams, contract/noise_params.h).
const ReleaseKind &linear_kind();

} // namespace dxpriv::pg::analysis
