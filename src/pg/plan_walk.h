// Visiting every expression list of a finished plan: what the charge step, the analyst admission
// check and the distributed releases look for (noisy aggregates and their parameters).
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/plannodes.h"
}

#include <functional>

namespace dxpriv::pg {

// Calls visit on the target list and quals of every node of the plan tree (and a Result's constant
// qual, a CustomScan's custom_exprs), through lefttree/righttree, Append, MergeAppend, BitmapAnd/Or
// children, SubqueryScan subplans and CustomScan custom_plans, and on the statement's subplans.
// Calls first_custom(cs) once with the first CustomScan met, when given. final_node (when given)
// holds, during each visit, the plan_node_id of the nearest finalize-phase Agg above the visited
// node (the Agg a partial aggregate's states feed), or -1. below_gather (when given) is true
// during the visits of nodes under a Gather or Gather Merge (which parallel workers may run).
// The children of a plan node beyond lefttree and righttree: the members of Append, MergeAppend,
// BitmapAnd and BitmapOr, a SubqueryScan's subplan, a CustomScan's custom_plans (NIL otherwise).
List *extra_child_plans(Plan *plan);

void walk_plan_expressions(PlannedStmt *stmt, const std::function<void(Node *)> &visit,
                           const std::function<void(CustomScan *)> &first_custom = nullptr,
                           int *final_node = nullptr, bool *below_gather = nullptr);

// Calls visit on EVERY expression list a plan node of PostgreSQL 15 carries (not only target lists
// and quals: index quals and their originals, join clauses, hash keys, a ForeignScan's fdw_exprs,
// fdw_scan_tlist and fdw_recheck_quals, a CustomScan's custom_exprs and custom_scan_tlist, a
// ModifyTable's lists, Limit and WindowAgg expressions, function and VALUES scans, NestLoop
// parameters, initPlan, partition-pruning step expressions, ...), through every child plan (those
// of extra_child_plans, an Agg's chain) and the statement's subplans. Returns false when it met a
// node kind it does not know (whose own expressions it could not visit), true otherwise; what a
// caller that must see everything (planner/large_const_stand_ins) checks.
bool walk_every_plan_expression(PlannedStmt *stmt, const std::function<void(Node *)> &visit);

} // namespace dxpriv::pg
