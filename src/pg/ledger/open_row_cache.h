// Answer cache of releases grouped by an open key (planner/open_keys.h): the released rows themselves.
//
// Such a release draws its partition selection after the final functions, so its per-group
// answers cannot be replayed the way answer_cache.h does (the kept keys would be redrawn, and a
// repetition would let new keys cross the threshold for free). Instead the rows the plan's top node
// returned (kept partitions only, after the selection and the analyst's HAVING) are stored, keyed
// by the statement's cache key, its text, the contents and policy versions, the settings the
// selection was calibrated with, and the role that was charged; a replay returns exactly those
// rows without running the plan (no scan, no final function, no new draw). Backend-local
// bookkeeping; the entries live in shared memory (dxpriv.cache_lifetime, dx.clear_cache()).
#pragma once

extern "C" {
#include "postgres.h"
#include "executor/execdesc.h"
}

namespace dxpriv::pg {

void open_row_cache_request_shmem();
void open_row_cache_startup();

// True when the rows of (key, role) are stored and fresh; the plan (qd->plannedstmt) is then noted
// for a replay by open_row_cache_attach.
bool open_row_cache_plan_replay(QueryDesc *qd, uint64 key, Oid role);
// Notes the plan for recording its rows under (key, role, relid) once it returned all of them.
void open_row_cache_plan_record(QueryDesc *qd, uint64 key, Oid role, Oid relid);
// After ExecutorStart: the noted plan's top node replays (or records) its rows. Clears the note.
void open_row_cache_attach(QueryDesc *qd);
// Forgets a note of a plan that was not started (start of a new statement).
void open_row_cache_forget_note();
// Drops every entry (relid InvalidOid) or those of one table; returns how many were dropped.
int open_row_cache_clear(Oid relid);

} // namespace dxpriv::pg
