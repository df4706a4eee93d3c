// Execution by lookup: a row is mapped to its point of the query's sub-universe by dxpriv's own
// domain indexers and its contribution is read from the per-point table the analysis built
// (core/point_table.h). No expression of the query is evaluated on the row.
#include "pg/metadata/policy_domain.h"
#include "pg/executor/agg_support.h"
#include "pg/executor/domain_index.h"
#include "pg/executor/grid_units.h"
#include "pg/executor/point_table_cache.h"
#include "pg/executor/row_point.h"
#include "pg/guard.h"
#include "pg/stand_in.h"

#include "core/point_table.h"

extern "C" {
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "nodes/nodeFuncs.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
}

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>

using namespace dxpriv;
using namespace dxpriv::pg;

namespace {

// A call site's varlena argument as it was last decoded (a table or its SHA-256, a layout, group
// keys). A plan constant (a Const, what dxpriv's rewriting places) is the same Datum at every row,
// so its pointer identifies it. Any other argument (a column, a computed value, a PL/pgSQL
// variable: direct calls only) may bring other bytes at the address a previous row's value had
// (per-tuple memory is reset and reused), so its payload is kept and compared at every row.
struct ArgKey {
	bool valid;
	int is_const; // 0 not known yet, 1 a Const, -1 not
	Datum source; // a Const's Datum
	char *bytes;  // not a Const: the payload, in fn_mcxt
	size_t len;
};

// A call site's deconstructed array of values per group (dx._group_key, dx._group_key_int), in fn_mcxt.
struct GroupValues {
	ArgKey source;
	ArrayType *array; // the copy that by-reference values point into
	Datum *values;
	bool *nulls;
	int count;
};

// Per-call-site cache: the decoded table (lives in fn_mcxt; the view is destroyed by a reset
// callback). The table argument is a plan constant, so it is decoded once per query and node;
// a different table (never produced by dxpriv's own rewriting: ArgKey) is decoded afresh.
struct LookupCache {
	ArgKey source;
	unsigned char *bytes;
	PointTableView *view;
	ArgKey layout_source;
	void *row_map; // RowPointMap of the layout (argument 1), built on first use
	MemoryContext map_mcxt; // the map's (a child of fn_mcxt): deleted with it when the layout changes
	// dx._group_key_int: the deconstructed values per group (argument 2), in fn_mcxt
	GroupValues keys;
	// dx._weigh_units: the table's points in grid units, filled as rows meet them (UnitsMemo)
	struct UnitsMemo *units;
};

// A call site's per-point grid units for dx._weigh_units (tables of at most kUnitsMemoPoints points,
// one grid): what t.lookup and weight_grid_units give a point, kept the first time a row meets it,
// so that a later row of that point is one load. cells[u]: 0 not met yet, kAbsentCell (the point
// contributes nothing), 2 units + 1 (|units| < 2^62); a point whose units are larger, or raise, is
// never kept and always takes the reference path (which raises as before).
struct UnitsMemo {
	double grid;
	int64 *cells;
	// the one-load path (weigh_units_fast): set when the table and the layout are plan constants and
	// the layout is one int2/int4 range column (argument value_arg, of type `type`) on the integral
	// grid g with no more points than the table
	bool fast;
	int value_arg;
	Oid type;
	IntGrid g;
};
constexpr size_t kUnitsMemoPoints = 16384; // 128 kB of cells at most, zeroed once per call site
constexpr int64 kAbsentCell = 2;

// Whether argument i of the call site is a Const (the same Datum at every row of an execution).
bool
arg_is_const(FunctionCallInfo fcinfo, int i)
{
	const Node *e = fcinfo->flinfo->fn_expr;
	if (!e || !IsA(e, FuncExpr))
		return false;
	const List *args = castNode(FuncExpr, const_cast<Node *>(e))->args;
	return i < list_length(args) && IsA(list_nth(args, i), Const);
}

// Whether the varlena argument i (not NULL) is the one k was set from.
bool
arg_same(FunctionCallInfo fcinfo, int i, ArgKey &k)
{
	if (!k.valid || PG_ARGISNULL(i))
		return false;
	if (k.is_const == 0)
		k.is_const = arg_is_const(fcinfo, i) ? 1 : -1;
	if (k.is_const > 0)
		return k.source == PG_GETARG_DATUM(i);
	const struct varlena *v = PG_DETOAST_DATUM_PACKED(PG_GETARG_DATUM(i));
	return VARSIZE_ANY_EXHDR(v) == k.len && std::memcmp(VARDATA_ANY(v), k.bytes, k.len) == 0;
}

// k is set from the varlena argument i (not NULL).
void
arg_remember(FunctionCallInfo fcinfo, int i, ArgKey &k)
{
	if (k.is_const == 0)
		k.is_const = arg_is_const(fcinfo, i) ? 1 : -1;
	k.source = PG_GETARG_DATUM(i);
	if (k.is_const < 0) {
		const struct varlena *v = PG_DETOAST_DATUM_PACKED(PG_GETARG_DATUM(i));
		if (k.bytes)
			pfree(k.bytes);
		k.len = VARSIZE_ANY_EXHDR(v);
		k.bytes = static_cast<char *>(MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, k.len > 0 ? k.len : 1));
		std::memcpy(k.bytes, VARDATA_ANY(v), k.len);
	}
	k.valid = true;
}

