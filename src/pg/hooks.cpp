// The pipeline: installs each PostgreSQL hook exactly once and calls dxpriv's stages in order.
//
// Who runs when (top to bottom within one hook; "next" = the hook installed before dxpriv, or
// PostgreSQL's standard function). This order is the one the separate hooks had when each module
// installed its own (it depended on the order of the calls in _PG_init); it is now written here.
//
//  hook                 | order of the stages                                        | why this order
//  ---------------------+------------------------------------------------------------+------------------------------
//  shmem_request        | next; answer cache; unit profiles; open rows; catalog      | sizes only; independent
//                       |   generation; shared memo; ledger queue                    |
//  shmem_startup        | next; the same, in the same order                          | attach after PostgreSQL's own
//  post_parse_analyze   | next; PARSE-ANALYSIS (planner/analyzer.h)                  | rewrite what others analysed
//  ProcessUtility       | catalog generation (a DDL begins); ledger                  | a DDL is counted before it
//                       |   stop_workers_for; sealed_note_utility;                   |   runs; DROP DATABASE must not wait
//                       | analysis_enter_utility; catalog generation hold; next;     |   for our worker; the marks and
//                       |   catalog generation leave, analysis_leave_utility         |   the hold must bracket next
//                       |   (both in PG_FINALLY)                                     |   exactly
//  object_access        | next; catalog generation (an object created, altered or    | C code's catalog writes
//                       |   dropped: as a DDL)                                       |   (lo_create, collations)
//  planner              | PLAN (planner/parameters.h): bind+analyse, Citus split,    | analysis of bound values
//                       |   next (sealed settings), expose releases                  |   precedes planning
//  ExecutorStart        | ADMISSION (analyst plan check); statement::forget_charges; | refuse before paying; pay
//                       | oversized unit profiles refused (executor/unit_profile.h); |   before any row is read;
//                       | CHARGE, then the release log of what it paid (release_log_ |
//                       |   begin, fed by charge_statement's PaidRelease);           |   the ledger layer never
//                       | statement::enter; ELEVATED start (owner, point             |   calls the executor layer;
//                       |   tables), next as owner; REPLAY (a plan answered from the |   ship only what was paid
//                       |   answer cache: scans emptied); statement::leave           |
//  ExecutorRun/Finish   | statement::enter; next as owner (ELEVATED);                | nested statements of a
//                       | statement::leave                                           |   running one are its part
//  ExecutorEnd          | RELEASE (error-bar NOTICE); statement::forget_charges;     | report before the plan is
//                       | ELEVATED end: next as owner                                |   freed
//  emit_log             | analyst log filter; next                                   | hide before others print
//  xact end (one cb)    | END-OF-STATEMENT CLEANUP: every stage's reset (see on_xact)|
//  subxact abort        | statement::reset_subtransaction                            | a failed nested statement
//  (ELEVATED = planner/distributed_hooks.h: the executor runs as the table owner through
//   sealed_call for analysts' distributed releases, unchanged otherwise.)
// Adding a hook or a stage: see doc/development.md ("The pipeline").
#include "pg/hooks.h"

#include "pg/analyst/analyst_guard.h"
#include "pg/analyst/analyst_context.h"
#include "pg/elevated/sealed_execution.h"
#include "pg/executor/release_log.h"
#include "pg/executor/unit_profile.h"
#include "pg/ledger/replay_scan.h"
#include "pg/guard.h"
#include "pg/ledger/answer_cache.h"
#include "pg/ledger/open_row_cache.h"
#include "pg/ledger/charge.h"
#include "pg/ledger/ledger_queue.h"
#include "pg/metadata/catalog_generation.h"
#include "pg/planner/analyzer.h"
#include "pg/planner/distributed_exposure.h"
#include "pg/planner/distributed_hooks.h"
#include "pg/planner/distributed_stage.h"
#include "pg/planner/explain.h"
#include "pg/planner/parameters.h"
#include "pg/planner/public_joins.h"
#include "pg/planner/shared_memo.h"
#include "pg/statement/statement_context.h"

