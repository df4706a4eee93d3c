// Privacy units: refuses the bounded row sources that sort or group the stored unit values in the
// analyst's statement when the unit type's comparison functions could reach what the analyst controls.
#pragma once

#include "pg/metadata/policy.h"

namespace dxpriv::pg {

// Called when the bounded row source of `policy` sorts or groups by the unit column in the
// analyst's statement (dx.count_units, dxpriv.unit_bounding = 'sort', Citus): PostgreSQL's sort and
// grouping call the unit type's equality, ordering, comparison and hash functions there, as the
// analyst and under her search path and settings, outside the sealed path (elevated/sealed_scan.h
// and executor/unit_hash.h seal only dxpriv's own calls). Refuses (0A000, with a hint) a unit type
// one of whose functions is neither built into PostgreSQL nor written in C (a DBA's SQL or
// procedural operator class, which resolves names through the search path and reads settings).
void refuse_unsealed_unit_order(const TablePolicy &policy);

} // namespace dxpriv::pg
