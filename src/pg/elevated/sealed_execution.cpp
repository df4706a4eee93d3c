// The sealed path for elevated execution: owner switches, forced settings, SPI (sealed_execution.h).
#include "pg/elevated/sealed_execution.h"

#include "pg/guard.h"

#include <cstring>
#include <exception>
#include <string>
#include <unordered_map>

extern "C" {
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "miscadmin.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"
#include "utils/snapmgr.h"
}

namespace dxpriv::pg {

namespace {

std::unordered_map<std::string, SPIPlanPtr> prepared_plans; // by statement text

constexpr const char *kSearchPath = "pg_catalog, pg_temp";

// Sets one setting at the current nest level (only when it differs: equal values need no save).
void
force(const char *name, const char *value)
{
	const char *current = GetConfigOption(name, true, false);
	if (!current)
		return; // not defined here (Citus not loaded)
	if (strcmp(current, value) == 0)
		return;
	(void) set_config_option(name, value, PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
}

// The built-in default of a setting, as text (nullptr for placeholders).
const char *
boot_value(struct config_generic *g)
{
	static char buf[64];
	switch (g->vartype) {
	case PGC_BOOL:
		return reinterpret_cast<struct config_bool *>(g)->boot_val ? "on" : "off";
	case PGC_INT:
		snprintf(buf, sizeof buf, "%d", reinterpret_cast<struct config_int *>(g)->boot_val);
		return buf;
	case PGC_REAL:
		snprintf(buf, sizeof buf, "%.17g", reinterpret_cast<struct config_real *>(g)->boot_val);
		return buf;
	case PGC_STRING: {
		const char *v = reinterpret_cast<struct config_string *>(g)->boot_val;
		return v ? v : "";
	}
	case PGC_ENUM: {
		auto *e = reinterpret_cast<struct config_enum *>(g);
		return config_enum_lookup_by_value(e, e->boot_val);
	}
	}
	return nullptr;
}

// Every citus.* setting a role, a client or the session changed (sources from ALTER ROLE on) goes
// back to its built-in default; the values of postgresql.conf, ALTER SYSTEM and ALTER DATABASE stay.
void
reset_session_citus_settings()
{
	// without Citus (not even a placeholder of its settings) there is nothing to reset: skip the walk
	// over every setting (a sealed call per row, e.g. a DBA's hash function of a unit type, pays it)
	if (!GetConfigOption("citus.max_intermediate_result_size", true, false))
		return;
	struct config_generic **vars = get_guc_variables();
	const int n = GetNumConfigOptions();
	for (int i = 0; i < n; ++i) {
		struct config_generic *g = vars[i];
		if (strncmp(g->name, "citus.", 6) != 0 || (g->flags & GUC_CUSTOM_PLACEHOLDER) || g->source < PGC_S_USER ||
		    (g->context != PGC_USERSET && g->context != PGC_SUSET))
			continue;
		const char *v = boot_value(g);
		if (v)
			force(g->name, v);
	}
}

// The search path must now be pg_catalog then the session's temporary schema (if any): a check of
// the mechanism (a setting that does not take, an assign hook that changed it).
void
check_reachable_namespaces()
{
	List *path = fetch_search_path(false);
	ListCell *lc;
	bool ok = true;
	foreach (lc, path) {
		const Oid ns = lfirst_oid(lc);
		if (ns != PG_CATALOG_NAMESPACE && !isTempNamespace(ns))
			ok = false;
	}
	list_free(path);
	if (!ok)
		ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
		                errmsg("dxpriv cannot seal its elevated execution: the search path still reaches other schemas"),
		                errhint("Nothing was run. Report this to the dxpriv maintainers.")));
}

void
apply_sealed_settings()
{
	for (const SealedSetting &s : sealed_settings())
		force(s.name, s.value);
	reset_session_citus_settings();
	check_reachable_namespaces();
}

// ---- SET commands propagated to Citus workers ----

bool propagated = false; // in the current top-level transaction
int routed_level = 0;     // routed_planning_begin's GUC nest level, 0 when none
int routed_subplans = 0;  // routed_router_on calls since routed_planning_begin

} // namespace

