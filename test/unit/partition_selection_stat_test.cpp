// Statistical tests of the partition-selection samplers: empirical keep frequencies against the
// exact keep probabilities (5-sigma binomial bounds, fixed seeds).
#include "core/partition_selection.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "core/random.h"
#include "test_support.h"

namespace dxpriv {
namespace {

using ::dxpriv::testing::expect_binomial;

void
check(SelectionMechanism m, double eps, double delta, std::uint64_t draws, std::uint64_t seed)
{
	PartitionSelector s(m, eps, delta);
	SeededRandom rng(seed);
	for (std::uint64_t n = 1; n <= s.threshold() + 2; n += (n < 8 ? 1 : 3)) {
		std::uint64_t kept = 0;
		for (std::uint64_t i = 0; i < draws; ++i)
			kept += s.keep(rng, n) ? 1 : 0;
		expect_binomial(kept, draws, static_cast<double>(s.keep_probability(n)),
		                std::string(selection_mechanism_name(m)) + " n=" + std::to_string(n));
	}
}

TEST(PartitionSelectionStat, OptimalKeepsAtItsProbabilities)
{
	check(SelectionMechanism::Optimal, 1.0, 0.01, 200000, 11);
	check(SelectionMechanism::Optimal, 0.5, 1e-3, 200000, 12);
}

TEST(PartitionSelectionStat, LaplaceKeepsAtItsProbabilities)
{
	check(SelectionMechanism::Laplace, 1.0, 0.01, 200000, 13);
	check(SelectionMechanism::Laplace, 0.5, 1e-3, 100000, 14);
}

TEST(PartitionSelectionStat, OneContributorAtSmallDelta)
{
	// delta = 1e-4: 2e6 draws, about 200 kept
	for (auto m : {SelectionMechanism::Optimal, SelectionMechanism::Laplace}) {
		PartitionSelector s(m, 1.0, 1e-4);
		SeededRandom rng(21);
		std::uint64_t kept = 0;
		const std::uint64_t draws = 2000000;
		for (std::uint64_t i = 0; i < draws; ++i)
			kept += s.keep(rng, 1) ? 1 : 0;
		expect_binomial(kept, draws, static_cast<double>(s.keep_probability(1)), selection_mechanism_name(m));
		EXPECT_LE(static_cast<double>(s.keep_probability(1)), 1e-4);
	}
}

} // namespace
} // namespace dxpriv
