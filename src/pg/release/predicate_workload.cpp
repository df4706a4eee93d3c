// Workloads given as WHERE predicates (synthetic_release.h): each predicate is parsed as a boolean
// expression over the release's source table, checked (one table, chosen columns only, built-in
// immutable functions, no subquery, aggregate or set operation) and evaluated on the declared
// domain points of the chosen columns, never on a stored row: query k counts the points where
// predicate k holds (NULL counts as false).
#include "pg/release/synthetic_release.h"

#include "pg/analyst/analyst_guard.h"
#include "pg/executor/agg_support.h"
#include "pg/guard.h"
#include "pg/planner/universe_eval.h"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

#include <algorithm>

namespace dxpriv::pg {

namespace {

constexpr const char *kPredicateHint =
    "Give each workload query as a condition on the chosen columns, e.g. ARRAY['age >= 30 AND sex = ''F''', "
    "'region IN (''north'', ''east'')']; only built-in immutable functions and operators are allowed.";
constexpr size_t kMaxPredicateLength = 10000;

[[noreturn]] void
refuse(int code, const std::string &what, size_t k)
{
	fail(code, "workload predicate " + std::to_string(k + 1) + " " + what, kPredicateHint);
}

// The boolean expression of predicate k over the source (varno 1), parsed without running any
// hook or reading any row: SELECT (<predicate>)::boolean FROM <source>, whose shape must stay
// exactly that (the predicate's text cannot add a table, a condition, a set operation, ...).
Expr *
parse_predicate(const ReleaseSource &src, const std::string &text, size_t k)
{
	if (text.empty() || text.size() > kMaxPredicateLength)
		refuse(ERRCODE_INVALID_PARAMETER_VALUE, "must be between 1 and 10000 characters long", k);
	Query *q = nullptr;
	int statements = 0;
	std::string relname;
	pg_call([&] { relname = qualified_relation_name(src.relid); });
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
		// the error's cursor would point into our wrapper statement: report the predicate instead
		refuse(e.edata->sqlerrcode, std::string("is not a valid condition: ") + e.what(), k);
	}
	if (statements != 1 || q->commandType != CMD_SELECT || list_length(q->rtable) != 1 ||
	    linitial_node(RangeTblEntry, q->rtable)->rtekind != RTE_RELATION ||
	    linitial_node(RangeTblEntry, q->rtable)->relid != src.relid || !q->jointree || q->jointree->quals ||
	    list_length(q->jointree->fromlist) != 1 || list_length(q->targetList) != 1 || q->setOperations || q->cteList ||
	    q->groupClause || q->groupingSets || q->havingQual || q->sortClause || q->distinctClause || q->limitCount ||
	    q->limitOffset || q->windowClause || q->rowMarks || q->utilityStmt)
		refuse(ERRCODE_INVALID_PARAMETER_VALUE, "must be one condition on the source table's columns", k);
	if (q->hasSubLinks || q->hasAggs || q->hasWindowFuncs || q->hasTargetSRFs)
		refuse(ERRCODE_INVALID_PARAMETER_VALUE, "cannot contain subqueries, aggregates, window or set-returning functions", k);
	Expr *e = linitial_node(TargetEntry, q->targetList)->expr;
	if (contain_mutable_functions((Node *) e))
		refuse(ERRCODE_FEATURE_NOT_SUPPORTED, "cannot call functions whose value may change (now(), random(), ...)", k);
	require_builtin_immutable((Node *) e, "workload predicates");
	List *vars = pull_var_clause((Node *) e, 0);
	ListCell *lc;
	foreach (lc, vars) {
		const Var *v = static_cast<const Var *>(lfirst(lc));
		const ColumnPolicy *c = v->varattno > 0 ? src.policy.find(v->varattno) : nullptr;
		if (!c)
			refuse(ERRCODE_INSUFFICIENT_PRIVILEGE, "references a column that is not declared", k);
		if (std::find(src.cols.begin(), src.cols.end(), c) == src.cols.end())
			refuse(ERRCODE_INVALID_PARAMETER_VALUE, "references column \"" + c->name + "\", which is not released", k);
	}
	return e;
}

} // namespace

// See synthetic_release.h.
std::vector<std::vector<double>>
predicate_weights(const ReleaseSource &src, ArrayType *predicates, std::vector<std::string> &labels)
{
	if (ARR_NDIM(predicates) != 1 || ARR_HASNULL(predicates))
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "workload predicates must be a one-dimensional array without nulls",
		     kPredicateHint);
	labels = text_array_strings(predicates);
	if (labels.empty())
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "a workload needs at least one predicate", kPredicateHint);
	if (labels.size() > kMaxWorkloadQueries)
		fail(ERRCODE_PROGRAM_LIMIT_EXCEEDED, "a workload may hold at most " + std::to_string(kMaxWorkloadQueries) +
		                                         " predicates", kPredicateHint);
	std::vector<Expr *> exprs;
	for (size_t k = 0; k < labels.size(); ++k)
		exprs.push_back(parse_predicate(src, labels[k], k));
	const UniverseValues v = evaluate_over_universe(src.relid, src.cols, src.sub, exprs);
	std::vector<std::vector<double>> weights(labels.size(), std::vector<double>(src.sub.size(), 0.0));
	for (size_t k = 0; k < labels.size(); ++k)
		for (size_t u = 0; u < src.sub.size(); ++u)
			weights[k][u] = v.is_null[k][u] || v.value[k][u] == 0 ? 0.0 : 1.0;
	return weights;
}

// See synthetic_release.h.
Workload
predicate_workload(const ReleaseSource &src, ArrayType *predicates)
{
	std::vector<std::string> labels;
	Workload w = weight_workload(src.sub, predicate_weights(src, predicates, labels));
	for (size_t k = 0; k < w.queries.size(); ++k)
		w.queries[k].label = labels[k].substr(0, 200);
	return w;
}

} // namespace dxpriv::pg
