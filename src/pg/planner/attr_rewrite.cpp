// SELECT dx.attr_avg(col) FROM t  ->  SELECT dx.attr_avg('t'::regclass, 'col'::name); see attr_rewrite.h.
#include "pg/planner/attr_rewrite.h"

#include "pg/guard.h"

extern "C" {
#include "catalog/namespace.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

#include <cstring>
#include <string>

namespace dxpriv::pg {

namespace {

constexpr const char *kHint = "Write SELECT dx.attr_avg(column), dx.attr_sum(column) FROM table: the release covers "
                              "the whole table and a declared column, as its attribute-privacy model does.";

// "attr_avg" or "attr_sum" when f is one of the marker aggregates dx.attr_avg("any") /
// dx.attr_sum("any"), else nullptr.
const char *
marker_name(Oid f)
{
	const char *name = nullptr;
	pg_call([&] {
		if (get_func_namespace(f) != get_namespace_oid("dx", true) || get_func_nargs(f) != 1)
			return;
		const char *n = get_func_name(f);
		if (n && (strcmp(n, "attr_avg") == 0 || strcmp(n, "attr_sum") == 0))
			name = n;
	});
	return name;
}

// Finds marker aggregates anywhere in an expression tree (subqueries included).
bool
has_marker_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	if (IsA(node, Aggref) && marker_name(castNode(Aggref, node)->aggfnoid))
		return true;
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(has_marker_walker), ctx, 0);
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(has_marker_walker), ctx);
}

[[noreturn]] void
refuse_attr_shape(const std::string &what)
{
	fail(ERRCODE_FEATURE_NOT_SUPPORTED, what + " cannot be used with dx.attr_avg or dx.attr_sum", kHint);
}

} // namespace

// See attr_rewrite.h.
bool
rewrite_attribute_aggregates(Query *q, bool in_definition)
{
	if (!query_tree_walker(q, reinterpret_cast<bool (*)()>(has_marker_walker), nullptr, 0))
		return false;
	if (in_definition)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "dx.attr_avg and dx.attr_sum cannot be used in view, rule or function definitions",
		     "Run the query directly: each execution is a release charged to the attribute-privacy budget.");
	if (q->commandType != CMD_SELECT)
		refuse_attr_shape("statements other than SELECT");
	if (q->cteList || q->hasSubLinks || q->setOperations || q->hasWindowFuncs || q->hasTargetSRFs || q->rowMarks)
		refuse_attr_shape("subqueries, WITH, set operations, window or set-returning functions and FOR UPDATE");
	if (q->jointree->quals || q->groupClause || q->groupingSets || q->havingQual || q->distinctClause ||
	    q->sortClause || q->limitCount || q->limitOffset)
		refuse_attr_shape("WHERE, GROUP BY, HAVING, DISTINCT, ORDER BY and LIMIT");
	if (list_length(q->rtable) != 1 || list_length(q->jointree->fromlist) != 1 ||
	    !IsA(linitial(q->jointree->fromlist), RangeTblRef))
		refuse_attr_shape("joins and several tables");
	RangeTblEntry *rte = linitial_node(RangeTblEntry, q->rtable);
	if (rte->rtekind != RTE_RELATION || rte->tablesample)
		refuse_attr_shape("sources other than a table");

	List *targets = NIL;
	ListCell *lc;
	foreach (lc, q->targetList) {
		TargetEntry *te = lfirst_node(TargetEntry, lc);
		const char *name = IsA(te->expr, Aggref) ? marker_name(castNode(Aggref, te->expr)->aggfnoid) : nullptr;
		if (!name)
			refuse_attr_shape("other outputs than dx.attr_avg and dx.attr_sum");
		Aggref *a = castNode(Aggref, te->expr);
		if (a->aggfilter || a->aggorder || a->aggdistinct)
			refuse_attr_shape("FILTER, ORDER BY and DISTINCT inside the aggregate");
		Node *arg = (Node *) linitial_node(TargetEntry, a->args)->expr;
		if (!IsA(arg, Var) || castNode(Var, arg)->varlevelsup != 0 || castNode(Var, arg)->varattno <= 0)
			fail(ERRCODE_FEATURE_NOT_SUPPORTED, std::string("dx.") + name + " takes a column, not an expression",
			     "The release reads a declared column as it is stored; write dx." + std::string(name) + "(column).");
		FuncExpr *call = nullptr;
		pg_call([&] {
			char *column = get_attname(rte->relid, castNode(Var, arg)->varattno, false);
			Name n = static_cast<Name>(palloc0(NAMEDATALEN));
			namestrcpy(n, column);
			Oid types[2] = {REGCLASSOID, NAMEOID};
			const Oid f = LookupFuncName(list_make2(makeString(pstrdup("dx")), makeString(pstrdup(name))), 2, types, false);
			List *args = list_make2(makeConst(REGCLASSOID, -1, InvalidOid, 4, ObjectIdGetDatum(rte->relid), false, true),
			                        makeConst(NAMEOID, -1, C_COLLATION_OID, NAMEDATALEN, NameGetDatum(n), false, false));
			call = makeFuncExpr(f, FLOAT8OID, args, InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
		});
		targets = lappend(targets, makeTargetEntry((Expr *) call, te->resno, te->resname, te->resjunk));
	}
	// the statement now reads no table: the release functions read it, after charging
	q->targetList = targets;
	q->rtable = NIL;
	q->jointree = makeFromExpr(NIL, nullptr);
	q->hasAggs = false;
	return true;
}

} // namespace dxpriv::pg
