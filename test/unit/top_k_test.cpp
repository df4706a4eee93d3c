// Unit tests of the exponential-mechanism top-k (core/top_k.h): arguments, distinct ordered output,
// the exact law sums to one, and the d_X guarantee checked exhaustively on small neighbours.
#include "core/top_k.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <vector>

#include "core/error.h"
#include "core/random.h"
#include "test_support.h"

namespace dxpriv {
namespace {

using ::dxpriv::testing::error_kind;
using i128 = __int128;

// Every ordered k-tuple of distinct indices below n.
void
for_each_order(std::size_t n, std::size_t k, const std::function<void(const std::vector<std::size_t> &)> &f)
{
	std::vector<std::size_t> cur;
	std::vector<char> used(n, 0);
	std::function<void()> rec = [&] {
		if (cur.size() == k) {
			f(cur);
			return;
		}
		for (std::size_t i = 0; i < n; ++i) {
			if (used[i])
				continue;
			used[i] = 1;
			cur.push_back(i);
			rec();
			cur.pop_back();
			used[i] = 0;
		}
	};
	rec();
}

TEST(TopK, RefusesBadK)
{
	SeededRandom rng(1);
	const EmBeta b = top_k_round_beta(1.0, 1.0, 2);
	EXPECT_EQ(error_kind([&] { top_k_sample(rng, {1, 2, 3}, 1, b, 0); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(error_kind([&] { top_k_sample(rng, {1, 2, 3}, 1, b, 4); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(error_kind([&] { top_k_round_beta(1.0, 1.0, 0); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(error_kind([&] { top_k_round_beta(1.0, 1.0, kMaxTopK + 1); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(error_kind([&] { top_k_round_beta(0.0, 1.0, 1); }), ErrorKind::InvalidParameter);
}

TEST(TopK, RoundBetaIsEpsilonOverK)
{
	// epsilon 1.2 over 3 rounds: each round is the exponential mechanism at epsilon 0.4
	const EmBeta round = top_k_round_beta(1.2, 2.0, 3);
	const EmBeta single = em_beta(0.4, 2.0);
	EXPECT_EQ(round.num, single.num);
	EXPECT_FALSE(round.infinite);
	EXPECT_TRUE(top_k_round_beta(1.0, 0.0, 4).infinite);
}

TEST(TopK, DistinctOrderedOutput)
{
	SeededRandom rng(7);
	const std::vector<i128> u{5, 50, 3, 40, 8, 0, 30};
	const EmBeta b = top_k_round_beta(1.0, 1.0, 4);
	for (int i = 0; i < 200; ++i) {
		const std::vector<std::size_t> out = top_k_sample(rng, u, 1, b, 4);
		ASSERT_EQ(out.size(), 4u);
		EXPECT_EQ(std::set<std::size_t>(out.begin(), out.end()).size(), 4u);
		for (std::size_t c : out)
			EXPECT_LT(c, u.size());
	}
	// k equal to the number of candidates ranks them all
	const std::vector<std::size_t> all = top_k_sample(rng, u, 1, b, u.size());
	EXPECT_EQ(std::set<std::size_t>(all.begin(), all.end()).size(), u.size());
}

TEST(TopK, InfiniteBetaReturnsTheTrueTopKInOrder)
{
	SeededRandom rng(3);
	const std::vector<i128> u{5, 50, 3, 40, 8, 0, 30};
	const std::vector<std::size_t> out = top_k_sample(rng, u, 1, EmBeta{true, 0}, 3);
	EXPECT_EQ(out, (std::vector<std::size_t>{1, 3, 6}));
}

TEST(TopK, ExactLawSumsToOne)
{
	const std::vector<i128> u{4, 1, 7, 7, 2};
	const EmBeta b = top_k_round_beta(2.0, 1.0, 3);
	long double total = 0;
	for_each_order(u.size(), 3, [&](const std::vector<std::size_t> &o) { total += top_k_probability(u, 1, b, o); });
	EXPECT_NEAR(static_cast<double>(total), 1.0, 1e-12);
	EXPECT_EQ(error_kind([&] { top_k_probability(u, 1, b, {1, 1}); }), ErrorKind::InvalidParameter);
}

// The guarantee: scores that move by at most S * d between neighbours (here S = 1 and the
// neighbours differ by d = 1: a count moves by at most 1, or one row moves from one candidate to
// another) change the probability of every ordered output by a factor of at most exp(epsilon).
TEST(TopK, EveryOutputWithinExpEpsilonOnNeighbours)
{
	const std::vector<i128> base{9, 7, 7, 3, 0, 5};
	const double epsilon = 0.8;
	for (std::size_t k : {1u, 2u, 3u}) {
		const EmBeta b = top_k_round_beta(epsilon, 1.0, k);
		std::vector<std::vector<i128>> neighbours;
		for (std::size_t i = 0; i < base.size(); ++i) {
			for (int delta : {-1, 1}) { // presence: one count moves by one
				std::vector<i128> n = base;
				n[i] += delta;
				if (n[i] >= 0)
					neighbours.push_back(n);
			}
			for (std::size_t j = 0; j < base.size(); ++j) { // a row's value changes from i to j
				if (i == j || base[i] == 0)
					continue;
				std::vector<i128> n = base;
				n[i] -= 1;
				n[j] += 1;
				neighbours.push_back(n);
			}
		}
		double worst = 0;
		for (const std::vector<i128> &n : neighbours)
			for_each_order(base.size(), k, [&](const std::vector<std::size_t> &o) {
				const long double p = top_k_probability(base, 1, b, o);
				const long double q = top_k_probability(n, 1, b, o);
				worst = std::max(worst, static_cast<double>(std::fabs(std::log(p / q))));
			});
		EXPECT_LE(worst, epsilon + 1e-9) << "k=" << k;
		EXPECT_GT(worst, 0.2 * epsilon) << "k=" << k; // the bound is not vacuous
	}
}

} // namespace
} // namespace dxpriv
