// The state one Citus split carries: tables seen, releases placed, large tables shipped by digest.
#include "pg/planner/distributed_context.h"

#include "pg/executor/point_table_cache.h"
#include "pg/node_build.h"

#include "core/linear_query.h"

extern "C" {
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_proc.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/fmgroids.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

#include <limits>
#include <map>
#include <optional>
#include <vector>
#include <set>
#include <string>

namespace dxpriv::pg::dist {

const CitusTable &
table_of(SplitContext &c, Oid relid)
{
	auto it = c.tables.find(relid);
	if (it == c.tables.end())
		it = c.tables.emplace(relid, citus_table(*c.ext, relid)).first;
	return it->second;
}

// Mutator of a partial aggregate's arguments: a per-point table of kShipThreshold bytes or more
// is replaced by its SHA-256 (dx._weigh_cached), the table travelling once per worker instead of in
// every shard's task query.
Node *
by_digest_mutator(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	auto *c = static_cast<SplitContext *>(ctx);
	if (IsA(node, FuncExpr) &&
	    (castNode(FuncExpr, node)->funcid == c->ext->weigh || castNode(FuncExpr, node)->funcid == c->ext->weigh_int)) {
		FuncExpr *f = castNode(FuncExpr, node);
		Node *t = static_cast<Node *>(linitial(f->args));
		if (IsA(t, Const) && !castNode(Const, t)->constisnull) {
			bytea *table = DatumGetByteaPP(castNode(Const, t)->constvalue);
			if (VARSIZE_ANY_EXHDR(table) >= kShipThreshold) {
				bytea *digest = sha256_of(VARDATA_ANY(table), VARSIZE_ANY_EXHDR(table));
				Const *d = makeConst(BYTEAOID, -1, InvalidOid, -1, PointerGetDatum(digest), false, false);
				FuncExpr *cached = copy_node(f);
				cached->funcid = f->funcid == c->ext->weigh ? c->ext->weigh_cached : c->ext->weigh_int_cached;
				linitial(cached->args) = d;
				c->shipments = lappend(c->shipments, makeFuncExpr(c->ext->store_point_table, BOOLOID,
				                                                  list_make2(copy_node(d), copy_node(t)), InvalidOid,
				                                                  InvalidOid, COERCE_EXPLICIT_CALL));
				return (Node *) cached;
			}
		}
	}
	return expression_tree_mutator(node, reinterpret_cast<Node *(*) ()>(by_digest_mutator), ctx);
}

} // namespace dxpriv::pg::dist
