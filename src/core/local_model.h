// The local model (MECHANISMS.md §4): randomisers applied by each individual to their own value
// (truncated geometric and k-ary randomized response), their channel matrices, reconstruction of
// the value distribution by iterative Bayesian update (IBU), the Kantorovich distance used to
// judge reconstructions, and the epsilon calibration between the two mechanisms (§4.6).
//
// Values live on an integer range {lo..hi}; channels and distributions are indexed 0..k-1 with
// k = hi - lo + 1 (index i is the value lo + i). Every function validates its inputs and throws
// CoreError (lowercase message, hint sentence) on bad input; nothing here touches PostgreSQL.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/random.h"

namespace dxpriv {

// The two local mechanisms of seed 002.
enum class LocalMechanism {
	TruncatedGeometric, // TG_epsilon: y = clamp(x + Z, lo, hi), Z two-sided geometric (§4.2)
	KRandomizedResponse // k-RR: keep x w.p. e^eps/(e^eps + k - 1), else uniform on the others (§4.3)
};

// Parses a mechanism name: "geometric" or "krr". Throws CoreError(InvalidParameter) otherwise.
LocalMechanism parse_local_mechanism(const std::string &name);
// The canonical name ("geometric" or "krr").
const char *local_mechanism_name(LocalMechanism mechanism);

// Largest domain (number of values hi - lo + 1) a randomiser accepts.
constexpr std::uint64_t kMaxLocalDomain = 1000000;
// Largest domain IBU reconstructs over, and its iteration cap.
constexpr std::uint64_t kMaxIbuDomain = 100000;
constexpr std::int64_t kMaxIbuIterations = 1000000;
// Epsilons above this are lowered to it before sampling (lowering epsilon only adds noise); at 64
// the flip probability of either mechanism is below 10^6 * e^-64 < 2e-22.
constexpr double kMaxSamplingEpsilon = 64.0;

// Number of values of {lo..hi}; throws CoreError(InvalidParameter) if lo > hi and
// CoreError(ProgramLimit) if the count exceeds max_values.
std::uint64_t local_domain_size(std::int64_t lo, std::int64_t hi, std::uint64_t max_values);

// ---- Exact samplers -------------------------------------------------------------------------

// The epsilon the geometric sampler actually uses: min(epsilon, 64) rounded DOWN to a multiple of
// 2^-20, so that the law is sampled exactly with integer arithmetic. Rounding down can only add
// noise, so the mechanism stays epsilon-d-private. Throws for epsilon not finite and > 0, and for
// epsilon < 2^-20 (which would round to 0).
double geometric_sampling_epsilon(double epsilon);

// The epsilon the k-RR sampler actually uses: ln(E) where E = e^epsilon rounded DOWN (with a
// margin for the libm error of exp) to a multiple of 2^-20 and at least 1; epsilon is first
// lowered to 64. The keep probability E/(E + k - 1) is then an exact rational. Same contract.
double krr_sampling_epsilon(double epsilon);

// The sampling epsilon of either mechanism (one of the two functions above).
double sampling_epsilon(LocalMechanism mechanism, double epsilon);

// Two-sided geometric noise P(Z = z) = ((1 - a)/(1 + a)) a^|z| with a = exp(-eps'), where eps' is
// geometric_sampling_epsilon(epsilon) (§2.4). Exact: the same law as G1 - G2 of two geometric
// draws, sampled by the CKS discrete Laplace sampler with the rational scale 2^20 / (eps' 2^20).
std::int64_t two_sided_geometric(RandomSource &rng, double epsilon);

// Truncated geometric randomiser on {lo..hi}: clamp(value + Z, lo, hi) (§4.2; clamping realises
// the truncated end columns exactly). Requires lo <= hi, lo <= value <= hi, at most
// kMaxLocalDomain values, epsilon finite and >= 2^-20.
std::int64_t geometric_randomize(RandomSource &rng, std::int64_t value, std::int64_t lo, std::int64_t hi,
                                 double epsilon);

// k-RR randomiser on {lo..hi} (§4.3) at krr_sampling_epsilon(epsilon): keep `value` with the exact
// rational probability E/(E + k - 1), otherwise return one of the other k - 1 values uniformly.
// Same requirements as geometric_randomize.
std::int64_t krr_randomize(RandomSource &rng, std::int64_t value, std::int64_t lo, std::int64_t hi,
                           double epsilon);

// Either randomiser.
std::int64_t local_randomize(LocalMechanism mechanism, RandomSource &rng, std::int64_t value, std::int64_t lo,
                             std::int64_t hi, double epsilon);

// ---- Channels -------------------------------------------------------------------------------

// A channel C[x][y] = P(report index y | true index x) over k indices, stored by its parameters
// (the exact formulas of §4.2/§4.3) so that products with vectors cost O(k), not O(k^2).
class LocalChannel {
public:
	// TG_epsilon on k values (§4.2). k >= 1, epsilon > 0 (not NaN; +inf gives the identity).
	static LocalChannel truncated_geometric(std::size_t k, double epsilon);
	// k-RR on k values (§4.3). Same requirements.
	static LocalChannel krr(std::size_t k, double epsilon);
	static LocalChannel make(LocalMechanism mechanism, std::size_t k, double epsilon);

