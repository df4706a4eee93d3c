// Declaration-time and computation-only SQL functions of attribute privacy: the model checks of
// dx.protect_attribute (Gaussian, Bayesian network, binary conditional), the max-influence of a
// declared parameter table, and the calibrations dx.wasserstein_scale / dx.markov_quilt_scale.
// They read no table rows; the mathematics is in core/attribute_privacy.h, core/markov_quilt.h,
// core/wasserstein.h and core/binary_conditional.h.
#include "pg/guard.h"

#include "core/attribute_privacy.h"
#include "core/binary_conditional.h"
#include "core/markov_quilt.h"
#include "core/wasserstein.h"

extern "C" {
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"
}

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using namespace dxpriv;
using namespace dxpriv::pg;

namespace {

// The elements of array `a` (element type `type`, stored as len/byval/align), each read by `get`;
// a NULL element is refused (22004) with `message` and `hint`.
template <class T, class Get>
std::vector<T>
non_null_elements(ArrayType *a, Oid type, int len, bool byval, char align, const char *message, const char *hint,
                  Get get)
{
	std::vector<T> out;
	pg_call([&] {
		Datum *values;
		bool *nulls;
		int n;
		deconstruct_array(a, type, len, byval, align, &values, &nulls, &n);
		for (int i = 0; i < n; ++i) {
			if (nulls[i])
				ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s", message), errhint("%s", hint)));
			out.push_back(get(values[i]));
		}
	});
	return out;
}

// Argument n of an SQL function as an array, detoasted inside the guard (detoasting can raise).
ArrayType *
array_arg(FunctionCallInfo fcinfo, int n)
{
	return pg_value([&] { return PG_GETARG_ARRAYTYPE_P(n); });
}

std::vector<std::string>
text_array(ArrayType *a)
{
	return non_null_elements<std::string>(a, TEXTOID, -1, false, TYPALIGN_INT, "attribute names must not be null",
	                                      "Name attributes of the declared network.",
	                                      [](Datum d) { return std::string(TextDatumGetCString(d)); });
}

std::vector<std::string>
name_array(ArrayType *a)
{
	return non_null_elements<std::string>(a, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR,
	                                      "model attributes must not be null", "Name a column of the table.",
	                                      [](Datum d) { return std::string(NameStr(*DatumGetName(d))); });
}

std::vector<double>
float_array(ArrayType *a)
{
	return non_null_elements<double>(a, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, "model numbers must not be null",
	                                 "Give finite numbers.", [](Datum d) { return DatumGetFloat8(d); });
}

// Checks that every name is a distinct column of relid (of a numeric type when `numeric`).
void
check_columns(Oid relid, const std::vector<std::string> &names, bool numeric, const char *numeric_hint)
{
	pg_call([&] {
		for (const std::string &name : names) {
			const AttrNumber att = get_attnum(relid, name.c_str());
			if (att == InvalidAttrNumber)
				ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
				                errmsg("model attribute \"%s\" is not a column of table \"%s\"", name.c_str(),
				                       get_rel_name(relid)),
				                errhint("Name the table's columns in the model's \"attributes\".")));
			const Oid type = get_atttype(relid, att);
			if (numeric && type != INT2OID && type != INT4OID && type != INT8OID && type != FLOAT4OID &&
			    type != FLOAT8OID && type != NUMERICOID)
				ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
				                errmsg("model attribute \"%s\" is not a numeric column", name.c_str()),
				                errhint("%s", numeric_hint)));
		}
	});
	for (size_t i = 0; i < names.size(); ++i)
		for (size_t j = i + 1; j < names.size(); ++j)
			if (names[i] == names[j])
				fail(ERRCODE_INVALID_PARAMETER_VALUE, "model attribute \"" + names[i] + "\" is listed twice",
				     "List each column once.");
}

} // namespace

// dx._check_gaussian_model(rel, attributes, covariances, matrices): see sql/55_attribute.sql.
DX_FUNCTION(dx_check_gaussian_model)
{
	const Oid relid = PG_GETARG_OID(0);
	const std::vector<std::string> attributes = name_array(array_arg(fcinfo, 1));
	const std::vector<double> flat = float_array(array_arg(fcinfo, 2));
	const int matrices = PG_GETARG_INT32(3);
	check_columns(relid, attributes, true, "A Gaussian model describes numeric columns (integer, numeric or floating point).");
	const size_t m = attributes.size();
	if (matrices < 1 || flat.size() != static_cast<size_t>(matrices) * m * m)
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "every covariance must have one row and one column per attribute",
		     "Give an m x m matrix for m attributes.");
	for (int k = 0; k < matrices; ++k)
		validate_covariance(Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
		    flat.data() + static_cast<size_t>(k) * m * m, static_cast<Eigen::Index>(m), static_cast<Eigen::Index>(m)));
	PG_RETURN_VOID();
}

