// A row's point of a statement's sub-universe, from its column values and their domain constants
// (the layouts of dx._weigh and of the one-pass transition; implemented in lookup.cpp, with the
// per-row arithmetic of range columns inline here so that the one-pass transition's common shapes
// run without a call).
#pragma once

extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "catalog/pg_type.h"
}

#include "core/domain.h"
#include "core/range_index.h"

#include <cmath>
#include <cstddef>

namespace dxpriv::pg {

class DomainIndexer;

// The shape of a map's non-key columns, for the one-pass transition's inline path (row_point_inline):
// none (the point is 0), one range column over int2/int4 with step 1 and an integral lower bound
// (value - lo, clamped), one other range column (range_index), two to kSmallColumns columns each a
// range column or a short enumerated column (Small: e.g. `WHERE age > 40 AND sex = 'M'`), or
// anything else (row_point).
enum class RowPointShape : unsigned char { Generic, None, UnitInt, Range, Small };

// Small: at most this many non-key columns; a short enumerated column: at most this many labels.
constexpr int kSmallColumns = 4;
constexpr int kShortLabels = 8;

// The columns of a fused lookup (dx._weigh, dx._weigh_int, the one-pass transition): for each
// column, in point-index order, its indexer and the positions of its arguments. Built once per
// call site in fn_mcxt by build_row_point_map.
struct RowPointMap {
	struct Column {
		DomainIndexer *indexer;
		int value_arg;   // first value argument
		int members;     // 1, or the number of member columns of a column group
		Oid member_types[kMaxPointDims];
		char kind;       // 'e', 'r' or 'p' (the layout letter)
		Oid type;        // 'r': the value argument's type
		double lo, step; // 'r': the grid (Domain::lo(), Domain::step())
		double inv_step; // 'r': 1 / step when step is a power of two (dividing is then the same as multiplying), else 0
		double recip;    // 'r': range_recip(step, size): range_index_recip serves the column when != 0
		double last;     // 'r': size - 1 as a double
		size_t size;     // the domain's size
		bool key;        // a GROUP BY key column ('E', 'R'): left out of row_point, read by row_key_point
		bool unit_int;   // 'r' over int2/int4 with step 1 and an integral lo: the index is value - lo, clamped
		int64 lo_int;    // unit_int: lo
		IntGrid int_grid; // 'r' over int2/int4 on an integral grid, not unit_int (core/range_index.h); else step 0
		// 'e' with at most kShortLabels labels, of a by-value type or of a varlena type with labels of
		// at most 8 bytes (DomainIndexer::short_keys): matched inline by short_enum_index; nshort 0 otherwise
		int nshort;
		bool short_byval;
		uint8 short_len[kShortLabels];
		uint32 short_point[kShortLabels];
		uint64 short_word[kShortLabels];
		size_t missing; // 'e': the point of NULL and of an undeclared value (Domain::default_index)
	};
	Column *columns;
	int ncolumns;
	size_t points;     // product of the non-key columns' sizes (saturating at SIZE_MAX)
	size_t key_points; // product of the key columns' sizes (1 without key columns)
	bool has_keys;
	RowPointShape shape; // of the non-key columns
	Column only;         // UnitInt, Range: a copy of the one non-key column (one load fewer per row)
	Column small[kSmallColumns]; // Small: copies of the non-key columns, in point-index order
	int nsmall;
	// the one-pass transition's flags (executor/one_pass.cpp; -1: not an argument)
	int group_arg;   // the row's output group (int4); else the group is 0
	int present_arg; // the "row is real" flag (bool); else every row is real
	bool dense;      // a histogram array per group
	bool buffered;   // shape Range or UnitInt, no group or present argument, no key column: the
	                 // transition may buffer the column's values and index them together (core/range_batch.h)
};

// Contract: reads the layout text at argument layout_arg (one letter per column: 'e' value, labels
// text[]; 'r' value, lo, hi, step; 'q<lo>:<hi>:<step>;' value: an 'r' column with its constants in
// the layout; 'p' coords float8[], dims int4, then dims member values) and the arguments from
// first_arg to the last, which must be exactly the layout's; builds the columns' indexers once in
// fn_mcxt. With allow_keys, 'E', 'R' and 'Q' are 'e', 'r' and 'q' columns that are GROUP BY keys:
// row_point leaves them out and row_key_point reads them. skip: the layout's columns start after
// its first skip characters (the one-pass transition's flags). mcxt: where the map and its indexers
// live (nullptr: fn_mcxt; a caller that rebuilds the map deletes the previous one's context).
// Errors (22023) on a malformed layout.
RowPointMap *build_row_point_map(FunctionCallInfo fcinfo, int layout_arg, int first_arg, bool allow_keys = false,
                                 size_t skip = 0, MemoryContext mcxt = nullptr);
// The flat index of the row's point over the non-key columns (last column fastest), from the value
// arguments only: no expression of the query runs, no allocation, no user code.
size_t row_point(FunctionCallInfo fcinfo, const RowPointMap &map);
// The flat index of the row's point over the key columns only (last fastest; 0 without keys).
size_t row_key_point(FunctionCallInfo fcinfo, const RowPointMap &map);
// The number of points of the non-key columns (the product of their sizes; SIZE_MAX when larger).
size_t row_point_count(const RowPointMap &map);
// The number of points of the key columns (1 without keys), and whether the layout has any.
size_t row_key_point_count(const RowPointMap &map);
bool row_point_has_keys(const RowPointMap &map);

// datum_to_ordinal of a value of a type other than int2/int4/int8/float8 (lookup.cpp).
double row_value_ordinal(Datum value, Oid type);
// The index of a short enumerated column's compressed or external value, by its indexer (lookup.cpp).
size_t short_enum_slow(FunctionCallInfo fcinfo, const RowPointMap::Column &c);

// datum_to_ordinal with the common by-value types inlined.
[[gnu::always_inline]] inline double
ordinal_of(Datum value, Oid type)
{
	switch (type) {
	case INT4OID:
		return DatumGetInt32(value);
	case INT8OID:
		return static_cast<double>(DatumGetInt64(value));
	case INT2OID:
		return DatumGetInt16(value);
	case FLOAT8OID:
		return DatumGetFloat8(value);
	default:
		return row_value_ordinal(value, type);
	}
}

// The index of a range column's value (argument c.value_arg; NULL: 0), as row_point computes it.
[[gnu::always_inline]] inline size_t
range_column_index(FunctionCallInfo fcinfo, const RowPointMap::Column &c)
{
	const int a = c.value_arg;
	if (PG_ARGISNULL(a))
		return 0;
	if (c.unit_int) { // range_index's arithmetic on integers: the same index
		const int64 d = (c.type == INT4OID ? static_cast<int64>(DatumGetInt32(PG_GETARG_DATUM(a)))
		                                   : static_cast<int64>(DatumGetInt16(PG_GETARG_DATUM(a)))) - c.lo_int;
		return d <= 0 ? 0 : static_cast<uint64>(d) >= c.size - 1 ? c.size - 1 : static_cast<size_t>(d);
	}
	if (c.int_grid.step != 0) // the same index by integer arithmetic (core/range_index.h's proof)
		return int_grid_index(c.type == INT4OID ? static_cast<int64>(DatumGetInt32(PG_GETARG_DATUM(a)))
		                                        : static_cast<int64>(DatumGetInt16(PG_GETARG_DATUM(a))),
		                      c.int_grid);
	const double v = ordinal_of(PG_GETARG_DATUM(a), c.type);
	return c.recip != 0 ? range_index_recip(v, c.lo, c.step, c.recip, c.last, c.size)
	                    : range_index(v, c.lo, c.step, c.inv_step, c.size);
}

// The index of a short enumerated column's value (c.nshort > 0; argument c.value_arg), as
// DomainIndexer::index computes it: the first label (in the indexer's order) whose bytes equal the
// value's (a by-value type: whose Datum equals the value's), else c.missing (also for NULL). A
// varlena stored inline and uncompressed is read in place; a compressed or external one goes to
// the indexer (which detoasts it).
[[gnu::always_inline]] inline size_t
short_enum_index(FunctionCallInfo fcinfo, const RowPointMap::Column &c)
{
	const int a = c.value_arg;
	if (PG_ARGISNULL(a))
		return c.missing;
	if (c.short_byval) { // (DomainIndexer: a by-value type's Datum compared whole)
		const uint64 w = static_cast<uint64>(PG_GETARG_DATUM(a));
		for (int i = 0; i < c.nshort; ++i)
			if (c.short_word[i] == w)
				return c.short_point[i];
		return c.missing;
	}
	const auto *p = reinterpret_cast<const char *>(DatumGetPointer(PG_GETARG_DATUM(a)));
	const char *data;
	size_t len;
	if (VARATT_IS_1B(p) && !VARATT_IS_1B_E(p)) {
		data = VARDATA_1B(p);
		len = VARSIZE_1B(p) - VARHDRSZ_SHORT;
	} else if (VARATT_IS_4B_U(p)) {
		data = VARDATA_4B(p);
		len = VARSIZE_4B(p) - VARHDRSZ;
	} else {
		return short_enum_slow(fcinfo, c);
	}
	if (len > 8)
		return c.missing; // (no label is longer)
	uint64 w = 0;
	for (size_t b = 0; b < len; ++b)
		w |= static_cast<uint64>(static_cast<unsigned char>(data[b])) << (8 * b);
	for (int i = 0; i < c.nshort; ++i)
		if (c.short_len[i] == len && c.short_word[i] == w)
			return c.short_point[i];
	return c.missing;
}

// row_point, with the map's common shapes computed inline (the same index: the same functions).
[[gnu::always_inline]] inline size_t
row_point_inline(FunctionCallInfo fcinfo, const RowPointMap &map)
{
	switch (map.shape) {
	case RowPointShape::None:
		return 0;
	case RowPointShape::UnitInt:
	case RowPointShape::Range:
		return range_column_index(fcinfo, map.only);
	case RowPointShape::Small: {
		size_t u = 0;
		for (int i = 0; i < map.nsmall; ++i) {
			const RowPointMap::Column &c = map.small[i];
			u = u * c.size + (c.kind == 'r' ? range_column_index(fcinfo, c) : short_enum_index(fcinfo, c));
		}
		return u;
	}
	default:
		return row_point(fcinfo, map);
	}
}

} // namespace dxpriv::pg
