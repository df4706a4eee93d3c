// GROUPING SETS, ROLLUP and CUBE over dx aggregates: one release per grouping set.
//
// A query `SELECT k1, k2, <aggregates> FROM t [WHERE ...] GROUP BY ROLLUP (k1, k2) [HAVING ...]
// [ORDER BY ...] [LIMIT ...]` is rewritten, before analysis, into the UNION ALL of one grouped query
// per grouping set (keys outside the set output NULL, GROUPING() becomes its constant), with the
// ORDER BY and LIMIT on top. Each branch returns every group of its keys' declared domain; the
// analyzer allocates the cells of all the branches together, within the statement's epsilon
// (analyzer.cpp, rewrite_grouping_sets), and the statement is charged that epsilon once.
#pragma once

extern "C" {
#include "postgres.h"
}


#include <vector>

extern "C" {
#include "nodes/parsenodes.h"
}

namespace dxpriv::pg {

// If q (a SELECT over one table) has grouping sets, returns the UNION ALL query of its grouping
// sets (to replace q's contents); nullptr otherwise. Refuses (0A000) an ORDER BY on an expression
// that is not an output column, and more than 64 grouping sets.
Query *expand_grouping_sets_into_union(Query *q);

// The grouped queries of the grouping sets of a query expand_grouping_sets_into_union returned, in
// set order: the subqueries of its union, or the query itself for one set.
std::vector<Query *> grouping_set_branches(Query *u);

} // namespace dxpriv::pg
