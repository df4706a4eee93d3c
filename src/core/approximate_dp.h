// (epsilon, delta) noise for multi-linear queries under d_X-privacy: the discrete Gaussian and the
// truncated discrete Laplace, calibrated so that every pair of inputs that differ in ONE record,
// u -> v (or u -> ⊥, removal), is (epsilon * d(u, v), delta)-indistinguishable. Several changed
// records compose by the usual (epsilon, delta) group privacy, as in standard approximate DP.
//
// Why per-edge checks are not enough: for pure epsilon the record metric is a path metric, so
// checking its edges covers every pair; (epsilon, delta) does not compose along a path without
// degrading delta. Instead dxpriv bounds every pair directly:
//   * the path argument still bounds the change of the (normalised) answer vector v = q / c:
//       ||v(u) - v(w)||_2 <= L * d(u, w),   L = max over edges e of ||a(e) / c||_2 / d(e),
//   * and the largest change of all is bounded by  M >= max over pairs ||v(u) - v(w)||_2.
// So a pair at distance t changes v by at most min(L t, M).
// Gaussian (noise c_k * s * N_Z(0, 1) per cell): a pair is rho(t)-zCDP with rho(t) = min(L t, M)^2 /
// (2 s^2) (Canonne–Kamath–Steinke: the discrete Gaussian has the continuous Gaussian's Renyi
// divergence), hence (epsilon t, cdp_delta(rho(t), epsilon t)). Along t <= M/L this delta increases
// with t (envelope theorem: at the optimal alpha, d/dt ln delta = (alpha - 1)(alpha L^2 t - epsilon)
// and the optimality condition gives alpha L^2 t^2 = L^2 t^2 / 2 + epsilon t + ln(alpha/(alpha-1)) >
// epsilon t); beyond M/L rho is constant and epsilon t grows, so delta falls. The worst pair sits at
// t* = M / L, and s is the smallest value with cdp_delta(M^2 / (2 s^2), epsilon t*) <= delta.
// Truncated Laplace (scale b_k from the Laplace allocation, support |Z| <= T_k): inside the supports
// the density ratio is the Laplace one, sum_k |Delta q_k| / b_k <= epsilon t by the allocation; the
// only excess is the probability that some changed cell lands where the shifted law has no mass,
// at most sum over the changed cells of the tail mass of width |Delta q_k| <= range_k. Every cell
// gets the tail budget delta / K, K the largest number of cells one pair can change.
#pragma once

#include <vector>

#include "core/allocation.h"

namespace dxpriv {

// Largest per-query delta dxpriv accepts (the policy allows at most this).
constexpr double kMaxQueryDelta = 1e-3;

// How an (epsilon, delta) plan was calibrated (explain, tests).
struct ApproximateCalibration {
	double lipschitz = 0;      // L (normalised by the allocation's Laplace scales c_k)
	double max_change = 0;     // M
	double worst_distance = 0; // t* = M / L (Gaussian)
	double rho = 0;            // Gaussian: zCDP level of the worst pair
	int max_changed_cells = 0; // K: most noisy cells one pair of records can change
};

// Calibrates the m cells q (as plan_multi_linear) for `family` at (epsilon, delta):
//   Laplace: plan_multi_linear unchanged (delta is ignored).
//   Gaussian: the allocation's Laplace scales c_k give the shape, each cell's noise is the discrete
//     Gaussian of standard deviation s * c_k on a grid chosen for that deviation (choose_grid), and
//     s is calibrated on the grid-rounded weights as described above.
//   TruncatedLaplace: the Laplace plan's scales and grids, each noisy cell truncated to the smallest
//     |Z| <= T_k (grid steps) whose exact discrete tail of width range_k has mass <= delta / K.
// Exact cells (scale 0) stay exact. epsilon > 0 finite; delta in (0, kMaxQueryDelta] for the
// (epsilon, delta) families (CoreError(InvalidParameter) otherwise); throws like plan_multi_linear
// and build_constraints. `info` (optional) receives the calibration quantities.
MultiLinearPlan plan_multi_linear_noise(const SubUniverse &sub, const std::vector<std::vector<double>> &q,
                                        double epsilon, double delta, NoiseFamily family, AllocationStrategy s,
                                        ApproximateCalibration *info = nullptr);
// The same under an allocation request (estimates, budget blocks; plan_multi_linear). For the
// (epsilon, delta) families the blocks shape the Laplace allocation, which fixes the cells'
// relative noise; the family then calibrates on the query's whole (epsilon, delta) as above.
MultiLinearPlan plan_multi_linear_noise(const SubUniverse &sub, const std::vector<std::vector<double>> &q,
                                        double epsilon, double delta, NoiseFamily family,
                                        const AllocationRequest &request, ApproximateCalibration *info = nullptr);

} // namespace dxpriv
