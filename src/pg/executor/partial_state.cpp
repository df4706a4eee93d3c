// Distributed execution (Citus): the noisy linear aggregates split into exact partial sums on the
// workers — PostgreSQL's sum(bigint) of dx._units (native partials), or the partial aggregate
// dx._partial whose state (every output group's exact sums) Citus ships between nodes as text
// through the type dx._linear_partial — and the release functions dx._release_count/_sum/_avg/_part that
// draw one cell's noise on the coordinator that charged the statement (planner/distributed.h places
// them). dx._state_of and dx._collect turn native sums into that state on the coordinator.
#include "pg/ledger/charge.h"
#include "pg/contract/noise_params.h"
#include "pg/statement/statement_context.h"
#include "pg/executor/agg_support.h"
#include "pg/executor/grid_units.h"
#include "pg/executor/dispersion_part.h"
#include "pg/executor/linear_state.h"
#include "pg/guard.h"
#include "pg/stand_in.h"

extern "C" {
#include "catalog/pg_type.h"
#include "libpq/pqformat.h"
#include "utils/builtins.h"
}

#include <cmath>
#include <cstring>
#include <limits>

using namespace dxpriv;
using namespace dxpriv::pg;

namespace {

constexpr uint8 kPartialVersion = 1;
// Cap on groups x components of one state (8 MB in memory): dx.explain's work limits stop larger
// group sets long before this.
constexpr int64 kMaxCells = 1 << 18;

// The identity of a release a state belongs to: every state combined or released must match.
struct PartialHeader {
	int32 components;
	int32 groups;
	int64 charge_id;
	double epsilon;
	int32 relid; // the coordinator's OID, compared only there
	int32 agg_index;
};

// One cell's exact sum in grid units (the int128 split in two: a varlena is only 8-byte aligned).
struct PartialCell {
	int64 units_hi;
	uint64 units_lo;
	int64 rows;
	double grid;
};

Size
partial_size(int64 cells)
{
	return VARHDRSZ + sizeof(PartialHeader) + cells * sizeof(PartialCell);
}

PartialHeader
header_of(const bytea *v)
{
	PartialHeader h;
	memcpy(&h, VARDATA_ANY(v), sizeof h);
	return h;
}

char *
cell_ptr(bytea *v, int64 i)
{
	return VARDATA(v) + sizeof(PartialHeader) + i * sizeof(PartialCell);
}

GridSum
cell_sum(const PartialCell &c)
{
	GridSum s;
	s.units = static_cast<__int128>((static_cast<unsigned __int128>(static_cast<uint64>(c.units_hi)) << 64) | c.units_lo);
	s.rows = c.rows;
	return s;
}

void
set_cell_sum(PartialCell &c, const GridSum &s)
{
	const auto u = static_cast<unsigned __int128>(s.units);
	c.units_hi = static_cast<int64>(static_cast<uint64>(u >> 64));
	c.units_lo = static_cast<uint64>(u);
	c.rows = s.rows;
}

[[noreturn]] void
partial_corrupted(const char *what)
{
	fail(ERRCODE_DATA_CORRUPTED, std::string("invalid dxpriv partial state: ") + what,
	     "Partial states are produced by dxpriv itself; they cannot be written by hand.");
}

// Checks a state's size against its header (states from other nodes, from text or from disk).
bytea *
checked(Datum d)
{
	bytea *v = DatumGetByteaPP(d);
	if (VARSIZE_ANY_EXHDR(v) < sizeof(PartialHeader))
		partial_corrupted("too short");
	PartialHeader h = header_of(v);
	if (h.components < 1 || h.components > 2 || h.groups < 1 || int64(h.groups) * h.components > kMaxCells)
		partial_corrupted("bad shape");
	if (VARSIZE_ANY(v) != partial_size(int64(h.groups) * h.components))
		partial_corrupted("bad size");
	return v;
}

// A new state with the cells of every group of p, empty, in mcxt.
bytea *
new_partial(MemoryContext mcxt, const NoiseParams &p)
{
	const int64 cells = int64(p.groups) * p.components;
	if (cells > kMaxCells)
		fail(ERRCODE_PROGRAM_LIMIT_EXCEEDED, "too many output groups for a distributed dx aggregate",
		     "Group by fewer or coarser keys.");
	auto *v = static_cast<bytea *>(MemoryContextAllocZero(mcxt, partial_size(cells)));
	SET_VARSIZE(v, partial_size(cells));
	PartialHeader h{p.components, p.groups, p.charge_id, p.epsilon, static_cast<int32>(p.relid), p.agg_index};
	memcpy(VARDATA(v), &h, sizeof h);
	for (int g = 0; g < p.groups; ++g)
		for (int c = 0; c < p.components; ++c) {
			PartialCell cell{0, 0, 0, p.grid(g, c)};
			memcpy(cell_ptr(v, int64(g) * p.components + c), &cell, sizeof cell);
		}
	return v;
}

PartialCell
read_cell(bytea *v, int64 i)
{
	PartialCell c;
	memcpy(&c, cell_ptr(v, i), sizeof c);
	return c;
}

// Adds w to cell i.
void
add_to_cell(bytea *v, int64 i, double w)
{
	PartialCell c = read_cell(v, i);
	GridSum s = cell_sum(c);
	s.add(w, c.grid);
	set_cell_sum(c, s);
	memcpy(cell_ptr(v, i), &c, sizeof c);
}

bool
same_release(const PartialHeader &a, const PartialHeader &b)
{
	return a.components == b.components && a.groups == b.groups && a.charge_id == b.charge_id &&
	       a.epsilon == b.epsilon && a.relid == b.relid && a.agg_index == b.agg_index;
}

// An exact integer sum from a native sum(bigint) (numeric), as int128; refuses fractions and
// values beyond int128 (never produced by sums of bigints of fewer than 2^64 rows).
__int128
numeric_units(Datum n)
{
	char *text = nullptr;
	pg_call([&] { text = DatumGetCString(DirectFunctionCall1(numeric_out, n)); });
	const char *c = text;
	const bool negative = *c == '-';
	if (negative)
		++c;
	if (!*c)
		partial_corrupted("empty sum");
	constexpr unsigned __int128 kMax = (static_cast<unsigned __int128>(1) << 127) - 1;
	unsigned __int128 v = 0;
	for (; *c; ++c) {
		if (*c < '0' || *c > '9' || v > (kMax - (*c - '0')) / 10)
			partial_corrupted("the sum of a distributed release is not an integer in range");
		v = v * 10 + static_cast<unsigned>(*c - '0');
	}
	return negative ? -static_cast<__int128>(v) : static_cast<__int128>(v);
}

// Adds a native partial (the sum of a group's weights in grid units, and its number of rows with a
// weight) to group g of state v; an average's count component counts each row as 1 on its grid,
// as dx._partial_transfn does.
void
add_native(bytea *v, int32 g, Datum units, bool units_null, int64 rows)
{
	const PartialHeader h = header_of(v);
	if (g < 0 || g >= h.groups || rows < 0)
		partial_corrupted("bad native partial");
	for (int c = 0; c < h.components; ++c) {
		PartialCell cell = read_cell(v, int64(g) * h.components + c);
		GridSum add;
		if (c == 0) {
			add.units = units_null ? 0 : numeric_units(units);
		} else if (__builtin_mul_overflow(static_cast<__int128>(rows), to_grid_units(1.0, cell.grid), &add.units)) {
			partial_corrupted("count out of range");
		}
		add.rows = rows;
		GridSum s = cell_sum(cell);
		s.merge(add);
		set_cell_sum(cell, s);
		memcpy(cell_ptr(v, int64(g) * h.components + c), &cell, sizeof cell);
	}
}

// Releases one cell (its state, released as `kind`, in `released` when asked): the parameters are the analyzer's constants from the coordinator's plan (what
// was charged); the state, from the workers, contributes only its exact sums, and must belong to
// the same release with the same grids.
double
release_partial(FunctionCallInfo fcinfo, LinearRelease kind, LinearState **released = nullptr)
{
	if (PG_ARGISNULL(1) || PG_ARGISNULL(2))
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv release parameters must not be null");
	const NoiseParams p = parse_noise_params(PG_GETARG_ARRAYTYPE_P(1));
	const int group = PG_GETARG_INT32(2);
	if (!statement::paid(p.charge_id))
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "dxpriv refuses to release an answer that was not charged",
		     "Run the query directly; dx aggregates are charged when the statement starts.");
	LinearState *s = state_for_group(CurrentMemoryContext, p, group);
	if (!PG_ARGISNULL(0)) {
		bytea *v = checked(PG_GETARG_DATUM(0));
		PartialHeader expected{p.components, p.groups, p.charge_id, p.epsilon, static_cast<int32>(p.relid), p.agg_index};
		if (!same_release(header_of(v), expected))
			fail(ERRCODE_DATA_CORRUPTED, "dxpriv partial state does not belong to this release",
			     "Partial states are combined only within the statement that was charged for them.");
		for (int c = 0; c < p.components; ++c) {
			PartialCell cell = read_cell(v, int64(group) * p.components + c);
			if (cell.grid != p.grid(group, c))
				fail(ERRCODE_DATA_CORRUPTED, "dxpriv partial state does not belong to this release");
			s->sum[c] = cell_sum(cell);
		}
	}
	if (released)
		*released = s;
	return release_linear_state(s, kind);
}

} // namespace