// See sealed_execution.h.
void
sealed_note_utility(Node *stmt)
{
	if (stmt && IsA(stmt, VariableSetStmt)) {
		// as Citus decides (commands/variableset.c, ShouldPropagateSetCommand): SET LOCAL, RESET and
		// RESET ALL while citus.propagate_set_commands = 'local'; recorded even when the command fails
		// or Citus skips the setting, and kept until the top-level transaction ends (also after a
		// ROLLBACK TO SAVEPOINT that made Citus forget it): conservative
		const char *mode = GetConfigOption("citus.propagate_set_commands", true, false);
		const VariableSetStmt *set = castNode(VariableSetStmt, stmt);
		if (mode && strcmp(mode, "local") == 0 &&
		    (set->is_local || set->kind == VAR_RESET || set->kind == VAR_RESET_ALL))
			propagated = true;
	}
}

// See sealed_execution.h.
void
sealed_reset_transaction()
{
	propagated = false;
	routed_level = 0;
}

namespace {

// The current GUC nest level (NewGUCNestLevel opens the next one; closing it at once restores it).
int
current_guc_level()
{
	const int next = NewGUCNestLevel();
	AtEOXact_GUC(true, next);
	return next - 1;
}

} // namespace

// See sealed_execution.h.
void
routed_planning_begin(int level)
{
	routed_level = level;
	routed_subplans = 0;
}

// See sealed_execution.h.
int
routed_planning_end()
{
	routed_level = 0;
	return routed_subplans;
}

// See sealed_execution.h.
bool
routed_subplan_active()
{
	if (routed_level <= 0)
		return false;
	if (current_guc_level() < routed_level) { // its planning ended with an error: forgotten
		routed_level = 0;
		return false;
	}
	return true;
}

// See sealed_execution.h.
void
routed_router_on()
{
	if (routed_level > 0 && current_guc_level() == routed_level) {
		force("citus.enable_router_execution", "on");
		routed_subplans++;
	}
}

// See sealed_execution.h.
const std::vector<SealedSetting> &
sealed_settings()
{
	static const std::vector<SealedSetting> settings = {
	    {"search_path", kSearchPath},
	    {"DateStyle", "ISO, MDY"},
	    {"IntervalStyle", "postgres"},
	    {"TimeZone", "UTC"},
	    {"lc_monetary", "C"},
	    {"lc_numeric", "C"},
	    {"lc_time", "C"},
	    {"extra_float_digits", "3"},
	    {"bytea_output", "hex"},
	    {"standard_conforming_strings", "on"},
	    {"transform_null_equals", "off"},
	    {"array_nulls", "on"},
	    {"xmloption", "content"},
	    {"gin_fuzzy_search_limit", "0"},
	    // auto_explain (when a superuser loaded it): the plans of dxpriv's own statements, with their
	    // row counts, are nobody's business, and at log_level info/notice they would reach the client
	    {"auto_explain.log_min_duration", "-1"},
	    // Citus: data-dependent errors, approximations, relayed or logged worker commands, settings
	    // sent to workers
	    {"citus.max_intermediate_result_size", "-1"},
	    {"citus.propagate_set_commands", "none"},
	    {"citus.propagate_session_settings_for_loopback_connection", "off"},
	    {"citus.limit_clause_row_fetch_count", "-1"},
	    {"citus.count_distinct_error_rate", "0"},
	    {"citus.coordinator_aggregation_strategy", "row-gather"},
	    {"citus.multi_task_query_log_level", "off"},
	    {"citus.log_remote_commands", "off"},
	    {"citus.log_local_commands", "off"},
	    {"citus.log_intermediate_results", "off"},
	    {"citus.worker_min_messages", "notice"},
	};
	return settings;
}

// See sealed_execution.h.
SealedScope::SealedScope(Oid user, bool restricted)
{
	GetUserIdAndSecContext(&saved_user_, &saved_context_);
	int context = saved_context_;
	if (OidIsValid(user))
		context |= SECURITY_LOCAL_USERID_CHANGE;
	if (restricted)
		context |= SECURITY_RESTRICTED_OPERATION;
	SetUserIdAndSecContext(OidIsValid(user) ? user : saved_user_, context);
	try {
		pg_call([&] {
			nest_ = NewGUCNestLevel();
			apply_sealed_settings();
		});
	} catch (...) {
		if (nest_ > 0) {
			try {
				pg_call([&] { AtEOXact_GUC(false, nest_); });
			} catch (...) {
			}
		}
		SetUserIdAndSecContext(saved_user_, saved_context_);
		throw;
	}
}

