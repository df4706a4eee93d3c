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

// SipHash-2-4 of the 16-byte messages (nonce, i) for i = 0, 1, ... under one key and nonce (a PRF
// in counter mode: the keystream that encrypts a sealed unit profile): block(i) equals
// siphash24(key, msg, 16) where msg holds the 8 bytes of nonce then the 8 bytes of i as stored in
// memory (GoogleTest SipHash.KeyStreamEqualsGeneric). The state after the key and the nonce is
// computed once, so a block costs 8 SipRounds instead of 10 and no key loading. A plain value type.
class SipKeyStream {
public:
	SipKeyStream(const unsigned char key[16], std::uint64_t nonce) noexcept;
	std::uint64_t block(std::uint64_t i) const noexcept;

private:
	std::uint64_t v0_, v1_, v2_, v3_; // the state after the key and the nonce's word
};

// SipHash-2-4 specialised to the 10-byte row identity that ranks a privacy unit's rows: rank(t, b, o)
// equals siphash24(key, msg, 10) where msg holds the bytes of t (4), b (4) and o (2) as stored in
// memory (GoogleTest SipHash.RowRankEqualsGeneric). The key's initial state is computed once, and the
// state after the first 8-byte word (the table and the block) is kept for the next call: rows of one
// page, read one after another by a scan, pay 6 SipRounds instead of 8 and no key loading. A plain
// value type (no destructor): it may live in PostgreSQL memory.
class SipRowRank {
public:
	explicit SipRowRank(const unsigned char key[16]) noexcept;
	std::uint64_t rank(std::uint32_t table, std::uint32_t block, std::uint16_t offset) noexcept;

private:
	std::uint64_t k0_, k1_, k2_, k3_;  // the state after the key
	std::uint64_t w0_, w1_, w2_, w3_;  // the state after the word (table, block) of the last call
	std::uint32_t table_ = 0, block_ = 0;
	bool valid_ = false;
};

} // namespace dxpriv
