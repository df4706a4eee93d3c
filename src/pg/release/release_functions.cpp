// dx.release_mwem and dx.release_smalldb: d_X-private synthetic histograms written to a new table
// (core/mwem.h, core/smalldb.h). Order of work: validate every argument and the target, charge
// the epsilon once through the ledger (durable, outside the caller's transaction), then read the
// table by mapping rows to domain points, run the mechanism, create the target and record the
// release. Nothing is written or returned when a check or the charge fails.
#include "pg/executor/noise_source.h"
#include "pg/ledger/charge.h"
#include "pg/guard.h"
#include "pg/metadata/protected_rows.h"
#include "pg/release/synthetic_release.h"

#include "core/mwem.h"
#include "core/smalldb.h"

extern "C" {
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

#include <string>

using namespace dxpriv;
using namespace dxpriv::pg;

namespace {

// The arguments every release shares: (source regclass, columns text[], workload text|float8[],
// epsilon float8, target name, [int]).
struct ReleaseArgs : ReleaseHead {
	int extra = 0; // iterations / size; 0 = default
	bool extra_given = false;
	bool last_iterate = false; // MWEM: average => false
};

ReleaseArgs
read_args(FunctionCallInfo fcinfo, const char *what)
{
	ReleaseArgs a;
	static_cast<ReleaseHead &>(a) = read_release_head(
	    fcinfo, true, "Example: SELECT dx.release_mwem('patients', ARRAY['age', 'sex'], 'marginals:2', 1.0, 'patients_syn').");
	pg_call([&] {
		if (PG_NARGS() > 5 && !PG_ARGISNULL(5)) {
			a.extra = PG_GETARG_INT32(5);
			a.extra_given = true;
		}
		if (PG_NARGS() > 6 && !PG_ARGISNULL(6))
			a.last_iterate = !PG_GETARG_BOOL(6);
	});
	if (a.extra_given && a.extra < 1)
		fail(ERRCODE_INVALID_PARAMETER_VALUE, std::string(what) + " must be at least 1",
		     std::string("Leave ") + what + " out (NULL) to use the default of MECHANISMS.md.");
	check_release_epsilon(a.epsilon);
	return a;
}

// The shared pipeline: validate (check(w)), charge once, read the histogram, run (run(src, w,
// counts) -> the weights and the record), write the target, record the release.
template <class Check, class Run>
Datum
release(FunctionCallInfo fcinfo, const char *mechanism, const char *extra_name, Check check, Run run)
{
	const ReleaseArgs a = read_args(fcinfo, extra_name);
	ReleaseSource src;
	load_release_source(a.relid, a.columns, src);
	const std::string entry = std::string("dx.release_") + mechanism;
	require_row_level_table(a.relid, entry.c_str()); // before the charge (charge_release checks it too)
	const Workload w = workload_of(src, a.workload);
	check(w, a);
	const std::string target = check_release_target(a.target);

	charge_release(a.relid, a.epsilon, mechanism, {}, std::string("release:") + mechanism + ":" + target,
	               statement_text());

	const std::vector<std::int64_t> counts = read_histogram(src, entry.c_str());
	ReleaseRecord rec;
	rec.mechanism = mechanism;
	rec.workload = workload_label(a.workload, w);
	rec.epsilon = a.epsilon;
	rec.queries = static_cast<int>(w.queries.size());
	const std::vector<double> weights = run(src, w, a, counts, rec);
	const Oid out = write_histogram(src, target, weights);
	record_release(src, out, rec);
	PG_RETURN_OID(out);
}

} // namespace

// dx.release_mwem(source regclass, columns text[], workload text | float8[][], epsilon float8,
// target name, iterations int DEFAULT NULL, average boolean DEFAULT true) -> regclass: the new
// table of the synthetic histogram (the average of the iterates, Algorithm 2, or with average =>
// false the last iterate: post-processing of the same released values, usually more accurate).
DX_FUNCTION(dx_release_mwem)
{
	return release(
	    fcinfo, "mwem", "iterations",
	    [](const Workload &w, const ReleaseArgs &a) { check_mwem_arguments(w, a.epsilon, a.extra); },
	    [](const ReleaseSource &src, const Workload &w, const ReleaseArgs &a, const std::vector<std::int64_t> &counts,
	       ReleaseRecord &rec) {
		    const MwemResult r = run_mwem(src.sub, w, counts, a.epsilon, a.extra, backend_random());
		    rec.output = a.last_iterate ? "last iterate" : "average of iterates";
		    rec.iterations = r.iterations;
		    rec.n_hat = r.n_hat;
		    rec.count_epsilon = r.count_epsilon;
		    rec.step_epsilon = r.step_epsilon;
		    rec.sensitivity = r.em_sensitivity;
		    return a.last_iterate ? r.last : r.histogram;
	    });
}

// dx.release_smalldb(source regclass, columns text[], workload text | float8[][], epsilon float8,
// target name, size int DEFAULT NULL) -> regclass: the new table of the chosen small database
// (scaled to the released row count).
DX_FUNCTION(dx_release_smalldb)
{
	return release(
	    fcinfo, "smalldb", "size",
	    [](const Workload &w, const ReleaseArgs &a) { check_smalldb_arguments(w, a.epsilon, a.extra); },
	    [](const ReleaseSource &src, const Workload &w, const ReleaseArgs &a, const std::vector<std::int64_t> &counts,
	       ReleaseRecord &rec) {
		    const SmallDbResult r = run_smalldb(src.sub, w, counts, a.epsilon, a.extra, backend_random());
		    rec.output = "chosen small database";
		    rec.iterations = r.size;
		    rec.n_hat = r.n_hat;
		    rec.count_epsilon = r.count_epsilon;
		    rec.step_epsilon = r.em_epsilon;
		    rec.sensitivity = r.em_sensitivity;
		    return r.histogram;
	    });
}
