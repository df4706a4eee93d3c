// Elevated-execution stage: which analysts' distributed statements run as the table owner, and their point tables.
#include "pg/planner/distributed_hooks.h"
#include "pg/statement/statement_context.h"

#include "pg/metadata/citus_tables.h"
#include "pg/planner/distributed_exposure.h"
#include "pg/executor/point_table_cache.h"
#include "pg/guard.h"
#include "pg/plan_walk.h"
#include "pg/progress.h"
#include "pg/elevated/sealed_execution.h"
#include "pg/metadata/extension_objects.h"

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

namespace dxpriv::pg {

namespace {


// Stores the large per-point tables of a distributed statement on the workers (once per session);
// runs after the statement was charged, before Citus starts it.
void
ship_point_tables(PlannedStmt *stmt)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext || !stmt || stmt->commandType != CMD_SELECT || !citus_installed())
		return;
	// only where expose_releases put them (a statement that calls dx._store_point_table itself, as
	// run_command_on_workers does on a worker, ships nothing)
	std::vector<FuncExpr *> found;
	walk_plan_expressions(
	    stmt, [](Node *) {},
	    [&](CustomScan *cs) {
		    ListCell *lc;
		    foreach (lc, cs->custom_exprs)
			    if (IsA(lfirst(lc), FuncExpr) && castNode(FuncExpr, lfirst(lc))->funcid == ext->store_point_table)
				    found.push_back(castNode(FuncExpr, lfirst(lc)));
	    });
	// a shipment of large tables honours a cancel and reports progress between tables (issue 28)
	ReleaseProgress progress("dxpriv Citus shipment");
	const double total = static_cast<double>(found.size());
	for (size_t i = 0; i < found.size(); i++) {
		Const *d = castNode(Const, linitial(found[i]->args));
		Const *t = castNode(Const, lsecond(found[i]->args));
		ship_point_table(pg_value([&] { return DatumGetByteaPP(d->constvalue); }),
		                 pg_value([&] { return DatumGetByteaPP(t->constvalue); }));
		progress.step("per-point tables stored on the workers", static_cast<double>(i + 1), total);
	}
}

} // namespace

// See distributed_hooks.h.
Oid
elevated_start(QueryDesc *qd, int eflags)
{
	Oid owner = InvalidOid;
	statement::forget_owner(qd);
	if (!in_internal_query())
		guarded([&] { owner = distributed_run_as(qd->plannedstmt); });
	if (OidIsValid(owner)) {
		guarded([&] {
			if (worker_settings_propagated()) // SET LOCAL replayed on the workers' connections
				refuse_propagated_settings();
		});
		guarded([&] { pg_call([&] { ExecCheckRTPerms(qd->plannedstmt->rtable, true); }); }); // as the analyst
		statement::set_owner(qd, owner);
	}
	if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY) && !in_internal_query())
		as_owner(owner, [&] { guarded([&] { ship_point_tables(qd->plannedstmt); }); });
	return owner;
}

} // namespace dxpriv::pg