void
destroy_lookup_cache(void *arg)
{
	auto *c = static_cast<LookupCache *>(arg);
	if (c->view)
		c->view->~PointTableView();
	c->view = nullptr;
}

// The decoded table of argument 0, or, for the cached variants, of the table whose SHA-256 argument
// 0 is (validated once; later calls are a pointer comparison).
const PointTableView &
table_view(FunctionCallInfo fcinfo, bool cached)
{
	if (PG_ARGISNULL(0)) // (the functions are not strict: a NULL table is refused, never read)
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "dxpriv per-point table must not be null",
		     "Per-point tables are placed by dxpriv's analyzer; the function is not meant to be called directly.");
	auto *c = static_cast<LookupCache *>(fcinfo->flinfo->fn_extra);
	if (c && arg_same(fcinfo, 0, c->source))
		return *c->view;
	MemoryContext mcxt = fcinfo->flinfo->fn_mcxt;
	if (!c) {
		c = static_cast<LookupCache *>(MemoryContextAllocZero(mcxt, sizeof(LookupCache)));
		auto *cb = static_cast<MemoryContextCallback *>(MemoryContextAlloc(mcxt, sizeof(MemoryContextCallback)));
		cb->func = destroy_lookup_cache;
		cb->arg = c;
		MemoryContextRegisterResetCallback(mcxt, cb);
		fcinfo->flinfo->fn_extra = c;
	}
	// another table (only in direct calls): the previous one's copies go, so that a table per row
	// keeps memory bounded, and its units with it (they are not the new table's)
	void *view_block = c->view; // (reused for the new view)
	destroy_lookup_cache(c);
	if (c->bytes)
		pfree(c->bytes);
	if (c->units) {
		pfree(c->units->cells);
		pfree(c->units);
	}
	c->bytes = nullptr;
	c->units = nullptr;
	c->source.valid = false; // (until the new table is valid)
	bytea *b = cached ? cached_point_table(PG_GETARG_BYTEA_PP(0)) : PG_GETARG_BYTEA_PP(0);
	reject_stand_in(b, "a per-point table");
	const size_t len = VARSIZE_ANY_EXHDR(b);
	c->bytes = static_cast<unsigned char *>(MemoryContextAlloc(mcxt, len > 0 ? len : 1));
	std::memcpy(c->bytes, VARDATA_ANY(b), len);
	void *mem = view_block ? view_block : MemoryContextAlloc(mcxt, sizeof(PointTableView));
	c->view = new (mem) PointTableView(c->bytes, len); // validates; throws CoreError when forged
	arg_remember(fcinfo, 0, c->source);
	return *c->view;
}

} // namespace

