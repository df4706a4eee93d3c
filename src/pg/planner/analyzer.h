// Parse-analysis stage: the entry points hooks.cpp calls around parse analysis and utility statements.
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
#include "parser/parse_node.h"
}

namespace dxpriv::pg {

// Stage "parse-analysis" (post_parse_analyze_hook, after any earlier hook): finds dx aggregates in
// `query`, refuses misuse and rewrites the releases in place (noise parameters, charge ids). Does
// nothing for dxpriv's own statements (in_internal_query). Raises a PostgreSQL error on refusal.
void analysis_post_parse(ParseState *pstate, Query *query);

// What analysis_enter_utility counted for one utility statement; handed back to
// analysis_leave_utility. Plain data: a PostgreSQL error may longjmp over it.
struct UtilityMarks {
	bool defines = false;       // CREATE VIEW / RULE / atomic SQL function: stores an analysed query
	bool copies = false;        // COPY: its query is analysed inside the utility
	bool copies_out = false; // COPY (<query>) TO STDOUT: answered like the SELECT (issue 24)
	bool plain_explain = false; // EXPLAIN without ANALYZE: its query is analysed again while explained
	bool explain_analyze = false; // EXPLAIN ANALYZE: its query runs (and is charged) under instrumentation
	int analyst_scope = 0;      // enter_analyst_utility's result (analyst_guard.h)
};

// Stage "parse-analysis", utility side (ProcessUtility_hook): refusals of analysts' utility
// statements (may raise), then marks the statement's kind for the analysis of the queries it
// contains. Every successful call must be matched by analysis_leave_utility, also on error
// (hooks.cpp calls it in a PG_FINALLY).
UtilityMarks analysis_enter_utility(Node *stmt);
void analysis_leave_utility(const UtilityMarks &marks);

// True while an EXPLAIN ANALYZE statement is being processed (its query is planned and run).
bool explain_analyze_active();
// True while an EXPLAIN without ANALYZE is being processed (its query is planned, never run).
bool plain_explain_active();

// Forgets the utility nesting counters (end of the top-level transaction). They are zero there on
// every path that went through analysis_leave_utility; this is the backstop.
void analysis_reset();

} // namespace dxpriv::pg
