// Privacy units: whether a grouped release over a unit table is bounded by a unit profile's keep qual,
// decided once before its aggregates are rewritten (unitpar).
#pragma once

#include "pg/planner/release_analysis.h"

namespace dxpriv::pg {

// True when the grouped release a (after analysis, before the kinds' rewrite) reads a table with a
// privacy unit whose rows profile_bounding_applies to (planner/unit_profile_source.h) and is
// rewritten through the group source: GROUP BY (not open keys, not a public join's keys), not on
// Citus, no count_units aggregate. Such a release is then rewritten as one over a table without a
// unit: its one-pass aggregates leave the key columns out (planner/one_pass.h), so the group fold
// may read the table in one ungrouped pass (planner/group_fold.h), with the keep qual on the rows it
// reads. The sensitivity and the charge keep the unit's bound (unit_bound_of: the analysis and the
// noise parameters do not depend on this choice). rewrite_release asks this once and uses the
// answer both for the aggregates (KindRewrite::unit_profile) and for the row source.
bool unit_profile_grouped(const analysis::ReleaseAnalysis &a, bool distributed);

} // namespace dxpriv::pg
