// The exponential-mechanism split of a Citus query: candidate counts on the workers, the draw on the coordinator.
#include "pg/planner/distributed_em.h"

#include "pg/planner/distributed_nodes.h"
#include "pg/planner/distributed_linear.h"
#include "pg/contract/param_consts.h"
#include "pg/contract/noise_params.h"
#include "pg/guard.h"
#include "pg/node_build.h"
#include "pg/metadata/extension_objects.h"

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

namespace {

// The exponential-mechanism aggregates of one query level (not inside sublinks' queries).
bool
collect_level_em(Node *node, void *ctx)
{
	if (!node || IsA(node, Query))
		return false;
	auto *found = static_cast<std::pair<const ExtensionObjects *, std::vector<Aggref *>> *>(ctx);
	if (IsA(node, Aggref) && castNode(Aggref, node)->aggfnoid == found->first->em_select &&
	    castNode(Aggref, node)->agglevelsup == 0) {
		for (Aggref *seen : found->second)
			if (equal(seen, node))
				return false;
		found->second.push_back(castNode(Aggref, node));
		return false;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(collect_level_em), ctx);
}

struct EmOuterContext {
	const std::vector<Aggref *> *ems;
	Node *group_index = nullptr; // grouped: the row's output group, read from column 1 of the first subquery
	bool stray_var = false;
	const std::vector<FuncExpr *> *linear = nullptr; // the level's linear releases, read from subquery lin_rt
	int lin_rt = 0;
	size_t em_base = 0; // range table entries before the first exponential-mechanism subquery
};

// Mutator of the outer query: each dx._em_select(...) becomes the chosen index of its subquery
// (column `sel`: 1 ungrouped, 2 grouped), the group index expression that subquery's group.
Node *
em_outer_mutator(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	auto *c = static_cast<EmOuterContext *>(ctx);
	if (c->linear && IsA(node, FuncExpr))
		for (size_t j = 0; j < c->linear->size(); ++j)
			if (equal(node, (*c->linear)[j]))
				return (Node *) makeVar(c->lin_rt, static_cast<AttrNumber>((c->group_index ? 2 : 1) + j),
				                        castNode(FuncExpr, node)->funcresulttype, -1, InvalidOid, 0);
	if (IsA(node, Aggref))
		for (size_t j = 0; j < c->ems->size(); ++j)
			if (equal(node, (*c->ems)[j]))
				return (Node *) makeVar(static_cast<int>(c->em_base + j + 1), c->group_index ? 2 : 1, INT4OID, -1,
				                        InvalidOid, 0);
	if (c->group_index && equal(node, c->group_index))
		return (Node *) makeVar(1, 1, INT4OID, -1, InvalidOid, 0);
	if (IsA(node, Var) && castNode(Var, node)->varlevelsup == 0)
		c->stray_var = true;
	return expression_tree_mutator(node, reinterpret_cast<Node *(*) ()>(em_outer_mutator), ctx);
}

// The middle level of a grouped exponential mechanism on a Citus table: every declared group's
// state, empty ones included (a group without rows meets a NULL candidate, which creates its state):
// SELECT dx_groups.g, dx._em_collect(x.c, dx_groups.g, params, x.n) AS sel
//   FROM generate_series(0, G - 1) dx_groups(g) LEFT JOIN (<counts>) x ON x.g = dx_groups.g
//   GROUP BY dx_groups.g
Query *
em_every_group(Query *counts, int groups, Const *params, const ExtensionObjects &ext, Aggref *&collect)
{
	Query *mid = makeNode(Query);
	mid->commandType = CMD_SELECT;
	mid->querySource = QSRC_ORIGINAL;
	RangeTblEntry *series = groups_rte(groups);
	RangeTblEntry *x = subquery_rte(counts, "dx_counts", list_make3(makeString(pstrdup("g")), makeString(pstrdup("c")),
	                                                              makeString(pstrdup("n"))));
	RangeTblEntry *join = makeNode(RangeTblEntry);
	join->rtekind = RTE_JOIN;
	join->jointype = JOIN_LEFT;
	join->joinmergedcols = 0;
	join->joinaliasvars = list_make4(makeVar(1, 1, INT4OID, -1, InvalidOid, 0), makeVar(2, 1, INT4OID, -1, InvalidOid, 0),
	                                 makeVar(2, 2, INT4OID, -1, InvalidOid, 0), makeVar(2, 3, INT8OID, -1, InvalidOid, 0));
	join->joinleftcols = list_make1_int(1);
	join->joinrightcols = list_make3_int(1, 2, 3);
	join->eref = makeAlias("unnamed_join", list_make4(makeString(pstrdup("g")), makeString(pstrdup("g")),
	                                                 makeString(pstrdup("c")), makeString(pstrdup("n"))));
	join->inFromCl = true;
	mid->rtable = list_make3(series, x, join);
	JoinExpr *je = makeNode(JoinExpr);
	je->jointype = JOIN_LEFT;
	RangeTblRef *l = makeNode(RangeTblRef), *r = makeNode(RangeTblRef);
	l->rtindex = 1;
	r->rtindex = 2;
	je->larg = (Node *) l;
	je->rarg = (Node *) r;
	je->quals = (Node *) int4_equal((Expr *) makeVar(2, 1, INT4OID, -1, InvalidOid, 0),
	                                (Expr *) makeVar(1, 1, INT4OID, -1, InvalidOid, 0));
	je->rtindex = 3;
	mid->jointree = makeFromExpr(list_make1(je), nullptr);
	collect = internal_aggref(ext.em_collect, INT4OID,
	                          {{(Expr *) makeVar(2, 2, INT4OID, -1, InvalidOid, 0), INT4OID},
	                           {(Expr *) makeVar(1, 1, INT4OID, -1, InvalidOid, 0), INT4OID},
	                           {(Expr *) copy_node(params), FLOAT8ARRAYOID},
	                           {(Expr *) makeVar(2, 3, INT8OID, -1, InvalidOid, 0), INT8OID}});
	TargetEntry *g = makeTargetEntry((Expr *) makeVar(1, 1, INT4OID, -1, InvalidOid, 0), 1, pstrdup("g"), false);
	g->ressortgroupref = 1;
	mid->targetList = list_make2(g, makeTargetEntry((Expr *) collect, 2, pstrdup("sel"), false));
	mid->groupClause = list_make1(int4_group_clause(1));
	mid->hasAggs = true;
	return mid;
}

// True when node holds a dx._dispersion call (stddev, corr, ...: dispersion_spelling.h) at this level.
bool
holds_dispersion(Node *node, void *ctx)
{
	if (!node || IsA(node, Query))
		return false;
	if (IsA(node, FuncExpr) && castNode(FuncExpr, node)->funcid == static_cast<const ExtensionObjects *>(ctx)->dispersion)
		return true;
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(holds_dispersion), ctx);
}

