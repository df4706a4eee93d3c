// One pass over the rows: the shared transition of a statement's linear aggregates counts each row
// once at its point (a histogram per output group), and each aggregate's final function weighs the
// histogram with its own per-point table (planner/one_pass.h). Exact: count(u) rows of weight w(u)
// add count(u) * units(w(u)), what count(u) transitions of dx._linear_transfn add.
#include "pg/executor/agg_support.h"
#include "pg/executor/linear_state.h"
#include "pg/executor/onepass_format.h"
#include "pg/executor/row_point.h"
#include "pg/guard.h"
#include "pg/stand_in.h"

#include "core/linear_query.h"
#include "core/point_table.h"
#include "core/range_batch.h"

extern "C" {
#include "catalog/pg_type.h"
#include "libpq/pqformat.h"
#include "nodes/nodeFuncs.h"
#include "utils/array.h"
#include "utils/memutils.h"
}

#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

using namespace dxpriv;
using namespace dxpriv::pg;

namespace {

// The buffered paths (one range column, no group argument, no key column, every row real): a
// state's values wait in a buffer of this many until they are indexed together; the buffer is
// made after this many rows counted one at a time (a state of a few rows never has one).
constexpr uint32 kPendingValues = 256;
// Int4Dense serves histograms of at most this many points (16 kB of counters: they stay in the L1
// cache, so a row's count does not wait for memory). Over larger ones a row's count at a random point
// missed the L1 cache, and the buffered path, whose flush overlaps those misses, was faster
// (avg over 100,001 points: dx/native 0.93-0.95 counted at once against 0.88-0.90 buffered, backend
// CPU, test/bench/cpu_ab.py, results/session20/onepass_int/).
constexpr uint64 kDirectIntMaxPoints = 8192;

// How a state's rows after its first are counted (dx_onepass_transfn):
// * General: at once, through the call site's map (row_point_inline);
// * Count: no column, every row real: one more row at point 0 (a 64-bit counter, added at flush);
// * Float8 / Int4: one float8 range column / one int4 range column of step 1 at argument 2, every
//   row real, no group: the value is buffered, without reading the map;
// * Ordinal: one range column of another type, same conditions: its ordinal is buffered;
// * the last three count their first kPendingValues rows at once, as General, until the buffer is made;
// * Int4Dense: Int4's shape in a dense histogram of at most kDirectIntMaxPoints points, from the
//   state's first row on: the value's point
//   (unit_int_index, NULL at point 0 as lo is) counted at once, with no buffer: for an integer of
//   step 1 the index is a subtraction and a clamp, and buffering it cost more than it saved
//   (test/bench/onepass_row_callgrind.sh: 41 instructions per row beyond native's sum(int) with the
//   buffer, Int4's store and its flush; doc/performance.md "sum(int): the int4 transition without its buffer").
enum class FastPath : uint8 { General, Count, Float8, Int4, Ordinal, Int4Dense };

// One output group's histogram of row points, and the final states its aggregates built from it.
struct OnePassState {
	MemoryContext mcxt;
	int32 group;
	bool dense;
	uint64 points;
	uint16 *counts; // dense: the low 16 bits of each point's count (2 bytes a point: the array stays in cache)
	// sparse: point + 1 (0: empty slot), open addressing; dense: the counts' carries (multiples of
	// 65536), allocated on the first carry
	uint64 *keys;
	int64 *vals;
	uint64 cap, used;
	int shift; // sparse: 64 - log2(cap)
	// finalisation: the histogram's non-zero entries, and each aggregate's state (by agg_index)
	bool compacted;
	uint64 nentries;
	uint64 *entry_point;
	int64 *entry_count;
	int nfinals, cap_finals;
	int *final_index;
	LinearState **final_state;
	// The fast paths (dx_onepass_transfn): rows not yet in the histogram, which every reader of the
	// histogram counts first (flush_pending). fast says which path the state's later rows take.
	FastPath fast;
	uint32 npending;         // Float8, Int4, Ordinal: the values waiting in the buffer
	uint32 direct_rows;      // Float8, Int4, Ordinal: rows counted one at a time before the buffer
	uint64 pending_rows;     // Count: the rows not yet added at point 0
	double *pending;         // Float8, Ordinal: the values (NULL: NaN, whose index is also 0)
	int64 *pending_int;      // Int4: the values (NULL: lo, whose index is also 0)
	RangeGrid grid;          // Float8, Ordinal: the column's grid
	int64 lo_int;            // Int4, Int4Dense: the grid's integral lower bound (step 1)
};

void
sparse_alloc(OnePassState *s, uint64 cap)
{
	s->cap = cap;
	s->used = 0;
	s->shift = 64 - __builtin_ctzll(cap);
	s->keys = static_cast<uint64 *>(MemoryContextAllocExtended(s->mcxt, cap * sizeof(uint64), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO));
	s->vals = static_cast<int64 *>(MemoryContextAllocHuge(s->mcxt, cap * sizeof(int64)));
}

inline void sparse_add(OnePassState *s, uint64 point, int64 count);

void
sparse_grow(OnePassState *s)
{
	uint64 *keys = s->keys;
	int64 *vals = s->vals;
	const uint64 cap = s->cap;
	sparse_alloc(s, cap * 2);
	for (uint64 i = 0; i < cap; ++i)
		if (keys[i] != 0)
			sparse_add(s, keys[i] - 1, vals[i]);
	pfree(keys);
	pfree(vals);
}

inline void
sparse_add(OnePassState *s, uint64 point, int64 count)
{
	const uint64 key = point + 1;
	uint64 i = (key * 0x9E3779B97F4A7C15ull) >> s->shift;
	const uint64 mask = s->cap - 1;
	for (;;) {
		if (s->keys[i] == key) {
			s->vals[i] += count;
			return;
		}
		if (s->keys[i] == 0)
			break;
		i = (i + 1) & mask;
	}
	if (2 * (s->used + 1) > s->cap) {
		sparse_grow(s);
		sparse_add(s, point, count);
		return;
	}
	s->keys[i] = key;
	s->vals[i] = count;
	++s->used;
}

OnePassState *
new_one_pass_state(MemoryContext mcxt, int32 group, bool dense, uint64 points)
{
	auto *s = static_cast<OnePassState *>(MemoryContextAllocZero(mcxt, sizeof(OnePassState)));
	s->mcxt = mcxt;
	s->group = group;
	s->points = points;
	s->dense = dense && points <= kOnePassDenseMaxPoints;
	if (s->dense)
		s->counts = static_cast<uint16 *>(MemoryContextAllocExtended(mcxt, points * sizeof(uint16), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO));
	else
		sparse_alloc(s, 8); // (grows by doubling: a partition of an open key often meets few points)
	return s;
}

// A dense count's carry: amount (a multiple of 65536) added to the point's carry entry.
void
dense_carry(OnePassState *s, uint64 point, int64 amount)
{
	if (!s->keys)
		sparse_alloc(s, 64);
	sparse_add(s, point, amount);
}

// The carry of a dense point (0 when none).
inline int64
dense_carried(const OnePassState *s, uint64 point)
{
	if (!s->keys || s->used == 0)
		return 0;
	const uint64 key = point + 1;
	const uint64 mask = s->cap - 1;
	for (uint64 i = (key * 0x9E3779B97F4A7C15ull) >> s->shift;; i = (i + 1) & mask) {
		if (s->keys[i] == key)
			return s->vals[i];
		if (s->keys[i] == 0)
			return 0;
	}
}

__attribute__((always_inline)) inline void
add_count(OnePassState *s, uint64 point, int64 count)
{
	if (!s->dense) {
		sparse_add(s, point, count);
	} else if (count == 1) { // a row: the 16-bit counter, and its carry when it wraps
		if (unlikely(++s->counts[point] == 0))
			dense_carry(s, point, 65536);
	} else { // a partial state's count (> 0)
		const uint64 total = static_cast<uint64>(s->counts[point]) + static_cast<uint64>(count);
		s->counts[point] = static_cast<uint16>(total & 0xffff);
		if (total >> 16)
			dense_carry(s, point, static_cast<int64>(total & ~uint64(0xffff)));
	}
}

// Counts the rows of the fast paths at their points (the same points as row_point_inline computes
// one row at a time: RangeGrid::index and unit_int_index are its arithmetic).
[[gnu::noinline]] void
flush_pending(OnePassState *s)
{
	if (s->pending_rows > 0) {
		const int64 n = static_cast<int64>(s->pending_rows);
		s->pending_rows = 0;
		add_count(s, 0, n);
	}
	const uint32 n = s->npending;
	s->npending = 0;
	if (s->pending_int)
		for_each_unit_int_index(s->lo_int, s->grid.size, s->pending_int, n, [s](size_t u) { add_count(s, u, 1); });
	else if (s->pending)
		for_each_range_index(s->grid, s->pending, n, [s](size_t u) { add_count(s, u, 1); });
}

inline bool
has_pending(const OnePassState *s)
{
	return s->npending > 0 || s->pending_rows > 0;
}

// The fast path of a state's later rows at this call site (see FastPath).
FastPath
fast_path_of(FunctionCallInfo fcinfo, const RowPointMap &map)
{
	if (map.present_arg >= 0)
		return FastPath::General;
	if (map.shape == RowPointShape::None)
		return FastPath::Count;
	if (!map.buffered)
		return FastPath::General;
	const RowPointMap::Column &c = map.only;
	if (c.value_arg == 2 && PG_NARGS() == 3 && c.type == FLOAT8OID && !c.unit_int)
		return FastPath::Float8;
	if (c.value_arg == 2 && PG_NARGS() == 3 && c.type == INT4OID && c.unit_int)
		return FastPath::Int4;
	return c.unit_int ? FastPath::General : FastPath::Ordinal;
}

// Makes the state's buffer (Float8, Int4, Ordinal: after kPendingValues rows counted one at a time).
void
start_pending(OnePassState *s, const RowPointMap &map)
{
	const RowPointMap::Column &c = map.only;
	s->grid.lo = c.lo;
	s->grid.step = c.step;
	s->grid.inv_step = c.inv_step;
	s->grid.recip = c.recip;
	s->grid.last = c.last;
	s->grid.size = c.size;
	s->lo_int = c.lo_int;
	s->npending = 0;
	if (s->fast == FastPath::Int4)
		s->pending_int = static_cast<int64 *>(MemoryContextAlloc(s->mcxt, kPendingValues * sizeof(int64)));
	else
		s->pending = static_cast<double *>(MemoryContextAlloc(s->mcxt, kPendingValues * sizeof(double)));
}

// Calls f(point, count) for every point met (count > 0), once a point (the buffered values counted first).
template <typename F>
void
for_each_entry(OnePassState *s, F f)
{
	if (has_pending(s))
		flush_pending(s);
	if (s->dense) {
		for (uint64 u = 0; u < s->points; ++u) {
			const int64 c = static_cast<int64>(s->counts[u]) + dense_carried(s, u);
			if (c != 0)
				f(u, c);
		}
	} else {
		for (uint64 i = 0; i < s->cap; ++i)
			if (s->keys[i] != 0)
				f(s->keys[i] - 1, s->vals[i]);
	}
}

// The decoded direct arguments of a final call (cached per call site in fn_extra).
struct FinalCache {
	Datum params_source, table_source, shape_source;
	NoiseParams *params;
	unsigned char *bytes;
	PointTableView *view;
	int ncols;
	uint64 dims[64];
	int nkept;
	int kept[64];
	bool is_key[64]; // the GROUP BY key columns, which the histogram leaves out (the group gives them)
	uint64 points;   // the histogram's points: the product of the non-key columns' sizes
	bool identity;   // no key column and every column kept: a histogram point is its reduced point
};

void
destroy_final_cache(void *arg)
{
	auto *c = static_cast<FinalCache *>(arg);
	if (c->view)
		c->view->~PointTableView();
	if (c->params)
		c->params->~NoiseParams();
	c->view = nullptr;
	c->params = nullptr;
}

[[noreturn]] void
bad_arguments()
{
	fail(ERRCODE_INTERNAL_ERROR, "dxpriv one-pass aggregate parameters are not available",
	     "One-pass aggregates are placed by dxpriv's analyzer; they cannot be called directly.");
}

// The final call's parameters (direct argument 1), table (2) and shape (3: ncols, sizes, kept columns).
// Without with_table only the parameters are decoded (c.view stays null): a call without rows
// (its state NULL, e.g. a statement replayed from the answer cache) reads no table, and decoding
// one (a copy and an O(points) check) was most of a replay's cost over 10^5-point tables.
FinalCache &
final_cache(FunctionCallInfo fcinfo, bool with_table = true)
{
	if (PG_NARGS() < 4 || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3))
		bad_arguments();
	auto *c = static_cast<FinalCache *>(fcinfo->flinfo->fn_extra);
	if (c && c->params_source == PG_GETARG_DATUM(1) && c->table_source == PG_GETARG_DATUM(2) &&
	    c->shape_source == PG_GETARG_DATUM(3) && (c->view || !with_table))
		return *c;
	MemoryContext mcxt = fcinfo->flinfo->fn_mcxt;
	if (!c) {
		c = static_cast<FinalCache *>(MemoryContextAllocZero(mcxt, sizeof(FinalCache)));
		auto *cb = static_cast<MemoryContextCallback *>(MemoryContextAlloc(mcxt, sizeof(MemoryContextCallback)));
		cb->func = destroy_final_cache;
		cb->arg = c;
		MemoryContextRegisterResetCallback(mcxt, cb);
		fcinfo->flinfo->fn_extra = c;
	}
	destroy_final_cache(c);
	c->params = new (MemoryContextAlloc(mcxt, sizeof(NoiseParams))) NoiseParams(parse_noise_params(PG_GETARG_ARRAYTYPE_P(1)));
	if (!with_table) {
		c->params_source = PG_GETARG_DATUM(1);
		c->table_source = PG_GETARG_DATUM(2);
		c->shape_source = PG_GETARG_DATUM(3);
		return *c;
	}
	bytea *b = PG_GETARG_BYTEA_PP(2);
	reject_stand_in(b, "a per-point table");
	const size_t len = VARSIZE_ANY_EXHDR(b);
	c->bytes = static_cast<unsigned char *>(MemoryContextAlloc(mcxt, len > 0 ? len : 1));
	std::memcpy(c->bytes, VARDATA_ANY(b), len);
	c->view = new (MemoryContextAlloc(mcxt, sizeof(PointTableView))) PointTableView(c->bytes, len);
	ArrayType *shape = PG_GETARG_ARRAYTYPE_P(3);
	reject_stand_in(shape, "an aggregate's histogram shape");
	if (ARR_ELEMTYPE(shape) != INT8OID || ARR_HASNULL(shape) || ARR_NDIM(shape) != 1)
		bad_arguments();
	int n = ArrayGetNItems(ARR_NDIM(shape), ARR_DIMS(shape));
	const int64 *v = reinterpret_cast<const int64 *>(ARR_DATA_PTR(shape));
	if (n < 1 || v[0] < 0 || v[0] > 64 || n - 1 < v[0])
		bad_arguments();
	c->ncols = static_cast<int>(v[0]);
	// the key columns follow a -1 after the kept ones (grouped by plain columns, planner/one_pass.h)
	for (int i = 0; i < c->ncols; ++i)
		c->is_key[i] = false;
	int end = n;
	for (int i = 1 + c->ncols; i < n; ++i)
		if (v[i] == -1) {
			end = i;
			break;
		}
	for (int i = end + 1; i < n; ++i) {
		if (v[i] < 0 || v[i] >= c->ncols || (i > end + 1 && v[i] <= v[i - 1]))
			bad_arguments();
		c->is_key[v[i]] = true;
	}
	n = end;
	if (n - 1 - v[0] > v[0])
		bad_arguments();
	uint64 reduced = 1;
	c->points = 1;
	for (int i = 0; i < c->ncols; ++i) {
		if (v[1 + i] < 1)
			bad_arguments();
		c->dims[i] = static_cast<uint64>(v[1 + i]);
		if (!c->is_key[i])
			c->points *= c->dims[i];
	}
	c->nkept = n - 1 - c->ncols;
	for (int k = 0; k < c->nkept; ++k) {
		const int64 col = v[1 + c->ncols + k];
		if (col < 0 || col >= c->ncols || (k > 0 && col <= c->kept[k - 1]))
			bad_arguments();
		c->kept[k] = static_cast<int>(col);
		reduced *= c->dims[col];
	}
	if (reduced != c->view->size())
		bad_arguments();
	c->identity = c->nkept == c->ncols; // (then no key column either: the keys are left out of kept)
	for (int i = 0; i < c->ncols; ++i)
		c->identity = c->identity && !c->is_key[i];
	c->params_source = PG_GETARG_DATUM(1);
	c->table_source = PG_GETARG_DATUM(2);
	c->shape_source = PG_GETARG_DATUM(3);
	return *c;
}

