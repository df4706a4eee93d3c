// Analysis memo (analysis_memo.h): per-backend map from what an analysis depends on to its result.
#include "pg/planner/analysis_memo.h"

#include "pg/analyst/analyst_context.h"
#include "pg/contract/noise_params.h"
#include "pg/contract/param_consts.h"
#include "pg/executor/release_log.h"
#include "pg/metadata/catalog_generation.h"
#include "pg/metadata/catalog_epoch.h"
#include "pg/ledger/answer_cache.h"
#include "core/siphash.h"
#include "pg/metadata/citus_tables.h"
#include "pg/metadata/extension_objects.h"
#include "pg/guard.h"
#include "pg/ledger/contents_version.h"
#include "pg/planner/explain.h"
#include "pg/planner/shared_const_copy.h"
#include "pg/planner/shared_memo.h"

extern "C" {
#include "fmgr.h"
}

extern "C" {
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "storage/sinval.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
}

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace dxpriv::pg {

namespace {

constexpr size_t kMaxEntries = 64;
constexpr Size kMaxBytes = 256 * 1024 * 1024; // memoized trees of this backend (large per-point tables)

// One registration of release descriptions made by the analysis (release_log_describe).
using Described = MemoDescribed;

struct MemoEntry {
	MemoryContext cxt = nullptr; // holds tree
	Query *tree = nullptr;       // the rewritten query, as the analysis left it
	bool analyst = false;        // analyst_mode() after the analysis
	std::vector<Described> described;
	Size bytes = 0;
	struct Pins *pins = nullptr; // the replays' trees sharing cxt's per-point tables (TopMemoryContext)
};

// How many replayed trees still point into a memo entry's memory (analysis_memo_replay shares its
// per-point tables): a dropped entry's memory is freed only when the last of them is gone, i.e.
// when the memory context each was copied into is reset or deleted (a statement's message
// context at its end, also after an error or a cancel; an unnamed prepared statement's when it is
// replaced, which may be many transactions later; a tree kept longer is copied by whoever keeps
// it, which reads the tables while they are alive).
// An entry taken from the shared memo (shared.slot >= 0) has its per-point tables in the shared
// entry, read in place: the shared entry is pinned (shared_memo_pin) exactly while count > 0
// (shared_held), so that it is neither dropped nor overwritten while a tree reads it; between
// statements it is not pinned (the ring stays free to wrap) and the next replay pins it again, or,
// when it went meanwhile, drops this entry and looks the shared memo up again.
struct Pins {
	MemoryContext cxt;
	int count;
	bool dropped;
	SharedMemoRef shared;
	bool shared_held;
};

// Releases the shared pin of p when no tree reads its tables; frees a dropped entry's memory then.
void
settle_memo_pins(Pins *p)
{
	if (p->count > 0)
		return;
	if (p->shared_held) {
		shared_memo_unpin(p->shared);
		p->shared_held = false;
	}
	if (p->dropped) {
		MemoryContextDelete(p->cxt);
		pfree(p);
	}
}

void
unpin(void *arg)
{
	auto *p = static_cast<Pins *>(arg);
	--p->count;
	settle_memo_pins(p);
}

std::unordered_map<uint64, MemoEntry> entries;
std::deque<uint64> order; // oldest first
Size total_bytes = 0;
SystemRandom id_source;
int64 hits = 0; // statements answered from the memo, either level (dx._analysis_memo_hits)

void
drop(uint64 key)
{
	auto it = entries.find(key);
	if (it == entries.end())
		return;
	total_bytes -= it->second.bytes;
	Pins *p = it->second.pins;
	p->dropped = true; // (replayed trees still reading its tables: freed by the last unpin)
	settle_memo_pins(p);
	entries.erase(it);
}

// What the parsed query holds that rules the memo out.
struct ParsedScan {
	const ExtensionObjects *ext;
	bool params = false, internal = false;
};

bool
parsed_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *s = static_cast<ParsedScan *>(ctx);
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(parsed_walker), ctx, 0);
	if (IsA(node, Param))
		s->params = true;
	if (IsA(node, Aggref) && s->ext->is_internal(castNode(Aggref, node)->aggfnoid))
		s->internal = true;
	if (IsA(node, FuncExpr) && (s->ext->is_release(castNode(FuncExpr, node)->funcid) ||
	                            castNode(FuncExpr, node)->funcid == s->ext->store_point_table))
		s->internal = true;
	if (s->params || s->internal)
		return true;
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(parsed_walker), ctx);
}