// dx._linear_partial_in(cstring): \x<hex> of the state in network byte order, validated.
DX_FUNCTION(dx_linear_partial_in)
{
	const char *text = PG_GETARG_CSTRING(0);
	bytea *bytes = nullptr;
	pg_call([&] { bytes = DatumGetByteaPP(DirectFunctionCall1(byteain, CStringGetDatum(text))); });
	StringInfoData buf = bytea_reader(bytes);
	if (buf.len < 1 + 32 || pq_getmsgbyte(&buf) != kPartialVersion)
		partial_corrupted("bad version");
	PartialHeader h;
	h.components = pq_getmsgint(&buf, 4);
	h.groups = pq_getmsgint(&buf, 4);
	h.charge_id = pq_getmsgint64(&buf);
	h.epsilon = pq_getmsgfloat8(&buf);
	h.relid = pq_getmsgint(&buf, 4);
	h.agg_index = pq_getmsgint(&buf, 4);
	if (h.components < 1 || h.components > 2 || h.groups < 1 || int64(h.groups) * h.components > kMaxCells)
		partial_corrupted("bad shape");
	const int64 cells = int64(h.groups) * h.components;
	if (buf.len != 1 + 32 + cells * 32)
		partial_corrupted("bad size");
	auto *v = static_cast<bytea *>(palloc0(partial_size(cells)));
	SET_VARSIZE(v, partial_size(cells));
	memcpy(VARDATA(v), &h, sizeof h);
	for (int64 i = 0; i < cells; ++i) {
		PartialCell c;
		c.units_hi = pq_getmsgint64(&buf);
		c.units_lo = static_cast<uint64>(pq_getmsgint64(&buf));
		c.rows = pq_getmsgint64(&buf);
		c.grid = pq_getmsgfloat8(&buf);
		if (c.rows < 0 || !(c.grid > 0) || !std::isfinite(c.grid))
			partial_corrupted("bad cell");
		memcpy(cell_ptr(v, i), &c, sizeof c);
	}
	PG_RETURN_BYTEA_P(v);
}

