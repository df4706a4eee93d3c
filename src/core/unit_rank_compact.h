// Bounded collection of the k + 1 smallest ranks of each privacy unit (the unit profile build in passes).
#pragma once

#include <cstddef>
#include <cstdint>

namespace dxpriv {

// One row of a unit profile build: its unit's 64-bit hash and its rank (signed, as dx._unit_rank's
// bigint compares). After a pass the same shape holds a heavy unit and its threshold.
struct UnitRank {
	std::uint64_t hash;
	std::int64_t rank;
};

// Sorts rows[0, n) by (hash, rank) and keeps at the front, for each hash, its `keep` smallest ranks
// (repeats included), in that order; returns how many are kept. Exact for the profile: the kept
// entries of a hash are the `keep` smallest of all its ranks, and compacting again after appending
// more rows gives the `keep` smallest of all of them (compaction commutes with appending), so a
// build that compacts a full buffer and goes on sees, for each unit, whether it has more than
// k = keep - 1 rows, its k-th smallest rank and whether the (k + 1)-th ties with it, as the build
// that sorts every row at once does (GoogleTest UnitRankCompact.*). keep >= 1.
std::size_t compact_unit_ranks(UnitRank *rows, std::size_t n, std::size_t keep) noexcept;

// The same for the ranks of one unit: sorts ranks[0, n) and keeps the `keep` smallest.
std::size_t compact_ranks(std::int64_t *ranks, std::size_t n, std::size_t keep) noexcept;

// Over rows[0, n) as compact_unit_ranks(rows, n, k + 1) left them: writes each unit with more than k
// rows as {hash, its k-th smallest rank} (its threshold) to out, in hash order, and returns how many;
// kTiedThreshold when such a unit's (k + 1)-th smallest rank equals its k-th (its threshold would
// keep k + 1 rows: the build draws another rank key). out may be rows (written behind the reads).
constexpr std::size_t kTiedThreshold = static_cast<std::size_t>(-1);
std::size_t heavy_units(const UnitRank *rows, std::size_t n, std::size_t k, UnitRank *out) noexcept;

// A range of unit hashes: those whose `depth` high bits are `prefix` (HashRange{0, 0}: every hash).
// Plain data (memset and PostgreSQL memory are fine). A range's lower half precedes its upper half in
// hash order, so a build that, when its work area overflows, keeps the lower half of its range and
// leaves the upper half for a later pass (a stack: the last half left is the next range scanned)
// meets the heavy units in the order of one sort of every row.
struct HashRange {
	unsigned depth;
	std::uint64_t prefix;

	bool contains(std::uint64_t h) const noexcept { return depth == 0 || (h >> (64 - depth)) == prefix; }
	// The lower (half 0) or upper (half 1) half; depth < 64.
	HashRange half(unsigned which) const noexcept { return HashRange{depth + 1, (prefix << 1) | which}; }
};

// How many of rows[0, n), sorted by hash (compact_unit_ranks), lead with a hash in `range`, when
// every one of them is in range's parent or in range itself and range is its parent's lower half:
// the entries the build keeps when it narrows its range to that half.
std::size_t leading_in_range(const UnitRank *rows, std::size_t n, HashRange range) noexcept;

} // namespace dxpriv
