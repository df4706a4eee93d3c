// Statistical test of the dispersion statistics' delta-method error bars (core/dispersion.h): over
// many seeded releases of noisy sums, the 95% interval covers the true statistic about 95% of the time.
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/dispersion.h"

using namespace dxpriv;

namespace {

struct Coverage {
	int covered = 0, trials = 0;
	double rate() const { return static_cast<double>(covered) / trials; }
};

// Releases the sums of (x, y) with independent Laplace noise of the given scales `trials` times and
// counts how often [value - h, value + h] holds the exact statistic.
Coverage
coverage(Dispersion k, const DispersionParts &exact, const DispersionParts &scales, double cx, double cy, int trials,
         unsigned seed)
{
	std::mt19937_64 rng(seed);
	std::exponential_distribution<double> e(1.0);
	const double truth = dispersion_value(k, exact, cx, cy);
	DispersionParts var{}, kurt{};
	for (int p = 0; p < kParts; ++p) {
		var[p] = 2 * scales[p] * scales[p];
		kurt[p] = 3; // Laplace
	}
	Coverage c;
	for (int t = 0; t < trials; ++t) {
		DispersionParts noisy = exact;
		for (int p = 0; p < kParts; ++p)
			noisy[p] += scales[p] * (e(rng) - e(rng));
		const DispersionAnswer a = dispersion_release(k, noisy, var, kurt, cx, cy, 0, 100, 0, 100, 1.0, false);
		++c.trials;
		c.covered += std::fabs(a.value - truth) <= a.half_width;
	}
	return c;
}

// Sums of 5000 rows of x uniform on 0..100 and y = x/2 + 20 + uniform noise (corr ~ 0.8), centred at 50.
DispersionParts
data_sums(double &cx, double &cy)
{
	std::mt19937_64 rng(7);
	std::uniform_int_distribution<int> u(0, 100), w(-15, 15);
	cx = 50;
	cy = 50;
	DispersionParts p{};
	for (int i = 0; i < 5000; ++i) {
		const double x = u(rng), y = std::min(100.0, std::max(0.0, x / 2 + 20 + w(rng)));
		p[kPartN] += 1;
		p[kPartSx] += x - cx;
		p[kPartSy] += y - cy;
		p[kPartSxx] += (x - cx) * (x - cx);
		p[kPartSyy] += (y - cy) * (y - cy);
		p[kPartSxy] += (x - cx) * (y - cy);
	}
	return p;
}

} // namespace

TEST(DispersionStat, NinetyFivePercentIntervalsCoverAboutNinetyFivePercent)
{
	double cx, cy;
	const DispersionParts exact = data_sums(cx, cy);
	// scales of a release at epsilon ~1 split over the parts: presence sensitivities 1, 50, 50,
	// 2500, 2500, 2500 (centred sums of values in 0..100), each part with about a sixth of epsilon
	const DispersionParts scales = {6, 300, 300, 15000, 15000, 15000};
	const Dispersion kinds[] = {Dispersion::StddevSamp, Dispersion::VarPop,  Dispersion::CovarSamp,
	                            Dispersion::Corr,       Dispersion::RegrSlope, Dispersion::RegrIntercept,
	                            Dispersion::RegrAvgX,   Dispersion::RegrR2};
	unsigned seed = 100;
	for (Dispersion k : kinds) {
		const Coverage c = coverage(k, exact, scales, cx, cy, 4000, seed++);
		std::printf("  %-15s coverage %.4f over %d releases\n", dispersion_name(k), c.rate(), c.trials);
		EXPECT_GT(c.rate(), 0.93) << dispersion_name(k);
		EXPECT_LT(c.rate(), 0.97) << dispersion_name(k);
	}
}

TEST(DispersionStat, TooNarrowIntervalsWouldBeCaught)
{
	// the same releases judged with half the half-width cover far less: the test above can fail
	double cx, cy;
	const DispersionParts exact = data_sums(cx, cy);
	const DispersionParts scales = {6, 300, 300, 15000, 15000, 15000};
	std::mt19937_64 rng(5);
	std::exponential_distribution<double> e(1.0);
	DispersionParts var{};
	for (int p = 0; p < kParts; ++p)
		var[p] = 2 * scales[p] * scales[p];
	const double truth = dispersion_value(Dispersion::StddevSamp, exact, cx, cy);
	int covered = 0;
	for (int t = 0; t < 2000; ++t) {
		DispersionParts noisy = exact;
		for (int p = 0; p < kParts; ++p)
			noisy[p] += scales[p] * (e(rng) - e(rng));
		const double h = dispersion_half_width(Dispersion::StddevSamp, noisy, var, DispersionParts{}, cx, cy) / 2;
		covered += std::fabs(dispersion_value(Dispersion::StddevSamp, noisy, cx, cy) - truth) <= h;
	}
	EXPECT_LT(covered / 2000.0, 0.85);
}
