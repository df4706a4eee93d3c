// Statistical-query variant (MECHANISMS.md §3.13): the closed form of problem (14) against its
// constraints and lower bound, Theorem 10's condition for the product surrogate checked on every
// pair of records (and ⊥) of small universes, the outer search never worse than the plain answer
// and strictly better on fine metrics, the released noise law, and Theorem 11 in simulation.
#include "core/statistical_query.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "core/random.h"
#include "test_support.h"

namespace dxpriv {
namespace {

using ::dxpriv::testing::Matrix;
using ::dxpriv::testing::record_metric;
using ::dxpriv::testing::sample_sub_universes;

// Age on 0..20 with an absolute metric of scale 5 (adjacent ages 0.2 apart) and a discrete column.
SubUniverse
fine_universe(double presence)
{
	SubUniverse sub;
	sub.domains = {Domain::range(0, 20, 1), Domain::enumerated({"F", "M"})};
	sub.metrics = {ColumnMetric::absolute(5), ColumnMetric::discrete(1)};
	sub.presence = presence;
	return sub;
}

TEST(StatisticalQuery, ClosedFormIsFeasibleAndMeetsTheLowerBound)
{
	const SubUniverse sub = fine_universe(kInfinity);
	for (double eps_prime : {1.0, 3.0, 10.0, 40.0})
		for (std::size_t v : {0u, 7u, 20u}) {
			std::vector<double> psi;
			const double n_eps = 2.0;
			const double t = separable_column_optimum(sub.domains[0], sub.metrics[0], v, n_eps, eps_prime, &psi);
			double dev = 0, c_min = kInfinity;
			for (std::size_t a = 0; a < psi.size(); ++a) {
				EXPECT_GE(psi[a], 0);
				EXPECT_LE(psi[a], 1);
				dev = std::max(dev, std::fabs(psi[a] - (a == v ? 1.0 : 0.0)));
				if (a != v)
					c_min = std::min(c_min, n_eps * sub.metrics[0].distance(sub.domains[0], v, a) / eps_prime);
				for (std::size_t b = 0; b < psi.size(); ++b) // eps' |psi(a) - psi(b)| <= n eps d(a, b)
					EXPECT_LE(eps_prime * std::fabs(psi[a] - psi[b]),
					          n_eps * sub.metrics[0].distance(sub.domains[0], a, b) * (1 + 1e-12) + 1e-12);
			}
			EXPECT_NEAR(dev, t, 1e-12);
			EXPECT_NEAR(t, std::max(0.0, (1 - c_min) / 2), 1e-12); // the lower bound of every feasible psi
		}
}

// Theorem 10 for the product surrogate: (eps'/n) |psi(x) - psi(x')| <= epsilon d(x, x') for all
// records x, x' and for x' = ⊥ (psi(⊥) = 0), against the closed record metric.
TEST(StatisticalQuery, ProductSurrogateIsDxPrivateOnAllPairs)
{
	std::vector<SubUniverse> subs = sample_sub_universes();
	subs.push_back(fine_universe(1.0));
	int checked = 0;
	for (const SubUniverse &sub : subs) {
		if (sub.size() > 60)
			continue;
		const Matrix d = record_metric(sub);
		const double n = 50, epsilon = 0.3;
		MarginalCell cell;
		for (std::size_t c = 0; c < sub.domains.size() && c < 2; ++c) {
			cell.columns.push_back(c);
			cell.values.push_back(sub.domains[c].size() / 2);
		}
		SurrogatePlan plan;
		try {
			plan = plan_marginal_surrogate(sub, cell, n, epsilon);
		} catch (const CoreError &e) {
			EXPECT_EQ(e.kind(), ErrorKind::InvalidParameter); // an unprotected marginal
			continue;
		}
		EXPECT_LE(plan.objective, plan.plain_objective * (1 + 1e-12));
		std::vector<double> psi(sub.size() + 1, 0.0); // index N: ⊥
		for (std::size_t u = 0; u < sub.size(); ++u) {
			const auto idx = sub.unflatten(u);
			psi[u] = 1;
			for (std::size_t i = 0; i < cell.columns.size(); ++i)
				psi[u] *= plan.psi[i][idx[cell.columns[i]]];
		}
		for (std::size_t u = 0; u <= sub.size(); ++u)
			for (std::size_t v = 0; v <= sub.size(); ++v) {
				EXPECT_LE(plan.eps_prime / n * std::fabs(psi[u] - psi[v]), epsilon * d[u][v] * (1 + 1e-9) + 1e-12);
				++checked;
			}
	}
	EXPECT_GT(checked, 1000);
}

TEST(StatisticalQuery, SurrogatesHelpOnFineMetricsOnly)
{
	MarginalCell cell{{0, 1}, {10, 0}};
	// age 10 and F: adjacent ages are 0.2 apart, so the plain answer needs eps' = 0.2 n eps; with
	// few rows its noise (scale 1/eps' = 2.5 on a frequency) is useless, the surrogate's is not
	const SurrogatePlan fine = plan_marginal_surrogate(fine_universe(kInfinity), cell, 20, 0.1);
	EXPECT_NEAR(fine.plain_eps_prime, 20 * 0.1 * 0.2, 1e-12);
	EXPECT_LT(fine.objective, 0.05 * fine.plain_objective);
	// many rows: the plain noise is already small and the surrogate can only match it
	const SurrogatePlan many = plan_marginal_surrogate(fine_universe(kInfinity), cell, 1000, 0.5);
	EXPECT_LE(many.objective, many.plain_objective);
	EXPECT_GT(fine.eps_prime, fine.plain_eps_prime);
	EXPECT_GT(fine.bias, 0);
	// discrete metrics of weight 1 and presence 1 (plain DP): the plain answer is optimal
	SubUniverse dp;
	dp.domains = {Domain::enumerated({"a", "b", "c"}), Domain::enumerated({"x", "y"})};
	dp.metrics = {ColumnMetric::discrete(1), ColumnMetric::discrete(1)};
	dp.presence = 1;
	const SurrogatePlan plain = plan_marginal_surrogate(dp, MarginalCell{{0, 1}, {1, 0}}, 1000, 0.5);
	EXPECT_DOUBLE_EQ(plain.eps_prime, plain.plain_eps_prime);
	EXPECT_EQ(plain.bias, 0);
	EXPECT_EQ(testing::contract_error_kind([&] { plan_marginal_surrogate(dp, MarginalCell{{0, 0}, {1, 1}}, 10, 1); }),
	          ErrorKind::InvalidParameter);
	EXPECT_EQ(testing::contract_error_kind([&] { plan_marginal_surrogate(dp, MarginalCell{{0}, {1}}, 0, 1); }),
	          ErrorKind::InvalidParameter);
}

// Theorem 11 in simulation: E|M - phi(D)| <= bias + 1/eps', and the noise is Laplace(1/eps').
TEST(StatisticalQueryStat, Theorem11AndNoiseLaw)
{
	const SubUniverse sub = fine_universe(kInfinity);
	MarginalCell cell{{0, 1}, {10, 0}};
	std::vector<std::int64_t> x(sub.size(), 0);
	for (std::size_t u = 0; u < x.size(); ++u)
		x[u] = static_cast<std::int64_t>((u * 13) % 9);
	double n = 0;
	for (auto c : x)
		n += static_cast<double>(c);
	const SurrogatePlan plan = plan_marginal_surrogate(sub, cell, n, 0.5);
	const double truth = static_cast<double>(x[10 * 2 + 0]) / n;
	const double center = surrogate_frequency(sub, cell, plan, x, n);
	EXPECT_LE(std::fabs(center - truth), plan.bias + 1e-12);
	SeededRandom rng(77);
	const int runs = 100000;
	double abs_noise = 0, abs_err = 0;
	for (int i = 0; i < runs; ++i) {
		const double m = release_marginal_frequency(sub, cell, plan, x, n, rng);
		abs_noise += std::fabs(m - center);
		abs_err += std::fabs(m - truth);
	}
	const double b = 1 / plan.eps_prime;
	EXPECT_NEAR(abs_noise / runs, b, 5 * b / std::sqrt(runs)); // E|Lap(b)| = b, sd b
	EXPECT_LE(abs_err / runs, plan.bias + b + 5 * b / std::sqrt(runs));
}

} // namespace
} // namespace dxpriv

