// Query-tree builders of the Citus split: subqueries, range table entries, internal aggregates.
#include "pg/planner/distributed_nodes.h"

#include "pg/node_build.h"

#include "core/linear_query.h"

extern "C" {
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_proc.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/fmgroids.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

#include <limits>
#include <map>
#include <optional>
#include <vector>
#include <set>
#include <string>

namespace dxpriv::pg::dist {

// generate_series(0, groups - 1) AS dx_groups(g), a range table entry.
RangeTblEntry *
groups_rte(int groups)
{
	FuncExpr *series = makeFuncExpr(F_GENERATE_SERIES_INT4_INT4, INT4OID,
	                                 list_make2(int4_const(0), int4_const(groups - 1)), InvalidOid, InvalidOid,
	                                 COERCE_EXPLICIT_CALL);
	series->funcretset = true;
	RangeTblFunction *rtf = makeNode(RangeTblFunction);
	rtf->funcexpr = (Node *) series;
	rtf->funccolcount = 1;
	RangeTblEntry *rte = makeNode(RangeTblEntry);
	rte->rtekind = RTE_FUNCTION;
	rte->functions = list_make1(rtf);
	rte->alias = makeAlias("dx_groups", list_make1(makeString(pstrdup("g"))));
	rte->eref = copy_node(rte->alias);
	rte->inFromCl = true;
	return rte;
}

// GROUP BY the int4 target entry whose ressortgroupref is `ref` (hashable, as the parser builds it).
SortGroupClause *
int4_group_clause(Index ref)
{
	SortGroupClause *by = makeNode(SortGroupClause);
	by->tleSortGroupRef = ref;
	by->eqop = Int4EqualOperator;
	by->sortop = Int4LessOperator;
	by->hashable = true;
	return by;
}

// A copy of level q that returns `targets` grouped by the first `keys` of them (int4), without the
// level's own HAVING, ORDER BY, DISTINCT, LIMIT or shard-pruning conjuncts: the workers' share.
Query *
grouped_by_first(Query *q, List *targets, int keys)
{
	Query *inner = copy_node(q);
	inner->targetList = targets;
	inner->groupClause = NIL;
	for (int k = 0; k < keys; ++k) {
		static_cast<TargetEntry *>(list_nth(targets, k))->ressortgroupref = static_cast<Index>(k + 1);
		inner->groupClause = lappend(inner->groupClause, int4_group_clause(static_cast<Index>(k + 1)));
	}
	inner->havingQual = nullptr;
	inner->sortClause = NIL;
	inner->distinctClause = NIL;
	inner->hasDistinctOn = false;
	inner->limitCount = nullptr;
	inner->limitOffset = nullptr;
	inner->hasAggs = true;
	inner->hasSubLinks = false;
	inner->canSetTag = false;
	// (a source subquery's filter, placed by the analyzer, stays: release_rewrite.cpp)
	if (inner->jointree && inner->rtable != NIL && linitial_node(RangeTblEntry, inner->rtable)->rtekind == RTE_RELATION)
		inner->jointree->quals = nullptr;
	return inner;
}

// SELECT <targets> FROM <rte>: an aggregate level on the coordinator (targets added by the caller).
Query *
aggregate_over(RangeTblEntry *rte)
{
	Query *q = makeNode(Query);
	q->commandType = CMD_SELECT;
	q->querySource = QSRC_ORIGINAL;
	q->rtable = list_make1(rte);
	RangeTblRef *ref = makeNode(RangeTblRef);
	ref->rtindex = 1;
	q->jointree = makeFromExpr(list_make1(ref), nullptr);
	q->hasAggs = true;
	return q;
}

// An internal aggregate fn(args...) over the given argument expressions, as the parser builds it.
Aggref *
internal_aggref(Oid fn, Oid result, std::initializer_list<std::pair<Expr *, Oid>> args)
{
	Aggref *a = makeNode(Aggref);
	a->aggfnoid = fn;
	a->aggtype = result;
	AttrNumber i = 1;
	for (const auto &[e, type] : args) {
		a->aggargtypes = lappend_oid(a->aggargtypes, type);
		a->args = lappend(a->args, makeTargetEntry(e, i++, nullptr, false));
	}
	a->aggkind = AGGKIND_NORMAL;
	a->aggsplit = AGGSPLIT_SIMPLE;
	a->aggno = a->aggtransno = -1;
	a->location = -1;
	return a;
}

// agg(arg) as the parser would build it (one argument, no ORDER BY, FILTER or DISTINCT).
Aggref *
simple_aggref(Oid fn, Oid result, Expr *arg, Oid arg_type)
{
	return internal_aggref(fn, result, {{arg, arg_type}});
}

// count(*).
Aggref *
count_star()
{
	Aggref *a = internal_aggref(F_COUNT_, INT8OID, {});
	a->aggstar = true;
	return a;
}

// int4 a = int4 b.
Expr *
int4_equal(Expr *a, Expr *b)
{
	return make_opclause(Int4EqualOperator, BOOLOID, false, a, b, InvalidOid, InvalidOid);
}

} // namespace dxpriv::pg::dist
