// Multi-linear queries (several cells answered together): privacy constraints, budget allocation
// between the cells (MECHANISMS.md §3.8) and the per-cell noise plans.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/linear_query.h"
#include "core/sensitivity.h"

namespace dxpriv {

// Cap on the work of building constraints, in units of about 10 ns: (number of edges visited) x
// (32 for the per-edge hashing and bookkeeping + the cells an edge touches, at most
// min(m, 2 x the largest number of non-zero cells of one point)).
constexpr double kMaxConstraintWork = 2e9;
// Cap on the entries stored in a ConstraintSet after dropping zero, duplicate and dominated rows
// (64M entries: 512 MB of values, plus 4 bytes of cell index per entry of a sparse row).
constexpr std::size_t kMaxConstraintEntries = 64u * 1024u * 1024u;
// Work budget of the exact Delta Q of plain_dp_scale (pairs x cells touched per pair).
constexpr double kMaxBaselineWork = 2.5e8;

// Normalised privacy constraints of m cells: one row r(e) = (a_1(e), ..., a_m(e)) / d(e) per edge
// e of a sufficient edge set of the record metric, with a_k(e) = |q_k(u) - q_k(v)|. Laplace scales
// b_k (one per cell, 0 = exact answer) are private iff max_e sum_k r_k(e) / b_k <= epsilon
// (Theorem 1 with eps'_k = 1/b_k). All-zero rows and exact duplicates are never stored; rows
// dominated by another row may be dropped (they never bind). Entries are finite and >= 0.
// Storage: a row with more than 2m/3 non-zero entries is dense (all m entries, zeros included,
// no indexes); any other row is sparse (its non-zero entries and their cells, ascending). GROUP BY
// cells give sparse rows (an edge touches the cells of at most two groups), so memory and every
// pass over the rows scale with the non-zeros, not with rows x cells.
struct ConstraintSet {
	std::size_t cells = 0;                       // m
	std::vector<std::size_t> value_start{0};     // count() + 1 offsets into values
	std::vector<double> values;                  // entries of all rows, row after row
	std::vector<std::size_t> index_start{0};     // count() + 1 offsets into indexes (empty span: dense row)
	std::vector<std::uint32_t> indexes;          // cells of the entries of sparse rows

	// Number of rows.
	std::size_t count() const { return value_start.size() - 1; }
	// Stored entries over all rows (m per dense row, the non-zeros of a sparse row).
	std::size_t stored_entries() const { return values.size(); }
	// Whether row i is stored densely.
	bool is_dense(std::size_t i) const { return index_start[i] == index_start[i + 1]; }
	// Calls f(k, r_k(e_i)) for the stored entries of row i in ascending k (a dense row also
	// reports its zero entries).
	template <typename F>
	void for_each(std::size_t i, F &&f) const
	{
		const double *v = values.data() + value_start[i];
		const std::size_t len = value_start[i + 1] - value_start[i];
		if (is_dense(i)) {
			for (std::size_t k = 0; k < len; k++)
				f(k, v[k]);
		} else {
			const std::uint32_t *idx = indexes.data() + index_start[i];
			for (std::size_t t = 0; t < len; t++)
				f(static_cast<std::size_t>(idx[t]), v[t]);
		}
	}
	// Entry r_k of row i.
	double at(std::size_t i, std::size_t k) const;
	// Dense copy of row i (m entries).
	std::vector<double> row(std::size_t i) const;
};

// Constraints of the cells q[0..m-1] over a sub-universe; q[k] has sub.size() entries in the
// row-major order of sensitivity.h. Edges: presence edges (u, ⊥) with q(⊥) = 0 when
// sub.presence is finite, and one-column changes along every line of the sub-universe, using a
// sufficient edge set of the column metric (ColumnMetric::for_each_edge: adjacent points for
// Absolute, none for None, all finite-distance pairs for Discrete and PerValue, ...). Exact:
// every pair of records satisfies the constraint when the edges do (the record metric is the
// path metric of these edges, and a_k obeys the triangle inequality). Throws
// CoreError(InvalidParameter) for a bad sub-universe (as generalized_sensitivity),
// (DataException) for a non-finite weight,
// (Internal) for mismatched sizes or m == 0, and (ProgramLimit) when the work (see
// kMaxConstraintWork) exceeds the cap, when the stored rows exceed kMaxConstraintEntries, or
// when a weight difference over a zero or underflowing distance makes a row infinite.
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
	MinTotalVariance,    // exact minimiser of sum_k b_k^2 in the cells' raw units (formerly "optimal")
	Relative             // default: exact minimiser of sum over estimates of V_g / V_g° with b_k <= b_k^eq
};

// Largest number of noisy cells the exact solvers are run on (Relative: its progressive filling
// above it; the SQL side runs algorithm3 instead of MinTotalVariance above it).
constexpr std::size_t kMaxExactCells = 400;

