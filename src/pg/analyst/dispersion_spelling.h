// Analysts' stddev, variance, covar, corr and regr_* aggregates spelled as post-processing of linear dx aggregates.
#pragma once

#include "pg/metadata/extension_objects.h"

extern "C" {
#include "nodes/parsenodes.h"
}

#include <string>

namespace dxpriv::pg {

// Location stamped on the dx._dispersion calls this rewrite builds (the parser never produces a
// negative location other than -1): the analyzer refuses a call an analyst wrote herself.
inline constexpr int kDispersionLocation = -7419;

// For a built-in aggregate `a` named fn (already known to be in pg_catalog, at q's level, q reading
// one protected table alone or joined with public tables, public_joins.h) that is
// one of stddev, stddev_samp/pop, variance, var_samp/pop, covar_samp/pop, corr, regr_slope,
// regr_intercept, regr_count, regr_avgx/avgy, regr_sxx/syy/sxy, regr_r2: the expression
// dx._dispersion(kind, label, cx, cy, part_n, part_sx, part_sy, part_sxx, part_syy, part_sxy) cast
// to a's result type, where each needed part is a dx.linear marker of one centred sum (its weight
// an expression of a's arguments, with a's FILTER; marked as a part by its float8[] result type)
// and an unneeded part is NULL. The parts are analysed, allocated, charged and released as the
// statement's other linear aggregates (one release, one charge); dx._dispersion computes the
// statistic from them. nullptr for every other aggregate. Refuses DISTINCT and ORDER BY inside
// (0A000, with a hint). On a Citus table the parts are split like dx.sum (planner/distributed.h):
// each becomes dx._release_part(state, params, group) on the coordinator.
Node *dispersion_spelling(Aggref *a, const std::string &fn, Query *q, const ExtensionObjects &ext);

// True when f is a dx._dispersion call whose every part is a distributed part's release
// dx._release_part(...) (or NULL), at least one: the coordinator's share of a split statement,
// which Citus re-parses for its local execution (the location stamp is then lost). Each such
// release is admitted only when the running statement was charged for its parameters.
bool dispersion_over_releases(const FuncExpr *f, const ExtensionObjects &ext);

} // namespace dxpriv::pg