namespace dxpriv::pg {

namespace {

// Type modifier of argument i at this call site (a transition function's argument i is its
// aggregate's argument i - 1: the executor's transition call carries no typmods).
int32
arg_typmod(FunctionCallInfo fcinfo, int i)
{
	if (fcinfo->flinfo->fn_expr && IsA(fcinfo->flinfo->fn_expr, FuncExpr) && !AggGetAggref(fcinfo))
		return exprTypmod(static_cast<Node *>(list_nth(castNode(FuncExpr, fcinfo->flinfo->fn_expr)->args, i)));
	if (Aggref *a = AggGetAggref(fcinfo); a && i >= 1 && i - 1 < list_length(a->args))
		return exprTypmod((Node *) castNode(TargetEntry, list_nth(a->args, i - 1))->expr);
	return -1;
}

// Type of argument i at this call site (a transition function's from its Aggref: the executor's
// transition expression leaves out as many leading argument types as the aggregate has direct
// arguments, which the one-pass aggregates have).
Oid
arg_type(FunctionCallInfo fcinfo, int i)
{
	if (Aggref *a = AggGetAggref(fcinfo); a && i >= 1 && i - 1 < list_length(a->args))
		return exprType((Node *) castNode(TargetEntry, list_nth(a->args, i - 1))->expr);
	return get_fn_expr_argtype(fcinfo->flinfo, i);
}

[[noreturn]] void
bad_layout()
{
	fail(ERRCODE_INVALID_PARAMETER_VALUE, "invalid dxpriv row layout",
	     "Row layouts are placed by dxpriv's analyzer; the function is not meant to be called directly.");
}

} // namespace

// See row_point.h. The layout's letters give each column's arguments:
//   'e': value, labels text[]       'r': value, lo, hi, step (float8)
//   'p': coords float8[], dims int4, then dims member values (numeric types)
//   'q<lo>:<hi>:<step>;': value (an 'r' column whose constants are in the layout, in decimal text
//   that reads back as the same doubles: the one-pass transition's form, planner/one_pass.cpp)
RowPointMap *
build_row_point_map(FunctionCallInfo fcinfo, int layout_arg, int first_arg, bool allow_keys, size_t skip,
                    MemoryContext mcxt)
{
	if (!mcxt)
		mcxt = fcinfo->flinfo->fn_mcxt;
	if (PG_ARGISNULL(layout_arg))
		bad_layout();
	reject_stand_in(PG_GETARG_TEXT_PP(layout_arg), "a row layout");
	const std::string full = text_to_cstring(PG_GETARG_TEXT_PP(layout_arg));
	if (skip > full.size())
		bad_layout();
	const std::string layout = full.substr(skip);
	auto *map = static_cast<RowPointMap *>(MemoryContextAllocZero(mcxt, sizeof(RowPointMap)));
	map->group_arg = map->present_arg = -1;
	map->columns = static_cast<RowPointMap::Column *>(MemoryContextAllocZero(mcxt, sizeof(RowPointMap::Column) * (layout.size() + 1)));
	int arg = first_arg;
	// n arguments from `arg` on: a value (may be NULL) and n - 1 domain constants (never NULL)
	auto need = [&](int n) {
		if (arg + n > PG_NARGS())
			bad_layout();
		for (int i = arg + 1; i < arg + n; ++i)
			if (PG_ARGISNULL(i))
				bad_layout();
	};
	for (size_t pos = 0; pos < layout.size();) {
		const char letter = layout[pos++];
		RowPointMap::Column &c = map->columns[map->ncolumns++];
		c.key = allow_keys && (letter == 'E' || letter == 'R' || letter == 'Q');
		const char kind = c.key ? static_cast<char>(letter - 'A' + 'a') : letter;
		map->has_keys = map->has_keys || c.key;
		c.kind = kind == 'q' ? 'r' : kind;
		if (kind == 'q') { // 'r' with lo, hi and step in the layout: q<lo>:<hi>:<step>;
			double b[3];
			for (int k = 0; k < 3; ++k) {
				const char *p = layout.c_str() + pos;
				char *end = nullptr;
				b[k] = std::strtod(p, &end);
				if (end == p || *end != (k < 2 ? ':' : ';'))
					bad_layout();
				pos = static_cast<size_t>(end - layout.c_str()) + 1;
			}
			need(1);
			c.value_arg = arg;
			c.members = 1;
			c.indexer = DomainIndexer::create(mcxt, Domain::range(b[0], b[1], b[2]), arg_type(fcinfo, arg), arg_typmod(fcinfo, arg));
			arg += 1;
		} else if (kind == 'e') {
			need(2);
			c.value_arg = arg;
			c.members = 1;
			c.indexer = DomainIndexer::create(mcxt, Domain::enumerated(text_array_strings(pg_value([&] { return PG_GETARG_ARRAYTYPE_P(arg + 1); }))),
			                                  arg_type(fcinfo, arg), arg_typmod(fcinfo, arg));
			arg += 2;
		} else if (kind == 'r') {
			need(4);
			c.value_arg = arg;
			c.members = 1;
			c.indexer = DomainIndexer::create(
			    mcxt, Domain::range(PG_GETARG_FLOAT8(arg + 1), PG_GETARG_FLOAT8(arg + 2), PG_GETARG_FLOAT8(arg + 3)),
			    arg_type(fcinfo, arg), arg_typmod(fcinfo, arg));
			arg += 4;
		} else if (kind == 'p') {
			if (arg + 2 > PG_NARGS() || PG_ARGISNULL(arg) || PG_ARGISNULL(arg + 1))
				bad_layout();
			ArrayType *coords = pg_value([&] { return PG_GETARG_ARRAYTYPE_P(arg); });
			reject_stand_in(coords, "a points domain's coordinates");
			const int dims = PG_GETARG_INT32(arg + 1);
			if (ARR_HASNULL(coords) || ARR_ELEMTYPE(coords) != FLOAT8OID || dims < 1 ||
			    dims > static_cast<int>(kMaxPointDims) || arg + 2 + dims > PG_NARGS())
				bad_layout();
			const int n = ArrayGetNItems(ARR_NDIM(coords), ARR_DIMS(coords));
			const double *xy = reinterpret_cast<const double *>(ARR_DATA_PTR(coords));
			c.indexer = DomainIndexer::create(mcxt, Domain::points(static_cast<size_t>(dims), std::vector<double>(xy, xy + n)),
			                                  FLOAT8OID, -1);
			c.value_arg = arg + 2;
			c.members = dims;
			for (int m = 0; m < dims; ++m)
				c.member_types[m] = arg_type(fcinfo, c.value_arg + m);
			arg += 2 + dims;
		} else {
			bad_layout();
		}
	}
	if (arg != PG_NARGS())
		bad_layout();
	map->points = 1;
	map->key_points = 1;
	for (int i = 0; i < map->ncolumns; ++i) {
		RowPointMap::Column &c = map->columns[i];
		const Domain &d = c.indexer->domain();
		c.size = d.size();
		size_t &product = c.key ? map->key_points : map->points;
		product = c.size != 0 && product > SIZE_MAX / c.size ? SIZE_MAX : product * c.size;
		c.type = c.indexer->type();
		if (c.kind == 'r') {
			c.lo = d.lo();
			c.step = d.step();
			int exp2;
			const double inv = 1.0 / c.step;
			c.inv_step = std::frexp(c.step, &exp2) == 0.5 && std::isfinite(inv) && std::frexp(inv, &exp2) == 0.5 ? inv : 0.0;
			c.recip = range_recip(c.step, c.size); // (the same index as range_index: core/range_index.h)
			c.last = static_cast<double>(c.size - 1);
			// (value - lo) is then exact in double and an integer: range_index returns it clamped
			c.unit_int = (c.type == INT4OID || c.type == INT2OID) && c.step == 1.0 && std::floor(c.lo) == c.lo &&
			             std::fabs(c.lo) < 4503599627370496.0 && c.size >= 1;
			c.lo_int = c.unit_int ? static_cast<int64>(c.lo) : 0;
			if (!c.unit_int && (c.type == INT4OID || c.type == INT2OID))
				int_grid_of(c.lo, c.step, c.size, c.int_grid); // (step stays 0 when the grid is not integral)
		}
		if (c.kind == 'e') {
			size_t n = 0;
			c.nshort = c.indexer->short_keys(kShortLabels, c.short_word, c.short_len, c.short_point, n, c.short_byval)
			               ? static_cast<int>(n)
			               : 0;
			c.missing = d.default_index();
		}
	}
	// the non-key columns' shape, for row_point_inline
	int nonkey = 0;
	const RowPointMap::Column *only = nullptr;
	for (int i = 0; i < map->ncolumns; ++i)
		if (!map->columns[i].key) {
			++nonkey;
			only = &map->columns[i];
		}
	map->shape = RowPointShape::Generic;
	if (nonkey == 0) {
		map->shape = RowPointShape::None;
	} else if (nonkey == 1 && only->kind == 'r' && only->size >= 1) {
		map->shape = only->unit_int ? RowPointShape::UnitInt : RowPointShape::Range;
		map->only = *only;
	} else if (nonkey >= 2 && nonkey <= kSmallColumns) { // Small: range and short enumerated columns only
		bool small = true;
		for (int i = 0; i < map->ncolumns; ++i) {
			const RowPointMap::Column &c = map->columns[i];
			small = small && (c.key || (c.kind == 'r' && c.size >= 1) || (c.kind == 'e' && c.nshort > 0));
		}
		if (small) {
			map->shape = RowPointShape::Small;
			for (int i = 0; i < map->ncolumns; ++i)
				if (!map->columns[i].key)
					map->small[map->nsmall++] = map->columns[i];
		}
	}
	return map;
}

// See row_point.h.
size_t
row_point_count(const RowPointMap &map)
{
	return map.points;
}

// See row_point.h.
bool
row_point_has_keys(const RowPointMap &map)
{
	return map.has_keys;
}

// See row_point.h.
size_t
row_key_point_count(const RowPointMap &map)
{
	return map.key_points;
}

// See row_point.h.
double
row_value_ordinal(Datum value, Oid type)
{
	return datum_to_ordinal(value, type);
}

// See row_point.h.
size_t
short_enum_slow(FunctionCallInfo fcinfo, const RowPointMap::Column &c)
{
	return c.indexer->index(PG_GETARG_DATUM(c.value_arg), PG_ARGISNULL(c.value_arg));
}

namespace {

// The nearest declared point of a column group's member values (NULL members: NaN).
[[gnu::noinline]] size_t
group_point_index(FunctionCallInfo fcinfo, const RowPointMap::Column &c)
{
	double x[kMaxPointDims];
	for (int m = 0; m < c.members; ++m)
		x[m] = PG_ARGISNULL(c.value_arg + m) ? std::numeric_limits<double>::quiet_NaN()
		                                     : datum_to_ordinal(PG_GETARG_DATUM(c.value_arg + m), c.member_types[m]);
	return c.indexer->nearest(x);
}

// The flat index over the key columns (keys) or over the other columns (!keys), last column fastest.
template <bool keys>
inline size_t
point_over(FunctionCallInfo fcinfo, const RowPointMap &map)
{
	size_t u = 0;
	for (int i = 0; i < map.ncolumns; ++i) {
		const RowPointMap::Column &c = map.columns[i];
		if (c.key != keys)
			continue;
		if (c.kind == 'r') {
			u = u * c.size + range_column_index(fcinfo, c);
			continue;
		}
		const size_t idx = c.kind == 'p'   ? group_point_index(fcinfo, c)
		                   : c.nshort > 0 ? short_enum_index(fcinfo, c) // (the same index, inline)
		                                  : c.indexer->index(PG_GETARG_DATUM(c.value_arg), PG_ARGISNULL(c.value_arg));
		u = u * c.size + idx;
	}
	return u;
}

} // namespace

// See row_point.h.
size_t
row_point(FunctionCallInfo fcinfo, const RowPointMap &map)
{
	return point_over<false>(fcinfo, map);
}

// See row_point.h.
size_t
row_key_point(FunctionCallInfo fcinfo, const RowPointMap &map)
{
	return point_over<true>(fcinfo, map);
}

} // namespace dxpriv::pg