SealedScope::~SealedScope()
{
	const bool ok = std::uncaught_exceptions() == 0;
	try {
		pg_call([&] { AtEOXact_GUC(ok, nest_); });
	} catch (...) {
		// the (sub)transaction is aborting; its abort unwinds the nest level
	}
	SetUserIdAndSecContext(saved_user_, saved_context_);
}

// See sealed_execution.h.
CallerScope::CallerScope()
{
	GetUserIdAndSecContext(&saved_user_, &saved_context_);
	SetUserIdAndSecContext(GetOuterUserId(), saved_context_ | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
}

CallerScope::~CallerScope()
{
	SetUserIdAndSecContext(saved_user_, saved_context_);
}

// See sealed_execution.h.
int
push_sealed_settings(std::initializer_list<SealedSetting> extra)
{
	const int level = NewGUCNestLevel();
	apply_sealed_settings();
	for (const SealedSetting &s : extra)
		force(s.name, s.value);
	return level;
}

// See sealed_execution.h.
int
push_plan_settings(std::initializer_list<SealedSetting> settings)
{
	const int level = NewGUCNestLevel();
	for (const SealedSetting &s : settings)
		force(s.name, s.value);
	return level;
}

// See sealed_execution.h.
void
set_internal_setting_local(const char *name, const char *value)
{
	(void) set_config_option(name, value, PGC_SUSET, PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
}

void
pop_sealed_settings(int level)
{
	AtEOXact_GUC(true, level);
}

// See sealed_execution.h.
SealedCallState
sealed_call_enter(Oid user, bool restricted)
{
	SealedCallState state{InvalidOid, 0, 0};
	GetUserIdAndSecContext(&state.saved_user, &state.saved_context);
	const int restrict_flag = restricted ? SECURITY_RESTRICTED_OPERATION : 0;
	if (OidIsValid(user))
		SetUserIdAndSecContext(user, state.saved_context | SECURITY_LOCAL_USERID_CHANGE | restrict_flag);
	else if (restricted)
		SetUserIdAndSecContext(state.saved_user, state.saved_context | restrict_flag);
	state.level = NewGUCNestLevel();
	// errors need no restore: the (sub)transaction abort resets the user and unwinds the nest level
	apply_sealed_settings();
	return state;
}

void
sealed_call_leave(const SealedCallState &state)
{
	AtEOXact_GUC(true, state.level);
	SetUserIdAndSecContext(state.saved_user, state.saved_context);
}

// See sealed_execution.h.
bool
worker_settings_propagated()
{
	return propagated;
}

void
refuse_propagated_settings()
{
	fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
	     "analysts' queries on distributed tables cannot run after SET commands were propagated to the Citus workers "
	     "in this transaction",
	     "With citus.propagate_set_commands = 'local', Citus replays SET LOCAL on every worker connection of the "
	     "transaction, where the statement runs as the table owner. Run the query in a new transaction.");
}

// See sealed_execution.h.
SealedSpi::SealedSpi(Oid owner, bool restricted) : scope_(owner, restricted)
{
	pg_call([&] {
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "dxpriv could not connect to SPI");
		// parse analysis of utility statements runs without a snapshot
		if (!ActiveSnapshotSet()) {
			PushActiveSnapshot(GetTransactionSnapshot());
			pushed_snapshot_ = true;
		}
	});
	connected_ = true;
}

// Disconnects (normal path only); the scope then restores the settings and the caller's identity.
SealedSpi::~SealedSpi()
{
	if (connected_ && std::uncaught_exceptions() == 0) {
		try {
			pg_call([&] {
				if (pushed_snapshot_)
					PopActiveSnapshot();
				SPI_finish();
			});
		} catch (...) {
			// the transaction is aborting; AtEOXact_SPI cleans up
		}
	}
}

