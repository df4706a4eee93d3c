// Module entry: GUC definitions, then hooks.cpp installs the pipeline (requires shared_preload_libraries).
#include "pg/settings.h"
#include "pg/progress.h"
#include "pg/executor/noise_source.h"
#include "pg/statement/statement_context.h"
#include "pg/executor/consistent_release.h"
#include "pg/executor/release_log.h"
#include "pg/executor/unit_profile.h"
#include "pg/hooks.h"
#include "pg/ledger/answer_cache.h"
#include "pg/ledger/ledger_queue.h"
#include "pg/planner/analysis_memo.h"
#include "pg/planner/shared_memo.h"
#include "core/allocation_internal.h"
#include "core/pair_tree.h"

#include <climits>

extern "C" {
#include "miscadmin.h"
#include "utils/float.h"
#include "utils/guc.h"
PG_MODULE_MAGIC;
void _PG_init(void);
}

namespace dxpriv::pg {
double guc_epsilon = 0.1;
int guc_test_seed = -1;
bool guc_exhaustive_analysis = false;

// dxpriv.exhaustive_analysis: the per-point reference paths of build_constraints (core/allocation_internal.h).
static void
assign_exhaustive_analysis(bool newval, void *extra)
{
	dxpriv::detail::set_direct_rows(!newval);
	dxpriv::detail::set_repeat_shortcut(!newval);
	dxpriv::detail::set_insert_lag(!newval);
	dxpriv::detail::set_pair_generation(!newval);
	dxpriv::detail::set_pair_tree(!newval);
}
bool guc_one_pass = true;
bool guc_key_columns_in_source = true;
bool guc_group_fold = true;
bool guc_test_skip_stand_in_restore = false;
bool guc_citus_grouped_stage = true;
int guc_allocation = 0;
int guc_noise = 0;
int guc_top_k = 0;
int guc_partition_selection = 0;
int guc_unit_bounding = 0;
bool guc_unit_rank_reference = false; // (unitpoint)
int guc_analysis_time_limit = 30000;
int guc_analysis_memory_limit = 16384;
} // namespace dxpriv::pg

using namespace dxpriv::pg;

static const struct config_enum_entry allocation_options[] = {
	{"relative", 0, false},    {"min_total_variance", 1, false}, {"optimal", 1, true}, // old name, hidden
	{"algorithm3", 2, false},  {"equal_scale", 3, false},        {"equal_split", 4, false},
	{nullptr, 0, false}};

static const struct config_enum_entry top_k_options[] = {{"noisy", 0, false}, {"exponential", 1, false}, {nullptr, 0, false}};

static const struct config_enum_entry noise_options[] = {
	{"laplace", 0, false}, {"gaussian", 1, false}, {"truncated_laplace", 2, false}, {nullptr, 0, false}};
static const struct config_enum_entry selection_options[] = {
	{"optimal", 0, false}, {"laplace", 1, false}, {nullptr, 0, false}};

// Rejects a non-positive default epsilon.
static bool
check_epsilon(double *newval, void **extra, GucSource source)
{
	if (!(*newval > 0) || *newval == get_float8_infinity()) {
		GUC_check_errcode(ERRCODE_INVALID_PARAMETER_VALUE);
		GUC_check_errmsg("dxpriv.epsilon must be positive and finite");
		GUC_check_errhint("Use a value such as 0.1; each query spends this much of the budget.");
		return false;
	}
	return true;
}

// Restarts the deterministic test stream whenever the seed changes.
static void
assign_test_seed(int newval, void *extra)
{
	guc_test_seed = newval;
	reset_test_stream();
}

