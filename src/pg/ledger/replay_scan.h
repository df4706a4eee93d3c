// Replay without reading: a statement whose every answer comes from the answer cache reads no row
// of the tables it releases (its scans of them return nothing; the declared groups still appear).
#pragma once

extern "C" {
#include "postgres.h"
#include "executor/execdesc.h"
#include "nodes/execnodes.h"
}

#include <vector>

namespace dxpriv::pg {

// Notes that plan's answers all come from the answer cache (charge_statement), releasing relids;
// plan nullptr forgets the note (the start of every ExecutorStart).
void note_replayed_plan(const void *plan, const std::vector<Oid> &relids);

// After the executor started qd: when its plan was noted, every scan of a noted table (or of a
// member of its inheritance tree) that the plan reads once returns no row. Forgets the note.
void skip_replayed_scans(QueryDesc *qd);

} // namespace dxpriv::pg
