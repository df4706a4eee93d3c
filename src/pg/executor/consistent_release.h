// Free post-processing of releases: the dxpriv.postprocess setting, and consistent grouping-set
// releases (core/consistent_projection.h) registered at analysis and noised once per execution.
//
// A GROUPING SETS/ROLLUP/CUBE release is one allocation whose cells of one aggregate component
// are sums over shared atoms. When every such cell has the same grid and a Laplace or Gaussian
// plan, the first cell released in an execution draws the noise of ALL the cells (in grid units,
// each from its own plan), projects it (consistent_noise_units), and every cell is then released
// as its exact grid sum plus its projected noise: the rounded least-squares projection of the
// noisy cells, consistent in integers of the grid. The decision (projected or not) is taken once
// per execution and kept for all its cells, so a cell is never released both ways.
#pragma once

#include "core/consistent_projection.h"
#include "core/linear_query.h"

extern "C" {
#include "postgres.h"
}

#include <optional>
#include <vector>

namespace dxpriv::pg {

// dxpriv.postprocess (default on): clamp non-negative counts and sums at 0, withhold averages
// whose count is too noisy, project grouping-set releases onto consistent totals. Defined by
// install_postprocess.
extern bool guc_postprocess;
void install_postprocess();

// The cells of one aggregate over the grouping sets of one statement, registered at analysis.
struct ConsistentCells {
	std::vector<int64> charge_ids;           // per set, its copy's charge id
	std::vector<int> groups;                 // per set, its number of groups
	int components = 1;                      // 2 for avg (sum, count)
	std::vector<std::vector<const std::vector<double> *>> q; // [component][cell]: weight at every point
	std::vector<std::vector<LinearNoisePlan>> plans;          // [component][cell]: the cell's noise plan
	// [component], when not empty: the system itself, instead of q (a join's grouping sets, whose
	// atoms are not points: planner/join_grouping_sets.h); nullopt: that component is released raw
	std::vector<std::optional<ConsistentSystem>> systems;
};
// Cells are in (set, group) order, set-major. Registers nothing for a component whose cells are not
// sums over shared atoms or do not share one grid and a Laplace/Gaussian family. Bounded: the last
// statements only (a release whose registration was dropped is released raw).
void consistent_register(const ConsistentCells &cells);

// The statement holding these charge ids was charged (or replayed): its next releases draw anew.
void consistent_charged(const std::vector<int64> &charge_ids);

// Transaction end: no release of a statement of this transaction can follow (cursors end with it;
// WITH HOLD ones are materialised at commit), so every execution's draws and projections are dropped.
void consistent_end_transaction();

// For cell (charge_id, group, component) of a consistent release: its noise in grid units and its
// variance after projection (in squared answer units). False when the cell is released as usual.
// plan must be the cell's own plan (checked against the registration).
bool consistent_noise(int64 charge_id, int group, int component, const LinearNoisePlan &plan, double &noise_units,
                      double &projected_variance);

} // namespace dxpriv::pg