namespace {

// The call site's table and the row's point u in it. first_arg: the first column argument (after
// the table and the layout, and dx._group_key_int's values or dx._weigh_units' grid).
const PointTableView &
row_table_point(FunctionCallInfo fcinfo, bool cached, int first_arg, size_t &u)
{
	// the table (argument 0) and the map are cached together in fn_extra
	const PointTableView &t = table_view(fcinfo, cached);
	auto *c = static_cast<LookupCache *>(fcinfo->flinfo->fn_extra);
	if (!c->row_map || !arg_same(fcinfo, 1, c->layout_source)) { // a new layout only in direct calls
		// (a layout per row: the previous map and its indexers go, so that memory stays bounded)
		c->layout_source.valid = false;
		c->row_map = nullptr;
		if (c->map_mcxt)
			MemoryContextDelete(c->map_mcxt);
		c->map_mcxt = AllocSetContextCreate(fcinfo->flinfo->fn_mcxt, "dxpriv row layout", ALLOCSET_SMALL_SIZES);
		c->row_map = build_row_point_map(fcinfo, 1, first_arg, false, 0, c->map_mcxt); // (refuses a NULL layout)
		arg_remember(fcinfo, 1, c->layout_source);
	}
	// (the map's common shapes inline: the same index as row_point, row_point.h)
	u = row_point_inline(fcinfo, *static_cast<RowPointMap *>(c->row_map));
	if (u >= t.size())
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "dxpriv point index is outside its table",
		     "Point indexes and tables are placed by dxpriv's analyzer; the function is not meant to be called directly.");
	return t;
}

