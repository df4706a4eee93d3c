// The units of work (core/work_budget.h) the pair tree (pair_tree.h) charges per operation and for
// its construction: weighted by the operation's arithmetic, so that one unit costs about the same
// CPU time whatever the dimension, the norm and the number of cells (one unit: about one pair of
// 2-d points rated for one cell).
#pragma once

#include <cstddef>

#include "core/pair_tree.h"

namespace dxpriv {

// Units per operation of one search over a tree of `dims`-dimensional points with `cells` weights
// per point, `varying` of them bounded by the search, and `rows` rows rated.
struct PairTreeCosts {
	double rate;      // one point pair rated
	double bound;     // one pair of nodes bounded (box gap, every varying cell's bound, the rows)
	double self;      // one node's bound of its inner pairs
	double joint;     // the fixed part of one joint bound (residual terms of the varying cells)
	double direction; // one direction bound of a joint bound
};
PairTreeCosts pair_tree_costs(std::size_t dims, std::size_t cells, std::size_t varying, std::size_t rows,
                              PairNorm norm);

// The units of building a pair tree over `points` points of `dims` dimensions with `cells` weights
// per point (the k-d tree, one least-squares fit per node and cell, the tree-order copies), known
// before it is built: the tree charges it to the statement's budget first and refuses when it
// does not fit (with the numbers), so that no construction runs past the limit.
double pair_tree_setup_work(std::size_t points, std::size_t dims, std::size_t cells);

} // namespace dxpriv
