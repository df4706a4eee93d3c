// Contents version of a protected table, read under a statement's snapshot (answer-cache freshness).
#include "pg/ledger/contents_version.h"

#include "pg/elevated/sealed_scan.h"
#include "pg/guard.h"
#include "pg/metadata/inheritance_parents.h"
#include "pg/metadata/catalog_epoch.h"

extern "C" {
#include "access/genam.h"
#include "access/transam.h"
#include "access/xact.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_subscription_rel.h"
#include "catalog/indexing.h"
#include "catalog/pg_class.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "common/hashfn.h"
#include "nodes/pg_list.h"
#include "parser/parse_func.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relmapper.h"
#include "utils/syscache.h"
#include "utils/xid8.h"
#include "storage/sinval.h"
}

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

namespace dxpriv::pg {

namespace {

constexpr int16 kNeededEvents = TRIGGER_TYPE_INSERT | TRIGGER_TYPE_UPDATE | TRIGGER_TYPE_DELETE | TRIGGER_TYPE_TRUNCATE;

// Whether a pg_trigger row records writes: dx._note_contents_change (function) run after every
// statement that inserts, updates, deletes or truncates, enabled always.
bool
records_writes(const Form_pg_trigger t, Oid function)
{
	return t->tgfoid == function && t->tgenabled == TRIGGER_FIRES_ALWAYS && !TRIGGER_FOR_ROW(t->tgtype) &&
	       TRIGGER_FOR_AFTER(t->tgtype) && (t->tgtype & kNeededEvents) == kNeededEvents;
}

// What tree_shape needs of relation relid, read from pg_class (syscache) and pg_trigger (its
// (tgrelid, tgname) index) without opening the relation: its relfilenode, and the identity of its
// trigger `name` when that trigger records writes (name null: of its first trigger by name that
// records writes), else 0. The identity of a pg_trigger row is its oid and the transaction that
// last wrote it: disabling and re-enabling the trigger (writes in between were not counted) or
// dropping and re-creating it gives another identity, so no answer stored before is replayed. The
// same values as the relation's relcache entry gives (its trigger descriptor, built from pg_trigger
// when relhastriggers, and rd_node), without building that entry: a new backend's first statement
// built the seven policy tables' entries only for this (newsess: about a tenth of that statement).
// False when relid has no pg_class row. May ereport: call inside pg_call.
bool
relation_triggers(Oid relid, const char *name, Oid function, uint64 *identity, Oid *node)
{
	*identity = 0;
	HeapTuple ct = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(ct))
		return false;
	const Form_pg_class c = (Form_pg_class) GETSTRUCT(ct);
	*node = OidIsValid(c->relfilenode) ? c->relfilenode : RelationMapOidToFilenode(relid, c->relisshared);
	const bool has_triggers = c->relhastriggers;
	ReleaseSysCache(ct);
	if (!has_triggers) // (the relcache entry then has no trigger descriptor)
		return true;
	Relation tr = table_open(TriggerRelationId, AccessShareLock);
	ScanKeyData key[2];
	ScanKeyInit(&key[0], Anum_pg_trigger_tgrelid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	if (name)
		ScanKeyInit(&key[1], Anum_pg_trigger_tgname, BTEqualStrategyNumber, F_NAMEEQ, CStringGetDatum(name));
	SysScanDesc scan = systable_beginscan(tr, TriggerRelidNameIndexId, true, nullptr, name ? 2 : 1, key);
	HeapTuple tup;
	while ((tup = systable_getnext(scan)) != nullptr) {
		const Form_pg_trigger t = (Form_pg_trigger) GETSTRUCT(tup);
		if (records_writes(t, function)) {
			*identity = hash_bytes_uint32_extended(t->oid, HeapTupleHeaderGetXmin(tup->t_data));
			break;
		}
		if (name) // (one row of that name)
			break;
	}
	systable_endscan(scan);
	table_close(tr, AccessShareLock);
	return true;
}

// The tables a logical replication subscription of this database writes into (the relids of
// pg_subscription_rel, whatever their state: a subscription may be enabled or refreshed later),
// sorted. Its apply worker fires row triggers only, never the statement-level dx_contents_<relid>
// (PostgreSQL "Logical Replication: Triggers"; the initial copy does fire it), so the rows it
// writes would not change the contents version: a unit profile or an answer cached before them
// would be served after them (a unit whose replicated rows made it heavy kept every row). A tree
// with such a member or ancestor has no version. One scan of the catalog per call (it is empty
// where no subscription exists), instead of one index probe per member of the tree. Read on every
// call, never kept: adding a table to a subscription sends no invalidation the tree's shape
// (TreeShape) would notice.
std::vector<Oid>
subscription_targets()
{
	std::vector<Oid> out;
	pg_call([&] {
		Relation r = table_open(SubscriptionRelRelationId, AccessShareLock);
		SysScanDesc scan = systable_beginscan(r, InvalidOid, false, nullptr, 0, nullptr);
		HeapTuple tup;
		while ((tup = systable_getnext(scan)) != nullptr)
			out.push_back(((Form_pg_subscription_rel) GETSTRUCT(tup))->srrelid);
		systable_endscan(scan);
		table_close(r, AccessShareLock);
	});
	std::sort(out.begin(), out.end());
	return out;
}

bool
written_by_subscription(const std::vector<Oid> &targets, Oid relid)
{
	return std::binary_search(targets.begin(), targets.end(), relid);
}

// The part of a protected tree's version that only catalog changes move: its members (locked
// AccessShare when found), the hash of each member's version trigger identity and relfilenode, its
// ancestors (partitioned and inheritance parents, transitively) and their contents triggers, and
// whether every member and every ancestor has one. A write through an ancestor (an INSERT routed
// down, an UPDATE or DELETE of the parent) fires the ancestor's statement triggers only: every
// ancestor must carry a contents trigger, which records the write for every protected table below
// it (redteam2: before, a protected partition or child of an unprotected parent kept its version
// after such writes, and its unit profile was served stale). Kept per backend while the
// catalog epoch (metadata/catalog_epoch.h: the shared messages this backend processed and its own
// transaction's relcache invalidations) does not move: every change that moves it sends one (a trigger created, dropped,
// disabled, enabled or altered; TRUNCATE, VACUUM FULL or CLUSTER giving a new relfilenode; a
// partition created, attached or detached, INHERIT and NO INHERIT; a dropped table), and the
// statement's lock on the table has just processed the messages sent before it. What writes rows
// (dx.contents_changes) and what subscriptions write into are read on every call, never kept.
// Before, each call opened and locked every member, scanned pg_trigger for it and probed
// pg_subscription_rel for it: over 100 partitions a statement answered from the cache took
// 1.13-1.18 ms of backend CPU, 0.59 ms with this (the planner's own share: 0.41 ms).
struct TreeShape {
	uint64 counter = 0; // catalog_epoch() when it was read
	bool triggers = false;           // every member has its version trigger
	bool ancestors_triggers = false; // every ancestor has a contents trigger (relation_triggers)
	uint64 hash = 0;                 // the members' trigger identities and relfilenodes
	uint64 above = 0;                // the ancestors' trigger identities
	std::vector<Oid> members, ancestors;
};
std::unordered_map<Oid, TreeShape> shapes;
constexpr size_t kMaxShapes = 256;

// The dx tables whose rows are the policy, versioned together under relid 0
// (sql/57_analysis_memo.sql installs their trigger dx_contents_0).
const char *const kPolicyTables[] = {"protected_tables", "protected_columns", "protected_column_groups",
                                     "public_tables", "privacy_units", "analysts", "attribute_policies"};

// The members of relid's tree (locked AccessShare), or for InvalidOid the tables of the policy;
// false when one of those is absent.
bool
tree_members(Oid relid, List **members)
{
	if (OidIsValid(relid)) { // (the tables a unit profile build reads: a partition being detached too)
		pg_call([&] { *members = sealed_scan_members(relid, true); });
		return true;
	}
	Oid nsp = get_namespace_oid("dx", true);
	*members = NIL;
	for (const char *t : kPolicyTables) {
		Oid rel = get_relname_relid(t, nsp);
		if (!OidIsValid(rel))
			return false;
		*members = lappend_oid(*members, rel);
	}
	return true;
}

// The shape of relid's tree (TreeShape; InvalidOid: the policy's tables): from this backend's copy
// while no invalidation message arrived, else read (and kept when none arrived meanwhile). False
// when dx's objects are absent.
bool
tree_shape(Oid relid, const TreeShape **out)
{
	// (counter: catalog_epoch(), not SharedInvalidMessageCounter alone, which a change of the
	// current transaction does not move and a backend already holding its locks may not have
	// updated: review1, test/e2e/test_review1.py)
	const uint64 counter = pg_value([&] { return catalog_epoch(); });
	auto it = shapes.find(relid);
	if (it != shapes.end() && it->second.counter == counter) {
		*out = &it->second;
		return true;
	}
	Oid nsp = get_namespace_oid("dx", true);
	if (!OidIsValid(nsp))
		return false;
	List *fname = list_make2(makeString(pstrdup("dx")), makeString(pstrdup("_note_contents_change")));
	Oid function = LookupFuncName(fname, 0, nullptr, true);
	if (!OidIsValid(function))
		return false;
	TreeShape shape;
	ListCell *lc;
	if (OidIsValid(relid))
		shape.ancestors = inheritance_ancestors(relid);
	uint64 above = 0;
	bool ancestors_triggers = true;
	for (Oid a : shape.ancestors) {
		uint64 t = 0;
		Oid node = InvalidOid;
		bool present = false;
		pg_call([&] { present = relation_triggers(a, nullptr, function, &t, &node); });
		ancestors_triggers = ancestors_triggers && present && t != 0;
		above = hash_combine64(above, t);
	}
	shape.above = above;
	shape.ancestors_triggers = ancestors_triggers;
	List *members = NIL;
	if (!tree_members(relid, &members))
		return false;
	// every member (the statement already holds a lock on the ones it reads)
	const std::string name = "dx_contents_" + std::to_string(relid);
	uint64 h = 0;
	bool triggers = true;
	foreach (lc, members) {
		uint64 trigger = 0;
		Oid node = InvalidOid;
		bool present = false;
		pg_call([&] { // (name is alive: a PostgreSQL error must not longjmp over it)
			present = relation_triggers(lfirst_oid(lc), name.c_str(), function, &trigger, &node);
		});
		shape.members.push_back(lfirst_oid(lc));
		triggers = triggers && present && trigger != 0;
		h = hash_combine64(h, hash_combine64(trigger, hash_bytes_uint32_extended(lfirst_oid(lc), node)));
	}
	shape.triggers = triggers;
	shape.hash = h;
	shape.counter = counter;
	if (counter != pg_value([&] { return catalog_epoch(); })) { // a message arrived while reading: not kept
		static TreeShape transient;
		transient = std::move(shape);
		*out = &transient;
		return true;
	}
	if (shapes.size() >= kMaxShapes)
		shapes.clear();
	TreeShape &kept = shapes[relid];
	kept = std::move(shape);
	*out = &kept;
	return true;
}

// The version of the rows of shape's members as seen by snapshot, counted under relid in
// dx.contents_changes (see contents_version); false when a member lacks the trigger
// dx_contents_<relid> or dx.contents_changes is absent.
bool
members_version(Oid relid, const TreeShape &shape, Snapshot snapshot, uint64 *version)
{
	Oid nsp = get_namespace_oid("dx", true);
	if (!OidIsValid(nsp) || !shape.triggers)
		return false;
	Oid changes = get_relname_relid("contents_changes", nsp);
	Oid index = get_relname_relid("contents_changes_pkey", nsp);
	if (!OidIsValid(changes) || !OidIsValid(index))
		return false;
	const uint64 h = shape.hash;
	// committed writing transactions visible to the snapshot (sum of n: rows may later be merged)
	int64 writes = 0;
	bool own = false;  // the snapshot sees a row of the current transaction: it wrote to the tree
	uint64 own_xid = 0; // (its full xid)
	uint64 own_sub = 0; // (the current subtransaction's id)
	pg_call([&] {
		own_sub = static_cast<uint64>(GetCurrentSubTransactionId());
		const FullTransactionId top = GetTopFullTransactionIdIfAny();
		own_xid = U64FromFullTransactionId(top);
		Relation r = table_open(changes, AccessShareLock);
		ScanKeyData key;
		ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
		SysScanDesc scan = systable_beginscan(r, index, true, snapshot, 1, &key);
		HeapTuple tup;
		while ((tup = systable_getnext(scan)) != nullptr) {
			bool isnull = false;
			Datum n = heap_getattr(tup, 3, RelationGetDescr(r), &isnull);
			if (!isnull)
				writes += DatumGetInt64(n);
			Datum x = heap_getattr(tup, 2, RelationGetDescr(r), &isnull);
			if (!isnull && FullTransactionIdIsValid(top) && DatumGetUInt64(x) == own_xid)
				own = true;
		}
		systable_endscan(scan);
		table_close(r, AccessShareLock);
	});
	*version = hash_combine64(h, hash_bytes_uint32_extended(static_cast<uint32>(writes),
	                                                        static_cast<uint64>(writes) >> 32));
	// The current transaction is counted once however many statements of it write (its row is
	// inserted ON CONFLICT DO NOTHING), so INSERT; SELECT; INSERT; SELECT in one transaction would see
	// one version twice. When it wrote, the version also holds its xid, the snapshot's command id and
	// the current subtransaction's id: a write consumes a command id, so a later statement of the same
	// subtransaction has a larger one; a subtransaction's abort does not advance the command id but
	// leaves that subtransaction (ids are never reused within a transaction), so the statement after
	// ROLLBACK TO SAVEPOINT is another version too. Two statements with equal (command id,
	// subtransaction) see the same rows of their own transaction. Another transaction (whose own
	// writes might count the same) gets another xid. Conservative: any command that used a command id
	// gives a new version. (A parallel worker has its own subtransaction ids: its leader computes
	// the version; executor/unit_profile.cpp does not recompute it in workers.)
	if (own)
		*version = hash_combine64(*version, hash_combine64(own_xid, (static_cast<uint64>(snapshot->curcid) << 32) |
		                                                                own_sub));
	return true;
}

} // namespace

// See contents_version.h.
bool
contents_version(Oid relid, Snapshot snapshot, uint64 *version)
{
	if (!OidIsValid(get_namespace_oid("dx", true)))
		return false;
	const TreeShape *shape = nullptr;
	if (!tree_shape(relid, &shape))
		return false;
	if (!shape->ancestors_triggers)
		return false;
	// (a partition is also written by a subscription into one of its ancestors, which routes rows to it)
	const std::vector<Oid> targets = subscription_targets();
	if (!targets.empty()) {
		for (Oid a : shape->ancestors)
			if (written_by_subscription(targets, a))
				return false;
		for (Oid m : shape->members)
			if (written_by_subscription(targets, m))
				return false;
	}
	if (!members_version(relid, *shape, snapshot, version))
		return false;
	*version = hash_combine64(*version, shape->above);
	return true;
}

// See contents_version.h.
bool
policy_version(Snapshot snapshot, uint64 *version)
{
	if (!OidIsValid(get_namespace_oid("dx", true)))
		return false;
	const TreeShape *shape = nullptr;
	if (!tree_shape(InvalidOid, &shape))
		return false;
	return members_version(InvalidOid, *shape, snapshot, version); // noted under relid 0
}

} // namespace dxpriv::pg
