// The one sealed path for elevated execution: owner switches, SPI, statements sent to Citus workers.
//
// Whatever dxpriv runs with rights the analyst lacks (catalog lookups as the extension owner, reads of
// a protected table for attribute privacy and synthetic releases, the per-point tables stored on the
// workers, an analyst's distributed statement executed as the table owner) runs inside a SealedScope:
//   * the user is switched (or kept) with SECURITY_LOCAL_USERID_CHANGE;
//   * a GUC nest level forces the settings of sealed_settings(): search_path = pg_catalog, pg_temp
//     (pg_temp last: never searched for functions or operators, after pg_catalog for relations and
//     types), the formatting settings (DateStyle, IntervalStyle, TimeZone, lc_monetary/numeric/time,
//     extra_float_digits, bytea_output, standard_conforming_strings), transform_null_equals and
//     array_nulls, and the Citus settings that change semantics or turn into data-dependent errors
//     (citus.max_intermediate_result_size = -1, citus.propagate_set_commands = none, ...); every
//     other citus.* setting the role, the client or the session changed falls back to its built-in
//     default (values from postgresql.conf, ALTER SYSTEM and ALTER DATABASE are kept);
//   * it refuses to run when an object the analyst controls could be reached: a search_path other
//     than the forced one after forcing (a check of the mechanism), or, for statements that reach
//     Citus workers, SET LOCAL commands the session propagated to the workers in this transaction
//     (citus.propagate_set_commands = 'local': Citus replays them on every worker connection, where
//     a propagated search_path would resolve the workers' unqualified names in the analyst's schema).
// Every SQL text dxpriv emits inside the scope qualifies its names (pg_catalog.count, OPERATOR(...),
// ::pg_catalog.float8); the forced search_path makes any name left unqualified resolve in pg_catalog.
//
// test/check_sealed_paths.sh fails when an owner switch, SPI call or setting change appears outside
// src/pg/elevated (its allow-list names the exceptions and why).
#pragma once

extern "C" {
#include "postgres.h"
#include "executor/spi.h"
}

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

