// Parents and ancestors of a relation in pg_inherits (partitioned and inheritance parents alike).
#pragma once

extern "C" {
#include "postgres.h"
}

#include <vector>

namespace dxpriv::pg {

// Direct parents of relid: pg_inherits.inhparent of the rows whose inhrelid is relid, read under
// the catalog snapshot (never cached). Raises a PgError (pg_call) on a PostgreSQL error.
std::vector<Oid> inheritance_parents(Oid relid);

// Every ancestor of relid (parents, their parents, ...), each once, nearest first.
std::vector<Oid> inheritance_ancestors(Oid relid);

} // namespace dxpriv::pg
