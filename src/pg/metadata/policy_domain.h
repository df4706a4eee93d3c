// Declared domains of columns and column groups (range, enumerated, points, grid).
#pragma once

#include "pg/dxpriv.h"

extern "C" {
#include "utils/jsonb.h"
}

namespace dxpriv::pg {

// Reads {"min","max","step"} for a numeric or date column (is_range_type). Raises on bad input.
Domain parse_range_domain(Oid type, Jsonb *j);
// Reads {"values": [...]} for any byval or varlena column. Raises on bad input.
Domain parse_enum_domain(Oid type, Jsonb *j);
// Reads {"points": [[x, y], ...]}, {"points_table": "schema.table"} or {"grid": [{min,max,step}, ...]}
// for a group of `dims` columns. Raises on bad input.
Domain parse_points_domain(size_t dims, Jsonb *j);

} // namespace dxpriv::pg
