// Wide-integer versions of the exact Bernoulli samplers (CKS 2020, Algorithm 1).
#include "core/big_sampling.h"

#include <cstdint>

#include "core/error.h"
#include "core/samplers.h"

namespace dxpriv {

namespace {

using u128 = unsigned __int128;

// The low 64 bits of a non-negative BigInt.
std::uint64_t low_word(const BigInt &x)
{
	return static_cast<std::uint64_t>(x & BigInt(UINT64_MAX));
}

} // namespace

// Uniform integer in [0, n): ranges below 2^128 use RandomSource's own unbiased draw; wider ranges
// draw exactly bit_length(n) random bits and reject values >= n (acceptance probability > 1/2).
BigInt uniform_below_big(RandomSource &rng, const BigInt &n)
{
	if (n <= 0)
		throw CoreError(ErrorKind::Internal, "uniform_below_big called with an empty range");
	const unsigned bits = static_cast<unsigned>(boost::multiprecision::msb(n)) + 1;
	if (bits <= 128) {
		const u128 range = (static_cast<u128>(low_word(n >> 64)) << 64) | low_word(n);
		const u128 draw = rng.uniform_below(range);
		return (BigInt(static_cast<std::uint64_t>(draw >> 64)) << 64) | BigInt(static_cast<std::uint64_t>(draw));
	}
	const unsigned words = (bits + 63) / 64;
	const unsigned excess = words * 64 - bits;
	for (;;) {
		BigInt candidate = 0;
		for (unsigned i = 0; i < words; ++i)
			candidate = (candidate << 64) | BigInt(rng.next_u64());
		candidate >>= excess; // keep exactly `bits` uniform bits
		if (candidate < n)
			return candidate;
	}
}

// Bernoulli(exp(-gamma)), gamma = num/den: exp(-gamma) = exp(-1)^floor(gamma) * exp(-frac(gamma)).
// The integer part stops at the first failed exp(-1) trial, so a huge gamma costs O(1) expected draws.
// The fractional part r/den in [0,1) uses CKS Algorithm 1: count K while Bernoulli(r/(den*K))
// succeeds; P(K odd) = exp(-r/den).
bool bernoulli_exp_minus_big(RandomSource &rng, const BigInt &num, const BigInt &den)
{
	if (den <= 0 || num < 0)
		throw CoreError(ErrorKind::Internal, "invalid bernoulli parameter");
	BigInt whole, rest;
	boost::multiprecision::divide_qr(num, den, whole, rest);
	for (BigInt i = 0; i < whole; ++i) {
		if (!bernoulli_exp_minus(rng, 1, 1))
			return false;
	}
	std::uint64_t k = 1;
	for (;;) {
		if (!(uniform_below_big(rng, den * k) < rest))
			break;
		++k;
	}
	return (k % 2) == 1;
}

} // namespace dxpriv
