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
// do not match their allocations. Callers skip it for EXPLAIN-only starts, parallel workers,
// dxpriv's own statements and the ledger worker.
void charge_statement(QueryDesc *qd);

// Forgets what a QueryDesc at this address was running (ExecutorStart: a QueryDesc reused at the
// address of one that failed earlier; ExecutorEnd: the statement no longer runs).
void charge_forget_statement(const QueryDesc *qd);

// Brackets one ExecutorStart/Run/Finish call of qd: while inside, statements started by it are
// part of it (Citus's local tasks) and are not charged again. An error between enter and leave
// leaves the count behind; charge_reset_subtransaction/charge_reset_transaction clear it.
void charge_enter_executor(const QueryDesc *qd);
void charge_leave_executor(const QueryDesc *qd);

// Resets: paid charge ids, partial-aggregate parameters and running statements (top-level
// transaction end, commit or abort); running statements only (subtransaction abort).
void charge_reset_transaction();
void charge_reset_subtransaction();

// Defines dxpriv.charged_releases (internal, for parallel workers); once, from _PG_init.
void charge_define_gucs();

} // namespace dxpriv::pg