// The index in the reduced table of a histogram point u of group g: u is the point over the
// non-key columns, g the point over the key columns (both last column fastest).
inline uint64
reduced_point(const FinalCache &c, uint64 u, uint64 g)
{
	uint64 idx[64];
	for (int i = c.ncols - 1; i >= 0; --i) {
		uint64 &from = c.is_key[i] ? g : u;
		idx[i] = from % c.dims[i];
		from /= c.dims[i];
	}
	uint64 r = 0;
	for (int k = 0; k < c.nkept; ++k)
		r = r * c.dims[c.kept[k]] + idx[c.kept[k]];
	return r;
}

// The histogram's non-zero entries, listed once for every aggregate's final call.
void
compact(OnePassState *s)
{
	if (s->compacted)
		return;
	uint64 n = 0;
	for_each_entry(s, [&](uint64, int64) { ++n; });
	s->entry_point = static_cast<uint64 *>(MemoryContextAllocHuge(s->mcxt, (n > 0 ? n : 1) * sizeof(uint64)));
	s->entry_count = static_cast<int64 *>(MemoryContextAllocHuge(s->mcxt, (n > 0 ? n : 1) * sizeof(int64)));
	uint64 i = 0;
	for_each_entry(s, [&](uint64 u, int64 count) {
		s->entry_point[i] = u;
		s->entry_count[i] = count;
		++i;
	});
	s->nentries = n;
	s->compacted = true;
}

