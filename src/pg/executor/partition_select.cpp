// dx._partition_select: the private partition selection of an open GROUP BY key, per partition.
//
// dx._partition_select(weight float8, group int4, params float8[], selection float8[]) -> bool
// counts the rows of its partition whose weight is not NULL (the WHERE clause at the row's point,
// planner/open_keys.h) and, in its final function, draws whether the partition is released
// (core/partition_selection.h) from the backend's random source, only when the statement was
// charged. selection = [mechanism (0 optimal, 1 laplace), per-partition epsilon, per-partition
// delta]. The analyzer places it in HAVING; the released rows are those it keeps.
#include "pg/executor/agg_support.h"
#include "pg/executor/noise_source.h"
#include "pg/executor/partition_selector.h"
#include "pg/executor/release_log.h"
#include "pg/contract/noise_params.h"
#include "pg/guard.h"
#include "pg/statement/statement_context.h"
#include "pg/stand_in.h"

#include "core/partition_selection.h"

extern "C" {
#include "catalog/pg_type.h"
#include "libpq/pqformat.h"
#include "utils/array.h"
}

#include <memory>
#include <tuple>

using namespace dxpriv;
using namespace dxpriv::pg;

namespace {

struct SelectState {
	int64 rows;
	int64 charge_id;
	int32 mechanism;
	double epsilon, delta;
};

constexpr uint8 kSelectVersion = 1;
constexpr int kSelectSize = 1 + 8 + 8 + 4 + 8 + 8;

[[noreturn]] void
selection_corrupted()
{
	fail(ERRCODE_DATA_CORRUPTED, "invalid dxpriv partition selection state",
	     "Aggregate states are produced by dxpriv itself; they cannot be written by hand.");
}

} // namespace

// See pg/executor/partition_selector.h.
SelectionParams
dxpriv::pg::read_selection_params(ArrayType *sel)
{
	reject_stand_in(sel, "partition selection parameters");
	if (ARR_NDIM(sel) != 1 || ARR_HASNULL(sel) || ARR_ELEMTYPE(sel) != FLOAT8OID || ARR_DIMS(sel)[0] != 3)
		fail(ERRCODE_INTERNAL_ERROR, "malformed dxpriv partition selection parameters");
	const double *v = reinterpret_cast<const double *>(ARR_DATA_PTR(sel));
	if (!(v[0] == 0 || v[0] == 1))
		fail(ERRCODE_INTERNAL_ERROR, "malformed dxpriv partition selection parameters");
	return SelectionParams{static_cast<int>(v[0]), v[1], v[2]};
}

// See pg/executor/partition_selector.h.
const PartitionSelector &
dxpriv::pg::statement_partition_selector(int mechanism, double epsilon, double delta)
{
	static std::unique_ptr<PartitionSelector> cached;
	static std::tuple<int, double, double> key{-1, 0, 0};
	if (!cached || key != std::make_tuple(mechanism, epsilon, delta)) {
		cached.reset(); // a failed construction leaves no stale selector behind
		cached = std::make_unique<PartitionSelector>(
		    mechanism == 0 ? SelectionMechanism::Optimal : SelectionMechanism::Laplace, epsilon, delta);
		key = {mechanism, epsilon, delta};
	}
	return *cached;
}

// Transition: creates the state from the constant parameters; counts rows with a non-NULL weight.
DX_FUNCTION(dx_partition_select_transfn)
{
	SelectState *s;
	if (PG_ARGISNULL(0)) {
		MemoryContext aggctx = require_aggregate_context(fcinfo, "dx._partition_select");
		if (PG_ARGISNULL(3) || PG_ARGISNULL(4))
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv partition selection parameters must not be null");
		const NoiseParams p = parse_noise_params(pg_value([&] { return PG_GETARG_ARRAYTYPE_P(3); }));
		const SelectionParams sel = read_selection_params(pg_value([&] { return PG_GETARG_ARRAYTYPE_P(4); }));
		s = static_cast<SelectState *>(MemoryContextAllocZero(aggctx, sizeof(SelectState)));
		s->charge_id = p.charge_id;
		s->mechanism = static_cast<int32>(sel.mechanism);
		s->epsilon = sel.epsilon;
		s->delta = sel.delta;
	} else {
		s = reinterpret_cast<SelectState *>(PG_GETARG_POINTER(0));
	}
	if (!PG_ARGISNULL(1))
		++s->rows;
	PG_RETURN_POINTER(s);
}

