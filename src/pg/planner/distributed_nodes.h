// Query-tree builders of the Citus split (distributed_linear.cpp, distributed_em.cpp).
#pragma once

extern "C" {
#include "postgres.h"
}


extern "C" {
#include "nodes/parsenodes.h"
#include "nodes/primnodes.h"
}

#include <initializer_list>
#include <utility>

namespace dxpriv::pg::dist {

// generate_series(0, groups - 1) AS dx_groups(g), a range table entry.
RangeTblEntry *groups_rte(int groups);
// GROUP BY the int4 target entry whose ressortgroupref is `ref` (hashable, as the parser builds it).
SortGroupClause *int4_group_clause(Index ref);
// A copy of level q that returns `targets` grouped by the first `keys` of them (int4), without the
// level's own HAVING, ORDER BY, DISTINCT, LIMIT or shard-pruning conjuncts: the workers' share.
Query *grouped_by_first(Query *q, List *targets, int keys = 1);
// SELECT <targets> FROM <rte>: an aggregate level on the coordinator (targets added by the caller).
Query *aggregate_over(RangeTblEntry *rte);
// An internal aggregate fn(args...) over the given argument expressions, as the parser builds it.
Aggref *internal_aggref(Oid fn, Oid result, std::initializer_list<std::pair<Expr *, Oid>> args);
// agg(arg) as the parser would build it (one argument, no ORDER BY, FILTER or DISTINCT).
Aggref *simple_aggref(Oid fn, Oid result, Expr *arg, Oid arg_type);
// count(*).
Aggref *count_star();
// int4 a = int4 b.
Expr *int4_equal(Expr *a, Expr *b);

} // namespace dxpriv::pg::dist