// This aggregate's state of the group: built once from the histogram and its table.
LinearState *
aggregate_state(OnePassState *s, const FinalCache &c)
{
	const int index = c.params->agg_index;
	for (int i = 0; i < s->nfinals; ++i)
		if (s->final_index[i] == index)
			return s->final_state[i];
	if (s->points != c.points)
		bad_arguments();
	compact(s);
	LinearState *ls = state_for_group(s->mcxt, *c.params, s->group);
	// An average's count component adds 1 a row: its rows are added up and weighed once at the end,
	// the same units and rows as one add_repeated(1, ...) per point (every term is positive, so the
	// running sum overflows exactly when the total does).
	const bool average = ls->components == 2;
	int64 rows = 0;
	for (uint64 i = 0; i < s->nentries; ++i) {
		const uint64 u = s->entry_point[i];
		if (u >= s->points)
			onepass_state_corrupted();
		double w;
		if (!c.view->lookup(c.identity ? u : reduced_point(c, u, static_cast<uint64>(s->group)), w))
			continue; // the point contributes nothing (NULL weight)
		ls->sum[0].add_repeated(w, ls->plan[0].grid, s->entry_count[i]);
		if (average) {
			if (rows > std::numeric_limits<int64>::max() - s->entry_count[i]) { // (counts > 0)
				ls->sum[1].add_repeated(1.0, ls->plan[1].grid, rows); // (the next one overflows, as before)
				rows = 0;
			}
			rows += s->entry_count[i];
		}
	}
	if (average)
		ls->sum[1].add_repeated(1.0, ls->plan[1].grid, rows);
	if (s->nfinals == s->cap_finals) {
		const int cap = s->cap_finals == 0 ? 8 : 2 * s->cap_finals;
		int *idx = static_cast<int *>(MemoryContextAlloc(s->mcxt, cap * sizeof(int)));
		auto **st = static_cast<LinearState **>(MemoryContextAlloc(s->mcxt, cap * sizeof(LinearState *)));
		for (int i = 0; i < s->nfinals; ++i) {
			idx[i] = s->final_index[i];
			st[i] = s->final_state[i];
		}
		s->final_index = idx;
		s->final_state = st;
		s->cap_finals = cap;
	}
	s->final_index[s->nfinals] = index;
	s->final_state[s->nfinals] = ls;
	++s->nfinals;
	return ls;
}

