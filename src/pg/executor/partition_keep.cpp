// dx._release_selection: the private partition selection of an open GROUP BY key on a distributed table.
//
// dx._release_selection(contributors int8, params float8[], selection float8[]) -> bool is the
// coordinator's half of planner/distributed_open.h: the workers counted the partition's
// contributors (rows whose weight is not NULL, or distinct units) with PostgreSQL's count, Citus
// added the shards' counts, and this function draws whether the partition is released, exactly as
// dx._partition_select's final function does on a local table (executor/partition_select.cpp):
// same selector, same random source, same verdict for dx.last_release(). It refuses a statement
// that was not charged in this backend (a worker, or a call written by hand), so a worker's task
// query can never select. selection = [mechanism (0 optimal, 1 laplace), per-partition epsilon,
// per-partition delta]. A NULL count (no row) is never kept.
#include "pg/executor/noise_source.h"
#include "pg/executor/partition_selector.h"
#include "pg/executor/release_log.h"
#include "pg/contract/noise_params.h"
#include "pg/guard.h"
#include "pg/statement/statement_context.h"

#include "core/partition_selection.h"

extern "C" {
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
}

using namespace dxpriv;
using namespace dxpriv::pg;

DX_FUNCTION(dx_release_selection)
{
	if (PG_ARGISNULL(1) || PG_ARGISNULL(2))
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv partition selection parameters must not be null");
	const NoiseParams p = parse_noise_params(pg_value([&] { return PG_GETARG_ARRAYTYPE_P(1); }));
	if (!statement::paid(p.charge_id))
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "dxpriv refuses to release an answer that was not charged",
		     "Run the query directly; dx aggregates are charged when the statement starts.");
	const SelectionParams sel = read_selection_params(pg_value([&] { return PG_GETARG_ARRAYTYPE_P(2); }));
	if (PG_ARGISNULL(0))
		PG_RETURN_BOOL(false); // no row: no candidate
	const int64 n = PG_GETARG_INT64(0);
	if (n < 0)
		fail(ERRCODE_DATA_CORRUPTED, "invalid dxpriv partition selection count",
		     "The count of a partition's contributors is computed by dxpriv's own plan.");
	const PartitionSelector &s = statement_partition_selector(sel.mechanism, sel.epsilon, sel.delta);
	const bool kept = s.keep(backend_random(), static_cast<uint64>(n));
	release_log_open_verdict(kept); // dx.last_release() lists the partition's answers only when kept
	PG_RETURN_BOOL(kept);
}