// nodeToString without ":location N" (spacing inside the statement does not matter). The
// statement's place and length in the text stay: the answer cache keys on them too.
std::string
normalised_text(Query *q)
{
	char *text = nullptr;
	pg_call([&] { text = nodeToString(q); });
	std::string normal;
	normal.reserve(strlen(text));
	// each ":location " and the digits after it (a sign included) left out; everything else copied
	// in runs (a strncmp per character was about a tenth of a replayed statement's key)
	const char *j = text;
	while (const char *at = strstr(j, ":location ")) {
		normal.append(j, static_cast<size_t>(at - j));
		j = at + 10;
		while (*j == '-' || isdigit(static_cast<unsigned char>(*j)))
			++j;
	}
	normal.append(j);
	pfree(text);
	return normal;
}

// The dxpriv.* settings (analysis_memo_note_settings), sorted by address; empty until noted.
std::vector<const config_generic *> own_settings;

// Whether g is a dxpriv.* setting. From the noted list when there is one: the name of every
// built-in setting at its default is not read then (PostgreSQL's built-in names lie in pages of its
// binary that a new backend has not touched yet; reading them all was about 3% of a new session's
// first statement, newsess).
bool
own_setting(const config_generic *g)
{
	if (own_settings.empty())
		return strncmp(g->name, "dxpriv.", 7) == 0;
	return std::binary_search(own_settings.begin(), own_settings.end(), g);
}

// Hash of every setting not at its default and of every dxpriv setting, by its exact value (the
// bits of a real, not its display, which rounds to 6 digits): anything a setting can change in an
// analysis (epsilon, allocation, noise, DateStyle of a cast, ...) changes the key.
uint64
settings_hash()
{
	uint64 h = 0x5e77;
	struct config_generic **vars = get_guc_variables();
	const int n = GetNumConfigOptions();
	for (int i = 0; i < n; ++i) {
		const config_generic *g = vars[i];
		if (g->source == PGC_S_DEFAULT && !own_setting(g))
			continue;
		h = hash_combine64(h, hash_bytes_extended(reinterpret_cast<const unsigned char *>(g->name),
		                                          static_cast<int>(strlen(g->name)), 1));
		uint64 bits = 0;
		switch (g->vartype) {
		case PGC_BOOL:
			bits = *reinterpret_cast<const config_bool *>(g)->variable ? 1 : 2;
			break;
		case PGC_INT:
			bits = static_cast<uint64>(static_cast<int64>(*reinterpret_cast<const config_int *>(g)->variable));
			break;
		case PGC_REAL: {
			const double v = *reinterpret_cast<const config_real *>(g)->variable;
			memcpy(&bits, &v, sizeof bits);
			break;
		}
		case PGC_ENUM:
			bits = static_cast<uint64>(static_cast<int64>(*reinterpret_cast<const config_enum *>(g)->variable));
			break;
		case PGC_STRING: {
			const char *v = *reinterpret_cast<const config_string *>(g)->variable;
			bits = v ? hash_bytes_extended(reinterpret_cast<const unsigned char *>(v), static_cast<int>(strlen(v)), 2)
			         : 3;
			break;
		}
		}
		h = hash_combine64(h, bits);
	}
	return h;
}

