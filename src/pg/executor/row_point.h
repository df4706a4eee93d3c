// A row's point of a statement's sub-universe, from its column values and their domain constants
// (the layouts of dx._weigh and of the one-pass transition; implemented in lookup.cpp).
#pragma once

extern "C" {
#include "postgres.h"
#include "fmgr.h"
}

#include <cstddef>

namespace dxpriv::pg {

struct RowPointMap;

// Contract: reads the layout text at argument layout_arg (one letter per column: 'e' value, labels
// text[]; 'r' value, lo, hi, step; 'p' coords float8[], dims int4, then dims member values) and the
// arguments from first_arg to the last, which must be exactly the layout's; builds the columns'
// indexers once in fn_mcxt. With allow_keys, 'E' and 'R' are 'e' and 'r' columns that are GROUP BY
// keys: row_point leaves them out and row_key_point reads them. Errors (22023) on a malformed layout.
RowPointMap *build_row_point_map(FunctionCallInfo fcinfo, int layout_arg, int first_arg, bool allow_keys = false);
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

} // namespace dxpriv::pg