// The fused lookup: the table's value at the row's point; false when it contributes nothing.
bool
weigh_row(FunctionCallInfo fcinfo, double &out, bool cached = false, int first_arg = 2)
{
	size_t u;
	return row_table_point(fcinfo, cached, first_arg, u).lookup(u, out);
}

} // namespace

// dx._weigh(table bytea, layout text, VARIADIC "any") -> float8: the row's weight from the table at
// the row's point (the row's columns and their domain constants follow the layout), NULL when it
// contributes nothing. One call per row and aggregate: the whole per-row work of a dx aggregate.
DX_FUNCTION(dx_weigh)
{
	double v;
	if (!weigh_row(fcinfo, v))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(v);
}

namespace {

// The body of dx._weigh_units and its cached variant: the row's weight in grid units (false: the row
// contributes nothing), what weight_grid_units(lookup at the row's point, grid) gives, read from the
// call site's UnitsMemo when the point was met before.
bool
weigh_units_row(FunctionCallInfo fcinfo, bool cached, int64 &out)
{
	if (PG_ARGISNULL(2))
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "dxpriv grid must be a positive number",
		     "dx._weigh_units is placed by the dxpriv analyzer with the grid of a release's noise plan.");
	size_t u;
	const PointTableView &t = row_table_point(fcinfo, cached, 3, u);
	auto *c = static_cast<LookupCache *>(fcinfo->flinfo->fn_extra);
	const double grid = PG_GETARG_FLOAT8(2);
	UnitsMemo *m = c->units;
	if (m && m->grid == grid) { // (a NaN grid never equals: the reference path refuses it)
		const int64 cell = m->cells[u];
		if (cell & 1) {
			out = (cell - 1) / 2;
			return true;
		}
		if (cell == kAbsentCell)
			return false;
	} else if (!m && t.size() <= kUnitsMemoPoints && grid > 0 && std::isfinite(grid)) {
		m = static_cast<UnitsMemo *>(MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(UnitsMemo)));
		m->grid = grid;
		m->cells = static_cast<int64 *>(MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(int64) * t.size()));
		const auto *map = static_cast<const RowPointMap *>(c->row_map);
		const RowPointMap::Column &col = map->only;
		m->fast = c->source.is_const > 0 && c->layout_source.is_const > 0 &&
		          (map->shape == RowPointShape::UnitInt || map->shape == RowPointShape::Range) &&
		          (col.type == INT4OID || col.type == INT2OID) && col.size <= t.size() &&
		          int_grid_of(col.lo, col.step, col.size, m->g); // (the same index as range_column_index)
		m->value_arg = col.value_arg;
		m->type = col.type;
		c->units = m;
	}
	double v;
	const bool present = t.lookup(u, v);
	if (present)
		out = weight_grid_units(v, grid); // raises for a bad grid or a weight beyond bigint
	if (m && m->grid == grid && (!present || (out > -(int64{1} << 62) && out < (int64{1} << 62))))
		m->cells[u] = present ? 2 * out + 1 : kAbsentCell;
	return present;
}