// In a database where Citus is installed no table carries the contents trigger (dx._contents_triggers:
// it would block create_distributed_table), so contents_version knows no table there. The memo
// does not need the rows: an analysis reads none (it depends on the query, the role, the policy,
// the settings and the catalog, all in the key); it depends on how Citus holds the table (a grouped
// release is rewritten differently for a Citus table, release_rewrite.cpp), which stands in for
// the rows' version here. The answer cache, which needs the rows' version, stays off for such
// tables (ledger/charge.cpp). False where Citus is not installed (the trigger is then required)
// and for an unprotected table.
bool
memo_citus_holding(const ExtensionObjects &ext, Oid relid, uint64 *version)
{
	if (!citus_installed() || !load_analyst_context(ext).is_protected(relid))
		return false; // (an unprotected table is not memoized, as where the trigger decides)
	const CitusTable t = citus_table(ext, relid);
	*version = hash_combine64(0xc175, (t.citus ? 1u : 0u) | (t.on_coordinator ? 2u : 0u) |
	                                       (static_cast<uint64>(static_cast<unsigned char>(t.method)) << 8));
	*version = hash_combine64(*version, static_cast<uint64>(t.shards));
	return true;
}

// What a stored tree holds: internal aggregates' parameters only (no distributed release, no
// per-point table travelling by digest, no native partial), and how many.
struct StoredScan {
	const ExtensionObjects *ext;
	int internal = 0;
	bool other = false;
	std::set<int64> ids;
};

bool
stored_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *s = static_cast<StoredScan *>(ctx);
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(stored_walker), ctx, 0);
	const ExtensionObjects &e = *s->ext;
	if (IsA(node, Aggref)) {
		Aggref *a = castNode(Aggref, node);
		// (a release grouped by an open key is not memoized: its charge ids must stay registered as
		// uncacheable, planner/open_keys.h)
		if (a->aggfnoid == e.partial || a->aggfnoid == e.collect || a->aggfnoid == e.em_collect ||
		    a->aggfnoid == e.partition_select)
			s->other = true;
		else if (e.is_internal(a->aggfnoid)) {
			Const *k = aggref_params_const(a);
			if (!k)
				s->other = true;
			else {
				s->internal++;
				s->ids.insert(parse_noise_params(DatumGetArrayTypeP(k->constvalue)).charge_id);
			}
		}
	}
	if (IsA(node, FuncExpr)) {
		const Oid f = castNode(FuncExpr, node)->funcid;
		if (e.is_release(f) || f == e.store_point_table || f == e.state_of || f == e.weigh_cached ||
		    f == e.weigh_int_cached || f == e.weigh_units_cached)
			s->other = true;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(stored_walker), ctx);
}

// Gives a replayed tree fresh charge, epsilon and allocation ids (one new id per old id).
struct Restamp {
	const ExtensionObjects *ext;
	std::map<int64, int64> fresh;
	int64 renew(int64 old)
	{
		if (old == 0)
			return 0;
		int64 &id = fresh[old];
		if (id == 0)
			id = static_cast<int64>(id_source.next_u64() >> 12) + 1; // < 2^53: exact in float8
		return id;
	}
};

bool
restamp_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *r = static_cast<Restamp *>(ctx);
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(restamp_walker), ctx, 0);
	if (IsA(node, Aggref) && r->ext->is_internal(castNode(Aggref, node)->aggfnoid)) {
		if (Const *k = aggref_params_const(castNode(Aggref, node))) {
			NoiseParams p = parse_noise_params(DatumGetArrayTypeP(k->constvalue));
			p.charge_id = r->renew(p.charge_id);
			p.epsilon_id = r->renew(p.epsilon_id);
			p.alloc_id = r->renew(p.alloc_id);
			k->constvalue = PointerGetDatum(build_noise_params(p));
		}
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(restamp_walker), ctx);
}

// A function of a temporary schema (of this session or another): such objects go when their
// session ends, without a DDL statement, so the catalog generation does not see them go.
bool
temp_function(Oid f, void *)
{
	return isAnyTempNamespace(get_func_namespace(f));
}

bool
temp_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(temp_walker), ctx, 0);
	if (check_functions_in_node(node, temp_function, ctx))
		return true;
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(temp_walker), ctx);
}

