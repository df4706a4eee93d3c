// Uniform random sources: unbiased bounded integers, and the fork-aware getrandom(2) source.
#include "core/random.h"

#include <cerrno>

#include <atomic>

#include <pthread.h>
#include <sys/random.h>
#include <sys/types.h>
#include <unistd.h>

#include "core/error.h"

namespace dxpriv {

namespace {

// Forks of this process since the library was loaded: a child's count differs from its parent's,
// so a buffer filled before fork() is refilled in the child (registered at load, before any fill).
std::atomic<unsigned long> fork_count{1};

void
count_fork()
{
	fork_count.fetch_add(1, std::memory_order_relaxed);
}

const int fork_handler_registered = pthread_atfork(nullptr, nullptr, count_fork);

} // namespace

// Uniform integer in [0, n): accept a 64-bit word only below the largest multiple of n, so every
// residue is equally likely (the rejected band [0, 2^64 mod n) is where modulo would be biased).
std::uint64_t RandomSource::uniform_below(std::uint64_t n)
{
	if (n == 0)
		throw CoreError(ErrorKind::Internal, "uniform_below called with an empty range");
	// 2^64 mod n, computed in 64-bit unsigned arithmetic as (2^64 - n) mod n.
	const std::uint64_t reject_below = (0 - n) % n;
	for (;;) {
		const std::uint64_t word = next_u64();
		if (word >= reject_below)
			return word % n;
	}
}

// Uniform integer in [0, n) for 128-bit n: two 64-bit words form one 128-bit candidate, rejected
// below 2^128 mod n as above. Ranges that fit in 64 bits use the one-word path.
unsigned __int128 RandomSource::uniform_below(unsigned __int128 n)
{
	if (n == 0)
		throw CoreError(ErrorKind::Internal, "uniform_below called with an empty range");
	if (n <= static_cast<unsigned __int128>(UINT64_MAX))
		return uniform_below(static_cast<std::uint64_t>(n));
	const unsigned __int128 reject_below = (0 - n) % n;
	for (;;) {
		const unsigned __int128 high = next_u64();
		const unsigned __int128 word = (high << 64) | next_u64();
		if (word >= reject_below)
			return word % n;
	}
}

// Next kernel-random word; refills (discarding any buffered words) when the buffer is exhausted
// or when the process forked since the last fill.
std::uint64_t SystemRandom::next_u64()
{
	if (fork_count.load(std::memory_order_relaxed) != fork_generation_ || next_ >= kWords)
		refill();
	const std::uint64_t word = buffer_[next_];
	buffer_[next_] = 0; // a consumed word never stays in memory
	++next_;
	return word;
}

// Fill the whole buffer from getrandom(2), retrying on EINTR and on short reads.
void SystemRandom::refill()
{
	unsigned char *bytes = reinterpret_cast<unsigned char *>(buffer_);
	std::size_t filled = 0;
	while (filled < sizeof(buffer_)) {
		const ssize_t got = getrandom(bytes + filled, sizeof(buffer_) - filled, 0);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			throw CoreError(ErrorKind::Internal, "cannot read the system random source");
		}
		filled += static_cast<std::size_t>(got);
	}
	if (fork_handler_registered != 0)
		throw CoreError(ErrorKind::Internal, "cannot watch fork() for the system random source");
	fork_generation_ = fork_count.load(std::memory_order_relaxed);
	next_ = 0;
}

} // namespace dxpriv
