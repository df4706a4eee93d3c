// Malloy's group_set pattern (issue 24): `FROM t CROSS JOIN generate_series(0, n, 1) AS group_set
// GROUP BY group_set, CASE WHEN group_set = k THEN c END, ...` computes n + 1 groupings of t in one
// statement. It is GROUPING SETS written by hand; it becomes that one grouping-sets release (one
// allocation, the consistent totals of dxpriv.postprocess), like union_grouping_sets.h.
#pragma once

#include "pg/metadata/extension_objects.h"
#include "pg/analyst/analyst_guard.h"

extern "C" {
#include "nodes/parsenodes.h"
}

namespace dxpriv::pg {

// q: a parsed SELECT. When q reads exactly one relation R and one generate_series(0, n[, 1]) of int4
// constants (1 <= n < 32, a cross join: no ON, no WHERE naming the series, no HAVING, DISTINCT,
// window, sublink, grouping sets or SRF in the select list), groups by the series column itself,
// and every other output column is one of
//   * a GROUP BY key `CASE WHEN group_set = k | group_set IN (k, ...) THEN <expr of R> END` (no ELSE),
//   * an aggregate expression of R, plain or as `CASE WHEN <same condition> THEN <aggregate expr> END`,
//   * the series column,
// the keys' expressions are pairwise different, and the n + 1 key sets (the keys whose condition
// holds for k, k = 0..n) are pairwise different, then q is rewritten in place into
// SELECT <q's columns, from GROUPING(keys)> FROM (SELECT keys, aggregates, GROUPING(keys) FROM R
// WHERE .. GROUP BY GROUPING SETS (<key set of 0>, .., <key set of n>)) s [q's ORDER BY/LIMIT],
// which returns the same rows (each k's rows of the cross join are R's rows once, grouped by that
// k's key set), and true is returned. Otherwise false, q unchanged (and refused as before).
bool merge_group_set_series(Query *q, const ExtensionObjects &ext, const AnalystContext *ac);

} // namespace dxpriv::pg