// True when this backend may look up or store q's analysis in the shared memo: not a standby, no
// DDL of its transaction, nothing written by it, no temporary objects in this session or in the
// query.
bool
shareable(Query *q, Oid relid)
{
	// (a hot standby replays the primary's DDL from WAL, past any ProcessUtility hook: the
	// generation would not move there)
	if (!shared_memo_enabled() || !catalog_generation_available() || catalog_generation_holding() ||
	    GetTopTransactionIdIfAny() != InvalidTransactionId || RecoveryInProgress())
		return false;
	Oid temp = InvalidOid, temp_toast = InvalidOid;
	GetTempNamespaceState(&temp, &temp_toast);
	if (OidIsValid(temp)) // (pg_temp on the path could resolve a name to this session's objects)
		return false;
	bool temp_objects = true;
	pg_call([&] {
		temp_objects = isAnyTempNamespace(get_rel_namespace(relid)) ||
		               query_tree_walker(q, reinterpret_cast<bool (*)()>(temp_walker), nullptr, 0);
	});
	return !temp_objects;
}

// Keeps an analysis in this backend's memo under key (the oldest dropped when full).
void
insert(uint64 key, MemoEntry &&e)
{
	drop(key);
	for (auto o = order.begin(); o != order.end(); ++o)
		if (*o == key) {
			order.erase(o);
			break;
		}
	while (!order.empty() && (entries.size() >= kMaxEntries || total_bytes + e.bytes > kMaxBytes)) {
		drop(order.front());
		order.pop_front();
	}
	total_bytes += e.bytes;
	entries.emplace(key, std::move(e));
	order.push_back(key);
}

// Completes key.shared (the normalised text so far) into the shared key, or empties it: a catalog
// generation with no DDL in flight before and after this backend accepted the invalidation
// messages (metadata/catalog_generation.h), and q shareable at all.
void
shared_key(MemoKey &key, Query *q)
{
	if (key.shared_hash != 0 || key.shared.empty())
		return; // (done, or not shared)
	bool shared = shareable(q, key.relid);
	if (shared) {
		key.generation = catalog_generation_read();
		pg_call([&] { AcceptInvalidationMessages(); });
		shared = catalog_generation_quiet(key.generation) && catalog_generation_read() == key.generation;
	}
	if (!shared) {
		key.shared.clear();
		return;
	}
	const uint64 parts[] = {key.parts[0], key.parts[1], key.parts[2], key.generation, key.parts[3], key.parts[4]};
	key.shared.append(reinterpret_cast<const char *>(parts), sizeof parts);
	key.shared_hash = hash_bytes_extended(reinterpret_cast<const unsigned char *>(key.shared.data()),
	                                      static_cast<int>(key.shared.size()), 0x5348);
	key.shared_hash += key.shared_hash == 0;
}

// Takes the analysis of key from the shared memo into this backend's memo; false when it has none.
bool
fetch_shared(MemoKey &key, Query *q)
{
	shared_key(key, q);
	if (key.shared.empty())
		return false;
	MemoEntry e;
	Query *tree = nullptr;
	SharedMemoRef ref;
	if (!shared_memo_lookup(key.shared, key.shared_hash, &e.cxt, &tree, &e.analyst, e.described, &ref))
		return false;
	// (pinned by the lookup: held by the entry's Pins from here, released when no replayed tree
	// reads the tables, settle)
	tree->queryId = q->queryId; // (not in nodeToString's text; nor are locations read back)
	tree->stmt_location = q->stmt_location;
	tree->stmt_len = q->stmt_len;
	e.tree = tree;
	try {
		pg_call([&] {
			e.bytes = MemoryContextMemAllocated(e.cxt, true);
			e.pins = static_cast<Pins *>(MemoryContextAllocZero(TopMemoryContext, sizeof(Pins)));
			e.pins->cxt = e.cxt;
			e.pins->shared = ref;
			e.pins->shared_held = true;
		});
	} catch (...) {
		shared_memo_unpin(ref);
		throw;
	}
	insert(key.local, std::move(e));
	shared_memo_count_hit();
	return true;
}

} // namespace

// See analysis_memo.h.
void
analysis_memo_note_settings()
{
	struct config_generic **vars = get_guc_variables();
	const int n = GetNumConfigOptions();
	std::vector<const config_generic *> own;
	for (int i = 0; i < n; ++i)
		if (strncmp(vars[i]->name, "dxpriv.", 7) == 0)
			own.push_back(vars[i]);
	std::sort(own.begin(), own.end());
	own_settings = std::move(own);
}