// dx._wasserstein_scale(law lengths, laws per model, probabilities, epsilon): see sql/55_attribute.sql.
DX_FUNCTION(dx_wasserstein_scale)
{
	int nl = 0, nm = 0, np = 0;
	Datum *lengths = nullptr, *per_model = nullptr, *probs = nullptr;
	bool *n1 = nullptr, *n2 = nullptr, *n3 = nullptr;
	pg_call([&] {
		deconstruct_array(PG_GETARG_ARRAYTYPE_P(0), INT4OID, 4, true, TYPALIGN_INT, &lengths, &n1, &nl);
		deconstruct_array(PG_GETARG_ARRAYTYPE_P(1), INT4OID, 4, true, TYPALIGN_INT, &per_model, &n2, &nm);
		deconstruct_array(PG_GETARG_ARRAYTYPE_P(2), FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &probs, &n3, &np);
	});
	const double epsilon = PG_GETARG_FLOAT8(3);
	std::vector<std::vector<IntegerPmf>> models;
	int law = 0, p = 0;
	for (int m = 0; m < nm; ++m) {
		std::vector<IntegerPmf> model;
		for (int s = 0; s < DatumGetInt32(per_model[m]) && law < nl; ++s, ++law) {
			IntegerPmf pmf;
			for (int k = 0; k < DatumGetInt32(lengths[law]) && p < np; ++k, ++p)
				pmf.push_back(DatumGetFloat8(probs[p]));
			model.push_back(std::move(pmf));
		}
		models.push_back(std::move(model));
	}
	const double scale = wasserstein_scale(wasserstein_sensitivity(models), epsilon);
	PG_RETURN_FLOAT8(scale);
}

namespace {

ArrayType *
names_array(const std::vector<std::string> &all, const std::vector<int> &idx)
{
	std::vector<Datum> d; // outside the guarded lambda: a longjmp out of it would skip its destructor
	for (int i : idx)
		d.push_back(CStringGetTextDatum(all[static_cast<size_t>(i)].c_str()));
	return pg_value([&] { return construct_array(d.data(), static_cast<int>(d.size()), TEXTOID, -1, false, TYPALIGN_INT); });
}

} // namespace

// dx._markov_quilt_scale(...): see sql/55_attribute.sql.
DX_FUNCTION(dx_markov_quilt_scale)
{
	AttributeNetwork net;
	net.names = text_array(array_arg(fcinfo, 0));
	const std::vector<std::string> edges = text_array(array_arg(fcinfo, 1));
	const std::vector<std::string> sensitive = text_array(array_arg(fcinfo, 2));
	const std::vector<std::string> queried = text_array(array_arg(fcinfo, 3));
	const std::vector<std::string> infl_attr = text_array(array_arg(fcinfo, 4));
	const std::vector<std::string> infl_quilt = text_array(array_arg(fcinfo, 5));
	const std::vector<double> infl_value = float_array(array_arg(fcinfo, 6));
	const double records = PG_GETARG_FLOAT8(7), epsilon = PG_GETARG_FLOAT8(8);
	if (!(records >= 0) || !std::isfinite(records))
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "records must be finite and non-negative",
		     "A count changes by at most the number of records.");
	validate_network(net); // names first: the lookups below rely on them
	for (size_t e = 0; e + 1 < edges.size(); e += 2)
		net.edges.emplace_back(network_attribute(net, edges[e]), network_attribute(net, edges[e + 1]));
	std::vector<int> sens, query;
	for (const std::string &s : sensitive)
		sens.push_back(network_attribute(net, s));
	for (const std::string &q : queried)
		query.push_back(network_attribute(net, q));
	QuiltInfluences influences;
	for (size_t k = 0; k < infl_attr.size() && k < infl_quilt.size() && k < infl_value.size(); ++k) {
		const int i = network_attribute(net, infl_attr[k]);
		influences[i][parse_quilt(net, infl_quilt[k], i)] = infl_value[k];
	}
	const MarkovQuiltPlan plan = plan_markov_quilt(
	    net, sens, query, influences, [records](const std::vector<int> &cols) { return cols.empty() ? 0.0 : records; },
	    epsilon);
	pg_call([&] {
		InitMaterializedSRF(fcinfo, 0);
		ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
		for (const QuiltChoice &c : plan.choices) {
			Datum values[5];
			bool nulls[5] = {false};
			values[0] = CStringGetTextDatum(net.names[static_cast<size_t>(c.attribute)].c_str());
			values[1] = Float8GetDatum(c.scale);
			values[2] = PointerGetDatum(names_array(net.names, c.quilt));
			values[3] = PointerGetDatum(names_array(net.names, c.nearby));
			values[4] = Float8GetDatum(c.influence);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	});
	return (Datum) 0;
}

