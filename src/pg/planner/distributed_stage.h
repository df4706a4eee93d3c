// A grouped Citus release's native sums read as one Citus stage inside a local statement (citusone).
//
// The split of a GROUP BY on a Citus table (distributed_linear.h, every_group_from_one_state) gathers
// the workers' grouped sums into one state per release with dx._collect on the coordinator. Read from
// a subquery over the table, those sums are a Citus subplan (an intermediate result), and Citus runs
// every statement with a subplan as a coordinated transaction (BEGIN, assign_distributed_transaction_id
// and COMMIT on each worker connection: about 0.1 of native's time, doc/performance.md "citusgrp").
// Here the same sums are read from
//   dx._grouped_partials(<task>, <params>, <shipments>) AS dx_native(<the task's columns>)
// a function scan in a statement that reads no Citus table (so Citus leaves it local), whose
// function runs the task query through the sealed path (executor/grouped_stage.cpp) as one Citus
// stage: <task> is the grouped query the split built, deparsed here with every name qualified under
// the sealed settings; <params> the first release's parameter array (its charge id); <shipments> the
// digest tables its task reads (digest, table, digest, table, ...), stored on the workers by the
// function before it runs the task, as the outer Citus plan's shipment does (distributed_hooks.h).
//
// The call carries kStageLocation (contract/param_consts.h): the analyzer refuses any other call of
// the function, and the function refuses to run unless it is that node of a statement that is
// running and paid the charge of <params>. The table's range table entry, which the statement no
// longer reads itself, is returned to the split and appended to the finished plan
// (attach_stage_tables): its OID in relationOids invalidates the plan on DDL, the executor locks it
// and checks the caller's SELECT privilege on it (as the analyst, distributed_hooks.h), as before.
#pragma once

#include "pg/planner/distributed_context.h"

extern "C" {
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"
}

namespace dxpriv::pg::dist {

// True when the grouped sums `grouped` (one query level reading relid) may be read as one stage:
// dxpriv.citus_grouped_stage on, dx._grouped_partials installed, the level reads the table itself
// (not its rows bounded per privacy unit: planner/unit_source.h) and Citus does not answer the table
// on one node (reference, single-shard, one-shard tables keep the subplan shape and its routing:
// distributed_route.h).
bool one_stage_applies(const Query *grouped, Oid relid, SplitContext &c);

// The function range table entry described above, reading `grouped` with columns `colnames`; adds
// the table's range table entry to c.stage_tables. Raises (nothing charged) when the task cannot be
// deparsed.
RangeTblEntry *one_stage_source(Query *grouped, List *colnames, Const *params, SplitContext &c);

// EXPLAIN of a statement reading grouped sums as one stage (text format): the statement's plan shows
// the function scan and, under VERBOSE, the task's text; explain_stages_begin() before the statement
// is planned makes one_stage_source note each task, and explain_stages_end(es) appends Citus's
// EXPLAIN of each noted task (the task count, one task's query and its plan on a worker, as the
// subplan shape's EXPLAIN showed them), run through the sealed path with the statement's VERBOSE
// and COSTS options, after the statement's own plan. explain_stages_reset() forgets the notes
// (transaction end: an EXPLAIN that failed in between). explain_stages_abandon() leaves the level of
// an EXPLAIN that failed (its caller's PG_CATCH), without running anything.
void explain_stages_begin();
void explain_stages_end(void *explain_state);
void explain_stages_abandon();
void explain_stages_reset();

// After planning: appends each range table entry of `stage_tables` (c.stage_tables) to the plan's
// range table and its OID to relationOids.
void attach_stage_tables(PlannedStmt *stmt, List *stage_tables);

} // namespace dxpriv::pg::dist