// weigh_units_row for a row whose point the call site's memo holds, when its layout is one integer
// column on an integral grid (UnitsMemo::fast: the table and the layout are plan constants, the
// same Datums at every row) and the table, layout and grid are the memo's: the index by integer
// arithmetic and one load. False when the row needs weigh_units_row.
[[gnu::always_inline]] inline bool
weigh_units_fast(FunctionCallInfo fcinfo, int64 &out, bool &present)
{
	const auto *c = static_cast<const LookupCache *>(fcinfo->flinfo->fn_extra);
	const UnitsMemo *m = c ? c->units : nullptr;
	if (!m || !m->fast || PG_ARGISNULL(0) || c->source.source != PG_GETARG_DATUM(0) ||
	    c->layout_source.source != PG_GETARG_DATUM(1) || PG_ARGISNULL(2) ||
	    PG_GETARG_FLOAT8(2) != m->grid)
		return false;
	const int a = m->value_arg;
	const size_t u = PG_ARGISNULL(a) ? 0
	                 : int_grid_index(m->type == INT4OID ? static_cast<int64>(DatumGetInt32(PG_GETARG_DATUM(a)))
	                                                     : static_cast<int64>(DatumGetInt16(PG_GETARG_DATUM(a))),
	                                  m->g);
	const int64 cell = m->cells[u];
	present = cell & 1;
	out = (cell - 1) / 2;
	return present || cell == kAbsentCell;
}

