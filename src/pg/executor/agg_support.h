// Helpers shared by dxpriv's aggregates: memory contexts, state buffers, constant parameters.
#pragma once

extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "nodes/primnodes.h"
#include "utils/array.h"
}

#include <string>
#include <vector>

#include "pg/dxpriv.h"
#include "pg/executor/noise_params.h"

namespace dxpriv::pg {

// The aggregate context when called as an aggregate support function, else the current context
// (deserialize functions may be called either way).
MemoryContext aggregate_or_current_context(FunctionCallInfo fcinfo);

// The aggregate context of a transition or combine function; raises an internal error naming
// `function` when it is called outside an aggregate.
MemoryContext require_aggregate_context(FunctionCallInfo fcinfo, const char *function);

// A read-only StringInfo over a bytea's payload (pq_getmsg* reads it; no copy).
StringInfoData bytea_reader(bytea *b);

// The elements of a text[] as strings (NULL elements are not expected in dxpriv's constants).
std::vector<std::string> text_array_strings(ArrayType *array);

// The constant parameter array of a rewritten noisy Aggref (its third argument), or nullptr when
// the arguments were replaced (finalize phase of a parallel plan) or are not constants.
Const *aggref_params_const(Aggref *aggref);
// The constant parameter array of a distributed release dx._release_*(state, params, group)
// (planner/distributed.h), or nullptr when node is not one or its parameters are not constants.
Const *release_params_const(Node *node, const ExtensionObjects &ext);
// The constant parameter array of a native partial of a distributed release, dx._state_of(units,
// rows, params, group), the aggregate dx._collect(group, units, rows, params) or the aggregate
// dx._em_collect(candidate, group, params, rows); nullptr otherwise.
Const *native_partial_params_const(Node *node, const ExtensionObjects &ext);

// Parameters of an aggregate whose final function saw no row: the Aggref's constant, or those
// recorded when the statement was charged (finalize phase). Raises when neither is available.
NoiseParams final_function_params(FunctionCallInfo fcinfo);

} // namespace dxpriv::pg
