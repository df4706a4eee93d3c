// Copies of a query tree that share its large constants (the per-point lookup tables) with the
// original instead of copying their bytes.
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/nodes.h"
}

namespace dxpriv::pg {

// copyObject(node), except that every pass-by-reference Const longer than 1 kB that the tree
// walkers reach points at the same bytes as the original's (as expression_tree_mutator's flat copy
// of a Const does): the copy must not outlive the original's memory, and neither may write those
// bytes (nothing does: a per-point table is read-only once built). The original is unchanged when
// this returns or errors (its Consts are put back in a PG_FINALLY). A Const node referenced twice
// is copied twice, both copies sharing; a large Const reached only where the walkers do not go is
// not expected in a query (query_tree_walker reaches every expression dxpriv writes its tables in).
// A PostgreSQL call: may ERROR.
Node *copy_sharing_large_consts(Node *node);

// Points every pass-by-reference Const longer than 1 kB that the tree walkers reach at the bytes of
// the first such Const of equal bytes (one memcmp per Const against each distinct table of its
// length), so that a tree's copies of one table (the one-pass aggregates' shared arguments, one
// copy per aggregate) are one table: its planning compares them by pointer (large_const_stand_ins.h)
// and a memo holds them once. free_duplicates: the tree owns every such Const's bytes alone (a fresh
// copyObject), and the bytes no Const points at any more are freed. A PostgreSQL call: may ERROR.
void share_equal_large_consts(Node *node, bool free_duplicates);

} // namespace dxpriv::pg
