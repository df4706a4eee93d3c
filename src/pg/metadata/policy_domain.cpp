// Declared domains: range, enumerated and point domains, and the Datums of their points.
#include "pg/metadata/policy_domain.h"

#include "pg/elevated/sealed_execution.h"

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

// ---- types ----

// See policy_domain.h.
bool
is_range_type(Oid type)
{
	switch (type) {
	case INT2OID:
	case INT4OID:
	case INT8OID:
	case FLOAT4OID:
	case FLOAT8OID:
	case NUMERICOID:
	case DATEOID:
		return true;
	default:
		return false;
	}
}

// See policy_domain.h. Never errors: numeric overflow saturates, date infinities clamp.
double
datum_to_ordinal(Datum value, Oid type)
{
	switch (type) {
	case INT2OID:
		return DatumGetInt16(value);
	case INT4OID:
		return DatumGetInt32(value);
	case INT8OID:
		return static_cast<double>(DatumGetInt64(value));
	case FLOAT4OID:
		return DatumGetFloat4(value);
	case FLOAT8OID:
		return DatumGetFloat8(value);
	case NUMERICOID:
		return DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, value));
	case DATEOID:
		return DatumGetDateADT(value);
	default:
		return 0;
	}
}

// Day number (days since 2000-01-01) of a date string.
static int32
parse_date(const std::string &text)
{
	DateADT d = 0;
	pg_call([&] { d = DatumGetDateADT(DirectFunctionCall1(date_in, CStringGetDatum(text.c_str()))); });
	if (DATE_NOT_FINITE(d))
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "date domain bounds must be finite dates", kDomainHint);
	return d;
}

// Reads {"min","max","step"} for a numeric or date column.
Domain
parse_range_domain(Oid type, Jsonb *j)
{
	JsonbValue lo_v, hi_v, step_v;
	if (!get_key(j, "min", lo_v) || !get_key(j, "max", hi_v))
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "range domain needs \"min\" and \"max\"", kDomainHint);
	bool has_step = get_key(j, "step", step_v);
	if (type == DATEOID) {
		if (lo_v.type != jbvString || hi_v.type != jbvString)
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "date domain bounds must be date strings", kDomainHint);
		int32 lo = parse_date(std::string(lo_v.val.string.val, lo_v.val.string.len));
		int32 hi = parse_date(std::string(hi_v.val.string.val, hi_v.val.string.len));
		double step = has_step ? as_number(step_v, "date domain step", false, kDomainHint) : 1;
		if (step != std::floor(step) || step < 1 || step > 1e6)
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "date domain step must be a whole number of days", kDomainHint);
		if (lo > hi)
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "domain \"min\" must not exceed \"max\"", kDomainHint);
		return Domain::dates(lo, hi, static_cast<int32>(step));
	}
	double lo = as_number(lo_v, "domain \"min\"", false, kDomainHint);
	double hi = as_number(hi_v, "domain \"max\"", false, kDomainHint);
	double step = has_step ? as_number(step_v, "domain \"step\"", false, kDomainHint) : 1;
	if (type == INT2OID || type == INT4OID || type == INT8OID) {
		double limit = type == INT2OID ? 32767.0 : type == INT4OID ? 2147483647.0 : 9007199254740992.0;
		if (lo != std::floor(lo) || hi != std::floor(hi) || step != std::floor(step))
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "an integer column needs whole-number \"min\", \"max\" and \"step\"",
			     kDomainHint);
		if (std::fabs(lo) > limit || std::fabs(hi) > limit)
			fail(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE, "domain bounds are out of range for the column type",
			     "Choose bounds the column type can hold.");
	}
	return Domain::range(lo, hi, step); // validates finiteness, order, step, size
}

// Reads {"values": [...]} for any byval or varlena column.
Domain
parse_enum_domain(Oid type, Jsonb *j)
{
	int16 typlen;
	bool typbyval;
	get_typlenbyval(type, &typlen, &typbyval);
	if (!typbyval && typlen != -1)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "enumerated domains are not supported for this column type",
		     "Use a text, integer, boolean or date column.");
	JsonbValue values;
	if (!get_key(j, "values", values) || values.type != jbvBinary || !JsonContainerIsArray(values.val.binary.data))
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "\"values\" must be a JSON array", kDomainHint);
	std::vector<std::string> labels;
	JsonbIterator *it = JsonbIteratorInit(values.val.binary.data);
	JsonbValue v;
	JsonbIteratorToken tok;
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		if (tok == WJB_ELEM)
			labels.push_back(as_label(v, kDomainHint));
	if (labels.empty())
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "\"values\" must not be empty", kDomainHint);
	return Domain::enumerated(std::move(labels)); // validates distinctness
}