namespace dxpriv::pg {

// One forced setting of the sealed path.
struct SealedSetting {
	const char *name;
	const char *value;
};
// The settings forced inside every SealedScope (besides the citus.* fallback described above).
const std::vector<SealedSetting> &sealed_settings();

// RAII scope (C++ frames only): runs as `user` (InvalidOid keeps the current user) with the sealed
// settings; `restricted` adds SECURITY_RESTRICTED_OPERATION. The destructor restores the settings
// and the user, also while an exception unwinds (a PostgreSQL error caught by pg_call).
class SealedScope {
public:
	explicit SealedScope(Oid user, bool restricted = false);
	~SealedScope();
	SealedScope(const SealedScope &) = delete;
	SealedScope &operator=(const SealedScope &) = delete;

private:
	Oid saved_user_ = InvalidOid;
	int saved_context_ = 0;
	int nest_ = 0;
};

// RAII scope: runs as the calling role (GetOuterUserId(), outside SECURITY DEFINER functions) in a
// security-restricted operation, settings unchanged. It lowers rights: the DBA functions run as the
// extension owner, and user code a declaration reaches (a domain's CHECK) must run as the caller.
class CallerScope {
public:
	CallerScope();
	~CallerScope();
	CallerScope(const CallerScope &) = delete;
	CallerScope &operator=(const CallerScope &) = delete;

private:
	Oid saved_user_ = InvalidOid;
	int saved_context_ = 0;
};

// Opens a GUC nest level with the sealed settings (no user switch) and `extra` settings, and returns
// it; close it with pop_sealed_settings (an error unwinds it with the (sub)transaction). For
// PostgreSQL frames (hooks).
int push_sealed_settings(std::initializer_list<SealedSetting> extra = {});
// Opens a GUC nest level with only `settings` (planner settings dxpriv imposes on the caller's own
// statement, e.g. to keep final functions in the leader); close it with pop_sealed_settings.
int push_plan_settings(std::initializer_list<SealedSetting> settings);
void pop_sealed_settings(int level);
// A statement planned with Citus's router planner off whose distributed subplans turn it back on
// (planner/distributed_route.h): routed_planning_begin(level) records the GUC nest level its planning
// opened (push_sealed_settings), routed_planning_end() forgets it (also at transaction end) and
// returns how many subplans turned the router planner back on meanwhile.
// routed_subplan_active() is true while that statement's planning calls the planner again (Citus's
// recursive planner planning a subplan), at or below its level; routed_router_on() then turns the
// router planner back on at the statement's own level (closed, hence restored, by its pop), so that
// Citus plans the final query over the intermediate results on the coordinator.
void routed_planning_begin(int level);
int routed_planning_end();
bool routed_subplan_active();
void routed_router_on();
// Sets one of dxpriv's own superuser-only settings for the rest of the transaction (a PostgreSQL
// frame: call inside pg_call), e.g. the charge ids the leader publishes to its parallel workers.
void set_internal_setting_local(const char *name, const char *value);

// What sealed_call restores (plain data: a PostgreSQL error may longjmp over it).
struct SealedCallState {
	Oid saved_user;
	int saved_context;
	int level;
};
// restricted adds SECURITY_RESTRICTED_OPERATION (sealed_scan.h's reads).
SealedCallState sealed_call_enter(Oid user, bool restricted = false);
void sealed_call_leave(const SealedCallState &state);

// Runs f (a PostgreSQL frame: it may ereport) as `user` (InvalidOid: no switch) with the sealed
// settings; restores both on return. On error PostgreSQL's (sub)transaction abort restores them, as
// it does for SECURITY DEFINER functions. No C++ object is live across f. restricted: f runs in a
// security-restricted operation (a DBA's function run as a table owner on stored values).
template <class F>
void
sealed_call(Oid user, F &&f, bool restricted = false)
{
	const SealedCallState state = sealed_call_enter(user, restricted);
	f();
	sealed_call_leave(state);
}

// Runs f as `owner` through sealed_call when owner is valid (an analyst's distributed release run
// as the table owner); f runs unchanged, with no user switch or forced settings, otherwise.
template <class F>
void
as_owner(Oid owner, F &&f)
{
	if (!OidIsValid(owner)) {
		f();
		return;
	}
	sealed_call(owner, f);
}

// True after the session propagated SET LOCAL/RESET commands to the Citus workers in the current
// transaction (citus.propagate_set_commands = 'local'): statements sent to workers would then run
// under settings the analyst chose. refuse_propagated_settings() raises the refusal (42501).
bool worker_settings_propagated();
void refuse_propagated_settings();

// One typed SQL argument.
struct SqlArg {
	Oid type;
	Datum value;
	bool is_null = false;
};

// True while dxpriv runs its own SPI queries (an InternalScope is alive): hooks must then stay out of the way.
bool in_internal_query();

// RAII scope: while alive, dxpriv's hooks ignore the statements being analysed (dxpriv's own
// generated SQL).
// internal_scope_reset() forgets every open scope (top-level transaction end outside the ledger
// worker: a scope skipped by a PostgreSQL error would otherwise keep the hooks off for the session).
void internal_scope_reset();
class InternalScope {
public:
	InternalScope();
	~InternalScope();
	InternalScope(const InternalScope &) = delete;
	InternalScope &operator=(const InternalScope &) = delete;
};

// RAII scope: SPI inside a SealedScope as `owner` (InvalidOid: the current user) with the hooks
// disabled. On the normal path the destructor disconnects; on an exception the transaction abort
// cleans SPI up. Contract: every call into PostgreSQL from inside the scope goes through these
// methods or pg_call(); every name in the SQL given is schema-qualified.
class SealedSpi {
public:
	explicit SealedSpi(Oid owner, bool restricted = false);
	~SealedSpi();
	SealedSpi(const SealedSpi &) = delete;
	SealedSpi &operator=(const SealedSpi &) = delete;

	// Executes sql (a constant text: prepared once per backend and kept); returns the number of rows
	// processed. Throws PgError on failure.
	uint64 exec(const char *sql, std::initializer_list<SqlArg> args, bool read_only);
	// Executes a read-only statement built at run time (not prepared or cached).
	uint64 exec_dynamic(const char *sql);
	// Executes a statement built at run time with arguments; `expect` is the SPI result code required.
	uint64 exec_dynamic(const char *sql, const std::vector<Oid> &types, const std::vector<Datum> &values, bool read_only,
	                    int expect);
	// Reads a read-only statement's rows through a cursor, `batch` rows at a time: `each` gets the
	// batch (SPI_tuptable) and its size.
	void scan(const char *sql, long batch, const std::function<void(SPITupleTable *, uint64)> &each);
	// Accessors of the last result (row and column from 0); valid until the next exec().
	bool is_null(uint64 row, int col) const;
	Datum value(uint64 row, int col) const;
	std::string text(uint64 row, int col) const;

private:
	SealedScope scope_;
	InternalScope internal_;
	bool connected_ = false;
	bool pushed_snapshot_ = false;
};

// Runs `command` on every Citus worker through pg_catalog.run_command_on_workers, sealed as the
// current user. Returns one (success, result text) per worker.
struct WorkerResult {
	bool success = false;
	std::string result;
};
std::vector<WorkerResult> run_on_workers(const std::string &command);

// Stage "utility", second (ProcessUtility_hook): records SET LOCAL / RESET commands that Citus
// propagates to its workers (worker_settings_propagated). Never raises.
void sealed_note_utility(Node *stmt);

// Forgets the propagated settings (top-level transaction end, commit or abort).
void sealed_reset_transaction();

} // namespace dxpriv::pg
