// Charge stage: pays a statement's allocations before it runs (see charge.cpp's header comment).
#pragma once

extern "C" {
#include "postgres.h"
#include "executor/execdesc.h"
}

namespace dxpriv::pg {

// Stage "charge" (ExecutorStart, after admission): pays every allocation the plan's noisy
// aggregates belong to, through the ledger worker, and records the paid charge ids for the final
// functions. Raises (and nothing is released) when the budget is exhausted or the plan's releases
// do not match their allocations. What it paid goes into the statement context
// (statement/statement_context.h). Callers skip it for EXPLAIN-only starts, parallel workers,
// dxpriv's own statements and the ledger worker.
void charge_statement(QueryDesc *qd);

} // namespace dxpriv::pg
