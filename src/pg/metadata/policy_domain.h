// Declared domains of columns and column groups (range, enumerated, points, grid).
#pragma once

#include "pg/metadata/policy.h"

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

// The Datum of member m's coordinate at every point of a group (or of every point of a single
// column when m == 0): the values rows are mapped to.
std::vector<Datum> member_datums(const ColumnPolicy &col, size_t m);
// The Datum of every domain point, built with the column type's input rules (palloc'd in the
// current memory context). The domain indexers and the analyzer use this same function, so a
// clamped data value is bit-identical to the domain point the sensitivity was computed on.
std::vector<Datum> domain_datums(const Domain &domain, Oid type, int32 typmod);
// Numeric position of a value of a range-domain type (ints, floats, numeric, date).
double datum_to_ordinal(Datum value, Oid type);
// True when range domains are supported on the type.
bool is_range_type(Oid type);

} // namespace dxpriv::pg
