// ORDER BY count(*) DESC LIMIT k under dxpriv.top_k = 'exponential' (issue 24): the k groups are
// chosen by the exponential mechanism's top-k (dx.top_k) instead of by the largest noisy counts,
// and their counts come from an independent release, so the values shown carry no selection bias.
#pragma once

#include "pg/metadata/extension_objects.h"
#include "pg/analyst/analyst_guard.h"

extern "C" {
#include "nodes/parsenodes.h"
}

namespace dxpriv::pg {

// q: a parsed SELECT. When dxpriv.top_k is 'exponential' and q is exactly
//   SELECT g [AS a], count(*) [AS b] FROM t [WHERE w] GROUP BY g ORDER BY count(*) DESC LIMIT k
// (g a declared column of the protected table t, count(*) an analyst's plain count(*) or
// dx.count(*) without epsilon, k a constant, no bound parameter, HAVING, OFFSET, DISTINCT, window
// or other output), replaces q by the analysed statement
//   SELECT r.g AS a, r.n AS b FROM (SELECT g, dx.count(1, e/2) AS n FROM t WHERE w GROUP BY g) r
//   JOIN dx.top_k('t', 'g', k, e/2, '<w>', ARRAY[<w's other columns>]) tk ON tk.value = r.g::text
//   ORDER BY tk.rank
// (e: dxpriv.epsilon, what the query costs without the setting) and returns true. Otherwise returns
// false and leaves q unchanged.
bool rewrite_top_k_order(Query *q, const ExtensionObjects &ext, const AnalystContext *ac);

} // namespace dxpriv::pg
