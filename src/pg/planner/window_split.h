// Window functions next to the aggregates of a release (issue 24): `SELECT g, count(*), count(*) *
// 1.0 / sum(count(*)) OVER () FROM t GROUP BY g` becomes a post-processing wrapper over the release
// `SELECT g, count(*) FROM t GROUP BY g`, so every window runs over released noisy values only.
#pragma once

#include "pg/metadata/extension_objects.h"
#include "pg/analyst/analyst_guard.h"

extern "C" {
#include "nodes/parsenodes.h"
}

namespace dxpriv::pg {

// q: a parsed SELECT. When q has aggregates and window functions at its own level and is a release
// level (a dx aggregate at its level, or, for analysts (ac non-null), a protected table in its own
// FROM), rewrites q in place into
//   SELECT <q's target list, every aggregate and GROUP BY key replaced by a column of s>
//   FROM (SELECT <GROUP BY keys>, <aggregates> FROM <q's FROM> WHERE <q's WHERE>
//         GROUP BY <q's GROUP BY> HAVING <q's HAVING>) AS s
//   WINDOW/ORDER BY/LIMIT/OFFSET/DISTINCT of q
// and returns true; the release s is then analysed like any wrapped release (release_wrappers.h).
// After the split the outer level reads nothing but s's released columns: a column of q's FROM
// left outside a GROUP BY key or an aggregate (PostgreSQL refuses those already) fails with 0A000
// (analysts: 42501). A q with WITH, sublinks, set operations, set-returning functions or FOR
// UPDATE is left unchanged (the release analysis then refuses its window as before).
bool split_window_level(Query *q, const ExtensionObjects &ext, const AnalystContext *ac);

// The step shared with series_limit_join.h: builds the release SELECT <q's GROUP BY keys>,
// <each distinct aggregate of q> FROM rtable/jointree GROUP BY <q's> HAVING <q's> and rewrites q's
// target list to read those columns from range-table index rtindex (q loses its GROUP BY, HAVING
// and aggregates). Vars of q's target list must already use the numbering of `rtable`. Sets raw and
// returns nullptr (q unchanged) when q's target list reads a column outside a key or an aggregate.
Query *extract_release(Query *q, List *rtable, FromExpr *jointree, int rtindex, bool &raw);
// A FROM entry for a release built by extract_release (alias dx_release).
RangeTblEntry *release_rte(Query *inner);

} // namespace dxpriv::pg
