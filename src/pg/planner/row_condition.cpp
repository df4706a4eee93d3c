// Conditions given as SQL text, parsed and checked (row_condition.h).
#include "pg/planner/row_condition.h"

#include "pg/analyst/analyst_guard.h"
#include "pg/guard.h"

extern "C" {
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parser.h"
}

namespace dxpriv::pg {

namespace {

constexpr size_t kMaxConditionLength = 10000;

} // namespace

// See row_condition.h.
Expr *
parse_row_condition(Oid relid, const TablePolicy &policy, const std::string &text, const std::string &label,
                    const char *hint)
{
	if (text.empty() || text.size() > kMaxConditionLength)
		fail(ERRCODE_INVALID_PARAMETER_VALUE, label + " must be between 1 and 10000 characters long", hint);
	Query *q = nullptr;
	int statements = 0;
	std::string relname;
	pg_call([&] { relname = qualified_relation_name(relid); });
	const std::string sql = "SELECT (" + text + ")::pg_catalog.bool FROM " + relname;
	try {
		pg_call([&] {
			List *raw = raw_parser(sql.c_str(), RAW_PARSE_DEFAULT);
			statements = list_length(raw);
			if (statements != 1)
				return;
			ParseState *ps = make_parsestate(nullptr);
			ps->p_sourcetext = pstrdup(sql.c_str());
			q = transformTopLevelStmt(ps, linitial_node(RawStmt, raw));
			free_parsestate(ps);
		});
	} catch (const PgError &e) {
		// the error's cursor would point into the wrapper statement: name the condition instead
		fail(e.edata->sqlerrcode, label + " is not a valid condition: " + e.what(), hint);
	}
	if (statements != 1 || q->commandType != CMD_SELECT || list_length(q->rtable) != 1 ||
	    linitial_node(RangeTblEntry, q->rtable)->rtekind != RTE_RELATION ||
	    linitial_node(RangeTblEntry, q->rtable)->relid != relid || !q->jointree || q->jointree->quals ||
	    list_length(q->jointree->fromlist) != 1 || list_length(q->targetList) != 1 || q->setOperations || q->cteList ||
	    q->groupClause || q->groupingSets || q->havingQual || q->sortClause || q->distinctClause || q->limitCount ||
	    q->limitOffset || q->windowClause || q->rowMarks || q->utilityStmt)
		fail(ERRCODE_INVALID_PARAMETER_VALUE, label + " must be one condition on the table's columns", hint);
	if (q->hasSubLinks || q->hasAggs || q->hasWindowFuncs || q->hasTargetSRFs)
		fail(ERRCODE_INVALID_PARAMETER_VALUE,
		     label + " cannot contain subqueries, aggregates, window or set-returning functions", hint);
	Expr *e = linitial_node(TargetEntry, q->targetList)->expr;
	if (contain_mutable_functions((Node *) e))
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, label + " cannot call functions whose value may change (now(), random(), ...)",
		     hint);
	require_builtin_immutable((Node *) e, label.c_str());
	List *vars = pull_var_clause((Node *) e, 0);
	ListCell *lc;
	foreach (lc, vars) {
		const Var *v = static_cast<const Var *>(lfirst(lc));
		if (v->varattno <= 0 || !policy.find(v->varattno))
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE, label + " references a column that is not declared", hint);
	}
	return e;
}

} // namespace dxpriv::pg
