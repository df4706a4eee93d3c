// Where the planner places the noise parameter array (noise_params.h) in the nodes it writes, and
// how every later stage finds it again: the constant third argument of a rewritten noisy Aggref,
// the second argument of a distributed release, the parameters of a native partial.
#pragma once

#include "pg/metadata/extension_objects.h"

extern "C" {
#include "nodes/primnodes.h"
}

namespace dxpriv::pg {

// The constant parameter array of a rewritten noisy Aggref (its third argument; the first direct
// argument of a one-pass aggregate, also in the finalize phase), or nullptr when the arguments were
// replaced (finalize phase of a parallel plan) or are not constants.
Const *aggref_params_const(Aggref *aggref);
// The constant parameter array of a distributed release dx._release_*(state, params, group)
// (planner/distributed.h), or nullptr when node is not one or its parameters are not constants.
Const *release_params_const(Node *node, const ExtensionObjects &ext);
// The constant parameter array of a native partial of a distributed release, dx._state_of(units,
// rows, params, group), the aggregate dx._collect(group, units, rows, params) or the aggregate
// dx._em_collect(candidate, group, params, rows), or the one-stage grouped sums
// dx._grouped_partials(task, params, shipments); nullptr otherwise.
Const *native_partial_params_const(Node *node, const ExtensionObjects &ext);

// The location the Citus split stamps on the dx._grouped_partials(task, params, shipments) call it
// places (planner/distributed_stage.h); the parser never produces it (locations are -1 or offsets in
// the text), so a call carrying another location was written by someone, not placed by dxpriv: the
// analyzer refuses it, and the function itself refuses to run from any other node.
inline constexpr int kStageLocation = -7421;

} // namespace dxpriv::pg
