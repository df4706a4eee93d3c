// (epsilon, delta) noise for multi-linear queries: the zCDP conversion, the Gaussian and truncated
// Laplace calibrations, and a brute-force check of the declared guarantee over every pair of
// records (including ⊥) of several sub-universes.
#include "core/approximate_dp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/gaussian.h"
#include "core/truncated_laplace.h"
#include "test_support.h"

namespace dxpriv {
namespace {

using ::dxpriv::testing::Matrix;
using ::dxpriv::testing::expect_core_error;
using ::dxpriv::testing::record_metric;
using ::dxpriv::testing::sample_sub_universes;

constexpr NoiseFamily kApproxFamilies[] = {NoiseFamily::Gaussian, NoiseFamily::TruncatedLaplace};

// Brute-force minimum of the CKS objective over a fine logarithmic grid of alpha.
double
brute_cdp_delta(double rho, double epsilon)
{
	double best = 1;
	for (double x = -12; x <= 12; x += 1e-4) {
		const double alpha = 1 + std::pow(10.0, x);
		const double v = std::exp((alpha - 1) * (alpha * rho - epsilon)) / (alpha - 1) * std::pow(1 - 1 / alpha, alpha);
		if (std::isfinite(v))
			best = std::min(best, v);
	}
	return best;
}

TEST(CdpDelta, MatchesBruteForceMinimum)
{
	for (double rho : {1e-4, 0.01, 0.1, 0.5, 2.0, 10.0})
		for (double eps : {0.0, 0.05, 0.5, 1.0, 3.0, 10.0}) {
			const double d = cdp_delta(rho, eps), brute = brute_cdp_delta(rho, eps);
			EXPECT_LE(d, brute * (1 + 1e-9) + 1e-300) << rho << " " << eps;
			EXPECT_GE(d, brute * (1 - 1e-6)) << rho << " " << eps;
		}
}

// The conversion bounds the exact Gaussian curve from above (it is a bound for any rho-zCDP pair),
// and is tighter than Bun–Steinke's exp(-(eps - rho)^2 / (4 rho)).
TEST(CdpDelta, BetweenExactGaussianAndBunSteinke)
{
	for (double rho : {0.005, 0.05, 0.5, 2.0})
		for (double eps : {0.1, 1.0, 3.0, 8.0}) {
			const double sigma = 1 / std::sqrt(2 * rho); // sensitivity 1
			EXPECT_GE(cdp_delta(rho, eps), gaussian_privacy_profile(1.0, eps, sigma) * (1 - 1e-9)) << rho << " " << eps;
			if (eps > rho)
				EXPECT_LE(cdp_delta(rho, eps), std::exp(-(eps - rho) * (eps - rho) / (4 * rho)) * (1 + 1e-9));
		}
	EXPECT_EQ(cdp_delta(0, 1), 0);
	EXPECT_LE(cdp_delta(100, 0.1), 1.0);
}

TEST(CdpDelta, RhoForIsTheTightInverse)
{
	for (double eps : {0.01, 0.1, 1.0, 5.0})
		for (double delta : {1e-3, 1e-6, 1e-9, 1e-12}) {
			const double rho = zcdp_rho_for(eps, delta);
			EXPECT_LE(cdp_delta(rho, eps), delta) << eps << " " << delta;
			EXPECT_GT(cdp_delta(rho * (1 + 1e-9), eps), delta) << eps << " " << delta;
		}
}

// The lemma the calibration rests on: at a fixed ratio, delta(t) = cdp_delta((L t)^2 / 2, eps t)
// increases with t (so the worst pair is the farthest one the path bound allows).
TEST(CdpDelta, WorstPairIsTheFarthest)
{
	std::mt19937_64 rng(5);
	std::uniform_real_distribution<double> u(-2, 1);
	for (int trial = 0; trial < 50; trial++) {
		const double L = std::pow(10.0, u(rng)), eps = std::pow(10.0, u(rng));
		double previous = 0;
		for (double t = 1e-3; t <= 50; t *= 1.05) {
			const double d = cdp_delta(0.5 * (L * t) * (L * t), eps * t);
			EXPECT_GE(d, previous * (1 - 1e-9)) << "L " << L << " eps " << eps << " t " << t;
			previous = d;
		}
	}
}

TEST(CdpDelta, RejectsBadInputs)
{
	expect_core_error(ErrorKind::InvalidParameter, [] { cdp_delta(-1, 1); });
	expect_core_error(ErrorKind::InvalidParameter, [] { cdp_delta(1, NAN); });
	expect_core_error(ErrorKind::InvalidParameter, [] { zcdp_rho_for(0, 1e-6); });
	expect_core_error(ErrorKind::InvalidParameter, [] { zcdp_rho_for(1, 0); });
	expect_core_error(ErrorKind::InvalidParameter, [] { zcdp_rho_for(1, 1); });
}

// COUNT(*) over one column with presence p: the worst pair is a record and ⊥ (change 1 at distance
// p), so the Gaussian is the textbook one at (eps p, delta) with sensitivity 1 under zCDP accounting.
TEST(GaussianPlan, CountMatchesTextbookCalibration)
{
	for (double p : {0.5, 1.0, 3.0})
		for (double eps : {0.1, 1.0})
			for (double delta : {1e-5, 1e-9}) {
				SubUniverse sub;
				sub.domains = {Domain::range(0, 9, 1)};
				sub.metrics = {ColumnMetric::absolute(2)};
				sub.presence = p;
				const Matrix q{std::vector<double>(10, 1.0)};
				ApproximateCalibration info;
				const MultiLinearPlan plan =
				    plan_multi_linear_noise(sub, q, eps, delta, NoiseFamily::Gaussian, AllocationStrategy::MinTotalVariance, &info);
				const double expected = 1 / std::sqrt(2 * zcdp_rho_for(eps * p, delta));
				EXPECT_NEAR(plan.cells[0].scale, expected, 1e-12 * expected);
				EXPECT_NEAR(info.worst_distance, p, 1e-12 * p);
				EXPECT_EQ(plan.cells[0].family, NoiseFamily::Gaussian);
				EXPECT_EQ(plan.cells[0].grid, 1);
				// zCDP accounting costs a little noise over the analytic Gaussian, never less
				const double analytic = analytic_gaussian_sigma(1, eps * p, delta);
				EXPECT_GE(plan.cells[0].scale, analytic);
				EXPECT_LE(plan.cells[0].scale, 1.3 * analytic);
			}
}

// GROUP BY count over 3 groups (discrete metric): moving a record changes two cells by 1, so the
// worst pair has ||Delta|| = sqrt(2) in units of the (equal) Laplace scales.
TEST(GaussianPlan, GroupedCountsUseTheTwoCellChange)
{
	SubUniverse sub;
	sub.domains = {Domain::enumerated({"a", "b", "c"})};
	sub.metrics = {ColumnMetric::discrete(1)};
	sub.presence = 1;
	Matrix q(3, std::vector<double>(3, 0.0));
	for (int g = 0; g < 3; g++)
		q[g][g] = 1;
	ApproximateCalibration info;
	const MultiLinearPlan plan =
	    plan_multi_linear_noise(sub, q, 1.0, 1e-6, NoiseFamily::Gaussian, AllocationStrategy::EqualScale, &info);
	const double c = plan_multi_linear(sub, q, 1.0, AllocationStrategy::EqualScale).cells[0].scale;
	EXPECT_NEAR(info.max_change, std::sqrt(2.0) / c, 1e-12);
	for (const LinearNoisePlan &cell : plan.cells)
		EXPECT_NEAR(cell.scale, plan.cells[0].scale, 1e-12);
}

TEST(ApproximatePlan, LaplaceFamilyIsThePureEpsilonPlan)
{
	SubUniverse sub;
	sub.domains = {Domain::range(0, 20, 1)};
	sub.metrics = {ColumnMetric::absolute(1)};
	sub.presence = 2;
	Matrix q{std::vector<double>(21)};
	for (int i = 0; i <= 20; i++)
		q[0][i] = i;
	const MultiLinearPlan a = plan_multi_linear_noise(sub, q, 0.5, 0, NoiseFamily::Laplace, AllocationStrategy::MinTotalVariance);
	const MultiLinearPlan b = plan_multi_linear(sub, q, 0.5, AllocationStrategy::MinTotalVariance);
	EXPECT_EQ(a.cells[0].scale, b.cells[0].scale);
	EXPECT_EQ(a.cells[0].family, NoiseFamily::Laplace);
}

TEST(ApproximatePlan, RejectsBadDelta)
{
	SubUniverse sub;
	sub.domains = {Domain::range(0, 3, 1)};
	sub.metrics = {ColumnMetric::absolute(1)};
	const Matrix q{{1, 1, 1, 1}};
	for (NoiseFamily f : kApproxFamilies)
		for (double delta : {0.0, -1e-6, 2e-3, static_cast<double>(NAN)})
			expect_core_error(ErrorKind::InvalidParameter,
			                  [&] { plan_multi_linear_noise(sub, q, 1, delta, f, AllocationStrategy::MinTotalVariance); });
}

// A truncation bound is the smallest one: one step less would exceed the per-cell tail budget.
TEST(TruncatedPlan, BoundIsMinimal)
{
	SubUniverse sub;
	sub.domains = {Domain::range(0, 5, 1)};
	sub.metrics = {ColumnMetric::absolute(1)};
	sub.presence = 1;
	const Matrix q{{0, 1, 2, 3, 4, 5}};
	ApproximateCalibration info;
	const MultiLinearPlan plan =
	    plan_multi_linear_noise(sub, q, 1.0, 1e-6, NoiseFamily::TruncatedLaplace, AllocationStrategy::MinTotalVariance, &info);
	const LinearNoisePlan &c = plan.cells[0];
	EXPECT_EQ(info.max_changed_cells, 1);
	const auto tail = [&](double bound) {
		return gtl_grid_privacy(GeneralizedTruncatedLaplace(c.scale, -bound, bound), 5.0, c.grid).delta;
	};
	EXPECT_LE(tail(c.bound), 1e-6);
	EXPECT_GT(tail(c.bound - c.grid), 1e-6);
	// the continuous symmetric GTL for the same sensitivity is within a few steps
	EXPECT_NEAR(c.bound, gtl_symmetric_bound(5.0, 5.0 / c.scale, 1e-6), 3 * c.grid + 0.01 * c.bound);
}

// ---- the declared guarantee, by brute force over every pair of records ----

// Checks (eps d(u, w), delta) for every pair of records u, w (⊥ = index n, q = 0) at finite distance:
// Gaussian by cdp_delta of the pair's zCDP level, truncated Laplace by its pure part plus the sum of
// the changed cells' exact tail masses. Weights are the grid-rounded ones the aggregate sums.
void
expect_guarantee(const SubUniverse &sub, const Matrix &q, const MultiLinearPlan &plan, double eps, double delta,
                 NoiseFamily family)
{
	const std::size_t n = sub.size(), m = q.size();
	const Matrix d = record_metric(sub);
	Matrix qg(m, std::vector<double>(n + 1, 0.0));
	for (std::size_t k = 0; k < m; k++)
		for (std::size_t u = 0; u < n; u++)
			qg[k][u] = static_cast<double>(to_grid_units(q[k][u], plan.cells[k].grid)) * plan.cells[k].grid;
	double worst = 0;
	for (std::size_t u = 0; u <= n; u++)
		for (std::size_t w = u + 1; w <= n; w++) {
			if (!std::isfinite(d[u][w]))
				continue;
			double rho = 0, pure = 0, tails = 0;
			for (std::size_t k = 0; k < m; k++) {
				const double diff = std::fabs(qg[k][u] - qg[k][w]);
				const LinearNoisePlan &c = plan.cells[k];
				if (diff == 0)
					continue;
				ASSERT_GT(c.scale, 0) << "an exact cell changes between records at finite distance";
				rho += 0.5 * (diff / c.scale) * (diff / c.scale);
				pure += diff / c.scale;
				if (family == NoiseFamily::TruncatedLaplace)
					tails += gtl_grid_privacy(GeneralizedTruncatedLaplace(c.scale, -c.bound, c.bound), diff, c.grid).delta;
			}
			if (family == NoiseFamily::Gaussian) {
				const double pair_delta = cdp_delta(rho, eps * d[u][w]);
				EXPECT_LE(pair_delta, delta * (1 + 1e-9)) << "pair " << u << "," << w << " d " << d[u][w];
				worst = std::max(worst, pair_delta / delta);
			} else {
				EXPECT_LE(pure, eps * d[u][w] * (1 + 1e-9));
				EXPECT_LE(tails, delta * (1 + 1e-9));
				worst = std::max(worst, tails / delta);
			}
		}
	EXPECT_GT(worst, 0.05) << "calibration is far from tight";
}

TEST(ApproximatePlan, GuaranteeHoldsForEveryPairOfRecords)
{
	std::mt19937_64 rng(11);
	std::uniform_real_distribution<double> u(-3, 3);
	int checked = 0;
	for (const SubUniverse &sub : sample_sub_universes())
		for (std::size_t m : {1, 2, 3})
			for (int kind = 0; kind < 3; kind++)
				for (NoiseFamily family : kApproxFamilies) {
					Matrix q(m, std::vector<double>(sub.size()));
					for (auto &row : q)
						for (double &v : row)
							v = kind == 0 ? u(rng) : kind == 1 ? std::round(u(rng)) : (u(rng) > 0 ? 1.0 : 0.0);
					for (double eps : {0.3, 2.0})
						for (double delta : {1e-4, 1e-8}) {
							const MultiLinearPlan plan =
							    plan_multi_linear_noise(sub, q, eps, delta, family, AllocationStrategy::MinTotalVariance);
							expect_guarantee(sub, q, plan, eps, delta, family);
							checked++;
						}
				}
	EXPECT_EQ(checked, 4 * 3 * 3 * 2 * 4);
}

} // namespace
} // namespace dxpriv
