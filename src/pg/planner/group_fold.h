// A GROUP BY over declared columns folded into one pass: one ungrouped histogram over the
// sub-universe with the key columns replaces the per-row hash grouping; it is cut into one state
// per declared group, which the aggregates release (executor/group_fold.cpp).
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

#include "pg/metadata/extension_objects.h"

#include <map>

namespace dxpriv::pg {

// Attribute number of a placeholder Var for a group's slice column, remapped by remap_vars().
constexpr AttrNumber kFoldSlicePlaceholder = 32200;

// Contract: q is a grouped statement as rewrite_release leaves it after replace_with_group_source
// (and key_columns_into_source): range table entry 1 is the subquery
//   SELECT <columns>, true[, keys] FROM <table> UNION ALL SELECT <group values>, false[, keys] FROM unnest(...) g
// with mapping from the table's attribute numbers (and placeholders) to its columns, and every
// dxpriv aggregate of q's target list and HAVING clause not yet remapped. When dxpriv.group_fold is
// on and every dxpriv aggregate of q is a one-pass aggregate with key columns (planner/one_pass.h:
// the keys are declared columns, each point of them its own group) with the same shared arguments,
// the subquery becomes
//   SELECT <group values>, false[, keys], g.dx_slice
//   FROM (SELECT dx._fold_state(<the shared arguments, no key column left out>) FROM <table>) s,
//        ROWS FROM (unnest(...), dx._fold_slices(s.dx_state, <shape>)) g
// (one row per declared group, the empty ones included, in the same group order as the empty-group
// rows), each aggregate becomes dx._fold_count/_sum/_avg(<the slice column>) with the same direct
// arguments (parameters, table, shape), and mapping gains kFoldSlicePlaceholder; returns true.
// Otherwise leaves q unchanged and returns false. The fold state's arguments are the table's
// columns and dxpriv's constants only (checked): no analyst expression runs on a stored row.
// keep_qual: the table's branch has a unit profile's keep qual (planner/unit_group_profile.h), which
// stays the qual of the fold state's scan (the fold reads only the kept rows); else it has no qual.
bool fold_group_source(Query *q, std::map<AttrNumber, AttrNumber> &mapping, const ExtensionObjects &ext,
                       bool keep_qual = false);

} // namespace dxpriv::pg
