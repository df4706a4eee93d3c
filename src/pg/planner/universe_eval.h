// Evaluating query expressions at every point of a sub-universe (data-independent, no table scan).
#pragma once

#include "pg/metadata/policy.h"

extern "C" {
#include "nodes/primnodes.h"
}

#include <functional>
#include <set>
#include <vector>

#include "core/sensitivity.h"

namespace dxpriv::pg {

// Values of expressions at every point u of the sub-universe of `cols` (row-major, last column
// fastest, exactly the points domain_datums() produces, i.e. the values clamping produces).
// A NULL result is reported in `is_null` and stored as 0. Boolean expressions give 0/1.
struct UniverseValues {
	std::vector<std::vector<double>> value;   // per expression, sub.size() entries
	std::vector<std::vector<char>> is_null;   // per expression
};

// Refuses (54000) a query whose referenced columns span more than kMaxSubUniverse points, naming
// each column with its number of domain values and what to do instead.
void check_sub_universe_size(const std::vector<const ColumnPolicy *> &cols);

// The sub-universe of the declared columns holding the given attributes (a column group once, in
// attribute order of its first referenced member); cols receives the columns in point order.
// Refuses sub-universes over the cap (check_sub_universe_size).
SubUniverse sub_universe_of(const TablePolicy &policy, const std::set<AttrNumber> &attnos,
                            std::vector<const ColumnPolicy *> &cols);

// exprs may contain nullptr (evaluated as constant true / 1). Expressions are boolean or float8.
// Errors raised by an expression (e.g. division by zero at some domain point) propagate: they do
// not depend on the data.
UniverseValues evaluate_over_universe(Oid relid, const std::vector<const ColumnPolicy *> &cols,
                                      const SubUniverse &sub, const std::vector<Expr *> &exprs);

// One public table of a join with the protected table (a snapshot taken at analysis), in join
// order: its columns appear in the expressions as PARAM_EXEC parameters `params`.
struct PublicStep {
	std::vector<int> params;                // parameter of each snapshot column
	std::vector<std::vector<Datum>> values; // per row, per column
	std::vector<std::vector<char>> nulls;
	bool left = false;  // LEFT JOIN: a combination no row joins keeps one pair with these columns NULL
	Expr *on = nullptr; // LEFT JOIN: its ON condition (inner joins' conditions are in WHERE)
};

// The public tables of a join: every (point, combination of their rows) is one pair.
struct PublicRows {
	int params = 0;
	std::vector<PublicStep> steps;
	// Largest number of pairs per point (the product of the tables' rows, 1 for an empty LEFT one).
	double combinations() const;
};

// Evaluates exprs (boolean or float8, nullptr as 1) and keys (any type) at every pair (point u,
// combination of public rows) the joins emit for u: inner tables cross, a LEFT JOIN table keeps its
// rows whose ON holds, or one row of NULLs when none does. Calls on_pair(u, values, nulls,
// key values, key nulls) once per pair, in point order; key values live until on_pair returns.
using PairCallback = std::function<void(size_t, const std::vector<double> &, const std::vector<char> &,
                                        const std::vector<Datum> &, const std::vector<char> &)>;
void evaluate_pairs_over_universe(Oid relid, const std::vector<const ColumnPolicy *> &cols, const SubUniverse &sub,
                                  const std::vector<Expr *> &exprs, const std::vector<Expr *> &keys,
                                  const PublicRows &inner, const PairCallback &on_pair);

// Values of expressions of any type at every point (same order as evaluate_over_universe), copied
// into the caller's memory context; expressions must not be nullptr.
struct UniverseDatums {
	std::vector<std::vector<Datum>> value;  // per expression, sub.size() entries
	std::vector<std::vector<char>> is_null; // per expression
};
UniverseDatums evaluate_datums_over_universe(Oid relid, const std::vector<const ColumnPolicy *> &cols,
                                             const SubUniverse &sub, const std::vector<Expr *> &exprs);

} // namespace dxpriv::pg
