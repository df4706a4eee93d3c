// The per-point tables in the arguments of dxpriv's internal aggregates stood in for by small
// constants while the PostgreSQL planner runs, so that its search for aggregates sharing a
// transition state (preprocess_aggrefs: equal() of every pair's arguments) does not compare
// megabytes per pair; the plan gets the tables back.
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"
#include "nodes/params.h"
}

namespace dxpriv::pg {

// The planner stage plan_statement calls (the previous planner hook or standard_planner).
using PlanNext = PlannedStmt *(*) (Query *, const char *, int, ParamListInfo);

// next(parse, ...) with every pass-by-reference Const over 1 kB among the arguments (args, not
// direct arguments or filters) of an internal aggregate replaced, during the call, by a stand-in of
// the same type: a value (pg/stand_in.h: a fixed magic every reader refuses, then the class) naming
// the table's class (tables of equal bytes share a class, decided by pointer identity or one memcmp
// against the class's first table; a class id no other constant can spell: a per-backend random
// nonce). Aggregates then share a transition state exactly when they would with the tables, since
// equal() compares the stand-ins as it would the tables. Afterwards (also when planning errors)
// every Const holding a stand-in (by its bytes: the planner copies a subquery, values included,
// before planning it), in the query tree and in every expression of every plan node
// (walk_every_plan_expression), holds its table again. Fails closed: ERROR (XX000) when a Const
// of the plan still holds a stand-in of no class of this call, or the plan has a node kind the walk
// does not know; a stand-in that reached execution anyway (dxpriv.test_skip_stand_in_restore, tests
// only) is refused by every reader (pg/stand_in.h). Only the equality of the tables matters to the
// planner there (no cost, width or folding reads an aggregate's argument values). A PostgreSQL
// frame (no C++ object lives across next): call outside guarded, as plan_statement calls next.
PlannedStmt *plan_with_stand_ins(PlanNext next, Query *parse, const char *query_string, int cursor_options,
                                 ParamListInfo params);

} // namespace dxpriv::pg
