// Open GROUP BY keys on a table with a privacy unit: the bounded row source with the open keys and
// the unit, and the selection's count of distinct units per partition.
//
// The rows are bounded by the existing rule (planner/unit_source.h, replace_with_unit_source): a unit
// keeps its k' rows of smallest dx._unit_rank, k' = min(k, G) (apply_open_key_presence lowers the
// policy's k to G when max_groups_per_unit is declared), so it touches at most k' partitions; no value
// decides which rows are kept. The source also returns the open key columns and the unit column, so
// that the partitions are grouped on the stored keys and the selection counts each unit once per
// partition (doc/mechanisms.md, "Privacy units in open releases").
#pragma once

#include "pg/planner/unit_source.h"

extern "C" {
#include "nodes/parsenodes.h"
}

#include <map>
#include <vector>

namespace dxpriv::pg::analysis {

// replace_with_unit_source with `open_keys` and the unit column added to the columns read (they are
// output under their own names). Returns the mapping of replace_with_unit_source, which also maps
// the open keys' and the unit's attribute numbers. No empty-group rows (spec.empty_groups must be
// false: a partition with no row is never released).
std::map<AttrNumber, AttrNumber> replace_with_open_unit_source(Query *q, const UnitSource &spec,
                                                               const std::vector<AttrNumber> &open_keys);

// The selection's weight on a table with a privacy unit: NULL where `counted` (the WHERE weight,
// NULL on rows the WHERE drops) is NULL, else the unit column's 64-bit extended hash (the type's
// own hash support, seed 0) as float8. dx._partition_select aggregates it with DISTINCT, so a
// partition's count is the number of distinct hashes of units with a counted kept row: at most the
// number of such units (a collision only lowers a count), each unit adding at most 1 per partition.
Expr *unit_selection_weight(Expr *counted, Oid relid, const UnitPolicy &unit);

// Makes the selection aggregate DISTINCT over all its arguments (sets ressortgroupref and
// aggdistinct): each unit counts once per partition.
void make_distinct_selection(Aggref *agg);

} // namespace dxpriv::pg::analysis
