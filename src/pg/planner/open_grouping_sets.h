// ROLLUP / CUBE / GROUPING SETS with an open GROUP BY key as ONE release (joint open release).
//
// Every set is a grouped branch of the UNION ALL of grouping_sets.h. The open keys are detached from
// each branch (open_keys.h), every branch is analysed on the sub-universe of all the sets' declared
// keys with one presence p0' = min(p0, w/2) (w: the smallest open distance of any set), and ONE
// allocation calibrates every cell of every set within the statement's epsilon (as the declared
// ROLLUP does: release_grouping_sets.h). Each set with open keys then gets its own partition
// selection at epsilon eps_sel / m and delta / m (m: the sets with open keys); a set without them
// (the grand total, a set of declared keys) is an ordinary grouped release of the same allocation.
// The statement is charged eps_agg + eps_sel and delta once, in one ledger row (proof:
// doc/mechanisms.md, "Grouping sets with an open key"). dx.last_release() labels each set's rows by
// its own keys; the answer cache replays the statement's released rows (ledger/open_row_cache.h).
// No consistent totals (a set's partitions are not its declared groups).
#pragma once

#include "pg/metadata/extension_objects.h"

extern "C" {
#include "nodes/parsenodes.h"
}

#include <functional>
#include <vector>

namespace dxpriv::pg::analysis {

// Called by rewrite_grouping_sets when some set groups by an open key: u is the UNION ALL of the
// sets (grouping_sets.h), branches its grouped queries. Rewrites them as one joint release, makes
// q the union, admits each branch (`admit`) and returns true. With bound parameters it only checks
// the sets (copies) and leaves q as it is, returning true: analyze_bound_query analyses it with its
// values. Returns false, changing nothing, when the statement takes the per-set path instead (one
// set, a table with a privacy unit: each set its own release, charged the sum).
bool rewrite_open_grouping_sets(Query *q, Query *u, const std::vector<Query *> &branches, const ExtensionObjects &ext,
                                const std::function<void(Query *)> &admit);

} // namespace dxpriv::pg::analysis