	LocalMechanism mechanism() const { return mechanism_; }
	std::size_t size() const { return k_; }
	double epsilon() const { return epsilon_; }

	// C[x][y] by the closed formula.
	double entry(std::size_t x, std::size_t y) const;
	// The whole matrix, row-major rows (k*k doubles; meant for small k and tests).
	std::vector<std::vector<double>> dense() const;
	// out[y] = sum_x theta[x] C[x][y]  (distribution of reports under the prior theta).
	void push_forward(const std::vector<double> &theta, std::vector<double> &out) const;
	// out[x] = sum_y C[x][y] r[y].
	void pull_back(const std::vector<double> &r, std::vector<double> &out) const;

private:
	LocalChannel(LocalMechanism m, std::size_t k, double epsilon);
	LocalMechanism mechanism_;
	std::size_t k_;
	double epsilon_;
	double a_;        // TG: exp(-epsilon)
	double interior_; // TG: (1 - a)/(1 + a);  k-RR: 1/(k - 1 + e^eps)
	double edge_;     // TG: 1/(1 + a);        k-RR: e^eps/(k - 1 + e^eps)
};

// The inverse of TG_epsilon on k values by the tridiagonal closed form of §4.2 [DERIVED].
std::vector<std::vector<double>> truncated_geometric_inverse(std::size_t k, double epsilon);

// ---- Reconstruction -------------------------------------------------------------------------

struct IbuOptions {
	std::int64_t iterations = 5000; // maximum number of updates, >= 1
	// Stop early once max_x |theta^{t+1}_x - theta^t_x| <= tolerance. 0 stops only at an exact
	// fixed point, so the result is a deterministic function of (counts, channel, iterations).
	double tolerance = 0.0;
	// Starting distribution theta^0 (full support, sums to 1); empty means uniform.
	std::vector<double> initial;
	// Called every `progress_every` iterations (e.g. to check for query cancellation); may throw.
	std::function<void()> progress;
	std::int64_t progress_every = 64;
};

struct IbuResult {
	std::vector<double> theta;      // estimated prior over the k indices; sums to 1
	std::int64_t iterations = 0;    // updates performed
	bool converged = false;         // stopped by the tolerance test
	double log_likelihood = 0.0;    // sum_y q_y ln (theta C)_y at the returned theta
};

// Iterative Bayesian update (§4.4) from the counts of each reported index (size k, total >= 1),
// starting from the uniform prior. Throws CoreError on a size mismatch, an empty report set, bad
// options, or a domain above kMaxIbuDomain.
IbuResult iterative_bayesian_update(const std::vector<std::uint64_t> &reported_counts, const LocalChannel &channel,
                                    const IbuOptions &options = IbuOptions());
// The same from an empirical report distribution q (non-negative, sums to 1 within 1e-6).
IbuResult iterative_bayesian_update(const std::vector<double> &report_distribution, const LocalChannel &channel,
                                    const IbuOptions &options = IbuOptions());

// Log-likelihood L(theta) = sum_y q_y ln (theta C)_y (terms with q_y = 0 are 0).
double ibu_log_likelihood(const std::vector<double> &q, const std::vector<double> &theta,
                          const LocalChannel &channel);

// ---- Utility and calibration ----------------------------------------------------------------

// Kantorovich (earth mover's) distance between two distributions on equally spaced ordered points
// with the given spacing (§4.5): spacing * sum_{i<k-1} |CDF_p(i) - CDF_q(i)|. Both must have the
// same non-zero length, finite non-negative entries, and each sum to 1 within 1e-6 (they are then
// renormalised); spacing finite and > 0.
double kantorovich(const std::vector<double> &p, const std::vector<double> &q, double spacing = 1.0);

// Epsilon of TG that matches k-RR at krr_epsilon within radius r (§4.6): krr_epsilon / r, so that
// TG[x][y] <= exp(krr_epsilon) TG[x'][y] whenever |x - x'| <= r. Both finite and > 0.
double geometric_epsilon_for_radius(double krr_epsilon, double radius);

} // namespace dxpriv
