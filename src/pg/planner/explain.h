// dx.explain: what a query would cost and how noisy each answer would be, without running it.
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}


#include <string>
#include <vector>

#include "core/allocation.h"
#include "core/linear_query.h"

namespace dxpriv::pg {

// One output cell of an analysed query.
struct ExplainCell {
	int aggregate;          // 1-based position among the query's dx aggregates
	std::string kind;       // count, sum, avg, linear
	std::string group;      // "col=value, ..." or "" without GROUP BY
	std::string component;  // value; for avg: sum or count
	double epsilon;         // the epsilon the cell effectively received (MultiLinearPlan::epsilon_share)
	LinearNoisePlan plan;
	// Cells of other mechanisms than Laplace on a linear query (exponential mechanism,
	// em_rewrite.cpp): reported_half_width >= 0 replaces the plan's Laplace half-width (there: the
	// Theorem 4 bound on the utility loss at 95%), and linear = false leaves the plain-DP comparison
	// (which is computed for the linear cells) empty.
	double reported_half_width = -1;
	bool linear = true;
	// false for a row that is no cell of the ledger: an average's own interval (component
	// "average"), reported next to its sum and count parts with a NULL cell number and scale
	bool ledger = true;
	std::string noise;      // noise family shown for this cell ("": the query's linear family)
	// >= 0: a comparison row (the statistical-query surrogate, MECHANISMS.md §3.13) that shows its
	// noise scale and this improvement factor although it is no ledger cell
	double comparison_factor = -1;
	// privacy unit: this cell's scale over its scale with one row per unit (-1: none)
	double unit_factor = -1;
};

// What the analyzer records while dx.explain parses a query.
struct ExplainCapture {
	Oid relid = InvalidOid;
	double epsilon = 0;          // total epsilon of the query
	std::string strategy;        // allocation used
	std::string noise = "laplace"; // noise family of the linear cells (dxpriv.noise)
	double delta = 0;            // delta the query spends (0 for pure epsilon)
	double open_delta = 0;       // the partition selections' deltas (one per release grouped by an open key)
	double plain_dp_scale = 0;   // scale plain epsilon-DP would need for each cell
	bool plain_dp_exact = true;  // false: plain_dp_scale is a lower bound (Delta Q over edges only)
	bool attribute = false;      // dx.attr_avg / dx.attr_sum calls: remaining is the attribute budget's
	// privacy unit (README "Privacy units"): the query's contribution bound ("" without a unit) and,
	// per cell of the plan, its scale over the scale with one row per unit (-1: exact cell)
	std::string unit_bound;
	std::vector<double> unit_factor;
	std::vector<ExplainCell> cells;
	// A statement with a single linear cell: its sub-universe and weights (for the statistical-query
	// comparison of a k-way marginal count, MECHANISMS.md §3.13); empty otherwise.
	SubUniverse sub;
	std::vector<double> q;
	std::vector<std::string> column_names;
};

// dx.explain of the attribute-privacy releases (SELECT dx.attr_avg(...)): when q is such a query,
// fills `cap` and returns true; false for any other query; spends nothing. It lives in the release
// layer (release/attribute_release.cpp), above the planner, which registers it when the library
// is loaded (a static initializer, before _PG_init): the planner calls up only through this pointer.
using AttributeExplain = bool (*)(Query *q, ExplainCapture &cap);
void register_attribute_explain(AttributeExplain fn);

// True while dx.explain is analysing a query: the analyzer then fills explain_capture().
bool explain_capture_active();

// Switches the capture off and empties it (top-level transaction end).
void explain_capture_reset();
ExplainCapture &explain_capture();

// The allocation strategy selected by dxpriv.allocation.
AllocationStrategy current_strategy();

} // namespace dxpriv::pg
