// How Citus holds a table (pg_dist_partition, pg_dist_shard); no effect without Citus.
#pragma once

#include "pg/metadata/extension_objects.h"

#include <string>

namespace dxpriv::pg {

// How Citus holds a table (pg_dist_partition, pg_dist_shard).
struct CitusTable {
	bool citus = false;
	char method = 0;  // 'h' hash, 'r' range, 'a' append, 'n' none (reference, single-shard, local)
	int64 shards = 0;
	bool on_coordinator = false; // a placement of one of its shards is on the coordinator (group 0)
};

// True when Citus's metadata exists in this database (cached per backend until a pg_class change).
bool citus_installed();
// Citus's view of relid; not a Citus table when Citus is not installed in this database. Runs SQL
// as the extension owner (sealed SPI).
CitusTable citus_table(const ExtensionObjects &ext, Oid relid);
// True when relid is a Citus table (any kind); false when Citus is not installed in this database.
bool citus_distributed_table(Oid relid);
// True for a Citus table that Citus answers on a single node (reference, single-shard or
// schema-based-sharding table, or one shard): its router planner would send the whole statement,
// releases included, to that node, so such statements are planned without it (planner/distributed.h).
bool answered_on_one_node(const CitusTable &t);
// The distribution column's name of a hash-distributed Citus table relid ("" for any other table,
// or without Citus) (citusunit: a unit column that is the distribution column keeps every row of a
// unit in one shard). Runs SQL as the extension owner (sealed SPI).
std::string citus_hash_distribution_column(const ExtensionObjects &ext, Oid relid);

} // namespace dxpriv::pg
