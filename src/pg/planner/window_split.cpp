// Window functions next to a release's aggregates split into a wrapper over the release (window_split.h).
#include "pg/planner/window_split.h"

#include "pg/guard.h"
#include "pg/node_build.h"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/tlist.h"
#include "rewrite/rewriteManip.h"
}

#include <string>
#include <vector>

namespace dxpriv::pg {

namespace {

bool
has_marker(Node *node, void *ctx)
{
	if (!node)
		return false;
	if (IsA(node, Aggref) && castNode(Aggref, node)->agglevelsup == 0 &&
	    static_cast<const ExtensionObjects *>(ctx)->is_marker(castNode(Aggref, node)->aggfnoid))
		return true;
	if (IsA(node, Query))
		return false; // only this level
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(has_marker), ctx);
}

// Whether q is a release level: a dx aggregate here, or (analysts) a protected table in q's FROM.
bool
releases_here(Query *q, const ExtensionObjects &ext, const AnalystContext *ac)
{
	if (has_marker((Node *) q->targetList, const_cast<ExtensionObjects *>(&ext)) ||
	    has_marker(q->havingQual, const_cast<ExtensionObjects *>(&ext)))
		return true;
	if (!ac)
		return false;
	ListCell *lc;
	foreach (lc, q->rtable) {
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
		if (rte->rtekind == RTE_RELATION && ac->is_protected(rte->relid))
			return true;
	}
	return false;
}

struct Split {
	List *inner_tlist = NIL;             // of the release: GROUP BY keys, then aggregates
	std::vector<Node *> keys;            // GROUP BY key expressions, inner columns 1..keys.size()
	bool raw = false;                    // a column of q's FROM outside a key or an aggregate
};

Var *
inner_column(Split &s, int attno)
{
	TargetEntry *tle = castNode(TargetEntry, list_nth(s.inner_tlist, attno - 1));
	return makeVar(1, attno, exprType((Node *) tle->expr), exprTypmod((Node *) tle->expr),
	               exprCollation((Node *) tle->expr), 0);
}

// An aggregate (or GROUPING()) of q's level as a column of the release: one column per distinct one.
Var *
aggregate_column(Split &s, Node *agg)
{
	int attno = 0;
	ListCell *lc;
	foreach (lc, s.inner_tlist) {
		attno++;
		if (attno > static_cast<int>(s.keys.size()) && equal(lfirst_node(TargetEntry, lc)->expr, agg))
			return inner_column(s, attno);
	}
	const int next = list_length(s.inner_tlist) + 1;
	const std::string name = "dx_agg" + std::to_string(next);
	s.inner_tlist = lappend(s.inner_tlist, makeTargetEntry((Expr *) copy_node(agg), next, pstrdup(name.c_str()), false));
	return inner_column(s, next);
}

Node *
window_outer_mutator(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	auto *s = static_cast<Split *>(ctx);
	for (std::size_t i = 0; i < s->keys.size(); ++i)
		if (equal(node, s->keys[i]))
			return (Node *) inner_column(*s, static_cast<int>(i) + 1);
	if (IsA(node, Aggref) && castNode(Aggref, node)->agglevelsup == 0)
		return (Node *) aggregate_column(*s, node);
	if (IsA(node, GroupingFunc) && castNode(GroupingFunc, node)->agglevelsup == 0)
		return (Node *) aggregate_column(*s, node);
	if (IsA(node, Var) && castNode(Var, node)->varlevelsup == 0) {
		s->raw = true; // a stored row's column would reach the window
		return node;
	}
	if (IsA(node, SubLink) || IsA(node, Query)) {
		s->raw = true;
		return node;
	}
	return expression_tree_mutator(node, reinterpret_cast<Node *(*) ()>(window_outer_mutator), ctx);
}

} // namespace

// See window_split.h.
Query *
extract_release(Query *q, List *rtable, FromExpr *jointree, int rtindex, bool &raw)
{
	Split s;
	// the release: FROM, WHERE, q's GROUP BY and HAVING, with the GROUP BY keys as its first columns
	ListCell *lc;
	foreach (lc, q->groupClause) {
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		TargetEntry *key = get_sortgroupclause_tle(sgc, q->targetList);
		const int next = list_length(s.inner_tlist) + 1;
		const std::string name = key->resname ? std::string(key->resname) : "dx_key" + std::to_string(next);
		TargetEntry *copy = makeTargetEntry((Expr *) copy_node(key->expr), next, pstrdup(name.c_str()), false);
		copy->ressortgroupref = key->ressortgroupref;
		s.inner_tlist = lappend(s.inner_tlist, copy);
		s.keys.push_back((Node *) key->expr);
	}
	List *outer_tlist = (List *) window_outer_mutator((Node *) copy_node(q->targetList), &s);
	raw = s.raw;
	if (raw)
		return nullptr;
	// the outer level reads the release at range-table index rtindex
	if (rtindex != 1)
		pg_call([&] { ChangeVarNodes((Node *) outer_tlist, 1, rtindex, 0); });

	Query *inner = makeNode(Query);
	inner->commandType = CMD_SELECT;
	inner->querySource = QSRC_ORIGINAL;
	inner->canSetTag = true;
	inner->rtable = rtable;
	inner->jointree = jointree;
	inner->targetList = s.inner_tlist;
	inner->groupClause = q->groupClause;
	inner->groupingSets = q->groupingSets;
	inner->groupDistinct = q->groupDistinct;
	inner->havingQual = q->havingQual;
	inner->hasAggs = true;
	inner->constraintDeps = q->constraintDeps;

	q->targetList = outer_tlist;
	q->groupClause = NIL;
	q->groupingSets = NIL;
	q->groupDistinct = false;
	q->havingQual = nullptr;
	q->hasAggs = false;
	q->constraintDeps = NIL;
	return inner;
}

// See window_split.h.
RangeTblEntry *
release_rte(Query *inner)
{
	List *colnames = NIL;
	ListCell *lc;
	foreach (lc, inner->targetList)
		colnames = lappend(colnames, makeString(pstrdup(lfirst_node(TargetEntry, lc)->resname)));
	return subquery_rte(inner, "dx_release", colnames);
}

// See window_split.h.
bool
split_window_level(Query *q, const ExtensionObjects &ext, const AnalystContext *ac)
{
	if (q->commandType != CMD_SELECT || !q->hasAggs || !q->hasWindowFuncs || q->cteList || q->hasSubLinks ||
	    q->setOperations || q->hasTargetSRFs || q->rowMarks || q->utilityStmt || !releases_here(q, ext, ac))
		return false;
	bool raw = false;
	Query *inner = extract_release(q, q->rtable, q->jointree, 1, raw);
	if (raw) {
		const int code = ac ? ERRCODE_INSUFFICIENT_PRIVILEGE : ERRCODE_FEATURE_NOT_SUPPORTED;
		fail(code, "a window function next to dx aggregates can read only GROUP BY keys and aggregates",
		     "Windows run over the released rows: PARTITION BY and ORDER BY a GROUP BY key or an aggregate, e.g. "
		     "SELECT k, count(*), sum(count(*)) OVER (ORDER BY k) FROM t GROUP BY k.");
	}
	RangeTblRef *ref = makeNode(RangeTblRef);
	ref->rtindex = 1;
	// the post-processing level: q's windows, ORDER BY, LIMIT and DISTINCT over the released columns
	q->rtable = list_make1(release_rte(inner));
	q->jointree = makeFromExpr(list_make1(ref), nullptr);
	return true;
}

} // namespace dxpriv::pg
