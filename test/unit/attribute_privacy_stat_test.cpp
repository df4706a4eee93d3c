// Statistical checks of the attribute-privacy releases: APGM's Gaussian noise (mean, variance,
// kurtosis of a normal) and the Wasserstein / Markov quilt mechanisms' Laplace noise (mean,
// variance 2 b^2, mean absolute deviation b), within kSigmas standard errors.
#include "core/attribute_privacy.h"
#include "core/wasserstein.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/random.h"
#include "test_support.h"

namespace dxpriv {
namespace {

using ::dxpriv::testing::kSigmas;

struct Moments {
	double mean = 0, var = 0, m4 = 0, mad = 0;
};

template <class Draw>
Moments moments(int n, Draw draw)
{
	std::vector<double> x(n);
	Moments m;
	for (int i = 0; i < n; ++i)
		m.mean += (x[i] = draw()) / n;
	for (double v : x) {
		m.var += (v - m.mean) * (v - m.mean) / (n - 1);
		m.m4 += std::pow(v - m.mean, 4) / n;
		m.mad += std::abs(v - m.mean) / n;
	}
	return m;
}

TEST(AttributeNoiseStat, ApgmGaussianNoise)
{
	SeededRandom rng(2024);
	const int n = 40000;
	const double sigma = 2.5, exact = 7.0;
	const Moments m = moments(n, [&] { return apgm_release(rng, exact, sigma); });
	EXPECT_NEAR(exact, m.mean, kSigmas * sigma / std::sqrt(n));
	// Var of the sample variance of a normal: 2 sigma^4 / (n - 1)
	EXPECT_NEAR(sigma * sigma, m.var, kSigmas * std::sqrt(2.0 / (n - 1)) * sigma * sigma);
	// kurtosis 3 (Laplace would give 6); its standard error is about sqrt(24 / n)
	EXPECT_NEAR(3.0, m.m4 / (m.var * m.var), kSigmas * std::sqrt(24.0 / n));
}

TEST(AttributeNoiseStat, WassersteinLaplaceNoise)
{
	SeededRandom rng(77);
	const int n = 40000;
	const double b = wasserstein_scale(2.0, 0.5), exact = 3.0; // scale 4
	const Moments m = moments(n, [&] { return laplace_release(rng, exact, b); });
	EXPECT_NEAR(exact, m.mean, kSigmas * std::sqrt(2.0) * b / std::sqrt(n));
	// Var of the sample variance of a Laplace: (mu4 - sigma^4) / n = (24 b^4 - 4 b^4) / n
	EXPECT_NEAR(2 * b * b, m.var, kSigmas * std::sqrt(20.0 / n) * b * b);
	EXPECT_NEAR(b, m.mad, kSigmas * b / std::sqrt(n));
}

} // namespace
} // namespace dxpriv