// See analysis_memo.h.
MemoKey
analysis_memo_key(Query *q)
{
	const ExtensionObjects *ext = extension_objects();
	const bool snapshot = ActiveSnapshotSet();
	MemoKey key;
	if (!ext || explain_capture_active() || !snapshot)
		return key;
	// grouping sets: their analysis registers the consistent-totals state of the release
	// (consistent_register, executor/consistent_release.h), which a memo hit would not register again
	if (q->commandType != CMD_SELECT || q->utilityStmt || !q->hasAggs || q->hasSubLinks || q->cteList ||
	    q->setOperations || q->groupingSets || list_length(q->rtable) != 1)
		return key;
	RangeTblEntry *rte = linitial_node(RangeTblEntry, q->rtable);
	if (rte->rtekind != RTE_RELATION)
		return key;
	ParsedScan scan{ext};
	query_tree_walker(q, reinterpret_cast<bool (*)()>(parsed_walker), &scan, 0);
	if (scan.params || scan.internal)
		return key;
	bool mutable_fns = true;
	pg_call([&] { mutable_fns = contain_mutable_functions((Node *) q); });
	if (mutable_fns) // now(), current_date: fixed per statement, so another statement is another analysis
		return key;
	// the policy and the table's rows as this statement sees them
	uint64 policy = 0, contents = 0;
	bool known = false;
	pg_call([&] {
		Snapshot snap = GetActiveSnapshot();
		// (the table first: an unprotected table has no version trigger and stops here)
		known = contents_version(rte->relid, snap, &contents) && policy_version(snap, &policy);
	});
	if (!known) {
		// where Citus is installed: how Citus holds the table instead of its rows' version
		if (!memo_citus_holding(*ext, rte->relid, &contents))
			return key;
		pg_call([&] { known = policy_version(GetActiveSnapshot(), &policy); });
		if (!known)
			return key;
	}
	key.shared = normalised_text(q); // (the shared key's text: completed on a miss, shared_key)
	const uint64 settings = settings_hash();
	const uint64 roles = (static_cast<uint64>(GetUserId()) << 32) | GetSessionUserId();
	// any catalog change seen by this backend, its own transaction's relcache changes included (review1:
	// SharedInvalidMessageCounter alone never moves for those)
	uint64 epoch = 0;
	pg_call([&] { epoch = catalog_epoch(); });
	// SipHash-2-4 under the server's secret (answer_cache_secret) of the text and every part: two
	// statements whose keys collide cannot be built offline (review2: a public-seed 64-bit hash could
	// be made to collide in about 2^32 work, and the per-backend memo compares only this number)
	const uint64 parts[] = {policy, contents, settings, epoch, roles, static_cast<uint64>(MyDatabaseId)};
	std::string material = key.shared;
	material.append(reinterpret_cast<const char *>(parts), sizeof parts);
	const uint64 h = siphash24(answer_cache_secret(), material.data(), material.size());
	key.local = h == 0 ? 1 : h;
	key.parts[0] = policy;
	key.parts[1] = contents;
	key.parts[2] = settings;
	key.parts[3] = roles;
	key.parts[4] = MyDatabaseId;
	key.relid = rte->relid;
	return key;
}