// The released answer of the final call's aggregate.
double
one_pass_release(FunctionCallInfo fcinfo, LinearRelease kind)
{
	if (PG_ARGISNULL(0)) // no row (only without GROUP BY): as dx._linear_*_finalfn; no table read
		return release_linear_state(state_for_group(CurrentMemoryContext, *final_cache(fcinfo, false).params, 0), kind);
	const FinalCache &c = final_cache(fcinfo);
	return release_linear_state(aggregate_state(reinterpret_cast<OnePassState *>(PG_GETARG_POINTER(0)), c), kind);
}

[[noreturn]] void
bad_one_pass_layout(const char *why)
{
	fail(ERRCODE_INVALID_PARAMETER_VALUE, "malformed dxpriv one-pass layout",
	     "One-pass aggregates are placed by dxpriv's analyzer; they cannot be called directly.", why);
}

// The type of the transition's argument i (1: the first aggregated argument), from the Aggref: the
// transition's own expression leaves out as many arguments as the Aggref has direct arguments.
Oid
one_pass_arg_type(FunctionCallInfo fcinfo, int i)
{
	Aggref *a = AggGetAggref(fcinfo);
	if (!a || i < 1 || i - 1 >= list_length(a->args))
		return InvalidOid;
	return exprType((Node *) castNode(TargetEntry, list_nth(a->args, i - 1))->expr);
}

