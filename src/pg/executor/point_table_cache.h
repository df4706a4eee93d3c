// Content-addressed per-point tables for distributed releases (planner/distributed.h): a table too
// large to repeat in every shard's task query is stored once on each worker under its SHA-256.
#pragma once

#include <string>

extern "C" {
#include "postgres.h"
}

namespace dxpriv::pg {

// Tables at least this large (bytes) travel through the cache instead of inline.
constexpr int kShipThreshold = 8192;

// The SHA-256 of bytes, as a bytea in the current memory context.
bytea *sha256_of(const char *data, size_t len);

// The table stored under digest in dx._point_table_cache (this node), checked against its digest;
// errors (XX000 with a hint) when it is missing or does not match.
bytea *cached_point_table(bytea *digest);

// Stores the table on every Citus worker (run_command_on_workers, as the current user) unless this
// session has already stored it; errors when a worker refuses it.
void ship_point_table(bytea *digest, bytea *table);

} // namespace dxpriv::pg
