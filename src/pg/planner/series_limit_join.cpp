// Superset's series-limit join answered as two releases joined on released keys (series_limit_join.h).
#include "pg/planner/series_limit_join.h"

#include "pg/guard.h"
#include "pg/node_build.h"
#include "pg/planner/release_wrappers.h"
#include "pg/planner/window_split.h"

extern "C" {
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
}

#include <vector>

namespace dxpriv::pg {

namespace {

struct VarUse {
	int varno;
	bool found = false;
};

bool
uses_varno(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *u = static_cast<VarUse *>(ctx);
	if (IsA(node, Var) && castNode(Var, node)->varlevelsup == 0 && static_cast<int>(castNode(Var, node)->varno) == u->varno)
		return true;
	if (IsA(node, Query))
		return false;
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(uses_varno), ctx);
}

bool
reads(Node *node, int varno)
{
	VarUse u{varno};
	return uses_varno(node, &u);
}

// Any Var of this level that is not of `a` or `b`.
struct OtherVars {
	int a, b;
};
bool
other_var(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *o = static_cast<OtherVars *>(ctx);
	if (IsA(node, Var) && castNode(Var, node)->varlevelsup == 0) {
		const int v = static_cast<int>(castNode(Var, node)->varno);
		return v != o->a && v != o->b;
	}
	if (IsA(node, Query))
		return false;
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(other_var), ctx);
}

void
flatten_and(Node *n, std::vector<Node *> &out)
{
	if (!n)
		return;
	if (IsA(n, BoolExpr) && castNode(BoolExpr, n)->boolop == AND_EXPR) {
		ListCell *lc;
		foreach (lc, castNode(BoolExpr, n)->args)
			flatten_and((Node *) lfirst(lc), out);
		return;
	}
	if (IsA(n, List)) {
		ListCell *lc;
		foreach (lc, (List *) n)
			flatten_and((Node *) lfirst(lc), out);
		return;
	}
	out.push_back(n);
}

// Rewrites one key equality: the key expression (P's side) becomes the release's column, S's Vars
// move to range-table index 2.
struct KeyRewrite {
	std::vector<Node *> keys; // q's GROUP BY key expressions (P numbered 1), release columns 1..n
	List *inner_tlist;
	int s_varno;
	bool bad = false;
};

Node *
key_mutator(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	auto *k = static_cast<KeyRewrite *>(ctx);
	for (std::size_t i = 0; i < k->keys.size(); ++i)
		if (equal(node, k->keys[i])) {
			TargetEntry *tle = castNode(TargetEntry, list_nth(k->inner_tlist, static_cast<int>(i)));
			return (Node *) makeVar(1, static_cast<AttrNumber>(i + 1), exprType((Node *) tle->expr),
			                        exprTypmod((Node *) tle->expr), exprCollation((Node *) tle->expr), 0);
		}
	if (IsA(node, Var) && castNode(Var, node)->varlevelsup == 0) {
		Var *v = copy_node(castNode(Var, node));
		if (static_cast<int>(v->varno) != k->s_varno) {
			k->bad = true; // a column of P that is no GROUP BY key
			return node;
		}
		v->varno = 2;
		v->varnosyn = 2;
		return (Node *) v;
	}
	return expression_tree_mutator(node, reinterpret_cast<Node *(*) ()>(key_mutator), ctx);
}

} // namespace

