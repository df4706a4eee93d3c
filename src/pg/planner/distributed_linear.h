// The linear split of a Citus release (dx.count/sum/avg): native sums on the workers, the state
// and the single noisy release on the coordinator that charged the statement.
#pragma once

#include "pg/planner/distributed_context.h"
#include "pg/metadata/extension_objects.h"

extern "C" {
#include "nodes/parsenodes.h"
}

#include <vector>

namespace dxpriv::pg::dist {

// The releases (dx._release_*) of one query level, in order of appearance.
struct GroupedReleases {
	const ExtensionObjects *ext;
	std::vector<FuncExpr *> releases; // at this query level, in order of appearance
};

// Walker collecting the releases of one query level into a GroupedReleases (not inside sublinks' queries).
bool collect_level_releases(Node *node, void *ctx);

// True when a weight expression is never NULL: a constant, or a lookup in an inline per-point
// table where every point contributes (rows are mapped to points, NULL values included).
bool never_null_weight(Node *w, const ExtensionObjects &ext);

// Mutator (ctx: const SplitContext) of a query level without GROUP BY: each release of one group
// reads its state from dx._state_of(sum(dx._units(w, grid)), count(w), params, group), which Citus
// splits into sums on the workers and the state on the coordinator.
Node *native_ungrouped_mutator(Node *node, void *ctx);

// The native sums of a release placed by the split (dx._release_*(dx._partial(w, g, params), params,
// g)): `units`, the exact sum of its weights in grid units (numeric), `rows`, its count component
// (bigint; a NULL constant for releases of one component), and its parameters. False when its sums
// cannot be native. Used by the open-key split (distributed_open.h).
bool release_native_sums(FuncExpr *release, const SplitContext &c, Expr *&units, Expr *&rows, Const *&params);

// A grouped query level on a Citus table rewritten so that every declared group, empty ones
// included, is released on the coordinator from one state per aggregate (see the .cpp for the
// exact shape; the workers' sums read as one Citus stage where distributed_stage.h applies, else
// as a subquery, which Citus makes a subplan); q itself when the level holds no release. Raises
// for shapes it cannot split.
Query *every_group_from_one_state(Query *q, SplitContext &c);

} // namespace dxpriv::pg::dist
