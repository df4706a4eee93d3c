// Reads dx.attribute_policies (see attribute_policy.h). Everything is read in binary: the text form
// of float8 depends on the caller's extra_float_digits.
#include "pg/executor/attribute_policy.h"
#include "pg/guard.h"
#include "pg/metadata/catalog.h"
#include "pg/metadata/extension_objects.h"

extern "C" {
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
}

#include <cmath>

using namespace dxpriv;
using namespace dxpriv::pg;

namespace {

std::vector<double>
floats(Datum d)
{
	std::vector<double> out;
	pg_call([&] {
		Datum *values;
		bool *nulls;
		int count;
		deconstruct_array(DatumGetArrayTypeP(d), FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &values, &nulls, &count);
		for (int k = 0; k < count; ++k)
			out.push_back(DatumGetFloat8(values[k]));
	});
	return out;
}

std::vector<std::string>
strings(Datum d, Oid type)
{
	std::vector<std::string> out;
	pg_call([&] {
		Datum *values;
		bool *nulls;
		int count;
		if (type == NAMEOID)
			deconstruct_array(DatumGetArrayTypeP(d), NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR, &values, &nulls, &count);
		else
			deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT, &values, &nulls, &count);
		for (int k = 0; k < count; ++k)
			out.push_back(type == NAMEOID ? std::string(NameStr(*DatumGetName(values[k])))
			                              : std::string(TextDatumGetCString(values[k])));
	});
	return out;
}

[[noreturn]] void
malformed()
{
	fail(ERRCODE_DATA_CORRUPTED, "attribute-privacy policy of table is malformed",
	     "Declare it again with dx.protect_attribute.");
}

int
position(const std::vector<std::string> &names, const std::string &name)
{
	for (size_t i = 0; i < names.size(); ++i)
		if (names[i] == name)
			return static_cast<int>(i);
	return -1;
}

} // namespace

// See attribute_policy.h.
std::vector<SecretPolicy>
dxpriv::pg::load_secrets(const ExtensionObjects &ext, Oid relid, const std::string &column)
{
	std::vector<SecretPolicy> out;
	InternalSpi spi(ext.schema_owner);
	// every name qualified: this runs as the extension owner, under the caller's search_path
	const uint64 n = spi.exec(
	    "SELECT attribute::pg_catalog.text, diameter, epsilon, delta, calibration, record_privacy, family, attributes, "
	    "  covariances, edges, quilts, influences, theta, approximation_lambda, approximation_eta "
	    "FROM dx.attribute_policies WHERE relid = $1 ORDER BY attribute",
	    {{OIDOID, ObjectIdGetDatum(relid)}}, true);
	for (uint64 r = 0; r < n; ++r) {
		SecretPolicy s;
		s.attribute = spi.text(r, 0);
		s.diameter = DatumGetFloat8(spi.value(r, 1));
		s.epsilon = DatumGetFloat8(spi.value(r, 2));
		s.delta = DatumGetFloat8(spi.value(r, 3));
		s.calibration = spi.text(r, 4) == "classical" ? ApgmCalibration::Classical : ApgmCalibration::Analytic;
		s.record_privacy = DatumGetBool(spi.value(r, 5));
		const std::string family = spi.text(r, 6);
		s.attributes = strings(spi.value(r, 7), NAMEOID);
		s.secret_index = position(s.attributes, s.attribute);
		s.column_index = position(s.attributes, column);
		if (s.secret_index < 0)
			malformed();
		if (family == "gaussian") {
			s.family = AttributeFamily::Gaussian;
			const std::vector<double> flat = floats(spi.value(r, 8));
			const size_t dims = s.attributes.size(), per = dims * dims;
			if (flat.empty() || flat.size() % per != 0)
				malformed();
			for (size_t k = 0; k < flat.size() / per; ++k)
				s.covariances.push_back(
				    Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
				        flat.data() + k * per, static_cast<Eigen::Index>(dims), static_cast<Eigen::Index>(dims)));
			s.approximation_lambda = DatumGetFloat8(spi.value(r, 13));
			s.approximation_eta = DatumGetFloat8(spi.value(r, 14));
		} else if (family == "bayesian_network") {
			s.family = AttributeFamily::BayesianNetwork;
			s.network.names = s.attributes;
			const std::vector<std::string> edges = strings(spi.value(r, 9), NAMEOID);
			const std::vector<std::string> quilts = strings(spi.value(r, 10), TEXTOID);
			const std::vector<double> influences = floats(spi.value(r, 11));
			if (edges.size() % 2 != 0 || quilts.size() != influences.size())
				malformed();
			for (size_t e = 0; e + 1 < edges.size(); e += 2)
				s.network.edges.emplace_back(network_attribute(s.network, edges[e]),
				                             network_attribute(s.network, edges[e + 1]));
			validate_network(s.network);
			for (size_t k = 0; k < quilts.size(); ++k)
				if (std::isfinite(influences[k]))
					s.influences[s.secret_index][parse_quilt(s.network, quilts[k], s.secret_index)] = influences[k];
		} else if (family == "binary_conditional") {
			s.family = AttributeFamily::BinaryConditional;
			const std::vector<double> t = floats(spi.value(r, 12));
			if (t.size() != 5 || s.attributes.size() != 2 || s.secret_index != 1)
				malformed();
			s.theta = {t[0], t[1], t[2], t[3], t[4]};
		} else {
			malformed();
		}
		out.push_back(std::move(s));
	}
	return out;
}