// The Datum of a numeric position for a by-value range type (ints, floats, date).
static Datum
ordinal_datum(double x, Oid type)
{
	switch (type) {
	case INT2OID:
		return Int16GetDatum(static_cast<int16>(std::llround(x)));
	case INT4OID:
		return Int32GetDatum(static_cast<int32>(std::llround(x)));
	case INT8OID:
		return Int64GetDatum(static_cast<int64>(std::llround(x)));
	case FLOAT4OID:
		return Float4GetDatum(static_cast<float4>(x));
	case FLOAT8OID:
		return Float8GetDatum(x);
	case DATEOID:
		return DateADTGetDatum(static_cast<DateADT>(std::llround(x)));
	default:
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv: unsupported range type");
	}
}

// See policy_domain.h.
std::vector<Datum>
domain_datums(const Domain &domain, Oid type, int32 typmod)
{
	std::vector<Datum> out(domain.size());
	if (domain.kind() == DomainKind::Enumerated) {
		std::vector<std::string> labels = domain.labels();
		pg_call([&] {
			// Labels are read under fixed settings, so the points (and which stored values match
			// them) are the same at declaration, at analysis and at execution, whatever the
			// session's DateStyle, TimeZone or IntervalStyle: a setting changed between analysis and
			// execution cannot move rows to other points: the sealed settings (sealed_execution.h:
			// DateStyle ISO, MDY, TimeZone UTC, IntervalStyle postgres, ...). (An error unwinds the
			// GUC nest level with the transaction.)
			const int level = push_sealed_settings();
			Oid input, ioparam;
			getTypeInputInfo(type, &input, &ioparam);
			for (size_t i = 0; i < labels.size(); ++i)
				out[i] = OidInputFunctionCall(input, const_cast<char *>(labels[i].c_str()), ioparam, typmod);
			pop_sealed_settings(level);
		});
		return out;
	}
	if (type == NUMERICOID) {
		// an integral point of an unconstrained numeric is built directly: numeric_in of its label
		// gives the same value with display scale 0, as int64_to_numeric does (and costs a text
		// round trip per point, most of the analysis of a wide domain)
		std::vector<std::string> labels(domain.size());
		std::vector<char> integral(domain.size(), 0);
		for (size_t i = 0; i < domain.size(); ++i) {
			const double v = domain.ordinal(i);
			if (typmod < 0 && v == std::nearbyint(v) && std::fabs(v) < 9e15)
				integral[i] = 1;
			else
				labels[i] = domain.label(i);
		}
		pg_call([&] {
			for (size_t i = 0; i < labels.size(); ++i)
				out[i] = integral[i] ? NumericGetDatum(int64_to_numeric(static_cast<int64>(domain.ordinal(i))))
				                     : DirectFunctionCall3(numeric_in, CStringGetDatum(labels[i].c_str()),
				                                           ObjectIdGetDatum(InvalidOid), Int32GetDatum(typmod));
		});
		return out;
	}
	for (size_t i = 0; i < domain.size(); ++i)
		out[i] = ordinal_datum(domain.ordinal(i), type);
	return out;
}

// See policy_domain.h.
std::vector<Datum>
member_datums(const ColumnPolicy &col, size_t m)
{
	if (!col.is_group())
		return domain_datums(col.domain, col.type, col.typmod);
	const ColumnPolicy::Member &mem = col.members[m];
	std::vector<Datum> out(col.domain.size());
	if (mem.type == NUMERICOID) {
		std::vector<std::string> labels(col.domain.size());
		for (size_t i = 0; i < col.domain.size(); ++i) {
			char buf[64];
			snprintf(buf, sizeof buf, "%.15g", col.domain.coordinate(i, m));
			labels[i] = buf;
		}
		pg_call([&] {
			for (size_t i = 0; i < labels.size(); ++i)
				out[i] = DirectFunctionCall3(numeric_in, CStringGetDatum(labels[i].c_str()), ObjectIdGetDatum(InvalidOid),
				                             Int32GetDatum(mem.typmod));
		});
		return out;
	}
	for (size_t i = 0; i < col.domain.size(); ++i)
		out[i] = ordinal_datum(col.domain.coordinate(i, m), mem.type);
	return out;
}

