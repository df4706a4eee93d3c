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
// indexers once in fn_mcxt. Errors (22023) on a malformed layout.
RowPointMap *build_row_point_map(FunctionCallInfo fcinfo, int layout_arg, int first_arg);
// The flat index of the row's point (last column fastest), from the value arguments only: no
// expression of the query runs, no allocation, no user code.
size_t row_point(FunctionCallInfo fcinfo, const RowPointMap &map);
// The number of points of the layout (the product of its columns' sizes; SIZE_MAX when larger).
size_t row_point_count(const RowPointMap &map);

} // namespace dxpriv::pg
