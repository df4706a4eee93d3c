// Functions and domain types an analysis removed from a statement: their change resets the plan cache.
#include "pg/planner/plan_dependencies.h"

#include "pg/guard.h"

extern "C" {
#include "nodes/nodeFuncs.h"
#include "nodes/pg_list.h"
#include "nodes/plannodes.h"
#include "optimizer/optimizer.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_proc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"
#include "utils/syscache.h"
}

#include <algorithm>
#include <iterator>

namespace dxpriv::pg {

namespace {

// The dependencies kept (sorted); past kMaxKept any invalidation of a function or type resets.
std::vector<PlanDependency> kept;
bool overflow = false;
bool dependency_callbacks_registered = false;
constexpr size_t kMaxKept = 4096;
// An analysis of this transaction evaluated a function whose value may change (now(), current_date,
// a STABLE function reading a table) on the declared points: its cached plans are analysed again
// in the next transaction (reset at this one's end).
bool mutable_analysed = false;
bool xact_callback_registered = false;

void
reset_after_mutable_analysis(XactEvent event, void *)
{
	if (!mutable_analysed)
		return;
	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT && event != XACT_EVENT_PREPARE &&
	    event != XACT_EVENT_PARALLEL_COMMIT && event != XACT_EVENT_PARALLEL_ABORT)
		return;
	mutable_analysed = false;
	ResetPlanCache();
}

// Counts the calls of functions that are not immutable, and the other values that may change
// (current_date and the like, nextval), in a tree. Before the analysis (only == nullptr) every
// function's volatility is read (the parser has just looked them up: warm caches) and dxpriv's own
// functions and aggregates are left out (the noisy ones are volatile; an analysis adds and removes
// them); after it, only calls of the functions found before are counted, by OID, without a
// catalog lookup (a new session's replayed tree names functions no cache holds yet).
struct MutableCount {
	Oid dx_schema;
	const std::vector<Oid> *only; // after the analysis: the mutable functions found before
	MutableCalls *out;
};

bool
count_mutable_callback(Oid func_id, void *context)
{
	auto *m = static_cast<MutableCount *>(context);
	if (m->only)
		return std::find(m->only->begin(), m->only->end(), func_id) != m->only->end();
	if (func_volatile(func_id) == PROVOLATILE_IMMUTABLE || get_func_namespace(func_id) == m->dx_schema)
		return false;
	if (std::find(m->out->funcs.begin(), m->out->funcs.end(), func_id) == m->out->funcs.end())
		m->out->funcs.push_back(func_id);
	return true;
}

bool
mutable_walker(Node *node, MutableCount *m)
{
	if (!node)
		return false;
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(mutable_walker), m, 0);
	if (IsA(node, SQLValueFunction) || IsA(node, NextValueExpr) ||
	    check_functions_in_node(node, count_mutable_callback, m))
		++m->out->count;
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(mutable_walker), m);
}

// A function or type changed (hash 0: all of them): the cached plans that depend on what an analysis
// removed are analysed again. ResetPlanCache marks every plan of this backend (PostgreSQL's own
// syscache callback does the same for namespaces and operators); they register their dependencies
// again when analysed, so the list starts afresh. Any function's change counts, not only a kept
// one's: a function the analysis evaluated may call others (a PL/pgSQL body, a domain's CHECK
// calling a function), which no dependency list names (review3: the nested function's old answer
// was replayed); a type's change counts when it is a kept domain.
void
on_invalidation(Datum, int cache_id, uint32 hash)
{
	if (kept.empty() && !overflow) // (nothing analysed in this backend since the last reset)
		return;
	const bool hit = overflow || hash == 0 || cache_id == PROCOID ||
	                 std::binary_search(kept.begin(), kept.end(), PlanDependency{cache_id, hash});
	if (!hit)
		return;
	kept.clear();
	overflow = false;
	ResetPlanCache();
}

