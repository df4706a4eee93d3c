// dx.release_synthetic and dx.release_synthetic_error: the group release of core/group_release.h
// (issue 25). Order of work of a release: validate every argument and the target, plan (data-
// independent), charge the whole epsilon once through the ledger (durable, outside the caller's
// transaction), then read the table by mapping rows to domain points, run the rounds (cancel and
// progress between rounds: a cancelled release stays charged), create the target and record the
// release. dx.release_synthetic_error plans only: it reads no row and charges nothing.
#include "pg/executor/noise_source.h"
#include "pg/ledger/charge.h"
#include "pg/guard.h"
#include "pg/metadata/protected_rows.h"
#include "pg/progress.h"
#include "pg/release/synthetic_release.h"

#include "core/group_release.h"

extern "C" {
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
}

#include <cmath>
#include <string>

using namespace dxpriv;
using namespace dxpriv::pg;

namespace {

// (source regclass, columns text[], workload text | float8[][] | text[], epsilon float8, [target
// name,] rounds int, groups int[]).
struct GroupArgs : ReleaseHead {
	int rounds = 0;
	bool has_groups = false;
	std::vector<int> groups;
};

GroupArgs
read_group_args(FunctionCallInfo fcinfo, bool with_target)
{
	GroupArgs a;
	static_cast<ReleaseHead &>(a) = read_release_head(
	    fcinfo, with_target,
	    "Example: SELECT dx.release_synthetic('patients', ARRAY['age', 'sex'], 'marginals:2', 1.0, 'patients_syn').");
	const int rounds_arg = with_target ? 5 : 4;
	ArrayType *groups = nullptr;
	pg_call([&] {
		if (PG_NARGS() > rounds_arg && !PG_ARGISNULL(rounds_arg)) {
			a.rounds = PG_GETARG_INT32(rounds_arg);
			if (a.rounds < 1)
				a.rounds = -1;
		}
		if (PG_NARGS() > rounds_arg + 1 && !PG_ARGISNULL(rounds_arg + 1))
			groups = PG_GETARG_ARRAYTYPE_P(rounds_arg + 1);
	});
	if (a.rounds < 0 || a.rounds > kMaxGroupRounds)
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "rounds must be between 1 and " + std::to_string(kMaxGroupRounds),
		     "Leave rounds out (NULL) to use the rule of the documentation.");
	check_release_epsilon(a.epsilon);
	if (groups) {
		if (ARR_NDIM(groups) != 1 || ARR_HASNULL(groups) || ARR_ELEMTYPE(groups) != INT4OID)
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "groups must be a one-dimensional integer array without nulls",
			     "Give one group number per workload query, e.g. ARRAY[1, 1, 2, 2]; queries with the same number are "
			     "measured together.");
		const int n = ARR_DIMS(groups)[0];
		const int32 *v = reinterpret_cast<const int32 *>(ARR_DATA_PTR(groups));
		a.groups.assign(v, v + n);
		a.has_groups = true;
	}
	return a;
}

// Laplace: E X^2 = 2 b^2; P(|X| > b ln 20) = 0.05.
double
rmse_of(double scale)
{
	return std::sqrt(2.0) * scale;
}
double
ci95_of(double scale)
{
	return scale * std::log(20.0);
}

} // namespace

