// Release allocation: shares a statement's epsilon between its cells and records what dx.explain shows.
#include "pg/planner/release_allocation.h"
#include "pg/planner/release_analysis.h"
#include "pg/planner/release_identity.h"
#include "pg/planner/release_rewrite.h"
#include "pg/planner/release_wrappers.h"
#include "pg/planner/release_grouping_sets.h"
#include "pg/settings.h"
#include "pg/metadata/extension_objects.h"
#include "pg/elevated/sealed_execution.h"
#include "pg/metadata/policy.h"
#include "pg/contract/param_consts.h"
#include "pg/analyst/analyst_guard.h"
#include "pg/planner/probes.h"
#include "pg/planner/attr_rewrite.h"
#include "pg/planner/em_rewrite.h"
#include "pg/planner/explain.h"
#include "pg/planner/group_keys.h"
#include "pg/planner/group_source.h"
#include "pg/planner/grouping_sets.h"
#include "pg/planner/join_cells.h"
#include "pg/guard.h"
#include "pg/metadata/catalog.h"
#include "pg/metadata/citus_tables.h"
#include "pg/planner/line_release.h"
#include "pg/node_build.h"
#include "pg/planner/parameters.h"
#include "pg/planner/point_lookup.h"
#include "pg/planner/public_joins.h"
#include "pg/planner/shard_pruning.h"
#include "pg/contract/noise_params.h"
#include "pg/planner/universe_eval.h"
#include "pg/planner/unit_source.h"
#include "pg/executor/release_log.h"

#include "core/allocation.h"
#include "core/grouped_allocation.h"
#include "core/error.h"
#include "core/approximate_dp.h"
#include "core/linear_query.h"
#include "core/release_interval.h"
#include "core/work_estimate.h"
#include "core/sensitivity.h"
#include "core/unit_bound.h"

extern "C" {
#include "access/relation.h"
#include "access/transam.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "commands/defrem.h"
#include "tcop/tcopprot.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parse_coerce.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "optimizer/tlist.h"
#include "tcop/utility.h"
#include "utils/array.h"
#include "utils/fmgroids.h"
#include "utils/builtins.h"
#include "utils/acl.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "common/hashfn.h"
#include "miscadmin.h"
}

#include <algorithm>
#include <functional>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

