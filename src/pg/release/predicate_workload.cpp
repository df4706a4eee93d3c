// Workloads given as WHERE predicates (synthetic_release.h): each predicate is parsed as a boolean
// condition over the release's source table (row_condition.h), restricted to the chosen columns
// and evaluated on their declared domain points, never on a stored row: query k counts the points
// where predicate k holds (NULL counts as false).
#include "pg/release/synthetic_release.h"

#include "pg/executor/agg_support.h"
#include "pg/guard.h"
#include "pg/planner/row_condition.h"
#include "pg/planner/universe_eval.h"
#include "pg/metadata/policy.h"

extern "C" {
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
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

// Predicate k's boolean expression (row_condition.h), restricted to the released columns.
Expr *
parse_predicate(const ReleaseSource &src, const std::string &text, size_t k)
{
	const std::string label = "workload predicate " + std::to_string(k + 1);
	Expr *e = parse_row_condition(src.relid, src.policy, text, label, kPredicateHint);
	List *vars = pull_var_clause((Node *) e, 0);
	ListCell *lc;
	foreach (lc, vars) {
		const ColumnPolicy *c = src.policy.find(static_cast<const Var *>(lfirst(lc))->varattno);
		if (std::find(src.cols.begin(), src.cols.end(), c) == src.cols.end())
			fail(ERRCODE_INVALID_PARAMETER_VALUE, label + " references column \"" + c->name + "\", which is not released",
			     kPredicateHint);
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
	// the workload cap (weight_workload) before anything is parsed or evaluated: predicates x points
	// values are computed and held at once (100000 predicates over 2000000 points would be 1.6 TB)
	const double entries = static_cast<double>(labels.size()) * static_cast<double>(src.sub.size());
	if (entries > static_cast<double>(kMaxWorkloadEntries))
		fail(ERRCODE_PROGRAM_LIMIT_EXCEEDED,
		     "workload has " + std::to_string(labels.size()) + " predicates over " + std::to_string(src.sub.size()) +
		         " points of the chosen columns, over the limit of " + std::to_string(kMaxWorkloadEntries) +
		         " coefficients",
		     "Each predicate is evaluated at every combination of the chosen columns' declared values: use fewer "
		     "predicates, fewer columns or coarser domains.");
	std::vector<Expr *> exprs;
	for (size_t k = 0; k < labels.size(); ++k) {
		pg_call([] { CHECK_FOR_INTERRUPTS(); });
		exprs.push_back(parse_predicate(src, labels[k], k));
	}
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