// The call site's map from its layout (argument 1): '<flags>|<columns>', flags in this order, each
// optional: 'd' a dense histogram, 'g' the output group is the next argument (int4; else 0), 'p'
// the "row is real" flag is the next argument (bool; else every row is real); then the columns'
// values (planner/one_pass.h). Constant per call site: decoded once, on its first call.
RowPointMap *
build_one_pass_map(FunctionCallInfo fcinfo)
{
	if (PG_NARGS() < 2 || PG_ARGISNULL(1))
		bad_one_pass_layout("The layout is missing.");
	const text *t = PG_GETARG_TEXT_PP(1);
	reject_stand_in(t, "a one-pass layout");
	const char *p = VARDATA_ANY(t);
	const size_t n = VARSIZE_ANY_EXHDR(t);
	size_t i = 0;
	bool dense = false, group = false, present = false;
	if (i < n && p[i] == 'd') {
		dense = true;
		++i;
	}
	if (i < n && p[i] == 'g') {
		group = true;
		++i;
	}
	if (i < n && p[i] == 'p') {
		present = true;
		++i;
	}
	if (i >= n || p[i] != '|')
		bad_one_pass_layout("The flags must be d, g, p in this order, then |.");
	int next = 2;
	const int group_arg = group ? next++ : -1;
	const int present_arg = present ? next++ : -1;
	if (next > PG_NARGS() || (group && one_pass_arg_type(fcinfo, group_arg) != INT4OID) ||
	    (present && one_pass_arg_type(fcinfo, present_arg) != BOOLOID))
		bad_one_pass_layout("The group must be an int4 argument and the present flag a bool argument.");
	RowPointMap *map = build_row_point_map(fcinfo, 1, next, true, i + 1);
	if (group && row_point_has_keys(*map)) // (key columns give the group)
		bad_one_pass_layout("A layout with key columns has no group argument.");
	map->group_arg = group_arg;
	map->present_arg = present_arg;
	map->dense = dense;
	map->buffered = (map->shape == RowPointShape::Range || map->shape == RowPointShape::UnitInt) && !group && !present &&
	                !row_point_has_keys(*map);
	return map;
}

// Whether the row is counted: a real row (false on an added empty-group row).
[[gnu::always_inline]] inline bool
row_is_real(FunctionCallInfo fcinfo, const RowPointMap &map)
{
	return map.present_arg < 0 || (!PG_ARGISNULL(map.present_arg) && PG_GETARG_BOOL(map.present_arg));
}

// Every carry of a dense state (point, carry), ascending by point: they live in its hash table.
void
dense_carries(const OnePassState *s, uint64 *&point, int64 *&carry, uint64 &n)
{
	n = s->keys ? s->used : 0;
	point = static_cast<uint64 *>(palloc((n > 0 ? n : 1) * sizeof(uint64)));
	carry = static_cast<int64 *>(palloc((n > 0 ? n : 1) * sizeof(int64)));
	uint64 k = 0;
	for (uint64 i = 0; n > 0 && i < s->cap; ++i)
		if (s->keys[i] != 0) {
			point[k] = s->keys[i] - 1;
			carry[k] = s->vals[i];
			++k;
		}
	for (uint64 i = 1; i < n; ++i) // (insertion sort: a state has a carry only where 65,536 rows met one point)
		for (uint64 j = i; j > 0 && point[j - 1] > point[j]; --j) {
			std::swap(point[j - 1], point[j]);
			std::swap(carry[j - 1], carry[j]);
		}
}

// Adds other's carries to s (both dense, of the same points).
void
add_dense_carries(OnePassState *s, const OnePassState *other)
{
	if (!other->keys)
		return;
	for (uint64 i = 0; i < other->cap; ++i)
		if (other->keys[i] != 0)
			dense_carry(s, other->keys[i] - 1, other->vals[i]);
}

// s += other, point by point (both dense, of the same points): the 16-bit counters added in one
// loop, a carry where a sum wraps, then other's carries (also the combine function's copy of a
// group's first state into a new one).
void
add_dense_state(OnePassState *s, OnePassState *other)
{
	if (has_pending(s))
		flush_pending(s);
	if (has_pending(other))
		flush_pending(other);
	uint16 *a = s->counts;
	const uint16 *b = other->counts;
	for (uint64 u = 0; u < s->points; ++u) {
		const uint32 total = static_cast<uint32>(a[u]) + b[u];
		a[u] = static_cast<uint16>(total);
		if (unlikely(total >> 16))
			dense_carry(s, u, 65536);
	}
	add_dense_carries(s, other);
}

