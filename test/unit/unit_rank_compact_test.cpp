// The bounded unit profile build (core/unit_rank_compact.h): compaction keeps each unit's k + 1
// smallest ranks exactly (and commutes with appending rows), and a build in hash-range passes over a
// small buffer (the driver of executor/unit_profile.cpp, replayed here over a vector) finds the same
// heavy units, thresholds, order and ties as one sort of every row.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "core/unit_rank_compact.h"

namespace dxpriv {
namespace {

// The one-sort build: every row sorted, a unit with more than k rows gets its k-th smallest rank.
std::size_t
reference(std::vector<UnitRank> rows, std::size_t k, std::vector<UnitRank> *heavy)
{
	std::sort(rows.begin(), rows.end(), [](const UnitRank &a, const UnitRank &b) {
		return a.hash != b.hash ? a.hash < b.hash : a.rank < b.rank;
	});
	heavy->clear();
	for (std::size_t i = 0; i < rows.size();) {
		std::size_t j = i;
		while (j < rows.size() && rows[j].hash == rows[i].hash)
			j++;
		if (j - i > k) {
			if (rows[i + k].rank == rows[i + k - 1].rank)
				return kTiedThreshold;
			heavy->push_back({rows[i].hash, rows[i + k - 1].rank});
		}
		i = j;
	}
	return heavy->size();
}

// The pass driver of build_profile over a work area of `cap` entries: a full work area is compacted,
// and while over half of it is still used the pass narrows its range to the lower half, leaving the
// upper half on a stack for a later pass; the heavy units of each finished range are appended.
struct Passes {
	std::size_t passes = 0;
	std::size_t result = 0;
	std::size_t most_left = 0; // the most ranges left at once
};

Passes
bounded(const std::vector<UnitRank> &table, std::size_t k, std::size_t cap, std::vector<UnitRank> *heavy)
{
	EXPECT_GE(cap, 2 * (k + 1));
	std::vector<UnitRank> buf(cap);
	heavy->clear();
	std::vector<HashRange> todo{HashRange{0, 0}};
	Passes out;
	while (!todo.empty()) {
		HashRange range = todo.back();
		todo.pop_back();
		std::size_t n = 0;
		out.passes++;
		for (const UnitRank &r : table) {
			if (!range.contains(r.hash))
				continue;
			if (n == cap) {
				n = compact_unit_ranks(buf.data(), n, k + 1);
				while (n > cap / 2) {
					EXPECT_LT(range.depth, 64u);
					todo.push_back(range.half(1));
					range = range.half(0);
					n = leading_in_range(buf.data(), n, range);
				}
				out.most_left = std::max(out.most_left, todo.size());
				if (!range.contains(r.hash))
					continue;
			}
			buf[n++] = r;
		}
		n = compact_unit_ranks(buf.data(), n, k + 1);
		const std::size_t h = heavy_units(buf.data(), n, k, buf.data());
		if (h == kTiedThreshold) {
			out.result = kTiedThreshold;
			return out;
		}
		heavy->insert(heavy->end(), buf.begin(), buf.begin() + h);
	}
	out.result = heavy->size();
	return out;
}

// rows of `units` units of 1..max_rows rows each (hash: a random 64-bit value, some with equal high
// bits), ranks random over rank_span values (small spans give ties)
std::vector<UnitRank>
make_table(std::mt19937_64 &rng, std::size_t units, std::size_t max_rows, std::uint64_t rank_span)
{
	std::vector<UnitRank> rows;
	for (std::size_t u = 0; u < units; u++) {
		std::uint64_t hash = rng() | 1;
		if (u % 7 == 0 && !rows.empty())
			hash = (rows.back().hash & ~std::uint64_t{0xffff}) | ((rng() & 0xfffe) | 1); // a near neighbour
		const std::size_t n = 1 + rng() % max_rows;
		for (std::size_t i = 0; i < n; i++)
			rows.push_back({hash, static_cast<std::int64_t>(rank_span ? rng() % rank_span : rng())});
	}
	std::shuffle(rows.begin(), rows.end(), rng);
	return rows;
}

TEST(UnitRankCompact, KeepsTheSmallestRanksOfEachUnit)
{
	std::vector<UnitRank> rows{{5, 9}, {3, 1}, {5, 2}, {5, 7}, {3, 1}, {5, 2}, {9, -4}};
	const std::size_t n = compact_unit_ranks(rows.data(), rows.size(), 2);
	ASSERT_EQ(n, 5u);
	const std::vector<UnitRank> want{{3, 1}, {3, 1}, {5, 2}, {5, 2}, {9, -4}};
	for (std::size_t i = 0; i < n; i++) {
		EXPECT_EQ(rows[i].hash, want[i].hash) << i;
		EXPECT_EQ(rows[i].rank, want[i].rank) << i;
	}
	std::vector<std::int64_t> ranks{4, -1, 8, 2, 2};
	EXPECT_EQ(compact_ranks(ranks.data(), ranks.size(), 3), 3u);
	EXPECT_EQ(ranks[0], -1);
	EXPECT_EQ(ranks[1], 2);
	EXPECT_EQ(ranks[2], 2);
	EXPECT_EQ(compact_ranks(ranks.data(), 2, 3), 2u);
}

TEST(UnitRankCompact, CommutesWithAppending)
{
	std::mt19937_64 rng(11);
	for (int trial = 0; trial < 50; trial++) {
		const std::size_t keep = 1 + trial % 5;
		std::vector<UnitRank> all = make_table(rng, 40, 12, trial % 2 ? 30 : 0);
		std::vector<UnitRank> once = all;
		once.resize(compact_unit_ranks(once.data(), once.size(), keep));
		std::vector<UnitRank> twice(all.begin(), all.begin() + all.size() / 2);
		twice.resize(compact_unit_ranks(twice.data(), twice.size(), keep));
		twice.insert(twice.end(), all.begin() + all.size() / 2, all.end());
		twice.resize(compact_unit_ranks(twice.data(), twice.size(), keep));
		ASSERT_EQ(once.size(), twice.size());
		for (std::size_t i = 0; i < once.size(); i++) {
			EXPECT_EQ(once[i].hash, twice[i].hash);
			EXPECT_EQ(once[i].rank, twice[i].rank);
		}
	}
}

TEST(UnitRankCompact, HeavyUnitsAndTies)
{
	std::vector<UnitRank> rows{{1, 1}, {1, 2}, {1, 3}, {4, 5}, {4, 6}, {8, 0}};
	std::vector<UnitRank> out(rows.size());
	ASSERT_EQ(heavy_units(rows.data(), rows.size(), 1, out.data()), 2u); // k = 1 (compacted to 2 each)
	EXPECT_EQ(out[0].hash, 1u);
	EXPECT_EQ(out[0].rank, 1);
	EXPECT_EQ(out[1].hash, 4u);
	EXPECT_EQ(out[1].rank, 5);
	std::vector<UnitRank> tied{{1, 1}, {1, 1}};
	EXPECT_EQ(heavy_units(tied.data(), tied.size(), 1, tied.data()), kTiedThreshold);
	EXPECT_EQ(heavy_units(tied.data(), tied.size(), 2, tied.data()), 0u); // two rows: light at k = 2
}

TEST(UnitRankCompact, RangesAndHalves)
{
	const HashRange all{0, 0};
	EXPECT_TRUE(all.contains(0) && all.contains(~std::uint64_t{0}));
	const HashRange lo = all.half(0), hi = all.half(1);
	EXPECT_TRUE(lo.contains(0) && lo.contains((std::uint64_t{1} << 63) - 1));
	EXPECT_FALSE(lo.contains(std::uint64_t{1} << 63));
	EXPECT_TRUE(hi.contains(std::uint64_t{1} << 63) && hi.contains(~std::uint64_t{0}));
	HashRange deep = all;
	for (int i = 0; i < 64; i++)
		deep = deep.half(static_cast<unsigned>((0xabcd123400050007ULL >> (63 - i)) & 1));
	EXPECT_EQ(deep.depth, 64u);
	EXPECT_TRUE(deep.contains(0xabcd123400050007ULL));
	EXPECT_FALSE(deep.contains(0xabcd123400050006ULL));
	// sorted entries of `hi`: those of its lower half lead
	const HashRange q = hi.half(0);
	std::vector<UnitRank> rows{{std::uint64_t{1} << 63, 1}, {(std::uint64_t{1} << 63) + 5, 2}, {std::uint64_t{3} << 62, 3},
	                           {~std::uint64_t{0}, 4}};
	EXPECT_EQ(leading_in_range(rows.data(), rows.size(), q), 2u);
	EXPECT_EQ(leading_in_range(rows.data(), 2, q), 2u);
	EXPECT_EQ(leading_in_range(rows.data() + 2, 2, q), 0u);
	EXPECT_EQ(leading_in_range(rows.data(), 0, q), 0u);
}

// The bounded build against the one-sort build: same heavy units, thresholds and order (hence the
// same open-addressing table), and the same tie refusal, over work areas from 2(k + 1) entries up;
// every pass finishes a range, so the passes are about the rows over half the work area.
TEST(UnitRankCompact, PassesGiveTheOneSortProfile)
{
	std::mt19937_64 rng(2026);
	std::size_t multi = 0, tied = 0;
	for (int trial = 0; trial < 120; trial++) {
		const std::size_t k = 1 + trial % 6;
		const std::size_t units = 20 + rng() % 400;
		const std::vector<UnitRank> table = make_table(rng, units, 3 * k + 2, trial % 5 == 0 ? 5000 : 0);
		std::vector<UnitRank> want, got;
		const std::size_t ref = reference(table, k, &want);
		for (std::size_t cap : {table.size() + 1, 2 * (k + 1), 2 * (k + 1) + 8, std::size_t{64}, std::size_t{400}}) {
			const Passes p = bounded(table, k, cap, &got);
			ASSERT_EQ(p.result, ref) << trial << " cap " << cap;
			EXPECT_LE(p.most_left, 64u);
			multi += p.passes > 1;
			tied += ref == kTiedThreshold;
			if (ref == kTiedThreshold)
				continue;
			ASSERT_EQ(got.size(), want.size());
			for (std::size_t i = 0; i < want.size(); i++) {
				EXPECT_EQ(got[i].hash, want[i].hash) << trial;
				EXPECT_EQ(got[i].rank, want[i].rank) << trial;
			}
		}
	}
	EXPECT_GT(multi, 100u); // (the small buffers did split the hash space)
	EXPECT_GT(tied, 0u);    // (and some tables tie at a threshold)
}

} // namespace
} // namespace dxpriv
