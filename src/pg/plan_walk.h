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

} // namespace dxpriv::pg
