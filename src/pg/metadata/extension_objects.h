// The OIDs of the installed extension's objects in the current database, looked up lazily.
#pragma once

extern "C" {
#include "postgres.h"
}

#include <algorithm>

namespace dxpriv::pg {

struct ExtensionObjects {
	Oid extension = InvalidOid;
	Oid schema_owner = InvalidOid;
	Oid count_star = InvalidOid, count_any = InvalidOid, count_any_eps = InvalidOid;
	Oid sum_any = InvalidOid, sum_any_eps = InvalidOid;
	Oid avg_any = InvalidOid, avg_any_eps = InvalidOid, linear_any = InvalidOid, linear_any_eps = InvalidOid;
	// privacy units (sql/12_privacy_units.sql): dx.count_units markers and the row-ranking hash
	Oid count_units = InvalidOid, count_units_eps = InvalidOid, unit_rank = InvalidOid;
	Oid unit_profile = InvalidOid; // dx._unit_profile (executor/unit_profile.h; optional: not in "all")
	Oid noisy_count = InvalidOid, noisy_sum = InvalidOid, noisy_avg = InvalidOid;
	Oid noisy_avg_pairs = InvalidOid; // dx._noisy_avg(..., float8 count weight): dx.avg over a join's pairs
	Oid noisy_count_units = InvalidOid; // dx._noisy_count_units: count_units in one scan (planner/unit_count_set.h)
	Oid partition_select = InvalidOid; // dx._partition_select: open GROUP BY keys (planner/open_keys.h)
	Oid open_cells = InvalidOid;       // dx._open_cells: their dx.last_release() (planner/open_release_log.h)
	// analysts' stddev/variance/covar/corr/regr_* (analyst/dispersion_spelling.h): a linear part
	// released with its noise variance, and the statistic computed from the parts
	Oid noisy_part = InvalidOid, dispersion = InvalidOid;
	// one pass over the rows (executor/one_pass.cpp): the statement's aggregates share one transition
	Oid onepass_count = InvalidOid, onepass_sum = InvalidOid, onepass_avg = InvalidOid;
	bool is_one_pass(Oid f) const { return f == onepass_count || f == onepass_sum || f == onepass_avg; }
	// a GROUP BY folded into one pass (planner/group_fold.h): the ungrouped histogram with the key
	// columns, its cut into one state per group, and the aggregates releasing a group's state
	Oid fold_state = InvalidOid, fold_slices = InvalidOid;
	Oid fold_count = InvalidOid, fold_sum = InvalidOid, fold_avg = InvalidOid;
	bool is_fold(Oid f) const { return f == fold_count || f == fold_sum || f == fold_avg; }
	// distributed tables (planner/distributed.h): the exact partial aggregate, its shippable state
	// type and the coordinator's release functions
	Oid partial = InvalidOid, linear_partial_type = InvalidOid;
	Oid release_count = InvalidOid, release_sum = InvalidOid, release_avg = InvalidOid;
	Oid release_part = InvalidOid; // a part of stddev/corr/... (float8[], as dx._noisy_part's)
	// dx._release_selection(count, params, selection): an open key's partition selection (planner/distributed_open.h)
	Oid release_selection = InvalidOid;
	bool is_release(Oid f) const
	{
		return f == release_count || f == release_sum || f == release_avg || f == release_part ||
		       f == release_selection;
	}
	// native partial sums of distributed releases (sql/50_distributed.sql)
	// dx._weigh_units and its cached variant (optional: the workers' sums fall back to dx._units(dx._weigh))
	Oid weigh_units = InvalidOid, weigh_units_cached = InvalidOid;
	Oid units = InvalidOid, units_by_group = InvalidOid, state_of = InvalidOid, collect = InvalidOid, em_collect = InvalidOid;
	// dx._grouped_partials(text, float8[], bytea[]): a GROUP BY's native sums as one Citus stage
	// (planner/distributed_stage.h; optional: absent, the split keeps the subplan shape)
	Oid grouped_partials = InvalidOid;
	// per-point tables travelling by digest (executor/point_table_cache.h)
	Oid weigh_cached = InvalidOid, weigh_int_cached = InvalidOid, store_point_table = InvalidOid;
	Oid indicator = InvalidOid;
	// execution by lookup (point_lookup.h): a row's weight from the per-point table at its point
	Oid weigh = InvalidOid, weigh_int = InvalidOid, group_key = InvalidOid;
	// dx._group_key(dx._weigh_int(...), values) in one call (planner/group_key_source.h)
	Oid group_key_int = InvalidOid;
	// exponential mechanism (em_rewrite.h): markers, the internal aggregate and the index -> value maps
	Oid mode_any = InvalidOid, mode_any_eps = InvalidOid, quantile_any = InvalidOid, quantile_any_eps = InvalidOid;
	Oid median_any = InvalidOid, median_any_eps = InvalidOid;
	Oid count_distinct = InvalidOid, count_distinct_eps = InvalidOid; // analysed like dx.mode (em_rewrite.h)
	Oid em_select = InvalidOid, em_point_range = InvalidOid, em_point_enum = InvalidOid;
	bool is_marker(Oid f) const
	{
		return f == count_star || f == count_any || f == count_any_eps || f == sum_any || f == sum_any_eps ||
		       f == avg_any || f == avg_any_eps || f == linear_any || f == linear_any_eps || f == mode_any ||
		       f == mode_any_eps || f == quantile_any || f == quantile_any_eps || f == median_any ||
		       f == median_any_eps || f == count_units || f == count_units_eps || f == count_distinct ||
		       f == count_distinct_eps;
	}
	// Internal noisy aggregates: (..., ..., float8[] NoiseParams [, ...]) — charged by charge.cpp.
	bool is_internal(Oid f) const
	{
		return f == noisy_count || f == noisy_sum || f == noisy_avg || f == noisy_avg_pairs || f == noisy_count_units || f == em_select ||
		       f == partial || f == partition_select || f == noisy_part || is_one_pass(f) ||
		       is_fold(f);
	}
	// dxpriv's own functions and aggregates: every OID load() found by name (extension_objects.cpp
	// `lookup`), ascending. A function beyond kMaxOwn is not recorded and is then only checked as
	// any other function is.
	static constexpr int kMaxOwn = 96;
	Oid own[kMaxOwn] = {};
	int nown = 0;
	// Whether f is one of them. None is a statistics function, a member of a statistics extension or
	// a Citus function, which is what the analysts' function checks (analyst/side_channels.cpp,
	// analyst/executor_admission.cpp) look for: those checks skip them without reading pg_proc (cold
	// in a new session's first statement).
	bool is_own_function(Oid f) const { return OidIsValid(f) && std::binary_search(own, own + nown, f); }
};
// OID of the function, procedure or aggregate dx.<name>(argtypes) with exactly these argument
// types (dx_namespace: the dx schema's OID), or InvalidOid: the one row of pg_proc's unique
// (proname, proargtypes, pronamespace) key, which LookupFuncName of the qualified name with exact
// argument types finds too, by one probe of that key (LookupFuncName loads every function of that
// name in every schema, count and sum among them, and looks each candidate up again by OID: about
// 0.3 ms of a new backend's first statement for the ~70 objects below, newsess). Unlike
// LookupFuncName, no USAGE privilege on dx is asked of the current user: these are dxpriv's own
// objects, looked up for every user's statements and kept for the backend. A PostgreSQL frame.
Oid dx_routine_oid(Oid dx_namespace, const char *name, int nargs, const Oid *argtypes);

// The extension's objects in the current database, or nullptr when dxpriv is not installed
// (or is being created). Never errors.
const ExtensionObjects *extension_objects();

} // namespace dxpriv::pg
