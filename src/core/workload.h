// Workloads of linear queries over a finite universe (the product of declared column domains), as
// used by the synthetic-release mechanisms (MWEM, SmallDB, median mechanism; MECHANISMS.md §3.10,
// §3.11, §7): all k-way marginals of the columns, or explicit weight vectors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/sensitivity.h"

namespace dxpriv {

// Largest number of queries of one workload.
constexpr std::size_t kMaxWorkloadQueries = 100000;
// Largest number of non-zero coefficients of one workload (sum over its queries).
constexpr std::size_t kMaxWorkloadEntries = 50000000;
// Grid of non-integer workload coefficients: every coefficient is rounded to a multiple of 2^-20
// once, when the workload is built, and the rounded query is the one answered (a surrogate with
// bias at most n * 2^-21 per query), so scores and measurements are exact integers in grid units.
constexpr int kWorkloadGridBits = 20;

// One linear query q(x) = sum_u coef[u] x_u, stored sparsely (universe indexes ascending).
struct WorkloadQuery {
	std::vector<std::uint32_t> index;
	std::vector<std::int64_t> units; // coefficient / grid (exact integers)
	std::string label;               // e.g. "age=30, sex=F" (marginals) or "q3" (weights)
};

// A finite set of linear queries on the points 0..universe-1 of a sub-universe (row-major, last
// column fastest, SubUniverse::unflatten). Coefficients are integers times `grid` (1, or 2^-20
// when some explicit weight is not an integer).
struct Workload {
	std::size_t universe = 0;
	double grid = 1;
	std::vector<WorkloadQuery> queries;

	// Dense coefficients of query k (universe entries, value units * grid).
	std::vector<double> dense(std::size_t k) const;
	// Exact answer of query k on integer counts (one per point), in grid units. Throws
	// CoreError(DataException) on overflow.
	__int128 exact_units(std::size_t k, const std::vector<std::int64_t> &counts) const;
	// Answer of query k on a real-valued histogram (one weight per point).
	double answer(std::size_t k, const std::vector<double> &hist) const;
	// Total number of non-zero coefficients.
	std::size_t entries() const;
};

// All k-way marginals of the columns of `sub`: for every set S of k columns and every combination
// of values v of S, the count of points u with u_S = v. 1 <= k <= number of columns (otherwise
// CoreError(InvalidParameter)). Labels are "name=value, ..." from column_names and the domains'
// labels. Throws CoreError(ProgramLimit) beyond kMaxWorkloadQueries / kMaxWorkloadEntries.
Workload marginal_workload(const SubUniverse &sub, const std::vector<std::string> &column_names, int k);

// Explicit weight vectors (each sub.size() finite values). Integer vectors keep grid 1; otherwise
// every coefficient is rounded to a multiple of 2^-20. Throws CoreError(InvalidParameter) for a
// wrong length, a non-finite weight or an empty list, (ProgramLimit) beyond the caps.
Workload weight_workload(const SubUniverse &sub, const std::vector<std::vector<double>> &weights);

// S(q) (sensitivity.h) of every query of the workload, in workload order.
std::vector<double> workload_sensitivities(const SubUniverse &sub, const Workload &w);

} // namespace dxpriv
