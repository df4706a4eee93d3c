// dx.top_k: the k most frequent declared values of a column by the exponential mechanism's top-k
// under d_X (core/top_k.h; issue 24). Order of work, as for every function release: validate the
// arguments, compute the utility sensitivity on the declared domain points (data-independent),
// charge the whole epsilon once through the ledger, then read the table by mapping rows to their
// points and draw the k values. Only the ranked values leave the function, never a count.
#include "pg/executor/agg_support.h"
#include "pg/executor/noise_source.h"
#include "pg/guard.h"
#include "pg/ledger/charge.h"
#include "pg/metadata/policy.h"
#include "pg/metadata/protected_rows.h"
#include "pg/release/synthetic_release.h"

#include "core/exponential_mechanism.h"
#include "core/top_k.h"

extern "C" {
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
}

#include <cmath>
#include <string>
#include <vector>

using namespace dxpriv;
using namespace dxpriv::pg;

namespace {

constexpr const char *kTopKHint =
    "Example: SELECT * FROM dx.top_k('visits', 'diagnosis', 5, 0.5) or, with a condition on declared columns, "
    "dx.top_k('visits', 'diagnosis', 5, 0.5, 'age >= 60', ARRAY['age']).";

ArrayType *
build_text_array(const std::vector<std::string> &items)
{
	ArrayType *a = nullptr;
	std::vector<Datum> d(items.size());
	pg_call([&] {
		for (size_t i = 0; i < items.size(); i++)
			d[i] = CStringGetTextDatum(items[i].c_str());
		a = construct_array(d.data(), static_cast<int>(d.size()), TEXTOID, -1, false, TYPALIGN_INT);
	});
	return a;
}

} // namespace

// dx.top_k(source regclass, column_name text, k int, epsilon float8, condition text DEFAULT NULL,
// condition_columns text[] DEFAULT NULL) -> TABLE (rank int, value text).
DX_FUNCTION(dx_top_k)
{
	for (int i = 0; i < 4; ++i)
		if (PG_ARGISNULL(i))
			fail(ERRCODE_NULL_VALUE_NOT_ALLOWED, "source, column_name, k and epsilon must not be null", kTopKHint);
	Oid relid = InvalidOid;
	std::string column, condition;
	int k = 0;
	double epsilon = 0;
	std::vector<std::string> columns;
	pg_call([&] {
		relid = PG_GETARG_OID(0);
		column = text_to_cstring(PG_GETARG_TEXT_PP(1));
		k = PG_GETARG_INT32(2);
		epsilon = PG_GETARG_FLOAT8(3);
		if (PG_NARGS() > 4 && !PG_ARGISNULL(4))
			condition = text_to_cstring(PG_GETARG_TEXT_PP(4));
	});
	columns.push_back(column);
	if (PG_NARGS() > 5 && !PG_ARGISNULL(5)) {
		ArrayType *extra = nullptr;
		pg_call([&] { extra = PG_GETARG_ARRAYTYPE_P(5); });
		if (ARR_NDIM(extra) > 1 || ARR_HASNULL(extra))
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "condition_columns must be a one-dimensional array without nulls",
			     kTopKHint);
		for (const std::string &c : text_array_strings(extra))
			columns.push_back(c);
	}
	if (!(epsilon > 0) || !std::isfinite(epsilon))
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "epsilon must be positive and finite", kTopKHint);

	ReleaseSource src;
	load_release_source(relid, build_text_array(columns), src); // declared single columns only (42501 otherwise)
	const char *entry = "dx.top_k";
	require_row_level_table(relid, entry);
	std::size_t candidate = 0;
	while (candidate < src.names.size() && src.names[candidate] != column)
		candidate++;
	if (candidate == src.names.size())
		fail(ERRCODE_INTERNAL_ERROR, "dx.top_k lost its candidate column");
	const std::size_t values = src.sub.domains[candidate].size();
	if (k < 1 || static_cast<std::size_t>(k) > values || static_cast<std::size_t>(k) > kMaxTopK)
		fail(ERRCODE_INVALID_PARAMETER_VALUE,
		     "k must be between 1 and the number of declared values of " + column + " (" + std::to_string(values) + ")",
		     kTopKHint);

	// which points count (the condition, evaluated on the declared points, never on rows)
	std::vector<char> counted(src.sub.size(), 1);
	if (!condition.empty()) {
		std::vector<std::string> labels;
		const std::vector<std::vector<double>> w = predicate_weights(src, build_text_array({condition}), labels);
		for (std::size_t u = 0; u < counted.size(); ++u)
			counted[u] = w[0][u] != 0.0;
	}
	const EmUtility mode{EmKind::Mode, 0};
	const double sensitivity = em_utility_sensitivity(src.sub, counted, candidate, {}, mode);
	const EmBeta beta = top_k_round_beta(epsilon, sensitivity, static_cast<std::size_t>(k));
	const double round_scale = em_scale(epsilon / k, sensitivity);
	pg_call([] { CHECK_FOR_INTERRUPTS(); }); // a cancel before the charge: nothing charged

	// the whole epsilon, before any row is read
	charge_release(relid, epsilon, "top_k", std::vector<double>(static_cast<std::size_t>(k), round_scale),
	               "release:top_k:" + column + ":" + std::to_string(k), statement_text());

	const std::vector<std::int64_t> counts = read_histogram(src, entry);
	std::vector<__int128> utilities(values, 0);
	for (std::size_t u = 0; u < counts.size(); ++u)
		if (counted[u])
			utilities[src.sub.unflatten(u)[candidate]] += counts[u];
	const std::vector<std::size_t> order =
	    top_k_sample(backend_random(), utilities, 1, beta, static_cast<std::size_t>(k));

	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
	std::vector<std::string> labels;
	for (std::size_t r : order)
		labels.push_back(src.sub.domains[candidate].label(r));
	pg_call([&] {
		InitMaterializedSRF(fcinfo, 0);
		for (std::size_t i = 0; i < labels.size(); ++i) {
			Datum v[2];
			bool nulls[2] = {false, false};
			v[0] = Int32GetDatum(static_cast<int32>(i + 1));
			v[1] = CStringGetTextDatum(labels[i].c_str());
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nulls);
		}
	});
	return (Datum) 0;
}
