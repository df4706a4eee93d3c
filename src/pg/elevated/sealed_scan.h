// The sealed read of a protected table's stored rows by C code (the unit profile build): one column,
// every row, as the table's owner with the sealed settings.
//
// Every direct scan of a user table by dxpriv goes through sealed_column_scan: it opens the table
// (and, for a tree, each member) and runs the callback for each row inside the sealed path
// (sealed_execution.h: the owner switch with SECURITY_LOCAL_USERID_CHANGE, a security-restricted
// operation, sealed_settings() forced and the search path checked), so that whatever the callback
// calls (a unit type's hash opclass function, which a DBA may have written in SQL) runs as the
// owner, with pg_catalog, pg_temp as search path and fixed formatting settings, never under the
// analyst's identity, search path or settings. test/check_sealed_paths.sh fails on a table scan or
// a user relation opened outside src/pg/elevated.
#pragma once

extern "C" {
#include "postgres.h"
#include "access/attnum.h"
#include "nodes/pg_list.h"
#include "storage/block.h"
#include "storage/off.h"
#include "utils/snapshot.h"
}

namespace dxpriv::pg {

// One stored row as the scan hands it over: its table (the member of a tree), its item pointer and
// the column's value.
struct SealedRow {
	Oid table;
	BlockNumber block;
	OffsetNumber offset;
	Datum value;
	bool isnull;
};

// Called for every row, inside the sealed scope; a PostgreSQL frame (it may ereport; it must not
// throw a C++ exception). `ctx` is the caller's.
using SealedRowFn = void (*)(void *ctx, const SealedRow &row);

// The tables a scan of relid reads: relid itself, or (inh) every member of its inheritance tree,
// each locked AccessShare, a partition being detached concurrently included (find_all_inheritors
// leaves it out once the first transaction of DETACH PARTITION ... CONCURRENTLY is visible to the
// active snapshot, while a statement planned under an earlier snapshot still scans it: redteam3, a
// profile without its rows let every row of its units through). A caller that scans several times
// (the unit profile build in passes) takes them once and hands the same list to every scan: a
// child attached or inherited meanwhile (ATTACH PARTITION and INHERIT take only a
// ShareUpdateExclusive lock on the parent) would otherwise be read by the later scans only
// (redteam3: a profile of two different row sets). The contents version's tree
// (ledger/contents_version.cpp) is this list too. A PostgreSQL frame.
List *sealed_scan_members(Oid relid, bool inh);

// Scans `members` (sealed_scan_members(relid, ...): relid, or every member of its tree, each read
// through its own column of the name of relid's `attnum`) under `snapshot` as relid's owner, in a
// security-restricted operation with the sealed settings, and calls each(ctx, row) for every row.
// Members without storage are skipped; a foreign member is refused (0A000, `foreign_hint`): its rows
// are not dxpriv's to read this way. On return the user and the settings are the caller's again; on
// error the (sub)transaction abort restores them. A PostgreSQL frame: call inside pg_call.
void sealed_column_scan(Oid relid, List *members, AttrNumber attnum, Snapshot snapshot, const char *foreign_hint,
                        SealedRowFn each, void *ctx);

// (harden) The most rows `members` could hold now: each member's blocks × MaxHeapTuplesPerPage
// (members without storage: none), or PG_UINT64_MAX when one is not a heap (no bound per block). It
// bounds the rows of every snapshot taken before the call. Reads no row. A PostgreSQL frame.
uint64 sealed_scan_row_bound(List *members);

// The values of an oid-valued column (oid, regclass, regrole, regproc, ...) in every row of one of
// dxpriv's own catalog tables (dx.analysts' roles, dx.protected_tables' tables), read under a
// snapshot taken after the table's lock (the latest: changes committed by other sessions and the
// current transaction's earlier commands; in a parallel worker the active snapshot), as a catalog
// is read, so that a backend cache built from them and dropped at their invalidation is never
// rebuilt from rows older than that invalidation (review7): what `SELECT column::oid FROM table`
// run as the extension owner returns under that snapshot, without parsing, planning and executing
// that statement (a new backend's first
// statement paid about 0.6 ms of CPU for the two statements of the analyst context, newsess). No
// function a DBA or analyst chose runs (no key, no operator, no type output: the column is read by
// value), so no owner switch or setting is needed; the table is dxpriv's, never a protected one
// (ERROR when it lacks the column or the column is not an oid). A PostgreSQL frame: call inside
// pg_call.
List *dx_catalog_oids(Oid table, const char *column);

// The user the sealed path reads relid as (its owner; InvalidOid when relid is gone). A PostgreSQL frame.
Oid sealed_read_user(Oid relid);

} // namespace dxpriv::pg