// Defines GUCs and installs hooks; refuses to load outside shared_preload_libraries.
void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
		                errmsg("dxpriv must be loaded via shared_preload_libraries"),
		                errhint("Add dxpriv to shared_preload_libraries in postgresql.conf and restart the server.")));

	DefineCustomRealVariable("dxpriv.epsilon", "Default epsilon spent by a dx aggregate.",
	                         "An aggregate's explicit epsilon argument overrides it.", &guc_epsilon, 0.1, 0.0,
	                         1e6, PGC_USERSET, 0, check_epsilon, nullptr, nullptr);
	DefineCustomIntVariable("dxpriv.test_seed", "Seed of a deterministic noise stream (tests only).",
	                        "-1 (default) uses the kernel CSPRNG. Only superusers may set it.", &guc_test_seed,
	                        -1, -1, INT_MAX, PGC_SUSET, 0, nullptr, assign_test_seed, nullptr);
	DefineCustomEnumVariable("dxpriv.allocation", "How a query's epsilon is shared between its output cells.",
	                         "relative (default: unit-free, no cell noisier than under equal_split), "
	                         "min_total_variance (alias optimal: least sum of squared scales in raw units), "
	                         "algorithm3, equal_scale or equal_split.",
	                         &guc_allocation, 0, allocation_options, PGC_USERSET, 0, nullptr, nullptr, nullptr);
	DefineCustomEnumVariable("dxpriv.noise", "Noise family of the linear aggregates (count, sum, avg, linear).",
	                         "laplace (default; pure epsilon), gaussian (discrete Gaussian) or truncated_laplace "
	                         "(bounded noise); the last two spend the table's per-query delta (dx.set_delta).",
	                         &guc_noise, 0, noise_options, PGC_USERSET, 0, nullptr, nullptr, nullptr);
	DefineCustomEnumVariable("dxpriv.top_k", "How ORDER BY count(*) DESC LIMIT k over one GROUP BY column is answered.",
	                         "noisy (default: the k largest noisy counts, post-processing) or exponential (the k "
	                         "groups chosen by dx.top_k at half the epsilon, their counts released at the other half).",
	                         &guc_top_k, 0, top_k_options, PGC_USERSET, 0, nullptr, nullptr, nullptr);
	DefineCustomEnumVariable("dxpriv.partition_selection",
	                         "Mechanism that chooses which keys of an open GROUP BY column are released.",
	                         "optimal (default: the largest keep probabilities at the statement's epsilon and delta, "
	                         "Desfontaines et al. 2022) or laplace (noisy count above a threshold).",
	                         &guc_partition_selection, 0, selection_options, PGC_USERSET, 0, nullptr, nullptr,
	                         nullptr);
	DefineCustomIntVariable("dxpriv.cache_lifetime", "Seconds an answered query's noisy answers are reused.",
	                        "An identical query by the same role within this time gets the stored answers "
	                        "without spending budget. 0 disables reuse.",
	                        &guc_cache_lifetime, 3600, 0, 365 * 24 * 3600, PGC_SUSET, GUC_UNIT_S, nullptr, nullptr,
	                        nullptr);
	DefineCustomIntVariable("dxpriv.analysis_time_limit",
	                        "Longest time one pass of a statement's analysis may spend evaluating its expressions on "
	                        "the declared domain points.",
	                        "Over it the analysis stops with error 54000 before any row is read. Only superusers may "
	                        "change it.",
	                        &guc_analysis_time_limit, 30000, 1, INT_MAX, PGC_SUSET, GUC_UNIT_MS, nullptr, nullptr,
	                        nullptr);
	DefineCustomIntVariable("dxpriv.analysis_memory_limit",
	                        "Most memory the evaluation of a statement's expressions at one domain point may use.",
	                        "Intermediate values included (repeat(col, 50000000)); over it the analysis stops with "
	                        "error 54000. Only superusers may change it.",
	                        &guc_analysis_memory_limit, 16384, 64, MAX_KILOBYTES, PGC_SUSET, GUC_UNIT_KB, nullptr,
	                        nullptr, nullptr);
	DefineCustomBoolVariable("dxpriv.exhaustive_analysis",
	                         "Builds privacy constraints by the per-point reference paths (tests only).",
	                         "Off (default): rows computed directly from the weights, only at their breakpoints, "
	                         "repeats dropped unhashed, hash probes prefetched; on: every row through the per-point "
	                         "lists and the hash set at once. Both give the same constraints, scales and answers. Only superusers may set it.",
	                         &guc_exhaustive_analysis, false, PGC_SUSET, 0, nullptr, assign_exhaustive_analysis,
	                         nullptr);
	DefineCustomBoolVariable("dxpriv.one_pass",
	                         "Computes a statement's linear aggregates in one pass over its rows (one shared transition).",
	                         "On (default): each row is mapped to its point once and counted in one histogram per "
	                         "group, every aggregate weighing the histogram at the end. Off: one lookup and one "
	                         "transition per row and aggregate (the previous plan; same answers). Only superusers may "
	                         "change it.",
	                         &guc_one_pass, true, PGC_SUSET, 0, nullptr, nullptr, nullptr);
	DefineCustomBoolVariable("dxpriv.keys_in_scan",
	                         "Computes a grouped statement's GROUP BY keys in its row source (the scan).",
	                         "On (default): each key's lookup is a column of the table-plus-empty-groups source, so "
	                         "no projection node runs above it. Off: the keys are computed above the source (the "
	                         "previous plan; same answers). Only superusers may change it.",
	                         &guc_key_columns_in_source, true, PGC_SUSET, 0, nullptr, nullptr, nullptr);
	DefineCustomBoolVariable("dxpriv.group_fold",
	                         "Folds a GROUP BY over declared columns into one ungrouped pass over the rows.",
	                         "On (default): every row is counted once in one histogram over the statement's "
	                         "sub-universe with the key columns, cut into one state per declared group at the end "
	                         "(no hash grouping per row). Off: the rows are grouped by their keys (the previous plan; "
	                         "same answers and charge). Only superusers may change it.",
	                         &guc_group_fold, true, PGC_SUSET, 0, nullptr, nullptr, nullptr);
	DefineCustomBoolVariable("dxpriv.test_skip_stand_in_restore",
	                         "Leaves the planner's stand-ins of per-point tables in the plan (tests only).",
	                         "Off (default): every stand-in is given its table back after planning. On: the plan keeps "
	                         "them, and every reader of an internal aggregate's arguments refuses the statement "
	                         "(XX000). Only superusers may set it.",
	                         &guc_test_skip_stand_in_restore, false, PGC_SUSET, GUC_NOT_IN_SAMPLE, nullptr, nullptr,
	                         nullptr);
	DefineCustomBoolVariable("dxpriv.citus_grouped_stage",
	                         "Reads the workers' grouped sums of a GROUP BY on a Citus table as one Citus stage.",
	                         "On (default): the coordinator's statement stays local and reads the sums through "
	                         "dx._grouped_partials, which runs them as one Citus stage (no intermediate result, no "
	                         "coordinated transaction). Off: the sums are a Citus subplan (the previous plan; same "
	                         "answers and charge). Only superusers may change it.",
	                         &guc_citus_grouped_stage, true, PGC_SUSET, 0, nullptr, nullptr, nullptr);
	static const struct config_enum_entry unit_bounding_options[] = {{"hash", 0, false}, {"sort", 1, false}, {nullptr, 0, false}};
	DefineCustomEnumVariable("dxpriv.unit_bounding",
	                         "How each privacy unit's rows are bounded (the same kept rows either way).",
	                         "hash (default): one hash pass keeps each unit's rows of smallest rank, in parallel "
	                         "workers too; sort: the previous window-function plan (a sort of every row). Citus "
	                         "tables always use sort. Only superusers may change it.",
	                         &guc_unit_bounding, 0, unit_bounding_options, PGC_SUSET, 0, nullptr, nullptr, nullptr);
	DefineCustomBoolVariable("dxpriv.unit_rank_reference",
	                         "Computes the privacy unit row ranks with the generic SipHash-2-4 (for comparison).",
	                         "Off (default): dx._unit_rank uses SipHash-2-4 specialised to its 10-byte message, the "
	                         "same ranks. On: the generic code. Only superusers may change it.",
	                         &guc_unit_rank_reference, false, PGC_SUSET, 0, nullptr, nullptr, nullptr);
	define_release_progress_guc();
	unit_profile_define_gucs(); // (unitcache)
	shared_memo_define_gucs();
	MarkGUCPrefixReserved("dxpriv");
	statement::define_gucs();
	ledger::define_gucs();
	release_log_define_gucs();
	install_postprocess(); // dxpriv.postprocess (executor/consistent_release.h)
	install_hooks();
	analysis_memo_note_settings(); // after the last dxpriv.* setting is defined
}
