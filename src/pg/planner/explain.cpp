// dx.explain(query): analyses a query exactly as running it would, and reports its cost and
// per-cell noise without executing it (nothing is charged).
#include "pg/planner/explain.h"

#include "pg/metadata/catalog.h"
#include "pg/metadata/protected_rows.h"
#include "pg/guard.h"
#include "pg/settings.h"
#include "pg/metadata/extension_objects.h"
#include "pg/metadata/policy.h"

#include "core/accuracy.h"
#include "core/statistical_query.h"

extern "C" {
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/tuplestore.h"
#include "utils/syscache.h"
#include "access/htup_details.h"
#include "catalog/pg_class.h"
}

#include <cmath>

namespace dxpriv::pg {

static bool capture_active = false;
static AttributeExplain attribute_explain = nullptr; // set by release/attribute_release.cpp

// See explain.h.
void
register_attribute_explain(AttributeExplain fn)
{
	attribute_explain = fn;
}
static ExplainCapture capture;

// See explain.h.
bool
explain_capture_active()
{
	return capture_active;
}

// See explain.h.
ExplainCapture &
explain_capture()
{
	return capture;
}

// See explain.h.
AllocationStrategy
current_strategy()
{
	switch (guc_allocation) {
	case 1:
		return AllocationStrategy::MinTotalVariance;
	case 2:
		return AllocationStrategy::BudgetDistribution;
	case 3:
		return AllocationStrategy::EqualScale;
	case 4:
		return AllocationStrategy::EqualSplit;
	default:
		return AllocationStrategy::Relative;
	}
}

// See explain.h.
void
explain_capture_reset()
{
	capture_active = false;
	capture = ExplainCapture();
}

// Runs parse analysis of one SELECT with the capture switched on; restores it on every path.
static void
analyse_for_explain(const std::string &sql)
{
	capture = ExplainCapture();
	capture_active = true;
	Query *analysed = nullptr;
	try {
		pg_call([&] {
			List *raw = raw_parser(sql.c_str(), RAW_PARSE_DEFAULT);
			if (list_length(raw) != 1 || !IsA(linitial_node(RawStmt, raw)->stmt, SelectStmt))
				ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				                errmsg("dx.explain takes exactly one SELECT statement"),
				                errhint("Pass the query text, e.g. dx.explain('SELECT dx.count(*) FROM t').")));
			analysed = parse_analyze_fixedparams(linitial_node(RawStmt, raw), sql.c_str(), nullptr, 0, nullptr);
		});
	} catch (...) {
		capture_active = false;
		throw;
	}
	capture_active = false;
	if (capture.cells.empty() && analysed)
	{
		if (!attribute_explain)
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv's attribute-privacy explain is not registered");
		attribute_explain(analysed, capture); // SELECT dx.attr_avg(...): release/attribute_release.h
	}
	if (capture.cells.empty())
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "the query has no dx aggregate",
		     "dx.explain reports on queries such as SELECT dx.count(*) FROM <protected table> or "
		     "SELECT dx.attr_avg('<table>', '<column>').");
}

// §3.13: a query that is one k-way marginal count on a table whose row count n is public
// (presence = +inf, so dx.count(*) is exact) gets a second row: the statistical-query variant with
// the optimal product surrogate (core/statistical_query.h) at the cell's epsilon, in count units
// (noise scale n/eps', 95% bound n (bias + ln 20 / eps')), and as improvement factor the ratio of
// the plain cell's root-mean-square error bound to the surrogate's. Nothing is charged; n is read
// as the table owner (it is public under the policy).
static void
append_marginal_surrogate(const ExplainCapture &cap, std::vector<ExplainCell> &cells)
{
	if (cells.size() != 1 || cells[0].kind != "count" || !cells[0].group.empty() || cap.q.empty() ||
	    !std::isinf(cap.sub.presence) || !(cells[0].plan.scale > 0) || cap.noise != "laplace")
		return;
	MarginalCell cell;
	if (!marginal_cell_of(cap.sub, cap.q, &cell))
		return;
	const ExtensionObjects *ext = extension_objects();
	if (!ext)
		return;
	double n = 0;
	{
		// the row count of a table with a privacy unit is not n records: no surrogate row there
		if (!row_level_table(cap.relid))
			return;
		std::string sql;
		pg_call([&] { sql = "SELECT count(*)::float8 FROM " + qualified_relation_name(cap.relid); });
		ProtectedRowRead read(cap.relid, "dx.explain");
		read.spi().exec_dynamic(sql.c_str());
		n = DatumGetFloat8(read.spi().value(0, 0));
	}
	if (!(n > 0))
		return;
	const SurrogatePlan p = plan_marginal_surrogate(cap.sub, cell, n, cells[0].epsilon);
	ExplainCell row = cells[0];
	std::string label;
	for (size_t i = 0; i < cell.columns.size(); ++i)
		label += (i ? ", " : "") + cap.column_names[cell.columns[i]] + "=" +
		         cap.sub.domains[cell.columns[i]].label(cell.values[i]);
	row.component = "statistical query (" + label + ")";
	row.plan.scale = n / p.eps_prime;
	row.plan.bound = 0;
	row.reported_half_width = n * (p.bias + std::log(20.0) / p.eps_prime);
	row.ledger = false;
	row.comparison_factor = std::sqrt(p.plain_objective / p.objective);
	cells.push_back(row);
}

} // namespace dxpriv::pg

