// GROUPING SETS as a UNION ALL of grouped releases (grouping_sets.h).
#include "pg/planner/grouping_sets.h"

#include "pg/guard.h"
#include "pg/node_build.h"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_agg.h"
#include "parser/parse_node.h"
#include "parser/parse_relation.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
}

#include <algorithm>
#include <set>
#include <string>

namespace dxpriv::pg {

namespace {

constexpr int kMaxGroupingSets = 64;

struct SetContext {
	std::set<Index> refs; // the grouping set's sortgroup references
};

// GROUPING(a, b, ...) of one grouping set: bit i (from the left) set when argument i is not grouped.
Node *
grouping_mutator(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	auto *c = static_cast<SetContext *>(ctx);
	if (IsA(node, GroupingFunc)) {
		GroupingFunc *g = castNode(GroupingFunc, node);
		int32 value = 0;
		ListCell *lc;
		foreach (lc, g->refs)
			value = (value << 1) | (c->refs.count(lfirst_int(lc)) ? 0 : 1);
		return (Node *) int4_const(value);
	}
	return expression_tree_mutator(node, reinterpret_cast<Node *(*) ()>(grouping_mutator), ctx);
}

// The sortgroup references of one grouping set (an integer list of expand_grouping_sets).
std::set<Index>
set_refs(List *set)
{
	std::set<Index> refs;
	ListCell *r;
	foreach (r, set)
		refs.insert(static_cast<Index>(lfirst_int(r)));
	return refs;
}

// The grouped query of one grouping set.
Query *
branch_for_set(Query *q, const std::set<Index> &refs)
{
	Query *b = copy_node(q);
	b->groupingSets = NIL;
	b->groupDistinct = false;
	b->sortClause = NIL;
	b->limitCount = b->limitOffset = nullptr;
	b->limitOption = LIMIT_OPTION_COUNT;
	List *groups = NIL;
	ListCell *lc;
	foreach (lc, b->groupClause)
		if (refs.count(lfirst_node(SortGroupClause, lc)->tleSortGroupRef))
			groups = lappend(groups, lfirst(lc));
	b->groupClause = groups;
	SetContext ctx{refs};
	foreach (lc, b->targetList) {
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		bool key = false;
		ListCell *gc;
		foreach (gc, q->groupClause)
			key = key || lfirst_node(SortGroupClause, gc)->tleSortGroupRef == tle->ressortgroupref;
		if (key && !refs.count(tle->ressortgroupref)) { // a key outside this set: NULL in its rows
			Node *e = (Node *) tle->expr;
			tle->expr = (Expr *) makeNullConst(exprType(e), exprTypmod(e), exprCollation(e));
			tle->ressortgroupref = 0;
		} else {
			tle->expr = (Expr *) grouping_mutator((Node *) tle->expr, &ctx);
		}
	}
	b->havingQual = grouping_mutator(b->havingQual, &ctx);
	return b;
}

} // namespace

// See grouping_sets.h.
Query *
expand_grouping_sets_into_union(Query *q)
{
	if (q->commandType != CMD_SELECT || !q->groupingSets)
		return nullptr;
	List *sets = nullptr;
	pg_call([&] { sets = expand_grouping_sets(q->groupingSets, q->groupDistinct, kMaxGroupingSets + 1); });
	if (sets == NIL || list_length(sets) > kMaxGroupingSets) // NIL: over the limit given to expand_grouping_sets
		fail(ERRCODE_PROGRAM_LIMIT_EXCEEDED,
		     "GROUPING SETS, ROLLUP or CUBE with more than " + std::to_string(kMaxGroupingSets) +
		         " grouping sets cannot be used with dx aggregates",
		     "Every grouping set adds its groups to the cells the statement allocates together; split the query or use fewer keys.");
	// the ORDER BY must name output columns (it moves to the union)
	ListCell *lc;
	foreach (lc, q->sortClause) {
		TargetEntry *tle = get_sortgroupclause_tle(lfirst_node(SortGroupClause, lc), q->targetList);
		if (tle->resjunk)
			fail(ERRCODE_FEATURE_NOT_SUPPORTED,
			     "ORDER BY of a query with GROUPING SETS, ROLLUP or CUBE must name its output columns",
			     "Order by the output columns' positions or names, e.g. ORDER BY 1, 2.");
	}
	if (list_length(sets) == 1) { // GROUP BY () or one set: the grouped query itself, no union
		Query *only = branch_for_set(q, set_refs(linitial_node(List, sets)));
		only->sortClause = q->sortClause;
		only->limitCount = q->limitCount;
		only->limitOffset = q->limitOffset;
		only->limitOption = q->limitOption;
		return only;
	}
	ParseState *pstate = make_parsestate(nullptr);
	Query *top = makeNode(Query);
	top->commandType = CMD_SELECT;
	top->querySource = q->querySource;
	top->canSetTag = q->canSetTag;
	Node *setop = nullptr;
	Index rti = 0;
	foreach (lc, sets) {
		Query *branch = branch_for_set(q, set_refs(lfirst_node(List, lc)));
		pg_call([&] { addRangeTableEntryForSubquery(pstate, branch, makeAlias(("set" + std::to_string(rti + 1)).c_str(), NIL), false, false); });
		RangeTblRef *ref = makeNode(RangeTblRef);
		ref->rtindex = static_cast<int>(++rti);
		if (!setop) {
			setop = (Node *) ref;
			continue;
		}
		SetOperationStmt *u = makeNode(SetOperationStmt);
		u->op = SETOP_UNION;
		u->all = true;
		u->larg = setop;
		u->rarg = (Node *) ref;
		setop = (Node *) u;
	}
	top->rtable = pstate->p_rtable;
	top->jointree = makeFromExpr(NIL, nullptr);
	// output columns: the first branch's, through Vars of its range table entry
	List *types = NIL, *typmods = NIL, *collations = NIL;
	AttrNumber attno = 0;
	std::vector<std::pair<Index, Index>> sortrefs; // original ref -> top ref
	foreach (lc, q->targetList) {
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		if (tle->resjunk)
			continue;
		++attno;
		Node *e = (Node *) tle->expr;
		types = lappend_oid(types, exprType(e));
		typmods = lappend_int(typmods, exprTypmod(e));
		collations = lappend_oid(collations, exprCollation(e));
		Var *v = makeVar(1, attno, exprType(e), exprTypmod(e), exprCollation(e), 0);
		TargetEntry *out = makeTargetEntry((Expr *) v, attno, tle->resname ? pstrdup(tle->resname) : nullptr, false);
		top->targetList = lappend(top->targetList, out);
		if (tle->ressortgroupref)
			sortrefs.emplace_back(tle->ressortgroupref, static_cast<Index>(attno));
	}
	// every set operation node carries the column types
	for (Node *n = setop; n && IsA(n, SetOperationStmt); n = castNode(SetOperationStmt, n)->larg) {
		SetOperationStmt *u = castNode(SetOperationStmt, n);
		u->colTypes = types;
		u->colTypmods = typmods;
		u->colCollations = collations;
	}
	top->setOperations = setop;
	// ORDER BY and LIMIT apply to the union
	foreach (lc, q->sortClause) {
		SortGroupClause *s = copy_node(lfirst_node(SortGroupClause, lc));
		auto it = std::find_if(sortrefs.begin(), sortrefs.end(),
		                       [&](const std::pair<Index, Index> &p) { return p.first == s->tleSortGroupRef; });
		TargetEntry *out = castNode(TargetEntry, list_nth(top->targetList, static_cast<int>(it->second) - 1));
		out->ressortgroupref = it->second;
		s->tleSortGroupRef = it->second;
		top->sortClause = lappend(top->sortClause, s);
	}
	top->limitCount = q->limitCount;
	top->limitOffset = q->limitOffset;
	top->limitOption = q->limitOption;
	return top;
}

// See grouping_sets.h.
std::vector<Query *>
grouping_set_branches(Query *u)
{
	if (!u->setOperations)
		return {u};
	std::vector<Query *> out;
	ListCell *lc;
	foreach (lc, u->rtable)
		out.push_back(lfirst_node(RangeTblEntry, lc)->subquery);
	return out;
}

} // namespace dxpriv::pg
