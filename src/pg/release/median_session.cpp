// dx.median_session_open / _query / _queries: the median mechanism (core/median_mechanism.h) as an
// interactive session whose state lives in dx.median_sessions. Order of work as for releases:
// validate, charge (open: the first sparse-vector run and the row count; a hard query: its
// measurement and the next run), then read the table by domain-point mapping and answer.
//
// State and the ledger: a query runs outside any transaction block and locks its session row; its
// state change commits with the answer. Every charge is a ledger row with fingerprint
// 'median:<id>', and the session counts them: if a charged answer's state change is lost (crash or
// cancel before commit), the counts differ and the session refuses every further query, so that a
// sparse-vector run that has ended is never continued.
#include "pg/metadata/extension_objects.h"
#include "pg/executor/noise_source.h"
#include "pg/ledger/charge.h"
#include "pg/guard.h"
#include "pg/metadata/protected_rows.h"
#include "pg/metadata/catalog.h"
#include "pg/release/synthetic_release.h"

#include "core/median_mechanism.h"
#include "core/release_steps.h"

extern "C" {
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

#include <cmath>
#include <cstring>
#include <string>

using namespace dxpriv;
using namespace dxpriv::pg;

namespace {

const ExtensionObjects &
ext_or_fail()
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv is not installed in this database");
	return *ext;
}

std::string
fingerprint_of(int64 id)
{
	return "median:" + std::to_string(id);
}

// One session row, read and locked.
struct SessionRow {
	int64 id = 0;
	Oid role = InvalidOid, source = InvalidOid;
	ArrayType *columns = nullptr; // text[] (copied into the caller's context)
	std::string workload;
	ArrayType *weights = nullptr;
	double epsilon_hard = 0;
	int charges = 0, answered = 0;
	std::string status;
	std::string state;
	int64 ledger_charges = 0;
};

SessionRow
load_session(int64 id, bool lock)
{
	const ExtensionObjects &ext = ext_or_fail();
	SessionRow row;
	row.id = id;
	MemoryContext caller = CurrentMemoryContext;
	InternalSpi spi(ext.schema_owner);
	const char *sql = lock ? "SELECT role, source, columns::text[], workload, weights, epsilon_hard, charges, answered, status, "
	                         "state FROM dx.median_sessions WHERE id = $1 FOR UPDATE"
	                       : "SELECT role, source, columns::text[], workload, weights, epsilon_hard, charges, answered, status, "
	                         "state FROM dx.median_sessions WHERE id = $1";
	if (spi.exec(sql, {{INT8OID, Int64GetDatum(id)}}, !lock) == 0)
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "median session " + std::to_string(id) + " does not exist",
		     "Open one with dx.median_session_open; dx.my_median_sessions lists yours.");
	row.role = DatumGetObjectId(spi.value(0, 0));
	row.source = DatumGetObjectId(spi.value(0, 1));
	row.workload = spi.text(0, 3);
	row.epsilon_hard = DatumGetFloat8(spi.value(0, 5));
	row.charges = DatumGetInt32(spi.value(0, 6));
	row.answered = DatumGetInt32(spi.value(0, 7));
	row.status = spi.text(0, 8);
	pg_call([&] {
		MemoryContext old = MemoryContextSwitchTo(caller);
		row.columns = DatumGetArrayTypePCopy(spi.value(0, 2));
		if (!spi.is_null(0, 4))
			row.weights = DatumGetArrayTypePCopy(spi.value(0, 4));
		bytea *b = DatumGetByteaPP(spi.value(0, 9));
		row.state.assign(VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b));
		MemoryContextSwitchTo(old);
	});
	Datum fp = 0;
	pg_call([&] { fp = CStringGetTextDatum(fingerprint_of(id).c_str()); });
	spi.exec("SELECT count(*) FROM dx.ledger WHERE fingerprint = $1", {{TEXTOID, fp}}, true);
	row.ledger_charges = DatumGetInt64(spi.value(0, 0));
	return row;
}

