// Privacy units: cached unit profiles (the heavy units of a table version and their rank thresholds).
//
// A profile of (protected table tree or ONLY the table, its contents version, unit column, k) holds a
// 16-byte rank key drawn when the profile is built and, for every unit with more than k rows (over all
// the rows of the table, before WHERE), the 64-bit hash of the unit value and its threshold: the k-th
// smallest rank SipHash-2-4(key; tableoid, ctid) of its rows. A row is kept exactly when its unit is
// light or its rank is at most its unit's threshold, which is the rule of the hash and sort
// bounding (each unit keeps its k rows of smallest rank) as a row-local predicate:
// dx._unit_keep(profile, unit, tableoid, ctid), a plain scan qual (no per-statement pass over units).
// Profiles live in shared memory (dxpriv.unit_profile_memory) keyed on the contents version
// (ledger/contents_version.h), so every backend and parallel worker reads the same one; a write to the
// table gives a new version, hence a new profile (and a new key) built by the next statement.
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/plannodes.h"
}

namespace dxpriv::pg {

// This backend's random token (positive int8, drawn once): the planner passes it to
// dx._unit_profile, which refuses a call without it (an analyst's own call, even inside a charged
// statement, cannot know it).
int64 unit_profile_token();

// (citusunit) The check dx._unit_keep_shard makes of its caller besides privileges: true when the
// current role or the session's login role is (or inherits) an analyst role. Registered by the hooks
// layer at load (the analyst layer is above this one); unregistered, every call is refused.
using AnalystRoleCheck = bool (*)();
void set_unit_shard_analyst_check(AnalystRoleCheck check);

// (harden) Whether the profile of relid (its inheritance tree when inh) bounding units to k rows
// could exceed dxpriv.unit_profile_max_size now: an upper bound on its bytes from the sizes of the
// relations (their blocks × MaxHeapTuplesPerPage rows, each heavy unit holding at least k + 1 of
// them, the table twice their number rounded up to a power of two, 16 bytes an entry), taken now:
// it bounds the profile under every snapshot taken before now. Data-dependent only through the
// relations' sizes in blocks; the planner falls back to the per-statement bounding (which spills to
// disk) when true, with the same rule and charge. A PostgreSQL frame (opens the relations): call
// inside pg_call.
bool unit_profile_may_exceed(Oid relid, bool inh, int32 k);
// Contract: throws 54000 (UserError: call inside guarded) when the plan calls dx._unit_profile for
// a profile that unit_profile_may_exceed now (a plan made while the table was smaller: a prepared
// statement, a PL/pgSQL or generic cached plan); returns otherwise. The hooks call it before the
// charge, so such a statement is refused unpaid, before any row is read.
void refuse_oversized_unit_profiles(PlannedStmt *stmt);

// Defines dxpriv.unit_profiles and dxpriv.unit_profile_memory (from _PG_init, before shmem requests).
void unit_profile_define_gucs();
// Shared memory of the profile cache (shmem_request_hook / shmem_startup_hook).
void unit_profile_request_shmem();
void unit_profile_startup();

} // namespace dxpriv::pg
