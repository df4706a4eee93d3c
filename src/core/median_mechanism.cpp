// The median mechanism as a d_X-private interactive session (median_mechanism.h).
#include "core/median_mechanism.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/release_steps.h"
#include "core/samplers.h"
#include "core/smalldb.h"

namespace dxpriv {

namespace {

constexpr std::uint8_t kStateVersion = 1;
// Grid of the sparse-vector noise on the easiness score (a value in [0, 1]).
constexpr double kSvtGrid = 1.0 / 4294967296.0; // 2^-32

bool
is_alive(const MedianSession &s, std::size_t c)
{
	return (s.alive[c / 8] >> (c % 8)) & 1;
}

// Laplace noise of the given scale on the sparse-vector grid (exact discrete sampler).
double
svt_noise(RandomSource &rng, double scale)
{
	return laplace_on_grid(rng, std::max(scale, kSvtGrid), kSvtGrid);
}

void
new_run(MedianSession &s, RandomSource &rng)
{
	s.threshold = kMedianThreshold + svt_noise(rng, 2 * median_easiness_sensitivity(s) / s.eps_svt);
}

template <class T>
void
put(std::string &out, const T &v)
{
	out.append(reinterpret_cast<const char *>(&v), sizeof v);
}

template <class T>
void
get(const std::string &in, std::size_t &pos, T &v)
{
	if (pos + sizeof v > in.size())
		throw CoreError(ErrorKind::InvalidParameter, "median session state is malformed",
		                "Open a new session with dx.median_session_open.");
	std::memcpy(&v, in.data() + pos, sizeof v);
	pos += sizeof v;
}

} // namespace

// See median_mechanism.h.
std::size_t
MedianSession::kept() const
{
	std::size_t n = 0;
	for (std::uint8_t b : alive)
		n += static_cast<std::size_t>(__builtin_popcount(b));
	return n;
}

// See median_mechanism.h.
std::string
MedianSession::serialize() const
{
	std::string out;
	put(out, kStateVersion);
	put(out, size);
	put(out, n_hat);
	put(out, alpha);
	put(out, eps_svt);
	put(out, eps_meas);
	put(out, s_max);
	put(out, threshold);
	put(out, hard);
	put(out, max_hard);
	put(out, static_cast<std::uint64_t>(alive.size()));
	out.append(reinterpret_cast<const char *>(alive.data()), alive.size());
	put(out, static_cast<std::uint64_t>(answers.size()));
	for (std::size_t k = 0; k < answers.size(); ++k) {
		put(out, answers[k]);
		put(out, was_hard[k]);
	}
	return out;
}

// See median_mechanism.h.
MedianSession
MedianSession::parse(const std::string &in)
{
	MedianSession s;
	std::size_t pos = 0;
	std::uint8_t version = 0;
	get(in, pos, version);
	if (version != kStateVersion)
		throw CoreError(ErrorKind::InvalidParameter, "median session state has an unknown version",
		                "Open a new session with dx.median_session_open.");
	get(in, pos, s.size);
	get(in, pos, s.n_hat);
	get(in, pos, s.alpha);
	get(in, pos, s.eps_svt);
	get(in, pos, s.eps_meas);
	get(in, pos, s.s_max);
	get(in, pos, s.threshold);
	get(in, pos, s.hard);
	get(in, pos, s.max_hard);
	std::uint64_t n = 0;
	get(in, pos, n);
	if (n > in.size() - pos)
		throw CoreError(ErrorKind::InvalidParameter, "median session state is malformed",
		                "Open a new session with dx.median_session_open.");
	s.alive.assign(in.begin() + static_cast<long>(pos), in.begin() + static_cast<long>(pos + n));
	pos += n;
	get(in, pos, n);
	if (n > (in.size() - pos) / (sizeof(double) + 1))
		throw CoreError(ErrorKind::InvalidParameter, "median session state is malformed",
		                "Open a new session with dx.median_session_open.");
	s.answers.resize(n);
	s.was_hard.resize(n);
	for (std::size_t k = 0; k < n; ++k) {
		get(in, pos, s.answers[k]);
		get(in, pos, s.was_hard[k]);
	}
	if (pos != in.size())
		throw CoreError(ErrorKind::InvalidParameter, "median session state is malformed",
		                "Open a new session with dx.median_session_open.");
	return s;
}

// See median_mechanism.h.
void
check_median_arguments(const Workload &w, double eps_hard, double alpha, int size)
{
	if (!std::isfinite(eps_hard) || !(eps_hard > 0))
		throw CoreError(ErrorKind::InvalidParameter, "epsilon per hard query must be positive and finite",
		                "Give each hard query a positive privacy budget, e.g. 0.5.");
	if (!(alpha > 0 && alpha <= 1))
		throw CoreError(ErrorKind::InvalidParameter, "alpha must be in (0, 1]",
		                "alpha is the target accuracy as a fraction of the row count, e.g. 0.05.");
	check_smalldb_arguments(w, eps_hard, size);
}

// See median_mechanism.h.
MedianSession
median_open(const SubUniverse &sub, const Workload &w, const std::vector<std::int64_t> &counts, double eps_hard,
            double alpha, int size, int max_hard, RandomSource &rng, double *open_epsilon)
{
	check_median_arguments(w, eps_hard, alpha, size);
	if (max_hard < 0)
		throw CoreError(ErrorKind::InvalidParameter, "max_hard must be positive",
		                "Leave it out for Roth & Roughgarden's abort rule.");
	MedianSession s;
	s.alpha = alpha;
	s.eps_svt = eps_hard / 2 * (1 - 1e-12);
	s.eps_meas = eps_hard / 2 * (1 - 1e-12);
	s.s_max = max_sensitivity(workload_sensitivities(sub, w));
	const bool public_count = count_is_public(sub);
	const double count_eps = public_count ? 0 : s.eps_svt;
	s.n_hat = std::max(1.0, measure_count(sub, counts, count_eps, rng).value);
	*open_epsilon = s.eps_svt + count_eps;

	const std::size_t nx = w.universe, nq = w.queries.size();
	int m = size;
	if (m == 0) {
		const int theorem = smalldb_theorem_size(s.n_hat, s.eps_svt, s.s_max, nx, nq);
		m = 1;
		while (m < theorem && smalldb_candidates(nx, m + 1) <= kMaxSmallDbCandidates)
			++m;
	}
	s.size = m;
	const auto candidates = static_cast<std::size_t>(smalldb_candidates(nx, m));
	s.alive.assign((candidates + 7) / 8, 0xff);
	if (candidates % 8)
		s.alive.back() = static_cast<std::uint8_t>((1u << (candidates % 8)) - 1);
	const double rr_abort = std::ceil(20.0 * m * std::log(std::max<double>(nx, 2)));
	s.max_hard = max_hard > 0 ? max_hard : static_cast<int>(std::min<double>(static_cast<double>(nq), rr_abort));
	s.answers.assign(nq, std::numeric_limits<double>::quiet_NaN());
	s.was_hard.assign(nq, 0);
	new_run(s, rng);
	return s;
}

// See median_mechanism.h.
double
median_easiness_sensitivity(const MedianSession &s)
{
	return s.s_max / (s.alpha * s.n_hat);
}

// See median_mechanism.h.
double
median_easiness(const MedianSession &s, const Workload &w, std::size_t k, const std::vector<std::int64_t> &counts)
{
	const double truth = static_cast<double>(w.exact_units(k, counts)) * w.grid;
	const std::vector<double> values = smalldb_query_values(w, k, s.size);
	const double scale = s.n_hat / s.size, width = s.alpha * s.n_hat;
	double sum = 0;
	std::size_t n = 0;
	for (std::size_t c = 0; c < values.size(); ++c)
		if (is_alive(s, c)) {
			sum += std::exp(-std::fabs(truth - scale * values[c]) / width);
			++n;
		}
	return n ? sum / static_cast<double>(n) : 0.0;
}

// See median_mechanism.h.
bool
median_is_hard(const MedianSession &s, const Workload &w, std::size_t k, const std::vector<std::int64_t> &counts,
               RandomSource &rng)
{
	const double r = median_easiness(s, w, k, counts);
	return r + svt_noise(rng, 4 * median_easiness_sensitivity(s) / s.eps_svt) < s.threshold;
}

// See median_mechanism.h.
double
median_answer_easy(MedianSession &s, const Workload &w, std::size_t k)
{
	const std::vector<double> values = smalldb_query_values(w, k, s.size);
	std::vector<double> kept;
	for (std::size_t c = 0; c < values.size(); ++c)
		if (is_alive(s, c))
			kept.push_back(values[c] * s.n_hat / s.size);
	if (kept.empty())
		throw CoreError(ErrorKind::Internal, "median session has no candidate left");
	const auto mid = kept.begin() + static_cast<long>((kept.size() - 1) / 2);
	std::nth_element(kept.begin(), mid, kept.end());
	s.answers[k] = *mid;
	s.was_hard[k] = 0;
	return *mid;
}

// See median_mechanism.h.
double
median_answer_hard(MedianSession &s, const SubUniverse &sub, const Workload &w, std::size_t k,
                   const std::vector<std::int64_t> &counts, RandomSource &rng, double *scale)
{
	const Measurement m = measure_query(sub, w, k, counts, s.eps_meas, rng);
	*scale = m.scale;
	const std::vector<double> values = smalldb_query_values(w, k, s.size);
	const double radius = kMedianRadius * s.alpha * s.n_hat;
	double nearest = std::numeric_limits<double>::infinity();
	for (std::size_t c = 0; c < values.size(); ++c)
		if (is_alive(s, c))
			nearest = std::min(nearest, std::fabs(values[c] * s.n_hat / s.size - m.value));
	const double keep = std::max(radius, nearest); // the nearest candidates when none is within the radius
	for (std::size_t c = 0; c < values.size(); ++c)
		if (is_alive(s, c) && std::fabs(values[c] * s.n_hat / s.size - m.value) > keep)
			s.alive[c / 8] = static_cast<std::uint8_t>(s.alive[c / 8] & ~(1u << (c % 8)));
	s.answers[k] = m.value;
	s.was_hard[k] = 1;
	s.hard++;
	new_run(s, rng);
	return m.value;
}

} // namespace dxpriv
