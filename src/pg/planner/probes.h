// What BI tools send before any aggregate, answered without reading a row and without charging:
// zero-row probes of a table's columns (dbplyr's `SELECT * FROM t WHERE (0 = 1)`, pandas and
// Metabase's `... LIMIT 0`) and filter drop-downs (`SELECT DISTINCT zip FROM t`, `SELECT zip FROM t
// GROUP BY zip`) over columns with an enumerated domain, whose declared values are policy, not data.
#pragma once

#include "pg/analyst/analyst_context.h"

extern "C" {
#include "nodes/parsenodes.h"
}

namespace dxpriv::pg {

// If q (an analyst's SELECT on one protected table, without dx aggregates) is a zero-row probe
// (its WHERE folds to false or NULL, or LIMIT 0), replaces the table by an empty row source of the
// same columns (the table is never opened) and returns true.
bool admit_zero_row_probe(Query *q);

// If q lists the declared values of enumerated columns (DISTINCT or GROUP BY, no aggregate, no
// WHERE), replaces the table by those values (every combination, in declared order), admits it
// and returns true.
bool answer_declared_values(Query *q, const AnalystContext &ac);

} // namespace dxpriv::pg
