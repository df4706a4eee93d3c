// Release identities: charge ids, epsilon ids and the answer-cache key stamped on a rewritten statement.
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

// The allocation a release's aggregates belong to (noise_params.h): every aggregate carries its id
// and totals, and the statement is charged the totals whatever the planner keeps.
struct AllocationIdentity {
	double epsilon = 0; // all of the allocation's aggregates: linear cells and exponential mechanism
	double delta = 0;   // the linear mechanism's delta (0: pure epsilon)
};

struct StampContext {
	const ExtensionObjects *ext;
	uint64 key;
	AllocationIdentity allocation;
	int64 alloc_id = 0;
	std::map<int, int64> charge_ids;  // aggregate index -> charge id
	std::map<int, int64> epsilon_ids; // aggregate of a grouping-set statement -> its sets' epsilon id
};

// A random id < 2^53 (exact in float8) for charge and epsilon ids.
int64 random_id();

// Walker that writes the charge id and cache key into every rewritten aggregate's parameters.
bool stamp_walker(Node *node, void *ctx);

// Key of a rewritten query for the answer cache: a hash of its tree without what only presents
// the released rows (output names, table aliases, ORDER BY, LIMIT/OFFSET: the release is the
// aggregates, not their presentation) and without source locations (so spacing and letter case
// of keywords do not matter), and of the role asking.
uint64 query_cache_key(Query *q);

// Gives the rewritten aggregates their charge ids, the query's cache key and the identity of their
// allocation; returns the charge id of every aggregate index.
std::map<int, int64> stamp_identities(Query *q, const ExtensionObjects &ext, const AllocationIdentity &allocation);

} // namespace dxpriv::pg::analysis
