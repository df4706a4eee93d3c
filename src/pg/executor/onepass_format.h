// The bytes of a serialised one-pass histogram (dx._onepass_serialize): what partial states travel
// as (parallel workers, Citus) and what dx._fold_slices cuts. Two encodings; the writer picks the
// smaller, every reader takes both. All integers in network byte order.
// * version 1, pairs: version, group int4, dense byte, points int8, n int8, then n (point, count)
//   int8 pairs, each point < points and each count > 0;
// * version 2, dense: version, group int4, dense byte (1), points int8, c int8, then c (point, carry)
//   int8 pairs, points strictly ascending and < points, each carry a positive multiple of 65,536;
//   then points uint16, each point's count modulo 65,536 (its count: that plus its carry). A dense
//   histogram of 10^5 points met by most of them takes 200 kB this way against 1.6 MB as pairs.
#pragma once

extern "C" {
#include "postgres.h"
#include "port/pg_bswap.h"
}

#include <cstring>

namespace dxpriv::pg {

constexpr uint8 kOnePassPairsVersion = 1;
constexpr uint8 kOnePassDenseVersion = 2;
constexpr size_t kOnePassHeaderBytes = 1 + 4 + 1 + 8 + 8;
// A dense histogram is never larger (its counters are 2 bytes a point; the planner's are far smaller).
constexpr uint64 kOnePassDenseMaxPoints = uint64(1) << 24;

// A parsed header and where its entries are (inside the bytea it was parsed from).
struct OnePassBytes {
	uint8 version;
	int32 group;
	bool dense;
	uint64 points;
	uint64 npairs;      // version 1: (point, count) pairs; version 2: (point, carry) pairs
	const char *pairs;  // 16 bytes a pair
	const char *counts; // version 2: points uint16
};

// Raises "invalid dxpriv aggregate state" (data corrupted): bytes dxpriv did not write.
[[noreturn]] void onepass_state_corrupted();

// Parses b's header and checks its length, and for version 2 every carry; version 1's pairs are
// checked as for_each_onepass_entry reads them. Raises onepass_state_corrupted on anything else.
OnePassBytes parse_onepass_bytes(bytea *b);

inline int64
onepass_read_int64(const char *p)
{
	uint64 v;
	std::memcpy(&v, p, 8);
	return static_cast<int64>(pg_ntoh64(v));
}

inline uint16
onepass_read_uint16(const char *p)
{
	uint16 v;
	std::memcpy(&v, p, 2);
	return pg_ntoh16(v);
}

// Writers of the same integers (as pq_sendint32/64 write them); each returns the byte after.
inline char *
onepass_put_int32(char *w, int32 v)
{
	const uint32 n = pg_hton32(static_cast<uint32>(v));
	std::memcpy(w, &n, 4);
	return w + 4;
}

inline char *
onepass_put_int64(char *w, int64 v)
{
	const uint64 n = pg_hton64(static_cast<uint64>(v));
	std::memcpy(w, &n, 8);
	return w + 8;
}

// Calls f(point, count) once for every point of the histogram with a count (> 0): version 1 in the
// stored order, version 2 in ascending order.
template <typename F>
void
for_each_onepass_entry(const OnePassBytes &h, F f)
{
	if (h.version == kOnePassPairsVersion) {
		for (uint64 i = 0; i < h.npairs; ++i) {
			const int64 u = onepass_read_int64(h.pairs + 16 * i), count = onepass_read_int64(h.pairs + 16 * i + 8);
			if (u < 0 || static_cast<uint64>(u) >= h.points || count <= 0)
				onepass_state_corrupted();
			f(static_cast<uint64>(u), count);
		}
		return;
	}
	uint64 next = 0; // the next carry's pair (parse_onepass_bytes checked them)
	for (uint64 u = 0; u < h.points; ++u) {
		int64 count = onepass_read_uint16(h.counts + 2 * u);
		if (next < h.npairs && static_cast<uint64>(onepass_read_int64(h.pairs + 16 * next)) == u)
			count += onepass_read_int64(h.pairs + 16 * next++ + 8);
		if (count != 0)
			f(u, count);
	}
}

} // namespace dxpriv::pg
