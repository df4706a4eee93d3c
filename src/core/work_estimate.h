// What analysing a query will cost, known before any expression is evaluated, so that a query
// over the limits is refused at once instead of after seconds of evaluation.
#pragma once

#include <cstddef>

#include "core/sensitivity.h"

namespace dxpriv {

// The work the noise calibration of m cells over sub needs, and the cap it is checked against.
// m == 1: generalized_sensitivity's line work (ColumnMetric::line_cost), cap kMaxSensitivityWork.
// m >= 2: build_constraints' edge work at its smallest cost per edge (32 units), over the same
// edge counts (presence edges, and per column k-1 for absolute, k(k-1)/2 for discrete and
// per-value, the enumerated edges otherwise), cap kMaxConstraintWork. One l1/l2/linf points column
// under the pair tree (ColumnMetric::pair_tree_applies) with m <= 16: presence edges + k log2 k (the
// tree's searches, PairPlanner, which count their own work against the cap as they go). The estimate never exceeds
// the work the calibration would count, so a query refused on it would have been refused later.
// edges receives the number of edges (m >= 2) or the sum of line costs (m == 1). Throws like
// SubUniverse::size and ColumnMetric::validate.
struct WorkEstimate {
	double work = 0;
	double cap = 0;
	double edges = 0;
	bool over() const { return work > cap; }
};
WorkEstimate calibration_work(const SubUniverse &sub, std::size_t m);

} // namespace dxpriv
