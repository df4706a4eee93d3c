// The prefilter of the unit profiles' heavy-unit table (core/unit_prefilter.h): never a false
// negative (a heavy unit always reaches the exact lookup), a small false-positive rate at its
// sizing, the sizing rules, and hashes chosen to collide in it.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <unordered_set>
#include <vector>

#include "core/mix64.h"
#include "core/unit_prefilter.h"

namespace dxpriv {
namespace {

// A filter of `added` with its own words.
struct OwnedFilter {
	std::vector<std::uint64_t> words;
	UnitPrefilter filter;
	explicit OwnedFilter(const std::vector<std::uint64_t> &added)
	    : words(UnitPrefilter::words_for(added.size()), 0), filter(words.data(), words.size())
	{
		for (std::uint64_t h : added)
			filter.add(h);
	}
};

TEST(UnitPrefilter, Sizing)
{
	EXPECT_EQ(UnitPrefilter::words_for(0), 0u);
	EXPECT_EQ(UnitPrefilter::words_for(1), 1u);
	EXPECT_EQ(UnitPrefilter::words_for(8), 1u);
	EXPECT_EQ(UnitPrefilter::words_for(9), 2u);
	EXPECT_EQ(UnitPrefilter::words_for(15000), 2048u); // the 2M-row benchmark's heavy units: 16 kB
	EXPECT_EQ(UnitPrefilter::words_for(UnitPrefilter::kMaxWords * 8), UnitPrefilter::kMaxWords);
	EXPECT_EQ(UnitPrefilter::words_for(UnitPrefilter::kMaxWords * 8 + 1), 0u); // too full: no filter
	for (std::size_t n : {1u, 3u, 100u, 1000u, 40000u, 65536u}) {
		const std::size_t w = UnitPrefilter::words_for(n);
		EXPECT_EQ(w & (w - 1), 0u) << n;
		EXPECT_GE(w * 64, 8 * n) << n; // at least 8 bits per hash
	}
}

TEST(UnitPrefilter, NoFilterPassesEverything)
{
	UnitPrefilter none;
	EXPECT_FALSE(none.active());
	EXPECT_TRUE(none.maybe(0));
	EXPECT_TRUE(none.maybe(12345));
	OwnedFilter empty({});
	EXPECT_FALSE(empty.filter.active());
	EXPECT_TRUE(empty.filter.maybe(42));
}

TEST(UnitPrefilter, NoFalseNegative)
{
	std::mt19937_64 rng(7);
	for (std::size_t n : {1u, 2u, 10u, 1000u, 15000u, 65536u}) {
		std::vector<std::uint64_t> added;
		for (std::size_t i = 0; i < n; i++)
			added.push_back(i % 3 == 0 ? mix64(i) : rng()); // integer units' hashes and random ones
		added.push_back(0x9E3779B97F4A7C15ULL); // the NULL unit's hash
		added.push_back(1);                     // the hash 0 maps to
		OwnedFilter f(added);
		for (std::uint64_t h : added)
			ASSERT_TRUE(f.filter.maybe(h)) << n << " " << h;
	}
}

TEST(UnitPrefilter, FalsePositiveRate)
{
	std::mt19937_64 rng(11);
	for (std::size_t n : {100u, 15000u, 65536u}) {
		std::vector<std::uint64_t> added;
		std::unordered_set<std::uint64_t> set;
		for (std::size_t i = 0; i < n; i++) {
			added.push_back(mix64(rng()));
			set.insert(added.back());
		}
		OwnedFilter f(added);
		std::size_t passed = 0, tried = 0;
		for (std::uint64_t i = 0; tried < 200000; i++) {
			const std::uint64_t h = mix64(0x5151515151ULL + i); // hashes of integer units not added
			if (set.count(h))
				continue;
			tried++;
			passed += f.filter.maybe(h);
		}
		const double rate = static_cast<double>(passed) / tried;
		// 8 to 16 bits per hash: a few percent
		EXPECT_LT(rate, 0.07) << n;
		EXPECT_GT(rate, 0.0) << n; // (the test can see a false positive: they exist)
	}
}

// Hashes that share a word and the bits of an added one pass (and go to the exact lookup): the
// filter says "maybe", never "no", for them; a hash differing in one chosen bit is rejected.
TEST(UnitPrefilter, CraftedCollisionsOnlyPass)
{
	const std::uint64_t heavy = mix64(99);
	OwnedFilter f({heavy});
	// same word (bits 32..) and same bit positions (20..31, 58..63), other low bits
	for (std::uint64_t low = 0; low < (1u << 20); low += 4099) {
		const std::uint64_t twin = (heavy & ~std::uint64_t{0xFFFFF}) | low;
		EXPECT_TRUE(f.filter.maybe(twin));
	}
	const std::uint64_t other = heavy ^ (std::uint64_t{1} << 20); // one bit position moved
	const bool shared = ((heavy >> 26) & 63) == (((other >> 20) & 63)) || (heavy >> 58) == ((other >> 20) & 63);
	if (!shared)
		EXPECT_FALSE(f.filter.maybe(other));
}

} // namespace
} // namespace dxpriv
