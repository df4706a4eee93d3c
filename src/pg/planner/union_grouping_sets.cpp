// A UNION ALL of a total and its parts merged into one GROUPING SETS release (union_grouping_sets.h).
#include "pg/planner/union_grouping_sets.h"

#include "pg/guard.h"
#include "pg/node_build.h"
#include "pg/planner/release_wrappers.h"
#include "pg/planner/window_split.h"

extern "C" {
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
}

#include <set>
#include <vector>

namespace dxpriv::pg {

namespace {

// The leaves (range-table indexes) of a tree of UNION ALL nodes; false for anything else.
bool
union_all_leaves(Node *n, std::vector<int> &out)
{
	if (IsA(n, RangeTblRef)) {
		out.push_back(castNode(RangeTblRef, n)->rtindex);
		return true;
	}
	if (!IsA(n, SetOperationStmt))
		return false;
	SetOperationStmt *s = castNode(SetOperationStmt, n);
	return s->op == SETOP_UNION && s->all && union_all_leaves(s->larg, out) && union_all_leaves(s->rarg, out);
}

// A NULL constant, possibly under casts.
bool
is_null_const(Node *n)
{
	while (n && (IsA(n, RelabelType) || IsA(n, CoerceViaIO) || IsA(n, FuncExpr))) {
		if (IsA(n, RelabelType))
			n = (Node *) castNode(RelabelType, n)->arg;
		else if (IsA(n, CoerceViaIO))
			n = (Node *) castNode(CoerceViaIO, n)->arg;
		else if (list_length(castNode(FuncExpr, n)->args) >= 1 &&
		         castNode(FuncExpr, n)->funcformat != COERCE_EXPLICIT_CALL)
			n = (Node *) linitial(castNode(FuncExpr, n)->args);
		else
			return false;
	}
	return n && IsA(n, Const) && castNode(Const, n)->constisnull;
}

} // namespace

// See union_grouping_sets.h.
bool
merge_union_into_grouping_sets(Query *q, const ExtensionObjects &ext, const AnalystContext *ac)
{
	if (q->commandType != CMD_SELECT || !q->setOperations || q->cteList || q->hasSubLinks || q->hasAggs ||
	    q->hasWindowFuncs || q->rowMarks || q->utilityStmt)
		return false;
	std::vector<int> leaves;
	if (!union_all_leaves(q->setOperations, leaves) || leaves.size() < 2)
		return false;
	std::vector<Query *> branches;
	for (int rti : leaves) {
		RangeTblEntry *rte = rt_fetch(rti, q->rtable);
		if (rte->rtekind != RTE_SUBQUERY)
			return false;
		Query *b = rte->subquery;
		if (b->commandType != CMD_SELECT || !b->hasAggs || b->havingQual || b->sortClause || b->limitCount ||
		    b->limitOffset || b->distinctClause || b->hasWindowFuncs || b->hasSubLinks || b->groupingSets ||
		    b->setOperations || b->cteList || b->hasTargetSRFs || b->rowMarks || list_length(b->rtable) != 1 ||
		    linitial_node(RangeTblEntry, b->rtable)->rtekind != RTE_RELATION ||
		    !analysis::is_release_level(b, ext, ac))
			return false;
		branches.push_back(b);
	}
	Query *first = branches.front();
	const Oid relid = linitial_node(RangeTblEntry, first->rtable)->relid;
	const int width = list_length(first->targetList);
	for (Query *b : branches)
		if (linitial_node(RangeTblEntry, b->rtable)->relid != relid || !equal(b->jointree, first->jointree) ||
		    list_length(b->targetList) != width)
			return false;
	// column by column: a GROUP BY key (or NULL) in every branch, or the same aggregate expression
	List *tlist = NIL, *group_clause = NIL;
	std::vector<std::vector<int>> branch_keys(branches.size());
	for (int i = 0; i < width; ++i) {
		TargetEntry *key = nullptr;
		SortGroupClause *key_sgc = nullptr;
		bool aggregate = false;
		for (size_t bi = 0; bi < branches.size(); ++bi) {
			TargetEntry *t = castNode(TargetEntry, list_nth(branches[bi]->targetList, i));
			if (t->resjunk)
				return false;
			if (t->ressortgroupref && pg_value([&] {
				    return get_sortgroupref_clause_noerr(t->ressortgroupref, branches[bi]->groupClause);
			    })) {
				if (key && !equal(key->expr, t->expr))
					return false;
				if (!key) {
					key = t;
					key_sgc = pg_value([&] { return get_sortgroupref_clause(t->ressortgroupref, branches[bi]->groupClause); });
				}
				branch_keys[bi].push_back(i + 1);
			} else if (!is_null_const((Node *) t->expr)) {
				aggregate = true;
			}
		}
		TargetEntry *out = nullptr;
		if (key) {
			for (size_t bi = 0; bi < branches.size(); ++bi) { // the others have NULL there
				TargetEntry *t = castNode(TargetEntry, list_nth(branches[bi]->targetList, i));
				if (!equal(t->expr, key->expr) && !is_null_const((Node *) t->expr))
					return false;
			}
			out = makeTargetEntry((Expr *) copy_node(key->expr), i + 1, key->resname, false);
			out->ressortgroupref = i + 1;
			SortGroupClause *sgc = copy_node(key_sgc);
			sgc->tleSortGroupRef = i + 1;
			group_clause = lappend(group_clause, sgc);
		} else {
			if (!aggregate)
				return false;
			TargetEntry *t0 = castNode(TargetEntry, list_nth(first->targetList, i));
			for (Query *b : branches)
				if (!equal(castNode(TargetEntry, list_nth(b->targetList, i))->expr, t0->expr))
					return false;
			out = makeTargetEntry((Expr *) copy_node(t0->expr), i + 1, t0->resname, false);
		}
		tlist = lappend(tlist, out);
	}
	// each branch groups by exactly its key columns, and no two branches by the same ones
	std::set<std::vector<int>> seen;
	List *sets = NIL;
	for (size_t bi = 0; bi < branches.size(); ++bi) {
		if (list_length(branches[bi]->groupClause) != static_cast<int>(branch_keys[bi].size()) ||
		    !seen.insert(branch_keys[bi]).second)
			return false;
		List *refs = NIL;
		for (int k : branch_keys[bi])
			refs = lappend_int(refs, k);
		sets = lappend(sets, pg_value([&] {
			               return refs ? makeGroupingSet(GROUPING_SET_SIMPLE, refs, -1)
			                           : makeGroupingSet(GROUPING_SET_EMPTY, NIL, -1);
		               }));
	}
	Query *merged = copy_node(first);
	merged->targetList = tlist;
	merged->groupClause = group_clause;
	merged->groupingSets = list_make1(pg_value([&] { return makeGroupingSet(GROUPING_SET_SETS, sets, -1); }));

	// q reads the merged release in place of its set operation
	int leftmost = leaves.front();
	RangeTblEntry *rte = subquery_rte(merged, "dx_union", NIL);
	rte->eref = copy_node(rt_fetch(leftmost, q->rtable)->eref); // the set operation's own column names
	RangeTblRef *ref = makeNode(RangeTblRef);
	ref->rtindex = 1;
	if (leftmost != 1)
		pg_call([&] { ChangeVarNodes((Node *) q->targetList, leftmost, 1, 0); });
	q->rtable = list_make1(rte);
	q->jointree = makeFromExpr(list_make1(ref), nullptr);
	q->setOperations = nullptr;
	return true;
}

} // namespace dxpriv::pg
