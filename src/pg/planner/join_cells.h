// The per-point (and per group slot) sums of a join with public tables (README "Joins with public
// tables"): every (declared point, combination of public rows) pair the joins emit is evaluated at
// analysis; a point's contribution to an aggregate in a group is the sum of its weight over the
// pairs that pass WHERE and FILTER and fall in that group, and its count is the number of those
// pairs (an average is over the pairs). With GROUP BY keys over public columns the groups are the
// distinct key tuples of the pairs passing WHERE (declared points and public rows only: never the
// protected data), and a point may fall in several groups: slot s of point u is its s-th group.
#pragma once

#include "pg/metadata/policy.h"
#include "pg/planner/universe_eval.h"

extern "C" {
#include "nodes/primnodes.h"
}

#include <optional>
#include <vector>

namespace dxpriv::pg {

struct JoinCells {
	size_t groups = 1;
	size_t slots = 1;                                    // largest number of groups of one point
	std::vector<std::optional<double>> group_of_slot;    // per u * slots + s: the group (public keys)
	std::vector<std::vector<std::optional<double>>> sum; // per aggregate, per u * slots + s
	std::vector<std::vector<double>> count;              // per aggregate, per u * slots + s: pairs
	std::vector<double> pair_lo, pair_hi;                // per aggregate: range of one pair's weight
	std::vector<char> seen, nonzero;                     // per aggregate: a non-NULL / non-zero weight
	std::vector<std::vector<Datum>> key_value;           // per key, per group (public keys)
	std::vector<std::vector<char>> key_null;
	// The group of slot s of point u (without public keys: the point's group, slot 0 only).
	std::optional<size_t> group(size_t u, size_t s, const std::vector<size_t> &group_of_point) const
	{
		if (group_of_slot.empty())
			return s == 0 ? std::optional<size_t>(group_of_point[u]) : std::nullopt;
		const std::optional<double> &g = group_of_slot[u * slots + s];
		return g ? std::optional<size_t>(static_cast<size_t>(*g)) : std::nullopt;
	}
};

// exprs: WHERE, then per aggregate its FILTER and weight (nullptr: true / 1). keys: the GROUP BY
// key expressions when they read public columns, else empty (groups come from group_of_point,
// one per point, `groups` of them). Refuses (54000) more than max_groups groups, and (0A000) keys
// without a btree ordering or a query whose public keys have no group at all.
JoinCells evaluate_join_cells(Oid relid, const std::vector<const ColumnPolicy *> &cols, const SubUniverse &sub,
                              const std::vector<Expr *> &exprs, const std::vector<Expr *> &keys,
                              const std::vector<size_t> &group_of_point, size_t groups, const PublicRows &rows,
                              size_t max_groups);

} // namespace dxpriv::pg
