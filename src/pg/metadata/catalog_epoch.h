// The catalog epoch: a number that moves at every catalog change this backend may see (per-backend caches' key).
#pragma once

extern "C" {
#include "postgres.h"
}

namespace dxpriv::pg {

// A number that changes whenever this backend processed an invalidation message from the shared
// queue (SharedInvalidMessageCounter), or a relcache, function (PROCOID) or type (TYPEOID)
// invalidation of its own transaction (a catalog change of the current transaction or subtransaction, processed locally at the next
// command, at a rollback of it or at the end of the transaction: SharedInvalidMessageCounter does
// not move for those). Before reading it, this backend accepts the messages already queued, so
// that a backend inside a transaction block, which already holds its locks and so processes no
// message at the next statement, still sees catalog changes committed meanwhile by other sessions.
// A cache of what catalog changes move (members of a tree, triggers, relfilenodes, ancestors) is
// valid while the epoch it was read at is the current one. May ereport: call inside pg_call.
uint64 catalog_epoch();

} // namespace dxpriv::pg
