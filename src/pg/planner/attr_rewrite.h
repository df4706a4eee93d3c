// Aggregate spelling of the attribute-privacy releases: SELECT dx.attr_avg(col) FROM t becomes
// SELECT dx.attr_avg('t'::regclass, 'col'::name) (sql/55_attribute.sql), before anything else
// analyses the query.
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

namespace dxpriv::pg {

// When q's target list holds the marker aggregates dx.attr_avg("any") / dx.attr_sum("any"):
// refuses (0A000, with a hint) every shape but SELECT <markers of plain columns> FROM <one table>
// (no WHERE, GROUP BY, HAVING, DISTINCT, ORDER BY, LIMIT, FILTER, other expressions, subqueries,
// CTEs, set operations, joins) and, for that shape, replaces q by a query without FROM that calls
// the release functions with constant arguments, so the statement itself reads no table. Returns
// true when q was rewritten, false when it holds no such marker (left unchanged). in_definition:
// the query is being stored (view, rule, SQL function body): refused.
bool rewrite_attribute_aggregates(Query *q, bool in_definition);

} // namespace dxpriv::pg
