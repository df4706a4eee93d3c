// Statistical tests of the local randomisers: their output laws against the rows of their exact
// channel matrices (Pearson chi-square at p = 1e-6 with Boost.Math quantiles), and an end-to-end
// randomise-then-reconstruct check. Fixed seeds and sample sizes: deterministic runs.
#include "core/local_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/random.h"
#include "test_support.h"

namespace dxpriv {
namespace {

using ::dxpriv::testing::chi_square_threshold;

constexpr double kMinExpectedPerBin = 20.0;
constexpr std::size_t kSamples = 400000;

// Chi-square fit of output counts against the expected probabilities, merging adjacent cells until
// each expects at least kMinExpectedPerBin samples.
void expect_fit(const std::vector<std::uint64_t> &observed, const std::vector<double> &probs, std::size_t n,
                const std::string &what)
{
	std::vector<double> obs_bins, exp_bins;
	double o = 0.0, e = 0.0;
	for (std::size_t i = 0; i < probs.size(); ++i) {
		o += static_cast<double>(observed[i]);
		e += static_cast<double>(n) * probs[i];
		if (e >= kMinExpectedPerBin) {
			obs_bins.push_back(o);
			exp_bins.push_back(e);
			o = e = 0.0;
		}
	}
	if (!exp_bins.empty()) { // leftover mass joins the last bin
		obs_bins.back() += o;
		exp_bins.back() += e;
	} else {
		obs_bins.push_back(o);
		exp_bins.push_back(e);
	}
	ASSERT_GE(exp_bins.size(), 2u) << what << ": vacuous test";
	double stat = 0.0;
	for (std::size_t b = 0; b < exp_bins.size(); ++b)
		stat += (obs_bins[b] - exp_bins[b]) * (obs_bins[b] - exp_bins[b]) / exp_bins[b];
	const double threshold = chi_square_threshold(exp_bins.size() - 1);
	EXPECT_LE(stat, threshold) << what << ": chi-square " << stat << " over " << exp_bins.size() << " bins";
}

struct Case {
	LocalMechanism mechanism;
	std::int64_t lo, hi, value;
	double epsilon;
};

class RandomiserLaw : public ::testing::TestWithParam<Case> {};

// The empirical law of the randomiser's output matches row `value` of its channel (at the
// sampling epsilon, which is the law the sampler realises exactly).
TEST_P(RandomiserLaw, MatchesChannelRow)
{
	const Case c = GetParam();
	const std::size_t k = static_cast<std::size_t>(c.hi - c.lo + 1);
	SeededRandom rng(20240601 + static_cast<std::uint64_t>(k) * 31 + static_cast<std::uint64_t>(c.value - c.lo));
	std::vector<std::uint64_t> counts(k, 0);
	for (std::size_t i = 0; i < kSamples; ++i) {
		const std::int64_t y = local_randomize(c.mechanism, rng, c.value, c.lo, c.hi, c.epsilon);
		ASSERT_GE(y, c.lo);
		ASSERT_LE(y, c.hi);
		++counts[static_cast<std::size_t>(y - c.lo)];
	}
	const LocalChannel channel = LocalChannel::make(c.mechanism, k, sampling_epsilon(c.mechanism, c.epsilon));
	std::vector<double> row(k);
	for (std::size_t y = 0; y < k; ++y)
		row[y] = channel.entry(static_cast<std::size_t>(c.value - c.lo), y);
	expect_fit(counts, row, kSamples,
	           std::string(local_mechanism_name(c.mechanism)) + " k=" + std::to_string(k) +
	               " eps=" + std::to_string(c.epsilon) + " x=" + std::to_string(c.value));
	// A wrong law is detected: the same counts against the row of the other mechanism must fail
	// (guards against a vacuous test), unless the two rows coincide (k <= 2 can make them close).
	if (k >= 4) {
		const LocalMechanism other = c.mechanism == LocalMechanism::TruncatedGeometric
		                                 ? LocalMechanism::KRandomizedResponse
		                                 : LocalMechanism::TruncatedGeometric;
		const LocalChannel wrong = LocalChannel::make(other, k, c.epsilon);
		double stat = 0.0;
		for (std::size_t y = 0; y < k; ++y) {
			const double e = kSamples * wrong.entry(static_cast<std::size_t>(c.value - c.lo), y);
			stat += (counts[y] - e) * (counts[y] - e) / std::max(e, 1e-300);
		}
		EXPECT_GT(stat, chi_square_threshold(k - 1));
	}
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RandomiserLaw,
    ::testing::Values(Case{LocalMechanism::TruncatedGeometric, 0, 3, 1, std::log(2.0)},
                      Case{LocalMechanism::TruncatedGeometric, 0, 10, 0, 0.5},
                      Case{LocalMechanism::TruncatedGeometric, 0, 10, 5, 0.5},
                      Case{LocalMechanism::TruncatedGeometric, -50, 50, 0, 0.1},
                      Case{LocalMechanism::TruncatedGeometric, 0, 100, 99, 2.0},
                      Case{LocalMechanism::TruncatedGeometric, 10, 11, 11, 0.3},
                      Case{LocalMechanism::KRandomizedResponse, 0, 3, 2, std::log(2.0)},
                      Case{LocalMechanism::KRandomizedResponse, 0, 10, 0, 0.5},
                      Case{LocalMechanism::KRandomizedResponse, -20, 29, -10, 3.0},
                      Case{LocalMechanism::KRandomizedResponse, 0, 999, 500, 1.0},
                      Case{LocalMechanism::KRandomizedResponse, 0, 1, 1, 0.2}));

// Two-sided geometric noise itself: P(Z = z) = ((1-a)/(1+a)) a^|z| on a wide window plus tails.
TEST(TwoSidedGeometricLaw, MatchesPmf)
{
	const double eps = 0.4;
	const double a = std::exp(-geometric_sampling_epsilon(eps));
	SeededRandom rng(99);
	const int w = 30;
	std::vector<std::uint64_t> counts(2 * w + 3, 0); // [<-w], -w..w, [>w]
	for (std::size_t i = 0; i < kSamples; ++i) {
		const std::int64_t z = two_sided_geometric(rng, eps);
		const std::size_t bin = z < -w ? 0 : z > w ? 2 * w + 2 : static_cast<std::size_t>(z + w + 1);
		++counts[bin];
	}
	std::vector<double> probs(2 * w + 3);
	const double tail = std::pow(a, w + 1) / (1.0 + a);
	probs[0] = probs[2 * w + 2] = tail;
	for (int z = -w; z <= w; ++z)
		probs[z + w + 1] = (1.0 - a) / (1.0 + a) * std::pow(a, std::abs(z));
	expect_fit(counts, probs, kSamples, "two-sided geometric");
}

// Randomise a binomial sample with both mechanisms (TG at eps/r, k-RR at eps, §4.6) and reconstruct
// it with IBU: both estimates are close to the sample's distribution, the geometric one closer.
TEST(LocalEndToEnd, RandomiseThenReconstruct)
{
	const std::int64_t n = 20;
	const std::size_t k = static_cast<std::size_t>(n + 1);
	const double eps = 1.0, r = 2.0;
	SeededRandom rng(5);
	const std::size_t users = 100000;
	std::vector<std::int64_t> values(users);
	std::vector<double> truth(k, 0.0);
	for (std::size_t i = 0; i < users; ++i) {
		std::int64_t v = 0; // Binomial(20, 0.3) as a sum of exact Bernoulli(3/10) draws
		for (int j = 0; j < n; ++j)
			v += rng.uniform_below(std::uint64_t{10}) < 3 ? 1 : 0;
		values[i] = v;
		truth[static_cast<std::size_t>(v)] += 1.0 / users;
	}
	double distance[2];
	for (int m = 0; m < 2; ++m) {
		const LocalMechanism mech = m == 0 ? LocalMechanism::TruncatedGeometric : LocalMechanism::KRandomizedResponse;
		const double e = m == 0 ? geometric_epsilon_for_radius(eps, r) : eps;
		std::vector<std::uint64_t> counts(k, 0);
		for (std::int64_t v : values)
			++counts[static_cast<std::size_t>(local_randomize(mech, rng, v, 0, n, e))];
		IbuOptions options;
		options.iterations = 2000;
		const IbuResult res =
		    iterative_bayesian_update(counts, LocalChannel::make(mech, k, sampling_epsilon(mech, e)), options);
		distance[m] = kantorovich(res.theta, truth);
	}
	EXPECT_LT(distance[0], 0.3);
	EXPECT_LT(distance[1], 1.0);
	EXPECT_LT(distance[0], distance[1]);
}

} // namespace
} // namespace dxpriv
