// Grouping-set releases: GROUPING SETS, ROLLUP and CUBE analysed and allocated as one release.
// Part of the analysis stage (planner/analyzer.h dispatches to it); names live in dxpriv::pg::analysis.
#pragma once

#include "pg/settings.h"
#include "pg/metadata/extension_objects.h"
#include "pg/metadata/policy.h"
#include "pg/analyst/analyst_guard.h"
#include "pg/planner/em_rewrite.h"
#include "pg/planner/group_keys.h"
#include "pg/planner/join_cells.h"
#include "pg/planner/public_joins.h"
#include "pg/planner/universe_eval.h"
#include "pg/executor/release_log.h"
#include "core/allocation.h"
#include "core/linear_query.h"
#include "core/unit_bound.h"
#include "core/work_estimate.h"
#include "core/sensitivity.h"
#include "core/release_interval.h"
#include "core/approximate_dp.h"
#include "pg/planner/release_analysis.h"

extern "C" {
#include "nodes/parsenodes.h"
}

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dxpriv::pg::analysis {

// The Discovery of q's dx aggregates.
Discovery discovery_of(Query *q, const ExtensionObjects &ext);

// Answer-cache key of a statement made of grouping-set releases: the releases' keys in set order.
uint64 grouping_sets_cache_key(const std::vector<Query *> &branches);

// Attributes the GROUP BY keys of q read, after the analyzer's check of each key expression.
std::set<AttrNumber> grouping_key_attnos(Query *q, const TablePolicy &policy);

// Answers a query with GROUPING SETS, ROLLUP or CUBE over dx aggregates (q, a release level) as
// ONE release: q becomes the UNION ALL of one grouped query per set (grouping_sets.h), whose cells
// -- every group of every set, on one sub-universe -- are allocated together within the
// statement's epsilon (a record moves one cell of every set, so Σ over all sets' cells of
// a_k(i,j)/b_k <= eps·d(i,j) is the statement's privacy condition), exactly as the cells of one
// multi-aggregate query; each branch then carries its cells' share of that plan. All branches
// share one answer-cache key and, per aggregate, one epsilon id: the statement is charged its
// aggregates' epsilons once (noise_params.h). One grouping set is an ordinary release. A query
// with parameters is only checked and left as it is: analyze_bound_query analyses it with its
// bound values. Over a join with public tables the join is taken once for every set
// (join_grouping_sets.h) and the sets are one release like a local one: one allocation over all
// their cells, one charge, consistent totals. ac: the analyst's context (nullptr for a table owner).
void rewrite_grouping_sets(Query *q, const ExtensionObjects &ext, const AnalystContext *ac);

} // namespace dxpriv::pg::analysis