// dx._linear_partial_out(dx._linear_partial): \x<hex> of the state in network byte order.
DX_FUNCTION(dx_linear_partial_out)
{
	bytea *v = checked(PG_GETARG_DATUM(0));
	PartialHeader h = header_of(v);
	StringInfoData buf;
	pq_begintypsend(&buf);
	pq_sendbyte(&buf, kPartialVersion);
	pq_sendint32(&buf, h.components);
	pq_sendint32(&buf, h.groups);
	pq_sendint64(&buf, h.charge_id);
	pq_sendfloat8(&buf, h.epsilon);
	pq_sendint32(&buf, h.relid);
	pq_sendint32(&buf, h.agg_index);
	const int64 cells = int64(h.groups) * h.components;
	for (int64 i = 0; i < cells; ++i) {
		PartialCell c = read_cell(v, i);
		pq_sendint64(&buf, c.units_hi);
		pq_sendint64(&buf, static_cast<int64>(c.units_lo));
		pq_sendint64(&buf, c.rows);
		pq_sendfloat8(&buf, c.grid);
	}
	bytea *bytes = pq_endtypsend(&buf);
	char *out = nullptr;
	pg_call([&] { out = DatumGetCString(DirectFunctionCall1(byteaout, PointerGetDatum(bytes))); });
	PG_RETURN_CSTRING(out);
}