// dx._weigh_units and its cached variant: the row's units, false when it contributes nothing.
inline bool
weigh_units(FunctionCallInfo fcinfo, bool cached, int64 &out)
{
	bool present;
	return weigh_units_fast(fcinfo, out, present) ? present : weigh_units_row(fcinfo, cached, out);
}

} // namespace

// dx._weigh_units(table bytea, layout text, grid float8, VARIADIC "any") -> int8:
// dx._units(dx._weigh(table, layout, ...), grid) in one call (the workers' native sums of a Citus
// release, planner/distributed_linear.cpp): the row's weight in grid units, NULL when it
// contributes nothing.
DX_FUNCTION(dx_weigh_units)
{
	int64 units;
	if (!weigh_units(fcinfo, false, units))
		PG_RETURN_NULL();
	PG_RETURN_INT64(units);
}

// dx._weigh_units_cached(sha256 bytea, layout text, grid float8, VARIADIC "any"): dx._weigh_units
// with its table read from dx._point_table_cache (as dx._weigh_cached).
DX_FUNCTION(dx_weigh_units_cached)
{
	int64 units;
	if (!weigh_units(fcinfo, true, units))
		PG_RETURN_NULL();
	PG_RETURN_INT64(units);
}

// dx._weigh_int(table bytea, layout text, VARIADIC "any") -> int4: the row's candidate index
// (exponential mechanism), NULL when it is not counted.
DX_FUNCTION(dx_weigh_int)
{
	double v;
	if (!weigh_row(fcinfo, v))
		PG_RETURN_NULL();
	PG_RETURN_INT32(static_cast<int32>(v));
}

