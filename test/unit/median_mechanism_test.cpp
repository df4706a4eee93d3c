// The median mechanism session (MECHANISMS.md §7, median_mechanism.h): the easiness score's d_X
// sensitivity checked on every neighbouring histogram of small universes, the sparse-vector
// classification at its extremes, easy answers as medians of the kept set, hard answers shrinking
// it, the state's binary form, and accuracy in simulation.
#include "core/median_mechanism.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "core/random.h"
#include "core/release_steps.h"
#include "core/smalldb.h"
#include "test_support.h"

namespace dxpriv {
namespace {

using ::dxpriv::testing::Matrix;
using ::dxpriv::testing::for_each_neighbour;
using ::dxpriv::testing::record_metric;
using ::dxpriv::testing::sample_sub_universes;

SubUniverse
tiny()
{
	SubUniverse sub;
	sub.domains = {Domain::enumerated({"a", "b", "c"}), Domain::enumerated({"x", "y"})};
	sub.metrics = {ColumnMetric::discrete(1), ColumnMetric::discrete(1)};
	sub.presence = kInfinity;
	return sub;
}

TEST(MedianMechanism, EasinessSensitivityHoldsOnAllNeighbours)
{
	int checked = 0;
	for (const SubUniverse &sub : sample_sub_universes()) {
		if (sub.size() > 12)
			continue;
		const Matrix d = record_metric(sub);
		std::vector<std::string> names;
		for (std::size_t c = 0; c < sub.domains.size(); ++c)
			names.push_back("c" + std::to_string(c));
		const Workload w = marginal_workload(sub, names, 1);
		std::vector<std::int64_t> x(sub.size());
		for (std::size_t u = 0; u < x.size(); ++u)
			x[u] = static_cast<std::int64_t>((u * 7) % 4);
		SeededRandom rng(3);
		double open_eps = 0;
		MedianSession s = median_open(sub, w, x, 1.0, 0.3, 2, 0, rng, &open_eps);
		// shrink the kept set a little so that the score is not over all candidates
		double scale = 0;
		median_answer_hard(s, sub, w, 0, x, rng, &scale);
		const double delta = median_easiness_sensitivity(s);
		for (std::size_t k = 0; k < w.queries.size(); ++k) {
			const double rx = median_easiness(s, w, k, x);
			for_each_neighbour(x, d, [&](const std::vector<std::int64_t> &y, double dist) {
				EXPECT_LE(std::fabs(median_easiness(s, w, k, y) - rx), delta * dist * (1 + 1e-9) + 1e-15);
				++checked;
			});
		}
	}
	EXPECT_GT(checked, 100);
}

TEST(MedianMechanism, ClassificationEasyAnswersAndHardAnswers)
{
	const SubUniverse sub = tiny();
	const Workload w = marginal_workload(sub, {"l", "r"}, 2); // every cell
	const std::vector<std::int64_t> x = {40, 0, 0, 0, 0, 60};
	SeededRandom rng(5);
	double open_eps = 0;
	MedianSession s = median_open(sub, w, x, 1e6, 0.05, 2, 0, rng, &open_eps);
	EXPECT_DOUBLE_EQ(open_eps, 1e6 / 2 * (1 - 1e-12)); // count public: only the first run
	EXPECT_EQ(s.n_hat, 100);
	EXPECT_EQ(s.kept(), static_cast<std::size_t>(smalldb_candidates(6, 2)));
	EXPECT_EQ(s.max_hard, 6); // min(|Q|, 20 m ln|X|)
	// at the start every database of 2 rows is kept: cell 0 (true 40) is far from most: hard
	EXPECT_LT(median_easiness(s, w, 0, x), 0.75);
	EXPECT_TRUE(median_is_hard(s, w, 0, x, rng));
	double scale = 0;
	const double a0 = median_answer_hard(s, sub, w, 0, x, rng, &scale);
	EXPECT_NEAR(a0, 40, 1e-3); // huge epsilon: almost exact
	EXPECT_EQ(s.hard, 1);
	// the kept databases all give cell 0 the value nearest to 40 (50: one of the two rows)
	const std::vector<double> v0 = smalldb_query_values(w, 0, 2);
	for (std::size_t c = 0; c < v0.size(); ++c)
		if ((s.alive[c / 8] >> (c % 8)) & 1)
			EXPECT_EQ(v0[c] * 50, 50);
	// cell 5 (true 60): hard again, then cell 1 (true 0) is easy and answered by the median
	EXPECT_TRUE(median_is_hard(s, w, 5, x, rng));
	median_answer_hard(s, sub, w, 5, x, rng, &scale);
	EXPECT_EQ(s.kept(), 1u); // {row at cell 0, row at cell 5}
	EXPECT_GT(median_easiness(s, w, 1, x), 0.99);
	EXPECT_FALSE(median_is_hard(s, w, 1, x, rng));
	EXPECT_EQ(median_answer_easy(s, w, 1), 0);
	EXPECT_EQ(s.was_hard[1], 0);
	EXPECT_EQ(s.answers[0], a0);
}

TEST(MedianMechanism, StateRoundTripsAndMalformedStatesAreRefused)
{
	const SubUniverse sub = tiny();
	const Workload w = marginal_workload(sub, {"l", "r"}, 1);
	SeededRandom rng(9);
	double open_eps = 0;
	MedianSession s = median_open(sub, w, {3, 4, 5, 6, 7, 8}, 0.5, 0.1, 3, 0, rng, &open_eps);
	double scale = 0;
	median_answer_hard(s, sub, w, 2, {3, 4, 5, 6, 7, 8}, rng, &scale);
	const std::string bytes = s.serialize();
	const MedianSession t = MedianSession::parse(bytes);
	EXPECT_EQ(t.serialize(), bytes);
	EXPECT_EQ(t.kept(), s.kept());
	EXPECT_EQ(t.hard, 1);
	EXPECT_EQ(testing::contract_error_kind([&] { MedianSession::parse(bytes.substr(0, bytes.size() - 1)); }),
	          ErrorKind::InvalidParameter);
	EXPECT_EQ(testing::contract_error_kind([&] { MedianSession::parse(bytes + "x"); }), ErrorKind::InvalidParameter);
	std::string bad = bytes;
	bad[0] = 9;
	EXPECT_EQ(testing::contract_error_kind([&] { MedianSession::parse(bad); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(testing::contract_error_kind([&] { check_median_arguments(w, 0, 0.1, 0); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(testing::contract_error_kind([&] { check_median_arguments(w, 1, 0, 0); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(testing::contract_error_kind([&] { check_median_arguments(w, 1, 0.1, 60); }), ErrorKind::ProgramLimit);
}

// Simulation: over the 1-way and 2-way marginals of a tiny universe, a session answers every query;
// most are easy (free) once a few hard ones have pinned the kept set, and the answers are accurate.
TEST(MedianMechanism, SessionsSaveBudgetAndStayAccurate)
{
	const SubUniverse sub = tiny();
	Workload w = marginal_workload(sub, {"l", "r"}, 1);
	const Workload two = marginal_workload(sub, {"l", "r"}, 2);
	w.queries.insert(w.queries.end(), two.queries.begin(), two.queries.end());
	const std::vector<std::int64_t> x = {300, 100, 200, 0, 100, 300};
	int easy = 0, total = 0;
	double worst = 0;
	for (int seed = 0; seed < 20; ++seed) {
		SeededRandom rng(100 + seed);
		double open_eps = 0;
		MedianSession s = median_open(sub, w, x, 2.0, 0.1, 10, 0, rng, &open_eps);
		for (int pass = 0; pass < 2; ++pass)
			for (std::size_t k = 0; k < w.queries.size(); ++k) {
				if (s.hard >= s.max_hard)
					break;
				double answer, scale = 0;
				if (median_is_hard(s, w, k, x, rng)) {
					answer = median_answer_hard(s, sub, w, k, x, rng, &scale);
				} else {
					answer = median_answer_easy(s, w, k);
					++easy;
				}
				++total;
				worst = std::max(worst, std::fabs(answer - static_cast<double>(w.exact_units(k, x))));
			}
	}
	EXPECT_GT(easy, total / 3);   // a good share of the queries is free
	EXPECT_LT(worst, 0.1 * 1000); // within alpha * n of the truth
}

} // namespace
} // namespace dxpriv