// Adds the domain types a query coerces to: PostgreSQL's dependencies leave them out (its executor
// reads a domain's constraints when it runs), but an analysis checks them on the declared points.
bool
domain_walker(Node *node, List **types)
{
	if (!node)
		return false;
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(domain_walker), types, 0);
	if (IsA(node, CoerceToDomain))
		*types = lappend_oid(*types, castNode(CoerceToDomain, node)->resulttype);
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(domain_walker), types);
}

// False for a statement no analysis rewrites: no aggregate at its top level, no sublink, CTE or
// subquery in FROM, not a utility statement (which may hold a query). Most statements of a server
// (primary-key lookups, DML) stop here, without a walk of their tree.
bool
may_be_rewritten(const Query *q)
{
	if (q->commandType == CMD_UTILITY || q->hasAggs || q->hasSubLinks || q->cteList || q->setOperations)
		return true;
	ListCell *lc;
	foreach (lc, q->rtable)
		if (lfirst_node(RangeTblEntry, lc)->rtekind == RTE_SUBQUERY)
			return true;
	return false;
}

} // namespace

// See plan_dependencies.h.
MutableCalls
mutable_evaluations(Query *q)
{
	MutableCalls calls;
	if (!may_be_rewritten(q))
		return calls;
	MutableCount m{InvalidOid, nullptr, &calls};
	pg_call([&] {
		m.dx_schema = get_namespace_oid("dx", true);
		mutable_walker(reinterpret_cast<Node *>(q), &m);
	});
	return calls;
}

// See plan_dependencies.h.
void
reanalyse_when_mutable_lost(const MutableCalls &before, Query *q)
{
	if (before.count == 0)
		return;
	MutableCalls after;
	MutableCount m{InvalidOid, &before.funcs, &after};
	pg_call([&] { mutable_walker(reinterpret_cast<Node *>(q), &m); });
	if (after.count >= before.count)
		return;
	if (!xact_callback_registered) {
		pg_call([&] { RegisterXactCallback(reset_after_mutable_analysis, nullptr); });
		xact_callback_registered = true;
	}
	mutable_analysed = true;
}

// See plan_dependencies.h.
std::vector<PlanDependency>
plan_dependencies(Query *q)
{
	if (!may_be_rewritten(q))
		return {};
	List *relations = NIL, *items = NIL, *domains = NIL;
	bool rls = false;
	pg_call([&] {
		extract_query_dependencies(reinterpret_cast<Node *>(q), &relations, &items, &rls);
		domain_walker(reinterpret_cast<Node *>(q), &domains);
	});
	std::vector<PlanDependency> out;
	ListCell *lc;
	foreach (lc, items) {
		const PlanInvalItem *item = lfirst_node(PlanInvalItem, lc);
		out.emplace_back(item->cacheId, item->hashValue);
	}
	foreach (lc, domains) {
		const uint32 hash = pg_value([&] { return GetSysCacheHashValue1(TYPEOID, ObjectIdGetDatum(lfirst_oid(lc))); });
		out.emplace_back(TYPEOID, hash);
	}
	std::sort(out.begin(), out.end());
	out.erase(std::unique(out.begin(), out.end()), out.end());
	return out;
}

// See plan_dependencies.h.
void
keep_lost_dependencies(const std::vector<PlanDependency> &before, Query *q)
{
	if (before.empty())
		return;
	const std::vector<PlanDependency> after = plan_dependencies(q);
	std::vector<PlanDependency> lost;
	std::set_difference(before.begin(), before.end(), after.begin(), after.end(), std::back_inserter(lost));
	if (lost.empty())
		return;
	if (!dependency_callbacks_registered) {
		pg_call([&] {
			CacheRegisterSyscacheCallback(PROCOID, on_invalidation, (Datum) 0);
			CacheRegisterSyscacheCallback(TYPEOID, on_invalidation, (Datum) 0);
		});
		dependency_callbacks_registered = true;
	}
	std::vector<PlanDependency> merged;
	std::set_union(kept.begin(), kept.end(), lost.begin(), lost.end(), std::back_inserter(merged));
	if (merged.size() > kMaxKept) {
		overflow = true;
		kept.clear();
		return;
	}
	kept = std::move(merged);
}

} // namespace dxpriv::pg