// Combine: exact sum of two partial counts of one partition.
DX_FUNCTION(dx_partition_select_combinefn)
{
	MemoryContext aggctx = require_aggregate_context(fcinfo, "dx._partition_select");
	if (PG_ARGISNULL(1))
		PG_RETURN_POINTER(PG_ARGISNULL(0) ? nullptr : PG_GETARG_POINTER(0));
	auto *other = reinterpret_cast<SelectState *>(PG_GETARG_POINTER(1));
	if (PG_ARGISNULL(0)) {
		auto *s = static_cast<SelectState *>(MemoryContextAlloc(aggctx, sizeof(SelectState)));
		*s = *other;
		PG_RETURN_POINTER(s);
	}
	auto *s = reinterpret_cast<SelectState *>(PG_GETARG_POINTER(0));
	if (s->charge_id != other->charge_id || s->mechanism != other->mechanism || s->epsilon != other->epsilon ||
	    s->delta != other->delta)
		selection_corrupted();
	s->rows += other->rows;
	PG_RETURN_POINTER(s);
}

DX_FUNCTION(dx_partition_select_serialize)
{
	const auto *s = reinterpret_cast<const SelectState *>(PG_GETARG_POINTER(0));
	StringInfoData buf;
	pq_begintypsend(&buf);
	pq_sendbyte(&buf, kSelectVersion);
	pq_sendint64(&buf, s->rows);
	pq_sendint64(&buf, s->charge_id);
	pq_sendint32(&buf, s->mechanism);
	pq_sendfloat8(&buf, s->epsilon);
	pq_sendfloat8(&buf, s->delta);
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

DX_FUNCTION(dx_partition_select_deserialize)
{
	StringInfoData buf = bytea_reader(PG_GETARG_BYTEA_PP(0));
	if (buf.len != kSelectSize || pq_getmsgbyte(&buf) != kSelectVersion)
		selection_corrupted();
	auto *s = static_cast<SelectState *>(MemoryContextAlloc(aggregate_or_current_context(fcinfo), sizeof(SelectState)));
	s->rows = pq_getmsgint64(&buf);
	s->charge_id = pq_getmsgint64(&buf);
	s->mechanism = pq_getmsgint(&buf, 4);
	s->epsilon = pq_getmsgfloat8(&buf);
	s->delta = pq_getmsgfloat8(&buf);
	if (s->rows < 0 || (s->mechanism != 0 && s->mechanism != 1))
		selection_corrupted();
	PG_RETURN_POINTER(s);
}

// Final: true when the partition is released. Refuses a statement that was not charged.
DX_FUNCTION(dx_partition_select_finalfn)
{
	if (PG_ARGISNULL(0))
		PG_RETURN_BOOL(false); // no row: no candidate
	const auto *s = reinterpret_cast<const SelectState *>(PG_GETARG_POINTER(0));
	if (!statement::paid(s->charge_id))
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "dxpriv refuses to release an answer that was not charged",
		     "Run the query directly; dx aggregates are charged when the statement starts.");
	const PartitionSelector &sel = statement_partition_selector(s->mechanism, s->epsilon, s->delta);
	const bool kept = sel.keep(backend_random(), static_cast<uint64>(s->rows));
	release_log_open_verdict(kept); // dx.last_release() lists the partition's answers only when kept
	PG_RETURN_BOOL(kept);
}
