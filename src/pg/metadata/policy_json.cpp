// Small readers of the JSON (jsonb) objects of column declarations, and their hints.
#include "pg/metadata/policy_json.h"

#include "pg/guard.h"

extern "C" {
#include "utils/guc.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/float.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "catalog/namespace.h"
#include "utils/regproc.h"
#include "nodes/makefuncs.h"
#include "access/htup_details.h"
#include "catalog/catalog.h"
#include "catalog/pg_class.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/json.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"
}

#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

namespace dxpriv::pg {

const char *kDomainHint =
    "Declare a domain as {\"values\": [...]} or {\"min\": lo, \"max\": hi, \"step\": s}; dates use "
    "{\"min\": \"2020-01-01\", \"max\": \"2020-12-31\", \"step\": 7}.";
const char *kMetricHint =
    "Declare a metric as {\"type\": \"discrete\", \"weight\": w}, {\"type\": \"absolute\", \"scale\": s}, "
    "{\"type\": \"per_value\", \"weights\": {\"value\": w}, \"default\": w}, {\"type\": \"l1\"|\"l2\"|\"linf\", "
    "\"scale\": s}, {\"type\": \"theta1\"|\"theta2\", \"tau\": t}, {\"type\": \"matrix\", \"pairs\": [[a, b, d], ...]}, "
    "{\"type\": \"graph\", \"edges\": [[a, b, w], ...]} (or \"table\": \"schema.table\") or {\"type\": \"none\"}.";


// ---- small jsonb readers ----

// Fails unless j is a JSON object whose keys are all in allowed.
void
require_object_with_keys(Jsonb *j, const char *what, std::initializer_list<const char *> allowed, const char *hint)
{
	if (!JB_ROOT_IS_OBJECT(j) || JB_ROOT_IS_SCALAR(j))
		fail(ERRCODE_INVALID_PARAMETER_VALUE, std::string(what) + " must be a JSON object", hint);
	JsonbIterator *it = JsonbIteratorInit(&j->root);
	JsonbValue v;
	JsonbIteratorToken tok;
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE) {
		if (tok != WJB_KEY)
			continue;
		std::string key(v.val.string.val, v.val.string.len);
		bool ok = false;
		for (const char *a : allowed)
			ok = ok || key == a;
		if (!ok)
			fail(ERRCODE_INVALID_PARAMETER_VALUE, std::string(what) + " has an unknown key \"" + key + "\"", hint);
	}
}

// Looks up key in object j.
bool
get_key(Jsonb *j, const char *key, JsonbValue &out)
{
	return getKeyJsonValueFromContainer(&j->root, key, strlen(key), &out) != nullptr;
}

// A JSON number (or the strings "inf"/"Infinity" when allow_inf) as a double.
double
as_number(const JsonbValue &v, const std::string &what, bool allow_inf, const char *hint)
{
	if (v.type == jbvNumeric) {
		double d = 0;
		pg_call([&] { d = DatumGetFloat8(DirectFunctionCall1(numeric_float8, NumericGetDatum(v.val.numeric))); });
		if (std::isnan(d))
			fail(ERRCODE_INVALID_PARAMETER_VALUE, what + " must not be NaN", hint);
		return d;
	}
	if (allow_inf && v.type == jbvString) {
		std::string s(v.val.string.val, v.val.string.len);
		if (s == "inf" || s == "Infinity" || s == "infinity")
			return get_float8_infinity();
	}
	fail(ERRCODE_INVALID_PARAMETER_VALUE, what + " must be a number", hint);
}

// A JSON scalar rendered as the text a type input function accepts.
std::string
as_label(const JsonbValue &v, const char *hint)
{
	switch (v.type) {
	case jbvString:
		return std::string(v.val.string.val, v.val.string.len);
	case jbvNumeric: {
		char *s = nullptr;
		pg_call([&] { s = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v.val.numeric))); });
		return s;
	}
	case jbvBool:
		return v.val.boolean ? "true" : "false";
	default:
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "domain values must be strings, numbers or booleans", hint);
	}
}

} // namespace dxpriv::pg
