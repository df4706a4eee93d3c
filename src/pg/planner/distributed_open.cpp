// Open GROUP BY keys on Citus tables: partial counts and sums per candidate on the workers, selection and noise on the coordinator.
#include "pg/planner/distributed_open.h"

#include "pg/planner/distributed_linear.h"
#include "pg/planner/distributed_nodes.h"
#include "pg/contract/param_consts.h"
#include "pg/guard.h"
#include "pg/node_build.h"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/tlist.h"
#include "parser/parse_oper.h"
#include "utils/fmgroids.h"
}

#include <string>
#include <vector>

namespace dxpriv::pg::dist {

namespace {

// Finds the dx._partition_select Aggref of a level's HAVING (not inside sublinks' queries).
struct SelectionSearch {
	Oid fn;
	Aggref *found = nullptr;
};

bool
find_selection(Node *node, void *ctx)
{
	if (!node || IsA(node, Query))
		return false;
	auto *s = static_cast<SelectionSearch *>(ctx);
	if (IsA(node, Aggref) && castNode(Aggref, node)->aggfnoid == s->fn) {
		s->found = castNode(Aggref, node);
		return true;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(find_selection), ctx);
}

[[noreturn]] void
refuse_open_shape()
{
	fail(ERRCODE_FEATURE_NOT_SUPPORTED, "this release grouped by an open key cannot run on a Citus table",
	     "Group the distributed table alone by its open key (and declared columns) with count, sum, avg or linear; "
	     "wrap the query in a subquery for post-processing. Nothing was charged.");
}

Const *
int8_zero()
{
	return makeConst(INT8OID, -1, InvalidOid, sizeof(int64), Int64GetDatum(0), false, FLOAT8PASSBYVAL);
}

// count(DISTINCT s) (a privacy unit: s is the unit's hash where the row counts, else NULL).
Aggref *
count_distinct(Expr *s)
{
	Aggref *a = simple_aggref(F_COUNT_ANY, INT8OID, s, FLOAT8OID);
	Oid sortop = InvalidOid, eqop = InvalidOid;
	bool hashable = false;
	pg_call([&] { get_sort_group_operators(FLOAT8OID, true, true, false, &sortop, &eqop, nullptr, &hashable); });
	linitial_node(TargetEntry, a->args)->ressortgroupref = 1;
	SortGroupClause *sgc = makeNode(SortGroupClause);
	sgc->tleSortGroupRef = 1;
	sgc->eqop = eqop;
	sgc->sortop = sortop;
	sgc->nulls_first = false;
	sgc->hashable = hashable;
	a->aggdistinct = list_make1(sgc);
	return a;
}

// Writes an expression of q over a level above the workers' share: the selection reads the
// contributors' column (count_column, 0: the selection may not appear), a release its column
// (release_base + j, 0: no release may appear), a GROUP BY key its column (key_base + i); any other
// column reference, aggregate or sublink is an internal error (stray).
struct LevelMap {
	const ExtensionObjects *ext;
	Aggref *selection;
	Const *selection_params, *selection_budget;
	const std::vector<FuncExpr *> *releases;
	const std::vector<size_t> *column_of; // release j is Y's release column column_of[j] (equal releases share one)
	const std::vector<Expr *> *keys;
	AttrNumber key_base, release_base, count_column;
	bool stray = false;
};

Node *
level_mutator(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	auto *t = static_cast<LevelMap *>(ctx);
	if (node == (Node *) t->selection) {
		if (!t->count_column) {
			t->stray = true;
			return node;
		}
		return (Node *) makeFuncExpr(t->ext->release_selection, BOOLOID,
		                             list_make3(makeVar(1, t->count_column, INT8OID, -1, InvalidOid, 0),
		                                        copy_node(t->selection_params), copy_node(t->selection_budget)),
		                             InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	}
	if (IsA(node, FuncExpr))
		for (size_t j = 0; j < t->releases->size(); ++j)
			if ((*t->releases)[j] == castNode(FuncExpr, node)) {
				if (!t->release_base) {
					t->stray = true;
					return node;
				}
				return (Node *) makeVar(1, static_cast<AttrNumber>(t->release_base + (*t->column_of)[j]),
				                        castNode(FuncExpr, node)->funcresulttype, -1, InvalidOid, 0);
			}
	for (size_t i = 0; i < t->keys->size(); ++i)
		if (equal(node, (*t->keys)[i])) {
			Node *k = reinterpret_cast<Node *>((*t->keys)[i]);
			return (Node *) makeVar(1, static_cast<AttrNumber>(t->key_base + i), exprType(k), exprTypmod(k),
			                        exprCollation(k), 0);
		}
	if (IsA(node, Query) || IsA(node, Aggref) || (IsA(node, Var) && castNode(Var, node)->varlevelsup == 0)) {
		t->stray = true;
		return node;
	}
	return expression_tree_mutator(node, reinterpret_cast<Node *(*) ()>(level_mutator), ctx);
}

// The HAVING open_release_having wrote (planner/open_release_log.h), taken apart:
//   CASE WHEN selection THEN labels [AND having] ELSE withheld END
// -> the verdict CASE WHEN selection THEN labels ELSE withheld END and the analyst's having (or
// nullptr). False for any other shape.
bool
split_open_having(Node *h, Aggref *selection, Node *&verdict, Node *&having)
{
	if (!h || !IsA(h, CaseExpr) || list_length(castNode(CaseExpr, h)->args) != 1 || castNode(CaseExpr, h)->arg)
		return false;
	CaseExpr *ce = castNode(CaseExpr, h);
	CaseWhen *w = linitial_node(CaseWhen, ce->args);
	if ((Node *) w->expr != (Node *) selection)
		return false;
	Node *labels = (Node *) w->result;
	having = nullptr;
	if (IsA(labels, BoolExpr) && castNode(BoolExpr, labels)->boolop == AND_EXPR &&
	    list_length(castNode(BoolExpr, labels)->args) == 2) {
		having = static_cast<Node *>(lsecond(castNode(BoolExpr, labels)->args));
		labels = static_cast<Node *>(linitial(castNode(BoolExpr, labels)->args));
	}
	if (!IsA(labels, FuncExpr) || !IsA(ce->defresult, FuncExpr))
		return false;
	CaseExpr *v = makeNode(CaseExpr);
	*v = *ce;
	CaseWhen *vw = makeNode(CaseWhen);
	*vw = *w;
	vw->result = (Expr *) labels;
	v->args = list_make1(vw);
	verdict = (Node *) v;
	return true;
}

} // namespace

// See distributed_open.h.
Query *
open_partitions_from_sums(Query *q, SplitContext &c)
{
	const ExtensionObjects &ext = *c.ext;
	SelectionSearch search{ext.partition_select};
	find_selection(q->havingQual, &search);
	GroupedReleases found{&ext, {}};
	collect_level_releases((Node *) q->targetList, &found);
	collect_level_releases(q->havingQual, &found);
	if (!search.found || found.releases.empty())
		return q; // a local table: the releases were not split
	if (list_length(q->rtable) != 1 ||
	    (linitial_node(RangeTblEntry, q->rtable)->rtekind != RTE_RELATION &&
	     linitial_node(RangeTblEntry, q->rtable)->rtekind != RTE_SUBQUERY) ||
	    q->groupingSets != NIL || q->hasWindowFuncs || q->hasTargetSRFs || q->cteList != NIL || q->hasSubLinks ||
	    q->distinctClause != NIL || list_length(search.found->args) != 4)
		refuse_open_shape();
	Aggref *sel = search.found;
	auto arg = [&](int i) { return static_cast<TargetEntry *>(list_nth(sel->args, i))->expr; };
	Expr *weight = arg(0), *group = arg(1), *p_expr = arg(2), *s_expr = arg(3);
	if (!IsA(p_expr, Const) || !IsA(s_expr, Const) || exprType((Node *) group) != INT4OID)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv partition selection parameters are not constants");
	const bool distinct_units = sel->aggdistinct != NIL;

	// X: the workers' share
	List *targets = list_make1(makeTargetEntry(copy_node(group), 1, pstrdup("g"), false));
	List *xcols = list_make1(makeString(pstrdup("g")));
	std::vector<Expr *> keys;
	std::vector<SortGroupClause *> key_clauses;
	ListCell *lc;
	foreach (lc, q->groupClause) {
		SortGroupClause *gc = lfirst_node(SortGroupClause, lc);
		TargetEntry *tle = get_sortgroupclause_tle(gc, q->targetList);
		keys.push_back(tle->expr);
		key_clauses.push_back(gc);
	}
	if (keys.empty())
		refuse_open_shape();
	for (size_t i = 0; i < keys.size(); ++i) {
		char *name = psprintf("k%zu", i + 1);
		targets = lappend(targets, makeTargetEntry(copy_node(keys[i]), static_cast<AttrNumber>(i + 2), name, false));
		xcols = lappend(xcols, makeString(pstrdup(name)));
	}
	// equal releases (the same aggregate in the output and in HAVING) are drawn once, as PostgreSQL
	// computes identical aggregates of a level once on a local table: one column of Y each
	std::vector<FuncExpr *> unique;
	std::vector<size_t> column_of(found.releases.size());
	for (size_t j = 0; j < found.releases.size(); ++j) {
		size_t u = 0;
		while (u < unique.size() && !equal(unique[u], found.releases[j]))
			++u;
		if (u == unique.size())
			unique.push_back(found.releases[j]);
		column_of[j] = u;
	}
	std::vector<Const *> params(unique.size());
	for (size_t j = 0; j < unique.size(); ++j) {
		Expr *units = nullptr, *rows = nullptr;
		if (!release_native_sums(unique[j], c, units, rows, params[j]))
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv cannot split the releases of this open release for Citus",
			     "Nothing was charged. Report this query to the dxpriv maintainers.");
		const auto col = static_cast<AttrNumber>(list_length(targets) + 1);
		targets = lappend(targets, makeTargetEntry(units, col, psprintf("u%zu", j + 1), false));
		targets = lappend(targets, makeTargetEntry(rows, col + 1, psprintf("n%zu", j + 1), false));
		xcols = lappend(xcols, makeString(psprintf("u%zu", j + 1)));
		xcols = lappend(xcols, makeString(psprintf("n%zu", j + 1)));
	}
	// the contributors of each candidate: rows counted by WHERE, or distinct units (their hash)
	Expr *counted = (Expr *) by_digest_mutator((Node *) copy_node(weight), &c);
	Expr *contributors = distinct_units                    ? (Expr *) count_distinct(counted)
	                     : never_null_weight((Node *) counted, ext) ? (Expr *) count_star()
	                                                                 : (Expr *) simple_aggref(F_COUNT_ANY, INT8OID, counted, FLOAT8OID);
	const auto c_col = static_cast<AttrNumber>(list_length(targets) + 1);
	targets = lappend(targets, makeTargetEntry(contributors, c_col, pstrdup("c"), false));
	xcols = lappend(xcols, makeString(pstrdup("c")));
	Query *x = grouped_by_first(q, targets, 1);
	for (size_t i = 0; i < keys.size(); ++i) {
		const auto ref = static_cast<Index>(i + 2);
		static_cast<TargetEntry *>(list_nth(targets, static_cast<int>(i + 1)))->ressortgroupref = ref;
		SortGroupClause *gc = copy_node(key_clauses[i]);
		gc->tleSortGroupRef = ref;
		x->groupClause = lappend(x->groupClause, gc);
	}
	x->limitOffset = (Node *) int8_zero(); // Citus plans it on its own (a subplan), never with the levels above

