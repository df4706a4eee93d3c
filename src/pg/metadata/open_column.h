// Open-domain columns: declared with {"open": true}; their values are never enumerated.
//
// An open column may only be a bare GROUP BY key of a release (planner/open_keys.h): its keys are
// chosen by private partition selection (core/partition_selection.h), never listed. Its metric
// gives the distance between two distinct values: {"type": "discrete", "weight": w} (w > 0, may
// be "Infinity"; default 1), {"type": "per_value", "weights": {"v": w, ...}, "default": w} (the
// smallest of these is used for every pair: the analysis never sees the values) or
// {"type": "none"} (+inf: only the presence edge protects the key).
#pragma once

#include "pg/metadata/policy.h"

extern "C" {
#include "utils/jsonb.h"
}

namespace dxpriv::pg {

// True when a domain declaration has the key "open".
bool is_open_domain(Jsonb *domain);

// Validates an open column declaration for a column of the given type; throws UserError (22023
// with a hint) on a bad domain, metric or column type. The result has open = true and
// open_distance set.
ColumnPolicy parse_open_column(Oid type, int32 typmod, Jsonb *domain, Jsonb *metric);

} // namespace dxpriv::pg
