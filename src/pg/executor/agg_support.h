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

#include "pg/contract/noise_params.h"

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

// Parameters of an aggregate whose final function saw no row: the Aggref's constant, or those
// recorded when the statement was charged (finalize phase). Raises when neither is available.
NoiseParams final_function_params(FunctionCallInfo fcinfo);

} // namespace dxpriv::pg
