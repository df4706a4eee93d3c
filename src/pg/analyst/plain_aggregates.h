// Analysts' plain aggregates rewritten to dx aggregates, or refused.
#pragma once

#include "pg/metadata/extension_objects.h"

extern "C" {
#include "nodes/parsenodes.h"
}

namespace dxpriv::pg {

// Rewrites count(*), count(col), sum(col), avg(col) at the top level of q into dx aggregates at
// the session epsilon (cast back to the built-in result type). Returns how many were rewritten.
int rewrite_plain_aggregates(Query *q, const ExtensionObjects &ext);

} // namespace dxpriv::pg