// dx._weigh_cached(sha256 bytea, layout text, VARIADIC "any"): dx._weigh with its table read from
// dx._point_table_cache (distributed releases, planner/distributed.h).
DX_FUNCTION(dx_weigh_cached)
{
	double v;
	if (!weigh_row(fcinfo, v, true))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(v);
}

// dx._weigh_int_cached(sha256 bytea, layout text, VARIADIC "any"): dx._weigh_int, table from the cache.
DX_FUNCTION(dx_weigh_int_cached)
{
	double v;
	if (!weigh_row(fcinfo, v, true))
		PG_RETURN_NULL();
	PG_RETURN_INT32(static_cast<int32>(v));
}

namespace {


// The values per group of argument values_arg (not NULL), deconstructed once per array: a call
// site whose array changes from row to row (direct calls only) frees the previous one's copies, so
// that memory stays bounded.
const GroupValues &
group_values(FunctionCallInfo fcinfo, int values_arg, GroupValues &g)
{
	if (g.array && arg_same(fcinfo, values_arg, g.source))
		return g;
	g.source.valid = false;
	if (g.array) {
		pfree(g.array);
		pfree(g.values);
		pfree(g.nulls);
	}
	g.array = nullptr;
	g.values = nullptr;
	g.nulls = nullptr;
	g.count = 0;
	MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
	ArrayType *arr = PG_GETARG_ARRAYTYPE_P_COPY(values_arg);
	if (is_stand_in(arr)) {
		MemoryContextSwitchTo(old);
		reject_stand_in(arr, "a list of group keys");
	}
	int16 typlen;
	bool typbyval;
	char typalign;
	get_typlenbyvalalign(ARR_ELEMTYPE(arr), &typlen, &typbyval, &typalign);
	if (ARR_NDIM(arr) > 1) {
		MemoryContextSwitchTo(old);
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "dxpriv group keys must be a one-dimensional array",
		     "Group keys are placed by dxpriv's analyzer; the function is not meant to be called directly.");
	}
	deconstruct_array(arr, ARR_ELEMTYPE(arr), typlen, typbyval, typalign, &g.values, &g.nulls, &g.count);
	MemoryContextSwitchTo(old);
	g.array = arr;
	arg_remember(fcinfo, values_arg, g.source);
	return g;
}

// The value of group v (checked first: a forged table's value is not cast before) of g, or NULL.
Datum
group_value(FunctionCallInfo fcinfo, const GroupValues &g, double v)
{
	if (!(v >= 0 && v < g.count))
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "dxpriv group index is outside its keys",
		     "Group keys are placed by dxpriv's analyzer; the function is not meant to be called directly.");
	const int i = static_cast<int>(v);
	if (g.nulls[i])
		PG_RETURN_NULL();
	return g.values[i];
}

} // namespace

// dx._group_key(group int4, values anyarray) -> anyelement: the output value of a GROUP BY key for
// the row's group, from the values the analysis computed per group (no key expression runs on it).
DX_FUNCTION(dx_group_key)
{
	auto *c = static_cast<GroupValues *>(fcinfo->flinfo->fn_extra);
	if (!c) {
		c = static_cast<GroupValues *>(MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(GroupValues)));
		fcinfo->flinfo->fn_extra = c;
	}
	return group_value(fcinfo, group_values(fcinfo, 1, *c), PG_GETARG_INT32(0));
}

// dx._group_key_int(table bytea, layout text, values anyarray, VARIADIC "any") -> anyelement:
// dx._group_key(dx._weigh_int(table, layout, <columns>), values) in one call (the GROUP BY keys
// computed in the row source, planner/group_key_source.h): NULL when the row's point has no group
// (dx._weigh_int's NULL) or values is NULL (dx._group_key is strict).
DX_FUNCTION(dx_group_key_int)
{
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		PG_RETURN_NULL();
	double v;
	if (!weigh_row(fcinfo, v, false, 3))
		PG_RETURN_NULL();
	auto *c = static_cast<LookupCache *>(fcinfo->flinfo->fn_extra); // (weigh_row made it)
	return group_value(fcinfo, group_values(fcinfo, 2, c->keys), v);
}
