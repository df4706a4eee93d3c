// Uniform random sources: a fork-aware CSPRNG for production and a seeded stream for tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>

namespace dxpriv {

// Source of uniformly random bits. Not thread-safe; one per backend.
class RandomSource {
public:
	virtual ~RandomSource() = default;
	virtual std::uint64_t next_u64() = 0;
	// Uniform integer in [0, n) by rejection (no modulo bias). Requires n >= 1.
	std::uint64_t uniform_below(std::uint64_t n);
	// Uniform integer in [0, n) for 128-bit n. Requires n >= 1.
	unsigned __int128 uniform_below(unsigned __int128 n);
};

// Kernel CSPRNG (getrandom(2)) behind a small buffer. Lazily filled on first use and discarded
// after a fork() (a pthread_atfork child handler counts forks, so a state inherited through fork()
// is never reused; no getpid(2) system call per word).
class SystemRandom final : public RandomSource {
public:
	std::uint64_t next_u64() override;

private:
	void refill();
	static constexpr std::size_t kWords = 64;
	std::uint64_t buffer_[kWords];
	std::size_t next_ = kWords;
	unsigned long fork_generation_ = 0; // the process' fork count when the buffer was filled
};

// Deterministic stream for tests and the superuser-only test seed GUC (std::mt19937_64, whose
// output is fixed by the C++ standard). Never used unless a seed is set explicitly.
class SeededRandom final : public RandomSource {
public:
	explicit SeededRandom(std::uint64_t seed) : engine_(seed) {}
	std::uint64_t next_u64() override { return engine_(); }

private:
	std::mt19937_64 engine_;
};

} // namespace dxpriv
