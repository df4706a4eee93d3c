// Confidence half-widths of the noise added by a LinearNoisePlan.
#include "core/accuracy.h"

#include <boost/math/distributions/normal.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/error.h"

namespace dxpriv {

namespace {

constexpr double kMaxSummedDeviation = 1e4; // exact discrete Gaussian tails are summed up to here

// Discrete Laplace of scale t (grid steps): the closed-form tail.
double
laplace_steps(double t, double miss)
{
	const double log_a = -1.0 / t; // ln a
	const double a = std::exp(log_a);
	// P(|Z| >= k + 1) = 2 a^(k+1) / (1 + a) <= miss  <=>  k + 1 >= ln(miss (1 + a) / 2) / ln a
	const double k = std::ceil(std::log(miss * (1 + a) / 2) / log_a - 1e-12) - 1;
	return std::fmax(k, 0.0);
}

// Discrete Laplace of scale t truncated to |Z| <= b: the smallest k <= b with P(|Z| > k) <= miss.
double
truncated_steps(double t, double b, double miss)
{
	const long double a = std::exp(-1.0L / t);
	const long double norm = 1 + 2 * a * -std::expm1(b * std::log(a)) / (1 - a);
	const auto tail = [&](double k) { // P(|Z| > k) = 2 (a^(k+1) - a^(b+1)) / (1 - a) / norm
		return 2 * (std::pow(a, k + 1) - std::pow(a, b + 1)) / (1 - a) / norm;
	};
	double lo = 0, hi = b; // tail(b) = 0
	if (tail(lo) <= miss)
		return 0;
	while (hi - lo > 1) {
		const double mid = std::floor((lo + hi) / 2);
		(tail(mid) <= miss ? hi : lo) = mid;
	}
	return hi;
}

// Discrete Gaussian of deviation s (grid steps): summed exactly for s <= kMaxSummedDeviation, the
// continuous quantile above (the two laws differ by far less than a step there).
double
gaussian_steps(double s, double miss)
{
	if (s > kMaxSummedDeviation) {
		const boost::math::normal_distribution<double> law(0.0, s);
		return std::ceil(boost::math::quantile(boost::math::complement(law, miss / 2)));
	}
	const auto bound = static_cast<std::int64_t>(std::ceil(12 * s)) + 2;
	long double total = 1, beyond = 0; // total mass (z = 0 weighs 1) and mass with |z| > k
	std::vector<long double> w(static_cast<std::size_t>(bound) + 1, 0);
	for (std::int64_t z = 1; z <= bound; z++) {
		w[static_cast<std::size_t>(z)] = std::exp(-static_cast<long double>(z) * z / (2.0L * s * s));
		total += 2 * w[static_cast<std::size_t>(z)];
	}
	for (std::int64_t k = bound; k >= 1; k--) { // grow the tail inwards until it exceeds miss
		if ((beyond + 2 * w[static_cast<std::size_t>(k)]) / total > miss)
			return static_cast<double>(k);
		beyond += 2 * w[static_cast<std::size_t>(k)];
	}
	return 0;
}

} // namespace

// See accuracy.h.
double
confidence_half_width(const LinearNoisePlan &plan, double confidence)
{
	if (!(confidence > 0 && confidence < 1))
		throw CoreError(ErrorKind::InvalidParameter, "confidence must lie strictly between 0 and 1");
	if (plan.scale == 0)
		return 0;
	const double t = plan.scale / plan.grid;
	const double miss = 1 - confidence;
	switch (plan.family) {
	case NoiseFamily::Gaussian:
		return gaussian_steps(t, miss) * plan.grid;
	case NoiseFamily::TruncatedLaplace:
		return truncated_steps(t, std::floor(plan.bound / plan.grid), miss) * plan.grid;
	case NoiseFamily::Laplace:
		break;
	}
	return laplace_steps(t, miss) * plan.grid;
}

// See accuracy.h.
double
noise_variance(const LinearNoisePlan &plan)
{
	if (!(plan.scale > 0))
		return 0;
	if (plan.family == NoiseFamily::Gaussian)
		return plan.scale * plan.scale;
	const double grid = plan.grid > 0 ? plan.grid : 1;
	const double a = std::exp(-grid / plan.scale);
	const double one_minus_a = -std::expm1(-grid / plan.scale);
	return grid * grid * 2 * a / (one_minus_a * one_minus_a);
}

} // namespace dxpriv
