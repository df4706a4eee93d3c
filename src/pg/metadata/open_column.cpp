// Open-domain columns: validation of {"open": true} declarations and their metrics.
#include "pg/metadata/open_column.h"

#include "pg/metadata/policy_json.h"
#include "pg/guard.h"

extern "C" {
#include "catalog/pg_type.h"
}

#include <cmath>
#include <limits>
#include <string>

namespace dxpriv::pg {

namespace {

const char *kOpenDomainHint = "Declare an open column as dx.set_column(rel, col, '{\"open\": true}', "
                              "'{\"type\": \"discrete\", \"weight\": 1}').";
const char *kOpenMetricHint = "An open column takes {\"type\": \"discrete\", \"weight\": w}, {\"type\": \"per_value\", "
                              "\"weights\": {...}, \"default\": w} or {\"type\": \"none\"}.";

// A positive weight (or +inf); fails otherwise.
double
weight(const JsonbValue &v, const std::string &what)
{
	const double w = as_number(v, what, true, kOpenMetricHint);
	if (!(w > 0))
		fail(ERRCODE_INVALID_PARAMETER_VALUE, what + " must be positive", kOpenMetricHint);
	return w;
}

bool
groupable_type(Oid type)
{
	switch (type) {
	case TEXTOID:
	case VARCHAROID:
	case BPCHAROID:
	case INT2OID:
	case INT4OID:
	case INT8OID:
	case DATEOID:
	case UUIDOID:
	case BOOLOID:
		return true;
	default:
		return false;
	}
}

} // namespace

// See metadata/open_column.h.
bool
is_open_domain(Jsonb *domain)
{
	JsonbValue v;
	return domain && JB_ROOT_IS_OBJECT(domain) && get_key(domain, "open", v);
}

// See metadata/open_column.h.
ColumnPolicy
parse_open_column(Oid type, int32 typmod, Jsonb *domain, Jsonb *metric)
{
	require_object_with_keys(domain, "domain", {"open"}, kOpenDomainHint);
	JsonbValue v;
	if (!get_key(domain, "open", v) || v.type != jbvBool || !v.val.boolean)
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "\"open\" must be true", kOpenDomainHint);
	if (!groupable_type(type))
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "open domains need a text, integer, date, uuid or boolean column",
		     "Declare other columns with enumerated values or a range.");
	require_object_with_keys(metric, "metric", {"type", "weight", "weights", "default"}, kOpenMetricHint);
	std::string kind = "discrete";
	if (get_key(metric, "type", v)) {
		if (v.type != jbvString)
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "metric \"type\" must be a string", kOpenMetricHint);
		kind.assign(v.val.string.val, v.val.string.len);
	}
	ColumnPolicy col;
	col.type = type;
	col.typmod = typmod;
	col.open = true;
	JsonbValue w;
	if (kind == "discrete") {
		if (get_key(metric, "weights", w) || get_key(metric, "default", w))
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "a discrete metric takes only \"weight\"", kOpenMetricHint);
		col.open_distance = get_key(metric, "weight", w) ? weight(w, "metric \"weight\"") : 1.0;
	} else if (kind == "none") {
		if (get_key(metric, "weight", w) || get_key(metric, "weights", w) || get_key(metric, "default", w))
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "metric \"none\" takes no weight", kOpenMetricHint);
		col.open_distance = std::numeric_limits<double>::infinity();
	} else if (kind == "per_value") {
		if (get_key(metric, "weight", w))
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "a per_value metric takes \"weights\" and \"default\"", kOpenMetricHint);
		if (!get_key(metric, "default", w))
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "a per_value metric on an open column needs \"default\"",
			     "Values that are not listed (all but a few, in an open domain) take the default weight.");
		double smallest = weight(w, "metric \"default\"");
		if (get_key(metric, "weights", w)) {
			if (w.type != jbvBinary || !JsonContainerIsObject(w.val.binary.data))
				fail(ERRCODE_INVALID_PARAMETER_VALUE, "\"weights\" must be a JSON object", kOpenMetricHint);
			JsonbIterator *it = JsonbIteratorInit(w.val.binary.data);
			JsonbIteratorToken tok;
			JsonbValue e;
			while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE)
				if (tok == WJB_VALUE)
					smallest = std::min(smallest, weight(e, "per_value weight"));
		}
		// d(a, b) = min(w(a), w(b), 2 min_c w(c)) over an unbounded domain: the smallest weight is
		// attained by a pair (a listed value and any unlisted one), and it is all the analysis uses
		col.open_distance = smallest;
	} else {
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "metric \"" + kind + "\" cannot be used on an open column", kOpenMetricHint);
	}
	return col;
}

} // namespace dxpriv::pg