extern "C" {
#include "commands/explain.h"
#include "access/parallel.h"
#include "access/xact.h"
#include "catalog/objectaccess.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "optimizer/planner.h"
#include "parser/analyze.h"
#include "storage/ipc.h"
#include "tcop/utility.h"
#include "utils/elog.h"
}

namespace dxpriv::pg {

namespace {

shmem_request_hook_type prev_shmem_request = nullptr;
shmem_startup_hook_type prev_shmem_startup = nullptr;
post_parse_analyze_hook_type prev_post_parse_analyze = nullptr;
ProcessUtility_hook_type prev_process_utility = nullptr;
planner_hook_type prev_planner = nullptr;
ExecutorStart_hook_type prev_executor_start = nullptr;
ExecutorRun_hook_type prev_executor_run = nullptr;
ExecutorFinish_hook_type prev_executor_finish = nullptr;
ExecutorEnd_hook_type prev_executor_end = nullptr;
emit_log_hook_type prev_emit_log = nullptr;
object_access_hook_type prev_object_access = nullptr;
ExplainOneQuery_hook_type prev_explain_one_query = nullptr; // (Citus's: set only where Citus is loaded)

// (citusunit) dx._unit_keep_shard's analyst check (executor/unit_profile.h): the current role or the
// session's login role is (or inherits) an analyst role; true (refuse) without dxpriv's objects.
bool
caller_is_analyst()
{
	const ExtensionObjects *ext = extension_objects();
	return !ext || load_analyst_context(*ext).analyst;
}

// True for statements of the client's backend that dxpriv admits and charges (not a parallel
// worker, not dxpriv's own SQL, not the ledger worker).
bool
charges_here()
{
	return !IsParallelWorker() && !in_internal_query() && !ledger::am_worker();
}

extern "C" void
dx_shmem_request(void)
{
	if (prev_shmem_request)
		prev_shmem_request();
	answer_cache_request_shmem();
	unit_profile_request_shmem();
	open_row_cache_request_shmem();
	catalog_generation_request_shmem();
	shared_memo_request_shmem();
	ledger::request_shmem();
}

extern "C" void
dx_shmem_startup(void)
{
	if (prev_shmem_startup)
		prev_shmem_startup();
	answer_cache_startup();
	unit_profile_startup();
	open_row_cache_startup();
	catalog_generation_startup();
	shared_memo_startup();
	ledger::startup_shmem();
}

extern "C" void
dx_post_parse_analyze(ParseState *pstate, Query *query, JumbleState *jstate)
{
	if (prev_post_parse_analyze)
		prev_post_parse_analyze(pstate, query, jstate);
	analysis_post_parse(pstate, query); // PARSE-ANALYSIS
}

extern "C" void
dx_process_utility(PlannedStmt *pstmt, const char *query_string, bool read_only_tree, ProcessUtilityContext context,
                   ParamListInfo params, QueryEnvironment *query_env, DestReceiver *dest, QueryCompletion *qc)
{
	Node *stmt = pstmt->utilityStmt;
	catalog_generation_note_utility(stmt); // a DDL transaction begins: no shared analysis until it ends
	ledger::stop_workers_for(stmt);
	sealed_note_utility(stmt);
	const UtilityMarks marks = analysis_enter_utility(stmt);
	// (taken after the stages that may refuse the statement, right before the PG_FINALLY that gives
	// it back: a refusal in between would leave the count held forever)
	const bool held = catalog_generation_hold_utility(); // kept across the statement's own commits
	PG_TRY();
	{
		if (prev_process_utility)
			prev_process_utility(pstmt, query_string, read_only_tree, context, params, query_env, dest, qc);
		else
			standard_ProcessUtility(pstmt, query_string, read_only_tree, context, params, query_env, dest, qc);
	}
	PG_FINALLY();
	{
		catalog_generation_leave_utility(held);
		analysis_leave_utility(marks);
	}
	PG_END_TRY();
}

extern "C" void
dx_object_access(ObjectAccessType access, Oid class_id, Oid object_id, int sub_id, void *arg)
{
	if (prev_object_access)
		prev_object_access(access, class_id, object_id, sub_id, arg);
	catalog_generation_note_object_access(access); // a catalog object changed by C code: as a DDL
}

PlannedStmt *
plan_next(Query *parse, const char *query_string, int cursor_options, ParamListInfo params)
{
	return prev_planner ? prev_planner(parse, query_string, cursor_options, params)
	                    : standard_planner(parse, query_string, cursor_options, params);
}

extern "C" PlannedStmt *
dx_planner(Query *parse, const char *query_string, int cursor_options, ParamListInfo params)
{
	return plan_statement(parse, query_string, cursor_options, params, plan_next); // PLAN
}

// EXPLAIN of a statement whose grouped sums run as one Citus stage: Citus's EXPLAIN of each
// stage's task after the statement's plan (planner/distributed_stage.h). An EXPLAIN that fails
// (EXPLAIN ANALYZE refused) leaves its level in a PG_CATCH: inside a savepoint the transaction goes
// on, and a level left open would keep the stage's EXPLAIN from every later EXPLAIN of it.
extern "C" void
dx_explain_one_query(Query *query, int cursor_options, IntoClause *into, ExplainState *es, const char *query_string,
                     ParamListInfo params, QueryEnvironment *query_env)
{
	dist::explain_stages_begin();
	PG_TRY();
	{
		prev_explain_one_query(query, cursor_options, into, es, query_string, params, query_env);
	}
	PG_CATCH();
	{
		dist::explain_stages_abandon();
		PG_RE_THROW();
	}
	PG_END_TRY();
	guarded([&] { dist::explain_stages_end(es); });
}

extern "C" void
dx_executor_start(QueryDesc *qd, int eflags)
{
	if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY)) // DML on a system catalog: no shared analysis until its end
		catalog_generation_note_executor(qd->plannedstmt);
	if (charges_here())
		guarded([&] { enforce_executor_admission(qd->plannedstmt); }); // ADMISSION
	statement::forget_charges(qd); // a QueryDesc at the address of one that failed earlier
	note_replayed_plan(nullptr, {});
	open_row_cache_forget_note();
	if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY) && charges_here())
		guarded([&] {
			refuse_inner_releases_under_explain_analyze(qd->plannedstmt); // before the charge
			refuse_oversized_unit_profiles(qd->plannedstmt);              // (executor/unit_profile.h) before the charge
			const PaidRelease paid = charge_statement(qd); // CHARGE
			if (paid.logged) // then the release log of what it paid for (or replayed)
				release_log_begin(qd->plannedstmt, paid.aggregates, paid.exponential, paid.reused);
		});
	statement::enter(qd);
	const Oid owner = elevated_start(qd, eflags); // ELEVATED
	as_owner(owner, [&] {
		if (prev_executor_start)
			prev_executor_start(qd, eflags);
		else
			standard_ExecutorStart(qd, eflags);
	});
	guarded([&] { skip_replayed_scans(qd); }); // REPLAY: a plan answered from the cache reads no row
	guarded([&] { open_row_cache_attach(qd); }); // REPLAY/RECORD of an open release's rows
	statement::leave(qd);
}

