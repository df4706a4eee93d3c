// Synthetic releases (MECHANISMS.md §3.10 SmallDB, §3.11 MWEM): workloads, budget accounting, and a
// brute-force check that every private step is epsilon*d_X-private on all neighbouring databases
// (one row changed u -> v, added or removed) of small universes, against the closed record metric.
#include "core/mwem.h"
#include "core/smalldb.h"
#include "core/workload.h"

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
using ::dxpriv::testing::for_each_neighbour;
using ::dxpriv::testing::sample_sub_universes;

std::vector<std::string>
names(const SubUniverse &sub)
{
	std::vector<std::string> n;
	for (std::size_t c = 0; c < sub.domains.size(); ++c)
		n.push_back("c" + std::to_string(c));
	return n;
}

std::vector<std::int64_t>
random_counts(std::size_t n, std::uint64_t seed, int max_count)
{
	SeededRandom rng(seed);
	std::vector<std::int64_t> x(n);
	for (auto &v : x)
		v = static_cast<std::int64_t>(rng.uniform_below(static_cast<std::uint64_t>(max_count) + 1));
	return x;
}

// max over outputs of |ln P(r | x) - ln P(r | y)|.
double
max_log_ratio(const std::vector<long double> &p, const std::vector<long double> &q)
{
	double worst = 0;
	for (std::size_t r = 0; r < p.size(); ++r)
		worst = std::max(worst, static_cast<double>(std::fabs(std::log(p[r]) - std::log(q[r]))));
	return worst;
}

