// Who is asking and what is protected: analysts, protected tables (backend cache) and the analyst mode.
#pragma once

#include "pg/metadata/extension_objects.h"

extern "C" {
#include "nodes/parsenodes.h"
}

#include <map>
#include <vector>

namespace dxpriv::pg {

// Who is asking and what is protected, loaded once per analysed statement.
//
// Inheritance rule: a partition or inheritance child of a protected table is protected too (rows
// of a child are rows of its parent), with the policy of its nearest protected ancestor, including
// children attached or created after dx.protect_table. A child that is itself protected keeps its
// own policy. See inheritance.cpp.
struct AnalystContext {
	bool analyst = false;           // the current role is (or inherits) an analyst role
	std::vector<Oid> protected_rels;
	// relid itself or one of its ancestors (pg_inherits, recursively) is protected
	bool is_protected(Oid relid) const { return OidIsValid(policy_table(relid)); }
	// relid is listed in dx.protected_tables
	bool directly_protected(Oid relid) const;
	// The protected table whose policy covers relid: relid itself, else its nearest protected
	// ancestor, else InvalidOid.
	Oid policy_table(Oid relid) const;
	// A relation reading relid with its descendants (no ONLY) also reads protected descendants.
	bool has_protected_descendant(Oid relid) const;
};
AnalystContext load_analyst_context(const ExtensionObjects &ext);
// Registers the relcache callback that keeps the cached analyst/protected lists fresh.
void install_catalog_cache_invalidation();
// The analyst roles (dx.analysts), from the backend cache.
std::vector<Oid> analyst_roles(const ExtensionObjects &ext);
// True while the analysed statement is an analyst's (row expressions get the stricter checks).
bool analyst_mode();
void set_analyst_mode(bool on);

} // namespace dxpriv::pg
