// A UNION ALL of a total and its parts (issue 24): `SELECT NULL AS k, count(*) FROM t UNION ALL
// SELECT k, count(*) FROM t GROUP BY k` is GROUPING SETS ((), (k)) written by hand. It becomes that
// one grouping-sets release, so that it gets one allocation and the consistent totals of
// dxpriv.postprocess (the total equals the sum of its parts), like ROLLUP.
#pragma once

#include "pg/metadata/extension_objects.h"
#include "pg/analyst/analyst_guard.h"

extern "C" {
#include "nodes/parsenodes.h"
}

namespace dxpriv::pg {

// q: a parsed SELECT. When q is a UNION ALL (only UNION ALL nodes) of at least two branches, each
// a release level reading the same one relation with the same WHERE, no HAVING, ORDER BY, LIMIT,
// DISTINCT, window, sublink or grouping sets, whose output columns are, position by position,
// either the same aggregate expression in every branch or a GROUP BY key (the same expression in
// every branch that groups by it, a NULL constant of its type in the others), and no two branches
// group by the same set of keys, rewrites q in place into SELECT <q's columns> FROM (SELECT ...
// GROUP BY GROUPING SETS (<each branch's keys>)) s [q's ORDER BY/LIMIT] and returns true.
// Otherwise returns false and leaves q unchanged (each branch is then its own release, as before).
bool merge_union_into_grouping_sets(Query *q, const ExtensionObjects &ext, const AnalystContext *ac);

} // namespace dxpriv::pg
