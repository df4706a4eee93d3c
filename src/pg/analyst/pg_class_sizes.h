// pg_class as analysts see it when they read its size estimates (DuckDB's postgres attach reads
// relpages and reltuples while loading its catalog): the range table entry is swapped for the view
// dx.analyst_pg_class, whose relpages, reltuples and relallvisible are 0, -1 (never analysed) and 0
// for every relation, so no estimate of a protected table's row count ever reaches an analyst.
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

namespace dxpriv::pg {

// If rte reads pg_catalog.pg_class's size columns (or the whole row) and dx.analyst_pg_class
// exists, makes it read that view (same columns, same positions). Other reads of pg_class stay.
void swap_pg_class_sizes(RangeTblEntry *rte);

} // namespace dxpriv::pg