void
save_session(int64 id, const MedianSession &s, int charges, int answered, const char *status)
{
	const ExtensionObjects &ext = ext_or_fail();
	const std::string bytes = s.serialize();
	Datum state = 0, st = 0;
	pg_call([&] {
		bytea *b = static_cast<bytea *>(palloc(VARHDRSZ + bytes.size()));
		SET_VARSIZE(b, VARHDRSZ + bytes.size());
		memcpy(VARDATA(b), bytes.data(), bytes.size());
		state = PointerGetDatum(b);
		st = CStringGetTextDatum(status);
	});
	InternalSpi spi(ext.schema_owner);
	spi.exec("UPDATE dx.median_sessions SET state = $2, hard = $3, charges = $4, answered = $5, status = $6 WHERE id = $1",
	         {{INT8OID, Int64GetDatum(id)},
	          {BYTEAOID, state},
	          {INT4OID, Int32GetDatum(s.hard)},
	          {INT4OID, Int32GetDatum(charges)},
	          {INT4OID, Int32GetDatum(answered)},
	          {TEXTOID, st}},
	         false);
}

// The session's workload over its source, rebuilt from the catalog row.
Workload
session_workload(const ReleaseSource &src, const SessionRow &row)
{
	return row.weights ? array_workload(src, row.weights) : text_workload(src, row.workload);
}

// The row of the current role's open session, checked against the ledger.
SessionRow
own_session(int64 id, bool lock)
{
	const Oid me = GetUserId();
	SessionRow row = load_session(id, lock);
	if (row.role != me)
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "median session " + std::to_string(id) + " belongs to another role",
		     "Each role queries only the sessions it opened; see dx.my_median_sessions.");
	return row;
}

// A two-dimensional float8 array of weight vectors (one row per query), as array_workload reads it.
ArrayType *
weight_array(const std::vector<std::vector<double>> &rows)
{
	std::vector<Datum> flat;
	for (const auto &r : rows)
		for (double v : r)
			flat.push_back(Float8GetDatum(v));
	int dims[2] = {static_cast<int>(rows.size()), rows.empty() ? 0 : static_cast<int>(rows[0].size())};
	int lbs[2] = {1, 1};
	ArrayType *a = nullptr;
	pg_call([&] {
		a = construct_md_array(flat.data(), nullptr, 2, dims, lbs, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL,
		                       TYPALIGN_DOUBLE);
	});
	return a;
}

} // namespace

