// SipHash-2-4: the keyed hash that ranks the rows of a privacy unit (contribution bounding).
#pragma once

#include <cstddef>
#include <cstdint>

namespace dxpriv {

// Incremental SipHash-2-4 (Aumasson and Bernstein, 2012) with a 128-bit key. dxpriv ranks the rows
// of one privacy unit by this keyed hash of their physical identity (tableoid, ctid) under a key drawn
// afresh for every execution of a statement: a pseudorandom function, so the ranks of a unit's rows
// are independent uniform draws whatever the rows hold (README "Stable contribution bounding"), and
// no one can predict, and so steer, which rows are kept. It lives in the core because PostgreSQL has
// no keyed hash built in (pgcrypto is an optional contrib module; hashtext and friends are unkeyed),
// and it is a pure function of bytes with published test vectors.
class SipHash24 {
public:
	// key: 16 bytes (k0 = bytes 0..7, k1 = bytes 8..15, little-endian, as in the reference code).
	explicit SipHash24(const unsigned char key[16]) noexcept;
	// Appends len bytes to the message.
	void update(const void *data, std::size_t len) noexcept;
	// The 64-bit hash of everything appended so far (the object can keep being updated).
	std::uint64_t finish() const noexcept;

private:
	std::uint64_t v0_, v1_, v2_, v3_;
	unsigned char tail_[8];
	std::size_t tail_len_ = 0;
	std::uint64_t total_ = 0;
};

// One-shot SipHash-2-4 of len bytes.
std::uint64_t siphash24(const unsigned char key[16], const void *data, std::size_t len) noexcept;

} // namespace dxpriv
