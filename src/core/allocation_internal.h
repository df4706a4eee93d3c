// Internal interface between the parts of the multi-linear allocator (allocation_*.cpp): shared
// helpers over constraint sets, the heuristic strategies and the exact solver. Not installed API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
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

// What plan_multi_linear reads of the cells' weights: the per-point vectors (DenseCellWeights) or
// a closed form (line_form.h), which must answer exactly what the per-point functions answer.
class CellWeights {
public:
	virtual ~CellWeights() = default;
	// Number of cells m.
	virtual std::size_t cells() const = 0;
	// plan_linear_query(sub, q_0, epsilon) (m == 1).
	virtual LinearNoisePlan single(double epsilon) const = 0;
	// build_constraints(sub, q).
	virtual ConstraintSet constraints() const = 0;
	// allocate(c, request, epsilon) for the set constraints() returned (a subclass that already
	// allocated on it may return that result).
	virtual std::vector<double> allocation(const ConstraintSet &c, const AllocationRequest &request, double epsilon) const
	{
		return allocate(c, request, epsilon);
	}
	// generalized_sensitivity(sub, q_k).
	virtual double sensitivity(std::size_t k) const = 0;
	// choose_grid(t, q_k, integer_weights).
	virtual double grid(std::size_t k, double t, bool &integer_weights) const = 0;
	// The weights rounded to the cells' grids (cells[k].grid; a cell with integer weights on grid 1
	// is kept), or nullptr when rounding changes no weight.
	virtual std::unique_ptr<CellWeights> rounded(const std::vector<LinearNoisePlan> &cells) const = 0;
	// The sub-universe and the per-point weights q[k][u], when the weights are per-point vectors
	// (nullptr for a closed form).
	virtual const SubUniverse *universe() const { return nullptr; }
	virtual const std::vector<std::vector<double>> *dense() const { return nullptr; }
};

// The per-point weights q[k][u] rounded to the cells' grids (cells[k].grid; a cell with integer
// weights on grid 1 is copied as it is); empty when rounding changes no weight.
std::vector<std::vector<double>> weights_on_grids(const std::vector<std::vector<double>> &q,
                                                  const std::vector<LinearNoisePlan> &cells);

// The per-point weights q[k][u] over sub (borrowed, or owned when moved in).
class DenseCellWeights final : public CellWeights {
public:
	DenseCellWeights(const SubUniverse &sub, const std::vector<std::vector<double>> &q) : sub_(sub), q_(q) {}
	DenseCellWeights(const SubUniverse &sub, std::vector<std::vector<double>> &&q)
	    : sub_(sub), owned_(std::move(q)), q_(owned_)
	{
	}
	std::size_t cells() const override { return q_.size(); }
	LinearNoisePlan single(double epsilon) const override;
	ConstraintSet constraints() const override;
	double sensitivity(std::size_t k) const override;
	double grid(std::size_t k, double t, bool &integer_weights) const override;
	std::unique_ptr<CellWeights> rounded(const std::vector<LinearNoisePlan> &cells) const override;
	const SubUniverse *universe() const override { return &sub_; }
	const std::vector<std::vector<double>> *dense() const override { return &q_; }

private:
	const SubUniverse &sub_;
	std::vector<std::vector<double>> owned_;
	const std::vector<std::vector<double>> &q_;
};

// Whether plan_multi_linear plans an all-pairs sub-universe by constraint generation (PairPlanner;
// default true; false builds every pair row, the reference, for the equality tests and
// dxpriv.exhaustive_analysis).
void set_pair_generation(bool on);
// How many PairPlanner::allocate() calls with two or more varying cells the pair tree's row
// searches completed so far in this process (for the tests: the path was taken, not the reference).
std::size_t pair_tree_generations();

