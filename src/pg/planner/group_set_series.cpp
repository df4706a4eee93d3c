// Malloy's CROSS JOIN generate_series group_set pattern as one GROUPING SETS release (group_set_series.h).
#include "pg/planner/group_set_series.h"

#include "pg/guard.h"
#include "pg/node_build.h"
#include "pg/planner/release_wrappers.h"

extern "C" {
#include "catalog/pg_operator.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/clauses.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/fmgroids.h"
}

#include <set>
#include <vector>

namespace dxpriv::pg {

namespace {

constexpr int kMaxSeries = 31; // GROUPING() takes at most 31 arguments

struct SeriesVar {
	Index varno = 0;
};

// Whether node mentions the series column (a Var of its range-table entry, at this level).
bool
mentions_series(Node *node, void *ctx)
{
	if (!node)
		return false;
	if (IsA(node, Var)) {
		Var *v = castNode(Var, node);
		return v->varlevelsup == 0 && static_cast<Index>(v->varno) == static_cast<const SeriesVar *>(ctx)->varno;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(mentions_series), ctx);
}

// The series column itself (under no cast).
bool
is_series_var(Node *n, Index varno)
{
	return n && IsA(n, Var) && static_cast<Index>(castNode(Var, n)->varno) == varno && castNode(Var, n)->varlevelsup == 0 &&
	       castNode(Var, n)->varattno == 1;
}

// An int4 constant, not NULL.
bool
int4_value(Node *n, int &out)
{
	if (!n || !IsA(n, Const) || castNode(Const, n)->consttype != INT4OID || castNode(Const, n)->constisnull)
		return false;
	out = DatumGetInt32(castNode(Const, n)->constvalue);
	return true;
}

// `group_set = k` or `group_set IN (k, ...)` (int4 constants): the set of k; false for anything else.
bool
series_condition(Node *n, Index varno, std::set<int> &ks)
{
	if (IsA(n, OpExpr)) {
		OpExpr *op = castNode(OpExpr, n);
		int k = 0;
		if (op->opno != Int4EqualOperator || list_length(op->args) != 2 ||
		    !is_series_var((Node *) linitial(op->args), varno) || !int4_value((Node *) lsecond(op->args), k))
			return false;
		ks.insert(k);
		return true;
	}
	if (IsA(n, ScalarArrayOpExpr)) {
		ScalarArrayOpExpr *op = castNode(ScalarArrayOpExpr, n);
		if (op->opno != Int4EqualOperator || !op->useOr || list_length(op->args) != 2 ||
		    !is_series_var((Node *) linitial(op->args), varno) || !IsA(lsecond(op->args), ArrayExpr))
			return false;
		ListCell *lc;
		foreach (lc, castNode(ArrayExpr, lsecond(op->args))->elements) {
			int k = 0;
			if (!int4_value((Node *) lfirst(lc), k))
				return false;
			ks.insert(k);
		}
		return !ks.empty();
	}
	return false;
}

// `CASE WHEN <series condition> THEN <result> END` (no ELSE): the condition's set and the result.
bool
series_case(Node *n, Index varno, std::set<int> &ks, Expr *&result)
{
	if (!n || !IsA(n, CaseExpr))
		return false;
	CaseExpr *c = castNode(CaseExpr, n);
	if (c->arg || list_length(c->args) != 1 || (c->defresult && !(IsA(c->defresult, Const) &&
	                                                             castNode(Const, c->defresult)->constisnull)))
		return false;
	CaseWhen *w = linitial_node(CaseWhen, c->args);
	if (!series_condition((Node *) w->expr, varno, ks) || exprType((Node *) w->result) != c->casetype)
		return false;
	result = w->result;
	return true;
}

// int4 equality g = value.
Expr *
int4_eq(Expr *g, int32 value)
{
	OpExpr *op = castNode(OpExpr, make_opclause(Int4EqualOperator, BOOLOID, false, g, (Expr *) int4_const(value),
	                                            InvalidOid, InvalidOid));
	op->opfuncid = F_INT4EQ;
	return (Expr *) op;
}

// CASE WHEN g = when[0] THEN then[0] ... END of type (typ, typmod, collation).
Expr *
case_of(Expr *g, const std::vector<int32> &when, const std::vector<Expr *> &then, Oid typ, Oid coll)
{
	CaseExpr *c = makeNode(CaseExpr);
	c->casetype = typ;
	c->casecollid = coll;
	for (size_t i = 0; i < when.size(); ++i) {
		CaseWhen *w = makeNode(CaseWhen);
		w->expr = int4_eq(copy_node(g), when[i]);
		w->result = copy_node(then[i]);
		w->location = -1;
		c->args = lappend(c->args, w);
	}
	c->defresult = (Expr *) makeNullConst(typ, -1, coll);
	c->location = -1;
	return (Expr *) c;
}

enum class Role { Series, Key, Aggregate };

struct Column {
	Role role;
	std::set<int> ks;      // the k for which the column is shown (Key, Aggregate); empty: every k
	Expr *expr = nullptr;  // the key's expression or the aggregate expression
	int key = -1;          // Key: index among the keys
	int inner = 0;         // Key, Aggregate: the inner column number
};

} // namespace

// See group_set_series.h.
bool
merge_group_set_series(Query *q, const ExtensionObjects &ext, const AnalystContext *ac)
{
	if (q->commandType != CMD_SELECT || q->setOperations || q->cteList || q->hasSubLinks || !q->hasAggs ||
	    q->hasWindowFuncs || q->rowMarks || q->utilityStmt || q->havingQual || q->distinctClause ||
	    q->groupingSets || q->groupDistinct || q->hasTargetSRFs || !q->groupClause)
		return false;
	// the range table: one relation, one generate_series, at most one cross join of the two
	Index rel = 0, series = 0;
	int joins = 0;
	ListCell *lc;
	Index rti = 0;
	foreach (lc, q->rtable) {
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
		++rti;
		if (rte->rtekind == RTE_RELATION && !rel)
			rel = rti;
		else if (rte->rtekind == RTE_FUNCTION && !series)
			series = rti;
		else if (rte->rtekind == RTE_JOIN && rte->jointype == JOIN_INNER && !joins)
			++joins;
		else
			return false;
	}
	if (!rel || !series)
		return false;
	RangeTblEntry *srte = rt_fetch(series, q->rtable);
	if (srte->funcordinality || srte->lateral || list_length(srte->functions) != 1)
		return false;
	Node *fexpr = linitial_node(RangeTblFunction, srte->functions)->funcexpr;
	if (!IsA(fexpr, FuncExpr))
		return false;
	FuncExpr *gs = castNode(FuncExpr, fexpr);
	int lo = -1, hi = -1, step = 1;
	if ((gs->funcid != F_GENERATE_SERIES_INT4_INT4 && gs->funcid != F_GENERATE_SERIES_INT4_INT4_INT4) ||
	    !int4_value((Node *) linitial(gs->args), lo) || !int4_value((Node *) lsecond(gs->args), hi) ||
	    (list_length(gs->args) == 3 && !int4_value((Node *) lthird(gs->args), step)) || lo != 0 || step != 1 ||
	    hi < 1 || hi >= kMaxSeries)
		return false;
	// the join tree: R and the series side by side or as a cross join, no condition naming the series
	List *from = q->jointree->fromlist;
	if (list_length(from) == 1 && IsA(linitial(from), JoinExpr)) {
		JoinExpr *j = linitial_node(JoinExpr, from);
		if (j->jointype != JOIN_INNER || j->quals || j->usingClause || !IsA(j->larg, RangeTblRef) ||
		    !IsA(j->rarg, RangeTblRef))
			return false;
		std::set<int> sides{castNode(RangeTblRef, j->larg)->rtindex, castNode(RangeTblRef, j->rarg)->rtindex};
		if (sides != std::set<int>{static_cast<int>(rel), static_cast<int>(series)})
			return false;
	} else if (list_length(from) == 2 && !joins && IsA(linitial(from), RangeTblRef) && IsA(lsecond(from), RangeTblRef)) {
		std::set<int> sides{castNode(RangeTblRef, linitial(from))->rtindex, castNode(RangeTblRef, lsecond(from))->rtindex};
		if (sides != std::set<int>{static_cast<int>(rel), static_cast<int>(series)})
			return false;
	} else {
		return false;
	}
	Query *work = copy_node(q);
	pg_call([&] {
		work->targetList = (List *) flatten_join_alias_vars(work, (Node *) work->targetList);
		work->jointree->quals = flatten_join_alias_vars(work, work->jointree->quals);
	});
	SeriesVar sv{series};
	if (mentions_series(work->jointree->quals, &sv))
		return false;
	// the columns
	std::vector<Column> cols;
	std::vector<int> key_cols; // column indexes of the keys
	bool series_grouped = false;
	foreach (lc, work->targetList) {
		TargetEntry *t = lfirst_node(TargetEntry, lc);
		const bool grouped =
		    t->ressortgroupref && pg_value([&] { return get_sortgroupref_clause_noerr(t->ressortgroupref, work->groupClause); });
		Column c;
		Expr *result = nullptr;
		if (is_series_var((Node *) t->expr, series)) {
			c.role = Role::Series;
			series_grouped = series_grouped || grouped;
		} else if (series_case((Node *) t->expr, series, c.ks, result)) {
			if (mentions_series((Node *) result, &sv))
				return false;
			c.expr = result;
			if (grouped) {
				if (pg_value([&] { return contain_agg_clause((Node *) result); }))
					return false;
				c.role = Role::Key;
				for (int other : key_cols)
					if (equal(cols[other].expr, result))
						return false;
				c.key = static_cast<int>(key_cols.size());
				key_cols.push_back(static_cast<int>(cols.size()));
			} else {
				c.role = Role::Aggregate;
			}
		} else if (!grouped && !mentions_series((Node *) t->expr, &sv)) {
			c.role = Role::Aggregate; // shown for every k
			c.expr = t->expr;
		} else {
			return false;
		}
		cols.push_back(c);
	}
	if (!series_grouped || key_cols.empty())
		return false;
	// every GROUP BY item is the series or a key (a key twice in GROUP BY is one key)
	foreach (lc, work->groupClause) {
		TargetEntry *t = pg_value([&] { return get_sortgroupclause_tle(lfirst_node(SortGroupClause, lc), work->targetList); });
		const Column &c = cols[t->resno - 1];
		if (c.role == Role::Aggregate)
			return false;
	}
	// the key set of each k, pairwise different
	std::vector<int32> masks; // GROUPING(keys) of each k's set
	std::set<int32> seen;
	const int nkeys = static_cast<int>(key_cols.size());
	for (int k = 0; k <= hi; ++k) {
		int32 mask = 0;
		for (int j = 0; j < nkeys; ++j)
			mask = (mask << 1) | (cols[key_cols[j]].ks.count(k) ? 0 : 1);
		if (!seen.insert(mask).second)
			return false;
		masks.push_back(mask);
	}
	// the inner release: keys, aggregates, GROUPING(keys); R is its only range-table entry
	Query *inner = copy_node(work);
	inner->rtable = list_make1(copy_node(rt_fetch(rel, work->rtable)));
	RangeTblRef *rref = makeNode(RangeTblRef);
	rref->rtindex = 1;
	inner->jointree = makeFromExpr(list_make1(rref), copy_node(work->jointree->quals));
	inner->sortClause = NIL;
	inner->limitCount = inner->limitOffset = nullptr;
	inner->limitOption = LIMIT_OPTION_COUNT;
	List *tlist = NIL, *group_clause = NIL, *colnames = NIL, *refs = NIL, *args = NIL;
	int next = 1;
	for (int j = 0; j < nkeys; ++j) {
		Column &c = cols[key_cols[j]];
		TargetEntry *orig = castNode(TargetEntry, list_nth(work->targetList, key_cols[j]));
		SortGroupClause *sgc = copy_node(pg_value([&] { return get_sortgroupref_clause(orig->ressortgroupref, work->groupClause); }));
		c.inner = next;
		TargetEntry *t = makeTargetEntry(copy_node(c.expr), next, pstrdup(orig->resname ? orig->resname : "key"), false);
		t->ressortgroupref = next;
		sgc->tleSortGroupRef = next;
		group_clause = lappend(group_clause, sgc);
		tlist = lappend(tlist, t);
		colnames = lappend(colnames, makeString(pstrdup(t->resname)));
		refs = lappend_int(refs, next);
		args = lappend(args, copy_node(c.expr));
		++next;
	}
	for (Column &c : cols)
		if (c.role == Role::Aggregate) {
			c.inner = next;
			tlist = lappend(tlist, makeTargetEntry(copy_node(c.expr), next, pstrdup("agg"), false));
			colnames = lappend(colnames, makeString(pstrdup("agg")));
			++next;
		}
	GroupingFunc *gf = makeNode(GroupingFunc);
	gf->args = args;
	gf->refs = refs;
	gf->agglevelsup = 0;
	gf->location = -1;
	const int gcol = next;
	tlist = lappend(tlist, makeTargetEntry((Expr *) gf, gcol, pstrdup("dx_group_set"), false));
	colnames = lappend(colnames, makeString(pstrdup("dx_group_set")));
	inner->targetList = tlist;
	inner->groupClause = group_clause;
	List *sets = NIL;
	for (int k = 0; k <= hi; ++k) {
		List *set = NIL;
		for (int j = 0; j < nkeys; ++j)
			if (cols[key_cols[j]].ks.count(k))
				set = lappend_int(set, cols[key_cols[j]].inner);
		sets = lappend(sets, pg_value([&] {
			               return set ? makeGroupingSet(GROUPING_SET_SIMPLE, set, -1)
			                          : makeGroupingSet(GROUPING_SET_EMPTY, NIL, -1);
		               }));
	}
	inner->groupingSets = list_make1(pg_value([&] { return makeGroupingSet(GROUPING_SET_SETS, sets, -1); }));
	if (rel != 1)
		pg_call([&] { ChangeVarNodes((Node *) inner, rel, 1, 0); });
	if (!analysis::is_release_level(inner, ext, ac))
		return false;

	// q reads the inner release: the series from GROUPING(keys), aggregates shown for their k only
	auto var_of = [&](int attno, Expr *like) {
		return (Expr *) makeVar(1, attno, exprType((Node *) like), exprTypmod((Node *) like),
		                        exprCollation((Node *) like), 0);
	};
	Expr *g = (Expr *) makeVar(1, gcol, INT4OID, -1, InvalidOid, 0);
	List *out = NIL;
	int i = 0;
	foreach (lc, work->targetList) {
		TargetEntry *t = copy_node(lfirst_node(TargetEntry, lc));
		const Column &c = cols[i++];
		if (c.role == Role::Series) {
			std::vector<int32> when;
			std::vector<Expr *> then;
			for (int k = 0; k <= hi; ++k) {
				when.push_back(masks[k]);
				then.push_back((Expr *) int4_const(k));
			}
			t->expr = case_of(g, when, then, INT4OID, InvalidOid);
		} else if (c.role == Role::Key) {
			t->expr = var_of(c.inner, c.expr); // NULL where the key is not grouped
		} else {
			Expr *v = var_of(c.inner, c.expr);
			if (c.ks.empty()) {
				t->expr = v;
			} else {
				std::vector<int32> when;
				std::vector<Expr *> then;
				for (int k : c.ks)
					if (k >= 0 && k <= hi) {
						when.push_back(masks[k]);
						then.push_back(v);
					}
				t->expr = when.empty() ? (Expr *) makeNullConst(exprType((Node *) v), exprTypmod((Node *) v),
				                                                exprCollation((Node *) v))
				                       : case_of(g, when, then, exprType((Node *) v), exprCollation((Node *) v));
			}
		}
		out = lappend(out, t);
	}
	RangeTblEntry *rte = subquery_rte(inner, "dx_group_set", colnames);
	RangeTblRef *ref = makeNode(RangeTblRef);
	ref->rtindex = 1;
	q->targetList = out;
	q->rtable = list_make1(rte);
	q->jointree = makeFromExpr(list_make1(ref), nullptr);
	q->groupClause = NIL;
	q->hasAggs = false;
	return true;
}

} // namespace dxpriv::pg