// See analysis_memo.h.
bool
analysis_memo_replay(MemoKey &key, Query *q)
{
	if (key.local == 0)
		return false;
	auto it = entries.find(key.local);
	if (it == entries.end()) {
		if (key.shared.empty() || !fetch_shared(key, q))
			return false;
		it = entries.find(key.local);
	}
	Pins *p = it->second.pins;
	if (p->shared.slot >= 0 && !p->shared_held) {
		// its tables are in the shared entry, unpinned since its last statement: pinned again if it
		// is still there, else this entry goes and the shared memo is looked up again
		if (shared_memo_pin(p->shared))
			p->shared_held = true;
		else {
			for (auto o = order.begin(); o != order.end(); ++o)
				if (*o == key.local) {
					order.erase(o);
					break;
				}
			drop(key.local);
			if (key.shared.empty() || !fetch_shared(key, q))
				return false;
			it = entries.find(key.local);
		}
	}
	MemoEntry &e = it->second;
	Query *copy = nullptr;
	// the per-point tables are not copied (a copy of 10^5-point tables was a fifth of a replay's
	// time): the copy points at the memo's (or the pinned shared entry's), pinned until the memory
	// the copy is made in goes (Pins; registered before the copy, so that an error in it unpins too)
	pg_call([&] {
		auto *cb = static_cast<MemoryContextCallback *>(palloc(sizeof(MemoryContextCallback)));
		cb->func = unpin;
		cb->arg = e.pins;
		e.pins->count++;
		MemoryContextRegisterResetCallback(CurrentMemoryContext, cb);
		copy = reinterpret_cast<Query *>(copy_sharing_large_consts(reinterpret_cast<Node *>(e.tree)));
	});
	Restamp r{extension_objects()};
	query_tree_walker(copy, reinterpret_cast<bool (*)()>(restamp_walker), &r, 0);
	*q = *copy;
	// the session marked as an analyst's (LOG/DEBUG kept from its client, auto_explain refused) as a
	// fresh analysis marks it (review2: a new session's first statement answered from the shared memo
	// sent debug_print_parse/rewritten to an analyst's client)
	(void) load_analyst_context(*r.ext);
	set_analyst_mode(e.analyst);
	++hits;
	for (const Described &d : e.described) {
		std::vector<int64> ids;
		for (int64 id : d.ids)
			ids.push_back(r.renew(id));
		release_log_describe(ids, d.descriptions, d.labels);
	}
	return true;
}

// See analysis_memo.h.
void
analysis_memo_store(MemoKey &key, Query *q)
{
	const ExtensionObjects *ext = extension_objects();
	if (key.local == 0 || !ext || explain_capture_active())
		return;
	StoredScan scan{ext};
	query_tree_walker(q, reinterpret_cast<bool (*)()>(stored_walker), &scan, 0);
	if (scan.other || scan.internal == 0)
		return;
	MemoEntry e;
	e.analyst = analyst_mode();
	std::set<int64> seen;
	for (int64 id : scan.ids) {
		if (seen.count(id))
			continue;
		Described d;
		if (!release_log_described(id, d.ids, d.descriptions, d.labels))
			continue;
		seen.insert(d.ids.begin(), d.ids.end());
		e.described.push_back(std::move(d));
	}
	// shared when no DDL began since the key was computed (nor did this transaction write)
	if (key.shared_hash != 0 && catalog_generation_read() == key.generation && !catalog_generation_holding() &&
	    pg_value([] { return GetTopTransactionIdIfAny(); }) == InvalidTransactionId)
		shared_memo_store(key.shared, key.shared_hash, q, e.analyst, e.described);
	pg_call([&] {
		e.cxt = AllocSetContextCreate(TopMemoryContext, "dxpriv analysis memo", ALLOCSET_DEFAULT_SIZES);
		MemoryContext old = MemoryContextSwitchTo(e.cxt);
		e.tree = static_cast<Query *>(copyObjectImpl(q));
		// (one copy of each table: the one-pass aggregates' shared arguments are planned by pointer)
		share_equal_large_consts(reinterpret_cast<Node *>(e.tree), true);
		MemoryContextSwitchTo(old);
		e.bytes = MemoryContextMemAllocated(e.cxt, true);
		e.pins = static_cast<Pins *>(MemoryContextAllocZero(TopMemoryContext, sizeof(Pins)));
		e.pins->cxt = e.cxt;
		e.pins->shared = SharedMemoRef(); // (its own tables: no shared entry)
	});
	if (e.bytes > kMaxBytes / 4) { // one huge tree: not worth holding
		pfree(e.pins);
		MemoryContextDelete(e.cxt);
		return;
	}
	insert(key.local, std::move(e));
}

} // namespace dxpriv::pg

// dx._analysis_memo_hits(): statements of this backend answered from the memo (superuser only).
DX_FUNCTION(dx_analysis_memo_hits)
{
	(void) fcinfo;
	PG_RETURN_INT64(dxpriv::pg::hits);
}
