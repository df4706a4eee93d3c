// Analyst enforcement: no raw-data path, no statistics side channels, plain aggregates rewritten.
#pragma once

#include "pg/dxpriv.h"

extern "C" {
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"
}

#include <vector>

namespace dxpriv::pg {

// Who is asking and what is protected, loaded once per analysed statement.
struct AnalystContext {
	bool analyst = false;           // the current role is (or inherits) an analyst role
	std::vector<Oid> protected_rels;
	bool is_protected(Oid relid) const;
};
AnalystContext load_analyst_context(const ExtensionObjects &ext);
// Registers the relcache callback that keeps the cached analyst/protected lists fresh.
void install_catalog_cache_invalidation();

// Number of range table entries (at any depth) that read a protected table.
int count_protected_refs(Query *q, const AnalystContext &ac);

// Rejects statistics catalogs, size functions and other side channels in an analyst's query.
void reject_side_channels(Query *q);
// Replaces information_schema.columns/tables by dxpriv's analyst views (declared columns shown).
void substitute_catalog_views(Query *q, const ExtensionObjects &ext);
// Rewrites count(*), count(col), sum(col), avg(col) at the top level of q into dx aggregates at
// the session epsilon (cast back to the built-in result type). Returns how many were rewritten.
int rewrite_plain_aggregates(Query *q, const ExtensionObjects &ext);
// Raises unless every function in expr is a built-in immutable function (analysts' row expressions).
void require_builtin_immutable(Node *expr, const char *where);
// Lets a validated query read its protected tables as their owners (like a view does).
void admit_protected_reads(Query *q, const AnalystContext &ac);

// Executor-level admission (views, rules, policies and functions are expanded by then): raises
// when an analyst's statement reads a protected table that no noisy aggregate of the plan releases.
void enforce_executor_admission(PlannedStmt *stmt);

// True while the analysed statement is an analyst's (row expressions get the stricter checks).
bool analyst_mode();
void set_analyst_mode(bool on);

} // namespace dxpriv::pg