extern "C" void
dx_executor_run(QueryDesc *qd, ScanDirection direction, uint64 count, bool execute_once)
{
	statement::enter(qd);
	as_owner(statement::owner(qd), [&] {
		if (prev_executor_run)
			prev_executor_run(qd, direction, count, execute_once);
		else
			standard_ExecutorRun(qd, direction, count, execute_once);
	});
	statement::leave(qd);
}

extern "C" void
dx_executor_finish(QueryDesc *qd)
{
	statement::enter(qd);
	as_owner(statement::owner(qd), [&] {
		if (prev_executor_finish)
			prev_executor_finish(qd);
		else
			standard_ExecutorFinish(qd);
	});
	statement::leave(qd);
}

extern "C" void
dx_executor_end(QueryDesc *qd)
{
	release_log_report(qd); // RELEASE
	statement::forget_charges(qd);
	as_owner(statement::take_owner(qd), [&] { // ELEVATED
		if (prev_executor_end)
			prev_executor_end(qd);
		else
			standard_ExecutorEnd(qd);
	});
}

extern "C" void
dx_emit_log(ErrorData *edata)
{
	analyst_filter_log(edata);
	if (prev_emit_log)
		prev_emit_log(edata);
}

// END-OF-STATEMENT CLEANUP: every stage forgets its backend-local state when the top-level
// transaction ends, on commit as on abort (an error skips the stages' own cleanup).
void
on_xact(XactEvent event, void *)
{
	const bool top_end = event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT || event == XACT_EVENT_PREPARE;
	const bool parallel_end = event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT;
	if (!top_end && !parallel_end)
		return;
	statement::reset_transaction(); // also the answer cache's and the release log's per-charge state
	release_log_end_transaction();
	sealed_reset_transaction();
	if (!top_end)
		return;
	statement::reset_owners();
	// analysis globals: set and cleared within one statement's analysis on every path but a
	// longjmp; nothing is being analysed when the top-level transaction ends
	analysis_reset();
	public_join_reset();
	explain_capture_reset();
	dist::explain_stages_reset();
	set_analyst_mode(false);
	set_client_statement_text(false);
	if (!ledger::am_worker()) // the worker commits and aborts inside its own scopes
		internal_scope_reset();
}

