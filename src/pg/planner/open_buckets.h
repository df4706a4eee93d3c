// Time buckets of an open date column: GROUP BY date_trunc('<unit>', d) with d open.
//
// A bucket of an open key is still open (its values are never enumerated), and a record lies in one
// bucket, so the partition selection of planner/open_keys.h applies with the buckets as partitions:
// a changed key moves at most one record between two buckets, at distance >= w, exactly as a changed
// key does. Recognised: date_trunc('<unit>', d) over the implicit cast of d to timestamp or timestamp
// with time zone, optionally cast back to date, with <unit> a constant among microseconds ..
// millennium. dxpriv runs its own copy of the expression, guarded so that no stored value can make
// it fail: keys outside 0001-01-01 .. 9999-12-31 (whose cast could leave the timestamp range) fall
// in the bucket of NULL keys.
#pragma once

#include "pg/metadata/policy.h"

extern "C" {
#include "nodes/primnodes.h"
}

#include <set>

namespace dxpriv::pg::analysis {

// The open column (varno 1, level 0, in `open`) that expr is a bare reference to or a recognised
// bucket of; 0 otherwise. *bucket is set when it is a bucket.
AttrNumber open_key_column(Expr *expr, const std::set<AttrNumber> &open, bool *bucket);

// What runs at execution for a recognised bucket: CASE WHEN d >= '0001-01-01' AND d <=
// '9999-12-31' THEN <the bucket> END, the bucket rebuilt from its validated parts (same type).
Expr *guarded_bucket(Expr *expr);

} // namespace dxpriv::pg::analysis
