// Privacy units on Citus tables distributed by the unit column: the per-shard keep qual (unit_shard_source.h).
#include "pg/planner/unit_shard_source.h"

#include "pg/guard.h"
#include "pg/settings.h"
#include "pg/metadata/citus_tables.h"
#include "pg/metadata/extension_objects.h"

extern "C" {
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

namespace dxpriv::pg {

// See unit_shard_source.h.
bool
shard_bounding_applies(const UnitSource &spec)
{
	if (!guc_unit_profiles || guc_unit_bounding != 0 || !spec.distributed || !spec.distinct_weights.empty() ||
	    !spec.flag_columns.empty())
		return false;
	const ExtensionObjects *ext = extension_objects();
	if (!ext)
		return false;
	// a partitioned (or inherited) table: a shard task reads the parent's shard, which PostgreSQL
	// expands into its partitions' shards, and a per-relation profile would bound each unit per
	// partition (k rows in each): such tables keep the window functions, partitioned by the unit over
	// the whole shard
	const bool parent = pg_value([&] {
		const Oid relid = spec.policy->relid;
		return get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE || has_subclass(relid);
	});
	if (parent)
		return false;
	const std::string column = citus_hash_distribution_column(*ext, spec.policy->relid);
	if (column.empty() || column != spec.policy->unit.column)
		return false;
	// a placement on the coordinator is read by Citus's local execution in the analyst's own backend,
	// where dx._unit_keep_shard refuses her (its caller check): such tables keep the window functions
	return !citus_table(*ext, spec.policy->relid).on_coordinator;
}

// See unit_shard_source.h.
std::string
shard_keep_clause(const UnitSource &spec)
{
	const std::string column = spec.policy->unit.column;
	const char *unit = pg_value([&] { return quote_identifier(column.c_str()); });
	const char *name = pg_value([&] { return quote_literal_cstr(column.c_str()); });
	return std::string("dx._unit_keep_shard(") + unit + ", tableoid, ctid, " + std::to_string(spec.bound.max_rows) +
	       ", " + name + "::pg_catalog.text)";
}

} // namespace dxpriv::pg
