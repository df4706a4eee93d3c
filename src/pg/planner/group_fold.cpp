// A GROUP BY over declared columns folded into one pass (group_fold.h).
#include "pg/planner/group_fold.h"

#include "pg/guard.h"
#include "pg/node_build.h"
#include "pg/settings.h"
#include "pg/planner/group_source.h"
#include "pg/planner/release_analysis.h"

extern "C" {
#include "catalog/pg_aggregate.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
#include "utils/array.h"
#include "utils/builtins.h"
}

#include <cctype>
#include <string>
#include <vector>

namespace dxpriv::pg {

namespace {

struct FoldAggregates {
	const ExtensionObjects *ext;
	std::vector<Aggref *> found;
	bool other = false; // a dxpriv aggregate that is not a one-pass aggregate with key columns
};

// The one-pass aggregate's shape, its third direct argument (ncols, sizes, kept columns, -1, key
// columns), as n values; nullptr when that argument is not a one-dimensional int8[] constant
// without NULLs.
const int64 *
shape_values(const Aggref *a, int *n)
{
	if (list_length(a->aggdirectargs) != 3 || !IsA(lthird(a->aggdirectargs), Const))
		return nullptr;
	const Const *c = castNode(Const, lthird(a->aggdirectargs));
	if (c->constisnull || c->consttype != INT8ARRAYOID)
		return nullptr;
	ArrayType *arr = DatumGetArrayTypeP(c->constvalue);
	if (ARR_NDIM(arr) != 1 || ARR_HASNULL(arr))
		return nullptr;
	*n = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
	return reinterpret_cast<const int64 *>(ARR_DATA_PTR(arr));
}

// The shape without its kept columns: {ncols, sizes, -1, key columns}; empty when it has no key column.
std::vector<int64>
fold_shape_of(const Aggref *a)
{
	int n = 0;
	const int64 *v = shape_values(a, &n);
	if (!v || n < 1 || v[0] < 1 || n < 1 + v[0])
		return {};
	std::vector<int64> out(v, v + 1 + v[0]);
	int sep = -1;
	for (int i = 1 + static_cast<int>(v[0]); i < n; ++i)
		if (v[i] == -1) {
			sep = i;
			break;
		}
	if (sep < 0 || sep + 1 >= n)
		return {};
	out.insert(out.end(), v + sep, v + n);
	return out;
}

// True when the one-pass aggregate's shape (its third direct argument) lists key columns.
bool
has_key_columns(const Aggref *a)
{
	int n = 0;
	const int64 *v = shape_values(a, &n);
	if (!v)
		return false;
	for (int i = 1; i + 1 < n; ++i)
		if (v[i] == -1)
			return true;
	return false;
}

bool
fold_aggregates_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *f = static_cast<FoldAggregates *>(ctx);
	if (IsA(node, Aggref)) {
		Aggref *a = castNode(Aggref, node);
		if (f->ext->is_one_pass(a->aggfnoid) && has_key_columns(a) && a->agglevelsup == 0 && !a->aggfilter &&
		    !a->aggorder && !a->aggdistinct)
			f->found.push_back(a);
		else if (f->ext->is_internal(a->aggfnoid) || f->ext->is_marker(a->aggfnoid) || a->aggfnoid == f->ext->em_collect)
			f->other = true;
		return false; // (the arguments are the shared ones)
	}
	if (IsA(node, SubLink) || IsA(node, Query)) {
		f->other = true; // (not placed by the rewrite in a grouped release)
		return false;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(fold_aggregates_walker), ctx);
}

// True when node is made of the table's own columns (level-0 Vars of range table entry 1, real
// attributes) and constants only: what the fold state's transition may read of a stored row.
bool
columns_and_constants(Node *node)
{
	if (!node)
		return true;
	if (IsA(node, Const))
		return true;
	if (IsA(node, Var)) {
		const Var *v = castNode(Var, node);
		return v->varno == 1 && v->varlevelsup == 0 && v->varattno > 0 && v->varattno < kPresentPlaceholder;
	}
	return false;
}

Query *
leaf(Query *sub, Node *arg)
{
	if (!arg || !IsA(arg, RangeTblRef))
		return nullptr;
	RangeTblEntry *rte = rt_fetch(castNode(RangeTblRef, arg)->rtindex, sub->rtable);
	return rte->rtekind == RTE_SUBQUERY ? rte->subquery : nullptr;
}

[[noreturn]] void
unexpected_fold()
{
	fail(ERRCODE_INTERNAL_ERROR, "dxpriv could not fold the GROUP BY into one pass");
}

} // namespace

