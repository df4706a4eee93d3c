// Consistent releases (ROLLUP, CUBE, GROUPING SETS): the noisy cells of one aggregate are projected
// onto the set of cell vectors that add up (a total equals the sum of its parts) by the least-squares
// estimator weighted by each cell's noise variance (generalised least squares, the BLUE).
//
// Model: every cell is a sum over shared atoms, y = A x + z, with A the 0/1 cells x atoms incidence
// matrix (an atom is a set of declared points that falls in the same group of every grouping set),
// x the atoms' exact sums and z independent noise of variance v_k. The projection is
// ŷ = A u, u = (Aᵀ W A)⁻¹ Aᵀ W y, W = diag(1/v): exactly consistent (ŷ is in the range of A) and
// Var(ŷ_k) = [A (AᵀWA)⁻¹ Aᵀ]_kk <= v_k. It is post-processing of the released y: no privacy cost.
#pragma once

#include <cstddef>
#include <vector>

namespace dxpriv {

// The incidence structure: cells, and per atom the (sorted, distinct) cells it adds to.
struct ConsistentSystem {
	std::size_t cells = 0;
	std::vector<std::vector<std::size_t>> atoms;
};

// Builds the system from every cell's weight at every declared point (q[k][p], all of one length):
// an atom is a distinct set of cells to which a point adds a non-zero weight; points adding nothing
// anywhere are no atom. Returns false when some point adds different non-zero weights to two of its
// cells (the cells are then not sums over shared atoms, so a projection could reveal data).
bool consistent_system_from_weights(const std::vector<const std::vector<double> *> &q, ConsistentSystem &out);

// Largest number of atoms projected (a dense solve of that size); beyond it a release is raw.
constexpr std::size_t kMaxConsistentAtoms = 1500;

// The weighted least-squares projection of one system. Contract: variances has one positive,
// finite entry per cell; otherwise, or when A has dependent columns (atoms not identifiable, e.g.
// GROUPING SETS ((a), (b)) without their product), or more than kMaxConsistentAtoms atoms,
// usable() is false and nothing else may be called.
class ConsistentProjection {
public:
	ConsistentProjection(const ConsistentSystem &system, const std::vector<double> &variances);
	bool usable() const { return usable_; }
	// u = (AᵀWA)⁻¹ AᵀW y (one entry per atom).
	std::vector<double> atom_estimate(const std::vector<double> &y) const;
	// A u (one entry per cell): every cell is the sum of its atoms.
	std::vector<double> cells_of_atoms(const std::vector<double> &u) const;
	// A (AᵀWA)⁻¹ AᵀW y.
	std::vector<double> project(const std::vector<double> &y) const { return cells_of_atoms(atom_estimate(y)); }
	// Var(ŷ_k) for independent noises of the given variances.
	const std::vector<double> &projected_variances() const { return projected_variances_; }

private:
	ConsistentSystem system_;
	std::vector<double> weights_; // 1 / v_k
	std::vector<double> inverse_; // (AᵀWA)⁻¹, row-major atoms x atoms
	std::vector<double> projected_variances_;
	bool usable_ = false;
};

// The noise of a consistent release in grid units: A · floor(u + 1/2) with u the atom estimate of
// the cells' noises z (integers in grid units). Integers that add up exactly. With x the atoms'
// exact sums in grid units (integers), x_cells + result = A · floor(B (A x + z) + 1/2): the rounded
// projection of the noisy cells, i.e. post-processing of them, computed from the noise alone.
std::vector<double> consistent_noise_units(const ConsistentProjection &projection, const std::vector<double> &z);

} // namespace dxpriv
