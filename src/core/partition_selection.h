// Private partition selection: which GROUP BY keys of an open domain a release may show.
//
// A key of an open domain (values never enumerated by the DBA) is released only when a
// randomised test on its number of contributors n passes. Two mechanisms, both (epsilon,
// delta)-private per partition for counts that change by at most 1 between neighbours:
//
// * Optimal (Desfontaines, Voss, Gipson, Mandayam, "Differentially private partition selection",
//   PoPETs 2022, Theorem 1): keep with probability pi(n), pi(0) = 0,
//       pi(n) = min(e^eps pi(n-1) + delta, 1 - e^-eps (1 - pi(n-1) - delta), 1),
//   the largest keep probabilities that satisfy the two (eps, delta) inequalities between n-1
//   and n; closed form: pi(n) = delta (e^{n eps} - 1) / (e^eps - 1) up to the first crossover.
// * Thresholded Laplace (PipelineDP / ZetaSQL style): keep when n + Z >= tau, Z a discrete
//   Laplace of scale 1/eps, tau the smallest integer with P(1 + Z >= tau) <= delta.
//
// Both expose the exact probability that their sampler keeps a partition of n contributors
// (keep_probability), which the audit and the tests compare with empirical frequencies.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/random.h"
#include "core/samplers.h"
#include "core/sensitivity.h"

namespace dxpriv {

enum class SelectionMechanism { Optimal, Laplace };

// "optimal" / "laplace".
const char *selection_mechanism_name(SelectionMechanism m);

// What one partition's selection may spend, derived from the statement's selection budget.
struct PartitionBudget {
	double epsilon = 0;       // per partition: a change of its count by 1 costs at most this
	double delta = 0;         // per partition
	double sensitivity = 0;   // S: most partitions changed per unit of record distance
	std::uint64_t max_changed = 0; // m: most partitions one neighbouring pair changes
};

// Closed form of the per-partition budget when the partition counts move only by presence and by
// changes of partition at distance >= cross_distance (no WHERE on finely declared columns); the
// planner uses partition_count_sensitivity below, which also covers WHERE boundaries.
// The per-partition budget of a selection run at statement epsilon `eps_sel` and delta `delta`:
// S = max(k / presence, 2 / cross_distance), eps_part = eps_sel / S; m = 2k (a changed record moves
// its partitions out and others in, at a finite distance whenever presence or cross_distance is
// finite); delta_part = delta / m. `presence` is the record metric's d(x, bottom) (may be
// +inf), `cross_distance` the smallest record distance between two records of different partitions
// (+inf when no finite change moves a record between partitions), `k` the most partitions that one
// record (privacy unit) contributes to (1 for a row). Throws CoreError(InvalidParameter) when both
// distances are infinite (the partitions would be public: nothing to select), when eps_sel or delta
// is not in range, or k == 0.
PartitionBudget partition_budget(double eps_sel, double delta, double presence, double cross_distance,
                                 std::uint64_t k);

// The l1 sensitivity of the vector of partition counts over a sub-universe: the largest
// sum_g |c_g(u) - c_g(v)| / d(u, v) over the edges of sub's record metric (one-column changes and
// presence edges, presence = sub.presence), where a row at point u adds counted[u] (0 or 1: the
// WHERE clause at u) to partition group_of_point[u]. Because d is the path metric of these edges,
// it bounds the ratio for every pair of records. Throws CoreError(ProgramLimit) beyond 5e7 edge
// evaluations, (InvalidParameter) on sizes that do not match sub.
double partition_count_sensitivity(const SubUniverse &sub, const std::vector<double> &counted,
                                   const std::vector<std::size_t> &group_of_point);

// The selection of one statement: per-partition (epsilon, delta) and a mechanism.
class PartitionSelector {
public:
	// epsilon > 0 finite (<= 50), 0 < delta < 1 and delta larger than the rounding reserve
	// (about 2^-49 (1 + e^eps)); throws CoreError(InvalidParameter) otherwise, and
	// CoreError(ProgramLimit) when the optimal table would exceed 10^7 entries.
	PartitionSelector(SelectionMechanism mechanism, double epsilon, double delta);

	SelectionMechanism mechanism() const { return mechanism_; }
	double epsilon() const { return epsilon_; }
	double delta() const { return delta_; }

	// Exact probability that keep(rng, n) returns true (a multiple of 2^-64 for the optimal
	// mechanism; the exact discrete Laplace tail for the thresholded one, computed in long double).
	long double keep_probability(std::uint64_t n) const;
	// Draws the decision for a partition of n contributors from uniform 64-bit words of rng.
	bool keep(RandomSource &rng, std::uint64_t n) const;
	// Optimal: the smallest n kept with probability 1. Laplace: the threshold tau.
	std::uint64_t threshold() const;
	// Laplace: the noise scale actually used (1/eps rounded up to a 2^-20 grid). Optimal: 0.
	double laplace_scale() const;
	// "optimal(eps=..., delta=..., certain from n=...)" or "laplace(scale=..., threshold=...)".
	std::string describe() const;

private:
	SelectionMechanism mechanism_;
	double epsilon_, delta_;
	std::vector<std::uint64_t> keep_below_; // optimal: keep when a uniform u64 < keep_below_[n]
	std::uint64_t certain_ = 0;             // optimal: n from which the partition is always kept
	Rational scale_{1, 1};                  // laplace
	std::int64_t tau_ = 0;                  // laplace
};

// The real-valued optimal keep probability pi(n) of the paper's recurrence (no rounding reserve):
// the reference the tests compare the closed form and the sampler's table with.
double optimal_keep_probability_reference(double epsilon, double delta, std::uint64_t n);

} // namespace dxpriv
