// Privacy units: the SQL of the row-local bounding by a unit profile (unit_profile_source.h).
#include "pg/planner/unit_profile_source.h"

#include "pg/guard.h"
#include "pg/settings.h"
#include "pg/ledger/contents_version.h"
#include "pg/executor/unit_profile.h"

extern "C" {
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
}

namespace dxpriv::pg {

// See unit_profile_source.h.
bool
profile_bounding_applies(const UnitSource &spec)
{
	if (!guc_unit_profiles || guc_unit_bounding != 0 || spec.distributed || !spec.distinct_weights.empty() ||
	    !spec.flag_columns.empty())
		return false;
	bool known = false;
	pg_call([&] {
		uint64 version = 0;
		known = ActiveSnapshotSet() && contents_version(spec.policy->relid, GetActiveSnapshot(), &version);
		// (harden) a profile that could exceed dxpriv.unit_profile_max_size: the per-statement
		// bounding instead (bounded memory: it spills to disk), the same rule, sensitivity and charge;
		// the tree's size (inh: an upper bound of ONLY's) is all the choice depends on
		known = known && !unit_profile_may_exceed(spec.policy->relid, true, spec.bound.max_rows);
	});
	return known;
}

// See unit_profile_source.h.
std::string
profile_keep_clause(const UnitSource &spec, bool inh)
{
	const TablePolicy &policy = *spec.policy;
	const AttrNumber att = pg_value([&] { return get_attnum(policy.relid, policy.unit.column.c_str()); });
	if (att == InvalidAttrNumber)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv: the privacy unit column is missing");
	const char *unit = pg_value([&] { return quote_identifier(policy.unit.column.c_str()); });
	// a plain table without inheritance children (or ONLY): every scanned row's tableoid is its OID,
	// passed as a constant (no system column fetched per row); dx._unit_keep checks again at execution
	// that the table has no child (a child attached since planning is refused, never ranked as the
	// parent's rows)
	const bool single = !inh || pg_value([&] {
		return get_rel_relkind(policy.relid) == RELKIND_RELATION && !has_subclass(policy.relid);
	});
	const std::string rel = single ? std::to_string(policy.relid) + "::pg_catalog.oid" : std::string("tableoid");
	return "dx._unit_keep((SELECT dx._unit_profile(" + std::to_string(policy.relid) + "::pg_catalog.oid, " +
	       (inh ? "true" : "false") + ", " + std::to_string(att) + "::pg_catalog.int2, " +
	       std::to_string(spec.bound.max_rows) + ", " + std::to_string(pg_value([] { return unit_profile_token(); })) +
	       "::pg_catalog.int8)), " + unit + ", " + rel + ", ctid)";
}

} // namespace dxpriv::pg
