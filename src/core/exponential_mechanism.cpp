// d_X-private exponential mechanism: utilities, exact utility sensitivity and exact sampling.
#include "core/exponential_mechanism.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/samplers.h"

namespace dxpriv {

namespace {

using i128 = __int128;
using u128 = unsigned __int128;

// Safety factor applied before rounding beta down: covers the (at most three) roundings to
// nearest in S_EM and epsilon / (2 S_EM), so num / 2^20 never exceeds the exact epsilon / (2 S).
constexpr double kBetaShrink = 1.0 - 1e-15;

// How one column's lines are scored by em_utility_sensitivity.
enum class LineKind {
	Plain,     // neither the candidate nor a GROUP BY column: f = |Q_i - Q_j|
	Candidate, // the candidate column (same group): f = 1 if both counted, else max(Q_i, Q_j)
	Group      // a GROUP BY column (each point in its own group): f = Q_i + Q_j
};

} // namespace

// See exponential_mechanism.h.
std::uint32_t
quantile_numerator(double p)
{
	if (!(p >= 0.0 && p <= 1.0))
		throw CoreError(ErrorKind::InvalidParameter, "quantile level must be between 0 and 1",
		                "Use for example 0.5 for the median or 0.9 for the 90th percentile.");
	return static_cast<std::uint32_t>(std::llround(std::ldexp(p, kQuantileBits)));
}

// See exponential_mechanism.h.
std::uint64_t
em_utility_denominator(const EmUtility &u)
{
	return u.kind == EmKind::Quantile ? kQuantileOne : 1;
}

// See exponential_mechanism.h.
std::vector<__int128>
em_utilities(const EmUtility &u, const std::vector<std::int64_t> &counts)
{
	if (counts.empty())
		throw CoreError(ErrorKind::InvalidParameter, "the exponential mechanism needs at least one candidate");
	if (u.kind == EmKind::Quantile && u.p_num > kQuantileOne)
		throw CoreError(ErrorKind::InvalidParameter, "quantile level must be between 0 and 1");
	std::int64_t total = 0;
	for (std::int64_t c : counts) {
		if (c < 0)
			throw CoreError(ErrorKind::InvalidParameter, "candidate counts must be non-negative");
		if (c > std::numeric_limits<std::int64_t>::max() - total)
			throw CoreError(ErrorKind::DataException, "too many rows for the exponential mechanism");
		total += c;
	}
	std::vector<i128> out(counts.size());
	if (u.kind != EmKind::Quantile) {
		for (std::size_t r = 0; r < counts.size(); ++r)
			out[r] = counts[r];
		return out;
	}
	// In units of 2^-20 rows: |values| <= 2^20 * 2^63, far inside 128 bits.
	const i128 target = static_cast<i128>(u.p_num) * total; // p N
	i128 below = 0;                                          // L_r = #{value < r}
	for (std::size_t r = 0; r < counts.size(); ++r) {
		const i128 at_most = below + counts[r];              // C_r = #{value <= r}
		const i128 lo = below * kQuantileOne, hi = at_most * kQuantileOne;
		const i128 gap = std::max<i128>({0, lo - target, target - hi});
		out[r] = -gap;
		below = at_most;
	}
	return out;
}

// See exponential_mechanism.h.
double
em_row_bound(const EmUtility &u, std::size_t candidates)
{
	if (u.kind == EmKind::Distinct)
		return 1; // D is 0 or 1 even with a single candidate
	if (candidates <= 1)
		return 0;
	if (u.kind == EmKind::Mode)
		return 1;
	const double p = std::ldexp(static_cast<double>(u.p_num), -kQuantileBits);
	return std::max(p, 1.0 - p);
}

// See exponential_mechanism.h.
double
em_utility_sensitivity(const SubUniverse &sub, const std::vector<char> &counted, std::size_t candidate_column,
                       const std::vector<std::size_t> &group_columns, const EmUtility &u)
{
	const std::size_t n = sub.size();
	const std::size_t ncols = sub.domains.size();
	if (counted.size() != n || candidate_column >= ncols)
		throw CoreError(ErrorKind::Internal, "exponential mechanism arguments do not match the sub-universe");
	std::vector<LineKind> kind(ncols, LineKind::Plain);
	kind[candidate_column] = LineKind::Candidate;
	for (std::size_t g : group_columns) {
		if (g >= ncols)
			throw CoreError(ErrorKind::Internal, "exponential mechanism group column out of range");
		kind[g] = LineKind::Group; // a candidate column that is also grouped: every point its own group
	}
	if (!(sub.presence > 0))
		throw CoreError(ErrorKind::InvalidParameter, "presence distance must be positive",
		                "Give a positive number, or infinity for the bounded model (public row count).");
	const std::size_t candidates = sub.domains[candidate_column].size();
	const double bound = em_row_bound(u, candidates);
	if (bound == 0)
		return 0; // one candidate: the answer does not depend on the data

	// Work: every line of every column, scored by line_sensitivity (Plain), in O(k) (Discrete) or
	// over the column's sufficient edge set (others; all pairs for per_value).
	double work = 0;
	for (std::size_t c = 0; c < ncols; ++c) {
		const Domain &dom = sub.domains[c];
		const ColumnMetric &m = sub.metrics[c];
		m.validate(dom);
		const double k = static_cast<double>(dom.size());
		double per_line = m.line_cost(dom);
		if (kind[c] != LineKind::Plain && m.kind() == MetricKind::PerValue)
			per_line = k * (k - 1) / 2;
		work += static_cast<double>(n / dom.size()) * per_line;
	}
	if (work > kMaxSensitivityWork)
		throw CoreError(ErrorKind::ProgramLimit,
		                "computing the sensitivity of this query needs more than 2e9 distance evaluations",
		                "Declare fewer points or coarser domains, or use a metric with few edges (absolute, graph, theta1).");

	std::vector<double> q(n);
	for (std::size_t i = 0; i < n; ++i)
		q[i] = counted[i] ? bound : 0.0;
	double s = 0;
	for (double w : q)
		s = std::max(s, w / sub.presence); // presence edge: the row appears or disappears

	std::size_t stride = n;
	for (std::size_t c = 0; c < ncols; ++c) {
		const Domain &dom = sub.domains[c];
		const ColumnMetric &m = sub.metrics[c];
		const std::size_t k = dom.size();
		stride /= k;
		if (k < 2 || m.kind() == MetricKind::None)
			continue;
		const std::size_t block = k * stride;
		auto f = [&](std::size_t a, std::size_t b) { // L between points a and b of one line (a != b)
			if (kind[c] == LineKind::Group)
				return q[a] + q[b];
			if (counted[a] && counted[b])
				return 1.0;
			return std::max(q[a], q[b]);
		};
		if (kind[c] == LineKind::Plain) {
			for (std::size_t outer = 0; outer < n; outer += block)
				for (std::size_t r = 0; r < stride; ++r)
					s = std::max(s, m.line_sensitivity(dom, q.data() + outer + r, stride));
			continue;
		}
		if (m.kind() == MetricKind::Discrete) {
			// Every pair of distinct points is at the same distance w: max over pairs of f, in O(k).
			const double w = m.distance(dom, 0, 1);
			if (!(w < kInfinity))
				continue;
			for (std::size_t outer = 0; outer < n; outer += block)
				for (std::size_t r = 0; r < stride; ++r) {
					double best = 0;
					if (kind[c] == LineKind::Group) {
						double top1 = 0, top2 = 0;
						for (std::size_t i = 0; i < k; ++i) {
							const double v = q[outer + r + i * stride];
							if (v > top1) {
								top2 = top1;
								top1 = v;
							} else if (v > top2) {
								top2 = v;
							}
						}
						best = top1 + top2;
					} else {
						std::size_t hits = 0;
						for (std::size_t i = 0; i < k; ++i)
							hits += counted[outer + r + i * stride] ? 1 : 0;
						best = hits >= 2 ? 1.0 : hits == 1 ? bound : 0.0;
					}
					s = std::max(s, best / w);
				}
			continue;
		}
		m.for_each_edge(dom, [&](std::size_t i, std::size_t j, double d) {
			for (std::size_t outer = 0; outer < n; outer += block)
				for (std::size_t r = 0; r < stride; ++r)
					s = std::max(s, f(outer + r + i * stride, outer + r + j * stride) / d);
		});
	}
	return s;
}

// See exponential_mechanism.h.
EmBeta
em_beta(double epsilon, double sensitivity)
{
	if (!(epsilon > 0) || !std::isfinite(epsilon))
		throw CoreError(ErrorKind::InvalidParameter, "epsilon must be positive and finite");
	if (!(sensitivity >= 0) || !std::isfinite(sensitivity))
		throw CoreError(ErrorKind::InvalidParameter, "utility sensitivity must be non-negative and finite");
	EmBeta b;
	if (sensitivity == 0) {
		b.infinite = true;
		return b;
	}
	const double beta = epsilon / (2 * sensitivity);
	const double scaled = std::ldexp(beta, kEmBetaBits) * kBetaShrink;
	if (!(scaled < static_cast<double>(kEmMaxBetaNum)))
		b.num = kEmMaxBetaNum;
	else
		b.num = static_cast<std::uint64_t>(std::floor(scaled));
	return b;
}

// See exponential_mechanism.h.
double
em_scale(double epsilon, double sensitivity)
{
	if (!(epsilon > 0) || !std::isfinite(epsilon) || !(sensitivity >= 0) || !std::isfinite(sensitivity))
		throw CoreError(ErrorKind::InvalidParameter, "epsilon must be positive and finite");
	const double scale = 2 * sensitivity / epsilon;
	if (!std::isfinite(scale))
		throw CoreError(ErrorKind::ProgramLimit, "the exponential mechanism's temperature is too large",
		                "Use a larger epsilon.");
	return scale;
}

// See exponential_mechanism.h.
bool
bernoulli_exp_minus_wide(RandomSource &rng, unsigned __int128 num, std::uint64_t den)
{
	if (den == 0)
		throw CoreError(ErrorKind::Internal, "invalid bernoulli parameter");
	// exp(-num/den) = exp(-1)^whole * exp(-rest/den): independent trials, stop at the first failure
	// (the loop runs past i trials with probability exp(-i), so a huge `whole` costs nothing).
	const u128 whole = num / den;
	const std::uint64_t rest = static_cast<std::uint64_t>(num % den);
	for (u128 i = 0; i < whole; ++i)
		if (!bernoulli_exp_minus(rng, 1, 1))
			return false;
	return bernoulli_exp_minus(rng, rest, den);
}

// See exponential_mechanism.h.
std::size_t
em_sample(RandomSource &rng, const std::vector<__int128> &utilities, std::uint64_t utility_den, EmBeta beta)
{
	if (utilities.empty() || utility_den == 0)
		throw CoreError(ErrorKind::InvalidParameter, "the exponential mechanism needs candidates and a utility scale");
	const std::size_t k = utilities.size();
	const i128 top = *std::max_element(utilities.begin(), utilities.end());
	if (beta.infinite) {
		std::vector<std::size_t> best;
		for (std::size_t r = 0; r < k; ++r)
			if (utilities[r] == top)
				best.push_back(r);
		return best[rng.uniform_below(static_cast<std::uint64_t>(best.size()))];
	}
	// exp(-beta (top - U_r) / den) = exp(-num * gap / (2^20 den)). gap < 2^84 and num <= 2^44.
	const u128 den128 = static_cast<u128>(utility_den) << kEmBetaBits;
	if (den128 > std::numeric_limits<std::uint64_t>::max())
		throw CoreError(ErrorKind::Internal, "utility scale of the exponential mechanism is too large");
	const std::uint64_t den = static_cast<std::uint64_t>(den128);
	for (;;) {
		const std::size_t r = static_cast<std::size_t>(rng.uniform_below(static_cast<std::uint64_t>(k)));
		const u128 gap = static_cast<u128>(top - utilities[r]);
		if (gap == 0 || beta.num == 0)
			return r;
		if (gap > (~u128{0}) / beta.num)
			throw CoreError(ErrorKind::Internal, "utility gap of the exponential mechanism overflows");
		if (bernoulli_exp_minus_wide(rng, gap * beta.num, den))
			return r;
	}
}

// See exponential_mechanism.h.
std::vector<long double>
em_probabilities(const std::vector<__int128> &utilities, std::uint64_t utility_den, EmBeta beta)
{
	if (utilities.empty() || utility_den == 0)
		throw CoreError(ErrorKind::InvalidParameter, "the exponential mechanism needs candidates and a utility scale");
	const i128 top = *std::max_element(utilities.begin(), utilities.end());
	std::vector<long double> p(utilities.size());
	long double total = 0;
	for (std::size_t r = 0; r < utilities.size(); ++r) {
		const long double gap = static_cast<long double>(top - utilities[r]) / utility_den;
		if (beta.infinite)
			p[r] = utilities[r] == top ? 1.0L : 0.0L;
		else
			p[r] = std::exp(-std::ldexp(static_cast<long double>(beta.num), -kEmBetaBits) * gap);
		total += p[r];
	}
	for (long double &x : p)
		x /= total;
	return p;
}

// See exponential_mechanism.h.
double
em_utility_loss_bound(EmBeta beta, std::size_t candidates, double t)
{
	if (beta.infinite)
		return 0;
	if (beta.num == 0)
		return kInfinity;
	const double b = std::ldexp(static_cast<double>(beta.num), -kEmBetaBits);
	return (std::log(static_cast<double>(std::max<std::size_t>(candidates, 1))) + t) / b;
}

// See exponential_mechanism.h.
double
em_distinct_scale(EmBeta beta)
{
	if (beta.infinite)
		return 0;
	if (beta.num == 0)
		throw CoreError(ErrorKind::ProgramLimit, "the noise of this distinct count would exceed its limit",
		                "Raise epsilon or declare a coarser metric: the count's sensitivity over epsilon is above 2^19.");
	return std::ldexp(1.0, 19) / static_cast<double>(beta.num);
}

// See exponential_mechanism.h.
std::int64_t
em_distinct_release(RandomSource &rng, const std::vector<std::int64_t> &counts, EmBeta beta)
{
	std::int64_t present = 0;
	for (std::int64_t c : counts) {
		if (c < 0)
			throw CoreError(ErrorKind::InvalidParameter, "candidate counts must be non-negative");
		present += c > 0 ? 1 : 0;
	}
	em_distinct_scale(beta); // refuses beta.num == 0
	if (beta.infinite)
		return present;
	return present + discrete_laplace(rng, Rational{std::uint64_t{1} << 19, beta.num});
}

} // namespace dxpriv
