// The 16-byte key that ranks a privacy unit's rows (dx._unit_rank's per-execution key, a unit profile's key).
#pragma once

namespace dxpriv::pg {

// Fills key with 16 bytes: from the kernel CSPRNG, or, under the superuser-only dxpriv.test_seed,
// the 16 bytes after `attempt` earlier keys of a stream derived from the seed alone (the same in the
// leader and every parallel worker, and without consuming the seeded noise stream). attempt 0 is the
// key dx._unit_rank draws, so a unit profile built with it keeps the hash bounding's rows under one
// seed; a later attempt replaces a key whose ranks tied at a threshold.
void draw_rank_key(unsigned char key[16], int attempt = 0);

} // namespace dxpriv::pg
