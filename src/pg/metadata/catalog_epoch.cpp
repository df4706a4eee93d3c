// The catalog epoch: shared invalidation messages processed plus this backend's own relcache invalidations.
#include "pg/metadata/catalog_epoch.h"

extern "C" {
#include "storage/sinval.h"
#include "utils/inval.h"
#include "utils/syscache.h"
}

namespace dxpriv::pg {

namespace {

uint64 relcache_invalidations = 0; // relcache invalidations seen by this backend (its own ones too)
uint64 object_invalidations = 0;   // function and type invalidations seen by this backend (its own ones too)
bool epoch_callback_registered = false;

void
count_relcache_invalidation(Datum, Oid)
{
	++relcache_invalidations;
}

void
count_object_invalidation(Datum, int, uint32)
{
	++object_invalidations;
}

} // namespace

// See catalog_epoch.h.
uint64
catalog_epoch()
{
	if (!epoch_callback_registered) {
		CacheRegisterRelcacheCallback(count_relcache_invalidation, (Datum) 0);
		// (ddlhold: CREATE OR REPLACE FUNCTION or ALTER DOMAIN in this transaction sends no relcache
		// invalidation; the analysis memo served the old body's analysis to the next statement of
		// the same transaction)
		CacheRegisterSyscacheCallback(PROCOID, count_object_invalidation, (Datum) 0);
		CacheRegisterSyscacheCallback(TYPEOID, count_object_invalidation, (Datum) 0);
		epoch_callback_registered = true;
	}
	AcceptInvalidationMessages();
	// (all only grow: the sum moves whenever one of them does)
	return SharedInvalidMessageCounter + relcache_invalidations + object_invalidations;
}

} // namespace dxpriv::pg
