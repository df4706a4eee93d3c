// Privacy units: refusal of sorts by a unit type with SQL or procedural operators (unit_order_check.h).
#include "pg/planner/unit_order_check.h"

#include "pg/guard.h"

extern "C" {
#include "access/htup_details.h"
#include "access/transam.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
}

#include <string>

namespace dxpriv::pg {

namespace {

// True when fn is built into PostgreSQL or written in C (compiled: it resolves no name through the
// search path).
bool
order_function_sealed(Oid fn)
{
	if (!OidIsValid(fn) || fn < FirstNormalObjectId)
		return true;
	HeapTuple tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn));
	if (!HeapTupleIsValid(tup))
		return false;
	const Oid lang = reinterpret_cast<Form_pg_proc>(GETSTRUCT(tup))->prolang;
	ReleaseSysCache(tup);
	return lang == ClanguageId || lang == INTERNALlanguageId;
}

} // namespace

// See unit_order_check.h.
void
refuse_unsealed_unit_order(const TablePolicy &policy)
{
	bool sealed = true;
	std::string type;
	pg_call([&] {
		const AttrNumber att = get_attnum(policy.relid, policy.unit.column.c_str());
		if (att == InvalidAttrNumber)
			return;
		const Oid t = get_atttype(policy.relid, att);
		TypeCacheEntry *tc = lookup_type_cache(
		    t, TYPECACHE_EQ_OPR | TYPECACHE_LT_OPR | TYPECACHE_GT_OPR | TYPECACHE_CMP_PROC | TYPECACHE_HASH_PROC |
		           TYPECACHE_HASH_EXTENDED_PROC);
		for (Oid op : {tc->eq_opr, tc->lt_opr, tc->gt_opr})
			if (OidIsValid(op) && !order_function_sealed(get_opcode(op)))
				sealed = false;
		for (Oid fn : {tc->cmp_proc, tc->hash_proc, tc->hash_extended_proc})
			if (!order_function_sealed(fn))
				sealed = false;
		if (!sealed)
			type = format_type_be(t);
	});
	if (!sealed)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED,
		     "the privacy unit column \"" + policy.unit.column + "\" has type " + type +
		         ", whose comparison or hash functions are written in SQL or a procedural language",
		     "dx.count_units, dxpriv.unit_bounding = 'sort' and distributed tables sort or group the units in the "
		     "analyst's statement, where such a function would run under her search path and settings. Count rows "
		     "(dx.count, dx.sum, dx.avg: bounded through the sealed unit profile), or use a unit column of a built-in "
		     "type.");
}

} // namespace dxpriv::pg
