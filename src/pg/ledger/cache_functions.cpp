// SQL-callable functions of the answer cache (dx.clear_cache).
#include "pg/ledger/answer_cache.h"
#include "pg/ledger/open_row_cache.h"
#include "pg/guard.h"

extern "C" {
#include "fmgr.h"
}

using namespace dxpriv::pg;

// dx.clear_cache(regclass): drops stored answers (of one table, or all when NULL); superuser or
// table owner only (checked in SQL).
DX_FUNCTION(dx_clear_cache)
{
	Oid relid = PG_ARGISNULL(0) ? InvalidOid : PG_GETARG_OID(0);
	PG_RETURN_INT32(answer_cache_clear(relid) + open_row_cache_clear(relid));
}
