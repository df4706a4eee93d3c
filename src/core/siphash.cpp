// SipHash-2-4 (reference algorithm, little-endian words) for the privacy unit's row ranking.
#include "core/siphash.h"

#include <algorithm>
#include <cstring>

namespace dxpriv {

namespace {

inline std::uint64_t
rotl(std::uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

inline std::uint64_t
load_le64(const unsigned char *p)
{
	std::uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

// One SipRound on the state.
inline void
sip_round(std::uint64_t &v0, std::uint64_t &v1, std::uint64_t &v2, std::uint64_t &v3)
{
	v0 += v1;
	v1 = rotl(v1, 13);
	v1 ^= v0;
	v0 = rotl(v0, 32);
	v2 += v3;
	v3 = rotl(v3, 16);
	v3 ^= v2;
	v0 += v3;
	v3 = rotl(v3, 21);
	v3 ^= v0;
	v2 += v1;
	v1 = rotl(v1, 17);
	v1 ^= v2;
	v2 = rotl(v2, 32);
}

// Compresses one 8-byte message word (2 rounds).
inline void
compress(std::uint64_t &v0, std::uint64_t &v1, std::uint64_t &v2, std::uint64_t &v3, std::uint64_t m)
{
	v3 ^= m;
	sip_round(v0, v1, v2, v3);
	sip_round(v0, v1, v2, v3);
	v0 ^= m;
}

} // namespace

// Initialises the state from the key (the constants spell "somepseudorandomlygeneratedbytes").
SipHash24::SipHash24(const unsigned char key[16]) noexcept
{
	const std::uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);
	v0_ = 0x736f6d6570736575ULL ^ k0;
	v1_ = 0x646f72616e646f6dULL ^ k1;
	v2_ = 0x6c7967656e657261ULL ^ k0;
	v3_ = 0x7465646279746573ULL ^ k1;
}

// Appends bytes, compressing every full 8-byte word (whole words straight from the input once the
// buffered tail is empty: a long message, e.g. a sealed profile's MAC, is not copied word by word).
void
SipHash24::update(const void *data, std::size_t len) noexcept
{
	const auto *p = static_cast<const unsigned char *>(data);
	total_ += len;
	while (len > 0) {
		if (tail_len_ == 0) {
			for (; len >= 8; p += 8, len -= 8)
				compress(v0_, v1_, v2_, v3_, load_le64(p));
			if (len == 0)
				break;
		}
		const std::size_t take = std::min<std::size_t>(8 - tail_len_, len);
		std::memcpy(tail_ + tail_len_, p, take);
		tail_len_ += take;
		p += take;
		len -= take;
		if (tail_len_ == 8) {
			compress(v0_, v1_, v2_, v3_, load_le64(tail_));
			tail_len_ = 0;
		}
	}
}

// Final word (remaining bytes and the length byte), then 4 finalisation rounds.
std::uint64_t
SipHash24::finish() const noexcept
{
	std::uint64_t v0 = v0_, v1 = v1_, v2 = v2_, v3 = v3_;
	std::uint64_t b = (total_ & 0xff) << 56;
	for (std::size_t i = 0; i < tail_len_; i++)
		b |= static_cast<std::uint64_t>(tail_[i]) << (8 * i);
	compress(v0, v1, v2, v3, b);
	v2 ^= 0xff;
	for (int r = 0; r < 4; r++)
		sip_round(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

// See siphash.h.
std::uint64_t
siphash24(const unsigned char key[16], const void *data, std::size_t len) noexcept
{
	// the algorithm of SipHash24 without the incremental buffer (one call per ranked row)
	const std::uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);
	std::uint64_t v0 = 0x736f6d6570736575ULL ^ k0, v1 = 0x646f72616e646f6dULL ^ k1;
	std::uint64_t v2 = 0x6c7967656e657261ULL ^ k0, v3 = 0x7465646279746573ULL ^ k1;
	const auto *p = static_cast<const unsigned char *>(data);
	std::size_t left = len;
	for (; left >= 8; p += 8, left -= 8)
		compress(v0, v1, v2, v3, load_le64(p));
	std::uint64_t b = (static_cast<std::uint64_t>(len) & 0xff) << 56;
	for (std::size_t i = 0; i < left; i++)
		b |= static_cast<std::uint64_t>(p[i]) << (8 * i);
	compress(v0, v1, v2, v3, b);
	v2 ^= 0xff;
	for (int r = 0; r < 4; r++)
		sip_round(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

// See siphash.h: the message bytes as siphash24 reads them (memory order, little-endian words).
SipKeyStream::SipKeyStream(const unsigned char key[16], std::uint64_t nonce) noexcept
{
	const std::uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);
	v0_ = 0x736f6d6570736575ULL ^ k0;
	v1_ = 0x646f72616e646f6dULL ^ k1;
	v2_ = 0x6c7967656e657261ULL ^ k0;
	v3_ = 0x7465646279746573ULL ^ k1;
	unsigned char word[8];
	std::memcpy(word, &nonce, 8);
	compress(v0_, v1_, v2_, v3_, load_le64(word));
}

// See siphash.h.
std::uint64_t
SipKeyStream::block(std::uint64_t i) const noexcept
{
	unsigned char word[8];
	std::memcpy(word, &i, 8);
	std::uint64_t v0 = v0_, v1 = v1_, v2 = v2_, v3 = v3_;
	compress(v0, v1, v2, v3, load_le64(word));
	compress(v0, v1, v2, v3, std::uint64_t{16} << 56);
	v2 ^= 0xff;
	for (int r = 0; r < 4; r++)
		sip_round(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

// See siphash.h.
SipRowRank::SipRowRank(const unsigned char key[16]) noexcept
{
	const std::uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);
	k0_ = 0x736f6d6570736575ULL ^ k0;
	k1_ = 0x646f72616e646f6dULL ^ k1;
	k2_ = 0x6c7967656e657261ULL ^ k0;
	k3_ = 0x7465646279746573ULL ^ k1;
	w0_ = w1_ = w2_ = w3_ = 0;
}

// See siphash.h: the message bytes as siphash24 reads them (memory order, little-endian words).
std::uint64_t
SipRowRank::rank(std::uint32_t table, std::uint32_t block, std::uint16_t offset) noexcept
{
	if (!valid_ || table != table_ || block != block_) {
		unsigned char word[8];
		std::memcpy(word, &table, 4);
		std::memcpy(word + 4, &block, 4);
		w0_ = k0_;
		w1_ = k1_;
		w2_ = k2_;
		w3_ = k3_;
		compress(w0_, w1_, w2_, w3_, load_le64(word));
		table_ = table;
		block_ = block;
		valid_ = true;
	}
	unsigned char tail[2];
	std::memcpy(tail, &offset, 2);
	const std::uint64_t b = (std::uint64_t{10} << 56) | (static_cast<std::uint64_t>(tail[1]) << 8) | tail[0];
	std::uint64_t v0 = w0_, v1 = w1_, v2 = w2_, v3 = w3_;
	compress(v0, v1, v2, v3, b);
	v2 ^= 0xff;
	for (int r = 0; r < 4; r++)
		sip_round(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

} // namespace dxpriv
