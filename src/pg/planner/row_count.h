// Row-count queries over a release (SQLAlchemy's query.count(), knex, Superset): `SELECT count(*)
// FROM (<grouped release>) s`. The release returns exactly one row per declared group (every group
// of the declared domains, those WHERE excludes at every point dropped: data-independent), so the
// number of rows is public: the statement becomes `SELECT <groups>` and is answered without reading
// the table or charging. (Without this the planner drops the unused aggregates and the admission
// check refuses a scan that feeds no release.)
#pragma once

#include "pg/metadata/extension_objects.h"

extern "C" {
#include "nodes/parsenodes.h"
}

namespace dxpriv::pg {

// q: a wrapper whose releases were just analysed and rewritten (rewrite_wrapped_releases). When q
// is exactly SELECT <count(*) or count(<non-null constant)>, constants ...> FROM (<one rewritten
// release>) [AS s] with nothing else (no WHERE, GROUP BY, HAVING, window, set operation or CTE at
// q's level) and the release has no HAVING, LIMIT/OFFSET, DISTINCT or set-returning function,
// replaces q by SELECT <its group count>::bigint, ... (no FROM) and returns true. Otherwise leaves
// q unchanged (the release then answers, and is charged, as before).
bool answer_row_count_query(Query *q, const ExtensionObjects &ext);

} // namespace dxpriv::pg
