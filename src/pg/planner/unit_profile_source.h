// Privacy units: the row-local bounding by a cached unit profile (executor/unit_profile.h) in the SQL
// of the bounded row source.
#pragma once

#include "pg/planner/unit_source.h"

#include <string>

namespace dxpriv::pg {

// True when spec's rows may be bounded by dx._unit_keep: dxpriv.unit_profiles on and
// dxpriv.unit_bounding 'hash', a local table (not Citus) whose tree has its contents-version trigger
// now, and no count_units aggregate (its first-row flags need each unit's kept rows together: those
// statements keep the hash pass).
bool profile_bounding_applies(const UnitSource &spec);

// The qual of the level that reads the table (inh: the table's tree, else ONLY the table):
// dx._unit_keep((SELECT dx._unit_profile(relid, inh, unit attnum, k)), unit, tableoid, ctid). The plan
// holds only these constants (EXPLAIN VERBOSE shows no unit hash or threshold); the profile is the
// InitPlan's value at execution, computed by the leader under the statement's snapshot.
std::string profile_keep_clause(const UnitSource &spec, bool inh);

} // namespace dxpriv::pg
