// Replay without reading (replay_scan.h): the released tables' scans of a replayed plan return nothing.
#include "pg/ledger/replay_scan.h"

#include "pg/guard.h"

extern "C" {
#include "catalog/pg_inherits.h"
#include "executor/executor.h"
#include "nodes/nodeFuncs.h"
#include "utils/rel.h"
}

#include <set>

namespace dxpriv::pg {

namespace {

// ExecProcNode of an emptied scan: end of rows at once.
TupleTableSlot *
no_rows(PlanState *)
{
	return nullptr;
}

bool
is_table_scan(const PlanState *ps)
{
	switch (nodeTag(ps)) {
	case T_SeqScanState:
	case T_SampleScanState:
	case T_IndexScanState:
	case T_IndexOnlyScanState:
	case T_BitmapHeapScanState:
	case T_TidScanState:
	case T_TidRangeScanState:
		return true;
	default:
		return false;
	}
}

// True when every leaf under ps scans a noted table: such a subtree returns no row once emptied.
bool
other_leaf_walker(PlanState *ps, void *ctx)
{
	if (!ps)
		return false;
	const auto *relids = static_cast<const std::set<Oid> *>(ctx);
	if (is_table_scan(ps)) {
		Relation rel = reinterpret_cast<ScanState *>(ps)->ss_currentRelation;
		return !(rel && relids->count(RelationGetRelid(rel)));
	}
	if (!outerPlanState(ps) && !innerPlanState(ps) && !IsA(ps, AppendState) && !IsA(ps, MergeAppendState) &&
	    !IsA(ps, SubqueryScanState))
		return true; // (a function scan, VALUES, a constant Result: rows that do not come from the table)
	return planstate_tree_walker(ps, reinterpret_cast<bool (*)()>(other_leaf_walker), ctx);
}

bool
empty_walker(PlanState *ps, void *ctx)
{
	if (!ps)
		return false;
	const auto *relids = static_cast<const std::set<Oid> *>(ctx);
	// a Gather whose workers would only read the noted tables: launched, they would read every
	// block the leader's emptied scan leaves them; emptied, it launches none
	if ((IsA(ps, GatherState) || IsA(ps, GatherMergeState)) && outerPlanState(ps) &&
	    !other_leaf_walker(outerPlanState(ps), ctx)) {
		ps->ExecProcNode = no_rows;
		return false;
	}
	if (is_table_scan(ps)) {
		Relation rel = reinterpret_cast<ScanState *>(ps)->ss_currentRelation;
		if (rel && relids->count(RelationGetRelid(rel)))
			ps->ExecProcNode = no_rows;
	}
	return planstate_tree_walker(ps, reinterpret_cast<bool (*)()>(empty_walker), ctx);
}


// The plan noted by note_replayed_plan and its tables.
const void *noted_plan = nullptr;
std::vector<Oid> noted_relids;

} // namespace

// See replay_scan.h.
void
note_replayed_plan(const void *plan, const std::vector<Oid> &relids)
{
	noted_plan = plan;
	noted_relids = plan ? relids : std::vector<Oid>{};
}

// See replay_scan.h.
void
skip_replayed_scans(QueryDesc *qd)
{
	if (!noted_plan || noted_plan != qd->plannedstmt || !qd->planstate) {
		note_replayed_plan(nullptr, {});
		return;
	}
	const std::vector<Oid> relids = noted_relids;
	note_replayed_plan(nullptr, {});
	// a table the plan reads twice (a superuser's native read next to the release) keeps its scans
	std::set<Oid> all;
	pg_call([&] {
		for (Oid r : relids) {
			int entries = 0;
			ListCell *rc;
			foreach (rc, qd->plannedstmt->rtable) {
				RangeTblEntry *rte = lfirst_node(RangeTblEntry, rc);
				entries += rte->rtekind == RTE_RELATION && rte->relid == r;
			}
			if (entries != 1)
				continue;
			List *members = find_all_inheritors(r, NoLock, nullptr);
			ListCell *lc;
			foreach (lc, members)
				all.insert(lfirst_oid(lc));
		}
	});
	if (!all.empty())
		empty_walker(qd->planstate, &all);
}

} // namespace dxpriv::pg
