// Shard pruning on Citus tables: the conjuncts of an analysed WHERE that Citus may prune shards with
// without changing the answer (issue 13).
//
// The analyzer evaluates a WHERE clause on the declared points only and removes it from the query: a
// row is weighed at its point, and rows whose point the WHERE rejects weigh nothing. Citus therefore
// sees no predicate and scans every shard. A conjunct `distribution column = constant` selects, on
// the rows, exactly the rows whose point the conjunct keeps when no other value is mapped to that
// constant's point: an integer column whose declared range has step 1 (every value but the two
// clamping ends is its own point), or a text column whose declared labels hold the constant at any
// index but 0 (where NULL and undeclared values go). Such conjuncts are put back, unchanged
// (built-in equality, a constant), so that Citus sends the partial sums to one shard; the rows they
// drop all weigh nothing, so the answer, its sensitivity and its charge are those of the full scan.
#pragma once

#include "pg/metadata/policy.h"

extern "C" {
#include "nodes/parsenodes.h"
}

namespace dxpriv::pg {

// The conjuncts of `where` (the analysed WHERE of a release on Citus table relid, already bound and
// folded) that are exact shard-pruning predicates as above, ANDed; nullptr when there is none or the
// table is not hash-distributed by a declared column.
Node *shard_pruning_quals(Node *where, Oid relid, const TablePolicy &policy);

} // namespace dxpriv::pg
