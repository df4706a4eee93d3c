// The 64-bit hash of a privacy unit's value, shared by the hash bounding and the unit profiles.
#pragma once

#include "core/mix64.h"
#include "pg/elevated/sealed_execution.h"

extern "C" {
#include "postgres.h"
#include "access/transam.h"
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
	bool sealed; // each call of fn goes through the sealed path (unit_type_call_sealed) as `user`
	Oid user;    // (InvalidOid: the current user)
	Oid collation;
	int64 seed;  // the opclass's extended hash seed (0 unless set after init_unit_hasher; the fast path
	             // ignores it: a bijection of the value needs none)
	FmgrInfo fn;
};

// Whether a unit type's opclass function fn, called on stored unit values in an analyst's
// statement, must run through the sealed path (sealed_call: the sealed settings, search path
// pg_catalog, pg_temp): a function not built into PostgreSQL (a DBA's, e.g. in SQL, or an
// extension's), which could resolve names through the analyst's search path or read the analyst's
// settings. The built-in hash and equality functions are C functions of their arguments (and the
// column's collation) only: called directly, at no cost.
inline bool
unit_type_call_sealed(Oid fn)
{
	return fn >= FirstNormalObjectId;
}

// Fills u for unit type `type`, the hash function looked up in mcxt; a type without an extended
// hash function fails with 0A000 and `hint` (which setting avoids this path). seal: a hash function
// that is not built in runs through the sealed path as `user` (InvalidOid: the current user) on
// every call; false only where the caller already runs inside the sealed path (the profile build,
// elevated/sealed_scan.h). Ereports (as the type cache lookup does): call where a PostgreSQL error
// may propagate.
inline void
init_unit_hasher(UnitHasher *u, Oid type, Oid collation, MemoryContext mcxt, const char *hint, bool seal, Oid user)
{
	u->collation = collation;
	u->seed = 0;
	u->sealed = false;
	u->user = user;
	u->fast = type == INT2OID || type == INT4OID || type == INT8OID || type == OIDOID;
	if (u->fast)
		return;
	TypeCacheEntry *tc = lookup_type_cache(type, TYPECACHE_HASH_EXTENDED_PROC_FINFO);
	if (!OidIsValid(tc->hash_extended_proc))
		ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg("the privacy unit column's type has no hash function"),
		                errhint("%s", hint)));
	fmgr_info_cxt(tc->hash_extended_proc_finfo.fn_oid, &u->fn, mcxt);
	u->sealed = seal && unit_type_call_sealed(tc->hash_extended_proc_finfo.fn_oid);
}

// The hash of one unit value under u's seed; every NULL is one unit (one constant hash). May ereport
// (the opclass).
inline uint64
unit_hash_value(const UnitHasher *u, Datum v, bool isnull)
{
	if (isnull)
		return 0x9E3779B97F4A7C15ULL;
	if (u->fast)
		return mix64(static_cast<uint64>(v));
	if (u->sealed) {
		uint64 h = 0;
		sealed_call(
		    u->user,
		    [&] {
			    h = DatumGetUInt64(FunctionCall2Coll(const_cast<FmgrInfo *>(&u->fn), u->collation, v, Int64GetDatum(u->seed)));
		    },
		    true);
		return mix64(h);
	}
	return mix64(DatumGetUInt64(FunctionCall2Coll(const_cast<FmgrInfo *>(&u->fn), u->collation, v, Int64GetDatum(u->seed))));
}

} // namespace dxpriv::pg
