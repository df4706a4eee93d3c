// Partitions and inheritance children of protected tables: protected with their ancestor's policy.
//
// Why: rows of a child are rows of its parent. Before this rule, a partition of a protected table
// was an ordinary table: after a grant, SELECT * FROM the partition returned raw rows and count(*)
// on it was exact. A table found unprotected is looked up in pg_inherits again on every use (never
// cached), so a partition attached, or a child created, after dx.protect_table is covered at once;
// a protected ancestor found is kept until the next invalidation message (FoundAncestors).
#include "pg/analyst/inheritance.h"

#include "pg/analyst/analyst_context.h"
#include "pg/metadata/catalog_epoch.h"
#include "pg/analyst/refusals.h"
#include "pg/metadata/inheritance_parents.h"

#include "pg/guard.h"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_inherits.h"
#include "nodes/nodeFuncs.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
}

#include <algorithm>
#include <deque>
#include <set>
#include <unordered_map>
#include <vector>

namespace dxpriv::pg {

namespace {

// Every descendant of relid (not relid itself), or nothing when it has no children.
std::vector<Oid>
inheritance_descendants(Oid relid)
{
	List *all = NIL;
	pg_call([&] {
		if (has_subclass(relid))
			all = find_all_inheritors(relid, NoLock, nullptr);
	});
	std::vector<Oid> out;
	ListCell *lc;
	foreach (lc, all)
		if (lfirst_oid(lc) != relid)
			out.push_back(lfirst_oid(lc));
	return out;
}

std::string
plain_rel_name(Oid relid)
{
	const char *n = get_rel_name(relid);
	return n ? n : "?";
}

// Walker behind check_inheritance_refs.
bool
inheritance_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *ac = static_cast<const AnalystContext *>(ctx);
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(inheritance_walker), ctx,
		                         QTW_EXAMINE_RTES_BEFORE);
	if (IsA(node, RangeTblEntry)) {
		RangeTblEntry *rte = castNode(RangeTblEntry, node);
		if (rte->rtekind != RTE_RELATION)
			return false;
		const Oid owner = ac->policy_table(rte->relid);
		if (OidIsValid(owner) && owner != rte->relid) {
			const std::string child = plain_rel_name(rte->relid), parent = plain_rel_name(owner);
			const bool partition = get_rel_relispartition(rte->relid);
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
			     (partition ? "partition \"" + child + "\" of protected table \"" + parent + "\""
			                : "table \"" + child + "\", a child of protected table \"" + parent + "\",") +
			         " cannot be queried directly by analysts",
			     "Its rows are protected by the policy of \"" + parent + "\": query \"" + parent + "\"" +
			         (partition ? " with a WHERE on the partition key" : "") + " instead. " + analyst_hint(owner));
		}
		if (rte->inh)
			for (Oid d : inheritance_descendants(rte->relid))
				if (ac->directly_protected(d) && d != owner) {
					const std::string parent = plain_rel_name(rte->relid), child = plain_rel_name(d);
					fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
					     "table \"" + parent + "\" includes the rows of protected table \"" + child +
					         "\", which has a policy of its own",
					     "Query \"" + child + "\" with aggregates, or only the rows stored in \"" + parent +
					         "\" itself with FROM ONLY " + parent + ".");
				}
		return false;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(inheritance_walker), ctx);
}

} // namespace

// See analyst_guard.h.
bool
AnalystContext::directly_protected(Oid relid) const
{
	return std::find(protected_rels.begin(), protected_rels.end(), relid) != protected_rels.end();
}

namespace {

// The protected ancestors found by policy_table in this backend (relid -> ancestor), kept while the
// catalog epoch is the same (metadata/catalog_epoch.h: a change of the current transaction too) and dx's
// list of protected tables is the same: attaching, detaching, INHERIT and NO INHERIT send relcache
// invalidations. Only found ancestors are kept: "not protected" is looked up again on every use, so
// a partition attached or a child created since is covered at once even by a backend that has not
// processed the message yet (it reads pg_inherits under the statement's catalog snapshot). Before,
// every statement looked each partition up again: one pg_inherits scan per partition and statement
// (18% of a cached statement over 100 partitions).
struct FoundAncestors {
	uint64 counter = 0;
	std::vector<Oid> protected_rels;
	std::unordered_map<Oid, Oid> found;
};
FoundAncestors found_ancestors;

} // namespace

// See analyst_guard.h. Breadth-first over pg_inherits, so the nearest protected ancestor wins.
Oid
AnalystContext::policy_table(Oid relid) const
{
	if (!OidIsValid(relid))
		return InvalidOid;
	if (directly_protected(relid))
		return relid;
	if (protected_rels.empty())
		return InvalidOid;
	const uint64 counter = pg_value([&] { return catalog_epoch(); });
	if (found_ancestors.counter != counter || found_ancestors.protected_rels != protected_rels) {
		found_ancestors.found.clear();
		found_ancestors.counter = counter;
		found_ancestors.protected_rels = protected_rels;
	}
	auto memo = found_ancestors.found.find(relid);
	if (memo != found_ancestors.found.end())
		return memo->second;
	Oid found = InvalidOid;
	std::deque<Oid> todo{relid};
	std::set<Oid> seen{relid};
	while (!todo.empty() && !OidIsValid(found)) {
		const Oid r = todo.front();
		todo.pop_front();
		for (Oid p : inheritance_parents(r)) {
			if (directly_protected(p)) {
				found = p;
				break;
			}
			if (seen.insert(p).second)
				todo.push_back(p);
		}
	}
	// (kept only when no message arrived during the lookup: the next call then starts afresh)
	if (OidIsValid(found) && counter == pg_value([&] { return catalog_epoch(); }) &&
	    found_ancestors.found.size() < 4096)
		found_ancestors.found[relid] = found;
	return found;
}

// See analyst_guard.h.
bool
AnalystContext::has_protected_descendant(Oid relid) const
{
	if (protected_rels.empty())
		return false;
	for (Oid d : inheritance_descendants(relid))
		if (directly_protected(d))
			return true;
	return false;
}

// See analyst_guard.h.
void
check_inheritance_refs(Query *q, const AnalystContext &ac)
{
	query_tree_walker(q, reinterpret_cast<bool (*)()>(inheritance_walker), const_cast<AnalystContext *>(&ac),
	                  QTW_EXAMINE_RTES_BEFORE);
}

} // namespace dxpriv::pg
