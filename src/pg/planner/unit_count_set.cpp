// Privacy units: count_units beside other aggregates in one scan (unit_count_set.h).
#include "pg/planner/unit_count_set.h"

#include "pg/guard.h"
#include "pg/planner/unit_profile_source.h"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "utils/lsyscache.h"
}

namespace dxpriv::pg {

// See unit_count_set.h.
bool
unit_count_set_applies(const analysis::ReleaseAnalysis &a, bool distributed, bool set)
{
	if (!a.policy.unit.present() || a.keys.grouped() || a.open || a.public_keys || a.join || distributed || set ||
	    !a.em.specs.empty())
		return false;
	bool units = false, other = false;
	for (const analysis::AggSpec &s : a.specs)
		(s.kind == analysis::AggKind::CountUnits ? units : other) = true;
	if (!units || !other)
		return false;
	UnitSource spec; // the rows' bounding, without count_units flags
	spec.policy = &a.policy;
	spec.distributed = distributed;
	return profile_bounding_applies(spec);
}

// See unit_count_set.h.
void
make_unit_count_set(Aggref *agg, Expr *weight, Expr *group_index, Const *params, const TablePolicy &policy,
                    const ExtensionObjects &ext)
{
	Oid type = InvalidOid, collation = InvalidOid;
	int32 typmod = -1;
	pg_call([&] {
		const AttrNumber att = get_attnum(policy.relid, policy.unit.column.c_str());
		if (att == InvalidAttrNumber)
			elog(ERROR, "dxpriv: the privacy unit column is missing");
		get_atttypetypmodcoll(policy.relid, att, &type, &typmod, &collation);
	});
	Var *unit = makeVar(1, kUnitValuePlaceholder, type, typmod, collation, 0);
	agg->aggfnoid = ext.noisy_count_units;
	agg->aggargtypes = list_make4_oid(FLOAT8OID, INT4OID, FLOAT8ARRAYOID, type);
	agg->args = list_make4(makeTargetEntry(weight, 1, nullptr, false), makeTargetEntry(group_index, 2, nullptr, false),
	                       makeTargetEntry((Expr *) params, 3, nullptr, false),
	                       makeTargetEntry((Expr *) unit, 4, nullptr, false));
	agg->aggstar = false;
	agg->aggvariadic = false;
	agg->aggdistinct = NIL;
	agg->aggfilter = nullptr; // (the FILTER and WHERE are in the weight's table)
	agg->inputcollid = collation; // (the unit's hash under the column's collation, as in the profile)
}

} // namespace dxpriv::pg
