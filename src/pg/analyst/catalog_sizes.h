// Sizes and protected-row checks of dx's catalog helpers (SECURITY DEFINER functions).
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

namespace dxpriv::pg {

// Calls dx.<helper>(arg) -> boolean, one of the SECURITY DEFINER helpers that read dx's catalog
// (dx._holds_protected_rows, dx._protected_rows_in); a NULL argument is passed as NULL, and a NULL
// answer counts as true (unknown: treated as protected). Defined in catalog_sizes.cpp.
bool dx_helper(const char *helper, Oid arg, bool arg_null);

} // namespace dxpriv::pg
