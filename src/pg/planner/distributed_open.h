// Open GROUP BY keys on Citus tables: candidate partitions counted on the workers, selection and noise
// once on the coordinator.
//
// A release grouped by an open key (planner/open_keys.h) is, after the linear split of its
// aggregates (distributed.cpp),
//   SELECT keys, dx._release_*(dx._partial(w, g, params), params, g), ... FROM t GROUP BY keys
//   HAVING CASE WHEN dx._partition_select(s, g, params_s, sel) THEN dx._open_cells(...) ... END
//   ORDER BY keys OFFSET 0
// and becomes three levels:
//   X (the workers' share, PostgreSQL's own aggregates that Citus splits into per-shard partial sums
//      and adds up on the coordinator; OFFSET 0 makes Citus plan it as a subplan of its own, so that
//      nothing above it is ever sent to a worker):
//      SELECT g, keys, sum(dx._units(w1, grid1)) AS u1, count(w1) AS n1, ..., count(s) AS c
//      FROM t GROUP BY g, keys OFFSET 0            (count(DISTINCT s) with a privacy unit)
//   Y (coordinator: per candidate partition, in the order of the keys as the local plan meets its
//      groups, its noise, then its selection and dx.last_release() labels, in one projection):
//      SELECT keys, dx._release_*(dx._state_of(x.u1, x.n1, params, x.g), params, x.g) AS r1, ...,
//             CASE WHEN dx._release_selection(x.c, params_s, sel) THEN dx._open_cells(true, names,
//             keys::text) ELSE dx._open_cells(false, NULL, NULL) END AS kept
//      FROM X x ORDER BY keys OFFSET 0                (equal releases: one column, one draw)
//   top (coordinator: the analyst's HAVING and output on kept partitions only):
//      SELECT <output over y> FROM Y y WHERE CASE WHEN y.kept THEN <having over y> ELSE false END
//      ORDER BY ... OFFSET 0
// The workers return only exact counts and sums per candidate partition, into Citus's intermediate
// results on the coordinator (analysts cannot read them: analyst/citus_surface.h; Y's result also
// holds the withheld candidates' noisy answers, never returned); key values leave the coordinator's
// backend only in the rows the selection kept. dx._release_selection refuses a statement that was not
// charged in the running backend (executor/partition_keep.cpp), so no worker can select.
#pragma once

#include "pg/planner/distributed_context.h"

extern "C" {
#include "nodes/parsenodes.h"
}

namespace dxpriv::pg::dist {

// The rewrite above for one query level q whose HAVING holds dx._partition_select and whose releases
// were split for a Citus table; q itself when the level holds no split release (a local table).
// Adds the selection call to c.releases (the charge step reads its parameters). Raises (0A000,
// nothing charged) for a shape it cannot split.
Query *open_partitions_from_sums(Query *q, SplitContext &c);

} // namespace dxpriv::pg::dist