// A dense state's bytes in version 2 (executor/onepass_format.h): its carries, then its counters.
bytea *
serialize_dense(const OnePassState *s)
{
	uint64 *point, n;
	int64 *carry;
	dense_carries(s, point, carry, n);
	const Size len = VARHDRSZ + kOnePassHeaderBytes + 16 * n + 2 * s->points;
	bytea *b = static_cast<bytea *>(palloc(len));
	SET_VARSIZE(b, len);
	char *w = VARDATA(b);
	*w++ = static_cast<char>(kOnePassDenseVersion);
	w = onepass_put_int32(w, s->group);
	*w++ = 1;
	w = onepass_put_int64(w, static_cast<int64>(s->points));
	w = onepass_put_int64(w, static_cast<int64>(n));
	for (uint64 i = 0; i < n; ++i) {
		w = onepass_put_int64(w, static_cast<int64>(point[i]));
		w = onepass_put_int64(w, carry[i]);
	}
	uint16 *out = reinterpret_cast<uint16 *>(w); // (2-byte aligned: palloc's start + 4 + 22 + 16n)
	for (uint64 u = 0; u < s->points; ++u)
		out[u] = pg_hton16(s->counts[u]);
	pfree(point);
	pfree(carry);
	return b;
}

// The state of version 2 bytes (parse_onepass_bytes checked them): counters copied, carries added.
OnePassState *
deserialize_dense(MemoryContext mcxt, const OnePassBytes &h)
{
	OnePassState *s = new_one_pass_state(mcxt, h.group, true, h.points);
	std::memcpy(s->counts, h.counts, h.points * sizeof(uint16));
	for (uint64 u = 0; u < h.points; ++u)
		s->counts[u] = pg_ntoh16(s->counts[u]);
	for (uint64 i = 0; i < h.npairs; ++i)
		dense_carry(s, static_cast<uint64>(onepass_read_int64(h.pairs + 16 * i)), onepass_read_int64(h.pairs + 16 * i + 8));
	return s;
}

} // namespace

void
dxpriv::pg::onepass_state_corrupted()
{
	fail(ERRCODE_DATA_CORRUPTED, "invalid dxpriv aggregate state",
	     "Aggregate states are produced by dxpriv itself; they cannot be written by hand.");
}

OnePassBytes
dxpriv::pg::parse_onepass_bytes(bytea *b)
{
	StringInfoData buf = bytea_reader(b);
	if (static_cast<size_t>(buf.len) < kOnePassHeaderBytes)
		onepass_state_corrupted();
	OnePassBytes h;
	h.version = static_cast<uint8>(pq_getmsgbyte(&buf));
	h.group = pq_getmsgint(&buf, 4);
	const int dense = pq_getmsgbyte(&buf);
	const int64 points = pq_getmsgint64(&buf), n = pq_getmsgint64(&buf);
	const uint64 rest = static_cast<uint64>(buf.len - buf.cursor);
	if ((h.version != kOnePassPairsVersion && h.version != kOnePassDenseVersion) || h.group < 0 ||
	    (dense != 0 && dense != 1) || points < 1 || n < 0 || static_cast<uint64>(n) > rest / 16)
		onepass_state_corrupted();
	h.dense = dense == 1;
	h.points = static_cast<uint64>(points);
	h.npairs = static_cast<uint64>(n);
	h.pairs = buf.data + buf.cursor;
	h.counts = h.pairs + 16 * h.npairs;
	if (h.version == kOnePassPairsVersion) {
		if (rest != 16 * h.npairs)
			onepass_state_corrupted();
		return h;
	}
	if (!h.dense || h.points > kOnePassDenseMaxPoints || rest != 16 * h.npairs + 2 * h.points)
		onepass_state_corrupted();
	for (uint64 i = 0; i < h.npairs; ++i) { // carries: ascending points, positive multiples of 65,536
		const int64 u = onepass_read_int64(h.pairs + 16 * i), carry = onepass_read_int64(h.pairs + 16 * i + 8);
		if (u < 0 || static_cast<uint64>(u) >= h.points || (i > 0 && u <= onepass_read_int64(h.pairs + 16 * (i - 1))) ||
		    carry <= 0 || carry % 65536 != 0)
			onepass_state_corrupted();
	}
	return h;
}

