// Privacy units: count_units beside other aggregates, counted in the profile's one scan (unitmixed2).
#pragma once

#include "pg/planner/release_analysis.h"
#include "pg/metadata/extension_objects.h"

extern "C" {
#include "nodes/primnodes.h"
}

namespace dxpriv::pg {

// Attribute number of the placeholder Var for the unit column's value in the bounded row source
// (UnitSource::unit_value), remapped by remap_vars().
constexpr AttrNumber kUnitValuePlaceholder = 32090;

// True when the release a (after analysis, before the kinds' rewrite; set: its grouping set, or
// nullptr) is an ungrouped statement on a local table with a privacy unit whose rows
// profile_bounding_applies to (planner/unit_profile_source.h), with at least one count_units
// aggregate and at least one other linear aggregate (a statement of count_units alone takes the
// DISTINCT ON source of planner/unit_distinct_source.h), no exponential-mechanism aggregate, no
// join, no open key. Its count_units aggregates are then dx._noisy_count_units over the profile's
// kept rows (make_unit_count_set), the other aggregates as for a table without a unit, and the row
// source is the keep qual with the unit's value (UnitSource::unit_value): one scan. The analysis,
// the sensitivity (the unit's k, unit_bound_of) and the charge do not depend on this choice;
// rewrite_release asks once and uses the answer for both the aggregates and the row source.
bool unit_count_set_applies(const analysis::ReleaseAnalysis &a, bool distributed, bool set);

// Makes agg (a count_units aggregate) dx._noisy_count_units(weight, group_index, params, unit):
// weight is the aggregate's dx._weigh lookup at the row's point (1 or NULL: WHERE and FILTER), unit
// the placeholder Var of the unit's value (kUnitValuePlaceholder, the column's type and collation).
void make_unit_count_set(Aggref *agg, Expr *weight, Expr *group_index, Const *params, const TablePolicy &policy,
                         const ExtensionObjects &ext);

} // namespace dxpriv::pg
