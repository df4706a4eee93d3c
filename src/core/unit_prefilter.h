// A blocked Bloom filter over 64-bit unit hashes: "surely not a heavy unit" in one word read.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dxpriv {

// The prefilter in front of a unit profile's table of heavy units (the units with more than k rows).
// A set of 64-bit hashes as `words` 64-bit words (a power of two): a hash sets 3 bits of one word,
// chosen by bits of the hash disjoint from those that choose the word. maybe(h) is true for every
// added hash (no false negative, whatever the hashes: GoogleTest UnitPrefilter.NoFalseNegative) and
// for a fraction of the others (about 3% at 8 bits per hash); a caller answers "light unit"
// only when maybe() is false, and otherwise looks the hash up exactly, so the filter changes the
// cost of a decision, never the decision. Not keyed: values chosen to collide in the filter only
// send their rows to the exact lookup. A view over caller-owned words (no destructor: may live in
// PostgreSQL memory).
class UnitPrefilter {
public:
	// Largest filter: 8192 words (64 kB, within a core's L2).
	static constexpr std::size_t kMaxWords = 8192;

	// Words for `hashes` distinct hashes: the power of two nearest above hashes / 8 (at least 8 bits
	// per hash: 16 kB for 15,000 heavy units, within L1 next to the scan's page), at least 1; 0 (no
	// filter: maybe() always true) when there is no hash, or when even kMaxWords would give fewer
	// than 8 bits per hash (the filter would pass too many hashes to pay for itself).
	static std::size_t words_for(std::size_t hashes) noexcept
	{
		if (hashes == 0 || hashes > kMaxWords * 64 / 8)
			return 0;
		std::size_t w = 1;
		while (w * 8 < hashes && w < kMaxWords)
			w <<= 1;
		return w;
	}

	UnitPrefilter() noexcept = default;
	// words: `count` words (0 or a power of two), zeroed by the caller before the first add().
	UnitPrefilter(std::uint64_t *words, std::size_t count) noexcept
	    : words_(count == 0 ? nullptr : words), mask_(count == 0 ? 0 : count - 1)
	{
	}

	void add(std::uint64_t h) noexcept
	{
		if (words_)
			words_[word(h)] |= bits(h);
	}

	// False only when h was never added.
	bool maybe(std::uint64_t h) const noexcept
	{
		if (!words_)
			return true;
		const std::uint64_t b = bits(h);
		return (words_[word(h)] & b) == b;
	}

	bool active() const noexcept { return words_ != nullptr; }

private:
	// the word: bits 32.. of h (at most 13 bits); the bit positions: bits 20..25, 26..31, 58..63
	std::size_t word(std::uint64_t h) const noexcept { return static_cast<std::size_t>(h >> 32) & mask_; }
	static std::uint64_t bits(std::uint64_t h) noexcept
	{
		return (std::uint64_t{1} << ((h >> 20) & 63)) | (std::uint64_t{1} << ((h >> 26) & 63)) |
		       (std::uint64_t{1} << (h >> 58));
	}

	std::uint64_t *words_ = nullptr;
	std::size_t mask_ = 0;
};

} // namespace dxpriv
