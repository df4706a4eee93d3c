// Lazy lookup of the extension's OIDs in the current database, cached per backend and dropped by
// syscache invalidation of pg_proc/pg_namespace (every CREATE/DROP/ALTER EXTENSION changes them).
#include "pg/metadata/extension_objects.h"

extern "C" {
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "access/xact.h"
#include "commands/extension.h"
#include "nodes/makefuncs.h"
#include "nodes/pg_list.h"
#include "parser/parse_func.h"
#include "parser/parse_type.h"
#include "utils/syscache.h"
#include "access/htup_details.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "utils/builtins.h"
#include "utils/inval.h"
}

namespace dxpriv::pg {

static ExtensionObjects cached;
static bool cached_valid = false;
// The answer of the last lookup (present or absent) still holds: no pg_proc or pg_namespace change
// has been seen since. Creating, dropping or updating the extension creates or drops its functions
// (load() answers "present" only when all of them exist) and its schema, so each of them sends an
// invalidation that clears this flag (in this session at the next CommandCounterIncrement, in other
// sessions at their next transaction start or lock). pg_type is not watched: temporary tables
// create types, and a reload per CREATE TEMP TABLE anywhere on the server is what this avoids.
static bool lookup_current = false;
static bool callbacks_registered = false;
// Invalidations seen so far: a lookup is current only if none arrived while it ran (its catalog
// reads take locks and so accept invalidations), and a lookup that raised an error never is.
static uint64 invalidations = 0;

static void
forget_extension_objects(Datum, int, uint32)
{
	invalidations++;
	lookup_current = false;
}

// See extension_objects.h.
Oid
dx_routine_oid(Oid dx_namespace, const char *name, int nargs, const Oid *argtypes)
{
	if (!OidIsValid(dx_namespace))
		return InvalidOid;
	oidvector *args = buildoidvector(argtypes, nargs);
	const Oid f = GetSysCacheOid3(PROCNAMEARGSNSP, Anum_pg_proc_oid, CStringGetDatum(name), PointerGetDatum(args),
	                              ObjectIdGetDatum(dx_namespace));
	pfree(args);
	return f;
}

// The dx schema of the lookup in progress (load), and the objects it fills.
static Oid dx_namespace = InvalidOid;
static ExtensionObjects *loading = nullptr;

// OID of dx.<name>(argtypes), or InvalidOid (dx_routine_oid); a found OID is recorded in
// loading->own (ExtensionObjects::is_own_function).
static Oid
lookup(const char *name, int nargs, const Oid *argtypes)
{
	const Oid f = dx_routine_oid(dx_namespace, name, nargs, argtypes);
	if (OidIsValid(f) && loading->nown < ExtensionObjects::kMaxOwn)
		loading->own[loading->nown++] = f;
	return f;
}

// Looks every object up; returns false when one is missing (extension half-created).
static bool
load(Oid ext, ExtensionObjects &o)
{
	o = ExtensionObjects();
	loading = &o;
	o.extension = ext;
	Oid nsp = get_namespace_oid("dx", true);
	if (!OidIsValid(nsp))
		return false;
	dx_namespace = nsp;
	HeapTuple tup = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(nsp));
	if (!HeapTupleIsValid(tup))
		return false;
	o.schema_owner = ((Form_pg_namespace) GETSTRUCT(tup))->nspowner;
	ReleaseSysCache(tup);

