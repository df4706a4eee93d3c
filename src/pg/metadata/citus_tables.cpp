// How Citus holds a table: its metadata read through the sealed SPI path (citus_tables.h).
#include "pg/metadata/citus_tables.h"

#include "pg/guard.h"
#include "pg/metadata/catalog.h"
#include "pg/metadata/extension_objects.h"

extern "C" {
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

#include <string>

namespace dxpriv::pg {

// Whether pg_catalog.pg_dist_partition exists, as last looked up: 1, 0, or -1 when unknown. Any
// pg_class change this backend sees (CREATE or DROP EXTENSION citus creates or drops that relation,
// in this session at its next CommandCounterIncrement, in others at their next invalidation
// processing) clears it, so the next call looks it up again; a lookup during which an invalidation
// arrived is not kept.
static int citus_presence = -1;
static bool citus_presence_callback = false;
static uint64 citus_presence_invalidations = 0;

static void
forget_citus_presence(Datum, int, uint32)
{
	citus_presence_invalidations++;
	citus_presence = -1;
}

// True when Citus's metadata exists in this database (a syscache lookup once per pg_class change).
bool
citus_installed()
{
	if (citus_presence >= 0)
		return citus_presence == 1;
	if (!citus_presence_callback) {
		CacheRegisterSyscacheCallback(RELNAMENSP, forget_citus_presence, (Datum) 0);
		citus_presence_callback = true;
	}
	uint64 seen = citus_presence_invalidations;
	bool present = OidIsValid(get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE));
	if (seen == citus_presence_invalidations)
		citus_presence = present ? 1 : 0;
	return present;
}

// Citus's view of relid; not a Citus table when Citus is not installed in this database.
CitusTable
citus_table(const ExtensionObjects &ext, Oid relid)
{
	CitusTable t;
	if (!citus_installed())
		return t;
	InternalSpi spi(ext.schema_owner);
	if (spi.exec("SELECT p.partmethod::pg_catalog.text, (SELECT pg_catalog.count(*) FROM pg_catalog.pg_dist_shard s "
	             "WHERE s.logicalrelid OPERATOR(pg_catalog.=) p.logicalrelid), EXISTS (SELECT 1 FROM "
	             "pg_catalog.pg_dist_shard s JOIN pg_catalog.pg_dist_placement pl ON pl.shardid OPERATOR(pg_catalog.=) "
	             "s.shardid WHERE s.logicalrelid OPERATOR(pg_catalog.=) p.logicalrelid AND pl.groupid "
	             "OPERATOR(pg_catalog.=) 0) FROM pg_catalog.pg_dist_partition p "
	             "WHERE p.logicalrelid OPERATOR(pg_catalog.=) $1",
	             {{OIDOID, ObjectIdGetDatum(relid)}}, true) == 0)
		return t;
	t.citus = true;
	t.method = spi.text(0, 0).empty() ? 0 : spi.text(0, 0)[0];
	t.shards = DatumGetInt64(spi.value(0, 1));
	t.on_coordinator = DatumGetBool(spi.value(0, 2));
	return t;
}

// See citus_tables.h.
bool
citus_distributed_table(Oid relid)
{
	const ExtensionObjects *ext = extension_objects();
	return ext && citus_table(*ext, relid).citus;
}

// See citus_tables.h.
bool
answered_on_one_node(const CitusTable &t)
{
	return t.citus && (t.method == 'n' || t.shards < 2);
}

// See citus_tables.h.
std::string
citus_hash_distribution_column(const ExtensionObjects &ext, Oid relid)
{
	if (!citus_installed())
		return "";
	InternalSpi spi(ext.schema_owner);
	if (spi.exec("SELECT pg_catalog.column_to_column_name(p.logicalrelid, p.partkey) FROM pg_catalog.pg_dist_partition p "
	             "WHERE p.logicalrelid OPERATOR(pg_catalog.=) $1 AND p.partmethod OPERATOR(pg_catalog.=) 'h' "
	             "AND p.partkey IS NOT NULL",
	             {{OIDOID, ObjectIdGetDatum(relid)}}, true) == 0)
		return "";
	return spi.text(0, 0);
}

} // namespace dxpriv::pg
