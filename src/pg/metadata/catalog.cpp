// InternalSpi: SPI access to the dx catalog as the extension owner, with hooks disabled.
#include "pg/metadata/catalog.h"

#include <cstring>
#include <exception>
#include <string>
#include <unordered_map>

#include "pg/guard.h"

extern "C" {
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
}

namespace dxpriv::pg {

static int internal_depth = 0;
static std::unordered_map<std::string, SPIPlanPtr> prepared_plans; // by statement text

// Runs run() (an SPI execution, inside pg_call) with auto_explain switched off when a superuser
// loaded it: the plans of dxpriv's own catalog statements, with their row counts, are nobody's
// business, and at auto_explain.log_level info or notice they would reach the client (an analyst's
// too: before the catalog is read dxpriv cannot know whose session it is).
template <class Run>
static void
without_auto_explain(Run &&run)
{
	const char *d = GetConfigOption("auto_explain.log_min_duration", true, false);
	if (!d || strcmp(d, "-1") == 0) {
		run();
		return;
	}
	const int level = NewGUCNestLevel();
	PG_TRY();
	{
		(void) set_config_option("auto_explain.log_min_duration", "-1", PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SAVE,
		                         true, 0, false);
		run();
	}
	PG_FINALLY();
	{
		AtEOXact_GUC(false, level);
	}
	PG_END_TRY();
}

// See dxpriv.h.
bool
in_internal_query()
{
	return internal_depth > 0;
}

// See catalog.h.
InternalScope::InternalScope()
{
	++internal_depth;
}

InternalScope::~InternalScope()
{
	--internal_depth;
}

// Switches to the owner and connects SPI.
InternalSpi::InternalSpi(Oid owner)
{
	GetUserIdAndSecContext(&saved_user_, &saved_context_);
	SetUserIdAndSecContext(owner, saved_context_ | SECURITY_LOCAL_USERID_CHANGE);
	++internal_depth;
	try {
		pg_call([&] {
			if (SPI_connect() != SPI_OK_CONNECT)
				elog(ERROR, "dxpriv could not connect to SPI");
			// parse analysis of utility statements runs without a snapshot
			if (!ActiveSnapshotSet()) {
				PushActiveSnapshot(GetTransactionSnapshot());
				pushed_snapshot_ = true;
			}
		});
	} catch (...) {
		--internal_depth;
		SetUserIdAndSecContext(saved_user_, saved_context_);
		throw;
	}
	connected_ = true;
}

// Disconnects (normal path only) and restores the caller's identity.
InternalSpi::~InternalSpi()
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
	--internal_depth;
	SetUserIdAndSecContext(saved_user_, saved_context_);
}

// Runs one statement with positional arguments $1..$n.
uint64
InternalSpi::exec(const char *sql, std::initializer_list<SqlArg> args, bool read_only)
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
		// plan cache re-plans them if the catalog tables change.
		SPIPlanPtr &plan = prepared_plans[sql];
		if (!plan) {
			SPIPlanPtr fresh = SPI_prepare(sql, n, types);
			if (!fresh)
				elog(ERROR, "dxpriv could not prepare a catalog statement: %s", SPI_result_code_string(SPI_result));
			if (SPI_keepplan(fresh) != 0)
				elog(ERROR, "dxpriv could not keep a catalog statement");
			plan = fresh;
		}
		int rc = 0;
		without_auto_explain([&] { rc = SPI_execute_plan(plan, values, nulls, read_only, 0); });
		if (rc < 0)
			elog(ERROR, "dxpriv catalog statement failed: %s", SPI_result_code_string(rc));
		processed = SPI_processed;
	});
	return processed;
}

// See catalog.h.
uint64
InternalSpi::exec_dynamic(const char *sql)
{
	uint64 processed = 0;
	pg_call([&] {
		int rc = 0;
		without_auto_explain([&] { rc = SPI_execute(sql, true, 0); });
		if (rc < 0)
			elog(ERROR, "dxpriv catalog statement failed: %s", SPI_result_code_string(rc));
		processed = SPI_processed;
	});
	return processed;
}

// True when the value is NULL.
bool
InternalSpi::is_null(uint64 row, int col) const
{
	bool isnull = false;
	SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col + 1, &isnull);
	return isnull;
}

// The raw Datum (memory owned by SPI until the scope ends).
Datum
InternalSpi::value(uint64 row, int col) const
{
	bool isnull = false;
	return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col + 1, &isnull);
}

// The value's text output.
std::string
InternalSpi::text(uint64 row, int col) const
{
	char *s = nullptr;
	pg_call([&] { s = SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col + 1); });
	return s ? std::string(s) : std::string();
}

} // namespace dxpriv::pg