// dx.release_synthetic(source regclass, columns text[], workload text | float8[][] | text[],
// epsilon float8, target name, rounds int DEFAULT NULL, groups int[] DEFAULT NULL) -> regclass.
DX_FUNCTION(dx_release_synthetic)
{
	const GroupArgs a = read_group_args(fcinfo, true);
	ReleaseSource src;
	load_release_source(a.relid, a.columns, src);
	const char *entry = "dx.release_synthetic";
	require_row_level_table(a.relid, entry); // before the charge (charge_release checks it too)
	const Workload w = workload_of(src, a.workload);
	const GroupPlan plan = plan_group_release(src.sub, w, a.epsilon, a.rounds, a.has_groups ? &a.groups : nullptr);
	const std::string target = check_release_target(a.target);
	pg_call([] { CHECK_FOR_INTERRUPTS(); }); // a cancel while planning: nothing charged yet

	// the whole epsilon, before any row is read; a cancel or error after this point keeps the charge
	charge_release(a.relid, a.epsilon, "synthetic", {}, "release:synthetic:" + target, statement_text());

	const std::vector<std::int64_t> counts = read_histogram(src, entry);
	ReleaseProgress progress(entry);
	const GroupReleaseResult r =
	    run_group_release(src.sub, w, plan, counts, backend_random(), [&](int done, int total) { progress.round(done, total); });
	ReleaseRecord rec;
	rec.mechanism = "synthetic";
	rec.workload = workload_label(a.workload, w);
	rec.epsilon = a.epsilon;
	rec.queries = static_cast<int>(w.queries.size());
	rec.iterations = plan.rounds;
	rec.n_hat = r.n_hat;
	rec.count_epsilon = plan.count_epsilon;
	rec.step_epsilon = plan.measure_epsilon;
	rec.sensitivity = plan.select_sensitivity;
	rec.output = plan.joint ? "every group measured once (joint), last fit" : "selected groups, last fit";
	const Oid out = write_histogram(src, target, r.histogram);
	record_release(src, out, rec);
	PG_RETURN_OID(out);
}

// dx.release_synthetic_error(source regclass, columns text[], workload, epsilon float8, rounds int
// DEFAULT NULL, groups int[] DEFAULT NULL) -> TABLE (query int, label text, grp int, groups int,
// release_rounds int, joint boolean, noise_scale float8, rmse float8, ci95_half_width float8,
// direct_noise_scale float8, direct_rmse float8, direct_ci95_half_width float8): per workload
// query, the Laplace noise its measurement gets in the release (joint: the release measures it;
// otherwise: if its group is selected), and the noise of answering it directly with one GROUP BY
// statement per group at epsilon / groups (dx.last_release's noise_scale and ci95_half_width).
// Reads no row, charges nothing.
DX_FUNCTION(dx_release_synthetic_error)
{
	const GroupArgs a = read_group_args(fcinfo, false);
	ReleaseSource src;
	load_release_source(a.relid, a.columns, src);
	// refused where the release would be (a privacy unit): its numbers would not apply
	require_row_level_table(a.relid, "dx.release_synthetic_error");
	const Workload w = workload_of(src, a.workload);
	const GroupPlan plan = plan_group_release(src.sub, w, a.epsilon, a.rounds, a.has_groups ? &a.groups : nullptr);
	const double direct_epsilon = a.epsilon / static_cast<double>(plan.groups.size());
	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
	pg_call([&] {
		InitMaterializedSRF(fcinfo, 0);
		for (std::size_t k = 0; k < w.queries.size(); ++k) {
			const double b = plan.query_scale[k];
			const double direct = b * plan.measure_epsilon / direct_epsilon;
			Datum values[12];
			bool nulls[12] = {false};
			values[0] = Int32GetDatum(static_cast<int32>(k + 1));
			values[1] = CStringGetTextDatum(w.queries[k].label.empty() ? ("q" + std::to_string(k + 1)).c_str()
			                                                           : w.queries[k].label.c_str());
			values[2] = Int32GetDatum(plan.query_group[k] + 1);
			values[3] = Int32GetDatum(static_cast<int32>(plan.groups.size()));
			values[4] = Int32GetDatum(plan.rounds);
			values[5] = BoolGetDatum(plan.joint);
			values[6] = Float8GetDatum(b);
			values[7] = Float8GetDatum(rmse_of(b));
			values[8] = Float8GetDatum(ci95_of(b));
			values[9] = Float8GetDatum(direct);
			values[10] = Float8GetDatum(rmse_of(direct));
			values[11] = Float8GetDatum(ci95_of(direct));
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	});
	return (Datum) 0;
}