// Runs one statement with positional arguments $1..$n.
uint64
SealedSpi::exec(const char *sql, std::initializer_list<SqlArg> args, bool read_only)
{
	const int n = static_cast<int>(args.size());
	Oid types[8];
	Datum values[8];
	char nulls[8];
	int i = 0;
	for (const SqlArg &a : args) {
		types[i] = a.type;
		values[i] = a.value;
		nulls[i] = a.is_null ? 'n' : ' ';
		++i;
	}
	uint64 processed = 0;
	pg_call([&] {
		// Plans are prepared once per backend and kept (the statement texts are constants); the
		// plan cache re-plans them if the catalog tables change. The search path they were planned
		// with is always the sealed one.
		SPIPlanPtr &plan = prepared_plans[sql];
		if (!plan) {
			SPIPlanPtr fresh = SPI_prepare(sql, n, types);
			if (!fresh)
				elog(ERROR, "dxpriv could not prepare a catalog statement: %s", SPI_result_code_string(SPI_result));
			if (SPI_keepplan(fresh) != 0)
				elog(ERROR, "dxpriv could not keep a catalog statement");
			plan = fresh;
		}
		int rc = SPI_execute_plan(plan, values, nulls, read_only, 0);
		if (rc < 0)
			elog(ERROR, "dxpriv catalog statement failed: %s", SPI_result_code_string(rc));
		processed = SPI_processed;
	});
	return processed;
}

// See sealed_execution.h.
uint64
SealedSpi::exec_dynamic(const char *sql)
{
	uint64 processed = 0;
	pg_call([&] {
		int rc = SPI_execute(sql, true, 0);
		if (rc < 0)
			elog(ERROR, "dxpriv catalog statement failed: %s", SPI_result_code_string(rc));
		processed = SPI_processed;
	});
	return processed;
}

// See sealed_execution.h.
uint64
SealedSpi::exec_dynamic(const char *sql, const std::vector<Oid> &types, const std::vector<Datum> &values, bool read_only,
                        int expect)
{
	uint64 processed = 0;
	pg_call([&] {
		int rc = types.empty()
		             ? SPI_execute(sql, read_only, 0)
		             : SPI_execute_with_args(sql, static_cast<int>(types.size()), const_cast<Oid *>(types.data()),
		                                     const_cast<Datum *>(values.data()), nullptr, read_only, 0);
		if (rc != expect)
			elog(ERROR, "dxpriv statement failed: %s", SPI_result_code_string(rc));
		processed = SPI_processed;
	});
	return processed;
}

// See sealed_execution.h.
void
SealedSpi::scan(const char *sql, long batch, const std::function<void(SPITupleTable *, uint64)> &each)
{
	Portal portal = nullptr;
	pg_call([&] { portal = SPI_cursor_open_with_args(nullptr, sql, 0, nullptr, nullptr, nullptr, true, 0); });
	while (true) {
		uint64 n = 0;
		pg_call([&] {
			CHECK_FOR_INTERRUPTS();
			SPI_cursor_fetch(portal, true, batch);
			n = SPI_processed;
		});
		if (n == 0)
			break;
		each(SPI_tuptable, n);
		pg_call([&] { SPI_freetuptable(SPI_tuptable); });
	}
	pg_call([&] { SPI_cursor_close(portal); });
}

// True when the value is NULL.
bool
SealedSpi::is_null(uint64 row, int col) const
{
	bool isnull = false;
	SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col + 1, &isnull);
	return isnull;
}

// The raw Datum (memory owned by SPI until the scope ends).
Datum
SealedSpi::value(uint64 row, int col) const
{
	bool isnull = false;
	return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col + 1, &isnull);
}

// The value's text output.
std::string
SealedSpi::text(uint64 row, int col) const
{
	char *s = nullptr;
	pg_call([&] { s = SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col + 1); });
	return s ? std::string(s) : std::string();
}

// See sealed_execution.h.
std::vector<WorkerResult>
run_on_workers(const std::string &command)
{
	std::vector<WorkerResult> out;
	SealedSpi spi(InvalidOid);
	Datum arg = 0;
	pg_call([&] { arg = CStringGetTextDatum(command.c_str()); });
	const uint64 n = spi.exec_dynamic("SELECT success, result FROM pg_catalog.run_command_on_workers($1)", {TEXTOID},
	                                  {arg}, true, SPI_OK_SELECT);
	for (uint64 i = 0; i < n; ++i)
		out.push_back({!spi.is_null(i, 0) && DatumGetBool(spi.value(i, 0)), spi.text(i, 1)});
	return out;
}

static int internal_depth = 0;

// See sealed_execution.h.
bool
in_internal_query()
{
	return internal_depth > 0;
}

// See sealed_execution.h.
InternalScope::InternalScope()
{
	++internal_depth;
}

InternalScope::~InternalScope()
{
	if (internal_depth > 0) // 0 after internal_scope_reset()
		--internal_depth;
}

// See sealed_execution.h.
void
internal_scope_reset()
{
	internal_depth = 0;
}

} // namespace dxpriv::pg
