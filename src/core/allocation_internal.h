// Internal interface between the parts of the multi-linear allocator (allocation_*.cpp): shared
// helpers over constraint sets, the heuristic strategies and the exact solver. Not installed API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/allocation.h"

namespace dxpriv {
namespace detail {

// Rejects an epsilon that is not a positive finite number (CoreError(InvalidParameter)).
void check_epsilon(double epsilon);

// Column maxima s_k = max_e r_k(e) of a constraint set; argmax (when given) receives the first
// row attaining each maximum (count() for an all-zero column).
std::vector<double> column_max(const ConstraintSet &c, std::vector<std::size_t> *argmax = nullptr);

// Dot product of row e with a dense vector z (m entries).
inline double
row_dot(const ConstraintSet &c, std::size_t e, const double *z)
{
	const double *v = c.values.data() + c.value_start[e];
	const std::size_t len = c.value_start[e + 1] - c.value_start[e];
	double sum = 0;
	if (c.is_dense(e)) {
		for (std::size_t k = 0; k < len; k++)
			sum += v[k] * z[k];
	} else {
		const std::uint32_t *idx = c.indexes.data() + c.index_start[e];
		for (std::size_t t = 0; t < len; t++)
			sum += v[t] * z[idx[t]];
	}
	return sum;
}

// Progressive filling x_k = base_k + rate_k t (Strategy 3 in its exact limit without base and
// rate); see allocation_heuristics.cpp.
std::vector<double> water_fill(const ConstraintSet &c, const std::vector<double> &colmax, double epsilon,
                               std::vector<std::size_t> *binding, const std::vector<double> *base = nullptr,
                               const std::vector<double> *rate = nullptr);
// Scales from inverse scales x (0 -> exact answer), raised if rounding left them infeasible.
std::vector<double> scales_from_inverse(const ConstraintSet &c, const std::vector<double> &x, double epsilon);
// Number of cells that get noise (scale > 0).
std::size_t count_noisy(const std::vector<double> &b);
// Sum of squared scales.
double sum_squares(const std::vector<double> &b);
// Strategy 1: b_k = m_active * s_k / epsilon.
std::vector<double> equal_split(const std::vector<double> &colmax, std::size_t n_active, double epsilon);
// Strategy 2: one scale max_e sum_k r_k(e) / epsilon for every noisy cell.
std::vector<double> equal_scale(const ConstraintSet &c, const std::vector<double> &colmax, double epsilon);

// Minimiser of sum_k weight_k b_k^2 over private scales with x_k = 1/b_k >= x_floor_k (x_floor
// empty or 0: no floor), by cutting planes around a barrier solver started from x_start (private,
// >= the floors) and the seed rows; see allocation_solver.cpp. weight_k > 0, or >= 0 for a cell
// with a floor. Returns x (0 for exact cells), or an empty vector when the solver failed.
std::vector<double> weighted_inverse(const ConstraintSet &c, const std::vector<double> &colmax,
                                     const std::vector<std::size_t> &argmax, const std::vector<double> &weight,
                                     const std::vector<double> &x_floor, const std::vector<double> &x_start,
                                     const std::vector<std::size_t> &seed_rows, double epsilon, AllocationStats *stats);

// Whether build_constraints skips the presence rows dominated by a per-cell champion (default
// true; false gives the exhaustive reference, for the equality tests).
void set_presence_prefilter(bool on);
bool presence_prefilter();

// Whether build_constraints drops a row equal to the row offered just before it without hashing
// (default true; false gives the exhaustive reference, for the equality tests).
void set_repeat_shortcut(bool on);

// Whether build_constraints computes the rows of a query of at most 16 cells directly from the
// weights, assembling only the rows that differ from the previous edge's (default true; false
// gives the per-point reference, for the equality tests and dxpriv.exhaustive_analysis).
void set_direct_rows(bool on);

// Whether build_constraints inserts each hashed row a few rows after it was offered, with its
// hash slot prefetched in between (default true; false inserts at once, for the equality tests
// and dxpriv.exhaustive_analysis). Rows are inserted in the order offered either way.
void set_insert_lag(bool on);

} // namespace detail
} // namespace dxpriv
