// Synthetic release by measured query groups (issue 25): MWEM/AIM-style rounds that select a whole
// query GROUP (a marginal table, a block of disjoint predicates, a user-given block) with the d_X
// exponential mechanism and measure all its cells at once with the multi-linear machinery of
// direct answers (allocation.h: the group's joint constraints, Relative allocation), then fit a
// synthetic histogram to every measurement so far (cyclic I-projections, i.e. multiplicative
// weights with the exact step). When the rule gives T >= the number of groups, no selection is
// run: every group is measured once at (epsilon - count) / joint_ratio, joint_ratio being the
// most groups one record change can move (a column's groups, or all groups through presence
// edges), and the histogram is the consistent fit of those measurements.
//
// Budget of a release at epsilon (each step's privacy is Fact 1.2 composition, MECHANISMS.md §3):
//   count_epsilon   the row count, d_X Laplace (0 when public, or when every group is a partition
//                   of the universe: the fit then takes its total from the measured groups);
//   per round t:    select_epsilon (exponential mechanism, beta = select_epsilon / (2 S_sel),
//                   S_sel = max_g S_g, S_g = max over edges e of sum_{k in g} |q_k(u)-q_k(v)|/d(e),
//                   the d_X sensitivity of the group score), then measure_epsilon (the group's
//                   multi-linear plan at measure_epsilon, checked by check_allocation);
//   joint mode:     every group once at measure_epsilon = rest / joint_ratio (on every edge the
//                   groups it touches spend at most rest; edges of a column a group does not
//                   depend on cost it nothing, checked exactly when its columns are reduced).
// count_epsilon + T (select_epsilon + measure_epsilon) <= epsilon (shares rounded down).
//
// Score of group g (AIM, McKenna et al. 2022, expected improvement): sum_{k in g} |q_k(A) - q_k(x)|
// minus the expected L1 noise sum_k b_k of measuring it (data-independent offset); its d_X
// sensitivity is S_g <= S_sel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/allocation.h"
#include "core/random.h"
#include "core/workload.h"

namespace dxpriv {

// Largest number of rounds.
constexpr int kMaxGroupRounds = 1000;
// Cap on (cells of a group) x (points of the group's columns) summed over the groups planned.
constexpr double kMaxGroupPlanEntries = 3e7; // dense cells held while planning: 240 MB
// Cap on T x (passes) x (coefficients measured) of the fit.
constexpr double kMaxGroupFitWork = 4e9;
// Fit passes over the measurement history after each round (and after the joint measurement).
constexpr int kGroupFitPasses = 20;
// Share of each round's epsilon spent on selection.
constexpr double kGroupSelectShare = 0.1;

// Partitions the workload into groups (query indexes, ascending). user_labels (optional, one per
// query) groups queries with the same label; otherwise consecutive runs of queries with pairwise
// disjoint supports (a marginal table, the cells of one GROUP BY). Throws
// CoreError(InvalidParameter) for a label vector of the wrong length.
std::vector<std::vector<std::size_t>> workload_groups(const Workload &w, const std::vector<int> *user_labels);

// The rule for T (data-independent): T = ceil(G^0.6 (1 + epsilon)) from the number of groups G and
// epsilon; G ("measure every group once, jointly, no selection") when T >= 0.8 G or T >=
// joint_ratio (the most groups one record change moves: the joint measurement then gives every
// group at least a round's budget). The universe size is not used (see group_release.cpp for the
// measurements behind the constants).
int group_release_rounds(std::size_t groups, double joint_ratio, std::size_t universe, double epsilon);

// Data-independent plan of a release: computed before anything is charged.
struct GroupPlan {
	std::vector<std::vector<std::size_t>> groups;
	bool joint = false;          // every group measured once, jointly (no selection)
	int rounds = 0;              // T (joint: 1 measurement)
	bool count_measured = false;
	double count_epsilon = 0, select_epsilon = 0, measure_epsilon = 0;
	double count_scale = 0;                 // Laplace scale of the row count (0: not measured)
	double select_sensitivity = 0;          // S_sel
	std::vector<double> group_sensitivity;  // S_g
	// most groups one record change (an edge class: a column, or presence) can move; the joint
	// measurement gives every group measure_epsilon = (epsilon - count_epsilon) / joint_ratio
	double joint_ratio = 1;
	// per group: the plan of its cells (plan_cells[g] == groups[g]), in group order
	std::vector<std::vector<std::size_t>> plan_cells;
	std::vector<MultiLinearPlan> plans;
	std::vector<double> expected_l1; // sum_k b_k per group (the score offset)
	// per workload query: Laplace scale of its measurement if measured (joint: its joint scale)
	std::vector<double> query_scale;
	std::vector<int> query_group; // group index of each query
};

// Builds the plan for epsilon (> 0 finite) and rounds (0: the rule; otherwise T, capped at G when
// T >= G means joint). user_labels as in workload_groups. Throws CoreError(InvalidParameter) for a
// bad epsilon or rounds, (ProgramLimit) beyond the caps above, and like plan_multi_linear.
GroupPlan plan_group_release(const SubUniverse &sub, const Workload &w, double epsilon, int rounds,
                             const std::vector<int> *user_labels);

struct GroupReleaseResult {
	std::vector<double> histogram; // last iterate of the fit (>= 0)
	std::vector<double> average;   // average of the per-round fits
	double n_hat = 0;              // released row count (count measured) or the fit's total
	std::vector<std::size_t> chosen;                // selected groups (joint: all, in order)
	std::vector<std::vector<double>> measurements;  // per chosen group: its cells' noisy values
};

// Called after each round with (round done, T); may throw to abort (the caller has charged the
// whole epsilon before the first round).
using GroupProgress = std::function<void(int, int)>;

// Runs the plan on the true histogram (one count >= 0 per point). Throws CoreError(Internal) for
// mismatched sizes.
GroupReleaseResult run_group_release(const SubUniverse &sub, const Workload &w, const GroupPlan &plan,
                                     const std::vector<std::int64_t> &counts, RandomSource &rng,
                                     const GroupProgress &progress = nullptr);

// Group scores (grid units of w) for a synthetic histogram a: sum_{k in g} |round(q_k(a)) -
// exact_k| - round(expected_l1_g / grid). Exposed for the privacy tests.
std::vector<__int128> group_scores(const Workload &w, const GroupPlan &plan, const std::vector<__int128> &exact,
                                   const std::vector<double> &a);

// Fits a (in place) to measured cells (cells[i] a workload query, or SIZE_MAX for the row count;
// values[i] its noisy value, scales[i] its Laplace scale): `passes` cyclic passes of relaxed
// I-projections. A 0/1 cell multiplies its support by (m_i / q_i(a))^(lambda w_i / w_max), with
// w_i = 1 / scale_i^2 (w_max over the noisy cells; an exact cell always has exponent 1) and
// lambda = min(1, 4 / pass): exact projections at first, then ever smaller
// steps, so that noisy measurements of overlapping cells are averaged rather than the last one
// fitted exactly. Any other cell: an exact I-projection onto {q(a) = m} (exponential tilt exp(eta
// q) of the support, eta by bisection). m floored at a small positive value. Post-processing only.
void fit_measurements(std::vector<double> &a, const Workload &w, const std::vector<std::size_t> &cells,
                      const std::vector<double> &values, const std::vector<double> &scales, int passes);

} // namespace dxpriv
