// Unit tests of core/consistent_projection.h and core/postprocess.h: the projection is exact
// (totals equal the sums of their parts), variance-weighted (the BLUE), reduces every cell's
// variance, and refuses systems that are not sums over shared atoms; the free post-processing rules.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

#include "core/consistent_projection.h"
#include "core/postprocess.h"

namespace dxpriv {
namespace {

// ROLLUP (a, b) with |a| = 2, |b| = 3: cells (a,b) 0..5 (a-major), (a) 6..7, () 8; atoms = (a,b).
ConsistentSystem
rollup_2x3()
{
	ConsistentSystem s;
	s.cells = 9;
	for (std::size_t a = 0; a < 2; ++a)
		for (std::size_t b = 0; b < 3; ++b)
			s.atoms.push_back({a * 3 + b, 6 + a, 8});
	return s;
}

TEST(ConsistentProjection, TotalsEqualTheSumsOfTheirParts)
{
	const ConsistentSystem s = rollup_2x3();
	const std::vector<double> var{2, 2, 2, 2, 2, 2, 8, 8, 18};
	ConsistentProjection p(s, var);
	ASSERT_TRUE(p.usable());
	const std::vector<double> y{10, 12, 9, 30, -2, 7, 40, 33, 55};
	const std::vector<double> h = p.project(y);
	for (std::size_t a = 0; a < 2; ++a)
		EXPECT_NEAR(h[6 + a], h[a * 3] + h[a * 3 + 1] + h[a * 3 + 2], 1e-9);
	EXPECT_NEAR(h[8], h[6] + h[7], 1e-9);
	// a consistent vector is its own projection
	std::vector<double> c{1, 2, 3, 4, 5, 6, 6, 15, 21};
	const std::vector<double> hc = p.project(c);
	for (std::size_t k = 0; k < c.size(); ++k)
		EXPECT_NEAR(hc[k], c[k], 1e-9);
}

// The projection is the weighted least-squares solution: the normal equations hold (the weighted
// residual is orthogonal to every atom), and a noisier total moves less than the parts' sum.
TEST(ConsistentProjection, WeightedByVariance)
{
	ConsistentSystem s; // total 2 = part 0 + part 1
	s.cells = 3;
	s.atoms = {{0, 2}, {1, 2}};
	const std::vector<double> y{10, 20, 40};
	for (double vt : {0.5, 2.0, 50.0}) {
		const std::vector<double> var{1, 1, vt};
		ConsistentProjection p(s, var);
		ASSERT_TRUE(p.usable());
		const std::vector<double> h = p.project(y);
		for (const auto &atom : s.atoms) { // Σ_k in atom (y_k - h_k) / v_k == 0
			double r = 0;
			for (std::size_t k : atom)
				r += (y[k] - h[k]) / var[k];
			EXPECT_NEAR(r, 0, 1e-9);
		}
		// closed form: the gap 10 split in proportion to the variances
		const double gap = y[2] - y[0] - y[1];
		EXPECT_NEAR(h[2], y[2] - gap * vt / (vt + 2), 1e-9);
		EXPECT_NEAR(h[0], y[0] + gap / (vt + 2), 1e-9);
	}
}

TEST(ConsistentProjection, ReportedVarianceMatchesSimulationAndShrinks)
{
	const ConsistentSystem s = rollup_2x3();
	const std::vector<double> var{2, 2, 2, 4, 4, 4, 8, 8, 18};
	ConsistentProjection p(s, var);
	ASSERT_TRUE(p.usable());
	const std::vector<double> &pv = p.projected_variances();
	for (std::size_t k = 0; k < var.size(); ++k)
		EXPECT_LE(pv[k], var[k] + 1e-12);
	std::mt19937_64 rng(7);
	std::vector<double> sq(var.size(), 0.0);
	const int n = 40000;
	for (int i = 0; i < n; ++i) {
		std::vector<double> z(var.size());
		for (std::size_t k = 0; k < z.size(); ++k) // Laplace with variance var[k]
			z[k] = std::exponential_distribution<double>(1.0 / std::sqrt(var[k] / 2))(rng) *
			       (std::uniform_int_distribution<int>(0, 1)(rng) ? 1 : -1);
		const std::vector<double> h = p.project(z);
		for (std::size_t k = 0; k < z.size(); ++k)
			sq[k] += h[k] * h[k];
	}
	for (std::size_t k = 0; k < var.size(); ++k)
		EXPECT_NEAR(sq[k] / n, pv[k], 0.05 * pv[k]) << "cell " << k;
	EXPECT_LT(pv[8], 0.6 * var[8]); // the total gains most from its parts
}

TEST(ConsistentProjection, RoundedNoiseIsIntegerAndConsistent)
{
	const ConsistentSystem s = rollup_2x3();
	ConsistentProjection p(s, std::vector<double>(9, 3.0));
	ASSERT_TRUE(p.usable());
	const std::vector<double> z{3, -1, 0, 7, 2, -5, 11, -4, 1};
	const std::vector<double> n = consistent_noise_units(p, z);
	for (double v : n)
		EXPECT_EQ(v, std::floor(v));
	EXPECT_EQ(n[6], n[0] + n[1] + n[2]);
	EXPECT_EQ(n[8], n[6] + n[7]);
	// shifting z by a consistent integer vector shifts the result by exactly that vector
	// (x + noise is the rounded projection of x + z: post-processing of the noisy cells)
	const std::vector<double> x{1, 2, 3, 4, 5, 6, 6, 15, 21};
	std::vector<double> y(9);
	for (std::size_t k = 0; k < 9; ++k)
		y[k] = x[k] + z[k];
	const std::vector<double> ny = consistent_noise_units(p, y);
	for (std::size_t k = 0; k < 9; ++k)
		EXPECT_EQ(ny[k], x[k] + n[k]);
}

TEST(ConsistentSystem, FromWeights)
{
	// 4 points: sex in {F, M} x ward in {1, 2}; cells: (sex, ward) 0..3, (sex) 4..5, () 6
	std::vector<std::vector<double>> q(7, std::vector<double>(4, 0.0));
	for (std::size_t p = 0; p < 4; ++p) {
		q[p][p] = 1;
		q[4 + p / 2][p] = 1;
		q[6][p] = 1;
	}
	q[3][3] = q[5][3] = q[6][3] = 0; // a point WHERE excludes: no atom
	std::vector<const std::vector<double> *> ptrs;
	for (auto &c : q)
		ptrs.push_back(&c);
	ConsistentSystem s;
	ASSERT_TRUE(consistent_system_from_weights(ptrs, s));
	EXPECT_EQ(s.cells, 7u);
	ASSERT_EQ(s.atoms.size(), 3u);
	EXPECT_EQ(s.atoms[0], (std::vector<std::size_t>{0, 4, 6}));
	// a point adding different weights to its cells: not sums over shared atoms
	q[6][0] = 2;
	EXPECT_FALSE(consistent_system_from_weights(ptrs, s));
}

TEST(ConsistentProjection, UnusableSystems)
{
	ConsistentSystem two_margins; // GROUPING SETS ((a), (b)) over 2 x 2 atoms: rank 3 of 4
	two_margins.cells = 4;
	two_margins.atoms = {{0, 2}, {0, 3}, {1, 2}, {1, 3}};
	EXPECT_FALSE(ConsistentProjection(two_margins, std::vector<double>(4, 1.0)).usable());
	const ConsistentSystem s = rollup_2x3();
	std::vector<double> var(9, 1.0);
	var[3] = 0; // an exact cell
	EXPECT_FALSE(ConsistentProjection(s, var).usable());
	EXPECT_FALSE(ConsistentProjection(s, std::vector<double>(8, 1.0)).usable());
}

TEST(Postprocess, ClampNonnegative)
{
	EXPECT_EQ(clamp_nonnegative(-3, 0), 0);
	EXPECT_EQ(clamp_nonnegative(-3, 1), 0);
	EXPECT_EQ(clamp_nonnegative(4, 0), 4);
	EXPECT_EQ(clamp_nonnegative(-3, -1), -3); // a sum of a column with negative values
	EXPECT_TRUE(std::isnan(clamp_nonnegative(std::nan(""), 0)));
}

TEST(Postprocess, JudgeAverage)
{
	EXPECT_EQ(judge_average(100, 30, 5, 0, 100), AverageVerdict::None);
	EXPECT_EQ(judge_average(20, 30, 5, 0, 100), AverageVerdict::CountCoversZero);
	EXPECT_EQ(judge_average(-5, 3, 5, 0, 100), AverageVerdict::CountCoversZero);
	EXPECT_EQ(judge_average(100, 30, 50, 0, 100), AverageVerdict::WiderThanRange);
	EXPECT_EQ(judge_average(100, 30, std::nan(""), 0, 100), AverageVerdict::None);
	EXPECT_STRNE(average_verdict_text(AverageVerdict::CountCoversZero), "");
}

} // namespace
} // namespace dxpriv
