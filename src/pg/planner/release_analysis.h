// Release analysis: finds a query's dx aggregates, validates them and computes every cell's weight at every point.
// Part of the analysis stage (planner/analyzer.h dispatches to it); names live in dxpriv::pg::analysis.
#pragma once

#include "pg/settings.h"
#include "pg/metadata/extension_objects.h"
#include "pg/metadata/policy.h"
#include "pg/analyst/analyst_guard.h"
#include "pg/planner/em_rewrite.h"
#include "pg/planner/group_keys.h"
#include "pg/planner/join_cells.h"
#include "pg/planner/public_joins.h"
#include "pg/planner/universe_eval.h"
#include "pg/executor/release_log.h"
#include "core/allocation.h"
#include "core/linear_query.h"
#include "core/line_form.h"
#include "core/unit_bound.h"
#include "core/work_estimate.h"
#include "core/sensitivity.h"
#include "core/release_interval.h"
#include "core/approximate_dp.h"

extern "C" {
#include "nodes/parsenodes.h"
}

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dxpriv::pg::analysis {

// Location stamped on the aggregates we rewrite. The parser only produces -1 or offsets >= 0, so
// SQL text cannot forge it; it lets the hook recognise a query it already rewrote (EXPLAIN calls
// post_parse_analyze_hook a second time on its analysed query).
inline constexpr int kRewrittenLocation = -7417;

inline const char *const kShapeHint =
    "Supported: SELECT [declared columns,] dx.count(*|col), dx.sum(expr), dx.avg(expr), "
    "dx.linear(expr) [, ...] FROM <protected table> [WHERE <conditions on declared columns>] "
    "[GROUP BY <declared columns or expressions over them>] [HAVING/ORDER BY/LIMIT].";
inline constexpr double kMinEpsilon = 1e-15;   // smallest aggregate epsilon (noise scale limit 1e15 / count)
inline constexpr size_t kMaxGroups = 10000;     // output groups of one GROUP BY
inline constexpr double kMaxCellPoints = 2e7;   // cells x sub-universe points held in memory

struct Discovery {
	const ExtensionObjects *ext;
	int depth = 0;
	int markers_top = 0, markers_nested = 0, internal = 0, rewritten = 0, other_aggs_top = 0;
	// EXPLAIN without ANALYZE runs nothing: Citus explains the coordinator's share of a distributed
	// release over a new connection, where the releases and native partials are not charged
	bool plain_explain = false;
};

enum class AggKind { Count, Sum, Avg, Linear, CountUnits };

struct AggSpec {
	Aggref *aggref;
	AggKind kind;
	double epsilon;
	Expr *weight;     // float8 per-row weight before clamping (nullptr: constant 1, count(*))
	Expr *filter;     // FILTER clause or nullptr
	int components;   // 2 for avg (sum and count), else 1
	int first_cell;   // offset of this aggregate's components in a group's cells
	bool explicit_epsilon = false; // epsilon given as the aggregate's argument
	bool part = false; // a part of stddev/corr/... (analyst/dispersion_spelling.h): released by dx._noisy_part
};

// What the analysis of one release (a SELECT with dx aggregates over one table) found before its
// cells are allocated: the aggregates, the groups, the sub-universe and every cell's weight at
// every point. Filled in place (keys and cols point into policy).
struct ReleaseAnalysis {
	Oid relid = InvalidOid;
	TablePolicy policy;
	Node *where = nullptr;
	GroupKeys keys;
	EmQuery em;
	std::vector<std::pair<Aggref *, size_t>> duplicates; // (copy, index of its representative)
	std::vector<AggSpec> specs;
	int cells_per_group = 0;
	double eps_total = 0;
	std::set<AttrNumber> attnos;                           // attributes read (whole column groups)
	std::vector<const ColumnPolicy *> cols;                // columns of the sub-universe, in point order
	SubUniverse sub;
	std::vector<std::vector<double>> q_cells;              // per cell, its weight at every point
	std::vector<std::vector<std::optional<double>>> tables; // per aggregate: what a row at point u adds
	std::vector<double> lo, hi;                            // per aggregate: range of its weight
	const PublicRows *join = nullptr;                      // a join with public tables (join_cells.h)
	bool public_keys = false;                              // GROUP BY public columns (slots)
	JoinCells jc;                                          // a join's sums per point and slot
	std::vector<std::vector<std::optional<double>>> count_tables; // a join's pair counts (avg)
	std::vector<std::optional<double>> where_table;        // 1 where the WHERE clause holds, else none (not in joins)
	bool open = false;                                     // grouped by an open key (planner/open_keys.h)
	std::vector<size_t> group_of_point;                    // per point of sub: its output group
	// closed form (planner/line_release.h): the cells and tables by pieces; q_cells then holds
	// empty vectors, tables empty tables, and where_table and group_of_point are empty
	bool line = false;
	LineCells line_cells;
	std::vector<LineTable> line_tables;

	size_t cells() const { return q_cells.size(); }
	// Cell of aggregate j, group g, component c.
	size_t cell(size_t j, size_t g, int c) const
	{
		return g * static_cast<size_t>(cells_per_group) + static_cast<size_t>(specs[j].first_cell + c);
	}
};

// A release that is one grouping set of a statement whose sets share one allocation.
struct SetIdentity {
	int set = 0, sets = 1;
};

// Counts dx aggregates by nesting level, and internal aggregates anywhere.
bool discover(Node *node, void *ctx);

// Collects the top-level dx aggregate nodes (to be rewritten in place).
bool collect_markers(Node *node, void *ctx);

// Rejects statement shapes dxpriv cannot answer.
void check_shape(Query *q, const Discovery &d);

bool user_type_walker(Node *node, void *ctx);

// Checks an expression evaluated on declared domain points: only declared columns, immutable
// functions, no parameters; for analysts only built-in functions and types.
void check_row_expression(Node *expr, const TablePolicy &policy, const char *where);

// Sorted distinct attribute numbers of the columns an expression references.
void collect_attnos(Node *expr, std::set<AttrNumber> &out);

// The epsilon of one aggregate: its constant second argument, or dxpriv.epsilon.
double aggregate_epsilon(Aggref *a, bool has_eps_arg);

// Refuses ORDER BY inside a dx aggregate.
void reject_aggregate_order(Aggref *a);

// dx.count_units(unit [, epsilon]) and dx.count(DISTINCT unit): how many units have a counted row
// (README "Privacy units"). The argument must be the table's privacy unit column itself; COUNT
// DISTINCT of anything else has no sound sensitivity here and is refused with what to write instead.
AggSpec describe_count_units(Aggref *a, const TablePolicy &policy, const ExtensionObjects &ext);

// Validates one dx aggregate and describes its per-row weight.
AggSpec describe_aggregate(Aggref *a, const TablePolicy &policy, const ExtensionObjects &ext);

const char * kind_name(AggKind k);

// "X, N times the limit of L" for limit errors.
std::string over_limit(double value, double limit);

// Refuses (54000) a query whose noise calibration would exceed its work cap, before evaluation.
void refuse_over_work(const WorkEstimate &w, size_t m, const std::vector<const ColumnPolicy *> &cols);

// What each linear aggregate computes, for dx.last_release (empty under dx.explain). Reads the
// aggregates' original arguments: call before rewriting them.
std::vector<ReleaseDescription> describe_releases(const std::vector<AggSpec> &specs, Oid relid);

// Registers the descriptions under the charge ids stamped into the rewritten aggregates (specs'
// Aggrefs give their aggregate index; the tree may hold copies of them, which were stamped).
void register_releases(const std::vector<AggSpec> &specs, const std::map<int, int64> &charge_ids,
                  std::vector<ReleaseDescription> descriptions, std::vector<std::string> labels);

// What a query on a table with a privacy unit cannot do yet (0A000 with a hint): the exponential
// mechanism, joins, grouping sets and Citus have no unit-level calibration or bounded source.
void refuse_for_privacy_unit(Oid relid, bool em, bool join, bool grouping_set);

// Validates one release and computes its cells (ReleaseAnalysis). extra_attnos: attributes the
// sub-universe must hold besides the release's own (the other grouping sets' keys, so that every
// set's cells live on one sub-universe); cells_before: cells of the sets analysed before it (the
// limits apply to the statement's cells). A query with parameters ($1) is only checked for its
// shape: returns false, and it is analysed when it is planned with its bound values
// (parameters.cpp); until then its dx aggregates are markers, which refuse to run. shape_only:
// only these checks, whatever the query holds (a join with parameters, whose parameters may have
// moved into a LEFT JOIN's ON).
bool analyse_release(Query *q, const ExtensionObjects &ext, const Discovery &d, const std::set<AttrNumber> &extra_attnos,
                size_t cells_before, bool grouping_set, ReleaseAnalysis &a, bool shape_only = false);

} // namespace dxpriv::pg::analysis