// dx._onepass_transfn(state, layout text, VARIADIC values): counts the row at its point (nothing
// for an added empty-group row: the present flag false); the layout's flags say which of the
// output group and the present flag are arguments (build_one_pass_map). The state of the group is
// created on its first row. When the layout marks GROUP BY key columns ('E', 'R', 'Q'), the
// histogram's points leave them out and the group is their point, read from the group's first row
// (no group argument then): every row of a group has the same key columns' point.
// The group's first row (and a call site's first call) take this guarded path; every later row
// takes dx_onepass_transfn's unguarded one, which computes the same point (row_point_inline: the
// same arithmetic; nothing on it throws a C++ exception).
static Datum
onepass_transfn_first_impl(FunctionCallInfo fcinfo)
{
	OnePassState *s;
	if (!fcinfo->flinfo->fn_extra)
		fcinfo->flinfo->fn_extra = build_one_pass_map(fcinfo);
	const RowPointMap &map = *static_cast<RowPointMap *>(fcinfo->flinfo->fn_extra);
	if (PG_ARGISNULL(0)) {
		MemoryContext aggctx = require_aggregate_context(fcinfo, "dxpriv aggregate");
		int32 group = 0;
		if (map.group_arg >= 0) {
			if (PG_ARGISNULL(map.group_arg))
				fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate parameters must not be null");
			group = PG_GETARG_INT32(map.group_arg);
		}
		if (row_point_has_keys(map)) {
			if (row_key_point_count(map) > static_cast<size_t>(PG_INT32_MAX))
				fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate received an invalid output group");
			group = static_cast<int32>(row_key_point(fcinfo, map));
		}
		if (group < 0)
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate received an invalid output group");
		s = new_one_pass_state(aggctx, group, map.dense, row_point_count(map));
		s->fast = fast_path_of(fcinfo, map);
		// (the histogram's points are the one column's: Int4Dense indexes over s->points)
		if (s->fast == FastPath::Int4 && s->dense && map.only.size == s->points && s->points <= kDirectIntMaxPoints) {
			s->fast = FastPath::Int4Dense;
			s->lo_int = map.only.lo_int;
		}
	} else {
		s = reinterpret_cast<OnePassState *>(PG_GETARG_POINTER(0));
	}
	if (row_is_real(fcinfo, map))
		add_count(s, row_point(fcinfo, map), 1);
	PG_RETURN_POINTER(s);
}

[[gnu::noinline]] static Datum
onepass_transfn_first(FunctionCallInfo fcinfo)
{
	return guarded([&] { return onepass_transfn_first_impl(fcinfo); });
}

// The later rows of a state whose values are buffered (Float8, Int4, Ordinal: the map's one range
// column), or of any other state (General).
[[gnu::noinline]] static Datum
onepass_transfn_rest(FunctionCallInfo fcinfo)
{
	const auto *map = static_cast<const RowPointMap *>(fcinfo->flinfo->fn_extra);
	if (unlikely(map == nullptr || PG_ARGISNULL(0)))
		return onepass_transfn_first(fcinfo);
	auto *s = reinterpret_cast<OnePassState *>(PG_GETARG_POINTER(0));
	switch (s->fast) {
	case FastPath::Ordinal:
		if (s->pending) {
			const int a = map->only.value_arg;
			s->pending[s->npending] = PG_ARGISNULL(a) ? std::numeric_limits<double>::quiet_NaN()
			                                          : ordinal_of(PG_GETARG_DATUM(a), map->only.type);
			if (unlikely(++s->npending == kPendingValues))
				flush_pending(s);
			PG_RETURN_POINTER(s);
		}
		[[fallthrough]];
	case FastPath::Float8:
	case FastPath::Int4: // (the buffer is not made yet)
		add_count(s, row_point_inline(fcinfo, *map), 1);
		if (++s->direct_rows == kPendingValues)
			start_pending(s, *map);
		PG_RETURN_POINTER(s);
	case FastPath::Count: // (a state made by the combine or deserialise function: never on this path)
	case FastPath::General:
	case FastPath::Int4Dense: // (taken by dx_onepass_transfn itself)
		break;
	}
	if (row_is_real(fcinfo, *map))
		add_count(s, row_point_inline(fcinfo, *map), 1);
	PG_RETURN_POINTER(s);
}

// A later row of a General state (s, argument 0): its point through the call site's map, as the
// per-row path was before the fast paths (a separate function, so that the fast paths save no register).
[[gnu::noinline]] static Datum
onepass_transfn_general(FunctionCallInfo fcinfo, OnePassState *s)
{
	const auto *map = static_cast<const RowPointMap *>(fcinfo->flinfo->fn_extra);
	if (unlikely(map == nullptr))
		return onepass_transfn_rest(fcinfo);
	if (row_is_real(fcinfo, *map))
		add_count(s, row_point_inline(fcinfo, *map), 1);
	PG_RETURN_POINTER(s);
}

// Int4Dense: point u's 16-bit counter wrapped; its carry is added, then the state returned.
[[gnu::noinline]] static Datum
onepass_int4_carry(OnePassState *s, uint64 u)
{
	dense_carry(s, u, 65536);
	PG_RETURN_POINTER(s);
}

// A full buffer: counted, then the state returned.
[[gnu::noinline]] static Datum
onepass_flush_full(OnePassState *s)
{
	flush_pending(s);
	PG_RETURN_POINTER(s);
}

