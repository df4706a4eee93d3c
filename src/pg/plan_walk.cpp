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

namespace {

// The expressions of a PartitionPruneInfo (an Append's or MergeAppend's run-time pruning steps).
void
visit_prune_info(PartitionPruneInfo *info, const std::function<void(Node *)> &visit)
{
	if (!info)
		return;
	ListCell *lc, *lc2, *lc3;
	foreach (lc, info->prune_infos)
		foreach (lc2, (List *) lfirst(lc)) {
			auto *pinfo = (PartitionedRelPruneInfo *) lfirst(lc2);
			for (List *steps : {pinfo->initial_pruning_steps, pinfo->exec_pruning_steps})
				foreach (lc3, steps)
					if (IsA(lfirst(lc3), PartitionPruneStepOp))
						visit((Node *) ((PartitionPruneStepOp *) lfirst(lc3))->exprs);
		}
}

// Every expression of one plan node and of its children (walk_every_plan_expression).
bool
walk_every(Plan *plan, const std::function<void(Node *)> &visit)
{
	if (!plan)
		return true;
	bool known = true;
	visit((Node *) plan->targetlist);
	visit((Node *) plan->qual);
	visit((Node *) plan->initPlan);
	switch (nodeTag(plan)) {
	case T_Result:
		visit(((Result *) plan)->resconstantqual);
		break;
	case T_ModifyTable: {
		auto *m = (ModifyTable *) plan;
		visit((Node *) m->returningLists);
		visit((Node *) m->onConflictSet);
		visit((Node *) m->onConflictWhere);
		visit((Node *) m->exclRelTlist);
		visit((Node *) m->withCheckOptionLists);
		visit((Node *) m->mergeActionLists);
		break;
	}
	case T_Append:
		visit_prune_info(((Append *) plan)->part_prune_info, visit);
		break;
	case T_MergeAppend:
		visit_prune_info(((MergeAppend *) plan)->part_prune_info, visit);
		break;
	case T_IndexScan: {
		auto *i = (IndexScan *) plan;
		visit((Node *) i->indexqual);
		visit((Node *) i->indexqualorig);
		visit((Node *) i->indexorderby);
		visit((Node *) i->indexorderbyorig);
		break;
	}
	case T_IndexOnlyScan: {
		auto *i = (IndexOnlyScan *) plan;
		visit((Node *) i->indexqual);
		visit((Node *) i->recheckqual);
		visit((Node *) i->indexorderby);
		visit((Node *) i->indextlist);
		break;
	}
	case T_BitmapIndexScan:
		visit((Node *) ((BitmapIndexScan *) plan)->indexqual);
		visit((Node *) ((BitmapIndexScan *) plan)->indexqualorig);
		break;
	case T_BitmapHeapScan:
		visit((Node *) ((BitmapHeapScan *) plan)->bitmapqualorig);
		break;
	case T_TidScan:
		visit((Node *) ((TidScan *) plan)->tidquals);
		break;
	case T_TidRangeScan:
		visit((Node *) ((TidRangeScan *) plan)->tidrangequals);
		break;
	case T_FunctionScan:
		visit((Node *) ((FunctionScan *) plan)->functions);
		break;
	case T_ValuesScan:
		visit((Node *) ((ValuesScan *) plan)->values_lists);
		break;
	case T_TableFuncScan:
		visit((Node *) ((TableFuncScan *) plan)->tablefunc);
		break;
	case T_SampleScan:
		visit((Node *) ((SampleScan *) plan)->tablesample);
		break;
	case T_ForeignScan: {
		auto *f = (ForeignScan *) plan;
		visit((Node *) f->fdw_exprs);
		visit((Node *) f->fdw_scan_tlist);
		visit((Node *) f->fdw_recheck_quals);
		break;
	}
	case T_CustomScan:
		visit((Node *) ((CustomScan *) plan)->custom_exprs);
		visit((Node *) ((CustomScan *) plan)->custom_scan_tlist);
		break;
	case T_NestLoop: {
		visit((Node *) ((Join *) plan)->joinqual);
		ListCell *lc;
		foreach (lc, ((NestLoop *) plan)->nestParams)
			visit((Node *) lfirst_node(NestLoopParam, lc)->paramval);
		break;
	}
	case T_MergeJoin:
		visit((Node *) ((Join *) plan)->joinqual);
		visit((Node *) ((MergeJoin *) plan)->mergeclauses);
		break;
	case T_HashJoin:
		visit((Node *) ((Join *) plan)->joinqual);
		visit((Node *) ((HashJoin *) plan)->hashclauses);
		visit((Node *) ((HashJoin *) plan)->hashkeys);
		break;
	case T_Hash:
		visit((Node *) ((Hash *) plan)->hashkeys);
		break;
	case T_Memoize:
		visit((Node *) ((Memoize *) plan)->param_exprs);
		break;
	case T_WindowAgg: {
		auto *w = (WindowAgg *) plan;
		visit(w->startOffset);
		visit(w->endOffset);
		visit((Node *) w->runCondition);
		visit((Node *) w->runConditionOrig);
		break;
	}
	case T_Limit:
		visit(((Limit *) plan)->limitOffset);
		visit(((Limit *) plan)->limitCount);
		break;
	case T_Agg: {
		ListCell *lc;
		foreach (lc, ((Agg *) plan)->chain)
			known = walk_every((Plan *) lfirst(lc), visit) && known;
		break;
	}
	// no expressions beyond the target list and quals
	case T_ProjectSet:
	case T_RecursiveUnion:
	case T_BitmapAnd:
	case T_BitmapOr:
	case T_SeqScan:
	case T_SubqueryScan:
	case T_CteScan:
	case T_NamedTuplestoreScan:
	case T_WorkTableScan:
	case T_Material:
	case T_Sort:
	case T_IncrementalSort:
	case T_Group:
	case T_Unique:
	case T_Gather:
	case T_GatherMerge:
	case T_SetOp:
	case T_LockRows:
		break;
	default:
		known = false;
		break;
	}
	known = walk_every(plan->lefttree, visit) && known;
	known = walk_every(plan->righttree, visit) && known;
	ListCell *lc;
	foreach (lc, extra_child_plans(plan))
		known = walk_every((Plan *) lfirst(lc), visit) && known;
	return known;
}

} // namespace

// See plan_walk.h.
bool
walk_every_plan_expression(PlannedStmt *stmt, const std::function<void(Node *)> &visit)
{
	bool known = walk_every(stmt->planTree, visit);
	ListCell *lc;
	foreach (lc, stmt->subplans)
		known = walk_every((Plan *) lfirst(lc), visit) && known;
	return known;
}

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
