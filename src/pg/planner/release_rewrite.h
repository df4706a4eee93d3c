// Release rewrite: replaces analysed aggregates by their noisy internal aggregates over per-point tables.
// Part of the analysis stage (planner/analyzer.h dispatches to it); names live in dxpriv::pg::analysis.
#pragma once

#include "pg/settings.h"
#include "pg/metadata/extension_objects.h"
#include "pg/metadata/policy.h"
#include "pg/analyst/analyst_guard.h"
#include "pg/planner/em_rewrite.h"
#include "pg/planner/group_keys.h"
#include "pg/planner/join_cells.h"
#include "pg/planner/public_joins.h"
#include "pg/planner/universe_eval.h"
#include "pg/executor/release_log.h"
#include "core/allocation.h"
#include "core/linear_query.h"
#include "core/unit_bound.h"
#include "core/work_estimate.h"
#include "core/sensitivity.h"
#include "core/release_interval.h"
#include "core/approximate_dp.h"
#include "pg/planner/release_analysis.h"

extern "C" {
#include "nodes/parsenodes.h"
}

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dxpriv::pg::analysis {

// What dx.last_release shows of a release: its aggregates' descriptions and its group labels.
struct ReleaseText {
	std::vector<ReleaseDescription> descriptions;
	std::vector<std::string> labels;
};

// Rewrites the aggregates of an analysed release with the noise of their cells (at `offset` among
// the plan's cells): each reads its weight from its per-point table at the row's point; WHERE and
// FILTER are folded into the tables, so no expression of the query runs on a row. set: the
// release's grouping set when the statement's sets share the plan (nullptr for a release alone).
// Charge ids and the cache key are stamped by the caller once the statement is rewritten.
ReleaseText rewrite_release(Query *q, const ExtensionObjects &ext, ReleaseAnalysis &a, const MultiLinearPlan &plan,
                size_t offset, NoiseFamily family, double delta, const SetIdentity *set);

// Validates and rewrites one SELECT that contains dx aggregates: one release, its cells allocated
// within its epsilon. A query with parameters, or shape_only, is only checked (analyse_release).
void rewrite_query(Query *q, const ExtensionObjects &ext, const Discovery &d, bool shape_only = false);

} // namespace dxpriv::pg::analysis
