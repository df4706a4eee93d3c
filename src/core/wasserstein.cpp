// Wasserstein mechanism for attribute privacy: W_inf between integer laws, sensitivity, release.
#include "core/wasserstein.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "core/samplers.h"

namespace dxpriv {

namespace {

// CDF of p, its last value forced to exactly 1 (p is validated).
std::vector<double>
cdf_of(const IntegerPmf &p)
{
	std::vector<double> c(p.size());
	double acc = 0;
	for (size_t k = 0; k < p.size(); ++k)
		c[k] = acc += p[k];
	c.back() = 1.0;
	return c;
}

// F^{-1}(u) = min{k : F(k) >= u}.
size_t
quantile(const std::vector<double> &cdf, double u)
{
	auto it = std::lower_bound(cdf.begin(), cdf.end(), u);
	return it == cdf.end() ? cdf.size() - 1 : static_cast<size_t>(it - cdf.begin());
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

// See wasserstein.h. Between consecutive breakpoints of the two CDFs both quantile functions are
// constant; each open interval is probed at its midpoint.
double
winf_integer(const IntegerPmf &p, const IntegerPmf &q)
{
	validate_pmf(p);
	validate_pmf(q);
	const std::vector<double> cp = cdf_of(p), cq = cdf_of(q);
	std::vector<double> cuts{0.0};
	cuts.insert(cuts.end(), cp.begin(), cp.end());
	cuts.insert(cuts.end(), cq.begin(), cq.end());
	std::sort(cuts.begin(), cuts.end());
	cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
	double w = 0;
	for (size_t k = 0; k + 1 < cuts.size(); ++k) {
		const double u = cuts[k] + (cuts[k + 1] - cuts[k]) / 2;
		if (!(u > 0 && u < 1) || !(u > cuts[k]))
			continue;
		const double a = static_cast<double>(quantile(cp, u)), b = static_cast<double>(quantile(cq, u));
		w = std::max(w, std::abs(a - b));
	}
	return w;
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