// dx._partial_transfn(state, weight, group, params): adds one row to its group's cells, in place
// (the state lives in the aggregate's context), so a row costs no allocation.
DX_FUNCTION(dx_partial_transfn)
{
	MemoryContext aggctx = require_aggregate_context(fcinfo, "dxpriv aggregate");
	bytea *v;
	if (PG_ARGISNULL(0)) {
		if (PG_ARGISNULL(3))
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate parameters must not be null");
		v = new_partial(aggctx, parse_noise_params(PG_GETARG_ARRAYTYPE_P(3)));
	} else {
		v = reinterpret_cast<bytea *>(PG_GETARG_POINTER(0));
	}
	if (!PG_ARGISNULL(1)) {
		const PartialHeader h = header_of(v);
		const int32 g = PG_ARGISNULL(2) ? -1 : PG_GETARG_INT32(2);
		if (g < 0 || g >= h.groups)
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate received an invalid output group");
		add_to_cell(v, int64(g) * h.components, PG_GETARG_FLOAT8(1));
		if (h.components == 2)
			add_to_cell(v, int64(g) * h.components + 1, 1.0);
	}
	PG_RETURN_POINTER(v);
}

// dx._partial_combinefn(state, state): exact merge of two partial states of the same release.
DX_FUNCTION(dx_partial_combinefn)
{
	MemoryContext aggctx = require_aggregate_context(fcinfo, "dxpriv aggregate");
	if (PG_ARGISNULL(1))
		PG_RETURN_POINTER(PG_ARGISNULL(0) ? nullptr : PG_GETARG_POINTER(0));
	bytea *other = checked(PG_GETARG_DATUM(1));
	if (PG_ARGISNULL(0)) {
		auto *copy = static_cast<bytea *>(MemoryContextAlloc(aggctx, VARSIZE_ANY(other)));
		memcpy(copy, other, VARSIZE_ANY(other));
		PG_RETURN_POINTER(copy);
	}
	auto *v = reinterpret_cast<bytea *>(PG_GETARG_POINTER(0));
	const PartialHeader h = header_of(v);
	if (!same_release(h, header_of(other)))
		fail(ERRCODE_DATA_CORRUPTED, "dxpriv cannot combine partial states of different releases");
	const int64 cells = int64(h.groups) * h.components;
	for (int64 i = 0; i < cells; ++i) {
		PartialCell a = read_cell(v, i), b = read_cell(other, i);
		if (a.grid != b.grid)
			fail(ERRCODE_DATA_CORRUPTED, "dxpriv cannot combine partial states of different releases");
		GridSum s = cell_sum(a);
		s.merge(cell_sum(b));
		set_cell_sum(a, s);
		memcpy(cell_ptr(v, i), &a, sizeof a);
	}
	PG_RETURN_POINTER(v);
}

// dx._release_count(state, params, group): the noisy count of one cell, rounded.
DX_FUNCTION(dx_release_count)
{
	PG_RETURN_INT64(count_as_bigint(release_partial(fcinfo, LinearRelease::Count)));
}

// dx._release_sum(state, params, group): the noisy sum (dx.sum, dx.linear) of one cell.
DX_FUNCTION(dx_release_sum)
{
	PG_RETURN_FLOAT8(release_partial(fcinfo, LinearRelease::Sum));
}

// dx._release_avg(state, params, group): the noisy average of one cell; NULL when post-processing
// withholds it (NaN: its count is too noisy), as dx.avg's final function answers on a local table.
DX_FUNCTION(dx_release_avg)
{
	const double v = release_partial(fcinfo, LinearRelease::Avg);
	if (std::isnan(v))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(v);
}

