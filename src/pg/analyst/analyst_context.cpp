// Who is asking and what is protected: the backend cache of analysts and protected tables.
#include "pg/analyst/analyst_context.h"

#include "pg/analyst/refusals.h"
#include "pg/analyst/side_channels.h"

#include "pg/elevated/sealed_scan.h"
#include "pg/metadata/catalog.h"
#include "pg/guard.h"
#include "pg/metadata/extension_objects.h"

extern "C" {
#include "access/sysattr.h"
#include "access/transam.h"
#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/inval.h"
#include "utils/fmgroids.h"
#include "parser/parse_func.h"
#include "parser/parsetree.h"
#include "nodes/plannodes.h"
#include "utils/array.h"
#include "access/htup_details.h"
#include "catalog/dependency.h"
#include "commands/extension.h"
}

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <string>

namespace dxpriv::pg {

namespace {

bool analyst_mode_flag = false;

} // namespace

// Backend cache of the analyst roles and protected tables; dropped when dx.analysts or
// dx.protected_tables is invalidated (the DBA functions send the invalidation) or on any
// whole-relcache reset.
struct CatalogCache {
	bool valid = false;
	Oid analysts_rel = InvalidOid, tables_rel = InvalidOid;
	std::vector<Oid> analysts, protected_rels;
};
CatalogCache catalog_cache;

// Relcache invalidations seen (of any relation): a read of the catalog during which one arrived (at
// a lock it took) is used for its statement but not kept (review7: one for dx.analysts processed
// while the cache was being read cleared the old cache's flag, and the fresh copy was kept).
uint64 relcache_messages = 0;

// Relcache invalidation callback.
void
on_relcache_invalidation(Datum, Oid relid)
{
	++relcache_messages;
	if (!OidIsValid(relid) || relid == catalog_cache.analysts_rel || relid == catalog_cache.tables_rel)
		catalog_cache.valid = false;
}

// Raises when an analyst role holds the privileges of a predefined role that reads or writes
// around dxpriv: the server's files (data files, the log with auto_explain plans), programs run as
// the server, and every table's rows (other analysts' ledger rows, dxpriv's catalog and budgets).
static void
refuse_bypass_roles(Oid who)
{
	static const struct {
		Oid role;
		const char *name;
	} bypass[] = {{ROLE_PG_READ_SERVER_FILES, "pg_read_server_files"},
	              {ROLE_PG_WRITE_SERVER_FILES, "pg_write_server_files"},
	              {ROLE_PG_EXECUTE_SERVER_PROGRAM, "pg_execute_server_program"},
	              {ROLE_PG_READ_ALL_DATA, "pg_read_all_data"},
	              {ROLE_PG_WRITE_ALL_DATA, "pg_write_all_data"}};
	for (const auto &b : bypass)
		if (has_privs_of_role(who, b.role)) {
			const char *name = GetUserNameFromId(who, true);
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
			     std::string("role \"") + (name ? name : "?") + "\" of an analyst's statement has the privileges of " + b.name,
			     std::string(b.name) + " reads or writes around dxpriv (data files, the server log, every table's "
			     "rows, dxpriv's catalog); REVOKE " + b.name + " FROM the analyst, or dx.remove_analyst.");
		}
}

// See analyst_guard.h.
AnalystContext
load_analyst_context(const ExtensionObjects &ext)
{
	// pg_upgrade's restore (binary-upgrade mode: the server admits only pg_upgrade's superuser
	// connections, on its own socket) creates dx's tables one at a time, so they cannot be read
	// yet; no analyst statement runs in that mode.
	if (IsBinaryUpgrade)
		return AnalystContext{};
	if (!catalog_cache.valid) {
		CatalogCache fresh;
		fresh.analysts_rel = relation_oid("dx", "analysts");
		fresh.tables_rel = relation_oid("dx", "protected_tables");
		// read in C (elevated/sealed_scan.h), not by two SPI statements: a new session's first
		// statement paid about 0.6 ms for those (newsess)
		if (!OidIsValid(fresh.analysts_rel) || !OidIsValid(fresh.tables_rel))
			fail(ERRCODE_UNDEFINED_TABLE, "dxpriv's catalog tables dx.analysts and dx.protected_tables are missing",
			     "Run ALTER EXTENSION dxpriv UPDATE, or DROP and CREATE EXTENSION dxpriv.");
		List *analysts = NIL, *tables = NIL;
		const uint64 seen = relcache_messages;
		pg_call([&] {
			analysts = dx_catalog_oids(fresh.analysts_rel, "role");
			tables = dx_catalog_oids(fresh.tables_rel, "relid");
		});
		ListCell *lc;
		foreach (lc, analysts)
			fresh.analysts.push_back(lfirst_oid(lc));
		foreach (lc, tables)
			fresh.protected_rels.push_back(lfirst_oid(lc));
		fresh.valid = relcache_messages == seen; // (else read again by the next statement)
		catalog_cache = fresh;
	}
	AnalystContext ac;
	ac.protected_rels = catalog_cache.protected_rels;
	// The current role and the session's login role both count: SET ROLE to a group that holds
	// privileges, or a SECURITY DEFINER function, does not shed the analyst restrictions.
	for (Oid who : {GetUserId(), GetSessionUserId()})
		if (!pg_value([&] { return superuser_arg(who); }))
			for (Oid a : catalog_cache.analysts)
				if (pg_value([&] { return has_privs_of_role(who, a); }))
					ac.analyst = true;
	note_analyst_session(ac.analyst);
	if (ac.analyst) {
		refuse_client_auto_explain();
		// both roles: SET ROLE from an analyst's session to a role holding one does not help either
		for (Oid who : {GetUserId(), GetSessionUserId()})
			if (!pg_value([&] { return superuser_arg(who); }))
				refuse_bypass_roles(who);
	}
	return ac;
}

// See analyst_guard.h.
void
install_catalog_cache_invalidation()
{
	CacheRegisterRelcacheCallback(on_relcache_invalidation, (Datum) 0);
}

// See analyst_guard.h.
std::vector<Oid>
analyst_roles(const ExtensionObjects &ext)
{
	(void) load_analyst_context(ext); // refreshes the cache
	return catalog_cache.analysts;
}

// See analyst_guard.h.
bool
analyst_mode()
{
	return analyst_mode_flag;
}

void
set_analyst_mode(bool on)
{
	analyst_mode_flag = on;
}

} // namespace dxpriv::pg
