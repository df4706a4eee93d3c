// Generalized sensitivity S(q) of a per-row weight over the sub-universe of referenced columns.
#pragma once

#include <cstddef>
#include <vector>

#include "core/domain.h"
#include "core/metric.h"

namespace dxpriv {

// Hard cap on the number of points of a sub-universe (product of referenced domains).
constexpr std::size_t kMaxSubUniverse = 2000000;
// Cap on the elementary steps (pair evaluations) one generalized_sensitivity() call may take;
// only all-pairs metrics (matrix, theta2, l_p on multi-dimensional points) can reach it.
constexpr double kMaxSensitivityWork = 2e9;

// The referenced columns of one protected table and its presence distance d(x, ⊥).
// The record metric is d(u,v) = sum_c d_c(u_c, v_c), closed together with presence edges.
struct SubUniverse {
	std::vector<Domain> domains;        // one per referenced column
	std::vector<ColumnMetric> metrics;  // same length
	double presence = 1.0;              // > 0, may be +inf

	// Number of points: product of domain sizes. Throws CoreError(ProgramLimit) beyond
	// kMaxSubUniverse, with a hint to coarsen the domains or reference fewer columns.
	std::size_t size() const;
	// Flat index -> per-column point indexes (row-major, last column varies fastest).
	std::vector<std::size_t> unflatten(std::size_t flat) const;
};

// S(q) = max over edges (u,v) of |q(u) - q(v)| / d(u,v), where edges are one-column changes and
// presence edges (q(⊥) = 0). q has sub.size() entries in row-major order. Exact: the record
// metric is the path metric of these edges, so the maximum over all pairs is attained on them.
// Throws CoreError(DataException) when some q value is not finite, (ProgramLimit) when the lines
// would take more than kMaxSensitivityWork steps (ColumnMetric::line_cost).
double generalized_sensitivity(const SubUniverse &sub, const std::vector<double> &q);

} // namespace dxpriv
