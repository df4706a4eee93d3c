// Executor-side admission of analysts' plans (views, rules, policies and functions expanded).
#pragma once

extern "C" {
#include "postgres.h"
}


extern "C" {
#include "nodes/plannodes.h"
}

namespace dxpriv::pg {

// Executor-level admission (views, rules, policies and functions are expanded by then): raises
// when an analyst's statement reads a protected table that no noisy aggregate of the plan releases.
void enforce_executor_admission(PlannedStmt *stmt);

} // namespace dxpriv::pg
