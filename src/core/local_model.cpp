// Local model (MECHANISMS.md §4): exact randomisers, structured channels, IBU, Kantorovich.
//
// Exactness of the samplers. Both randomisers draw only uniform integers. The geometric one uses
// the CKS discrete Laplace sampler (samplers.h) with a rational scale; k-RR compares one uniform
// integer with a rational keep probability. Neither can use epsilon itself, which is irrational in
// general (ln 2, ...), so each rounds the law it samples towards MORE noise: the geometric
// epsilon is rounded down to a multiple of 2^-20, and the k-RR keep weight e^epsilon is rounded
// down to a multiple of 2^-20 (never below 1). The sampled law is then exactly the mechanism at
// an epsilon' <= epsilon, which is epsilon'-private and therefore epsilon-private. The functions
// *_sampling_epsilon report epsilon', so a reconstruction can use the channel that was really
// applied (dx.ibu does).
#include "core/local_model.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/samplers.h"

namespace dxpriv {

namespace {

using u128 = unsigned __int128;

constexpr double kTwoPow20 = 1048576.0;
constexpr std::uint64_t kDenominator = std::uint64_t{1} << 20;
constexpr double kMinSamplingEpsilon = 1.0 / kTwoPow20;
constexpr double kNormalisationTolerance = 1e-6;

// Throws unless epsilon is finite and positive.
void check_local_epsilon(double epsilon)
{
	if (std::isnan(epsilon) || !(epsilon > 0.0) || std::isinf(epsilon))
		throw CoreError(ErrorKind::InvalidParameter, "epsilon must be positive and finite",
		                "Use a value such as 1.0; smaller values give more noise.");
}

// Throws unless epsilon is at least 2^-20 (the resolution of the exact samplers).
void check_sampling_epsilon(double epsilon)
{
	check_local_epsilon(epsilon);
	if (epsilon < kMinSamplingEpsilon)
		throw CoreError(ErrorKind::InvalidParameter, "epsilon is too small for the local randomisers",
		                "Use epsilon >= 2^-20 (about 9.5e-7).");
}

// min(epsilon, 64) * 2^20 rounded down: the numerator of the geometric sampling epsilon.
std::uint64_t geometric_epsilon_numerator(double epsilon)
{
	check_sampling_epsilon(epsilon);
	// ldexp is exact and floor of an exact double is exact; the result is in [1, 64 * 2^20].
	return static_cast<std::uint64_t>(std::floor(std::ldexp(std::min(epsilon, kMaxSamplingEpsilon), 20)));
}

// e^min(epsilon, 64) * 2^20 rounded down (at least 2^20): the k-RR keep weight in units of 2^-20.
// glibc's exp is within 1 ulp; the factor (1 - 8 DBL_EPSILON) absorbs that error and the rounding
// of the product, so the computed value never exceeds the true e^epsilon.
u128 krr_keep_weight(double epsilon)
{
	check_sampling_epsilon(epsilon);
	const double e = std::exp(std::min(epsilon, kMaxSamplingEpsilon)) * (1.0 - 8.0 * DBL_EPSILON);
	const double scaled = std::max(std::floor(std::ldexp(e, 20)), kTwoPow20); // < 2^113, integral
	return static_cast<u128>(scaled);
}

// Throws unless lo <= value <= hi.
void check_value(std::int64_t value, std::int64_t lo, std::int64_t hi)
{
	if (value < lo || value > hi)
		throw CoreError(ErrorKind::InvalidParameter, "value is outside the domain [lo, hi]",
		                "Clamp the value into [lo, hi] before randomising it.");
}

// Throws unless k is a usable channel size.
void check_channel_size(std::size_t k)
{
	if (k == 0)
		throw CoreError(ErrorKind::InvalidParameter, "a channel needs at least one value");
	if (k > kMaxLocalDomain)
		throw CoreError(ErrorKind::ProgramLimit, "domain has too many values",
		                "At most 1000000 values are supported.");
}

// Validates a probability vector and returns it renormalised to sum exactly-ish to 1.
std::vector<double> normalised_distribution(const std::vector<double> &p, const char *what)
{
	double total = 0.0;
	for (double v : p) {
		if (!std::isfinite(v) || v < 0.0)
			throw CoreError(ErrorKind::InvalidParameter,
			                std::string(what) + " must contain finite non-negative probabilities",
			                "Every entry must be a number >= 0.");
		total += v;
	}
	if (!(std::fabs(total - 1.0) <= kNormalisationTolerance))
		throw CoreError(ErrorKind::InvalidParameter, std::string(what) + " must sum to 1",
		                "Divide each entry by the sum of the entries.");
	std::vector<double> out(p);
	for (double &v : out)
		v /= total;
	return out;
}

} // namespace

LocalMechanism parse_local_mechanism(const std::string &name)
{
	if (name == "geometric")
		return LocalMechanism::TruncatedGeometric;
	if (name == "krr")
		return LocalMechanism::KRandomizedResponse;
	throw CoreError(ErrorKind::InvalidParameter, "unknown local mechanism",
	                "Use 'geometric' (truncated geometric) or 'krr' (k-ary randomized response).");
}

const char *local_mechanism_name(LocalMechanism mechanism)
{
	return mechanism == LocalMechanism::TruncatedGeometric ? "geometric" : "krr";
}

// hi - lo + 1 computed in 128 bits, then checked against the cap.
std::uint64_t local_domain_size(std::int64_t lo, std::int64_t hi, std::uint64_t max_values)
{
	if (lo > hi)
		throw CoreError(ErrorKind::InvalidParameter, "lower bound of the domain exceeds its upper bound",
		                "Pass lo <= hi.");
	const __int128 size = static_cast<__int128>(hi) - static_cast<__int128>(lo) + 1;
	if (size > static_cast<__int128>(max_values))
		throw CoreError(ErrorKind::ProgramLimit, "domain has too many values",
		                "At most " + std::to_string(max_values) + " values are supported here; use a coarser domain.");
	return static_cast<std::uint64_t>(size);
}

double geometric_sampling_epsilon(double epsilon)
{
	return std::ldexp(static_cast<double>(geometric_epsilon_numerator(epsilon)), -20);
}

double krr_sampling_epsilon(double epsilon)
{
	return std::log(std::ldexp(static_cast<double>(krr_keep_weight(epsilon)), -20));
}

double sampling_epsilon(LocalMechanism mechanism, double epsilon)
{
	return mechanism == LocalMechanism::TruncatedGeometric ? geometric_sampling_epsilon(epsilon)
	                                                       : krr_sampling_epsilon(epsilon);
}

// Discrete Laplace with scale t = 2^20 / N, i.e. P(Z = z) ∝ exp(-|z| N / 2^20) = a^|z| with
// a = exp(-epsilon'). This is the two-sided geometric law of §2.4, the law of G1 - G2.
std::int64_t two_sided_geometric(RandomSource &rng, double epsilon)
{
	const std::uint64_t n = geometric_epsilon_numerator(epsilon);
	return discrete_laplace(rng, Rational{kDenominator, n});
}

// clamp(value + Z, lo, hi) in 128-bit arithmetic (no overflow for any int64 inputs).
std::int64_t geometric_randomize(RandomSource &rng, std::int64_t value, std::int64_t lo, std::int64_t hi,
                                 double epsilon)
{
	local_domain_size(lo, hi, kMaxLocalDomain);
	check_value(value, lo, hi);
	check_sampling_epsilon(epsilon);
	const __int128 y = static_cast<__int128>(value) + two_sided_geometric(rng, epsilon);
	if (y < lo)
		return lo;
	if (y > hi)
		return hi;
	return static_cast<std::int64_t>(y);
}

// Keep with probability E / (E + (k-1) 2^20) where E = e^epsilon' 2^20 is an integer: this is
// e^epsilon' / (e^epsilon' + k - 1) exactly. Otherwise pick one of the k - 1 other values.
std::int64_t krr_randomize(RandomSource &rng, std::int64_t value, std::int64_t lo, std::int64_t hi, double epsilon)
{
	const std::uint64_t k = local_domain_size(lo, hi, kMaxLocalDomain);
	check_value(value, lo, hi);
	const u128 keep = krr_keep_weight(epsilon);
	if (k == 1)
		return value;
	const std::uint64_t others = k - 1;
	const u128 total = keep + static_cast<u128>(others) * kDenominator; // < 2^114
	if (rng.uniform_below(total) < keep)
		return value;
	const std::int64_t y = lo + static_cast<std::int64_t>(rng.uniform_below(others));
	return y >= value ? y + 1 : y;
}

std::int64_t local_randomize(LocalMechanism mechanism, RandomSource &rng, std::int64_t value, std::int64_t lo,
                             std::int64_t hi, double epsilon)
{
	return mechanism == LocalMechanism::TruncatedGeometric ? geometric_randomize(rng, value, lo, hi, epsilon)
	                                                       : krr_randomize(rng, value, lo, hi, epsilon);
}

// ---- Channels -------------------------------------------------------------------------------

LocalChannel::LocalChannel(LocalMechanism m, std::size_t k, double epsilon)
    : mechanism_(m), k_(k), epsilon_(epsilon), a_(0.0), interior_(0.0), edge_(0.0)
{
	check_channel_size(k);
	if (std::isnan(epsilon) || !(epsilon > 0.0))
		throw CoreError(ErrorKind::InvalidParameter, "epsilon must be positive",
		                "Use the epsilon the reports were randomised with.");
	const double a = std::exp(-epsilon);       // 0 for epsilon = +inf
	const double one_minus_a = -std::expm1(-epsilon);
	if (m == LocalMechanism::TruncatedGeometric) {
		// TG[x][y] = ((1-a)/(1+a)) a^|y-x| inside, a^x/(1+a) and a^(n-x)/(1+a) at the ends.
		a_ = a;
		interior_ = one_minus_a / (1.0 + a);
		edge_ = 1.0 / (1.0 + a);
	} else {
		// R[x][x] = e^eps/(k-1+e^eps) = 1/(1+(k-1)a), R[x][y] = a/(1+(k-1)a): no overflow for large eps.
		const double denom = 1.0 + static_cast<double>(k - 1) * a;
		a_ = a;
		edge_ = 1.0 / denom;
		interior_ = a / denom;
	}
}

LocalChannel LocalChannel::truncated_geometric(std::size_t k, double epsilon)
{
	return LocalChannel(LocalMechanism::TruncatedGeometric, k, epsilon);
}

LocalChannel LocalChannel::krr(std::size_t k, double epsilon)
{
	return LocalChannel(LocalMechanism::KRandomizedResponse, k, epsilon);
}

LocalChannel LocalChannel::make(LocalMechanism mechanism, std::size_t k, double epsilon)
{
	return LocalChannel(mechanism, k, epsilon);
}

double LocalChannel::entry(std::size_t x, std::size_t y) const
{
	if (x >= k_ || y >= k_)
		throw CoreError(ErrorKind::Internal, "channel index out of range");
	if (k_ == 1)
		return 1.0;
	if (mechanism_ == LocalMechanism::KRandomizedResponse)
		return x == y ? edge_ : interior_;
	const std::size_t n = k_ - 1;
	if (y == 0)
		return std::pow(a_, static_cast<double>(x)) * edge_;
	if (y == n)
		return std::pow(a_, static_cast<double>(n - x)) * edge_;
	const std::size_t d = x > y ? x - y : y - x;
	return interior_ * std::pow(a_, static_cast<double>(d));
}

std::vector<std::vector<double>> LocalChannel::dense() const
{
	std::vector<std::vector<double>> m(k_, std::vector<double>(k_));
	for (std::size_t x = 0; x < k_; ++x)
		for (std::size_t y = 0; y < k_; ++y)
			m[x][y] = entry(x, y);
	return m;
}

// TG: with F_y = sum_{x<=y} theta_x a^(y-x) and B_y = sum_{x>=y} theta_x a^(x-y) (two linear
// recursions), column y inside is interior * (a F_{y-1} + B_y), column 0 is edge * B_0 and
// column n is edge * F_n. k-RR: interior * sum(theta) + (edge - interior) * theta_y.
void LocalChannel::push_forward(const std::vector<double> &theta, std::vector<double> &out) const
{
	if (theta.size() != k_)
		throw CoreError(ErrorKind::Internal, "channel vector size mismatch");
	out.assign(k_, 0.0);
	if (k_ == 1) {
		out[0] = theta[0];
		return;
	}
	if (mechanism_ == LocalMechanism::KRandomizedResponse) {
		double total = 0.0;
		for (double t : theta)
			total += t;
		const double diagonal_extra = -std::expm1(-epsilon_) * edge_; // edge - interior, no cancellation
		for (std::size_t y = 0; y < k_; ++y)
			out[y] = interior_ * total + diagonal_extra * theta[y];
		return;
	}
	const std::size_t n = k_ - 1;
	std::vector<double> forward(k_);
	forward[0] = theta[0];
	for (std::size_t y = 1; y < k_; ++y)
		forward[y] = a_ * forward[y - 1] + theta[y];
	double backward = theta[n]; // B_y, carried from y = n down to 0
	out[n] = edge_ * forward[n];
	for (std::size_t y = n; y-- > 0;) {
		backward = a_ * backward + theta[y];
		out[y] = y == 0 ? edge_ * backward : interior_ * (a_ * forward[y - 1] + backward);
	}
}

// TG: out[x] = edge (a^x r_0 + a^(n-x) r_n) + interior * sum_{0<y<n} a^|y-x| r_y, the inner sum by
// the same two recursions over the interior entries. k-RR is symmetric: same as push_forward.
void LocalChannel::pull_back(const std::vector<double> &r, std::vector<double> &out) const
{
	if (r.size() != k_)
		throw CoreError(ErrorKind::Internal, "channel vector size mismatch");
	if (k_ == 1 || mechanism_ == LocalMechanism::KRandomizedResponse) {
		push_forward(r, out);
		return;
	}
	out.assign(k_, 0.0);
	const std::size_t n = k_ - 1;
	auto inner = [&](std::size_t y) { return y == 0 || y == n ? 0.0 : r[y]; };
	std::vector<double> forward(k_);
	forward[0] = 0.0;
	for (std::size_t x = 1; x < k_; ++x)
		forward[x] = a_ * forward[x - 1] + inner(x);
	double backward = 0.0;              // sum_{y>=x} s_y a^(y-x)
	double power_up = 1.0;              // a^(n-x), built from x = n downwards
	for (std::size_t x = k_; x-- > 0;) {
		backward = a_ * backward + inner(x);
		const double before = x == 0 ? 0.0 : a_ * forward[x - 1];
		out[x] = interior_ * (before + backward) + edge_ * power_up * r[n];
		power_up *= a_;
	}
	double power_down = 1.0; // a^x
	for (std::size_t x = 0; x < k_; ++x) {
		out[x] += edge_ * power_down * r[0];
		power_down *= a_;
	}
}

// Closed form of §4.2: a tridiagonal matrix (k >= 2); [[1]] for k = 1.
std::vector<std::vector<double>> truncated_geometric_inverse(std::size_t k, double epsilon)
{
	check_channel_size(k);
	check_local_epsilon(epsilon);
	std::vector<std::vector<double>> inv(k, std::vector<double>(k, 0.0));
	if (k == 1) {
		inv[0][0] = 1.0;
		return inv;
	}
	const double a = std::exp(-epsilon);
	const double one_minus_a = -std::expm1(-epsilon);
	const std::size_t n = k - 1;
	inv[0][0] = inv[n][n] = 1.0 / one_minus_a;
	inv[0][1] = inv[n][n - 1] = -a / one_minus_a;
	for (std::size_t y = 1; y < n; ++y) {
		inv[y][y] = (1.0 + a * a) / (one_minus_a * one_minus_a);
		inv[y][y - 1] = inv[y][y + 1] = -a / (one_minus_a * one_minus_a);
	}
	return inv;
}

// ---- Reconstruction -------------------------------------------------------------------------

double ibu_log_likelihood(const std::vector<double> &q, const std::vector<double> &theta, const LocalChannel &channel)
{
	std::vector<double> predicted;
	channel.push_forward(theta, predicted);
	double total = 0.0;
	for (std::size_t y = 0; y < q.size(); ++y) {
		if (q[y] > 0.0)
			total += q[y] * std::log(predicted[y]);
	}
	return total;
}

IbuResult iterative_bayesian_update(const std::vector<std::uint64_t> &reported_counts, const LocalChannel &channel,
                                    const IbuOptions &options)
{
	u128 total = 0;
	for (std::uint64_t c : reported_counts)
		total += c;
	if (total == 0)
		throw CoreError(ErrorKind::InvalidParameter, "there are no reports to reconstruct from",
		                "IBU needs at least one reported value.");
	const long double denominator = static_cast<long double>(total);
	std::vector<double> q(reported_counts.size());
	for (std::size_t y = 0; y < q.size(); ++y)
		q[y] = static_cast<double>(static_cast<long double>(reported_counts[y]) / denominator);
	return iterative_bayesian_update(q, channel, options);
}

// theta^{t+1}_x = theta^t_x * sum_y C[x][y] q_y / (theta^t C)_y, two O(k) channel products per step.
IbuResult iterative_bayesian_update(const std::vector<double> &report_distribution, const LocalChannel &channel,
                                    const IbuOptions &options)
{
	const std::size_t k = channel.size();
	if (report_distribution.size() != k)
		throw CoreError(ErrorKind::InvalidParameter, "report distribution and channel differ in size");
	if (k > kMaxIbuDomain)
		throw CoreError(ErrorKind::ProgramLimit, "domain is too large for the reconstruction",
		                "IBU supports at most 100000 values; use a coarser domain.");
	if (options.iterations < 1 || options.iterations > kMaxIbuIterations)
		throw CoreError(ErrorKind::InvalidParameter, "iterations must be between 1 and 1000000",
		                "The reference experiments use 5000 iterations.");
	if (std::isnan(options.tolerance) || options.tolerance < 0.0)
		throw CoreError(ErrorKind::InvalidParameter, "tolerance must be non-negative");
	const std::vector<double> q = normalised_distribution(report_distribution, "report distribution");

	IbuResult result;
	if (options.initial.empty()) {
		result.theta.assign(k, 1.0 / static_cast<double>(k));
	} else {
		if (options.initial.size() != k)
			throw CoreError(ErrorKind::InvalidParameter, "initial distribution and channel differ in size");
		result.theta = normalised_distribution(options.initial, "initial distribution");
	}
	std::vector<double> predicted, ratio(k), back, next(k);
	const std::int64_t every = std::max<std::int64_t>(options.progress_every, 1);
	for (std::int64_t t = 1; t <= options.iterations; ++t) {
		channel.push_forward(result.theta, predicted);
		for (std::size_t y = 0; y < k; ++y)
			ratio[y] = q[y] > 0.0 && predicted[y] > 0.0 ? q[y] / predicted[y] : 0.0;
		channel.pull_back(ratio, back);
		double mass = 0.0;
		for (std::size_t x = 0; x < k; ++x) {
			next[x] = result.theta[x] * back[x];
			mass += next[x];
		}
		if (!(mass > 0.0) || !std::isfinite(mass))
			throw CoreError(ErrorKind::DataException, "the reconstruction lost all probability mass",
			                "Check that epsilon and the mechanism are the ones the reports were made with.");
		double change = 0.0;
		for (std::size_t x = 0; x < k; ++x) {
			next[x] /= mass; // EM keeps the mass at 1; this only removes rounding drift
			change = std::max(change, std::fabs(next[x] - result.theta[x]));
		}
		result.theta.swap(next);
		result.iterations = t;
		if (change <= options.tolerance) {
			result.converged = true;
			break;
		}
		if (options.progress && t % every == 0)
			options.progress();
	}
	result.log_likelihood = ibu_log_likelihood(q, result.theta, channel);
	return result;
}

// ---- Utility and calibration ----------------------------------------------------------------

double kantorovich(const std::vector<double> &p, const std::vector<double> &q, double spacing)
{
	if (p.size() != q.size())
		throw CoreError(ErrorKind::InvalidParameter, "distributions must have the same length",
		                "Both arrays give the probability of each value of the same ordered domain.");
	if (p.empty())
		throw CoreError(ErrorKind::InvalidParameter, "distributions must not be empty");
	if (!std::isfinite(spacing) || !(spacing > 0.0))
		throw CoreError(ErrorKind::InvalidParameter, "spacing must be positive and finite");
	const std::vector<double> pn = normalised_distribution(p, "first distribution");
	const std::vector<double> qn = normalised_distribution(q, "second distribution");
	double cdf_p = 0.0, cdf_q = 0.0, total = 0.0;
	for (std::size_t i = 0; i + 1 < pn.size(); ++i) {
		cdf_p += pn[i];
		cdf_q += qn[i];
		total += std::fabs(cdf_p - cdf_q);
	}
	return spacing * total;
}

double geometric_epsilon_for_radius(double krr_epsilon, double radius)
{
	check_local_epsilon(krr_epsilon);
	if (std::isnan(radius) || !(radius > 0.0) || std::isinf(radius))
		throw CoreError(ErrorKind::InvalidParameter, "radius must be positive and finite",
		                "The radius is the distance within which both mechanisms give the same protection.");
	return krr_epsilon / radius;
}

} // namespace dxpriv
