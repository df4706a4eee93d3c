// Elevated-execution stage: analysts' distributed statements run as the table owner (hooks.cpp switches).
#pragma once

extern "C" {
#include "postgres.h"
#include "executor/execdesc.h"
}

namespace dxpriv::pg {

// Stage "elevated execution", start (ExecutorStart, after the charge): decides whether qd is an
// analyst's statement with a Citus release that runs as the table owner (distributed_run_as),
// refuses propagated SET LOCALs and checks the statement's tables as the analyst, records the
// owner for qd in the statement context (statement::owner), and ships the statement's large point
// tables to the workers as the owner (not for EXPLAIN-only starts). Returns the owner to run the executor as, or InvalidOid (run unchanged).
// Raises on refusal.
Oid elevated_start(QueryDesc *qd, int eflags);

} // namespace dxpriv::pg
