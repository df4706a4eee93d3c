// The backend's random source: kernel CSPRNG by default, a seeded stream only for tests.
#include "pg/executor/noise_source.h"

#include "pg/settings.h"

#include <optional>

namespace dxpriv::pg {

static SystemRandom system_random;                // fork-aware: never reused across fork()
static std::optional<SeededRandom> test_stream;   // only when dxpriv.test_seed >= 0

// Drops the test stream; the next draw re-creates it from the current seed.
void
reset_test_stream()
{
	test_stream.reset();
}

// Returns the source every noisy release draws from.
RandomSource &
backend_random()
{
	if (guc_test_seed < 0)
		return system_random;
	if (!test_stream)
		test_stream.emplace(static_cast<std::uint64_t>(guc_test_seed));
	return *test_stream;
}

} // namespace dxpriv::pg