// See series_limit_join.h.
bool
split_series_limit_join(Query *q, const ExtensionObjects &ext, const AnalystContext *ac)
{
	if (q->commandType != CMD_SELECT || !q->hasAggs || q->hasWindowFuncs || q->groupingSets || q->cteList ||
	    q->hasSubLinks || q->setOperations || q->hasTargetSRFs || q->rowMarks || q->utilityStmt || !q->groupClause)
		return false;
	// the FROM: P, S and (for JOIN ... ON) their join entry
	int p = 0, s = 0, j = 0, index = 0;
	ListCell *lc;
	foreach (lc, q->rtable) {
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
		index++;
		if (rte->rtekind == RTE_RELATION && !p)
			p = index;
		else if (rte->rtekind == RTE_SUBQUERY && !s && !rte->lateral)
			s = index;
		else if (rte->rtekind == RTE_JOIN && !j)
			j = index;
		else
			return false;
	}
	if (!p || !s)
		return false;
	RangeTblEntry *prte = rt_fetch(p, q->rtable);
	RangeTblEntry *srte = rt_fetch(s, q->rtable);
	if (!analysis::is_release_level(q, ext, ac))
		return false;
	if (!analysis::is_release_level(srte->subquery, ext, ac))
		return false;
	std::vector<Node *> conds;
	FromExpr *from = q->jointree;
	if (list_length(from->fromlist) == 1 && IsA(linitial(from->fromlist), JoinExpr)) {
		JoinExpr *je = linitial_node(JoinExpr, from->fromlist);
		if (je->jointype != JOIN_INNER || !je->larg || !je->rarg || !IsA(je->larg, RangeTblRef) ||
		    !IsA(je->rarg, RangeTblRef) || je->usingClause || je->isNatural || !j)
			return false;
		flatten_and(je->quals, conds);
	} else if (list_length(from->fromlist) == 2 && IsA(linitial(from->fromlist), RangeTblRef) &&
	           IsA(lsecond(from->fromlist), RangeTblRef) && !j) {
		// a comma join
	} else {
		return false;
	}
	flatten_and(from->quals, conds);
	// q's own expressions read P (numbered 1 in the release) and never S or the join entry
	OtherVars only_p{p, p};
	if (expression_tree_walker((Node *) q->targetList, reinterpret_cast<bool (*)()>(other_var), &only_p) ||
	    other_var(q->havingQual, &only_p))
		return false;
	std::vector<Node *> p_conds, key_conds;
	OtherVars p_or_s{p, s};
	for (Node *c : conds) {
		if (other_var(c, &p_or_s))
			return false; // the join entry's merged columns, or anything else
		if (!reads(c, s))
			p_conds.push_back(c);
		else if (IsA(c, OpExpr) && list_length(castNode(OpExpr, c)->args) == 2)
			key_conds.push_back(c);
		else
			return false;
	}
	if (key_conds.empty())
		return false;

	// renumber P to 1 in what moves into the release
	Query *probe = copy_node(q);
	if (p != 1) {
		pg_call([&] {
			ChangeVarNodes((Node *) probe->targetList, p, 1, 0);
			ChangeVarNodes(probe->havingQual, p, 1, 0);
		});
	}
	List *pquals = NIL;
	for (Node *c : p_conds) {
		Node *copy = copy_node(c);
		if (p != 1)
			pg_call([&] { ChangeVarNodes(copy, p, 1, 0); });
		pquals = lappend(pquals, copy);
	}
	std::vector<Node *> keys;
	foreach (lc, probe->groupClause)
		keys.push_back((Node *) get_sortgroupclause_tle(lfirst_node(SortGroupClause, lc), probe->targetList)->expr);
	RangeTblEntry *p_copy = copy_node(prte);
	RangeTblRef *pref = makeNode(RangeTblRef);
	pref->rtindex = 1;
	FromExpr *pjoin = makeFromExpr(list_make1(pref),
	                               pquals == NIL ? nullptr
	                               : list_length(pquals) == 1 ? (Node *) linitial(pquals)
	                                                          : (Node *) makeBoolExpr(AND_EXPR, pquals, -1));
	bool raw = false;
	Query *inner = extract_release(probe, list_make1(p_copy), pjoin, 1, raw);
	if (raw || !inner)
		return false;
	// the join conditions over the release's key columns and S (now at index 2)
	KeyRewrite kr{keys, inner->targetList, s};
	List *join_quals = NIL;
	for (Node *c : key_conds) {
		Node *copy = copy_node(c);
		if (p != 1)
			pg_call([&] { ChangeVarNodes(copy, p, 1, 0); });
		Node *m = key_mutator(copy, &kr);
		if (kr.bad || !reads(m, 1) || !reads(m, 2))
			return false; // `<P column that is no GROUP BY key> = S.col`: not a filter on released keys
		join_quals = lappend(join_quals, m);
	}
	RangeTblEntry *s_copy = copy_node(srte);
	RangeTblRef *r1 = makeNode(RangeTblRef), *r2 = makeNode(RangeTblRef);
	r1->rtindex = 1;
	r2->rtindex = 2;
	q->targetList = probe->targetList;
	q->groupClause = NIL;
	q->havingQual = nullptr;
	q->hasAggs = false;
	q->rtable = list_make2(release_rte(inner), s_copy);
	q->jointree = makeFromExpr(list_make2(r1, r2), list_length(join_quals) == 1 ? (Node *) linitial(join_quals)
	                                                                            : (Node *) makeBoolExpr(AND_EXPR, join_quals, -1));
	return true;
}

} // namespace dxpriv::pg
