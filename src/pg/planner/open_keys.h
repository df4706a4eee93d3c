// Open GROUP BY keys: a release grouped by a column of an open domain (metadata/open_column.h).
//
// SELECT key, count(*), sum(x), avg(x) FROM t [WHERE ...] GROUP BY [declared keys,] key, with key
// a bare open column or a time bucket of an open date column (open_buckets.h). The release is analysed WITHOUT the open key (detach_open_keys): its cells
// are the declared groups, calibrated with the presence distance min(p0, w/2) (w: the smallest
// distance between two values of an open key), which makes every partition (key value x declared
// group) eps*d-private although the keys are never enumerated (proof: doc/mechanisms.md, "Open
// domains"). After the rewrite (attach_open_keys) the stored column is grouped on directly (no
// expression of the analyst runs on it), and HAVING gets dx._partition_select(...): a partition is
// released only when the private partition selection keeps it. The selection spends dxpriv.epsilon
// and the table's per-query delta in the same allocation as the aggregates.
//
// Privacy units: each unit keeps its min(k, G) rows of smallest rank, and the selection counts
// distinct units per partition (open_unit_source.h); the selection's per-partition epsilon is
// eps_sel / max(S, k'/p0') and its delta delta / (2 k') (doc/mechanisms.md, "Open domains").
// dx.count_units counts a unit once in each partition where it has a kept counted row (at most k'
// partitions) and is calibrated as a count of the unit's rows.
//
// Refused (0A000 unless stated): an open column anywhere but as a bare GROUP BY key and bare
// output column (42501: WHERE, HAVING, aggregate arguments, expressions, DISTINCT aggregates),
// joins, subquery/CTE wrappers and grouping sets (open keys are allowed only where the analyzer
// opens an OpenKeysAllowed scope: a top-level release), non-Laplace noise, and a table without a per-query delta (55000).
#pragma once

#include "pg/metadata/extension_objects.h"
#include "pg/metadata/policy.h"
#include "pg/planner/release_analysis.h"
#include "pg/planner/unit_source.h"

extern "C" {
#include "nodes/parsenodes.h"
}

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dxpriv::pg::analysis {

// Open keys are accepted only while such a scope is open (the analyzer's top-level releases).
class OpenKeysAllowed {
public:
	OpenKeysAllowed();
	~OpenKeysAllowed();
	OpenKeysAllowed(const OpenKeysAllowed &) = delete;
	OpenKeysAllowed &operator=(const OpenKeysAllowed &) = delete;

private:
	bool previous_;
};

// What detach_open_keys took out of a query, to put back after the rewrite.
struct OpenKeyPlan {
	bool active = false;
	Oid relid = InvalidOid;
	std::vector<AttrNumber> attnums;   // the open key columns
	std::vector<std::string> names;
	double distance = 0;               // smallest distance between two values of an open key
	double presence = 0;               // the table's presence distance p0
	double delta = 0;                  // the table's per-query delta
	std::vector<TargetEntry *> entries; // target entries that are a bare open key (as detached)
	std::vector<AttrNumber> resnos;     // their positions (the rewrite copies target entries)
	std::vector<Expr *> exprs;          // what runs: the bare column, or a guarded bucket (open_buckets.h)
	std::vector<Expr *> written;        // their expressions as the analyst wrote them
	std::vector<SortGroupClause *> clauses; // the GROUP BY items taken out
	// set by attach_open_keys
	double epsilon = 0;                // the selection's epsilon
	std::string mechanism;             // describe() of the selector
	double part_epsilon = 0, part_delta = 0;
	std::uint64_t unit_partitions = 0; // privacy unit: the most partitions one unit holds (k'), else 0
};

// Called first by rewrite_query. When q groups by a bare open column of its table, validates the
// statement (refusals above), takes the open keys out of GROUP BY and the output (a NULL constant
// stands in for them during the analysis) and returns an active plan, which also makes
// open_key_presence() apply to the analysis of q. Otherwise returns an inactive plan and changes
// nothing.
OpenKeyPlan detach_open_keys(Query *q, const ExtensionObjects &ext);

// True when q (one table, grouped) groups by an open key or its bucket: rewrite_grouping_sets then
// makes each grouping set a release of its own (its own selection, allocation and charge).
bool groups_by_open_key(Query *q);

// Puts the detached keys back into q's output and GROUP BY: as written, or (guarded) with the
// expressions dxpriv runs (a time bucket guarded by open_buckets.h).
void restore_open_keys(Query *q, const OpenKeyPlan &plan, bool guarded = false);

// Ends the effect of the active plan on the analysis (also on error, see OpenKeyScope).
void end_open_key_analysis();

// Applied by analyse_release to the policy it loaded: with an active plan for that table, the
// presence distance becomes min(p0, w/2); on a table with a privacy unit, the unit keeps
// k' = min(k, G) rows (G = max_groups_per_unit when declared), without group limits.
void apply_open_key_presence(TablePolicy &policy);

// Called by rewrite_release instead of replace_with_unit_source for an open release on a table
// with a privacy unit (open_unit_source.h): the bounded source also outputs the open keys and the
// unit. The mapping is kept for attach_open_keys.
std::map<AttrNumber, AttrNumber> open_unit_source(Query *q, const UnitSource &spec);

// A grouping set's share of a joint open release (open_grouping_sets.h): the selection's position
// and the statement's aggregate count, and its epsilon and delta (the statement's split by sets).
struct OpenSetShare {
	int agg_index = 0, agg_count = 0;
	double epsilon = 0, delta = 0;
};

// After rewrite_release and before the identities are stamped: puts the open keys back (stored
// column, grouped on), adds dx._partition_select to HAVING with its parameters, renumbers the
// aggregates' count, and returns the selection's epsilon (added to the allocation). With `share`,
// the selection spends share->epsilon and share->delta (plan.delta becomes share->delta) at
// position share->agg_index of share->agg_count aggregates.
double attach_open_keys(Query *q, const ExtensionObjects &ext, const ReleaseAnalysis &a, OpenKeyPlan &plan,
                        const OpenSetShare *share = nullptr);

// The analysis state of detach_open_keys, set again for one grouping set of a joint open release
// (open_grouping_sets.h): the table, the presence min(p0, w/2) shared by all sets and the set's open
// keys (none for a set without them: its analysis gets the same presence). end_open_key_analysis
// ends it.
void resume_open_key_analysis(Oid relid, double presence, const std::vector<AttrNumber> &keys);

// Sets the aggregate count of every dx aggregate the analyzer rewrote in node (an expression or a
// Query, descending into subqueries) to count.
void set_rewritten_agg_count(Node *node, const ExtensionObjects &ext, int count);

// After stamping: the statement's answers are neither cached nor replayed (several partitions share
// one declared group's cells); dx.last_release() lists them only for the partitions the selection
// kept (open_release_log.h), and dx.explain shows the selection.
void register_open_release(const std::map<int, int64> &charge_ids, const OpenKeyPlan &plan, size_t aggregates);

} // namespace dxpriv::pg::analysis
