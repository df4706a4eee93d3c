// The exponential-mechanism split of a Citus query (dx.mode, dx.quantile, dx.median).
#pragma once

#include "pg/planner/distributed_context.h"

extern "C" {
#include "nodes/parsenodes.h"
}

namespace dxpriv::pg::dist {

// A query level with dx.mode/quantile/median on a Citus table rewritten so that the workers count
// the rows of each candidate with PostgreSQL's own grouped count and the mechanism draws on the
// coordinator (dx._em_collect, added to c.releases); the level's linear releases (dx.count, sum,
// avg, linear) come from one more subquery, joined on the output group. q itself when the level
// holds none or its table is not a Citus table. Raises for shapes it cannot split.
Query *em_from_counts(Query *q, SplitContext &c);

} // namespace dxpriv::pg::dist