// A statement that fails inside a subtransaction never reaches ExecutorEnd: forget what was running.
void
on_subxact(SubXactEvent event, SubTransactionId, SubTransactionId, void *)
{
	if (event == SUBXACT_EVENT_ABORT_SUB) {
		statement::reset_subtransaction();
		release_log_abandon_partitions(); // an open partition's answers held when the statement failed
	}
}

} // namespace

// See hooks.h.
void
install_hooks()
{
	prev_shmem_request = shmem_request_hook;
	shmem_request_hook = dx_shmem_request;
	prev_shmem_startup = shmem_startup_hook;
	shmem_startup_hook = dx_shmem_startup;
	prev_post_parse_analyze = post_parse_analyze_hook;
	post_parse_analyze_hook = dx_post_parse_analyze;
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = dx_process_utility;
	prev_planner = planner_hook;
	planner_hook = dx_planner;
	install_catalog_cache_invalidation(); // a relcache callback, not a hook
	set_unit_shard_analyst_check(&caller_is_analyst); // (citusunit: dx._unit_keep_shard's callers)
	prev_emit_log = emit_log_hook;
	emit_log_hook = dx_emit_log;
	if (ExplainOneQuery_hook) { // Citus's (loaded first): the one-stage reads' EXPLAIN after it
		prev_explain_one_query = ExplainOneQuery_hook;
		ExplainOneQuery_hook = dx_explain_one_query;
	}
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = dx_executor_start;
	prev_executor_run = ExecutorRun_hook;
	ExecutorRun_hook = dx_executor_run;
	prev_executor_finish = ExecutorFinish_hook;
	ExecutorFinish_hook = dx_executor_finish;
	prev_executor_end = ExecutorEnd_hook;
	ExecutorEnd_hook = dx_executor_end;
	catalog_generation_install(); // the end of a DDL transaction (a resource release callback)
	prev_object_access = object_access_hook;
	object_access_hook = dx_object_access;
	RegisterXactCallback(on_xact, nullptr);
	RegisterSubXactCallback(on_subxact, nullptr);
}

} // namespace dxpriv::pg
