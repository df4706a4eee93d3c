// Declared metrics of columns and column groups.
#pragma once

extern "C" {
#include "postgres.h"
}

#include "core/domain.h"
#include "core/metric.h"


extern "C" {
#include "utils/jsonb.h"
}

namespace dxpriv::pg {

// Reads the metric object of a declaration against its domain (labels must be the domain's).
// Raises on bad input; the caller validates the result against the domain.
ColumnMetric parse_metric(const Domain &domain, Jsonb *j);

} // namespace dxpriv::pg
