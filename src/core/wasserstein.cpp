// Wasserstein mechanism for attribute privacy: W_inf between integer laws, sensitivity, release.
#include "core/wasserstein.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "core/samplers.h"

namespace dxpriv {

namespace {

// Lower and upper tail sums of p: lower[k] = P(F <= k), upper[k] = P(F > k), each summed from its
// own end so that values near 0 are accurate in both tails (a CDF summed from below rounds to 1
// long before the last point of a wide law, which would open false quantile gaps in the tail).
struct Tails {
	std::vector<double> lower, upper;
};

Tails
tails_of(const IntegerPmf &p)
{
	Tails t;
	t.lower.resize(p.size());
	t.upper.resize(p.size());
	double acc = 0;
	for (size_t k = 0; k < p.size(); ++k)
		t.lower[k] = acc += p[k];
	acc = 0;
	for (size_t k = p.size(); k-- > 0;) {
		t.upper[k] = acc;
		acc += p[k];
	}
	return t;
}

// Relative tolerance of the tail comparisons: the laws' own values carry rounding errors of a few
// ulps times their length (the same law computed by two convolutions differs in the last bits), so
// tail probabilities equal to within this factor are ties, not a quantile gap.
constexpr double kTieTolerance = 1e-11;

// F_q(k) <= F_p(j) (with F(j) = 1 beyond the last point), compared in the tail where the smaller
// side is accurate: lower sums when F_q(k) <= 1/2, upper sums P(F > .) otherwise.
bool
cdf_at_most(const Tails &q, size_t k, const Tails &p, size_t j)
{
	if (j >= p.lower.size() - 1)
		return true;
	if (k >= q.lower.size() - 1)
		return p.upper[j] == 0; // F_q(k) = 1: p must have no mass beyond j
	if (q.lower[k] <= 0.5)
		return q.lower[k] <= p.lower[j] * (1 + kTieTolerance);
	return q.upper[k] * (1 + kTieTolerance) >= p.upper[j];
}

// Whether F_p^{-1}(u) <= F_q^{-1}(u) + t for every u in (0, 1), i.e. F_q(k) <= F_p(k + t) for all k.
bool
within_shift(const Tails &p, const Tails &q, size_t t)
{
	for (size_t k = 0; k < q.lower.size(); ++k)
		if (!cdf_at_most(q, k, p, k + t))
			return false;
	return true;
}

} // namespace

// See wasserstein.h.
void
validate_pmf(const IntegerPmf &p)
{
	if (p.empty())
		throw CoreError(ErrorKind::InvalidParameter, "a probability mass function needs at least one value",
		                "Give P(F = 0), P(F = 1), ...");
	double total = 0;
	for (double x : p) {
		if (!(x >= 0) || !std::isfinite(x))
			throw CoreError(ErrorKind::InvalidParameter, "probabilities must be finite and non-negative",
			                "Give P(F = 0), P(F = 1), ... as numbers in [0, 1].");
		total += x;
	}
	if (std::abs(total - 1) > 1e-9)
		throw CoreError(ErrorKind::InvalidParameter, "probabilities must sum to 1",
		                "Give P(F = 0), P(F = 1), ... for every value F can take.");
}

// See wasserstein.h. W_inf <= t iff the quantile functions never differ by more than t, iff
// F_q(k) <= F_p(k + t) and F_p(k) <= F_q(k + t) for every k (quantile and CDF dominance are
// equivalent); the smallest such integer t is found from t = 0 upwards.
double
winf_integer(const IntegerPmf &p, const IntegerPmf &q)
{
	validate_pmf(p);
	validate_pmf(q);
	const Tails tp = tails_of(p), tq = tails_of(q);
	const size_t last = std::max(p.size(), q.size()) - 1;
	for (size_t t = 0; t < last; ++t)
		if (within_shift(tp, tq, t) && within_shift(tq, tp, t))
			return static_cast<double>(t);
	return static_cast<double>(last);
}

// See wasserstein.h.
double
wasserstein_sensitivity(const std::vector<std::vector<IntegerPmf>> &conditionals)
{
	if (conditionals.empty())
		throw CoreError(ErrorKind::InvalidParameter, "the Wasserstein mechanism needs at least one declared model",
		                "Give one array of laws per model.");
	double w = 0;
	for (const auto &model : conditionals) {
		if (model.size() < 2)
			throw CoreError(ErrorKind::InvalidParameter, "every declared model needs at least two secrets",
			                "A secret pair compares the law of the answer under two values of the secret.");
		for (size_t a = 0; a < model.size(); ++a)
			for (size_t b = a + 1; b < model.size(); ++b)
				w = std::max(w, winf_integer(model[a], model[b]));
	}
	return w;
}

// See wasserstein.h.
IntegerPmf
binomial_pmf(int n, double p)
{
	if (n < 0 || n > 100000)
		throw CoreError(ErrorKind::InvalidParameter, "binomial size must lie in [0, 100000]");
	if (!(p >= 0 && p <= 1))
		throw CoreError(ErrorKind::InvalidParameter, "binomial probability must lie in [0, 1]");
	IntegerPmf out(static_cast<size_t>(n) + 1, 0.0);
	for (int k = 0; k <= n; ++k) {
		if ((p == 0 && k > 0) || (p == 1 && k < n))
			continue;
		const double log_c = std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0);
		const double lp = k > 0 ? k * std::log(p) : 0.0;
		const double lq = n - k > 0 ? (n - k) * std::log1p(-p) : 0.0;
		out[static_cast<size_t>(k)] = std::exp(log_c + lp + lq);
	}
	return out;
}

// See wasserstein.h.
IntegerPmf
convolve(const IntegerPmf &a, const IntegerPmf &b)
{
	if (a.empty() || b.empty())
		throw CoreError(ErrorKind::InvalidParameter, "a probability mass function needs at least one value");
	IntegerPmf out(a.size() + b.size() - 1, 0.0);
	for (size_t i = 0; i < a.size(); ++i)
		for (size_t j = 0; j < b.size(); ++j)
			out[i + j] += a[i] * b[j];
	return out;
}

// See wasserstein.h.
double
wasserstein_scale(double w, double epsilon)
{
	if (!(epsilon > 0) || !std::isfinite(epsilon))
		throw CoreError(ErrorKind::InvalidParameter, "epsilon must be positive and finite", "Use a value such as 0.5.");
	if (!(w >= 0) || !std::isfinite(w))
		throw CoreError(ErrorKind::InvalidParameter, "wasserstein sensitivity must be finite and non-negative");
	return w / epsilon;
}

// See wasserstein.h.
double
laplace_release(RandomSource &rng, double exact, double scale)
{
	if (!std::isfinite(exact))
		throw CoreError(ErrorKind::DataException, "the exact answer is not a finite number");
	if (!(scale >= 0) || !std::isfinite(scale))
		throw CoreError(ErrorKind::InvalidParameter, "noise scale must be finite and non-negative");
	if (scale == 0)
		return exact;
	int e = 0;
	std::frexp(scale, &e);
	const double grid = std::ldexp(1.0, e - 1 - 10);
	const double on_grid = std::abs(exact / grid) < 9007199254740992.0 ? std::round(exact / grid) * grid : exact;
	return on_grid + laplace_on_grid(rng, scale, grid);
}

} // namespace dxpriv