// SQL-facing name: "equal_split", "equal_scale", "algorithm3", "min_total_variance", "relative".
const char *strategy_name(AllocationStrategy s);
// Parses a name of strategy_name (case-insensitive), or "optimal", the old name of
// min_total_variance; false when unknown (out is untouched).
bool parse_strategy(const std::string &name, AllocationStrategy &out);

// Cells answering one estimate together (the sum S and count C of an average): the estimate's
// error proxy is V = sum_i weights[i] * b_{cells[i]}^2 (for S/C by the delta method,
// Var(S/C) ~ (Var S + mu^2 Var C) / C^2: weights {1, mu^2}, mu a data-independent proxy of the mean).
struct Estimate {
	std::vector<std::size_t> cells;
	std::vector<double> weights; // one per cell, finite and >= 0
};

// What allocate() shares and how.
//   strategy: as above.
//   estimates: groups of cells forming one estimate (Relative only; the other strategies ignore
//     them). A cell in no estimate is its own estimate with weight 1. A cell is in at most one.
//   block_epsilon / block_of: empty for one budget shared by all cells (the strategy allocates
//     epsilon jointly). Otherwise cell k belongs to block block_of[k] and the cells of block j are
//     allocated by the strategy within block_epsilon[j] alone (sum_{k in j} r_k(e)/b_k <=
//     eps_j for every row); the block epsilons must add up to the allocate() epsilon, so that the
//     whole allocation is private at it. An estimate lies within one block.
struct AllocationRequest {
	AllocationStrategy strategy = AllocationStrategy::Relative;
	std::vector<Estimate> estimates;
	std::vector<double> block_epsilon;
	std::vector<std::size_t> block_of;
};

// Diagnostics of one allocate() call (for benchmarks and explain). The solver fields are filled
// only for MinTotalVariance and Relative with two or more noisy cells (summed over blocks).
struct AllocationStats {
	std::size_t rounds = 0;            // cutting-plane rounds
	std::size_t working_rows = 0;      // rows in the largest final working set
	std::size_t newton_steps = 0;      // Newton steps over all rounds
	double relative_gap = 0;           // certified (objective - dual bound) / objective at the end
	AllocationStrategy winner = AllocationStrategy::Relative; // which candidate was returned (last block)
};

// Laplace scales b_k for the cells of c at budget epsilon (finite > 0): 0 for a cell whose
// column of c is identically 0 (answered exactly), > 0 otherwise. Every strategy satisfies
// privacy_ratio <= 1 up to rounding (<= 1 + 1e-12). With exactly one noisy cell every strategy
// returns the exact optimum s/epsilon, s = max_e r(e) (the single-query scale of §3.7).
// BudgetDistribution computes the limit of Algorithm 3 exactly (progressive filling, at most m
// freeze events) instead of iterating. MinTotalVariance minimises sum_k b_k^2 (convex in
// x_k = 1/b_k: min sum x_k^-2 s.t. R x <= epsilon) by cutting planes around a log-barrier Newton
// solver, with a certified relative gap ~1e-10, then returns the best of itself and the three
// heuristics. Data-independent: depends only on the constraints. Throws
// CoreError(InvalidParameter) for a bad epsilon, (Internal) for a malformed set.
std::vector<double> allocate(const ConstraintSet &c, AllocationStrategy s, double epsilon,
                             AllocationStats *stats = nullptr);

// allocate() with estimates and budget blocks (AllocationRequest). Relative, per budget block of
// m_a >= 2 noisy cells (b_k° = s_k/eps the cell's scale with the block's whole epsilon to itself,
// b_k^eq = m_a s_k/eps its equal_split scale):
//   minimise  sum_g V_g(b) / V_g°   subject to privacy and b_k <= b_k^eq for every cell,
// where V_g° is the minimum of V_g when estimate g has the block's epsilon to itself (for a single
// cell: V = b^2, V° = b°^2). Invariant to rescaling a cell (or an estimate's cells and its
// weights consistently), and no cell is noisier than under equal_split (up to rounding, 1e-9
// relative). Solved like MinTotalVariance with floors x_k >= 1/b_k^eq (cells on a row the floors
// fill are pinned at b_k^eq); the result is the best, by this objective, of the solver, the
// relative progressive filling (all y_k = b_k°/b_k rise together from 1/m_a) and every heuristic
// that satisfies the caps, equal_split included. Above kMaxExactCells noisy cells the solver is
// skipped. Throws like allocate(), and CoreError(Internal) for a malformed request.
std::vector<double> allocate(const ConstraintSet &c, const AllocationRequest &request, double epsilon,
                             AllocationStats *stats = nullptr);

// Per-cell weights w_k of the Relative objective sum_g V_g / V_g° = sum_k w_k b_k^2 for one
// budget of epsilon (0 for exact cells). A cell alone: w = (epsilon / s_k)^2. An estimate with
// two or more noisy cells of positive weight: w_k = weights_k / V°; with one such cell, that
// cell alone (its zero-weight partners get 0); with none, each noisy cell alone. For tests and
// experiments (and used by allocate). Throws like allocate().
std::vector<double> relative_weights(const ConstraintSet &c, const std::vector<Estimate> &estimates, double epsilon);