// Reads {"points": [[x, y], ...]}, {"points_table": "schema.table"} or {"grid": [{min,max,step}, ...]}.
Domain
parse_points_domain(size_t dims, Jsonb *j)
{
	static const char *hint = "Declare a group's domain as {\"points\": [[x, y], ...]}, {\"points_table\": \"schema.table\"} "
	                          "(its first columns are the coordinates) or {\"grid\": [{\"min\": 0, \"max\": 9, \"step\": 1}, ...]}.";
	require_object_with_keys(j, "domain", {"points", "points_table", "grid"}, hint);
	std::vector<double> coords;
	JsonbValue v;
	if (get_key(j, "grid", v)) {
		if (v.type != jbvBinary || !JsonContainerIsArray(v.val.binary.data))
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "\"grid\" must be an array of {min, max, step} objects", hint);
		std::vector<Domain> axes;
		JsonbIterator *it = JsonbIteratorInit(v.val.binary.data);
		JsonbValue e;
		JsonbIteratorToken tok;
		while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE) {
			if (tok != WJB_ELEM)
				continue;
			if (e.type != jbvBinary || !JsonContainerIsObject(e.val.binary.data))
				fail(ERRCODE_INVALID_PARAMETER_VALUE, "\"grid\" must be an array of {min, max, step} objects", hint);
			JsonbValue lo, hi, st;
			JsonbContainer *c = e.val.binary.data;
			if (!getKeyJsonValueFromContainer(c, "min", 3, &lo) || !getKeyJsonValueFromContainer(c, "max", 3, &hi))
				fail(ERRCODE_INVALID_PARAMETER_VALUE, "every grid axis needs \"min\" and \"max\"", hint);
			double step = getKeyJsonValueFromContainer(c, "step", 4, &st) ? as_number(st, "grid \"step\"", false, hint) : 1;
			axes.push_back(Domain::range(as_number(lo, "grid \"min\"", false, hint), as_number(hi, "grid \"max\"", false, hint), step));
		}
		if (axes.size() != dims)
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "the grid needs one axis per column of the group", hint);
		size_t total = 1;
		for (const Domain &a : axes) {
			total *= a.size();
			if (total > kMaxDomainSize)
				fail(ERRCODE_PROGRAM_LIMIT_EXCEEDED, "the grid has too many points", "Use coarser steps.");
		}
		std::vector<size_t> idx(dims, 0);
		for (size_t p = 0; p < total; ++p) {
			for (size_t d = 0; d < dims; ++d)
				coords.push_back(axes[d].ordinal(idx[d]));
			for (size_t d = dims; d-- > 0;) {
				if (++idx[d] < axes[d].size())
					break;
				idx[d] = 0;
			}
		}
		return Domain::points(dims, std::move(coords));
	}
	if (get_key(j, "points_table", v)) {
		if (v.type != jbvString)
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "\"points_table\" must be a table name", hint);
		if (get_key(j, "points", v))
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "a group's domain has both \"points\" and \"points_table\"", hint);
		get_key(j, "points_table", v);
		std::string table(v.val.string.val, v.val.string.len);
		std::vector<std::vector<std::string>> rows = read_declaration_table(table, dims, "points");
		std::string json = "[";
		for (size_t r = 0; r < rows.size(); ++r) {
			json += r ? ", [" : "[";
			for (size_t c = 0; c < rows[r].size(); ++c) {
				double x;
				if (!parse_cell(rows[r][c], x, false))
					fail(ERRCODE_INVALID_PARAMETER_VALUE,
					     "row " + std::to_string(r + 1) + " of the points table has a coordinate that is not a finite number",
					     "The first columns of a points table are the coordinates, one finite number per column of the group.");
				coords.push_back(x);
				json += (c ? ", " : "") + json_number(x);
			}
			json += "]";
		}
		declaration_copy->points_rows = json + "]";
		return Domain::points(dims, std::move(coords));
	}
	if (!get_key(j, "points", v) || v.type != jbvBinary || !JsonContainerIsArray(v.val.binary.data))
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "a group's domain needs \"points\", \"points_table\" or \"grid\"", hint);
	JsonbIterator *it = JsonbIteratorInit(v.val.binary.data);
	JsonbValue e;
	JsonbIteratorToken tok;
	int depth = 0;
	size_t in_point = 0;
	while ((tok = JsonbIteratorNext(&it, &e, false)) != WJB_DONE) {
		if (tok == WJB_BEGIN_ARRAY) {
			if (++depth == 2)
				in_point = 0;
		} else if (tok == WJB_END_ARRAY) {
			if (depth-- == 2 && in_point != dims)
				fail(ERRCODE_INVALID_PARAMETER_VALUE, "every point needs one coordinate per column of the group", hint);
		} else if (tok == WJB_ELEM && depth == 2) {
			coords.push_back(as_number(e, "point coordinate", false, hint));
			in_point++;
		} else {
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "\"points\" must be an array of coordinate arrays", hint);
		}
	}
	return Domain::points(dims, std::move(coords));
}

} // namespace dxpriv::pg
