// Privacy units: the row source of a query on a table with a privacy unit, bounded per unit.
#pragma once

#include "pg/metadata/policy.h"
#include "pg/planner/group_keys.h"

#include "core/unit_bound.h"

extern "C" {
#include "nodes/parsenodes.h"
}

#include <map>
#include <vector>

namespace dxpriv::pg {

// Attribute number of placeholder Vars (bool) for "this row is its unit's first counted row in its
// group" of count_units aggregate j (kUnitFirstPlaceholder + j), remapped by remap_vars().
constexpr AttrNumber kUnitFirstPlaceholder = 32100;

// A placeholder Var for the first-row flag of count_units aggregate j.
Var *unit_first_var(size_t j);

// The weight of count_units aggregate j in the rewritten query: 1 on the row flagged as its unit's
// first counted row of its group (and, grouped with empty-group rows, a real row), else NULL.
Expr *unit_count_weight(size_t j, bool grouped);

// What replace_with_unit_source builds.
struct UnitSource {
	const TablePolicy *policy = nullptr;
	std::vector<AttrNumber> columns;       // attributes the rewritten query reads, in this order
	ContributionBound bound;               // the query's effective bound (ContributionBound::for_query)
	const GroupKeys *keys = nullptr;       // GROUP BY: also one empty row per group (nullptr: none)
	bool empty_groups = true;              // GROUP BY: add the empty-group rows (false on a Citus table,
	                                       // whose groups come from one state: planner/distributed.h)
	Expr *group_index = nullptr;           // GROUP BY: the row's group, over Vars of the table
	std::vector<Expr *> distinct_weights;  // per count_units aggregate: 1 or NULL at the row's point
	std::vector<AttrNumber> flag_columns;  // count_units: flags per (unit, group, these columns), e.g. the
	                                       // open keys of a partition (open_unit_source.h); sort bounding
	bool unit_value = false;               // also the unit's value, mapped from kUnitValuePlaceholder (profile
	                                       // bounding only: planner/unit_count_set.h)
	bool distributed = false;              // a Citus table: the window-function bounding (pushed to the
	                                       // workers with the unit's co-located rows), whatever the setting
};

// Replaces the protected table (range table entry 1 of q) by its rows bounded per unit, with the rule
// of core/unit_bound.h unit_kept_rows (README "Stable contribution bounding"): each row gets the rank
// dx._unit_rank(tableoid, ctid) (SipHash-2-4 under a key drawn for this execution, independent of
// every value), and a unit keeps its max_rows rows of smallest rank; then, per count_units aggregate,
// each unit's first kept counted row in each group is flagged (unit_first_counted). spec.bound must
// have no group limits (ContributionBound::for_query): XX000 otherwise. With GROUP BY the
// empty-group rows of replace_with_group_source follow (UNION ALL). The grouping expression and the
// count_units weights are dxpriv's lookups (point tables), evaluated on the table's rows in the
// innermost level; no expression of the analyst's runs there. Under dxpriv.unit_bounding = 'hash'
// (the default; not on Citus tables) the bounding is one hash pass (dx._unit_bound, parallel) and
// the kept rows are emitted by dx._unit_rows (planner/unit_hash_source.h); under 'sort', window
// functions make it one sort of (unit, rank), plus a sort of the kept rows by (unit, group) for
// count_units under GROUP BY (PostgreSQL runs WindowAgg in the leader). Both keep the same rows.
// Returns the new attribute number of each column, of every kUnitFirstPlaceholder + j, and (GROUP BY)
// of kPresentPlaceholder.
std::map<AttrNumber, AttrNumber> replace_with_unit_source(Query *q, const UnitSource &spec);

} // namespace dxpriv::pg
