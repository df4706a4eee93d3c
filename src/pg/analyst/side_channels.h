// Analysts' statistics side channels: the deny list, and catalog views swapped for dx's.
#pragma once

#include "pg/metadata/extension_objects.h"

extern "C" {
#include "nodes/parsenodes.h"
}

namespace dxpriv::pg {

// Rejects statistics catalogs, size functions and other side channels in an analyst's query.
void reject_side_channels(Query *q);
// Replaces information_schema.columns/tables by dxpriv's analyst views (declared columns shown).
void substitute_catalog_views(Query *q, const ExtensionObjects &ext);
// Raises for a function an analyst may not call anywhere (check_functions_in_node callback; ctx non-null
// when walking a plan).
bool check_function_allowed(Oid fn, void *ctx);
// OID of schema.name (a relation), or InvalidOid.
Oid relation_oid(const char *schema, const char *name);

} // namespace dxpriv::pg