// See group_fold.h.
bool
fold_group_source(Query *q, std::map<AttrNumber, AttrNumber> &mapping, const ExtensionObjects &ext, bool keep_qual)
{
	if (!guc_group_fold || q->groupingSets || !q->groupClause)
		return false;
	FoldAggregates f{&ext, {}, false};
	fold_aggregates_walker((Node *) q->targetList, &f);
	fold_aggregates_walker(q->havingQual, &f);
	if (f.other || f.found.empty())
		return false;
	Aggref *first = f.found.front();
	const std::vector<int64> shape = fold_shape_of(first);
	for (Aggref *a : f.found)
		if (!equal(a->args, first->args) || fold_shape_of(a) != shape)
			return false;
	if (shape.empty())
		return false;
	// the row source: the table's rows UNION ALL the empty-group rows (group_source.h)
	RangeTblEntry *outer = linitial_node(RangeTblEntry, q->rtable);
	Query *sub = outer->subquery;
	if (outer->rtekind != RTE_SUBQUERY || !sub || !sub->setOperations || !IsA(sub->setOperations, SetOperationStmt))
		return false;
	auto *sos = castNode(SetOperationStmt, sub->setOperations);
	Query *real = leaf(sub, sos->larg);
	Query *empty = leaf(sub, sos->rarg);
	if (sos->op != SETOP_UNION || !sos->all || !real || !empty || list_length(empty->rtable) != 1 ||
	    list_length(real->rtable) != 1 || linitial_node(RangeTblEntry, empty->rtable)->rtekind != RTE_FUNCTION ||
	    linitial_node(RangeTblEntry, real->rtable)->rtekind != RTE_RELATION || (real->jointree->quals != nullptr) != keep_qual ||
	    list_length(empty->targetList) != list_length(sub->targetList))
		return false;
	RangeTblEntry *groups_rte = linitial_node(RangeTblEntry, empty->rtable);
	if (groups_rte->funcordinality)
		return false;
	ListCell *lc;
	// one row per declared group: each unnest array holds the key column's value of every group, as
	// many as the shape's key columns have points (dx._fold_slices returns that many slices)
	uint64 groups = 1;
	for (size_t k = shape.size() - 1; k > 0 && shape[k] != -1; --k)
		groups *= static_cast<uint64>(shape[1 + shape[k]]);
	int group_columns = 0;
	foreach (lc, groups_rte->functions) {
		const RangeTblFunction *fn = lfirst_node(RangeTblFunction, lc);
		const FuncExpr *call = IsA(fn->funcexpr, FuncExpr) ? castNode(FuncExpr, fn->funcexpr) : nullptr;
		Node *arg = call && list_length(call->args) == 1 ? static_cast<Node *>(linitial(call->args)) : nullptr;
		for (;;) { // (a char(n) key's values are coerced to the column's type modifier: same length)
			if (arg && IsA(arg, ArrayCoerceExpr))
				arg = (Node *) castNode(ArrayCoerceExpr, arg)->arg;
			else if (arg && IsA(arg, RelabelType))
				arg = (Node *) castNode(RelabelType, arg)->arg;
			else if (arg && IsA(arg, FuncExpr) && list_length(castNode(FuncExpr, arg)->args) >= 1)
				arg = static_cast<Node *>(linitial(castNode(FuncExpr, arg)->args));
			else
				break;
		}
		const Const *values = arg && IsA(arg, Const) ? castNode(Const, arg) : nullptr;
		if (!values || values->constisnull)
			return false; // (not the empty-group rows of group_source.h: the previous plan)
		const Datum array = values->constvalue;
		const int items = pg_value([&] {
			ArrayType *arr = DatumGetArrayTypeP(array);
			return ARR_NDIM(arr) == 1 ? ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr)) : -1;
		});
		if (items < 0 || static_cast<uint64>(items) != groups)
			return false; // (not the empty-group rows of group_source.h: the previous plan)
		group_columns += fn->funccolcount;
	}
	// the shared arguments (layout '<flags>|<columns>', [present], the columns' values and constants),
	// the key columns no longer left out: the columns in lower case, every row real (no 'p' flag and
	// no present argument); there is no group argument (the key columns gave the group)
	List *args = NIL, *types = NIL;
	int i = 0;
	bool drop_present = false;
	foreach (lc, first->args) {
		Expr *e = static_cast<Expr *>(copy_node(lfirst_node(TargetEntry, lc)->expr));
		if (i == 0) {
			if (!IsA(e, Const) || castNode(Const, e)->constisnull || castNode(Const, e)->consttype != TEXTOID)
				unexpected_fold();
			const Datum layout_datum = castNode(Const, e)->constvalue;
			std::string layout = pg_value([&] { return text_to_cstring(DatumGetTextPP(layout_datum)); });
			const size_t bar = layout.find('|');
			if (bar == std::string::npos || layout.substr(0, bar).find('g') != std::string::npos)
				unexpected_fold();
			std::string flags = layout.substr(0, bar);
			drop_present = flags.find('p') != std::string::npos;
			flags = flags.find('d') != std::string::npos ? "d" : "";
			std::string columns = layout.substr(bar + 1);
			for (char &ch : columns)
				ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
			layout = flags + "|" + columns;
			e = (Expr *) makeConst(TEXTOID, -1, InvalidOid, -1, CStringGetTextDatum(layout.c_str()), false, false);
		} else if (i == 1 && drop_present) {
			++i;
			continue; // (the present flag: every row of the table's branch is real)
		} else if (!columns_and_constants((Node *) e)) {
			unexpected_fold(); // (one_pass_args: the table's columns and dxpriv's constants only)
		}
		args = lappend(args, makeTargetEntry(e, static_cast<AttrNumber>(list_length(args) + 1), nullptr, false));
		types = lappend_oid(types, exprType((Node *) e));
		++i;
	}
	if (i < 1)
		unexpected_fold();
	Aggref *state = makeNode(Aggref);
	state->aggfnoid = ext.fold_state;
	state->aggtype = BYTEAOID;
	state->aggcollid = InvalidOid;
	state->inputcollid = InvalidOid;
	state->aggtranstype = InvalidOid;
	state->aggargtypes = types;
	state->aggdirectargs = NIL;
	state->args = args;
	state->aggorder = NIL;
	state->aggdistinct = NIL;
	state->aggfilter = nullptr;
	state->aggstar = false;
	state->aggvariadic = false;
	state->aggkind = AGGKIND_NORMAL;
	state->agglevelsup = 0;
	state->aggsplit = AGGSPLIT_SIMPLE;
	state->aggno = -1;
	state->aggtransno = -1;
	state->location = analysis::kRewrittenLocation;
	// the groups' values read as the table's columns, with their type modifiers (a char(n) key's
	// lookup above the source reads the column's, as it did when the table's rows came through)
	ListCell *rc, *ec;
	forboth (rc, real->targetList, ec, empty->targetList) {
		TargetEntry *re = lfirst_node(TargetEntry, rc), *ee = lfirst_node(TargetEntry, ec);
		const Oid type = exprType((Node *) re->expr);
		const int32 typmod = exprTypmod((Node *) re->expr);
		const Oid collation = exprCollation((Node *) re->expr);
		if (exprType((Node *) ee->expr) == type && exprTypmod((Node *) ee->expr) != typmod)
			ee->expr = (Expr *) pg_value(
			    [&] { return makeRelabelType(ee->expr, type, typmod, collation, COERCE_IMPLICIT_CAST); });
	}
	// s: the table's branch becomes SELECT dx._fold_state(...) AS dx_state FROM <table>
	real->targetList = list_make1(makeTargetEntry((Expr *) state, 1, pstrdup("dx_state"), false));
	real->hasAggs = true;
	RangeTblEntry *state_rte = makeNode(RangeTblEntry);
	state_rte->rtekind = RTE_SUBQUERY;
	state_rte->subquery = real;
	state_rte->alias = nullptr;
	state_rte->eref = makeAlias("dx_fold", list_make1(makeString(pstrdup("dx_state"))));
	state_rte->lateral = false;
	state_rte->inh = false;
	state_rte->inFromCl = true;
	empty->rtable = lappend(empty->rtable, state_rte);
	const Index state_index = static_cast<Index>(list_length(empty->rtable));
	// g: ROWS FROM (unnest(<the groups' values>), dx._fold_slices(s.dx_state, <shape>))
	if (list_length(groups_rte->eref->colnames) != group_columns)
		unexpected_fold();
	std::vector<Datum> shape_datums;
	for (int64 x : shape)
		shape_datums.push_back(Int64GetDatum(x));
	ArrayType *shape_array = pg_value([&] {
		return construct_array(shape_datums.data(), static_cast<int>(shape_datums.size()), INT8OID, sizeof(int64),
		                       FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
	});
	Const *shape_const = makeConst(INT8ARRAYOID, -1, InvalidOid, -1, PointerGetDatum(shape_array), false, false);
	FuncExpr *slices = makeFuncExpr(
	    ext.fold_slices, BYTEAOID,
	    list_make2(makeVar(state_index, 1, BYTEAOID, -1, InvalidOid, 0), shape_const),
	    InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	slices->funcretset = true;
	slices->location = analysis::kRewrittenLocation;
	RangeTblFunction *rtf = makeNode(RangeTblFunction);
	rtf->funcexpr = (Node *) slices;
	rtf->funccolcount = 1;
	rtf->funcparams = nullptr;
	groups_rte->functions = lappend(groups_rte->functions, rtf);
	groups_rte->eref->colnames = lappend(groups_rte->eref->colnames, makeString(pstrdup("dx_slice")));
	groups_rte->lateral = true;
	RangeTblRef *ref = makeNode(RangeTblRef);
	ref->rtindex = static_cast<int>(state_index);
	empty->jointree->fromlist = lcons(ref, empty->jointree->fromlist);
	const AttrNumber slice_att = static_cast<AttrNumber>(list_length(empty->targetList) + 1);
	empty->targetList = lappend(
	    empty->targetList, makeTargetEntry((Expr *) makeVar(1, static_cast<AttrNumber>(group_columns + 1), BYTEAOID, -1,
	                                                        InvalidOid, 0),
	                                       slice_att, pstrdup("dx_slice"), false));
	// the statement reads the groups' rows
	outer->subquery = empty;
	outer->eref->colnames = lappend(outer->eref->colnames, makeString(pstrdup("dx_slice")));
	mapping[kFoldSlicePlaceholder] = slice_att;
	for (Aggref *a : f.found) {
		a->aggfnoid = a->aggfnoid == ext.onepass_count ? ext.fold_count
		              : a->aggfnoid == ext.onepass_avg ? ext.fold_avg
		                                               : ext.fold_sum;
		a->args = list_make1(makeTargetEntry((Expr *) makeVar(1, kFoldSlicePlaceholder, BYTEAOID, -1, InvalidOid, 0), 1,
		                                     nullptr, false));
		a->aggargtypes = list_make1_oid(BYTEAOID);
		a->aggvariadic = false;
	}
	return true;
}

} // namespace dxpriv::pg
