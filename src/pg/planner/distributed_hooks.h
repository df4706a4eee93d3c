// Elevated-execution stage: analysts' distributed statements run as the table owner (hooks.cpp switches).
#pragma once

extern "C" {
#include "postgres.h"
#include "executor/execdesc.h"
}

namespace dxpriv::pg {

// Stage "elevated execution", start (ExecutorStart, after the charge): decides whether qd is an
// analyst's statement with a Citus release that runs as the table owner (distributed_run_as),
// refuses propagated SET LOCALs and checks the statement's tables as the analyst, remembers the
// owner for qd, and ships the statement's large point tables to the workers as the owner (not for
// EXPLAIN-only starts). Returns the owner to run the executor as, or InvalidOid (run unchanged).
// Raises on refusal.
Oid elevated_start(QueryDesc *qd, int eflags);

// The owner remembered for qd by elevated_start (InvalidOid: none). ExecutorRun/Finish run as it.
Oid elevated_owner(const QueryDesc *qd);

// As elevated_owner, and forgets qd (ExecutorEnd: the end runs as the returned owner).
Oid elevated_end(const QueryDesc *qd);

// Forgets every remembered owner (top-level transaction end: commit, abort, prepare).
void elevated_reset();

} // namespace dxpriv::pg
