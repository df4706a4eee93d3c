// Declared metrics: the metric object of a column declaration read against its domain.
#include "pg/metadata/policy_metric.h"

#include "pg/metadata/declaration_source.h"
#include "pg/metadata/policy_json.h"
#include "pg/metadata/policy.h"
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

// Index of a label of an enumerated domain, or an error: naming the label when the DBA wrote it,
// naming only the row when it came from a table (a cell is never quoted).
static size_t
label_index(const Domain &domain, const std::string &label, const char *what, size_t row)
{
	long i = domain.find_label(label);
	if (i < 0 && row > 0)
		fail(ERRCODE_INVALID_PARAMETER_VALUE,
		     "row " + std::to_string(row) + " of the metric table names a value that is not in the domain",
		     "The first two columns of the table must hold values of the column's declared domain.");
	if (i < 0)
		fail(ERRCODE_INVALID_PARAMETER_VALUE, std::string(what) + " names \"" + label + "\", which is not in the domain",
		     "Use the domain's values.");
	return static_cast<size_t>(i);
}

// Reads the metric object against a domain.
ColumnMetric
parse_metric(const Domain &domain, Jsonb *j)
{
	require_object_with_keys(j, "metric", {"type", "weight", "scale", "weights", "default", "tau", "pairs", "edges", "table"},
	                         kMetricHint);
	JsonbValue type_v;
	if (!get_key(j, "type", type_v) || type_v.type != jbvString)
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "metric needs a \"type\"", kMetricHint);
	std::string type(type_v.val.string.val, type_v.val.string.len);
	JsonbValue v;
	if (type == "discrete") {
		double w = get_key(j, "weight", v) ? as_number(v, "metric \"weight\"", true, kMetricHint) : 1.0;
		return ColumnMetric::discrete(w);
	}
	if (type == "absolute") {
		if (!get_key(j, "scale", v))
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "absolute metric needs a \"scale\"", kMetricHint);
		return ColumnMetric::absolute(as_number(v, "metric \"scale\"", false, kMetricHint));
	}
	if (type == "none")
		return ColumnMetric::none();
	if (type == "l1" || type == "l2" || type == "linf") {
		if (!get_key(j, "scale", v))
			fail(ERRCODE_INVALID_PARAMETER_VALUE, type + " metric needs a \"scale\"", kMetricHint);
		return ColumnMetric::lp(type == "l1" ? 1 : type == "l2" ? 2 : 0, as_number(v, "metric \"scale\"", false, kMetricHint));
	}
	if (type == "theta1" || type == "theta2") {
		if (!get_key(j, "tau", v))
			fail(ERRCODE_INVALID_PARAMETER_VALUE, type + " metric needs a threshold \"tau\"", kMetricHint);
		double tau = as_number(v, "metric \"tau\"", false, kMetricHint);
		double w = get_key(j, "weight", v) ? as_number(v, "metric \"weight\"", false, kMetricHint) : 1.0;
		return type == "theta1" ? ColumnMetric::theta1(tau, w) : ColumnMetric::theta2(tau, w);
	}
	if (type == "matrix" || type == "graph") {
		if (domain.kind() != DomainKind::Enumerated)
			fail(ERRCODE_INVALID_PARAMETER_VALUE, type + " metric needs an enumerated domain", kMetricHint);
		auto triples = read_triples(j, type == "matrix" ? "pairs" : "edges", type == "matrix" ? "matrix metric" : "graph metric");
		const size_t k = domain.size();
		if (type == "graph") {
			std::vector<GraphEdge> edges;
			for (const Triple &t : triples)
				edges.push_back(GraphEdge{label_index(domain, t.a, "graph edge", t.row),
				                          label_index(domain, t.b, "graph edge", t.row), t.d});
			return ColumnMetric::graph(k, edges);
		}
		double fallback = get_key(j, "default", v) ? as_number(v, "metric \"default\"", true, kMetricHint) : kInfinity;
		std::vector<double> d(k * k, fallback);
		for (size_t i = 0; i < k; ++i)
			d[i * k + i] = 0;
		for (const Triple &t : triples) {
			size_t a = label_index(domain, t.a, "matrix pair", t.row), b = label_index(domain, t.b, "matrix pair", t.row);
			d[a * k + b] = d[b * k + a] = t.d;
		}
		bool changed = false;
		ColumnMetric m = ColumnMetric::matrix(k, std::move(d), &changed);
		if (changed && notice_matrix_closure)
			pg_call([] {
				ereport(NOTICE, (errmsg("dxpriv closed the matrix metric under the triangle inequality"),
				                 errdetail("Some distances were larger than a path through other values; the guarantee "
				                           "delivered is that of the closed metric (the same mechanisms are private).")));
			});
		return m;
	}
	if (type == "per_value") {
		if (domain.kind() != DomainKind::Enumerated)
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "per_value metric needs an enumerated domain", kMetricHint);
		bool has_default = get_key(j, "default", v);
		double fallback = has_default ? as_number(v, "metric \"default\"", true, kMetricHint) : 0;
		std::map<std::string, double> given;
		JsonbValue weights;
		if (get_key(j, "weights", weights)) {
			if (weights.type != jbvBinary || !JsonContainerIsObject(weights.val.binary.data))
				fail(ERRCODE_INVALID_PARAMETER_VALUE, "\"weights\" must be a JSON object", kMetricHint);
			JsonbIterator *it = JsonbIteratorInit(weights.val.binary.data);
			JsonbIteratorToken tok;
			std::string key;
			while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE) {
				if (tok == WJB_KEY)
					key.assign(v.val.string.val, v.val.string.len);
				else if (tok == WJB_VALUE) {
					if (domain.find_label(key) < 0)
						fail(ERRCODE_INVALID_PARAMETER_VALUE, "per_value weight for \"" + key + "\", which is not in the domain",
						     "Weights are keyed by the domain's values.");
					given[key] = as_number(v, "per_value weight", true, kMetricHint);
				}
			}
		}
		std::vector<double> per_point;
		for (const std::string &label : domain.labels()) {
			auto f = given.find(label);
			if (f == given.end() && !has_default)
				fail(ERRCODE_INVALID_PARAMETER_VALUE, "per_value metric has no weight for \"" + label + "\"",
				     "Give every value a weight or set \"default\".");
			per_point.push_back(f != given.end() ? f->second : fallback);
		}
		return ColumnMetric::per_value(std::move(per_point));
	}
	fail(ERRCODE_INVALID_PARAMETER_VALUE, "unknown metric type \"" + type + "\"", kMetricHint);
}

} // namespace dxpriv::pg
