// Executor hooks that run analysts' distributed statements as the table owner (installed together).
#include "pg/planner/distributed_hooks.h"

#include "pg/metadata/citus_tables.h"
#include "pg/planner/distributed_exposure.h"
#include "pg/executor/point_table_cache.h"
#include "pg/guard.h"
#include "pg/plan_walk.h"
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

ExecutorStart_hook_type prev_start = nullptr;
ExecutorRun_hook_type prev_run = nullptr;
ExecutorFinish_hook_type prev_finish = nullptr;
ExecutorEnd_hook_type prev_end = nullptr;
std::map<const QueryDesc *, Oid> run_as_owner; // set at every ExecutorStart, so never stale

// Runs f as `owner` (when valid) through the sealed path (forced settings, restored afterwards);
// f runs unchanged for statements that are not analysts' distributed releases.
template <class F>
void
as_owner(Oid owner, F &&f)
{
	if (!OidIsValid(owner)) {
		f();
		return;
	}
	sealed_call(owner, f);
}

Oid
owner_for(const QueryDesc *qd)
{
	auto it = run_as_owner.find(qd);
	return it == run_as_owner.end() ? InvalidOid : it->second;
}

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
	for (FuncExpr *f : found) {
		Const *d = castNode(Const, linitial(f->args));
		Const *t = castNode(Const, lsecond(f->args));
		ship_point_table(DatumGetByteaPP(d->constvalue), DatumGetByteaPP(t->constvalue));
	}
}

extern "C" void
dist_executor_start(QueryDesc *qd, int eflags)
{
	Oid owner = InvalidOid;
	run_as_owner.erase(qd);
	if (!in_internal_query())
		guarded([&] { owner = distributed_run_as(qd->plannedstmt); });
	if (OidIsValid(owner)) {
		guarded([&] {
			if (worker_settings_propagated()) // SET LOCAL replayed on the workers' connections
				refuse_propagated_settings();
		});
		guarded([&] { pg_call([&] { ExecCheckRTPerms(qd->plannedstmt->rtable, true); }); }); // as the analyst
		run_as_owner[qd] = owner;
	}
	if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY) && !in_internal_query())
		as_owner(owner, [&] { guarded([&] { ship_point_tables(qd->plannedstmt); }); });
	as_owner(owner, [&] {
		if (prev_start)
			prev_start(qd, eflags);
		else
			standard_ExecutorStart(qd, eflags);
	});
}

extern "C" void
dist_executor_run(QueryDesc *qd, ScanDirection direction, uint64 count, bool execute_once)
{
	as_owner(owner_for(qd), [&] {
		if (prev_run)
			prev_run(qd, direction, count, execute_once);
		else
			standard_ExecutorRun(qd, direction, count, execute_once);
	});
}

extern "C" void
dist_executor_finish(QueryDesc *qd)
{
	as_owner(owner_for(qd), [&] {
		if (prev_finish)
			prev_finish(qd);
		else
			standard_ExecutorFinish(qd);
	});
}

extern "C" void
dist_executor_end(QueryDesc *qd)
{
	const Oid owner = owner_for(qd);
	run_as_owner.erase(qd);
	as_owner(owner, [&] {
		if (prev_end)
			prev_end(qd);
		else
			standard_ExecutorEnd(qd);
	});
}

void
forget_owners(XactEvent event, void *)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT || event == XACT_EVENT_PREPARE)
		run_as_owner.clear();
}

} // namespace

// See distributed.h.
void
install_distributed_hooks()
{
	prev_start = ExecutorStart_hook;
	ExecutorStart_hook = dist_executor_start;
	prev_run = ExecutorRun_hook;
	ExecutorRun_hook = dist_executor_run;
	prev_finish = ExecutorFinish_hook;
	ExecutorFinish_hook = dist_executor_finish;
	prev_end = ExecutorEnd_hook;
	ExecutorEnd_hook = dist_executor_end;
	RegisterXactCallback(forget_owners, nullptr);
}

} // namespace dxpriv::pg
