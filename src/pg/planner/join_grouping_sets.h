// GROUPING SETS, ROLLUP and CUBE over a join with public tables (issue 24): the join is taken once
// for every grouping set, so that the sets' branches read the protected table alone and share one
// allocation, one charge and the consistent totals of a local grouping-sets release.
// Part of the analysis stage (planner/release_grouping_sets.cpp calls it); names live in dxpriv::pg::analysis.
#pragma once

#include "pg/metadata/extension_objects.h"
#include "pg/planner/release_analysis.h"
#include "pg/planner/universe_eval.h"
#include "core/allocation.h"
#include "core/consistent_projection.h"

extern "C" {
#include "nodes/parsenodes.h"
}

#include <optional>
#include <vector>

namespace dxpriv::pg::analysis {

// q: a query with grouping sets whose FROM joins tables. Takes the join once for all the sets
// (public_joins.h take_public_join: the public tables' rows read into rows unless read_rows is
// false, the public columns turned into parameters, also in the GROUP BY keys and GROUPING()),
// leaving q's grouping sets in place for expand_grouping_sets_into_union. Returns false (q
// untouched) when no protected table is joined.
bool take_grouping_sets_join(Query *q, const ExtensionObjects &ext, PublicRows &rows, bool read_rows = true);

// q: such a query with bound parameters ($1). Checks, on a copy whose join is taken without reading
// the public rows, every grouping set's shape and columns; q stays as it is (analysed when planned
// with its values, parameters.h).
void check_grouping_sets_join(Query *q, const ExtensionObjects &ext);

// The consistent-totals system (core/consistent_projection.h) of component c of aggregate j of a
// join's grouping sets: parts in set order, their cells at offset[s] among the statement's cells
// (per cell, its weight at every point) and plan's. A point of a join
// falls in several groups of one set, so the atoms are not points: they are the groups of the finest
// set (the set whose keys hold every other set's keys), each adding to the group of its key values
// in every set. Returns nullopt (the cells are then released raw) when no set is finest, the finest
// set has more than kMaxConsistentAtoms groups, one of its groups has no group in another set, or a
// cell's weight at some point differs, in grid units, from the sum of that point's weights in the
// finest set's groups that fall in it (so every released exact cell is the sum of its atoms).
std::optional<ConsistentSystem> join_consistent_system(const std::vector<const ReleaseAnalysis *> &parts,
                                                       const std::vector<size_t> &offset,
                                                       const std::vector<std::vector<double>> &cells,
                                                       const MultiLinearPlan &plan, size_t j, int c);

} // namespace dxpriv::pg::analysis
