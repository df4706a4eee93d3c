// The 64-bit hash of a privacy unit's value, shared by the hash bounding and the unit profiles.
#pragma once

#include "core/mix64.h"

extern "C" {
#include "postgres.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/typcache.h"
}

namespace dxpriv::pg {

// How one unit type hashes: int2/int4/int8/oid mix their Datum (binary equality is equality), any
// other type its default hash opclass's extended hash under the column's collation (so 1.0 and
// 1.00 are one numeric unit, as in GROUP BY). A plain struct (its FmgrInfo lives in PostgreSQL memory).
struct UnitHasher {
	bool fast;
	Oid collation;
	FmgrInfo fn;
};

// Fills u for unit type `type`, the hash function looked up in mcxt; a type without an extended
// hash function fails with 0A000 and `hint` (which setting avoids this path). Ereports (as the
// type cache lookup does): call where a PostgreSQL error may propagate.
inline void
init_unit_hasher(UnitHasher *u, Oid type, Oid collation, MemoryContext mcxt, const char *hint)
{
	u->collation = collation;
	u->fast = type == INT2OID || type == INT4OID || type == INT8OID || type == OIDOID;
	if (u->fast)
		return;
	TypeCacheEntry *tc = lookup_type_cache(type, TYPECACHE_HASH_EXTENDED_PROC_FINFO);
	if (!OidIsValid(tc->hash_extended_proc))
		ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg("the privacy unit column's type has no hash function"),
		                errhint("%s", hint)));
	fmgr_info_cxt(tc->hash_extended_proc_finfo.fn_oid, &u->fn, mcxt);
}

// The hash of one unit value; every NULL is one unit (one constant hash). May ereport (the opclass).
inline uint64
unit_hash_value(const UnitHasher *u, Datum v, bool isnull)
{
	if (isnull)
		return 0x9E3779B97F4A7C15ULL;
	if (u->fast)
		return mix64(static_cast<uint64>(v));
	return mix64(DatumGetUInt64(FunctionCall2Coll(const_cast<FmgrInfo *>(&u->fn), u->collation, v, Int64GetDatum(0))));
}

} // namespace dxpriv::pg
