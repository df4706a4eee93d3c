// dx._grouped_partials: a Citus GROUP BY's native sums as one Citus stage, run through the sealed path.
//
// Placed only by the Citus split (planner/distributed_stage.h) as the source of dx._collect in a
// statement that stays local. Refuses to run unless its call is the node the split placed
// (kStageLocation: the parser never writes it, the analyzer refuses any other call) and the
// statement running it is running and paid the charge of its parameters; then stores the task's
// digest tables on the workers (as the outer Citus plan's shipment does) and runs the task, the
// grouped query the split built with every name qualified, through SealedSpi: as the current user
// (an analyst's distributed statement runs as the table owner from its ExecutorStart on), with the
// sealed settings and dxpriv's hooks off. Its rows go into the caller's tuplestore unchanged.
#include "pg/contract/noise_params.h"
#include "pg/contract/param_consts.h"
#include "pg/elevated/sealed_execution.h"
#include "pg/executor/point_table_cache.h"
#include "pg/guard.h"
#include "pg/statement/statement_context.h"

extern "C" {
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "nodes/primnodes.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"
}

#include <string>

namespace dxpriv::pg {

namespace {

// Raises unless this call is the one the split placed, in a statement that runs and paid params' charge.
void
require_placed_call(FunctionCallInfo fcinfo, const NoiseParams &p)
{
	Node *e = fcinfo->flinfo ? fcinfo->flinfo->fn_expr : nullptr;
	const bool placed = e && IsA(e, FuncExpr) && castNode(FuncExpr, e)->location == kStageLocation;
	if (!placed || !statement::all_running_and_paid({p.charge_id}))
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "internal dxpriv functions cannot be called directly",
		     "dx._grouped_partials reads the grouped sums of a dx query on a Citus table for that query only; "
		     "use dx.count, dx.sum or dx.avg.");
}

// Stores the (digest, table) pairs of shipments on the workers (once per session each).
void
ship_task_tables(ArrayType *shipments)
{
	Datum *items = nullptr;
	bool *nulls = nullptr;
	int n = 0;
	pg_call([&] { deconstruct_array(shipments, BYTEAOID, -1, false, TYPALIGN_INT, &items, &nulls, &n); });
	if (n % 2 != 0)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv one-stage shipments are not digest and table pairs");
	for (int i = 0; i < n; i += 2) {
		if (nulls[i] || nulls[i + 1])
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv one-stage shipments hold a NULL");
		ship_point_table(pg_value([&] { return DatumGetByteaPP(items[i]); }),
		                 pg_value([&] { return DatumGetByteaPP(items[i + 1]); }));
	}
}

// Raises unless the task's result columns have the types the split declared for them.
void
require_declared_columns(TupleDesc got, TupleDesc want)
{
	bool same = got->natts == want->natts;
	for (int i = 0; same && i < got->natts; ++i)
		same = TupleDescAttr(got, i)->atttypid == TupleDescAttr(want, i)->atttypid;
	if (!same)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv one-stage grouped sums returned other columns than planned",
		     "Nothing was released. Report this query to the dxpriv maintainers.");
}

} // namespace

} // namespace dxpriv::pg

using namespace dxpriv::pg;

DX_FUNCTION(dx_grouped_partials)
{
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "internal dxpriv functions cannot be called directly",
		     "dx._grouped_partials is placed by dxpriv's Citus split only.");
	const NoiseParams p = parse_noise_params(pg_value([&] { return PG_GETARG_ARRAYTYPE_P(1); }));
	require_placed_call(fcinfo, p);
	const std::string task = pg_value([&] { return text_to_cstring(PG_GETARG_TEXT_PP(0)); });
	if (!PG_ARGISNULL(2))
		ship_task_tables(pg_value([&] { return PG_GETARG_ARRAYTYPE_P(2); }));
	pg_call([&] { InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC); });
	auto *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
	Tuplestorestate *store = rsinfo->setResult;
	TupleDesc want = rsinfo->setDesc;
	{
		SealedSpi spi(InvalidOid); // the current user: the table owner for an analyst's statement
		bool checked = false;
		spi.scan(task.c_str(), 1000, [&](SPITupleTable *rows, uint64 n) {
			if (!checked) {
				require_declared_columns(rows->tupdesc, want);
				checked = true;
			}
			pg_call([&] {
				for (uint64 i = 0; i < n; ++i)
					tuplestore_puttuple(store, rows->vals[i]);
			});
		});
	}
	return (Datum) 0;
}