	// Y: every candidate's noise on the coordinator, in the order of the keys
	Query *y = aggregate_over(subquery_rte(x, "dx_candidates", xcols));
	y->hasAggs = false;
	List *ycols = NIL;
	for (size_t i = 0; i < keys.size(); ++i) {
		Node *k = reinterpret_cast<Node *>(keys[i]);
		char *name = psprintf("k%zu", i + 1);
		y->targetList = lappend(y->targetList,
		                        makeTargetEntry((Expr *) makeVar(1, static_cast<AttrNumber>(i + 2), exprType(k),
		                                                         exprTypmod(k), exprCollation(k), 0),
		                                        static_cast<AttrNumber>(i + 1), name, false));
		ycols = lappend(ycols, makeString(pstrdup(name)));
	}
	Var *g = makeVar(1, 1, INT4OID, -1, InvalidOid, 0);
	for (size_t j = 0; j < unique.size(); ++j) {
		FuncExpr *f = unique[j];
		const auto u = static_cast<AttrNumber>(keys.size() + 2 + 2 * j);
		FuncExpr *state = makeFuncExpr(ext.state_of, ext.linear_partial_type,
		                               list_make4(makeVar(1, u, NUMERICOID, -1, InvalidOid, 0),
		                                          makeVar(1, u + 1, INT8OID, -1, InvalidOid, 0), copy_node(params[j]),
		                                          copy_node(g)),
		                               InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
		FuncExpr *r = makeFuncExpr(f->funcid, f->funcresulttype, list_make3(state, copy_node(params[j]), copy_node(g)),
		                           InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
		char *name = psprintf("r%zu", j + 1);
		y->targetList = lappend(y->targetList, makeTargetEntry((Expr *) r, static_cast<AttrNumber>(list_length(y->targetList) + 1), name, false));
		ycols = lappend(ycols, makeString(pstrdup(name)));
	}
	// the verdict, last in Y's output: per partition its noise is drawn first (above), then the
	// selection, and dx._open_cells labels the answers just drawn, as the local plan does
	Node *verdict = nullptr, *having = nullptr;
	if (!split_open_having(q->havingQual, sel, verdict, having))
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv cannot split the selection of this open release for Citus",
		     "Nothing was charged. Report this query to the dxpriv maintainers.");
	LevelMap in_y{&ext, sel, castNode(Const, p_expr), castNode(Const, s_expr), &found.releases, &column_of, &keys, 2, 0,
	              c_col};
	verdict = level_mutator(verdict, &in_y);
	if (in_y.stray)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv left a column reference outside the selection of a distributed open release");
	const auto y_kept = static_cast<AttrNumber>(list_length(y->targetList) + 1);
	y->targetList = lappend(y->targetList, makeTargetEntry((Expr *) verdict, y_kept, pstrdup("kept"), false));
	ycols = lappend(ycols, makeString(pstrdup("kept")));
	// the order of the final ORDER BY's keys (the local plan's groups meet their noise in that order)
	foreach (lc, q->sortClause) {
		SortGroupClause *sc = lfirst_node(SortGroupClause, lc);
		for (size_t i = 0; i < key_clauses.size(); ++i)
			if (key_clauses[i]->tleSortGroupRef == sc->tleSortGroupRef) {
				const auto ref = static_cast<Index>(i + 1);
				static_cast<TargetEntry *>(list_nth(y->targetList, static_cast<int>(i)))->ressortgroupref = ref;
				SortGroupClause *copy = copy_node(sc);
				copy->tleSortGroupRef = ref;
				y->sortClause = lappend(y->sortClause, copy);
			}
	}
	y->limitOffset = (Node *) int8_zero(); // evaluated as one level, never merged into the one above

	// top: the kept partitions, the analyst's HAVING and output over Y
	LevelMap in_top{&ext, sel, castNode(Const, p_expr), castNode(Const, s_expr), &found.releases, &column_of, &keys, 1,
	                static_cast<AttrNumber>(keys.size() + 1), 0};
	Query *top = copy_node(q);
	top->targetList = (List *) level_mutator((Node *) q->targetList, &in_top);
	having = level_mutator(having, &in_top);
	if (in_top.stray)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv left a column reference outside the aggregates of a distributed open release");
	Node *kept = (Node *) makeVar(1, y_kept, BOOLOID, -1, InvalidOid, 0);
	top->rtable = list_make1(subquery_rte(y, "dx_partitions", ycols));
	RangeTblRef *ref = makeNode(RangeTblRef);
	ref->rtindex = 1;
	if (having) // CASE WHEN kept THEN having ELSE false END: the analyst's HAVING runs on kept partitions only
		kept = (Node *) case_when((Expr *) kept, (Expr *) having, BOOLOID, (Expr *) makeBoolConst(false, false));
	top->jointree = makeFromExpr(list_make1(ref), kept);
	top->havingQual = nullptr;
	top->groupClause = NIL;
	top->hasAggs = false;
	// the charge step reads the selection's parameters (exposure: distributed_exposure.h)
	c.releases = lappend(c.releases, makeFuncExpr(ext.release_selection, BOOLOID,
	                                              list_make3(makeNullConst(INT8OID, -1, InvalidOid),
	                                                         copy_node(castNode(Const, p_expr)), copy_node(castNode(Const, s_expr))),
	                                              InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL));
	return top;
}

} // namespace dxpriv::pg::dist