namespace dxpriv::pg::analysis {

// See planner/release_allocation.h.
AllocationStrategy
strategy_for_cells(size_t m)
{
	AllocationStrategy strategy = current_strategy();
	if (strategy == AllocationStrategy::MinTotalVariance && m > kMaxExactCells) {
		ereport(NOTICE, (errmsg("dxpriv: %zu output cells exceed the exact allocator's limit of %zu; using algorithm3",
		                        m, kMaxExactCells)));
		strategy = AllocationStrategy::BudgetDistribution;
	} else if (strategy == AllocationStrategy::Relative && m > kMaxExactCells) {
		ereport(NOTICE, (errmsg("dxpriv: %zu output cells exceed the exact allocator's limit of %zu; using the "
		                        "relative progressive filling (still never noisier than equal_split)",
		                        m, kMaxExactCells)));
	}
	return strategy;
}

// See planner/release_allocation.h.
AllocationRequest
start_request(const std::vector<AggSpec> &specs, size_t m)
{
	AllocationRequest request;
	request.strategy = strategy_for_cells(m);
	bool declared = false;
	for (const AggSpec &s : specs)
		declared = declared || s.explicit_epsilon;
	if (declared) {
		request.block_of.assign(m, 0);
		for (const AggSpec &s : specs)
			request.block_epsilon.push_back(s.epsilon);
	}
	return request;
}

// See planner/release_allocation.h.
void
add_to_request(const ReleaseAnalysis &a, size_t offset, AllocationRequest &request)
{
	for (size_t j = 0; j < a.specs.size(); ++j) {
		for (size_t g = 0; g < a.keys.groups && !request.block_of.empty(); ++g)
			for (int c = 0; c < a.specs[j].components; ++c)
				request.block_of[offset + a.cell(j, g, c)] = j;
		if (a.specs[j].kind != AggKind::Avg)
			continue;
		const double mu = 0.5 * (a.lo[j] + a.hi[j]);
		for (size_t g = 0; g < a.keys.groups; ++g) {
			const size_t base = offset + a.cell(j, g, 0);
			request.estimates.push_back(Estimate{{base, base + 1}, {1.0, mu * mu}});
		}
	}
}

// See planner/release_allocation.h.
NoiseFamily
linear_noise_family(const ReleaseAnalysis &a, double &query_delta)
{
	const NoiseFamily family = static_cast<NoiseFamily>(guc_noise);
	if (family != NoiseFamily::Laplace && !a.specs.empty() && !(a.policy.delta > 0)) {
		char *rel = get_rel_name(a.relid);
		fail(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
		     std::string("noise family \"") + noise_family_name(family) + "\" needs a delta on table \"" +
		         (rel ? rel : "?") + "\"",
		     "Use SET dxpriv.noise = 'laplace' (pure epsilon), or ask the table owner to allow (epsilon, delta) "
		     "noise with dx.set_delta(table, 1e-6) and to grant a delta budget.");
	}
	query_delta = family == NoiseFamily::Laplace ? 0 : a.policy.delta;
	return family;
}

// See planner/release_allocation.h.
bool
any_noisy(const MultiLinearPlan &plan)
{
	for (const LinearNoisePlan &cell : plan.cells)
		if (cell.scale > 0)
			return true;
	return false;
}

// See planner/release_allocation.h.
void
capture_statement(const ReleaseAnalysis &a, double eps_total, AllocationStrategy strategy, NoiseFamily family,
                  double delta, const SubUniverse &sub, const std::vector<std::vector<double>> &q)
{
	ExplainCapture &cap = explain_capture();
	cap.relid = a.relid;
	cap.epsilon += eps_total; // a statement of several releases (wrappers) costs their sum
	cap.strategy = strategy_name(strategy);
	cap.noise = noise_family_name(family);
	cap.delta = delta;
	// (no linear cell, e.g. exponential-mechanism aggregates alone: no baseline; a privacy unit: the row-level
	// baseline does not apply, dx.explain's unit_noise_factor tells the bound's cost instead)
	std::vector<std::vector<double>> line_q; // a line release's cells where the points are needed
	std::optional<double> line_baseline;
	if (a.line && !a.specs.empty() && line_cells_vary(a.sub.domains[0], a.line_cells)) {
		try { // (as below: a baseline beyond the work cap is left out)
			line_baseline = plain_dp_scale_line(a.sub, a.line_cells, eps_total, &cap.plain_dp_exact);
		} catch (const CoreError &e) {
			if (e.kind() != ErrorKind::ProgramLimit)
				throw;
			line_baseline = 0.0;
			cap.plain_dp_exact = false;
		}
	}
	if (a.line && (!line_baseline || q.size() == 1))
		line_q = line_dense_cells(a);
	const std::vector<std::vector<double>> &cells = a.line && !line_q.empty() ? line_q : q;
	if (line_baseline) {
		cap.plain_dp_scale = *line_baseline;
	} else if (!a.specs.empty() && !a.policy.unit.present()) {
		// over the columns the cells depend on, so that it does not depend on the query's text
		const ProjectedCells relevant = project_to_relevant_columns(sub, cells);
		try { // a baseline beyond the work cap is left out: dx.explain accepts every query that runs
			cap.plain_dp_scale = plain_dp_scale(relevant.sub, relevant.q, eps_total, &cap.plain_dp_exact);
		} catch (const CoreError &e) {
			if (e.kind() != ErrorKind::ProgramLimit)
				throw;
			cap.plain_dp_scale = 0;
			cap.plain_dp_exact = false;
		}
	}
	if (cells.size() == 1 && cap.q.empty()) { // one linear cell: dx.explain checks for a marginal count
		cap.sub = sub;
		cap.q = cells[0];
		cap.column_names.clear();
		for (const ColumnPolicy *c : a.cols)
			cap.column_names.push_back(c->name);
	}
}

// See planner/release_allocation.h.
void
capture_cells(const ReleaseAnalysis &a, const MultiLinearPlan &plan, size_t offset, size_t j,
              const std::string &empty_label)
{
	ExplainCapture &cap = explain_capture();
	const AggSpec &s = a.specs[j];
	for (size_t g = 0; g < a.keys.groups; ++g) {
		const std::string label = a.keys.grouped() ? a.keys.label(g) : empty_label;
		for (int c = 0; c < s.components; ++c) {
			const size_t k = offset + a.cell(j, g, c);
			const LinearNoisePlan &p = plan.cells[k];
			cap.cells.push_back(ExplainCell{static_cast<int>(j) + 1, s.part ? "part" : kind_name(s.kind), label,
			                                s.kind == AggKind::Avg ? (c == 0 ? "sum" : "count") : "value",
			                                plan.epsilon_share[k], p}); // what the cell received
			if (k < cap.unit_factor.size())
				cap.cells.back().unit_factor = cap.unit_factor[k];
			if (s.kind == AggKind::Avg && c == 1) {
				// the average itself: its 95% half-width is this value divided by the group's row
				// count (delta method at the domain-centre mean; dx.last_release gives it for the
				// released count), since the count is data
				const LinearNoisePlan &sum_plan = plan.cells[k - 1];
				ExplainCell avg_row{static_cast<int>(j) + 1, kind_name(s.kind), label, "average (x count)",
				                    plan.epsilon_share[k - 1] + plan.epsilon_share[k], p};
				avg_row.reported_half_width = average_half_width(sum_plan, p, (a.lo[j] + a.hi[j]) / 2, 1.0);
				avg_row.ledger = false;
				avg_row.plan.bound = 0;
				cap.cells.push_back(avg_row);
			}
		}
	}
}

// See planner/release_allocation.h.
ContributionBound
unit_bound_of(const ReleaseAnalysis &a)
{
	const UnitPolicy &u = a.policy.unit;
	return ContributionBound::for_query(static_cast<size_t>(u.max_rows), static_cast<size_t>(u.max_groups),
	                                    static_cast<size_t>(u.max_rows_per_group), a.keys.grouped());
}

// See planner/release_allocation.h.
UnitCells
unit_cells_of(const ReleaseAnalysis &a)
{
	UnitCells cells;
	for (size_t j = 0; j < a.specs.size(); ++j)
		for (size_t g = 0; g < a.keys.groups; ++g)
			for (int c = 0; c < a.specs[j].components; ++c) {
				const size_t k = a.cell(j, g, c);
				if (cells.group.size() <= k) {
					cells.group.resize(k + 1, 0);
					cells.distinct.resize(k + 1, 0);
				}
				cells.group[k] = g;
				// (an open release: a unit counts once in each of up to k' partitions of a group,
				// calibrated as a count of its rows: open_keys.h)
				cells.distinct[k] = a.specs[j].kind == AggKind::CountUnits && !a.open;
			}
	return cells;
}

// See planner/release_allocation.h.
std::string
unit_bound_text(const ReleaseAnalysis &a, const ContributionBound &b)
{
	std::string t = a.policy.unit.column + ": " + std::to_string(b.max_rows) + " rows per unit";
	if (a.keys.grouped() && (b.max_groups < b.max_rows || b.max_rows_per_group < b.max_rows))
		t += ", " + std::to_string(b.max_groups) + " groups, " + std::to_string(b.max_rows_per_group) +
		     " rows per group";
	return t;
}

// See planner/release_allocation.h.
MultiLinearPlan
plan_release(const ReleaseAnalysis &a, double query_delta, NoiseFamily family, const AllocationRequest &request)
{
	if (a.specs.empty()) // exponential-mechanism aggregates alone: no linear cell
		return MultiLinearPlan{};
	if (a.line) { // by pieces (planner/line_release.h); the points where the closed forms stop
		if (family == NoiseFamily::Laplace)
			if (std::optional<MultiLinearPlan> plan = plan_multi_linear_line(a.sub, a.line_cells, a.eps_total, request))
				return *plan;
		return plan_multi_linear_noise(a.sub, line_dense_cells(a), a.eps_total, query_delta, family, request);
	}
	if (!a.policy.unit.present()) {
		// a key column with an all-pairs metric (discrete, per_value GROUP BY): without building
		// the rows between groups, checked against all of them (core/grouped_allocation.h)
		if (family == NoiseFamily::Laplace && !guc_exhaustive_analysis) {
			GroupedStats st;
			std::optional<MultiLinearPlan> plan = plan_multi_linear_grouped(a.sub, a.q_cells, a.eps_total, request, &st);
			if (st.fell_back)
				elog(DEBUG1, "dxpriv: grouped allocation fell back to the per-point reference");
			if (plan) {
				elog(DEBUG1, "dxpriv: grouped allocation without the %.0f rows between groups: %zu rows, %zu allocations",
				     st.pair_rows, st.base_rows + st.generated_rows, st.rounds);
				return *plan;
			}
		}
		return plan_multi_linear_noise(a.sub, a.q_cells, a.eps_total, query_delta, family, request);
	}
	if (family != NoiseFamily::Laplace)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED,
		     std::string("noise family \"") + noise_family_name(family) + "\" is not available on tables with a privacy unit",
		     "Use SET dxpriv.noise = 'laplace': the unit-level calibration is pure epsilon.");
	const ContributionBound bound = unit_bound_of(a);
	const UnitCells cells = unit_cells_of(a);
	MultiLinearPlan plan = plan_unit_linear(a.sub, a.q_cells, a.eps_total, request, cells, bound);
	if (explain_capture_active()) { // the bound's effect: the same query with one row per unit
		ExplainCapture &cap = explain_capture();
		const MultiLinearPlan one =
			plan_unit_linear(a.sub, a.q_cells, a.eps_total, request, cells, ContributionBound::for_query(1, 1, 1, a.keys.grouped()));
		cap.unit_bound = unit_bound_text(a, bound);
		cap.unit_factor.clear();
		for (size_t k = 0; k < plan.cells.size(); ++k)
			cap.unit_factor.push_back(one.cells[k].scale > 0 ? plan.cells[k].scale / one.cells[k].scale : -1);
	}
	return plan;
}

} // namespace dxpriv::pg::analysis
