// Tests of count_distinct (core/exponential_mechanism.h, EmKind::Distinct): the claimed
// sensitivity against a brute force over small datasets and every one-record change, and the
// released noise.
#include "core/exponential_mechanism.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "core/error.h"
#include "core/random.h"
#include "test_support.h"

using namespace dxpriv;

namespace {

using ::dxpriv::testing::record_metric;

const EmUtility kDistinct{EmKind::Distinct, 0};

// Σ_g D_g: for each group the number of candidates with a counted row; rows are point indexes.
std::map<std::vector<std::size_t>, std::map<std::size_t, int>>
histogram(const SubUniverse &sub, const std::vector<char> &counted, std::size_t cand,
          const std::vector<std::size_t> &groups, const std::vector<std::size_t> &rows)
{
	std::map<std::vector<std::size_t>, std::map<std::size_t, int>> h;
	for (std::size_t x : rows) {
		if (!counted[x])
			continue;
		const auto idx = sub.unflatten(x);
		std::vector<std::size_t> g;
		for (std::size_t c : groups)
			g.push_back(idx[c]);
		h[g][idx[cand]]++;
	}
	return h;
}

// Σ_g |D_g(a) - D_g(b)| for two datasets.
double
distinct_distance(const SubUniverse &sub, const std::vector<char> &counted, std::size_t cand,
                  const std::vector<std::size_t> &groups, const std::vector<std::size_t> &a,
                  const std::vector<std::size_t> &b)
{
	auto ha = histogram(sub, counted, cand, groups, a), hb = histogram(sub, counted, cand, groups, b);
	for (const auto &[g, _] : hb)
		ha[g];
	double s = 0;
	for (const auto &[g, m] : ha)
		s += std::fabs(static_cast<double>(m.size()) - static_cast<double>(hb[g].size()));
	return s;
}

// max over datasets `rest` (at most two rows) plus one record x, changed to y or removed, of the
// L1 change of the released vector divided by the record distance.
double
brute_force(const SubUniverse &sub, const std::vector<char> &counted, std::size_t cand,
            const std::vector<std::size_t> &groups)
{
	const std::size_t n = sub.size();
	const auto d = record_metric(sub);
	std::vector<std::vector<std::size_t>> rests = {{}};
	for (std::size_t a = 0; a < n; ++a) {
		rests.push_back({a});
		for (std::size_t b = a; b < n; ++b)
			rests.push_back({a, b});
	}
	double s = 0;
	for (const auto &rest : rests)
		for (std::size_t x = 0; x < n; ++x) {
			std::vector<std::size_t> with = rest;
			with.push_back(x);
			if (d[x][n] < kInfinity)
				s = std::max(s, distinct_distance(sub, counted, cand, groups, with, rest) / d[x][n]);
			for (std::size_t y = 0; y < n; ++y) {
				if (x == y || !(d[x][y] < kInfinity) || d[x][y] == 0)
					continue;
				std::vector<std::size_t> moved = rest;
				moved.push_back(y);
				s = std::max(s, distinct_distance(sub, counted, cand, groups, with, moved) / d[x][y]);
			}
		}
	return s;
}

void
expect_exact_bound(const SubUniverse &sub, const std::vector<char> &counted, std::size_t cand,
                   const std::vector<std::size_t> &groups)
{
	const double claimed = em_utility_sensitivity(sub, counted, cand, groups, kDistinct);
	const double brute = brute_force(sub, counted, cand, groups);
	EXPECT_LE(brute, claimed + 1e-12) << "the released count moves more than its sensitivity allows";
	EXPECT_NEAR(brute, claimed, 1e-12) << "the sensitivity is not tight";
}

} // namespace

TEST(DistinctCount, SensitivityOfOneAbsoluteColumn)
{
	SubUniverse sub;
	sub.domains = {Domain::range(0, 40, 10)};
	sub.metrics = {ColumnMetric::absolute(20)}; // adjacent values 0.5 apart
	sub.presence = 1;
	const std::vector<char> all(5, 1);
	expect_exact_bound(sub, all, 0, {});
	EXPECT_DOUBLE_EQ(em_utility_sensitivity(sub, all, 0, {}, kDistinct), 2.0);
	sub.presence = kInfinity; // bounded model: value changes only
	expect_exact_bound(sub, all, 0, {});
	std::vector<char> some = {1, 0, 1, 1, 0}; // WHERE on the candidate column
	sub.presence = 3;
	expect_exact_bound(sub, some, 0, {});
}

TEST(DistinctCount, SensitivityWithWhereAndGroupColumns)
{
	SubUniverse sub;
	sub.domains = {Domain::enumerated({"a", "b", "c"}), Domain::enumerated({"x", "y"})};
	sub.metrics = {ColumnMetric::discrete(2), ColumnMetric::discrete(0.5)};
	sub.presence = 1;
	const std::vector<char> counted = {1, 0, 1, 1, 0, 1}; // the second column is a WHERE column
	expect_exact_bound(sub, counted, 0, {});
	expect_exact_bound(sub, counted, 0, {1}); // grouped by the second column instead
	expect_exact_bound(sub, std::vector<char>(6, 1), 1, {0});
	sub.metrics = {ColumnMetric::discrete(2), ColumnMetric::none()};
	expect_exact_bound(sub, counted, 0, {});
}

TEST(DistinctCount, OneCandidateStillCounts)
{
	// D is 0 or 1: a presence edge moves it by 1 (mode's bound would be 0 here)
	SubUniverse sub;
	sub.domains = {Domain::enumerated({"only"})};
	sub.metrics = {ColumnMetric::discrete(1)};
	sub.presence = 4;
	const std::vector<char> all(1, 1);
	EXPECT_DOUBLE_EQ(em_utility_sensitivity(sub, all, 0, {}, kDistinct), 0.25);
	expect_exact_bound(sub, all, 0, {});
	EXPECT_DOUBLE_EQ(em_utility_sensitivity(sub, all, 0, {}, EmUtility{EmKind::Mode, 0}), 0.0);
}

TEST(DistinctCount, ReleaseAddsDiscreteLaplaceOfScaleOneOverTwoBeta)
{
	const EmBeta beta = em_beta(0.5, 1.0); // epsilon / (2 S) = 0.25
	EXPECT_GE(em_distinct_scale(beta), 2.0); // beta rounded down: never less noise
	EXPECT_NEAR(em_distinct_scale(beta), 2.0, 1e-4);
	EXPECT_EQ(em_distinct_scale(EmBeta{true, 0}), 0.0);
	EXPECT_THROW(em_distinct_scale(EmBeta{false, 0}), CoreError);
	SeededRandom rng(11);
	const std::vector<std::int64_t> counts = {4, 0, 1, 0, 7};
	EXPECT_EQ(em_distinct_release(rng, counts, EmBeta{true, 0}), 3); // exact when S = 0
	double sum = 0, sq = 0;
	const int trials = 20000;
	for (int i = 0; i < trials; ++i) {
		const double z = static_cast<double>(em_distinct_release(rng, counts, beta)) - 3;
		sum += z;
		sq += z * z;
	}
	const double a = std::exp(-1 / 2.0); // discrete Laplace of scale 2: variance 2a/(1-a)^2
	EXPECT_NEAR(sum / trials, 0, 0.1);
	EXPECT_NEAR(sq / trials, 2 * a / ((1 - a) * (1 - a)), 0.4);
	EXPECT_THROW(em_distinct_release(rng, {1, -1}, beta), CoreError);
}
