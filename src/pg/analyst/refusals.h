// Analysts' refusals that name what was refused and what to do instead; utility statements and log filtering.
#pragma once

#include "pg/analyst/analyst_context.h"

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
#include "utils/elog.h"
}

#include <string>

namespace dxpriv::pg {

// The relation's name as written in SQL (quoted only when needed), "<table>" when unknown; for
// the examples of hints.
std::string relation_for_hint(Oid relid);
// Hint for an analyst's refused read of relid: an example aggregate on that table (or on the
// protected table whose policy covers it) over one of its declared columns.
std::string analyst_hint(Oid relid);
// The first protected relation (at any depth) that q reads, or InvalidOid.
Oid first_protected_ref(Query *q, const AnalystContext &ac);
// Raises the refusal for an analyst's statement that reads a protected table but holds no dx
// aggregate after rewriting: names the statement kind, join/LATERAL, the aggregate or the raw read.
[[noreturn]] void refuse_unaggregated_read(Query *q, const AnalystContext &ac);
// Refuses columns used outside aggregates that are not GROUP BY keys (PostgreSQL's functional
// dependency on a primary key lets GROUP BY id show any column of the row) and GROUP BY ().
void check_grouped_references(Query *q);

// Utility statements of analysts: EXPLAIN and statements that store a result (CREATE TABLE AS,
// SELECT INTO, CREATE MATERIALIZED VIEW, also over EXECUTE of a prepared statement) are refused
// when what they plan reads a protected table. Returns the scope to pass to leave_analyst_utility
// (the executor refuses protected reads while such a statement runs, whatever runs it).
int enter_analyst_utility(Node *stmt);
void leave_analyst_utility(int scope);
// The refusal of a utility statement (EXPLAIN, CREATE TABLE AS...) whose query reads relid.
[[noreturn]] void refuse_analyst_utility(Node *stmt, Oid relid);
// Executor side: raises when an analyst's plan reads relid (protected) while an analyst's EXPLAIN or
// result-storing statement runs, or while client_min_messages lets LOG/DEBUG messages through.
void refuse_protected_read_in_utility(Oid relid);
// Remembers whether the session's last analysed or started statement was an analyst's.
void note_analyst_session(bool analyst);
// Keeps LOG and DEBUG messages (auto_explain plans, executor statistics) away from analysts'
// clients whatever client_min_messages says, and auto_explain's plans at any level the log hook
// sees (warning). Stage "log" (emit_log_hook, before any earlier hook); never raises.
void analyst_filter_log(ErrorData *edata);
// Raises for an analyst's statement while auto_explain (loaded by a superuser) is active at a level
// sent to the client that the log hook cannot stop (info, notice; warning when log_min_messages is
// above it).
void refuse_client_auto_explain();

} // namespace dxpriv::pg
