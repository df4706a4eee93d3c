// The 64-bit finaliser of MurmurHash3 (fmix64): spreads a hash or an integer over all 64 bits.
#pragma once

#include <cstdint>

namespace dxpriv {

// A bijection of the 64-bit words (unkeyed: not a defence against chosen inputs) that turns an
// integer unit's Datum, or a hash opclass's extended hash, into well-spread bits for hash tables.
inline std::uint64_t
mix64(std::uint64_t x) noexcept
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

} // namespace dxpriv
