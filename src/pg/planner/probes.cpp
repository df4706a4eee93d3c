// Zero-row probes and declared-value drop-downs of analysts (probes.h).
#include "pg/planner/probes.h"

#include "pg/guard.h"
#include "pg/analyst/query_admission.h"
#include "pg/planner/group_source.h"
#include "pg/node_build.h"
#include "pg/metadata/policy.h"

extern "C" {
#include "access/relation.h"
#include "catalog/pg_type.h"
#include "utils/rel.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
}

#include <algorithm>
#include <map>

namespace dxpriv::pg {

namespace {

// A plain SELECT over exactly one relation: no set operation, CTE, subquery, SRF, window,
// aggregate, locking or DISTINCT ON.
bool
plain_single_table_select(Query *q)
{
	return q->commandType == CMD_SELECT && !q->setOperations && !q->cteList && !q->hasSubLinks &&
	       !q->hasTargetSRFs && !q->hasWindowFuncs && !q->hasAggs && !q->rowMarks && !q->hasDistinctOn &&
	       !q->groupingSets && !q->havingQual && list_length(q->rtable) == 1 &&
	       linitial_node(RangeTblEntry, q->rtable)->rtekind == RTE_RELATION &&
	       list_length(q->jointree->fromlist) == 1 && IsA(linitial(q->jointree->fromlist), RangeTblRef);
}

// True when expr folds to a constant false or NULL (no column, no parameter).
bool
constant_false(Node *expr)
{
	const Const *c = expr ? folded_const(expr) : nullptr;
	return c && (c->constisnull || !DatumGetBool(c->constvalue));
}

// True when the LIMIT folds to the constant 0.
bool
limit_zero(Node *limit)
{
	const Const *c = limit ? folded_const(limit) : nullptr;
	return c && !c->constisnull && DatumGetInt64(c->constvalue) == 0;
}

// Replaces system columns (xmin, ctid, ...) of the probed table by NULLs of their types: the empty
// row source that stands in for the table has no system columns, and the probe returns no row.
Node *
null_system_columns(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	if (IsA(node, Var) && castNode(Var, node)->varlevelsup == 0 && castNode(Var, node)->varattno < 0) {
		const Var *v = castNode(Var, node);
		return (Node *) makeNullConst(v->vartype, v->vartypmod, v->varcollid);
	}
	return expression_tree_mutator(node, reinterpret_cast<Node *(*)()>(null_system_columns), ctx);
}

} // namespace

// See probes.h.
bool
admit_zero_row_probe(Query *q)
{
	if (!plain_single_table_select(q) || q->groupClause || q->distinctClause)
		return false;
	// only built-in immutable functions: folding the empty query at planning must not run user code
	require_builtin_immutable((Node *) q->targetList, "zero-row probes");
	require_builtin_immutable(q->jointree->quals, "zero-row probes");
	bool empty = false;
	pg_call([&] { empty = constant_false(q->jointree->quals) || limit_zero(q->limitCount); });
	if (!empty)
		return false;
	// the table is replaced by an empty row source of the same column types: the statement returns
	// the column list and no row, and never opens the protected table
	const Oid relid = linitial_node(RangeTblEntry, q->rtable)->relid;
	std::string select;
	List *colnames = NIL;
	std::map<AttrNumber, AttrNumber> mapping;
	pg_call([&] {
		Relation rel = relation_open(relid, AccessShareLock);
		TupleDesc td = RelationGetDescr(rel);
		for (int i = 0; i < td->natts; ++i) {
			Form_pg_attribute a = TupleDescAttr(td, i);
			if (a->attisdropped)
				continue;
			const char *type = pg_value([&] { return format_type_with_typemod(a->atttypid, a->atttypmod); });
			select += std::string(select.empty() ? "SELECT " : ", ") + "NULL::" + type;
			colnames = lappend(colnames, makeString(pstrdup(NameStr(a->attname))));
			mapping[a->attnum] = static_cast<AttrNumber>(list_length(colnames));
		}
		relation_close(rel, AccessShareLock);
	});
	replace_rte_with_sql(q, (select.empty() ? std::string("SELECT") : select) + " WHERE false", colnames);
	q->targetList = (List *) null_system_columns((Node *) q->targetList, nullptr);
	q->jointree->quals = null_system_columns(q->jointree->quals, nullptr);
	q->targetList = (List *) remap_vars((Node *) q->targetList, mapping);
	q->jointree->quals = remap_vars(q->jointree->quals, mapping);
	return true;
}

// See probes.h.
bool
answer_declared_values(Query *q, const AnalystContext &ac)
{
	if (!plain_single_table_select(q) || (!q->distinctClause && !q->groupClause) || q->jointree->quals)
		return false;
	const Oid relid = linitial_node(RangeTblEntry, q->rtable)->relid;
	TablePolicy policy;
	if (ac.policy_table(relid) != relid || !load_table_policy(relid, policy))
		return false; // a child of a protected table is refused elsewhere
	// every column the query names: an enumerated, declared, single column
	std::vector<const ColumnPolicy *> cols;
	List *vars = pull_var_clause((Node *) q->targetList, 0);
	ListCell *lc;
	foreach (lc, vars) {
		Var *v = lfirst_node(Var, lc);
		const ColumnPolicy *c = v->varattno > 0 ? policy.find(v->varattno) : nullptr;
		if (!c || c->is_group() || c->domain.kind() != DomainKind::Enumerated)
			return false;
		if (std::find(cols.begin(), cols.end(), c) == cols.end())
			cols.push_back(c);
	}
	if (cols.empty())
		return false;
	// the product of the columns' declared values (each column once)
	std::map<AttrNumber, AttrNumber> mapping;
	std::string select = "SELECT ", from;
	List *colnames = NIL;
	for (size_t i = 0; i < cols.size(); ++i) {
		const std::string g = "g" + std::to_string(i);
		select += (i ? ", " : "") + g + ".v";
		from += (i ? " CROSS JOIN " : "") + std::string("unnest(") + declared_values_sql(*cols[i], cols[i]->domain.labels()) +
		        ") WITH ORDINALITY AS " + g + "(v, o)";
		colnames = lappend(colnames, makeString(pstrdup(cols[i]->name.c_str())));
		mapping[cols[i]->attnum] = static_cast<AttrNumber>(i + 1);
	}
	std::string order;
	for (size_t i = 0; i < cols.size(); ++i)
		order += (i ? ", g" : " ORDER BY g") + std::to_string(i) + ".o";
	replace_rte_with_sql(q, select + " FROM " + from + order, colnames);
	q->targetList = (List *) remap_vars((Node *) q->targetList, mapping);
	return true;
}

} // namespace dxpriv::pg