using namespace dxpriv;
using namespace dxpriv::pg;

// dx.explain(text) RETURNS TABLE(...): one row per output cell.
DX_FUNCTION(dx_explain)
{
	std::string sql = text_to_cstring(PG_GETARG_TEXT_PP(0));
	analyse_for_explain(sql);
	const ExplainCapture cap = capture;

	double remaining = -1;
	const Oid caller = GetUserId(); // before InternalSpi switches to the extension owner
	if (const ExtensionObjects *ext = extension_objects()) {
		InternalSpi spi(ext->schema_owner);
		if (spi.exec(cap.attribute ? "SELECT attr_remaining FROM dx.budgets WHERE role = $1 AND \"table\" = $2"
		                           : "SELECT remaining FROM dx.budgets WHERE role = $1 AND \"table\" = $2",
		             {{OIDOID, ObjectIdGetDatum(caller)}, {OIDOID, ObjectIdGetDatum(cap.relid)}}, true) > 0)
			remaining = DatumGetFloat8(spi.value(0, 0));
	}
	bool linear = false;
	for (const ExplainCell &c : cap.cells)
		linear = linear || c.linear;
	if (linear && cap.plain_dp_scale > 0 && !cap.plain_dp_exact)
		pg_call([&] {
			ereport(NOTICE, (errmsg("plain_dp_scale and improvement_factor are lower bounds for this query"),
			                 errdetail("The largest change of the query over all pairs of records was too costly to "
			                           "compute exactly; its maximum over the privacy constraints' edges was used."),
			                 errhint("The plain-DP baseline is never overstated, so the true improvement factor is at "
			                         "least the one shown.")));
		});
	std::vector<ExplainCell> cells = cap.cells;
	append_marginal_surrogate(cap, cells);
	std::vector<double> half_widths;
	for (const ExplainCell &c : cells)
		half_widths.push_back(c.reported_half_width >= 0 ? c.reported_half_width : confidence_half_width(c.plan));

	pg_call([&] {
		InitMaterializedSRF(fcinfo, 0);
		ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
		int ledger_position = 0;
		for (size_t i = 0; i < cells.size(); ++i) {
			const ExplainCell &c = cells[i];
			Datum values[18];
			bool nulls[18] = {false};
			if (c.ledger)
				++ledger_position;
			values[0] = Int32GetDatum(ledger_position); // position in the ledger's scales
			nulls[0] = !c.ledger;
			values[1] = Int32GetDatum(c.aggregate);
			values[2] = CStringGetTextDatum(c.kind.c_str());
			values[3] = CStringGetTextDatum(c.group.c_str());
			nulls[3] = c.group.empty();
			values[4] = CStringGetTextDatum(c.component.c_str());
			values[5] = Float8GetDatum(c.epsilon);
			values[6] = Float8GetDatum(c.plan.scale);
			nulls[6] = !c.ledger;
			values[7] = Float8GetDatum(half_widths[i]);
			values[8] = Float8GetDatum(cap.plain_dp_scale);
			values[9] = Float8GetDatum(c.plan.scale > 0 ? cap.plain_dp_scale / c.plan.scale : get_float8_infinity());
			nulls[9] = cap.plain_dp_scale == 0;
			nulls[8] = !c.linear;
			nulls[9] = nulls[9] || !c.linear || cap.noise != "laplace"; // plain DP scale is a Laplace one
			nulls[8] = nulls[8] || !c.ledger || !cap.unit_bound.empty();
			nulls[9] = nulls[9] || !c.ledger;
			if (c.comparison_factor >= 0) { // the statistical-query surrogate next to the plain cell
				nulls[6] = false;
				values[9] = Float8GetDatum(c.comparison_factor);
				nulls[9] = false;
			}
			values[10] = Float8GetDatum(cap.epsilon);
			values[11] = Float8GetDatum(remaining);
			nulls[11] = remaining < 0;
			values[12] = CStringGetTextDatum(cap.strategy.c_str());
			values[13] = CStringGetTextDatum(!c.noise.empty() ? c.noise.c_str()
			                                 : c.linear  ? cap.noise.c_str()
			                                             : "exponential");
			values[14] = Float8GetDatum(c.plan.bound); // |noise| never exceeds it (truncated_laplace)
			nulls[14] = !(c.plan.bound > 0);
			values[15] = Float8GetDatum(cap.delta + cap.open_delta);
			values[16] = CStringGetTextDatum(cap.unit_bound.c_str()); // privacy unit: the contribution bound
			nulls[16] = cap.unit_bound.empty();
			values[17] = Float8GetDatum(c.unit_factor); // and what it does to this cell's noise
			nulls[17] = !(c.unit_factor > 0) || !c.ledger;
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	});
	return (Datum) 0;
}