TEST(Workload, MarginalsCoverEveryPointOncePerColumnSet)
{
	SubUniverse sub;
	sub.domains = {Domain::enumerated({"a", "b", "c"}), Domain::range(0, 4, 1), Domain::enumerated({"x", "y"})};
	sub.metrics = {ColumnMetric::discrete(1), ColumnMetric::absolute(1), ColumnMetric::discrete(1)};
	const Workload one = marginal_workload(sub, {"s", "n", "t"}, 1);
	EXPECT_EQ(one.queries.size(), 3u + 5u + 2u);
	EXPECT_EQ(one.entries(), 3 * sub.size());
	EXPECT_EQ(one.queries[0].label, "s=a");
	EXPECT_EQ(one.queries[4].label, "n=1");
	const Workload two = marginal_workload(sub, {"s", "n", "t"}, 2);
	EXPECT_EQ(two.queries.size(), 15u + 6u + 10u);
	EXPECT_EQ(two.queries[0].label, "s=a, n=0");
	EXPECT_EQ(two.queries.back().label, "n=4, t=y");
	// the marginals of one column set partition the universe
	std::vector<int> hits(sub.size(), 0);
	for (std::size_t k = 0; k < 15; ++k)
		for (auto u : two.queries[k].index)
			hits[u]++;
	for (int h : hits)
		EXPECT_EQ(h, 1);
	const Workload three = marginal_workload(sub, {"s", "n", "t"}, 3);
	EXPECT_EQ(three.queries.size(), sub.size());
	EXPECT_EQ(testing::error_kind([&] { marginal_workload(sub, {"s", "n", "t"}, 0); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(testing::error_kind([&] { marginal_workload(sub, {"s", "n", "t"}, 4); }), ErrorKind::InvalidParameter);
}

TEST(Workload, WeightVectorsRoundToTheGridAndAreChecked)
{
	SubUniverse sub;
	sub.domains = {Domain::range(0, 2, 1)};
	sub.metrics = {ColumnMetric::absolute(1)};
	const Workload ints = weight_workload(sub, {{1, 0, 2}, {0, 0, 5}});
	EXPECT_EQ(ints.grid, 1.0);
	EXPECT_EQ(ints.queries[0].index.size(), 2u);
	EXPECT_EQ(ints.exact_units(1, {3, 4, 5}), 25);
	const Workload reals = weight_workload(sub, {{0.5, 0.25, 1.0 / 3}});
	EXPECT_EQ(reals.grid, std::ldexp(1.0, -20));
	EXPECT_NEAR(reals.dense(0)[2], 1.0 / 3, std::ldexp(1.0, -21));
	EXPECT_EQ(testing::contract_error_kind([&] { weight_workload(sub, {{1, 2}}); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(testing::contract_error_kind([&] { weight_workload(sub, {{1, NAN, 2}}); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(testing::contract_error_kind([&] { weight_workload(sub, {}); }), ErrorKind::InvalidParameter);
}

// The exponential-mechanism step of MWEM (scores |q(a) - q(x)|, beta = e / (2 S_max)) and the
// Laplace step (scale S(q)/e) on every neighbour: ln-ratio <= e * d(x, x').
TEST(MwemPrivacy, EveryStepIsEpsilonDxPrivateOnAllNeighbours)
{
	int checked = 0;
	for (const SubUniverse &sub : sample_sub_universes()) {
		if (sub.size() > 30)
			continue;
		const Matrix d = record_metric(sub);
		for (int k = 1; k <= static_cast<int>(std::min<std::size_t>(2, sub.domains.size())); ++k) {
			const Workload w = marginal_workload(sub, names(sub), k);
			const double s_max = max_sensitivity(workload_sensitivities(sub, w));
			const double e = 0.37;
			const EmBeta beta = em_beta(e, s_max);
			const auto x = random_counts(sub.size(), 11 + k, 3);
			std::vector<double> a(sub.size());
			for (std::size_t j = 0; j < a.size(); ++j)
				a[j] = 0.3 + 0.7 * static_cast<double>(j % 5);
			auto exact = [&](const std::vector<std::int64_t> &c) {
				std::vector<__int128> ex(w.queries.size());
				for (std::size_t q = 0; q < ex.size(); ++q)
					ex[q] = w.exact_units(q, c);
				return ex;
			};
			const auto px = em_probabilities(workload_scores(w, exact(x), a), score_denominator(w.grid), beta);
			std::vector<LinearNoisePlan> plans;
			for (std::size_t q = 0; q < w.queries.size(); ++q)
				plans.push_back(plan_linear_query(sub, w.dense(q), e));
			for_each_neighbour(x, d, [&](const std::vector<std::int64_t> &y, double dist) {
				const auto py = em_probabilities(workload_scores(w, exact(y), a), score_denominator(w.grid), beta);
				EXPECT_LE(max_log_ratio(px, py), e * dist * (1 + 1e-9) + 1e-12);
				for (std::size_t q = 0; q < w.queries.size(); ++q) {
					if (plans[q].scale == 0) { // exact: no finite-distance neighbour may move it
						if (std::isfinite(dist))
							EXPECT_EQ(w.exact_units(q, x), w.exact_units(q, y));
						continue;
					}
					const double moved = std::fabs(static_cast<double>(w.exact_units(q, x) - w.exact_units(q, y))) * w.grid;
					EXPECT_LE(moved / plans[q].scale, e * dist * (1 + 1e-9));
				}
				++checked;
			});
		}
	}
	EXPECT_GT(checked, 500);
}

// SmallDB's single exponential-mechanism step over all candidates, on every neighbour.
TEST(SmallDbPrivacy, CandidateLawIsEpsilonDxPrivateOnAllNeighbours)
{
	int checked = 0;
	for (const SubUniverse &sub : sample_sub_universes()) {
		if (sub.size() > 12)
			continue;
		const Matrix d = record_metric(sub);
		const Workload w = marginal_workload(sub, names(sub), 1);
		const double s_max = max_sensitivity(workload_sensitivities(sub, w));
		const double e = 0.8, n_hat = 9.3;
		const int m = 2;
		const EmBeta beta = em_beta(e, s_max);
		const auto x = random_counts(sub.size(), 5, 2);
		const auto px = em_probabilities(smalldb_scores(w, x, n_hat, m), score_denominator(w.grid), beta);
		EXPECT_EQ(px.size(), static_cast<std::size_t>(smalldb_candidates(sub.size(), m)));
		for_each_neighbour(x, d, [&](const std::vector<std::int64_t> &y, double dist) {
			const auto py = em_probabilities(smalldb_scores(w, y, n_hat, m), score_denominator(w.grid), beta);
			EXPECT_LE(max_log_ratio(px, py), e * dist * (1 + 1e-9) + 1e-12);
			++checked;
		});
	}
	EXPECT_GT(checked, 50);
}

TEST(MwemBudget, StepsAddUpToEpsilonAndCountIsFreeWhenPublic)
{
	for (const SubUniverse &sub : sample_sub_universes()) {
		if (sub.size() > 60)
			continue;
		const Workload w = marginal_workload(sub, names(sub), 1);
		const auto x = random_counts(sub.size(), 3, 20);
		SeededRandom rng(7);
		for (int t : {0, 1, 5}) {
			const MwemResult r = run_mwem(sub, w, x, 0.9, t, rng);
			EXPECT_LE(r.count_epsilon + 2 * r.iterations * r.step_epsilon, 0.9);
			EXPECT_GT(r.count_epsilon + 2 * r.iterations * r.step_epsilon, 0.9 * (1 - 1e-9));
			if (t > 0)
				EXPECT_EQ(r.iterations, t);
			EXPECT_EQ(r.chosen.size(), static_cast<std::size_t>(r.iterations));
			double total = 0;
			for (double v : r.histogram) {
				EXPECT_GE(v, 0);
				total += v;
			}
			EXPECT_NEAR(total, r.n_hat, 1e-6 * std::max(1.0, r.n_hat));
			if (std::isinf(sub.presence)) {
				EXPECT_EQ(r.count_epsilon, 0);
				std::int64_t n = 0;
				for (auto c : x)
					n += c;
				EXPECT_EQ(r.n_hat, static_cast<double>(n));
			} else {
				EXPECT_DOUBLE_EQ(r.count_epsilon, 0.09);
			}
		}
	}
}

TEST(MwemBudget, DefaultIterationsFollowSection311)
{
	// T* = (n E sqrt(ln X) / (10 ln Q))^(2/3)
	const double t = std::pow(100000.0 * 1.0 * std::sqrt(std::log(400.0)) / (10 * std::log(148.0)), 2.0 / 3.0);
	EXPECT_EQ(mwem_default_iterations(100000, 1.0, 400, 148), static_cast<int>(std::llround(t)));
	EXPECT_EQ(mwem_default_iterations(10, 0.01, 400, 148), 1);
	EXPECT_EQ(mwem_default_iterations(1e12, 1e6, 400, 148), kMaxMwemIterations);
	EXPECT_EQ(mwem_default_iterations(100, INFINITY, 4, 4), kMaxMwemIterations);
}

TEST(MwemErrors, BadArgumentsAreRefused)
{
	const SubUniverse sub = sample_sub_universes()[0];
	const Workload w = marginal_workload(sub, names(sub), 1);
	const auto x = random_counts(sub.size(), 1, 3);
	SeededRandom rng(1);
	EXPECT_EQ(testing::contract_error_kind([&] { run_mwem(sub, w, x, 0, 0, rng); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(testing::contract_error_kind([&] { run_mwem(sub, w, x, NAN, 0, rng); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(testing::contract_error_kind([&] { run_mwem(sub, w, x, 1, -1, rng); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(testing::contract_error_kind([&] { run_mwem(sub, w, x, 1, kMaxMwemIterations + 1, rng); }),
	          ErrorKind::InvalidParameter);
}

TEST(SmallDb, CandidateCountsAndCaps)
{
	EXPECT_EQ(smalldb_candidates(3, 2), 6);
	EXPECT_EQ(smalldb_candidates(10, 3), 220);
	EXPECT_EQ(smalldb_candidate(3, 2, 0), (std::vector<std::int64_t>{2, 0, 0}));
	EXPECT_EQ(smalldb_candidate(3, 2, 5), (std::vector<std::int64_t>{0, 0, 2}));
	EXPECT_EQ(smalldb_candidate(3, 2, 1), (std::vector<std::int64_t>{1, 1, 0}));
	SubUniverse big;
	big.domains = {Domain::range(0, 1000, 1), Domain::range(0, 999, 1)}; // 1001 * 1000 points
	big.metrics = {ColumnMetric::absolute(1), ColumnMetric::absolute(1)};
	const Workload w = weight_workload(big, {std::vector<double>(big.size(), 1.0)});
	SeededRandom rng(1);
	EXPECT_EQ(testing::contract_error_kind([&] { run_smalldb(big, w, std::vector<std::int64_t>(big.size(), 0), 1, 0, rng); }),
	          ErrorKind::ProgramLimit);
	const SubUniverse sub = sample_sub_universes()[2]; // 11 points
	const Workload w1 = marginal_workload(sub, names(sub), 1);
	EXPECT_EQ(testing::contract_error_kind([&] { run_smalldb(sub, w1, random_counts(11, 1, 3), 1, 40, rng); }),
	          ErrorKind::ProgramLimit);
	const SmallDbResult r = run_smalldb(sub, w1, random_counts(11, 1, 3), 1, 0, rng);
	EXPECT_LE(r.candidates, kMaxSmallDbCandidates);
	EXPECT_GE(r.size, 1);
	std::int64_t rows = 0;
	for (auto v : r.rows)
		rows += v;
	EXPECT_EQ(rows, r.size);
}

} // namespace
} // namespace dxpriv
