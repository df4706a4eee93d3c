// The backend's random source: kernel CSPRNG by default, a seeded stream only for tests.
#pragma once

#include "core/random.h"

namespace dxpriv::pg {

// The backend's random source: the kernel CSPRNG, or the test stream when dxpriv.test_seed is set.
RandomSource &backend_random();
void reset_test_stream();

} // namespace dxpriv::pg
