// Release allocation: shares a statement's epsilon between its cells and records what dx.explain shows.
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

// The allocation strategy for m cells (dxpriv.allocation), with a NOTICE when the exact solver's
// limit changes what runs.
AllocationStrategy strategy_for_cells(size_t m);

// What the allocation shares: every avg (per group) is one estimate, its sum and count weighted
// by the delta method with the centre of the weight's range as the mean proxy; with an explicit
// epsilon on any aggregate, each aggregate's cells are allocated within its own epsilon (budget
// block j holds aggregate j's cells, in every grouping set). Starts a request over m cells.
AllocationRequest start_request(const std::vector<AggSpec> &specs, size_t m);

// Adds the cells of one release, at `offset` among the statement's cells, to the request.
void add_to_request(const ReleaseAnalysis &a, size_t offset, AllocationRequest &request);

// Noise family of the linear cells (dxpriv.noise) and the query's delta: (epsilon, delta) families
// need the policy's per-query delta.
NoiseFamily linear_noise_family(const ReleaseAnalysis &a, double &query_delta);

// True when some cell of the plan gets noise.
bool any_noisy(const MultiLinearPlan &plan);

// dx.explain: what the statement costs (epsilon over all its cells, which q holds, on sub).
void capture_statement(const ReleaseAnalysis &a, double eps_total, AllocationStrategy strategy, NoiseFamily family,
                  double delta, const SubUniverse &sub, const std::vector<std::vector<double>> &q);

// dx.explain: the cells of aggregate j of one release (at `offset` among the plan's cells), in
// ledger order. empty_label: the group label of a release without GROUP BY.
void capture_cells(const ReleaseAnalysis &a, const MultiLinearPlan &plan, size_t offset, size_t j,
              const std::string &empty_label);

// The contribution bound of a release on a table with a privacy unit (README "Privacy units").
ContributionBound unit_bound_of(const ReleaseAnalysis &a);

// How each cell of a release aggregates a unit's rows: its group, and whether it counts units.
UnitCells unit_cells_of(const ReleaseAnalysis &a);

// "person_id: 10 rows per unit" (and ", 3 groups, 2 rows per group" for a bound with group limits,
// which ContributionBound::for_query no longer gives): the bound as dx.explain shows it.
std::string unit_bound_text(const ReleaseAnalysis &a, const ContributionBound &b);

// The noise plan of one release: the unit-level calibration on a table with a privacy unit (Laplace
// only), otherwise the row-level one of the noise family.
MultiLinearPlan plan_release(const ReleaseAnalysis &a, double query_delta, NoiseFamily family, const AllocationRequest &request);

} // namespace dxpriv::pg::analysis
