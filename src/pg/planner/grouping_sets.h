// GROUPING SETS, ROLLUP and CUBE over dx aggregates: one release per grouping set.
//
// A query `SELECT k1, k2, <aggregates> FROM t [WHERE ...] GROUP BY ROLLUP (k1, k2) [HAVING ...]
// [ORDER BY ...] [LIMIT ...]` is rewritten, before analysis, into the UNION ALL of one grouped query
// per grouping set (keys outside the set output NULL, GROUPING() becomes its constant), with the
// ORDER BY and LIMIT on top. Each branch is then an ordinary release (every group of its keys'
// declared domain returned, charged), and the union is a post-processing wrapper: the statement is
// charged once, for the sum of its releases' epsilons.
#pragma once

#include "pg/dxpriv.h"

extern "C" {
#include "nodes/parsenodes.h"
}

namespace dxpriv::pg {

// If q (a SELECT over one table) has grouping sets, returns the UNION ALL query of its grouping
// sets (to replace q's contents); nullptr otherwise. Refuses (0A000) an ORDER BY on an expression
// that is not an output column, and more than 64 grouping sets.
Query *expand_grouping_sets_into_union(Query *q);

} // namespace dxpriv::pg