// dx._release_part(state, params, group): one part of a dispersion statistic (stddev, corr, ...)
// with its noise variance, as dx._noisy_part's final function releases it on a local table.
DX_FUNCTION(dx_release_part)
{
	LinearState *s = nullptr;
	const double answer = release_partial(fcinfo, LinearRelease::Part, &s);
	PG_RETURN_ARRAYTYPE_P(released_part_array(s, answer));
}


// dx._units(weight, grid): the weight in grid units, for PostgreSQL's sum(bigint) on the workers;
// refuses weights beyond bigint.
DX_FUNCTION(dx_units)
{
	PG_RETURN_INT64(weight_grid_units(PG_GETARG_FLOAT8(0), PG_GETARG_FLOAT8(1)));
}

// dx._units(weight, group, grids): the same on the grid of the row's group (grids[group + 1]); the
// grids are read once per call site (fn_extra).
DX_FUNCTION(dx_units_by_group)
{
	struct Grids {
		int n;
		double grid[FLEXIBLE_ARRAY_MEMBER];
	};
	auto *grids = static_cast<Grids *>(fcinfo->flinfo->fn_extra);
	if (!grids) {
		ArrayType *a = PG_GETARG_ARRAYTYPE_P(2);
		reject_stand_in(a, "a release's grids");
		if (ARR_NDIM(a) > 1)
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "dxpriv grids must be a one-dimensional array",
			     "dx._units is placed by the dxpriv analyzer with the grids of a release's noise plan.");
		Datum *elems;
		bool *nulls;
		int n;
		pg_call([&] { deconstruct_array(a, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &elems, &nulls, &n); });
		grids = static_cast<Grids *>(MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, offsetof(Grids, grid) + n * sizeof(double)));
		grids->n = n;
		for (int i = 0; i < n; ++i)
			grids->grid[i] = nulls[i] ? 0.0 : DatumGetFloat8(elems[i]); // 0: refused by weight_grid_units
		fcinfo->flinfo->fn_extra = grids;
	}
	const int32 g = PG_GETARG_INT32(1);
	if (g < 0 || g >= grids->n)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate received an invalid output group",
		     "dx._units is placed by the dxpriv analyzer with the grids of every group of a release.");
	PG_RETURN_INT64(weight_grid_units(PG_GETARG_FLOAT8(0), grids->grid[g]));
}

// dx._state_of(units, rows, params, group): the state of a release without GROUP BY from the
// coordinator's combined native sums (NULL units: no row).
DX_FUNCTION(dx_state_of)
{
	if (PG_ARGISNULL(2) || PG_ARGISNULL(3))
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate parameters must not be null");
	bytea *v = new_partial(CurrentMemoryContext, parse_noise_params(PG_GETARG_ARRAYTYPE_P(2)));
	add_native(v, PG_GETARG_INT32(3), PG_ARGISNULL(0) ? 0 : PG_GETARG_DATUM(0), PG_ARGISNULL(0),
	           PG_ARGISNULL(1) ? 0 : PG_GETARG_INT64(1));
	PG_RETURN_BYTEA_P(v);
}

// dx._collect_transfn(state, group, units, rows, params): one group's native sums (a row of the
// workers' GROUP BY, combined by Citus) into the state of every group, on the coordinator.
DX_FUNCTION(dx_collect_transfn)
{
	MemoryContext aggctx = require_aggregate_context(fcinfo, "dxpriv aggregate");
	bytea *v;
	if (PG_ARGISNULL(0)) {
		if (PG_ARGISNULL(4))
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate parameters must not be null");
		v = new_partial(aggctx, parse_noise_params(PG_GETARG_ARRAYTYPE_P(4)));
	} else {
		v = reinterpret_cast<bytea *>(PG_GETARG_POINTER(0));
	}
	const int64 rows = PG_ARGISNULL(3) ? 0 : PG_GETARG_INT64(3);
	if (PG_ARGISNULL(2) && rows == 0)
		PG_RETURN_POINTER(v); // rows without a weight (outside every group or NULL values) add nothing
	if (PG_ARGISNULL(1))
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate received an invalid output group");
	add_native(v, PG_GETARG_INT32(1), PG_ARGISNULL(2) ? 0 : PG_GETARG_DATUM(2), PG_ARGISNULL(2), rows);
	PG_RETURN_POINTER(v);
}