// dx.median_session_open(source, columns, workload text | float8[][], epsilon_hard, alpha, size,
// max_hard) -> bigint.
DX_FUNCTION(dx_median_session_open)
{
	for (int i = 0; i < 4; ++i)
		if (PG_ARGISNULL(i))
			fail(ERRCODE_NULL_VALUE_NOT_ALLOWED, "source, columns, workload and epsilon_hard must not be null",
			     "Example: SELECT dx.median_session_open('patients', ARRAY['sex', 'diagnosis'], 'marginals:1', 0.5).");
	Oid relid = InvalidOid;
	ArrayType *columns = nullptr;
	WorkloadArgument workload;
	double eps_hard = 0, alpha = 0.05;
	int size = 0, max_hard = 0;
	bool size_given = false, max_given = false;
	pg_call([&] {
		relid = PG_GETARG_OID(0);
		columns = PG_GETARG_ARRAYTYPE_P(1);
		workload = read_workload_argument(fcinfo, 2);
		eps_hard = PG_GETARG_FLOAT8(3);
		if (!PG_ARGISNULL(4))
			alpha = PG_GETARG_FLOAT8(4);
		if (!PG_ARGISNULL(5)) {
			size = PG_GETARG_INT32(5);
			size_given = true;
		}
		if (!PG_ARGISNULL(6)) {
			max_hard = PG_GETARG_INT32(6);
			max_given = true;
		}
	});
	if ((size_given && size < 1) || (max_given && max_hard < 1))
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "size and max_hard must be at least 1",
		     "Leave them out (NULL) for the defaults.");
	ReleaseSource src;
	load_release_source(relid, columns, src);
	require_row_level_table(relid, "dx.median_session_open"); // before the charge
	if (workload.predicates) {
		// evaluated once, at open, on the declared points: the session keeps them as weight vectors
		std::vector<std::string> labels;
		workload.weights = weight_array(predicate_weights(src, workload.predicates, labels));
		workload.text = "predicates";
	}
	const Workload w = workload.weights ? array_workload(src, workload.weights) : text_workload(src, workload.text);
	check_median_arguments(w, eps_hard, alpha, size);
	const double open_eps = eps_hard / 2 * (count_is_public(src.sub) ? 1 : 2);

	const ExtensionObjects &ext = ext_or_fail();
	int64 id = 0;
	{
		InternalSpi spi(ext.schema_owner);
		spi.exec("SELECT nextval('dx.median_sessions_id_seq')", {}, false);
		id = DatumGetInt64(spi.value(0, 0));
	}
	charge_release(relid, open_eps, "median (open)", {}, fingerprint_of(id), statement_text());

	const std::vector<std::int64_t> counts = read_histogram(src, "dx.median_session_open");
	double spent = 0;
	const MedianSession s = median_open(src.sub, w, counts, eps_hard, alpha, size, max_hard, backend_random(), &spent);
	const std::string bytes = s.serialize();
	std::string cols;
	for (size_t i = 0; i < src.names.size(); ++i)
		cols += std::string(i ? "," : "") + src.names[i];
	const Oid role = GetUserId();
	Datum state = 0, cols_text = 0, wl = 0;
	pg_call([&] {
		bytea *b = static_cast<bytea *>(palloc(VARHDRSZ + bytes.size()));
		SET_VARSIZE(b, VARHDRSZ + bytes.size());
		memcpy(VARDATA(b), bytes.data(), bytes.size());
		state = PointerGetDatum(b);
		cols_text = CStringGetTextDatum(cols.c_str());
		wl = CStringGetTextDatum(workload.predicates ? "predicates" : workload.weights ? "weights" : workload.text.c_str());
	});
	InternalSpi spi(ext.schema_owner);
	spi.exec("INSERT INTO dx.median_sessions (id, role, source, columns, workload, weights, epsilon_hard, alpha, size, "
	         "max_hard, charges, state) VALUES ($1, $2, $3, string_to_array($4, ',')::name[], $5, $6, $7, $8, 0, 0, 1, "
	         "''::bytea)",
	         {{INT8OID, Int64GetDatum(id)},
	          {OIDOID, ObjectIdGetDatum(role)},
	          {OIDOID, ObjectIdGetDatum(relid)},
	          {TEXTOID, cols_text},
	          {TEXTOID, wl},
	          {FLOAT8ARRAYOID, workload.weights ? PointerGetDatum(workload.weights) : (Datum) 0, workload.weights == nullptr},
	          {FLOAT8OID, Float8GetDatum(eps_hard)},
	          {FLOAT8OID, Float8GetDatum(alpha)}},
	         false);
	spi.exec("UPDATE dx.median_sessions SET size = $2, max_hard = $3, state = $4 WHERE id = $1",
	         {{INT8OID, Int64GetDatum(id)},
	          {INT4OID, Int32GetDatum(s.size)},
	          {INT4OID, Int32GetDatum(s.max_hard)},
	          {BYTEAOID, state}},
	         false);
	PG_RETURN_INT64(id);
}

