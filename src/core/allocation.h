// Multi-linear queries (several cells answered together): privacy constraints, budget allocation
// between the cells (MECHANISMS.md §3.8) and the per-cell noise plans.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/linear_query.h"
#include "core/sensitivity.h"

namespace dxpriv {

// Cap on the work of building constraints: (number of edges visited) x (number of cells).
constexpr double kMaxConstraintWork = 2e9;
// Cap on the doubles stored in a ConstraintSet after dropping zero and duplicate rows (512 MB).
constexpr std::size_t kMaxConstraintEntries = 64u * 1024u * 1024u;

// Normalised privacy constraints of m cells: one row r(e) = (a_1(e), ..., a_m(e)) / d(e) per edge
// e of a sufficient edge set of the record metric, with a_k(e) = |q_k(u) - q_k(v)|. Laplace scales
// b_k (one per cell, 0 = exact answer) are private iff max_e sum_k r_k(e) / b_k <= epsilon
// (Theorem 1 with eps'_k = 1/b_k). All-zero rows and exact duplicates are never stored; rows
// dominated by another row may be dropped (they never bind). Entries are finite and >= 0.
struct ConstraintSet {
	std::size_t cells = 0;     // m
	std::vector<double> rows;  // count() x cells, row-major

	// Number of rows.
	std::size_t count() const { return cells == 0 ? 0 : rows.size() / cells; }
	// Pointer to the `cells` entries of row i (i < count()).
	const double *row(std::size_t i) const { return rows.data() + i * cells; }
};

// Constraints of the cells q[0..m-1] over a sub-universe; q[k] has sub.size() entries in the
// row-major order of sensitivity.h. Edges: presence edges (u, ⊥) with q(⊥) = 0 when
// sub.presence is finite, and one-column changes along every line of the sub-universe, using a
// sufficient edge set of the column metric (ColumnMetric::for_each_edge: adjacent points for
// Absolute, none for None, all finite-distance pairs for Discrete and PerValue, ...). Exact:
// every pair of records satisfies the constraint when the edges do (the record metric is the
// path metric of these edges, and a_k obeys the triangle inequality). Throws CoreError(InvalidParameter) for
// a bad sub-universe (as generalized_sensitivity), (DataException) for a non-finite weight,
// (Internal) for mismatched sizes or m == 0, and (ProgramLimit) when edges x cells exceeds
// kMaxConstraintWork, when the stored rows exceed kMaxConstraintEntries, or when a weight
// difference over a zero or underflowing distance makes a row infinite.
ConstraintSet build_constraints(const SubUniverse &sub, const std::vector<std::vector<double>> &q);

// Constraints over an explicit N x N metric d (all pairs i < j with finite d; no presence edge:
// bounded model, MECHANISMS.md §3.8). d must be symmetric with zero diagonal and entries >= 0
// (may be +inf); q[k] has N entries. For tests and experiments. Throws like build_constraints.
ConstraintSet build_constraints_dense(const std::vector<std::vector<double>> &d,
                                      const std::vector<std::vector<double>> &q);

// How the privacy budget is shared between the cells (MECHANISMS.md §3.8).
enum class AllocationStrategy {
	EqualSplit,          // Strategy 1: each noisy cell gets 1/m_active of every edge budget
	EqualScale,          // Strategy 2: one common scale for all noisy cells
	BudgetDistribution,  // Strategy 3: Algorithm 3 with w_k ∝ s_k (progressive filling, exact limit)
	Optimal              // exact minimiser of sum_k b_k^2 (never worse than the three above)
};

// SQL-facing name: "equal_split", "equal_scale", "algorithm3", "optimal".
const char *strategy_name(AllocationStrategy s);
// Parses a name of strategy_name (case-insensitive); false when unknown (out is untouched).
bool parse_strategy(const std::string &name, AllocationStrategy &out);

// Diagnostics of one allocate() call (for benchmarks and explain). The solver fields are filled
// only for Optimal with two or more noisy cells.
struct AllocationStats {
	std::size_t rounds = 0;            // cutting-plane rounds
	std::size_t working_rows = 0;      // rows in the final working set
	std::size_t newton_steps = 0;      // Newton steps over all rounds
	double relative_gap = 0;           // certified (objective - dual bound) / objective at the end
	AllocationStrategy winner = AllocationStrategy::Optimal; // which candidate was returned
};

// Laplace scales b_k for the cells of c at budget epsilon (finite > 0): 0 for a cell whose
// column of c is identically 0 (answered exactly), > 0 otherwise. Every strategy satisfies
// privacy_ratio <= 1 up to rounding (<= 1 + 1e-12). With exactly one noisy cell every strategy
// returns the exact optimum s/epsilon, s = max_e r(e) (the single-query scale of §3.7).
// BudgetDistribution computes the limit of Algorithm 3 exactly (progressive filling, at most m
// freeze events) instead of iterating. Optimal minimises sum_k b_k^2 (convex in x_k = 1/b_k:
// min sum x_k^-2 s.t. R x <= epsilon) by cutting planes around a log-barrier Newton solver, with
// a certified relative gap ~1e-10, then returns the best of itself and the three heuristics.
// Data-independent: depends only on the constraints. Throws CoreError(InvalidParameter) for a
// bad epsilon, (Internal) for a malformed set.
std::vector<double> allocate(const ConstraintSet &c, AllocationStrategy s, double epsilon,
                             AllocationStats *stats = nullptr);

// max_e sum_k r_k(e) / (b_k * epsilon): <= 1 means private (T4). +inf when some r_k(e) > 0 has
// b_k == 0 (or b_k is negative or NaN); 0 for an empty constraint set. Throws
// CoreError(Internal) when scales.size() != c.cells.
double privacy_ratio(const ConstraintSet &c, const std::vector<double> &scales, double epsilon);

// Throws CoreError(Internal, "allocation violates the privacy condition") when
// privacy_ratio(c, scales, epsilon) > 1 + 1e-9. The SQL side calls it before every release.
void check_allocation(const ConstraintSet &c, const std::vector<double> &scales, double epsilon);

// How each cell of a multi-linear query is answered (cells[k] as in plan_linear_query).
struct MultiLinearPlan {
	std::vector<LinearNoisePlan> cells;
	AllocationStrategy strategy = AllocationStrategy::BudgetDistribution;
};

// Calibrates m cells together: allocates on the raw weights, chooses each cell's grid from its
// preliminary scale exactly as plan_linear_query does, rounds every cell to its grid, rebuilds
// the constraints on the rounded weights, allocates again and checks the allocation. Per cell:
// scale = b_k, grid, integer_weights, and sensitivity = b_k * epsilon. When a single cell is
// noisy its S(q_k) comes from generalized_sensitivity (same value, same bits), so with m == 1 the
// result equals plan_linear_query for every strategy. Throws like plan_linear_query and
// build_constraints, and CoreError(Internal) if the final allocation fails check_allocation.
MultiLinearPlan plan_multi_linear(const SubUniverse &sub, const std::vector<std::vector<double>> &q,
                                  double epsilon, AllocationStrategy s);

// Laplace scale plain epsilon-DP would need for the same cells if every pair of records were
// protected only at the smallest distance of the record metric (MECHANISMS.md §3.8 baseline,
// generalised): Delta Q / (eps_min * epsilon), where
//   Delta Q = max over ALL pairs of records (u, v) of sum_k |q_k(u) - q_k(v)|, the absent record
//             ⊥ (q = 0) included when sub.presence is finite (not restricted to metric edges:
//             a DP mechanism protects every pair), and
//   eps_min = min over the edges of build_constraints (presence edges included) of d(e), which
//             is the smallest distance between two distinct records.
// Improvement factor of cell k: plain_dp_scale / b_k. Returns 0 when Delta Q == 0 or no two
// records are at a finite distance. Throws CoreError(ProgramLimit) when neither the all-pairs
// scan (N^2/2 x m) nor the sign-vector scan (2^(m-1) x N x m) fits in kMaxConstraintWork, and
// validates like build_constraints.
double plain_dp_scale(const SubUniverse &sub, const std::vector<std::vector<double>> &q, double epsilon);

// Same baseline over an explicit metric: max_{i<j} sum_k a_k(i,j) / (min_{i<j} d(i,j) * epsilon)
// (+inf when two points are at distance 0, 0 when Delta Q == 0 or every distance is +inf).
double plain_dp_scale_dense(const std::vector<std::vector<double>> &d, const std::vector<std::vector<double>> &q,
                            double epsilon);

} // namespace dxpriv
