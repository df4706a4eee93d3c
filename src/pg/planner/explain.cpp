// dx.explain(query): analyses a query exactly as running it would, and reports its cost and
// per-cell noise without executing it (nothing is charged).
#include "pg/planner/explain.h"

#include "pg/metadata/catalog.h"
#include "pg/guard.h"

#include "core/accuracy.h"

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
}

#include <cmath>

namespace dxpriv::pg {

static bool capture_active = false;
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

// Runs parse analysis of one SELECT with the capture switched on; restores it on every path.
static void
analyse_for_explain(const std::string &sql)
{
	capture = ExplainCapture();
	capture_active = true;
	try {
		pg_call([&] {
			List *raw = raw_parser(sql.c_str(), RAW_PARSE_DEFAULT);
			if (list_length(raw) != 1 || !IsA(linitial_node(RawStmt, raw)->stmt, SelectStmt))
				ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				                errmsg("dx.explain takes exactly one SELECT statement"),
				                errhint("Pass the query text, e.g. dx.explain('SELECT dx.count(*) FROM t').")));
			(void) parse_analyze_fixedparams(linitial_node(RawStmt, raw), sql.c_str(), nullptr, 0, nullptr);
		});
	} catch (...) {
		capture_active = false;
		throw;
	}
	capture_active = false;
	if (capture.cells.empty())
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "the query has no dx aggregate",
		     "dx.explain reports on queries such as SELECT dx.count(*) FROM <protected table>.");
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
		if (spi.exec("SELECT remaining FROM dx.budgets WHERE role = $1 AND \"table\" = $2",
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
	std::vector<double> half_widths;
	for (const ExplainCell &c : cap.cells)
		half_widths.push_back(c.reported_half_width >= 0 ? c.reported_half_width : confidence_half_width(c.plan));

	pg_call([&] {
		InitMaterializedSRF(fcinfo, 0);
		ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
		int ledger_position = 0;
		for (size_t i = 0; i < cap.cells.size(); ++i) {
			const ExplainCell &c = cap.cells[i];
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
			values[10] = Float8GetDatum(cap.epsilon);
			values[11] = Float8GetDatum(remaining);
			nulls[11] = remaining < 0;
			values[12] = CStringGetTextDatum(cap.strategy.c_str());
			values[13] = CStringGetTextDatum(c.linear ? cap.noise.c_str() : "exponential");
			values[14] = Float8GetDatum(c.plan.bound); // |noise| never exceeds it (truncated_laplace)
			nulls[14] = !(c.plan.bound > 0);
			values[15] = Float8GetDatum(cap.delta);
			values[16] = CStringGetTextDatum(cap.unit_bound.c_str()); // privacy unit: the contribution bound
			nulls[16] = cap.unit_bound.empty();
			values[17] = Float8GetDatum(c.unit_factor); // and what it does to this cell's noise
			nulls[17] = !(c.unit_factor > 0) || !c.ledger;
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	});
	return (Datum) 0;
}