// dx._check_network_model(rel, attribute, attributes, edges, quilts, influences): see sql/55_attribute.sql.
DX_FUNCTION(dx_check_network_model)
{
	const Oid relid = PG_GETARG_OID(0);
	const std::string attribute = NameStr(*PG_GETARG_NAME(1));
	AttributeNetwork net;
	net.names = name_array(array_arg(fcinfo, 2));
	const std::vector<std::string> edges = name_array(array_arg(fcinfo, 3));
	const std::vector<std::string> quilts = text_array(array_arg(fcinfo, 4));
	const std::vector<double> influences = float_array(array_arg(fcinfo, 5));
	check_columns(relid, net.names, false, "");
	validate_network(net); // names first
	if (edges.size() % 2 != 0)
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "network edges must be pairs [parent, child]", "Write [[\"a\", \"b\"], ...].");
	for (size_t e = 0; e + 1 < edges.size(); e += 2)
		net.edges.emplace_back(network_attribute(net, edges[e]), network_attribute(net, edges[e + 1]));
	validate_network(net);
	const int sensitive = network_attribute(net, attribute);
	if (quilts.size() != influences.size())
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "every quilt needs one max-influence", "Map each quilt to a number.");
	for (size_t k = 0; k < quilts.size(); ++k) {
		parse_quilt(net, quilts[k], sensitive);
		if (!(influences[k] >= 0))
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "the max-influence of quilt \"" + quilts[k] + "\" must be non-negative",
			     "e(X_Q | X_i) is a maximum of log-ratios of probabilities over the declared parameters: 0 or more.");
	}
	PG_RETURN_VOID();
}

// dx._max_influence(rows, probabilities): Definition 8 on a declared parameter table.
DX_FUNCTION(dx_max_influence)
{
	const int rows = PG_GETARG_INT32(0);
	const std::vector<double> flat = float_array(array_arg(fcinfo, 1));
	// at least one value per row: rows = 2^31 - 1 over an empty array built 2^31 empty rows (37 s,
	// deaf to statement_timeout)
	if (rows < 2 || flat.size() < static_cast<size_t>(rows) || flat.size() % static_cast<size_t>(rows) != 0)
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "a parameter table needs at least two rows of equal length",
		     "One row per value of the sensitive parameter: [P(phi_Q = k | phi_i = a), ...].");
	const size_t width = flat.size() / static_cast<size_t>(rows);
	std::vector<std::vector<double>> table;
	for (int r = 0; r < rows; ++r)
		table.emplace_back(flat.begin() + static_cast<long>(r * width), flat.begin() + static_cast<long>((r + 1) * width));
	for (const auto &row : table) {
		double total = 0;
		for (double x : row)
			total += x;
		if (!(std::abs(total - 1) <= 1e-9))
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "every row of a parameter table must be a probability law",
			     "Each row lists P(phi_Q = k | phi_i = a) for every k: non-negative, summing to 1.");
	}
	const double e = max_influence(table);
	PG_RETURN_FLOAT8(e);
}

// dx._check_binary_model(rel, {released, protected}, theta): see sql/55_attribute.sql.
DX_FUNCTION(dx_check_binary_model)
{
	const Oid relid = PG_GETARG_OID(0);
	const std::vector<std::string> attributes = name_array(array_arg(fcinfo, 1));
	const std::vector<double> theta = float_array(array_arg(fcinfo, 2));
	check_columns(relid, attributes, true, "The binary conditional model describes two 0/1 columns (integer or numeric).");
	if (attributes.size() != 2 || theta.size() != 5)
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "a binary conditional model needs one released and one protected column",
		     "Write {\"family\": \"binary_conditional\", \"released\": \"col\", \"p1\": [lo, hi], \"p2\": [lo, hi], \"grid\": step}.");
	validate_binary_conditional({theta[0], theta[1], theta[2], theta[3], theta[4]});
	PG_RETURN_VOID();
}
