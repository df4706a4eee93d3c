// Replay without reading: a statement whose every answer comes from the answer cache reads no row
// of the tables it releases (its scans of them return nothing; the declared groups still appear).
#pragma once

#include "pg/dxpriv.h"

extern "C" {
#include "nodes/execnodes.h"
}

#include <vector>

namespace dxpriv::pg {

// Makes every scan of relids (or of a member of their inheritance trees) under ps return no row.
// Call after the executor started the plan, for a plan whose answers are all replayed.
void skip_replayed_scans(PlanState *ps, const std::vector<Oid> &relids);

} // namespace dxpriv::pg
