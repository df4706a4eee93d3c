// Analysts' validated queries: protected references counted, built-in functions, owner-checked reads.
#pragma once

#include "pg/analyst/analyst_context.h"

extern "C" {
#include "nodes/parsenodes.h"
}

namespace dxpriv::pg {

// Number of range table entries (at any depth) that read a protected table (or, without ONLY, a
// table with a protected descendant).
int count_protected_refs(Query *q, const AnalystContext &ac);
// Raises unless every function in expr is a built-in immutable function (analysts' row expressions).
void require_builtin_immutable(Node *expr, const char *where);
// Lets a validated query read its protected tables as their owners (like a view does).
void admit_protected_reads(Query *q, const AnalystContext &ac);

} // namespace dxpriv::pg
