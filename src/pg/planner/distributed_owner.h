// Analysts' statements on Citus tables run as the table owner: what they may call and read.
#pragma once

#include "pg/metadata/extension_objects.h"

extern "C" {
#include "nodes/parsenodes.h"
}

namespace dxpriv::pg::dist {

// For an analyst's split statement (before anything is charged): raises unless every function is
// built-in (or dxpriv's), executable by the analyst, not volatile and not one that runs SQL as the
// current user; unless the analyst may read every range table entry; and unless the statement
// reads no table besides the tables its releases (a List of release expressions) read.
void require_owner_safe(Query *split, List *releases, const ExtensionObjects *ext);

} // namespace dxpriv::pg::dist
