// Conditions given as SQL text by a caller (workload predicates of releases, the condition of
// dx.attr_count): parsed as one boolean expression over a protected table's declared columns,
// never run on a stored row (callers evaluate it on declared domain points).
#pragma once

#include "pg/metadata/policy.h"

extern "C" {
#include "nodes/primnodes.h"
}

#include <string>

namespace dxpriv::pg {

// The boolean expression of `text` over relid (Vars of varno 1), parsed without running any hook,
// reading any row or checking privileges: SELECT (<text>)::boolean FROM <relid>, whose shape must
// stay exactly that (the text cannot add a table, a condition, a set operation, a statement).
// Refused, with messages "<label> ..." and `hint`: an empty or over-long text, a syntax or parse
// error (its own SQLSTATE), any other shape or a subquery, aggregate, window or set-returning
// function (22023), a function whose value may change (0A000), a user-defined function or
// operator (42501), a column that is not declared in `policy` or a system column (42501).
Expr *parse_row_condition(Oid relid, const TablePolicy &policy, const std::string &text, const std::string &label,
                          const char *hint);

} // namespace dxpriv::pg
