// The exponential-mechanism release kind: dx.mode, dx.quantile and dx.median behind the release-kind interface.
#pragma once

#include "pg/planner/release_kind.h"

namespace dxpriv::pg::analysis {

// The exponential-mechanism kind (release_kind.h) over planner/em_rewrite.h: ANALYSE takes their
// markers (take_em_markers) and refuses them in joins, grouping sets and on tables with a privacy
// unit; ALLOCATE adds each aggregate's own epsilon (no linear cell); REWRITE computes their
// sensitivities and rewrites them (rewrite_em_aggregates) after the linear aggregates.
const ReleaseKind &em_kind();

} // namespace dxpriv::pg::analysis
