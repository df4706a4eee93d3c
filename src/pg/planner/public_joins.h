// Joins of one protected table with public tables (README "Joins with public tables"): a query
// `FROM <protected> JOIN <public> ON ...` is a function of the protected row's declared point, so
// the analyzer reads the public tables' referenced columns once (with the caller's privileges),
// evaluates the query on every (point, public row) pair and folds the sums into the per-point
// tables; the executed query reads only the protected table.
#pragma once

#include "pg/metadata/extension_objects.h"
#include "pg/planner/universe_eval.h"

extern "C" {
#include "nodes/parsenodes.h"
}

namespace dxpriv::pg {

// Cap on points x public row combinations (x aggregates) evaluated at analysis.
constexpr double kMaxJoinPairs = 2e7;

// True when q's FROM is more than one plain table.
bool is_join_query(Query *q);
// True when a range table entry of q is LATERAL.
bool has_lateral(Query *q);
// True when a PARAM_EXEC (a public column) is anywhere in node (none may survive the rewrite).
bool any_exec_param(Node *node, void *);

// A join of one protected table with public tables (inner joins, and LEFT JOINs whose nullable
// side is one public table): checks it, reads the public tables' referenced columns once (with the
// caller's privileges) into `out` (unless read_rows is false: a query with bound parameters checked
// at parse), and turns the query into one over the protected table alone, public columns becoming
// PARAM_EXEC parameters (also in GROUP BY keys). Returns false (query untouched) when no protected
// table is joined.
bool take_public_join(Query *q, const ExtensionObjects &ext, PublicRows &out, bool read_rows = true);

// The public rows of the query being rewritten, or nullptr (no join).
const PublicRows *current_public_join();

// Forgets the join being analysed (top-level transaction end: a JoinScope skipped by an error).
void public_join_reset();

// Makes the public rows visible to rewrite_query while it runs.
struct JoinScope {
	explicit JoinScope(const PublicRows *rows);
	~JoinScope();
	JoinScope(const JoinScope &) = delete;
	JoinScope &operator=(const JoinScope &) = delete;
};

} // namespace dxpriv::pg