// dx.median_session_query(session bigint, query int) -> (answer, hard, epsilon, reused, status).
DX_FUNCTION(dx_median_session_query)
{
	const int64 id = PG_GETARG_INT64(0);
	const int32 query = PG_GETARG_INT32(1);
	if (IsTransactionBlock())
		fail(ERRCODE_ACTIVE_SQL_TRANSACTION, "median session queries cannot run inside a transaction block",
		     "Run dx.median_session_query on its own (autocommit), so that its state change commits with its answer.");
	SessionRow row = own_session(id, true);
	// more ledger rows than the state knows: a charged answer's state change was lost (fewer is an
	// earlier call of this same statement, whose ledger row this statement's snapshot cannot see)
	if (row.ledger_charges > row.charges)
		fail(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
		     "median session " + std::to_string(id) + " lost the state of a charged answer",
		     "Its answers can no longer be given privately; open a new session with dx.median_session_open.");
	MedianSession s = MedianSession::parse(row.state);
	if (query < 1 || static_cast<size_t>(query) > s.answers.size())
		fail(ERRCODE_INVALID_PARAMETER_VALUE,
		     "query must be between 1 and " + std::to_string(s.answers.size()),
		     "dx.median_session_queries lists the workload's queries.");
	const size_t k = static_cast<size_t>(query - 1);
	double answer = s.answers[k], epsilon = 0;
	bool hard = s.was_hard[k] != 0, reused = !std::isnan(answer), paid = true;
	std::string status = row.status;
	// an answer already given is public: returned again, free, whatever the session's status
	if (!reused && row.status != "open")
		fail(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, "median session " + std::to_string(id) + " is " + row.status,
		     "Answers already given are still returned; open a new session with dx.median_session_open for others.");
	if (!reused) {
		if (s.hard >= s.max_hard) {
			save_session(id, s, row.charges, row.answered, "aborted");
			status = "aborted";
			paid = false;
		} else {
			ReleaseSource src;
			load_release_source(row.source, row.columns, src);
			const Workload w = session_workload(src, row);
			const std::vector<std::int64_t> counts = read_histogram(src, "dx.median_session_query");
			hard = median_is_hard(s, w, k, counts, backend_random());
			if (hard) {
				try {
					charge_release(row.source, row.epsilon_hard, "median (hard query)", {}, fingerprint_of(id),
					               statement_text());
				} catch (const UserError &e) {
					// the run has ended (hard) but the next one cannot be paid: close the session
					if (e.sqlstate != ERRCODE_INSUFFICIENT_RESOURCES && e.sqlstate != ERRCODE_INSUFFICIENT_PRIVILEGE &&
					    e.sqlstate != ERRCODE_INVALID_PARAMETER_VALUE)
						throw;
					paid = false;
				}
				if (paid) {
					double scale = 0;
					answer = median_answer_hard(s, src.sub, w, k, counts, backend_random(), &scale);
					epsilon = row.epsilon_hard;
					save_session(id, s, row.charges + 1, row.answered + 1, s.hard >= s.max_hard ? "aborted" : "open");
					status = s.hard >= s.max_hard ? "aborted" : "open";
				} else {
					save_session(id, s, row.charges, row.answered, "exhausted");
					status = "exhausted";
				}
			} else {
				answer = median_answer_easy(s, w, k);
				save_session(id, s, row.charges, row.answered + 1, "open");
			}
		}
	}
	TupleDesc desc = nullptr;
	Datum result = 0;
	pg_call([&] {
		if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
			elog(ERROR, "dx.median_session_query must return a record");
		desc = BlessTupleDesc(desc);
		Datum values[5];
		bool nulls[5] = {!paid, false, false, false, false};
		values[0] = Float8GetDatum(answer);
		values[1] = BoolGetDatum(hard);
		values[2] = Float8GetDatum(epsilon);
		values[3] = BoolGetDatum(reused);
		values[4] = CStringGetTextDatum(status.c_str());
		result = HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
	});
	return result;
}

// dx.median_session_queries(session bigint) -> (query, label, answer, hard): the workload's labels
// (from the declared domains) and the answers given so far.
DX_FUNCTION(dx_median_session_queries)
{
	const int64 id = PG_GETARG_INT64(0);
	SessionRow row = own_session(id, false);
	const MedianSession s = MedianSession::parse(row.state);
	ReleaseSource src;
	load_release_source(row.source, row.columns, src);
	const Workload w = session_workload(src, row);
	pg_call([&] {
		InitMaterializedSRF(fcinfo, 0);
		ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
		for (size_t k = 0; k < w.queries.size() && k < s.answers.size(); ++k) {
			Datum values[4];
			bool nulls[4] = {false, false, std::isnan(s.answers[k]), std::isnan(s.answers[k])};
			values[0] = Int32GetDatum(static_cast<int32>(k + 1));
			values[1] = CStringGetTextDatum(w.queries[k].label.c_str());
			values[2] = Float8GetDatum(s.answers[k]);
			values[3] = BoolGetDatum(s.was_hard[k] != 0);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	});
	return (Datum) 0;
}
