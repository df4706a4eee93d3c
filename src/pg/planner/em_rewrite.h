// Query analysis for the exponential-mechanism aggregates dx.mode, dx.quantile and dx.median,
// called through the exponential-mechanism release kind (planner/em_kind.cpp, release_kind.h).
//
// Each such aggregate spends its own epsilon (it is not part of the linear allocation), has its
// own exact utility sensitivity S_EM over the columns it reads (its candidate column, WHERE,
// FILTER and the GROUP BY columns; core/exponential_mechanism.h), and is rewritten into
//   dx._em_point(dx._em_select(<candidate index>, <group>, <params>), NULL::<type>, <domain>)
// where the candidate index of a row is dx._weigh_int(<table>, <the row's columns>): the table, built
// at analysis over the aggregate's sub-universe, holds each point's candidate (NULL where WHERE or
// FILTER excludes it), so no expression of the query runs on a stored row (point_lookup.h).
// where dx._em_select is an internal aggregate charged like the linear ones (params in the
// NoiseParams layout, em_params.h) and dx._em_point maps the chosen index back to the value.
#pragma once

#include "pg/metadata/extension_objects.h"
#include "pg/metadata/policy.h"
#include "pg/planner/group_keys.h"

#include "core/exponential_mechanism.h"

extern "C" {
#include "nodes/parsenodes.h"
#include "nodes/primnodes.h"
}

#include <functional>
#include <set>
#include <vector>

namespace dxpriv::pg {

// True for the dx.mode / dx.quantile / dx.median markers.
bool is_em_marker(const ExtensionObjects &ext, Oid f);

// One validated exponential-mechanism aggregate of a query.
struct EmSpec {
	Aggref *aggref;
	int position;               // index among all the query's dx aggregates (collection order)
	const char *name;           // "mode", "quantile" or "median"
	EmUtility utility;
	double epsilon;
	const ColumnPolicy *column; // the candidate column
	Var *var;                   // its reference in the aggregate
	Expr *filter;               // FILTER clause (unclamped) or nullptr
	// Other occurrences of the same aggregate (equal() nodes, e.g. the two copies the parser makes
	// of x in "x BETWEEN a AND b", or a repeat in HAVING): one release, charged once.
	std::vector<Aggref *> aliases;
};

// The exponential-mechanism aggregates of a query and where the other dx aggregates sit.
struct EmQuery {
	std::vector<EmSpec> specs;
	std::vector<int> linear_positions; // position of each remaining (linear) marker
	int total = 0;                     // number of distinct dx aggregates in the query
};

// Analyzer helpers the exponential mechanism reuses (passed in by planner/em_kind.cpp).
struct EmAnalyzerHooks {
	std::function<void(Node *, const char *)> check_row_expression; // declared columns, immutable, ...
};

// Moves the exponential-mechanism markers out of `markers` (the others keep their order) and
// validates them: one plain declared column (not a member of a column group), an ordered (range
// or date) domain for quantiles, constant p in [0, 1] and epsilon > 0. Errors with errcodes and
// hints otherwise. Equal exponential-mechanism markers become aliases of the first one.
// Positions count distinct aggregates (the planner gives equal aggregates one aggregate number).
EmQuery take_em_markers(std::vector<Aggref *> &markers, const TablePolicy &policy, const ExtensionObjects &ext,
                        const EmAnalyzerHooks &hooks);

// Adds the attributes the exponential-mechanism aggregates read (whole column groups) to out.
void em_collect_attnos(const EmQuery &em, const TablePolicy &policy, std::set<AttrNumber> &out);

struct EmRewriteInput {
	Oid relid;
	const TablePolicy *policy;
	const ExtensionObjects *ext;
	Node *where;                                  // WHERE clause before clamping
	const GroupKeys *keys;                        // GROUP BY keys (plain declared columns only)
	Expr *group_index;                            // int4 output group of a row (constant 0 without GROUP BY)
	int rewritten_location;                       // Aggref location marking rewritten aggregates
	std::vector<Aggref *> linear_aggrefs;         // the already rewritten linear aggregates, in order
	bool distributed = false;                     // a Citus table: no empty row per group in the source
};

// Computes S_EM and the sampling parameters of every exponential-mechanism aggregate, rewrites
// them in q's target list and HAVING clause, renumbers the linear aggregates' agg_index/agg_count
// among all the query's dx aggregates (answer cache), and adds their cells to dx.explain's
// capture. Must run after the linear aggregates are rewritten and before the remaining column
// references are clamped (GROUP BY: before the row source is replaced).
void rewrite_em_aggregates(Query *q, const EmQuery &em, const EmRewriteInput &in);

} // namespace dxpriv::pg
