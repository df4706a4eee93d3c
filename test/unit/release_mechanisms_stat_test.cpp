// Statistical tests of the synthetic releases (MECHANISMS.md §3.10, §3.11): the measurement noise
// is discrete Laplace of scale S(q)/e (mean absolute value and tail), the query choice follows the
// exponential mechanism's law (chi-square), and the theorems' error bounds hold in simulation
// (Theorem 8 for MWEM, Proposition 1 for SmallDB). Fixed seeds: deterministic.
#include "core/mwem.h"
#include "core/smalldb.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/random.h"
#include "test_support.h"

namespace dxpriv {
namespace {

using ::dxpriv::testing::chi_square_threshold;

// Three discrete columns (4 x 3 x 5 = 60 points), replace-one model (presence +inf), weight 1:
// S(q) = 1 for every marginal, as in Hardt-Ligett-McSherry.
SubUniverse
hlm_universe()
{
	SubUniverse sub;
	sub.domains = {Domain::enumerated({"a", "b", "c", "d"}), Domain::enumerated({"x", "y", "z"}), Domain::range(0, 4, 1)};
	sub.metrics = {ColumnMetric::discrete(1), ColumnMetric::discrete(1), ColumnMetric::discrete(1)};
	sub.presence = kInfinity;
	return sub;
}

// A skewed histogram of n rows (a product distribution with a correlated spike).
std::vector<std::int64_t>
skewed_counts(const SubUniverse &sub, std::int64_t n, std::uint64_t seed)
{
	SeededRandom rng(seed);
	std::vector<std::int64_t> x(sub.size(), 0);
	for (std::int64_t r = 0; r < n; ++r) {
		std::size_t u = rng.uniform_below(std::uint64_t{4}) == 0 ? 7 : 0;
		if (u == 0) {
			const std::size_t a = rng.uniform_below(std::uint64_t{2}) == 0 ? 0 : rng.uniform_below(std::uint64_t{4});
			const std::size_t b = rng.uniform_below(std::uint64_t{3});
			const std::size_t c = std::min<std::size_t>(rng.uniform_below(std::uint64_t{5}), rng.uniform_below(std::uint64_t{5}));
			u = (a * 3 + b) * 5 + c;
		}
		x[u]++;
	}
	return x;
}

double
max_error(const Workload &w, const std::vector<std::int64_t> &x, const std::vector<double> &a)
{
	double worst = 0;
	for (std::size_t k = 0; k < w.queries.size(); ++k)
		worst = std::max(worst, std::fabs(w.answer(k, a) - static_cast<double>(w.exact_units(k, x)) * w.grid));
	return worst;
}

TEST(ReleaseNoise, MeasurementIsLaplaceOfScaleSOverEpsilon)
{
	SubUniverse sub = hlm_universe();
	sub.presence = 2;
	sub.metrics[2] = ColumnMetric::absolute(0.5);
	const Workload w = marginal_workload(sub, {"a", "b", "c"}, 2);
	const auto x = skewed_counts(sub, 500, 3);
	const std::size_t k = 17;
	const double e = 0.3;
	const double b = plan_linear_query(sub, w.dense(k), e).scale;
	EXPECT_DOUBLE_EQ(b, generalized_sensitivity(sub, w.dense(k)) / e);
	SeededRandom rng(99);
	const int n = 200000;
	double abs_sum = 0;
	int tail1 = 0, tail2 = 0;
	const double truth = static_cast<double>(w.exact_units(k, x));
	for (int i = 0; i < n; ++i) {
		const Measurement m = measure_query(sub, w, k, x, e, rng);
		EXPECT_EQ(m.scale, b);
		const double z = m.value - truth;
		abs_sum += std::fabs(z);
		tail1 += std::fabs(z) >= b;
		tail2 += std::fabs(z) >= 2 * b;
	}
	// discrete Laplace on the integers: E|Z| and P(|Z| >= t) from its exact law (a = exp(-1/b))
	const double a = std::exp(-1 / b);
	const double mean_abs = 2 * a / (1 - a * a);
	const double sd_abs = std::sqrt(2 * a / ((1 - a) * (1 - a)) - mean_abs * mean_abs); // E Z^2 = 2a/(1-a)^2
	EXPECT_NEAR(abs_sum / n, mean_abs, 5 * sd_abs / std::sqrt(n));
	auto tail = [&](double t) { return 2 * std::pow(a, std::ceil(t)) / (1 + a); };
	testing::expect_binomial(tail1, n, tail(b), "P(|Z| >= b)");
	testing::expect_binomial(tail2, n, tail(2 * b), "P(|Z| >= 2b)");
}

TEST(ReleaseNoise, CountIsExactWhenPublicAndNoisyOtherwise)
{
	SubUniverse sub = hlm_universe();
	const auto x = skewed_counts(sub, 321, 4);
	SeededRandom rng(5);
	EXPECT_EQ(measure_count(sub, x, 0, rng).value, 321);
	sub.presence = 0.5;
	double abs_sum = 0;
	const int n = 20000;
	for (int i = 0; i < n; ++i) {
		const Measurement m = measure_count(sub, x, 0.25, rng);
		EXPECT_DOUBLE_EQ(m.scale, 1 / (0.5 * 0.25)); // S(1) = 1/presence
		abs_sum += std::fabs(m.value - 321);
	}
	const double a8 = std::exp(-1 / 8.0);
	EXPECT_NEAR(abs_sum / n, 2 * a8 / (1 - a8 * a8), 0.3); // 5 sigma
}

TEST(ReleaseNoise, MwemQueryChoiceFollowsTheExponentialLaw)
{
	const SubUniverse sub = hlm_universe();
	const Workload w = marginal_workload(sub, {"a", "b", "c"}, 1);
	const auto x = skewed_counts(sub, 60, 8);
	std::vector<__int128> exact(w.queries.size());
	for (std::size_t k = 0; k < exact.size(); ++k)
		exact[k] = w.exact_units(k, x);
	const std::vector<double> a(sub.size(), 1.0);
	const auto scores = workload_scores(w, exact, a);
	const EmBeta beta = em_beta(0.2, 1.0);
	const auto p = em_probabilities(scores, 1, beta);
	SeededRandom rng(12);
	const int n = 200000;
	std::vector<int> seen(scores.size(), 0);
	for (int i = 0; i < n; ++i)
		seen[em_sample(rng, scores, 1, beta)]++;
	double stat = 0;
	int bins = 0;
	for (std::size_t r = 0; r < p.size(); ++r) {
		const double expected = n * static_cast<double>(p[r]);
		if (expected < 20)
			continue;
		stat += (seen[r] - expected) * (seen[r] - expected) / expected;
		++bins;
	}
	EXPECT_LT(stat, chi_square_threshold(bins - 1));
}

// Theorem 8: max_q |q(A) - q(x)| <= 2n sqrt(ln|X|/T) + 5 ln|Q| / e (with probability >= 1 - 2T/|Q|^c);
// the release must beat the uniform starting histogram, and by far with the replay sweeps.
TEST(MwemAccuracy, Theorem8BoundHoldsInSimulation)
{
	const SubUniverse sub = hlm_universe();
	const Workload w = marginal_workload(sub, {"a", "b", "c"}, 2);
	const std::int64_t n = 5000;
	const auto x = skewed_counts(sub, n, 21);
	const std::vector<double> uniform(sub.size(), static_cast<double>(n) / sub.size());
	const double uniform_error = max_error(w, x, uniform);
	int held = 0, better = 0, replay_better = 0, last_better = 0;
	const int runs = 40;
	for (int s = 0; s < runs; ++s) {
		SeededRandom rng(1000 + s);
		const MwemResult r = run_mwem(sub, w, x, 1.0, 0, rng, 0); // Algorithm 2 as analysed
		const double err = max_error(w, x, r.histogram);
		SeededRandom rng2(1000 + s);
		const MwemResult replayed = run_mwem(sub, w, x, 1.0, 0, rng2, kDefaultMwemReplayPasses);
		replay_better += max_error(w, x, replayed.histogram) < 0.3 * uniform_error;
		last_better += max_error(w, x, replayed.last) <= max_error(w, x, replayed.histogram);
		held += err <= mwem_error_bound(n, sub.size(), w.queries.size(), r.iterations, r.step_epsilon);
		better += err < 0.7 * uniform_error;
	}
	EXPECT_EQ(held, runs);
	EXPECT_GE(better, runs * 9 / 10);
	EXPECT_GE(replay_better, runs * 9 / 10);
	EXPECT_GE(last_better, runs / 2); // why dx.release_mwem offers average => false
}

// Proposition 1 (normalised queries, q in [0,1]): with probability >= 1 - beta,
// max_q |q(x)/n - q(y)/m| <= alpha + (2/e_n)(ln|X| ln|Q| / alpha^2 + ln(1/beta)), alpha^2 = ln|Q|/m.
TEST(SmallDbAccuracy, Proposition1BoundHoldsInSimulation)
{
	SubUniverse sub;
	sub.domains = {Domain::enumerated({"a", "b", "c"}), Domain::enumerated({"x", "y"})};
	sub.metrics = {ColumnMetric::discrete(1), ColumnMetric::discrete(1)};
	sub.presence = kInfinity;
	const Workload w = marginal_workload(sub, {"a", "b"}, 1);
	std::vector<std::int64_t> x = {300, 20, 80, 10, 50, 40};
	const double n = 500, e = 0.05, beta = 0.05;
	int held = 0;
	const int runs = 30;
	for (int s = 0; s < runs; ++s) {
		SeededRandom rng(500 + s);
		const SmallDbResult r = run_smalldb(sub, w, x, e, 0, rng);
		const double alpha = std::sqrt(std::log(static_cast<double>(w.queries.size())) / r.size);
		const double e_n = r.em_epsilon * n; // S_max = 1: normalised sensitivity 1/n
		const double bound = alpha + 2 / e_n *
		                                 (std::log(static_cast<double>(sub.size())) *
		                                      std::log(static_cast<double>(w.queries.size())) / (alpha * alpha) +
		                                  std::log(1 / beta));
		held += max_error(w, x, r.histogram) / n <= bound;
	}
	EXPECT_GE(held, runs * 9 / 10);
}

} // namespace
} // namespace dxpriv