extern "C" {
PG_FUNCTION_INFO_V1(dx_onepass_transfn);
// The per-row path. The fast paths read only the state and the value argument (argument 2, where
// the state's first row found the map's one column: fast_path_of); everything else takes
// onepass_transfn_rest. Neither allocates nor raises an error, except when a dense 16-bit counter
// carries (dense_carry: memory only), a buffer is made (memory only) or a generic column's indexer
// detoasts a value; no C++ object is alive here.
Datum
dx_onepass_transfn(PG_FUNCTION_ARGS)
{
	if (likely(!PG_ARGISNULL(0))) {
		auto *s = reinterpret_cast<OnePassState *>(PG_GETARG_POINTER(0));
		if (s->fast == FastPath::Int4Dense) { // (first: sum(int) is the closest of these to its goal)
			const uint64 u = PG_ARGISNULL(2) ? 0 : unit_int_index(PG_GETARG_INT32(2), s->lo_int, s->points);
			if (unlikely(++s->counts[u] == 0))
				return onepass_int4_carry(s, u);
			PG_RETURN_POINTER(s);
		}
		switch (s->fast) {
		case FastPath::Float8:
			if (likely(s->pending != nullptr)) {
				const uint32 n = s->npending; // (read once: the store below may alias it as far as the compiler knows)
				s->pending[n] = PG_ARGISNULL(2) ? std::numeric_limits<double>::quiet_NaN() : PG_GETARG_FLOAT8(2);
				s->npending = n + 1;
				if (unlikely(n + 1 == kPendingValues))
					return onepass_flush_full(s);
				PG_RETURN_POINTER(s);
			}
			break;
		case FastPath::Int4:
			if (likely(s->pending_int != nullptr)) {
				const uint32 n = s->npending;
				s->pending_int[n] = PG_ARGISNULL(2) ? s->lo_int : static_cast<int64>(PG_GETARG_INT32(2));
				s->npending = n + 1;
				if (unlikely(n + 1 == kPendingValues))
					return onepass_flush_full(s);
				PG_RETURN_POINTER(s);
			}
			break;
		case FastPath::Count:
			++s->pending_rows;
			PG_RETURN_POINTER(s);
		case FastPath::General:
			return onepass_transfn_general(fcinfo, s);
		case FastPath::Ordinal:
		case FastPath::Int4Dense:
			break;
		}
	}
	return onepass_transfn_rest(fcinfo);
}
}

// dx._onepass_combinefn(state, state): the sum of two histograms of the same group.
DX_FUNCTION(dx_onepass_combinefn)
{
	MemoryContext aggctx = require_aggregate_context(fcinfo, "dxpriv aggregate");
	if (PG_ARGISNULL(1))
		PG_RETURN_POINTER(PG_ARGISNULL(0) ? nullptr : PG_GETARG_POINTER(0));
	auto *other = reinterpret_cast<OnePassState *>(PG_GETARG_POINTER(1));
	OnePassState *s = PG_ARGISNULL(0) ? new_one_pass_state(aggctx, other->group, other->dense, other->points)
	                                  : reinterpret_cast<OnePassState *>(PG_GETARG_POINTER(0));
	if (s->group != other->group || s->points != other->points || s->dense != other->dense || s->compacted)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv cannot combine states of different queries or groups");
	if (s->dense)
		add_dense_state(s, other);
	else
		for_each_entry(other, [&](uint64 u, int64 count) { add_count(s, u, count); }); // (other's buffer first)
	PG_RETURN_POINTER(s);
}

// dx._onepass_serialize(state) -> bytea (executor/onepass_format.h): a dense histogram as its
// counters when that is smaller than its (point, count) pairs, else as the pairs.
DX_FUNCTION(dx_onepass_serialize)
{
	auto *s = reinterpret_cast<OnePassState *>(PG_GETARG_POINTER(0));
	uint64 n = 0;
	for_each_entry(s, [&](uint64, int64) { ++n; });
	const uint64 ncarries = s->dense && s->keys ? s->used : 0;
	if (s->dense && 2 * s->points + 16 * ncarries < 16 * n)
		PG_RETURN_BYTEA_P(serialize_dense(s));
	StringInfoData buf;
	pq_begintypsend(&buf);
	pq_sendbyte(&buf, kOnePassPairsVersion);
	pq_sendint32(&buf, s->group);
	pq_sendbyte(&buf, s->dense ? 1 : 0);
	pq_sendint64(&buf, static_cast<int64>(s->points));
	pq_sendint64(&buf, static_cast<int64>(n));
	for_each_entry(s, [&](uint64 u, int64 count) {
		pq_sendint64(&buf, static_cast<int64>(u));
		pq_sendint64(&buf, count);
	});
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

// dx._onepass_deserialize(bytea, internal) -> state; refuses malformed bytes (data corrupted).
DX_FUNCTION(dx_onepass_deserialize)
{
	const OnePassBytes h = parse_onepass_bytes(PG_GETARG_BYTEA_PP(0));
	MemoryContext mcxt = aggregate_or_current_context(fcinfo);
	if (h.version == kOnePassDenseVersion)
		PG_RETURN_POINTER(deserialize_dense(mcxt, h));
	OnePassState *s = new_one_pass_state(mcxt, h.group, h.dense, h.points);
	for_each_onepass_entry(h, [&](uint64 u, int64 count) { add_count(s, u, count); });
	PG_RETURN_POINTER(s);
}

// Final function of dx._onepass_count (direct arguments: parameters, table, shape): the noisy count.
DX_FUNCTION(dx_onepass_count_finalfn)
{
	PG_RETURN_INT64(count_as_bigint(one_pass_release(fcinfo, LinearRelease::Count)));
}

// Final function of dx._onepass_sum: the noisy sum.
DX_FUNCTION(dx_onepass_sum_finalfn)
{
	PG_RETURN_FLOAT8(one_pass_release(fcinfo, LinearRelease::Sum));
}

// Final function of dx._onepass_avg: the noisy average, NULL when post-processing withholds it.
DX_FUNCTION(dx_onepass_avg_finalfn)
{
	const double v = one_pass_release(fcinfo, LinearRelease::Avg);
	if (std::isnan(v))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(v);
}
