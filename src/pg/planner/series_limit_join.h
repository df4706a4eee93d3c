// Superset's series-limit join (issue 24): a release joined back to a top-N release of the same
// table, `SELECT a, b, count(*) FROM t JOIN (SELECT b AS b__, count(*) AS mme_inner__ FROM t GROUP
// BY b ORDER BY 2 DESC LIMIT 5) AS series_limit ON b = b__ GROUP BY a, b`, answered as two
// releases: the outer aggregation over every declared group, and the top-N subquery, whose
// released keys then filter the released rows (post-processing). Both are charged.
#pragma once

#include "pg/metadata/extension_objects.h"
#include "pg/analyst/analyst_guard.h"

extern "C" {
#include "nodes/parsenodes.h"
}

namespace dxpriv::pg {

// q: a parsed SELECT. When q aggregates (GROUP BY, no grouping sets or windows) over exactly one
// relation P and one non-LATERAL FROM subquery S joined by an inner join (JOIN ... ON or a comma
// with the condition in WHERE), S is a release level, and every condition is either on P's
// columns alone (it filters the outer release) or `<a GROUP BY key of q> = <an output column of
// S>`, with no column of S elsewhere in q, rewrites q in place into
//   SELECT <q's list over r's columns> FROM (SELECT <keys>, <aggregates> FROM P WHERE <P's
//   conditions> GROUP BY ... HAVING ...) r JOIN S ON r.<key> = S.<column> ... [ORDER BY/LIMIT]
// and returns true (the two releases are then analysed as wrapped releases: release_wrappers.h).
// Otherwise returns false and leaves q unchanged (the join is then refused as before). P must be a
// release level too (ac: analysts, P protected; otherwise dx aggregates in q).
bool split_series_limit_join(Query *q, const ExtensionObjects &ext, const AnalystContext *ac);

} // namespace dxpriv::pg
