// The sealed read of one column of a protected table by C code, and of dxpriv's own catalog oids (sealed_scan.h).
#include "pg/elevated/sealed_scan.h"
#include "pg/elevated/sealed_execution.h"

extern "C" {
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/heapam.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
}

namespace dxpriv::pg {

// See sealed_scan.h.
Oid
sealed_read_user(Oid relid)
{
	HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	const Oid owner = reinterpret_cast<Form_pg_class>(GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

// See sealed_scan.h.
List *
dx_catalog_oids(Oid table, const char *column)
{
	Relation rel = table_open(table, AccessShareLock);
	const AttrNumber att = get_attnum(table, column);
	const Oid type = att == InvalidAttrNumber ? InvalidOid : TupleDescAttr(RelationGetDescr(rel), att - 1)->atttypid;
	if (!(type == OIDOID || type == REGCLASSOID || type == REGROLEOID || type == REGPROCOID || type == REGPROCEDUREOID ||
	      type == REGTYPEOID || type == REGNAMESPACEOID))
		ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("dxpriv: its catalog table lacks an oid column \"%s\"", column),
		                errhint("Run ALTER EXTENSION dxpriv UPDATE.")));
	// A snapshot taken now, after the lock (whose acquisition processed the invalidation messages
	// that arrived): every change committed before it is seen, and one committed after it sends its
	// invalidation after this read (review7: under the statement's snapshot, in REPEATABLE READ the
	// transaction's, a dx.add_analyst committed by another session after it was not seen, and the
	// analyst cache read at that invalidation was kept: the new analyst read raw rows in every later
	// transaction of the backend). In a parallel worker (no new snapshot there) the active one.
	const bool parallel = IsInParallelMode();
	const bool push = parallel && !ActiveSnapshotSet(); // (parse analysis of a utility statement has none)
	if (push)
		PushActiveSnapshot(GetTransactionSnapshot());
	const Snapshot snapshot = RegisterSnapshot(parallel ? GetActiveSnapshot() : GetLatestSnapshot());
	List *out = NIL;
	TableScanDesc scan = table_beginscan(rel, snapshot, 0, nullptr);
	HeapTuple tup;
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != nullptr) {
		bool isnull = false;
		const Datum d = heap_getattr(tup, att, RelationGetDescr(rel), &isnull);
		if (!isnull)
			out = lappend_oid(out, DatumGetObjectId(d));
	}
	table_endscan(scan);
	UnregisterSnapshot(snapshot);
	if (push)
		PopActiveSnapshot();
	table_close(rel, AccessShareLock);
	return out;
}

// See sealed_scan.h. find_all_inheritors with omit_detached false: find_all_inheritors leaves out a
// partition whose DETACH ... CONCURRENTLY committed its first transaction as seen by the active
// snapshot, which a statement planned under an earlier snapshot still scans.
List *
sealed_scan_members(Oid relid, bool inh)
{
	List *members = list_make1_oid(relid);
	if (!inh)
		return members;
	ListCell *lc;
	foreach (lc, members) { // (appending while iterating is allowed: PostgreSQL 13+ lists)
		List *children = find_inheritance_children_extended(lfirst_oid(lc), false, AccessShareLock, nullptr, nullptr);
		ListCell *c;
		foreach (c, children)
			members = list_append_unique_oid(members, lfirst_oid(c)); // (multiple inheritance: once)
		list_free(children);
	}
	return members;
}

// See sealed_scan.h.
uint64
sealed_scan_row_bound(List *members)
{
	uint64 rows = 0;
	ListCell *lc;
	foreach (lc, members) {
		Relation rel = relation_open(lfirst_oid(lc), AccessShareLock);
		const bool storage = RELKIND_HAS_STORAGE(rel->rd_rel->relkind);
		const bool heap = rel->rd_rel->relam == HEAP_TABLE_AM_OID;
		const uint64 blocks = storage ? static_cast<uint64>(RelationGetNumberOfBlocks(rel)) : 0;
		relation_close(rel, AccessShareLock);
		if (storage && !heap)
			return PG_UINT64_MAX;
		rows += blocks * MaxHeapTuplesPerPage;
	}
	return rows;
}

// See sealed_scan.h.
void
sealed_column_scan(Oid relid, List *members, AttrNumber attnum, Snapshot snapshot, const char *foreign_hint,
                   SealedRowFn each, void *ctx)
{
	const Oid owner = sealed_read_user(relid);
	if (!OidIsValid(owner))
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE), errmsg("the protected table read by dxpriv no longer exists"),
		                errhint("Run the statement again.")));
	const char *column = get_attname(relid, attnum, false);
	// as the owner, restricted, sealed settings (sealed_execution.h); an error unwinds it with the
	// (sub)transaction, as it does for a SECURITY DEFINER function
	const SealedCallState state = sealed_call_enter(owner, true);
	ListCell *lc;
	foreach (lc, members) {
		Relation rel = table_open(lfirst_oid(lc), AccessShareLock);
		if (rel->rd_rel->relkind == RELKIND_FOREIGN_TABLE) // (its rows would count as light units' rows)
			ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg("a unit profile cannot read a foreign table"),
			                errhint("%s", foreign_hint)));
		if (!RELKIND_HAS_STORAGE(rel->rd_rel->relkind)) {
			table_close(rel, AccessShareLock);
			continue;
		}
		const AttrNumber att = get_attnum(RelationGetRelid(rel), column);
		if (att == InvalidAttrNumber)
			ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("dxpriv: a member lacks the privacy unit column")));
		SealedRow row;
		row.table = RelationGetRelid(rel);
		TupleTableSlot *slot = table_slot_create(rel, nullptr);
		TableScanDesc scan = table_beginscan(rel, snapshot, 0, nullptr);
		while (table_scan_getnextslot(scan, ForwardScanDirection, slot)) {
			CHECK_FOR_INTERRUPTS();
			row.value = slot_getattr(slot, att, &row.isnull);
			row.block = ItemPointerGetBlockNumberNoCheck(&slot->tts_tid);
			row.offset = ItemPointerGetOffsetNumberNoCheck(&slot->tts_tid);
			each(ctx, row);
		}
		table_endscan(scan);
		ExecDropSingleTupleTableSlot(slot);
		table_close(rel, AccessShareLock);
	}
	sealed_call_leave(state);
}

} // namespace dxpriv::pg
