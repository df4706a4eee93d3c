// Statistical tests of the exponential-mechanism top-k (core/top_k.h): the frequencies of ordered
// outputs against the exact peeling law (Pearson chi-square at p = 1e-6), the law against the
// one-shot Gumbel top-k (Durfee & Rogers: the same distribution), and the selection bias that
// top-k by noisy Laplace counts has and the exponential mechanism's top-k has not. Fixed seeds.
#include "core/top_k.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/random.h"
#include "test_support.h"

namespace dxpriv {
namespace {

using ::dxpriv::testing::chi_square_threshold;
using i128 = __int128;

constexpr std::size_t kSamples = 300000;
constexpr double kMinExpected = 20.0;

void
check_order_law(const std::vector<i128> &u, EmBeta b, std::size_t k, std::uint64_t seed, const std::string &what)
{
	SeededRandom rng(seed);
	std::map<std::vector<std::size_t>, std::size_t> observed;
	for (std::size_t i = 0; i < kSamples; ++i)
		observed[top_k_sample(rng, u, 1, b, k)]++;
	// every ordered k-tuple, with its exact probability
	std::vector<std::pair<std::vector<std::size_t>, long double>> law;
	std::vector<std::size_t> cur;
	std::vector<char> used(u.size(), 0);
	std::function<void()> rec = [&] {
		if (cur.size() == k) {
			law.emplace_back(cur, top_k_probability(u, 1, b, cur));
			return;
		}
		for (std::size_t i = 0; i < u.size(); ++i)
			if (!used[i]) {
				used[i] = 1;
				cur.push_back(i);
				rec();
				cur.pop_back();
				used[i] = 0;
			}
	};
	rec();
	double stat = 0, pooled_e = 0, pooled_o = 0;
	std::size_t bins = 0;
	for (const auto &[order, p] : law) {
		const double e = static_cast<double>(p) * kSamples;
		const double o = static_cast<double>(observed.count(order) ? observed[order] : 0);
		if (e < kMinExpected) {
			pooled_e += e;
			pooled_o += o;
			continue;
		}
		stat += (o - e) * (o - e) / e;
		bins++;
	}
	if (pooled_e >= kMinExpected) {
		stat += (pooled_o - pooled_e) * (pooled_o - pooled_e) / pooled_e;
		bins++;
	} else {
		EXPECT_LE(pooled_o, pooled_e + 10 * std::sqrt(pooled_e + 1)) << what;
	}
	ASSERT_GE(bins, 2u) << what;
	EXPECT_LE(stat, chi_square_threshold(bins - 1)) << what << ": chi-square " << stat << " over " << bins << " bins";
}

TEST(TopKStat, PeelingLawTopTwo)
{
	check_order_law({12, 10, 9, 14, 3}, top_k_round_beta(1.2, 1.0, 2), 2, 21, "k=2 of 5");
}

TEST(TopKStat, PeelingLawTopThreeWithTies)
{
	check_order_law({6, 6, 4, 6, 1, 0}, top_k_round_beta(2.5, 1.0, 3), 3, 22, "k=3 of 6, ties");
}

TEST(TopKStat, PeelingLawLargerBeta)
{
	// beta 1.5 per round: whole and fractional Bernoulli parts
	check_order_law({20, 18, 19, 10, 17}, top_k_round_beta(6.0, 1.0, 2), 2, 23, "k=2, beta 1.5");
}

// Report-noisy-max with Gumbel noise of scale 1/beta, top k by noisy score: its ordered-output
// frequencies match the peeling law (one-shot top-k, Durfee & Rogers 2019, Lemma 4.2).
TEST(TopKStat, OneShotGumbelHasThePeelingLaw)
{
	const std::vector<i128> u{12, 10, 9, 14, 3};
	const EmBeta b = top_k_round_beta(1.2, 1.0, 2);
	const double beta = std::ldexp(static_cast<double>(b.num), -kEmBetaBits);
	std::mt19937_64 gen(24);
	std::extreme_value_distribution<double> gumbel(0.0, 1.0 / beta);
	std::map<std::vector<std::size_t>, std::size_t> observed;
	for (std::size_t i = 0; i < kSamples; ++i) {
		std::vector<std::pair<double, std::size_t>> noisy;
		for (std::size_t r = 0; r < u.size(); ++r)
			noisy.emplace_back(static_cast<double>(u[r]) + gumbel(gen), r);
		std::partial_sort(noisy.begin(), noisy.begin() + 2, noisy.end(), std::greater<>());
		observed[{noisy[0].second, noisy[1].second}]++;
	}
	double stat = 0;
	std::size_t bins = 0;
	for (std::size_t i = 0; i < u.size(); ++i)
		for (std::size_t j = 0; j < u.size(); ++j) {
			if (i == j)
				continue;
			const double e = static_cast<double>(top_k_probability(u, 1, b, {i, j})) * kSamples;
			const double o = static_cast<double>(observed[{i, j}]);
			stat += (o - e) * (o - e) / e;
			bins++;
		}
	EXPECT_LE(stat, chi_square_threshold(bins - 1)) << "chi-square " << stat;
}

// Selection bias: with 20 equal true counts (277), the largest of 5 noisy Laplace counts is far
// above 277 on average, while the exponential mechanism's choice carries no number to be biased
// and picks every candidate with the same probability.
TEST(TopKStat, ExponentialTopKIsUniformOnEqualCounts)
{
	const std::vector<i128> u(20, 277);
	SeededRandom rng(25);
	const EmBeta b = top_k_round_beta(1.0, 1.0, 5);
	std::vector<std::size_t> chosen(u.size(), 0);
	const std::size_t n = 40000;
	for (std::size_t i = 0; i < n; ++i)
		for (std::size_t c : top_k_sample(rng, u, 1, b, 5))
			chosen[c]++;
	const double e = 5.0 * n / 20.0;
	double stat = 0;
	for (std::size_t c : chosen)
		stat += (c - e) * (c - e) / e;
	EXPECT_LE(stat, chi_square_threshold(19));
}

} // namespace
} // namespace dxpriv