namespace dxpriv {
namespace {

TEST(StatisticalQuery, RecognisesMarginalCountsOnly)
{
	SubUniverse sub;
	sub.domains = {Domain::enumerated({"a", "b", "c"}), Domain::enumerated({"x", "y"}), Domain::range(0, 1, 1)};
	sub.metrics = {ColumnMetric::discrete(1), ColumnMetric::discrete(1), ColumnMetric::absolute(1)};
	std::vector<double> q(sub.size(), 0.0);
	for (std::size_t u = 0; u < q.size(); ++u) {
		const auto idx = sub.unflatten(u);
		q[u] = idx[0] == 2 && idx[1] == 0 ? 1 : 0; // c0 = c AND c1 = x, any c2
	}
	MarginalCell cell;
	ASSERT_TRUE(marginal_cell_of(sub, q, &cell));
	EXPECT_EQ(cell.columns, (std::vector<std::size_t>{0, 1}));
	EXPECT_EQ(cell.values, (std::vector<std::size_t>{2, 0}));
	q[0] = 1; // no longer a cylinder
	EXPECT_FALSE(marginal_cell_of(sub, q, &cell));
	EXPECT_FALSE(marginal_cell_of(sub, std::vector<double>(sub.size(), 1.0), &cell)); // count(*): no column fixed
	EXPECT_FALSE(marginal_cell_of(sub, std::vector<double>(sub.size(), 0.0), &cell));
	std::vector<double> two(sub.size(), 0.0);
	two[0] = 2; // a weight, not an indicator
	EXPECT_FALSE(marginal_cell_of(sub, two, &cell));
}

} // namespace
} // namespace dxpriv
