// The state one Citus split carries through the query tree (distributed.cpp and its stages).
#pragma once

#include "pg/metadata/extension_objects.h"
#include "pg/metadata/citus_tables.h"

extern "C" {
#include "nodes/primnodes.h"
}

#include <map>
#include <set>

namespace dxpriv::pg::dist {

struct SplitContext {
	const ExtensionObjects *ext;
	List *releases = NIL;
	List *shipments = NIL; // dx._store_point_table(digest, table) markers, one per large table
	List *stage_tables = NIL; // the tables of grouped sums read as one Citus stage (distributed_stage.h)
	std::map<Oid, CitusTable> tables;
	std::set<const FuncExpr *> every_row; // releases whose weight is never NULL: count(*) counts their rows
	bool single_level = false; // the statement is one query level on the Citus table (shard pruning)
	bool single_node = false;  // a table Citus answers on one node (reference, single-shard, one shard)
	Oid remote_single_node = InvalidOid; // such a table without a placement on the coordinator
	int depth = 0;
};

// Citus's view of relid, read once per split.
const CitusTable &table_of(SplitContext &c, Oid relid);

// Mutator of a partial aggregate's arguments (ctx: SplitContext): a per-point table of
// kShipThreshold bytes or more is replaced by its SHA-256 (dx._weigh_cached), the table travelling
// once per worker instead of in every shard's task query; the table is added to c.shipments.
Node *by_digest_mutator(Node *node, void *ctx);

} // namespace dxpriv::pg::dist
