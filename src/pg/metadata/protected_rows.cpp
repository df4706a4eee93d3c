// The gate to protected rows outside the lookup aggregates (protected_rows.h): privacy units refused.
#include "pg/metadata/protected_rows.h"

#include <string>

#include "pg/guard.h"
#include "pg/metadata/policy.h"

extern "C" {
#include "utils/lsyscache.h"
}

namespace dxpriv::pg {

namespace {

// The owner to read relid as, after the gate; 42P01 when the table is gone.
Oid
checked_owner(Oid relid, const char *entry)
{
	require_row_level_table(relid, entry);
	Oid owner = InvalidOid;
	pg_call([&] { owner = relation_owner(relid); });
	if (!OidIsValid(owner))
		fail(ERRCODE_UNDEFINED_TABLE, std::string("the table read by ") + entry + " no longer exists",
		     "Run the statement again.");
	return owner;
}

} // namespace

// See protected_rows.h.
void
require_row_level_table(Oid relid, const char *entry)
{
	TablePolicy policy;
	if (!load_table_policy(relid, policy) || !policy.unit.present())
		return;
	std::string table;
	pg_call([&] { table = qualified_relation_name(relid); });
	fail(ERRCODE_FEATURE_NOT_SUPPORTED,
	     std::string(entry) + " cannot read table " + table + ": it has a privacy unit (" + policy.unit.column + ", at most " +
	         std::to_string(policy.unit.max_rows) + " rows per unit)",
	     std::string(entry) + " counts every stored row as one record and does not bound a unit's contribution; "
	     "nothing was charged. Query the table with the dx aggregates (dx.count, dx.sum, dx.avg, dx.count_units, "
	     "or plain COUNT/SUM/AVG), which keep at most the declared rows of each " + policy.unit.column + ".");
}

// See protected_rows.h.
bool
row_level_table(Oid relid)
{
	TablePolicy policy;
	return !load_table_policy(relid, policy) || !policy.unit.present();
}

// See protected_rows.h.
ProtectedRowRead::ProtectedRowRead(Oid relid, const char *entry) : spi_(checked_owner(relid, entry)) {}

} // namespace dxpriv::pg