// plan_multi_linear's allocations over all pairs of points without storing them
// (allocation_pairs.cpp): for a sub-universe of one points column (2+ dimensions) under an
// l1/l2/linf metric, whose sufficient edge set is every pair. allocate() runs the strategy on a
// working set (every presence row, the pairs attaining the column maxima, the pairs heaviest in the
// equal-split direction), then rates every presence and pair row against the scales; rows above 1
// (not in the set) join it, up to 512 per round, until none is left. The scales it returns
// therefore satisfy sum_k r_k(e) / (b_k eps) <= 1 on every row outside the set, and the set's
// rows within the rounding allocate() leaves (<= 1 + 1e-9); the column maxima are those of the
// whole set (colmax). They are the reference's scales when the strategy's result on the set is
// its result on the whole set (the exact solvers: an optimum over a subset that is feasible for
// the whole set is its optimum; progressive filling: every freeze event is attained on a row of
// the set), up to floating rounding. complete = false (and an empty result) when it gives up (a
// non-finite row, a zero distance with a weight change, 60 rounds, or a violated row already in the
// set): the caller then builds the reference set. Privacy never depends on the working set: the
// caller checks the final scales with ratio(), over every row.
class PairPlanner {
public:
	// nullptr when the path does not apply (switched off, not an all-pairs points column, fewer
	// than 2 or more than 16 cells, weights not dense; without the pair tree on the column, fewer
	// than 20,000 or more than 2e8 pairs). With the pair tree on the column
	// (ColumnMetric::pair_tree_applies), any number of pairs: with at most one cell varying over
	// the points, allocate() finds that cell's largest pair row with the tree (the other pair rows
	// are multiples of its unit vector, dominated by it), allocates once on the presence rows and
	// that row, and rates them; with two or more, the column maxima, the seeds and each round's
	// violated rows come from pair tree searches (PairSearch: the largest rows of the round's
	// rating, exactly) instead of passes over the pairs. ratio() bounds or searches the pair rows
	// the same way. When such a generation gives up and the stored set of every pair would pass
	// kMaxConstraintWork (32 per edge), allocate() throws CoreError(ProgramLimit) with the numbers.
	static std::unique_ptr<PairPlanner> make(const CellWeights &q);
	~PairPlanner();
	// Scales for `weights` (per-point, over the same sub-universe) under request at epsilon.
	std::vector<double> allocate(const CellWeights &weights, const AllocationRequest &request, double epsilon,
	                             std::vector<double> &colmax, bool &complete);
	// Whether the last allocate() rated every row of `weights` against exactly these scales at
	// epsilon and found none above 1 + 1e-9 (globally and per budget block): ratio() would pass.
	bool verified(const CellWeights &weights, const std::vector<double> &scales, double epsilon) const;
	// privacy_ratio over every presence and pair row of `weights`, restricted to `cells` when given
	// (the other cells count as 0).
	double ratio(const CellWeights &weights, const std::vector<double> &scales, double epsilon,
	             const std::vector<std::size_t> *cells) const;

private:
	struct Impl;
	PairPlanner(const SubUniverse &sub, bool tree);
	std::unique_ptr<Impl> impl_;
};

// plan_multi_linear over any CellWeights (allocation.h describes the calibration).
MultiLinearPlan plan_multi_linear(const CellWeights &q, double epsilon, const AllocationRequest &request,
                                  ConstraintSet *constraints);

// build_constraints' direct path (at most 16 cells) over edges its caller lists itself: `list`
// calls offer(a, d) once per edge in build_constraints' visiting order (the presence rows the
// prefilter keeps, then the column edges line by line), with a[k] = |q_k(u) - q_k(v)| (|q_k(u)| for
// a presence edge) and the edge's distance d; an edge whose row equals the previous edge's may be
// left out (the collector drops it). expected_edges and max_per_point size the storage as
// build_constraints does. The result is build_constraints' set, row for row.
ConstraintSet build_constraints_listed(std::size_t m, double expected_edges, std::size_t max_per_point,
                                       const std::function<void(const std::function<void(const double *, double)> &)> &list);

} // namespace detail
} // namespace dxpriv