// max_e sum_k r_k(e) / (b_k * epsilon): <= 1 means private (T4). +inf when some r_k(e) > 0 has
// b_k == 0 (or b_k is negative or NaN); 0 for an empty constraint set. Throws
// CoreError(Internal) when scales.size() != c.cells.
double privacy_ratio(const ConstraintSet &c, const std::vector<double> &scales, double epsilon);

// Throws CoreError(Internal, "allocation violates the privacy condition") when
// privacy_ratio(c, scales, epsilon) > 1 + 1e-9. The SQL side calls it before every release.
void check_allocation(const ConstraintSet &c, const std::vector<double> &scales, double epsilon);

// How each cell of a multi-linear query is answered (cells[k] as in plan_linear_query).
// epsilon_share[k]: the epsilon cell k effectively received, s_k / b_k with s_k = max_e r_k(e)
// on the final constraints (= eps * b_k° / b_k: the epsilon at which a release of this cell alone
// at its Laplace scale would be private; its block's or the query's epsilon for a lone noisy
// cell, eps/m under equal_split), 0 for an exact cell.
struct MultiLinearPlan {
	std::vector<LinearNoisePlan> cells;
	std::vector<double> epsilon_share;
	AllocationStrategy strategy = AllocationStrategy::BudgetDistribution;
};

// Calibrates m cells together: allocates on the raw weights, chooses each cell's grid from its
// preliminary scale exactly as plan_linear_query does, rounds every cell to its grid, rebuilds
// the constraints on the rounded weights (reusing the raw ones when rounding changed no weight,
// e.g. integer weights on grid 1), allocates again and checks the allocation (against epsilon,
// and against each block's epsilon on its own cells). Per cell:
// scale = b_k, grid, integer_weights, and sensitivity = b_k * (its block's epsilon, or epsilon).
// When a single cell of a block is noisy its S(q_k) comes from generalized_sensitivity (same
// value, same bits). With m == 1 the result is plan_linear_query's for every strategy (computed
// by it: no pair constraints are enumerated, so huge domains stay cheap). Throws like
// plan_linear_query and build_constraints, and CoreError(Internal) if the final allocation fails
// check_allocation or the request is malformed. `constraints` (optional) receives the constraint
// set the final allocation was checked against (on the rounded weights); with m == 1 none is
// built and it is left empty (cells == 0).
MultiLinearPlan plan_multi_linear(const SubUniverse &sub, const std::vector<std::vector<double>> &q,
                                  double epsilon, const AllocationRequest &request,
                                  ConstraintSet *constraints = nullptr);
// The same with a strategy alone (no estimates, one budget).
MultiLinearPlan plan_multi_linear(const SubUniverse &sub, const std::vector<std::vector<double>> &q, double epsilon,
                                  AllocationStrategy s, ConstraintSet *constraints = nullptr);

// Laplace scale plain epsilon-DP would need for the same cells if every pair of records were
// protected only at the smallest distance of the record metric (MECHANISMS.md §3.8 baseline,
// generalised): Delta Q / (eps_min * epsilon), where
//   Delta Q = max over ALL pairs of records (u, v) of sum_k |q_k(u) - q_k(v)|, the absent record
//             ⊥ (q = 0) included when sub.presence is finite (not only metric edges: a DP
//             mechanism protects every pair; e.g. SUM over an absolute-metric column has
//             Delta Q = the column's range, not one step), and
//   eps_min = min over the edges of build_constraints (presence edges included) of d(e), which
//             is the smallest distance between two distinct records.
// Delta Q is exact when the all-pairs scan (N^2/2 x m) or the sign-vector scan (2^(m-1) x N x m,
// m <= 30) fits in kMaxBaselineWork; otherwise it is the maximum over the constraint edges, a
// lower bound, so the baseline (and an improvement factor derived from it) is understated, never
// overstated; *exact (when given) tells which. Improvement factor of cell k: plain_dp_scale / b_k.
// Returns 0 when Delta Q == 0 or no two records are at a finite distance. Validates like
// build_constraints (same errors, including its work cap on the fallback).
double plain_dp_scale(const SubUniverse &sub, const std::vector<std::vector<double>> &q, double epsilon,
                      bool *exact = nullptr);

// Same baseline over an explicit metric: max_{i<j} sum_k a_k(i,j) / (min_{i<j} d(i,j) * epsilon)
// (+inf when two points are at distance 0, 0 when Delta Q == 0 or every distance is +inf).
double plain_dp_scale_dense(const std::vector<std::vector<double>> &d, const std::vector<std::vector<double>> &q,
                            double epsilon);

} // namespace dxpriv
