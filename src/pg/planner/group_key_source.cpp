// GROUP BY keys computed in the row source (group_key_source.h).
#include "pg/planner/group_key_source.h"

#include "pg/guard.h"
#include "pg/node_build.h"

extern "C" {
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
}

#include <string>

namespace dxpriv::pg {

namespace {

[[noreturn]] void
unexpected_source()
{
	fail(ERRCODE_INTERNAL_ERROR, "dxpriv could not place the GROUP BY keys in the row source");
}

struct LeafSubstitution {
	const std::map<AttrNumber, AttrNumber> *mapping;
	List *tlist; // the empty-group branch's target list
};

// Replaces the table's columns (level-0 Vars of range table entry 1) by the empty-group branch's
// output expressions for them.
Node *
leaf_substitute(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	if (IsA(node, Var)) {
		Var *v = castNode(Var, node);
		if (v->varno != 1 || v->varlevelsup != 0)
			unexpected_source();
		auto *s = static_cast<LeafSubstitution *>(ctx);
		auto it = s->mapping->find(v->varattno);
		if (it == s->mapping->end() || it->second < 1 || it->second > list_length(s->tlist))
			unexpected_source();
		Expr *e = castNode(TargetEntry, list_nth(s->tlist, it->second - 1))->expr;
		if (exprType((Node *) e) != v->vartype)
			unexpected_source();
		if (exprTypmod((Node *) e) == v->vartypmod)
			return (Node *) copy_node(e);
		// the representative values carry no type modifier (unnest of an array): the lookup reads
		// the column's (e.g. char(n), whose padding it ignores), as it did above the source
		return (Node *) makeRelabelType(static_cast<Expr *>(copy_node(e)), v->vartype, v->vartypmod, v->varcollid,
		                                COERCE_IMPLICIT_CAST);
	}
	return expression_tree_mutator(node, reinterpret_cast<Node *(*) ()>(leaf_substitute), ctx);
}

struct KeyVars {
	const std::vector<Expr *> *replacements;
};

// Replaces key k's expression (outside aggregates) by a Var of its source column (placeholder).
Node *
key_var_mutator(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	if (IsA(node, Aggref))
		return node;
	auto *r = static_cast<KeyVars *>(ctx);
	for (size_t k = 0; k < r->replacements->size(); ++k) {
		Expr *e = (*r->replacements)[k];
		if (equal(node, e))
			return (Node *) makeVar(1, static_cast<AttrNumber>(kKeyPlaceholder + k), exprType((Node *) e),
			                        exprTypmod((Node *) e), exprCollation((Node *) e), 0);
	}
	return expression_tree_mutator(node, reinterpret_cast<Node *(*) ()>(key_var_mutator), ctx);
}

// True when node is built only of Vars, Consts and calls of the three lookup functions.
bool
lookup_only(Node *node, const ExtensionObjects &ext)
{
	if (!node)
		return true;
	if (IsA(node, Var) || IsA(node, Const))
		return true;
	if (IsA(node, FuncExpr)) {
		const FuncExpr *f = castNode(FuncExpr, node);
		if (f->funcid != ext.group_key && f->funcid != ext.weigh_int && f->funcid != ext.group_key_int)
			return false;
		ListCell *lc;
		foreach (lc, f->args)
			if (!lookup_only(static_cast<Node *>(lfirst(lc)), ext))
				return false;
		return true;
	}
	return false;
}

// dx._group_key(dx._weigh_int(table, layout, <columns>), values) as the one call
// dx._group_key_int(table, layout, values, <columns>) (the same value, type and collation); any
// other expression unchanged.
Expr *
fused_key(Expr *e, const ExtensionObjects &ext)
{
	if (!IsA(e, FuncExpr) || castNode(FuncExpr, e)->funcid != ext.group_key)
		return e;
	const FuncExpr *key = castNode(FuncExpr, e);
	if (list_length(key->args) != 2 || !IsA(linitial(key->args), FuncExpr))
		return e;
	const FuncExpr *index = castNode(FuncExpr, linitial(key->args));
	if (index->funcid != ext.weigh_int || index->funcvariadic || list_length(index->args) < 3)
		return e;
	List *args = list_make3(linitial(index->args), lsecond(index->args), lsecond(key->args));
	for (int i = 2; i < list_length(index->args); ++i)
		args = lappend(args, list_nth(index->args, i));
	return (Expr *) makeFuncExpr(ext.group_key_int, key->funcresulttype, args, key->funccollid, key->inputcollid,
	                             COERCE_EXPLICIT_CALL);
}

Query *
leaf_query(Query *top, Node *arg)
{
	if (!arg || !IsA(arg, RangeTblRef))
		unexpected_source();
	RangeTblEntry *rte = rt_fetch(castNode(RangeTblRef, arg)->rtindex, top->rtable);
	if (rte->rtekind != RTE_SUBQUERY || !rte->subquery)
		unexpected_source();
	return rte->subquery;
}

} // namespace

// See group_key_source.h.
void
key_columns_into_source(Query *q, const std::vector<Expr *> &replacements, std::map<AttrNumber, AttrNumber> &mapping,
                        const ExtensionObjects &ext)
{
	if (replacements.empty())
		return;
	for (Expr *e : replacements)
		if (!lookup_only((Node *) e, ext))
			unexpected_source();
	RangeTblEntry *outer = linitial_node(RangeTblEntry, q->rtable);
	Query *sub = outer->subquery;
	if (outer->rtekind != RTE_SUBQUERY || !sub || !sub->setOperations || !IsA(sub->setOperations, SetOperationStmt))
		unexpected_source();
	auto *sos = castNode(SetOperationStmt, sub->setOperations);
	if (sos->op != SETOP_UNION || !sos->all)
		unexpected_source();
	Query *real = leaf_query(sub, sos->larg);
	Query *empty = leaf_query(sub, sos->rarg);
	const int leftmost = castNode(RangeTblRef, sos->larg)->rtindex;
	RangeTblEntry *real_rte = rt_fetch(leftmost, sub->rtable);
	RangeTblEntry *empty_rte = rt_fetch(castNode(RangeTblRef, sos->rarg)->rtindex, sub->rtable);
	const int width = list_length(sub->targetList);
	if (list_length(real->targetList) != width || list_length(empty->targetList) != width ||
	    list_length(outer->eref->colnames) != width)
		unexpected_source();
	LeafSubstitution subst{&mapping, empty->targetList};
	for (size_t k = 0; k < replacements.size(); ++k) {
		Expr *e = fused_key(static_cast<Expr *>(copy_node(replacements[k])), ext); // (one call per row)
		const Oid type = exprType((Node *) e), collation = exprCollation((Node *) e);
		const int32 typmod = exprTypmod((Node *) e);
		const AttrNumber att = static_cast<AttrNumber>(width + 1 + k);
		char *name = pstrdup(("dx_k" + std::to_string(k)).c_str());
		// the table's branch reads the stored columns (range table entry 1 of the leaf is the table)
		Expr *on_row = static_cast<Expr *>(copy_node(e));
		Expr *on_group = (Expr *) leaf_substitute((Node *) copy_node(e), &subst);
		real->targetList = lappend(real->targetList, makeTargetEntry(on_row, att, name, false));
		empty->targetList = lappend(empty->targetList, makeTargetEntry(on_group, att, pstrdup(name), false));
		real_rte->eref->colnames = lappend(real_rte->eref->colnames, makeString(pstrdup(name)));
		empty_rte->eref->colnames = lappend(empty_rte->eref->colnames, makeString(pstrdup(name)));
		sos->colTypes = lappend_oid(sos->colTypes, type);
		sos->colTypmods = lappend_int(sos->colTypmods, typmod);
		sos->colCollations = lappend_oid(sos->colCollations, collation);
		sub->targetList = lappend(sub->targetList,
		                          makeTargetEntry((Expr *) makeVar(leftmost, att, type, typmod, collation, 0), att,
		                                          pstrdup(name), false));
		outer->eref->colnames = lappend(outer->eref->colnames, makeString(pstrdup(name)));
		mapping[static_cast<AttrNumber>(kKeyPlaceholder + k)] = att;
	}
	KeyVars kv{&replacements};
	q->targetList = (List *) key_var_mutator((Node *) q->targetList, &kv);
	q->havingQual = key_var_mutator(q->havingQual, &kv);
}

} // namespace dxpriv::pg