// The linear releases (dx.count/sum/avg/linear) of a level that also holds exponential-mechanism
// aggregates, as one more subquery of the outer level: without GROUP BY
//   SELECT r1, ..., rK FROM t                (each release over dx._state_of of native sums)
// and with GROUP BY every declared group from one state (distributed_linear.h)
//   SELECT g, r1, ..., rK FROM (<partials>) dx_partials, generate_series(0, G - 1) dx_groups(g)
// joined with the exponential mechanism's subqueries on g.
Query *
linear_beside(Query *q, const std::vector<FuncExpr *> &releases, Node *group_index, bool grouped, SplitContext &c)
{
	Query *lin = copy_node(q);
	List *targets = NIL;
	AttrNumber col = 1;
	if (grouped)
		targets = lappend(targets, makeTargetEntry((Expr *) copy_node(group_index), col++, pstrdup("g"), false));
	for (size_t j = 0; j < releases.size(); ++j)
		targets = lappend(targets, makeTargetEntry((Expr *) copy_node(releases[j]), col++, psprintf("r%zu", j + 1), false));
	lin->targetList = targets;
	lin->havingQual = nullptr;
	lin->sortClause = NIL;
	lin->distinctClause = NIL;
	lin->hasDistinctOn = false;
	lin->limitCount = nullptr;
	lin->limitOffset = nullptr;
	if (!grouped) {
		lin->targetList = (List *) native_ungrouped_mutator((Node *) lin->targetList, &c);
		return lin;
	}
	return every_group_from_one_state(lin, c);
}

} // namespace

