// Partitions and inheritance children of protected tables (the inheritance rule of analyst_context.h).
#pragma once

#include "pg/analyst/analyst_context.h"

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

namespace dxpriv::pg {

// Refuses an analyst's reference to a child of a protected table that has no policy of its own
// (query the parent instead), and a read through a parent that would take in the rows of a
// descendant protected with its own policy.
void check_inheritance_refs(Query *q, const AnalystContext &ac);

} // namespace dxpriv::pg
