// Conditions given as SQL text, parsed and checked (row_condition.h).
#include "pg/planner/row_condition.h"

#include "pg/analyst/query_admission.h"
#include "pg/guard.h"
#include "pg/metadata/policy.h"

extern "C" {
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parser.h"
}

#include <algorithm>

namespace dxpriv::pg {

namespace {

constexpr size_t kMaxConditionLength = 10000;
constexpr int kMaxConditionDepth = 1000; // far below any stack limit of the checks that follow

struct DepthWalk {
	int depth = 0, max = 0;
};

// The nesting depth of an expression tree (run inside pg_call: PostgreSQL's own stack check
// reports a tree too deep even for this walk).
bool
depth_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *d = static_cast<DepthWalk *>(ctx);
	d->max = std::max(d->max, ++d->depth);
	const bool stop = expression_tree_walker(node, reinterpret_cast<bool (*)()>(depth_walker), ctx);
	--d->depth;
	return stop;
}

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
	// the checks below walk the tree outside any error guard: bound its depth first
	DepthWalk depth;
	pg_call([&] { depth_walker((Node *) e, &depth); });
	if (depth.max > kMaxConditionDepth)
		fail(ERRCODE_STATEMENT_TOO_COMPLEX, label + " is nested too deeply",
		     "Write the condition with at most 1000 levels of nesting, e.g. with IN lists instead of chains of OR.");
	if (pg_value([&] { return contain_mutable_functions((Node *) e); }))
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
