// Contents version of a protected table, read under a statement's snapshot (answer-cache freshness).
#pragma once

extern "C" {
#include "postgres.h"
}


extern "C" {
#include "utils/snapshot.h"
}

namespace dxpriv::pg {

// Version of the rows of protected table relid (its whole inheritance tree) as seen by snapshot:
// the number of committed transactions (plus the current one) that wrote to the tree, counted in
// dx.contents_changes, which the statement-level trigger dx_contents_<relid> (installed by
// dx.protect_table on every member of the tree, ENABLE ALWAYS) fills. Snapshots see nested sets of
// committed transactions, so two snapshots with the same count see the same writes. Mixed with the
// table's relfilenode (rewrites), the current transaction's xid, the snapshot's command id and the
// current subtransaction's id when the snapshot sees a write of the current transaction (each later
// command of a writing transaction, and each statement after a rolled-back savepoint, gets a new
// version, so INSERT; SELECT; INSERT; SELECT is two versions), and the identity of each trigger row (a trigger disabled or dropped
// and then restored may have missed writes: answers stored before are not replayed). Returns false (do not replay, do not store) when some member of
// the tree lacks the trigger, the trigger is not enabled always, dx.contents_changes is absent, or a logical replication
// subscription writes into a member or an ancestor of relid (its apply worker fires no statement trigger).
// May ereport: call inside pg_call.
bool contents_version(Oid relid, Snapshot snapshot, uint64 *version);

// Version of the policy (the rows of dx.protected_tables, protected_columns,
// protected_column_groups, public_tables, privacy_units, analysts and attribute_policies; not
// the budgets, which the ledger updates and the analysis does not read) as seen by snapshot,
// counted like contents_version under relid 0 (trigger dx_contents_0 on each of them,
// sql/57_analysis_memo.sql). False when a trigger is missing. May ereport: call inside pg_call.
bool policy_version(Snapshot snapshot, uint64 *version);

} // namespace dxpriv::pg
