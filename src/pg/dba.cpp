// SQL-callable helpers of the DBA interface: column validation and plan invalidation.
#include "pg/dxpriv.h"
#include "pg/guard.h"

extern "C" {
#include "utils/inval.h"
}

using namespace dxpriv::pg;

// dx._validate_column(regtype, jsonb, jsonb): raises unless the declaration is usable.
DX_FUNCTION(dx_validate_column)
{
	Oid type = PG_GETARG_OID(0);
	Jsonb *domain = PG_GETARG_JSONB_P(1);
	Jsonb *metric = PG_GETARG_JSONB_P(2);
	ColumnPolicy col = parse_column_policy(type, -1, domain, metric);
	(void) domain_datums(col.domain, type, -1); // every point must be a valid value of the type
	PG_RETURN_VOID();
}

// dx._invalidate(regclass): cached plans over the table are re-analysed with the new policy.
DX_FUNCTION(dx_invalidate)
{
	Oid relid = PG_GETARG_OID(0);
	pg_call([&] { CacheInvalidateRelcacheByRelid(relid); });
	PG_RETURN_VOID();
}
