// Bounded collection of the k + 1 smallest ranks of each privacy unit (core/unit_rank_compact.h).
#include "core/unit_rank_compact.h"

#include <algorithm>

namespace dxpriv {

std::size_t
compact_unit_ranks(UnitRank *rows, std::size_t n, std::size_t keep) noexcept
{
	std::sort(rows, rows + n, [](const UnitRank &a, const UnitRank &b) {
		return a.hash != b.hash ? a.hash < b.hash : a.rank < b.rank;
	});
	std::size_t out = 0;
	for (std::size_t i = 0; i < n;) {
		std::size_t j = i;
		while (j < n && rows[j].hash == rows[i].hash)
			j++;
		const std::size_t m = std::min(j - i, keep);
		for (std::size_t t = 0; t < m; t++) // (out <= i: never overwrites an entry still to be read)
			rows[out++] = rows[i + t];
		i = j;
	}
	return out;
}

std::size_t
compact_ranks(std::int64_t *ranks, std::size_t n, std::size_t keep) noexcept
{
	if (n <= keep) {
		std::sort(ranks, ranks + n);
		return n;
	}
	std::partial_sort(ranks, ranks + keep, ranks + n);
	return keep;
}

std::size_t
heavy_units(const UnitRank *rows, std::size_t n, std::size_t k, UnitRank *out) noexcept
{
	std::size_t heavy = 0;
	for (std::size_t i = 0; i < n;) {
		std::size_t j = i;
		while (j < n && rows[j].hash == rows[i].hash)
			j++;
		if (j - i > k) {
			if (rows[i + k].rank == rows[i + k - 1].rank)
				return kTiedThreshold;
			const UnitRank h{rows[i].hash, rows[i + k - 1].rank};
			out[heavy++] = h; // (heavy <= i: behind the reads)
		}
		i = j;
	}
	return heavy;
}

std::size_t
leading_in_range(const UnitRank *rows, std::size_t n, HashRange range) noexcept
{
	std::size_t lo = 0, hi = n; // (sorted: the entries in range come first; binary search for the end)
	while (lo < hi) {
		const std::size_t mid = lo + (hi - lo) / 2;
		if (range.contains(rows[mid].hash))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

} // namespace dxpriv