// A query level whose exponential-mechanism aggregates (dx.mode/quantile/median) read a Citus table
// (its linear releases, if any, become one more subquery: linear_beside above), without GROUP BY:
// SELECT ... dx._em_point(dx._em_select(c(row), 0, params), ...) ... FROM t
// becomes
// SELECT ... dx._em_point(s1.sel, ...) ... FROM (SELECT dx._em_collect(x.c, 0, params, x.n) AS sel
//   FROM (SELECT c(row) AS c, count(*) AS n FROM t GROUP BY 1) x) s1, ...
// so the workers count the rows of each candidate with PostgreSQL's own grouped count, and the
// exponential mechanism draws on the coordinator, from the counts, for the statement it charged.
Query *
em_from_counts(Query *q, SplitContext &c)
{
	std::pair<const ExtensionObjects *, std::vector<Aggref *>> found{c.ext, {}};
	collect_level_em((Node *) q->targetList, &found);
	collect_level_em(q->havingQual, &found);
	if (found.second.empty())
		return q;
	Const *k0 = aggref_params_const(found.second.front());
	if (!k0 || !table_of(c, parse_noise_params(pg_value([&] { return DatumGetArrayTypeP(k0->constvalue); })).relid).citus)
		return q;
	if (q->groupingSets != NIL || list_length(q->rtable) != 1 ||
	    linitial_node(RangeTblEntry, q->rtable)->rtekind != RTE_RELATION || q->hasWindowFuncs || q->hasTargetSRFs ||
	    q->cteList != NIL)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "this dx.mode, dx.quantile or dx.median query cannot run on a Citus table yet",
		     "On a distributed table, ask for them without GROUPING SETS, window functions or set-returning functions "
		     "in the same query level; wrap the query in a subquery for post-processing.");
	// stddev/corr/... beside them: their statistic would be computed above the linear subquery, from
	// its columns, where the coordinator's re-parsed share could not tell it from a hand-written one
	if (holds_dispersion((Node *) q->targetList, const_cast<ExtensionObjects *>(c.ext)) ||
	    holds_dispersion(q->havingQual, const_cast<ExtensionObjects *>(c.ext)))
		fail(ERRCODE_FEATURE_NOT_SUPPORTED,
		     "stddev, variance, covar, corr and regr_* cannot be asked beside dx.mode, dx.quantile or dx.median on "
		     "a Citus table yet",
		     "Ask for them in two statements (each is answered on the distributed table). Nothing was charged.");
	const bool grouped = q->groupClause != NIL;
	const std::vector<Aggref *> &ems = found.second;
	Node *group_index = (Node *) lsecond_node(TargetEntry, ems.front()->args)->expr;
	List *rtable = NIL, *from = NIL;
	Node *same_group = nullptr; // grouped: every subquery's group equals the first one's
	// the level's linear releases beside them: one more subquery, first (its noise is drawn first, as
	// on a local table), joined with the others on the group
	GroupedReleases linear{c.ext, {}};
	collect_level_releases((Node *) q->targetList, &linear);
	collect_level_releases(q->havingQual, &linear);
	if (!linear.releases.empty()) {
		Query *lin = linear_beside(q, linear.releases, group_index, grouped, c);
		List *cols = grouped ? list_make1(makeString(pstrdup("g"))) : NIL;
		for (size_t j = 0; j < linear.releases.size(); ++j)
			cols = lappend(cols, makeString(psprintf("r%zu", j + 1)));
		rtable = lappend(rtable, subquery_rte(lin, "dx_linear", cols));
		RangeTblRef *r = makeNode(RangeTblRef);
		r->rtindex = 1;
		from = lappend(from, r);
	}
	const size_t base = static_cast<size_t>(list_length(rtable));
	for (size_t j = 0; j < ems.size(); ++j) {
		Aggref *em = ems[j];
		Const *params = aggref_params_const(em);
		Node *group = (Node *) lsecond_node(TargetEntry, em->args)->expr;
		if (!params || IsA(group, Const) == grouped || (grouped && !equal(group, group_index)))
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv exponential mechanism parameters are not constants");
		// innermost: the candidate of each row (its table by digest when large) and its row count,
		// per output group when grouped (the group index by digest as well)
		Node *candidate = by_digest_mutator(copy_node((Node *) linitial_node(TargetEntry, em->args)->expr), &c);
		Query *mid;
		Aggref *collect;
		if (grouped) {
			Node *g = by_digest_mutator(copy_node(group), &c);
			Query *counts = grouped_by_first(q,
			                                 list_make3(makeTargetEntry((Expr *) g, 1, pstrdup("g"), false),
			                                            makeTargetEntry((Expr *) candidate, 2, pstrdup("c"), false),
			                                            makeTargetEntry((Expr *) count_star(), 3, pstrdup("n"), false)),
			                                 2);
			mid = em_every_group(counts, parse_noise_params(pg_value([&] { return DatumGetArrayTypeP(params->constvalue); })).groups, params,
			                     *c.ext, collect);
		} else {
			Query *inner = grouped_by_first(q, list_make2(makeTargetEntry((Expr *) candidate, 1, pstrdup("c"), false),
			                                              makeTargetEntry((Expr *) count_star(), 2, pstrdup("n"), false)));
			// middle: the exponential mechanism's state from the counts, its draw in the final function
			mid = aggregate_over(
			    subquery_rte(inner, "dx_counts", list_make2(makeString(pstrdup("c")), makeString(pstrdup("n")))));
			collect = internal_aggref(c.ext->em_collect, INT4OID,
			                          {{(Expr *) makeVar(1, 1, INT4OID, -1, InvalidOid, 0), INT4OID},
			                           {(Expr *) copy_node(group), INT4OID},
			                           {(Expr *) copy_node(params), FLOAT8ARRAYOID},
			                           {(Expr *) makeVar(1, 2, INT8OID, -1, InvalidOid, 0), INT8OID}});
			mid->targetList = list_make1(makeTargetEntry((Expr *) collect, 1, pstrdup("sel"), false));
		}
		c.releases = lappend(c.releases, copy_node(collect)); // charged and exposed like a release
		List *cols = grouped ? list_make2(makeString(pstrdup("g")), makeString(pstrdup("sel")))
		                     : list_make1(makeString(pstrdup("sel")));
		rtable = lappend(rtable, subquery_rte(mid, psprintf("dx_em%zu", j + 1), cols));
		RangeTblRef *r = makeNode(RangeTblRef);
		r->rtindex = static_cast<int>(base + j + 1);
		from = lappend(from, r);
		if (grouped && base + j > 0) {
			Expr *eq = int4_equal((Expr *) makeVar(static_cast<int>(base + j + 1), 1, INT4OID, -1, InvalidOid, 0),
			                      (Expr *) makeVar(1, 1, INT4OID, -1, InvalidOid, 0));
			same_group = same_group ? (Node *) make_andclause(list_make2(same_group, eq)) : (Node *) eq;
		}
	}
	EmOuterContext oc{&ems, grouped ? group_index : nullptr};
	oc.em_base = base;
	if (!linear.releases.empty()) {
		oc.linear = &linear.releases;
		oc.lin_rt = 1;
	}
	Query *outer = copy_node(q);
	outer->targetList = (List *) em_outer_mutator((Node *) q->targetList, &oc);
	Node *having = em_outer_mutator(q->havingQual, &oc);
	if (oc.stray_var)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv left a column reference outside the aggregates of a distributed query");
	if (same_group)
		having = having ? (Node *) make_andclause(list_make2(same_group, having)) : same_group;
	outer->rtable = rtable;
	outer->jointree = makeFromExpr(from, having);
	outer->havingQual = nullptr;
	outer->groupClause = NIL;
	outer->hasAggs = false;
	return outer;
}

} // namespace dxpriv::pg::dist