	const Oid any1[] = {ANYOID};
	const Oid any_eps[] = {ANYOID, FLOAT8OID};
	const Oid linear[] = {FLOAT8OID, INT4OID, FLOAT8ARRAYOID};
	o.count_star = lookup("count", 0, nullptr);
	o.count_any = lookup("count", 1, any1);
	o.count_any_eps = lookup("count", 2, any_eps);
	o.sum_any = lookup("sum", 1, any1);
	o.sum_any_eps = lookup("sum", 2, any_eps);
	o.avg_any = lookup("avg", 1, any1);
	o.avg_any_eps = lookup("avg", 2, any_eps);
	o.linear_any = lookup("linear", 1, any1);
	o.linear_any_eps = lookup("linear", 2, any_eps);
	o.count_units = lookup("count_units", 1, any1);
	o.count_units_eps = lookup("count_units", 2, any_eps);
	o.noisy_count = lookup("_noisy_count", 3, linear);
	o.noisy_sum = lookup("_noisy_sum", 3, linear);
	o.noisy_avg = lookup("_noisy_avg", 3, linear);
	const Oid linear_pairs[] = {FLOAT8OID, INT4OID, FLOAT8ARRAYOID, FLOAT8OID};
	o.noisy_avg_pairs = lookup("_noisy_avg", 4, linear_pairs);
	const Oid count_units_set[] = {FLOAT8OID, INT4OID, FLOAT8ARRAYOID, ANYELEMENTOID};
	o.noisy_count_units = lookup("_noisy_count_units", 4, count_units_set);
	o.noisy_part = lookup("_noisy_part", 3, linear);
	const Oid dispersion_args[] = {INT4OID,        TEXTOID,        FLOAT8OID,      FLOAT8OID,      FLOAT8ARRAYOID,
	                               FLOAT8ARRAYOID, FLOAT8ARRAYOID, FLOAT8ARRAYOID, FLOAT8ARRAYOID, FLOAT8ARRAYOID};
	o.dispersion = lookup("_dispersion", 10, dispersion_args);
	o.partial = lookup("_partial", 3, linear);
	const Oid select_args[] = {FLOAT8OID, INT4OID, FLOAT8ARRAYOID, FLOAT8ARRAYOID};
	o.partition_select = lookup("_partition_select", 4, select_args);
	const Oid open_cells_args[] = {BOOLOID, TEXTARRAYOID, TEXTARRAYOID};
	o.open_cells = lookup("_open_cells", 3, open_cells_args);
	const Oid onepass[] = {TEXTOID, ANYOID};
	o.onepass_count = lookup("_onepass_count", 2, onepass);
	o.onepass_sum = lookup("_onepass_sum", 2, onepass);
	o.onepass_avg = lookup("_onepass_avg", 2, onepass);
	o.fold_state = lookup("_fold_state", 2, onepass);
	const Oid fold_slices_args[] = {BYTEAOID, INT8ARRAYOID};
	o.fold_slices = lookup("_fold_slices", 2, fold_slices_args);
	const Oid fold_args[] = {BYTEAOID};
	o.fold_count = lookup("_fold_count", 1, fold_args);
	o.fold_sum = lookup("_fold_sum", 1, fold_args);
	o.fold_avg = lookup("_fold_avg", 1, fold_args);
	o.linear_partial_type = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum("_linear_partial"),
	                                        ObjectIdGetDatum(nsp));
	const Oid release_args[] = {o.linear_partial_type, FLOAT8ARRAYOID, INT4OID};
	o.release_count = lookup("_release_count", 3, release_args);
	o.release_sum = lookup("_release_sum", 3, release_args);
	o.release_avg = lookup("_release_avg", 3, release_args);
	o.release_part = lookup("_release_part", 3, release_args);
	const Oid release_selection_args[] = {INT8OID, FLOAT8ARRAYOID, FLOAT8ARRAYOID};
	o.release_selection = lookup("_release_selection", 3, release_selection_args);
	const Oid units_args[] = {FLOAT8OID, FLOAT8OID};
	o.units = lookup("_units", 2, units_args);
	const Oid units_by_group_args[] = {FLOAT8OID, INT4OID, FLOAT8ARRAYOID};
	o.units_by_group = lookup("_units", 3, units_by_group_args);
	const Oid weigh_units_args[] = {BYTEAOID, TEXTOID, FLOAT8OID, ANYOID};
	o.weigh_units = lookup("_weigh_units", 4, weigh_units_args);
	o.weigh_units_cached = lookup("_weigh_units_cached", 4, weigh_units_args);
	const Oid state_of_args[] = {NUMERICOID, INT8OID, FLOAT8ARRAYOID, INT4OID};
	o.state_of = lookup("_state_of", 4, state_of_args);
	const Oid collect_args[] = {INT4OID, NUMERICOID, INT8OID, FLOAT8ARRAYOID};
	o.collect = lookup("_collect", 4, collect_args);
	const Oid em_collect_args[] = {INT4OID, INT4OID, FLOAT8ARRAYOID, INT8OID};
	o.em_collect = lookup("_em_collect", 4, em_collect_args);
	const Oid grouped_partials_args[] = {TEXTOID, FLOAT8ARRAYOID, BYTEAARRAYOID};
	o.grouped_partials = lookup("_grouped_partials", 3, grouped_partials_args);
	const Oid weigh_args[] = {BYTEAOID, TEXTOID, ANYOID};
	o.weigh = lookup("_weigh", 3, weigh_args);
	o.weigh_cached = lookup("_weigh_cached", 3, weigh_args);
	o.weigh_int_cached = lookup("_weigh_int_cached", 3, weigh_args);
	const Oid store_args[] = {BYTEAOID, BYTEAOID};
	o.store_point_table = lookup("_store_point_table", 2, store_args);
	o.weigh_int = lookup("_weigh_int", 3, weigh_args);
	const Oid group_key_args[] = {INT4OID, ANYARRAYOID};
	o.group_key = lookup("_group_key", 2, group_key_args);
	const Oid group_key_int_args[] = {BYTEAOID, TEXTOID, ANYARRAYOID, ANYOID};
	o.group_key_int = lookup("_group_key_int", 4, group_key_int_args);
	o.indicator = lookup("_indicator", 1, any1);
	const Oid unit_rank_args[] = {OIDOID, TIDOID};
	o.unit_rank = lookup("_unit_rank", 2, unit_rank_args);
	const Oid unit_profile_args[] = {OIDOID, BOOLOID, INT2OID, INT4OID, INT8OID};
	o.unit_profile = lookup("_unit_profile", 5, unit_profile_args);
	// exponential mechanism (sql/25_exponential.sql)
	const Oid elem1[] = {ANYELEMENTOID};
	const Oid elem_f8[] = {ANYELEMENTOID, FLOAT8OID};
	const Oid elem_f8_f8[] = {ANYELEMENTOID, FLOAT8OID, FLOAT8OID};
	const Oid em_select[] = {INT4OID, INT4OID, FLOAT8ARRAYOID};
	const Oid em_point_range[] = {INT4OID, ANYELEMENTOID, FLOAT8OID, FLOAT8OID, FLOAT8OID};
	const Oid em_point_enum[] = {INT4OID, ANYELEMENTOID, TEXTARRAYOID};
	o.mode_any = lookup("mode", 1, elem1);
	o.mode_any_eps = lookup("mode", 2, elem_f8);
	o.quantile_any = lookup("quantile", 2, elem_f8);
	o.quantile_any_eps = lookup("quantile", 3, elem_f8_f8);
	o.median_any = lookup("median", 1, elem1);
	o.median_any_eps = lookup("median", 2, elem_f8);
	o.count_distinct = lookup("count_distinct", 1, any1);
	o.count_distinct_eps = lookup("count_distinct", 2, any_eps);
	o.em_select = lookup("_em_select", 3, em_select);
	o.em_point_range = lookup("_em_point", 5, em_point_range);
	o.em_point_enum = lookup("_em_point", 3, em_point_enum);
	const Oid all[] = {o.count_star, o.count_any, o.count_any_eps, o.sum_any, o.sum_any_eps, o.avg_any,
	                   o.avg_any_eps, o.linear_any, o.linear_any_eps, o.noisy_count, o.noisy_sum, o.noisy_avg,
	                   o.noisy_avg_pairs, o.noisy_count_units,
	                   o.indicator, o.weigh, o.weigh_int, o.group_key, o.group_key_int, o.partial, o.linear_partial_type,
	                   o.release_count, o.release_sum, o.release_avg, o.release_part, o.release_selection, o.weigh_cached, o.weigh_int_cached,
	                   o.store_point_table, o.units, o.units_by_group, o.state_of, o.collect, o.em_collect,
	                   o.mode_any, o.mode_any_eps, o.quantile_any, o.quantile_any_eps, o.median_any,
	                   o.median_any_eps, o.em_select, o.em_point_range, o.em_point_enum, o.count_units,
	                   o.count_units_eps, o.unit_rank, o.partition_select, o.open_cells, o.noisy_part, o.dispersion,
	                   o.count_distinct, o.count_distinct_eps, o.onepass_count, o.onepass_sum, o.onepass_avg,
	                   o.fold_state, o.fold_slices, o.fold_count, o.fold_sum, o.fold_avg};
	std::sort(o.own, o.own + o.nown);
	for (Oid f : all)
		if (!OidIsValid(f))
			return false;
	return true;
}

// See extension_objects.h. Catalog lookups here cannot fail except on corruption, so no guard is needed.
const ExtensionObjects *
extension_objects()
{
	if (creating_extension || !IsTransactionState())
		return nullptr;
	if (!callbacks_registered) {
		CacheRegisterSyscacheCallback(PROCOID, forget_extension_objects, (Datum) 0);
		CacheRegisterSyscacheCallback(NAMESPACEOID, forget_extension_objects, (Datum) 0);
		callbacks_registered = true;
	}
	if (lookup_current)
		return cached_valid ? &cached : nullptr;
	// Marked current only after the lookup completes, and only if no invalidation arrived while it
	// ran; an ERROR inside it leaves the flag clear, so the next call looks again instead of trusting
	// a half-made answer. Always a full reload: ALTER EXTENSION UPDATE may re-create functions under
	// new OIDs.
	const uint64 seen = invalidations;
	cached_valid = false;
	Oid ext = get_extension_oid("dxpriv", true);
	if (OidIsValid(ext))
		cached_valid = load(ext, cached);
	lookup_current = invalidations == seen;
	return cached_valid ? &cached : nullptr;
}

} // namespace dxpriv::pg
