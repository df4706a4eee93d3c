// Privacy units on Citus tables distributed by the unit column: the per-shard row-local bounding
// (citusunit) in the SQL of the bounded row source.
#pragma once

#include "pg/planner/unit_source.h"

#include <string>

namespace dxpriv::pg {

// True when spec's rows (a Citus table: spec.distributed) may be bounded on the workers by
// dx._unit_keep_shard: dxpriv.unit_profiles on and dxpriv.unit_bounding 'hash', the table
// hash-distributed by its unit column (so every row of a unit is in one shard, and a shard's own
// profile keeps exactly the unit's k rows of smallest rank) with no placement on the coordinator
// (Citus would run that shard's task in the analyst's backend, where dx._unit_keep_shard refuses
// her), and no count_units aggregate nor flag
// columns (their first-row flags need each unit's kept rows together: the window path). Any other
// Citus table keeps the window-function bounding (on the coordinator when not co-located).
bool shard_bounding_applies(const UnitSource &spec);

// The qual of the level that reads the table: dx._unit_keep_shard(unit, tableoid, ctid, k,
// 'unit column'). The task query Citus sends to each shard holds only these (no relation OID of the
// coordinator, no profile byte); the worker keys the profile on the shard's own tableoid.
std::string shard_keep_clause(const UnitSource &spec);

} // namespace dxpriv::pg
