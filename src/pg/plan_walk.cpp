// Visiting every expression list of a finished plan (plan_walk.h).
#include "pg/plan_walk.h"

namespace dxpriv::pg {

namespace {

struct Walk {
	const std::function<void(Node *)> &visit;
	const std::function<void(CustomScan *)> &first_custom;
	int *final_node; // nearest finalize-phase Agg above, or nullptr when not asked
	bool *below_gather; // under a Gather or Gather Merge, or nullptr when not asked
	bool custom_seen = false;
};

void
walk(Plan *plan, Walk &w)
{
	if (!plan)
		return;
	const int outer_final = w.final_node ? *w.final_node : -1;
	const bool outer_gather = w.below_gather && *w.below_gather;
	if (w.final_node && IsA(plan, Agg) && DO_AGGSPLIT_COMBINE(castNode(Agg, plan)->aggsplit))
		*w.final_node = plan->plan_node_id; // the partial aggregates below feed this node
	w.visit((Node *) plan->targetlist);
	w.visit((Node *) plan->qual);
	if (w.below_gather && (IsA(plan, Gather) || IsA(plan, GatherMerge)))
		*w.below_gather = true; // (its own target list runs in the leader)
	walk(plan->lefttree, w);
	walk(plan->righttree, w);
	if (IsA(plan, Result))
		w.visit(((Result *) plan)->resconstantqual);
	if (IsA(plan, CustomScan)) { // custom_exprs: the releases Citus keeps in its private plan (planner/distributed.h)
		CustomScan *cs = (CustomScan *) plan;
		if (!w.custom_seen && w.first_custom)
			w.first_custom(cs);
		w.custom_seen = true;
		w.visit((Node *) cs->custom_exprs);
	}
	List *children = extra_child_plans(plan);
	ListCell *lc;
	foreach (lc, children)
		walk((Plan *) lfirst(lc), w);
	if (w.final_node)
		*w.final_node = outer_final;
	if (w.below_gather)
		*w.below_gather = outer_gather;
}

} // namespace

// See plan_walk.h.
List *
extra_child_plans(Plan *plan)
{
	switch (nodeTag(plan)) {
	case T_Append:
		return ((Append *) plan)->appendplans;
	case T_MergeAppend:
		return ((MergeAppend *) plan)->mergeplans;
	case T_BitmapAnd:
		return ((BitmapAnd *) plan)->bitmapplans;
	case T_BitmapOr:
		return ((BitmapOr *) plan)->bitmapplans;
	case T_SubqueryScan:
		return list_make1(((SubqueryScan *) plan)->subplan);
	case T_CustomScan:
		return ((CustomScan *) plan)->custom_plans;
	default:
		return NIL;
	}
}

// See plan_walk.h.
void
walk_plan_expressions(PlannedStmt *stmt, const std::function<void(Node *)> &visit,
                      const std::function<void(CustomScan *)> &first_custom, int *final_node, bool *below_gather)
{
	if (final_node)
		*final_node = -1;
	if (below_gather)
		*below_gather = false;
	Walk w{visit, first_custom, final_node, below_gather};
	walk(stmt->planTree, w);
	ListCell *lc;
	foreach (lc, stmt->subplans)
		walk((Plan *) lfirst(lc), w);
}

} // namespace dxpriv::pg
