// Table policies: parsing and validating column declarations (JSON) and loading them.
#include "pg/metadata/catalog.h"
#include "pg/dxpriv.h"
#include "pg/guard.h"
#include "pg/executor/numeric_ordinal.h"

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

static const char *kDomainHint =
    "Declare a domain as {\"values\": [...]} or {\"min\": lo, \"max\": hi, \"step\": s}; dates use "
    "{\"min\": \"2020-01-01\", \"max\": \"2020-12-31\", \"step\": 7}.";
static const char *kMetricHint =
    "Declare a metric as {\"type\": \"discrete\", \"weight\": w}, {\"type\": \"absolute\", \"scale\": s}, "
    "{\"type\": \"per_value\", \"weights\": {\"value\": w}, \"default\": w}, {\"type\": \"l1\"|\"l2\"|\"linf\", "
    "\"scale\": s}, {\"type\": \"theta1\"|\"theta2\", \"tau\": t}, {\"type\": \"matrix\", \"pairs\": [[a, b, d], ...]}, "
    "{\"type\": \"graph\", \"edges\": [[a, b, w], ...]} (or \"table\": \"schema.table\") or {\"type\": \"none\"}.";

// Set while dx.set_column validates a declaration: closing an explicit matrix then raises a NOTICE.
bool notice_matrix_closure = false;

// ---- small jsonb readers ----

// Fails unless j is a JSON object whose keys are all in allowed.
static void
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
static bool
get_key(Jsonb *j, const char *key, JsonbValue &out)
{
	return getKeyJsonValueFromContainer(&j->root, key, strlen(key), &out) != nullptr;
}

// A JSON number (or the strings "inf"/"Infinity" when allow_inf) as a double.
static double
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
static std::string
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

// ---- types ----

// See dxpriv.h.
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

// See dxpriv.h. Never errors: numeric overflow saturates, date infinities clamp.
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
	case NUMERICOID: {
		double exact;
		if (numeric_to_double_exact(value, exact)) // the same double, without the text form
			return exact;
		return DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, value));
	}
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
static Domain
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
static Domain
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

// ---- tables named by a declaration ----
//
// "table" (matrix and graph metrics) and "points_table" (column groups) name a table whose rows
// are copied into the declaration when it is made (dx.set_column, dx.set_column_group). The table
// is read once, with the privileges of the calling role (the session's role, outside SECURITY
// DEFINER), and only when that role may SELECT the columns read. dx's own tables, system catalogs,
// protected tables and the tables sharing rows with one (partitions, inheritance parents and
// children), views and other non-tables, and tables with row-level security are refused before
// anything is read. No error quotes a cell: they name a row number.

DeclarationCopy *declaration_copy = nullptr;

static const char *kSourceHint =
    "A metric or domain may be read from an ordinary table that the calling role may SELECT and that is neither "
    "protected, nor a partition, parent or child of a protected table, nor one of dx's or the system's tables; "
    "or list the values in the declaration itself.";

// Raises unless relid is a table the calling role may read a declaration from; returns the
// quoted names of its first `columns` columns.
static std::vector<std::string>
check_declaration_source(Oid relid, size_t columns, const char *what)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext)
		fail(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, "dxpriv is not installed in this database",
		     "Run CREATE EXTENSION dxpriv.");
	const Oid caller = GetOuterUserId();
	char relkind = 0;
	bool rls = false;
	Oid nsp = InvalidOid, dx_schema = InvalidOid;
	std::string qualified, nspname;
	AclResult table_acl = ACLCHECK_NO_PRIV, nsp_acl = ACLCHECK_NO_PRIV;
	std::vector<std::string> names;
	std::vector<AttrNumber> attnums;
	pg_call([&] {
		HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
		if (!HeapTupleIsValid(tup))
			elog(ERROR, "cache lookup failed for relation %u", relid);
		Form_pg_class form = (Form_pg_class) GETSTRUCT(tup);
		relkind = form->relkind;
		rls = form->relrowsecurity;
		nsp = form->relnamespace;
		ReleaseSysCache(tup);
		nspname = get_namespace_name(nsp);
		qualified = quote_qualified_identifier(nspname.c_str(), get_rel_name(relid));
		dx_schema = get_namespace_oid("dx", true); // the extension is not relocatable
		table_acl = pg_class_aclcheck(relid, caller, ACL_SELECT);
		nsp_acl = pg_namespace_aclcheck(nsp, caller, ACL_USAGE);
		Relation rel = RelationIdGetRelation(relid); // locked by the caller
		TupleDesc desc = RelationGetDescr(rel);
		for (int i = 0; i < desc->natts && names.size() < columns; ++i) {
			Form_pg_attribute att = TupleDescAttr(desc, i);
			if (att->attisdropped)
				continue;
			names.push_back(quote_identifier(NameStr(att->attname)));
			attnums.push_back(att->attnum);
		}
		RelationClose(rel);
	});
	if (nsp == dx_schema || relid < FirstNormalObjectId || IsCatalogNamespace(nsp) || IsToastNamespace(nsp) ||
	    nspname == "information_schema")
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
		     std::string(what) + " cannot be read from \"" + qualified + "\", a table of dxpriv or of the system catalogs",
		     kSourceHint);
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		fail(ERRCODE_WRONG_OBJECT_TYPE, std::string(what) + " must name a table, and \"" + qualified + "\" is not one",
		     "Views, materialized views and foreign tables are not accepted: copy the rows into a table.");
	{
		// the table itself, its ancestors (whose rows include it) and its descendants (whose rows it includes)
		InternalSpi spi(ext->schema_owner);
		spi.exec("WITH RECURSIVE up(r) AS (SELECT $1::pg_catalog.oid UNION "
		         "  SELECT i.inhparent FROM pg_catalog.pg_inherits i JOIN up ON i.inhrelid = up.r), "
		         "down(r) AS (SELECT $1::pg_catalog.oid UNION "
		         "  SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN down ON i.inhparent = down.r) "
		         "SELECT EXISTS (SELECT 1 FROM dx.protected_tables p "
		         "  WHERE p.relid::pg_catalog.oid IN (SELECT r FROM up UNION SELECT r FROM down))",
		         {{OIDOID, ObjectIdGetDatum(relid)}}, true);
		if (DatumGetBool(spi.value(0, 0)))
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
			     std::string(what) + " cannot be read from \"" + qualified +
			         "\": it is protected by dxpriv or shares rows with a protected table",
			     kSourceHint);
	}
	if (rls)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED,
		     std::string(what) + " cannot be read from \"" + qualified + "\", which has row-level security",
		     "Copy the rows the declaration needs into a table without row-level security.");
	if (nsp_acl != ACLCHECK_OK)
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "permission denied for schema " + nspname,
		     "The role declaring the column must be able to read the table it names.");
	if (names.size() < columns)
		fail(ERRCODE_INVALID_PARAMETER_VALUE,
		     std::string(what) + " needs a table with at least " + std::to_string(columns) + " columns", kSourceHint);
	if (table_acl != ACLCHECK_OK) {
		bool all_columns = true;
		pg_call([&] {
			for (AttrNumber a : attnums)
				all_columns = all_columns && pg_attribute_aclcheck(relid, a, caller, ACL_SELECT) == ACLCHECK_OK;
		});
		if (!all_columns)
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "permission denied for table " + qualified,
			     "The role declaring the column must be able to SELECT the first " + std::to_string(columns) +
			         " columns of the table it names.");
	}
	return names;
}

// The first `columns` columns of every row of a table named by a declaration, as text, ordered by
// those columns; read as the calling role once check_declaration_source has passed.
static std::vector<std::vector<std::string>>
read_declaration_table(const std::string &table, size_t columns, const char *what)
{
	if (!declaration_copy)
		fail(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
		     std::string("a stored ") + what + " names a table instead of holding its rows",
		     "Declare the column again: dx.set_column and dx.set_column_group copy the table's rows into the declaration.");
	Oid relid = InvalidOid;
	try {
		// looked up as the caller (dx_validate_column runs as the caller): a schema without USAGE fails here
		pg_call([&] {
			List *names = stringToQualifiedNameList(table.c_str());
			relid = RangeVarGetRelid(makeRangeVarFromNameList(names), AccessShareLock, true);
		});
	} catch (const PgError &e) {
		if (e.edata && e.edata->sqlerrcode == ERRCODE_INSUFFICIENT_PRIVILEGE)
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE, e.edata->message ? e.edata->message : "permission denied",
			     "The role declaring the column must be able to read the table it names.");
		throw;
	}
	if (!OidIsValid(relid))
		fail(ERRCODE_UNDEFINED_TABLE, std::string(what) + " names table \"" + table + "\", which does not exist",
		     "Write the table as schema.table: the name is not looked up in the search_path.");
	std::vector<std::string> cols = check_declaration_source(relid, columns, what);
	std::string list;
	for (size_t c = 0; c < cols.size(); ++c)
		list += (c ? ", " : "") + cols[c];
	std::string qualified;
	pg_call([&] { qualified = qualified_relation_name(relid); });
	std::string order;
	for (size_t c = 1; c <= cols.size(); ++c)
		order += (c > 1 ? ", " : "") + std::to_string(c);
	std::string sql = "SELECT " + list + " FROM " + qualified + " ORDER BY " + order;
	InternalSpi spi(GetOuterUserId()); // the caller's privileges apply to the read as well
	uint64 n = spi.exec_dynamic(sql.c_str());
	if (n > kMaxDomainSize * 4)
		fail(ERRCODE_PROGRAM_LIMIT_EXCEEDED, std::string(what) + " table has too many rows", "Keep the table below 4000000 rows.");
	std::vector<std::vector<std::string>> rows(n);
	for (uint64 r = 0; r < n; ++r)
		for (size_t c = 0; c < columns; ++c) {
			if (spi.is_null(r, static_cast<int>(c)))
				fail(ERRCODE_NULL_VALUE_NOT_ALLOWED,
				     "row " + std::to_string(r + 1) + " of the " + what + " table has a null in column " + std::to_string(c + 1),
				     "Remove the rows with nulls from the table.");
			rows[r].push_back(spi.text(r, static_cast<int>(c)));
		}
	return rows;
}

// A finite number written in a table cell (inf/-inf when allow_inf), or false.
static bool
parse_cell(const std::string &text, double &out, bool allow_inf)
{
	char *end = nullptr;
	out = std::strtod(text.c_str(), &end);
	return !text.empty() && *end == '\0' && !std::isnan(out) && (allow_inf || std::isfinite(out));
}

// A double as JSON (+-Infinity as the strings the metric readers accept).
static std::string
json_number(double x)
{
	if (std::isinf(x))
		return x > 0 ? "\"Infinity\"" : "\"-Infinity\"";
	char buf[64];
	snprintf(buf, sizeof buf, "%.17g", x);
	return buf;
}

// A string as a JSON string literal.
static std::string
json_string(const std::string &s)
{
	std::string out;
	pg_call([&] {
		StringInfoData buf;
		initStringInfo(&buf);
		escape_json(&buf, s.c_str());
		out.assign(buf.data, buf.len);
		pfree(buf.data);
	});
	return out;
}

// One (label, label, number) entry of a matrix or graph metric; row: its row in the table the
// metric was read from (1-based), 0 when it was written in the declaration.
struct Triple {
	std::string a, b;
	double d;
	size_t row;
};

// Triples from a JSON array of 3-element arrays or from the first three columns of a table.
static std::vector<Triple>
read_triples(Jsonb *j, const char *key, const char *what)
{
	std::vector<Triple> out;
	JsonbValue v;
	if (get_key(j, "table", v)) {
		if (v.type != jbvString)
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "metric \"table\" must be a table name", kMetricHint);
		if (get_key(j, key, v))
			fail(ERRCODE_INVALID_PARAMETER_VALUE, std::string(what) + " has both \"" + key + "\" and \"table\"", kMetricHint);
		get_key(j, "table", v);
		std::string table(v.val.string.val, v.val.string.len);
		std::vector<std::vector<std::string>> rows = read_declaration_table(table, 3, what);
		std::string json = "[";
		for (size_t r = 0; r < rows.size(); ++r) {
			double x;
			if (!parse_cell(rows[r][2], x, true))
				fail(ERRCODE_INVALID_PARAMETER_VALUE,
				     "row " + std::to_string(r + 1) + " of the " + what + " table has no number in its third column",
				     "The table's rows must be (value, value, distance).");
			out.push_back(Triple{rows[r][0], rows[r][1], x, r + 1});
			json += (r ? ", [" : "[") + json_string(rows[r][0]) + ", " + json_string(rows[r][1]) + ", " + json_number(x) + "]";
		}
		declaration_copy->metric_key = key;
		declaration_copy->metric_rows = json + "]";
		return out;
	}
	JsonbValue arr;
	if (!get_key(j, key, arr) || arr.type != jbvBinary || !JsonContainerIsArray(arr.val.binary.data))
		fail(ERRCODE_INVALID_PARAMETER_VALUE, std::string(what) + " needs \"" + key + "\": [[a, b, number], ...] or \"table\"",
		     kMetricHint);
	JsonbIterator *it = JsonbIteratorInit(arr.val.binary.data);
	JsonbIteratorToken tok;
	std::vector<JsonbValue> row;
	int depth = 0;
	while ((tok = JsonbIteratorNext(&it, &v, false)) != WJB_DONE) {
		if (tok == WJB_BEGIN_ARRAY) {
			if (++depth == 2)
				row.clear();
		} else if (tok == WJB_END_ARRAY) {
			if (depth-- == 2) {
				if (row.size() != 3)
					fail(ERRCODE_INVALID_PARAMETER_VALUE, std::string(what) + " entries must be [a, b, number]", kMetricHint);
				out.push_back(Triple{as_label(row[0], kMetricHint), as_label(row[1], kMetricHint),
				                     as_number(row[2], std::string(what) + " value", true, kMetricHint), 0});
			}
		} else if (tok == WJB_ELEM && depth == 2) {
			row.push_back(v);
		} else {
			fail(ERRCODE_INVALID_PARAMETER_VALUE, std::string(what) + " entries must be [a, b, number]", kMetricHint);
		}
	}
	return out;
}

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
static ColumnMetric
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

// See dxpriv.h.
ColumnPolicy
parse_column_policy(Oid type, int32 typmod, Jsonb *domain_json, Jsonb *metric_json)
{
	ColumnPolicy col;
	col.type = type;
	col.typmod = typmod;
	require_object_with_keys(domain_json, "domain", {"values", "min", "max", "step"}, kDomainHint);
	JsonbValue v;
	if (get_key(domain_json, "values", v)) {
		if (get_key(domain_json, "min", v) || get_key(domain_json, "max", v))
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "domain has both \"values\" and \"min\"/\"max\"", kDomainHint);
		col.domain = parse_enum_domain(type, domain_json);
	} else {
		if (!is_range_type(type))
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "range domains need a numeric or date column",
			     "Declare the values of this column as {\"values\": [...]}.");
		col.domain = parse_range_domain(type, domain_json);
	}
	col.metric = parse_metric(col.domain, metric_json);
	col.metric.validate(col.domain);
	return col;
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

// See dxpriv.h.
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

// See dxpriv.h.
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

// See dxpriv.h.
const ColumnPolicy *
TablePolicy::find(AttrNumber attnum) const
{
	for (const ColumnPolicy &c : columns)
		if (c.member(attnum))
			return &c;
	return nullptr;
}

// See dxpriv.h.
const ColumnPolicy::Member *
ColumnPolicy::member(AttrNumber att) const
{
	int i = member_index(att);
	return i < 0 ? nullptr : &members[i];
}

// See dxpriv.h.
int
ColumnPolicy::member_index(AttrNumber att) const
{
	for (size_t i = 0; i < members.size(); ++i)
		if (members[i].attnum == att)
			return static_cast<int>(i);
	return -1;
}

// Reads {"points": [[x, y], ...]}, {"points_table": "schema.table"} or {"grid": [{min,max,step}, ...]}.
static Domain
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

// See dxpriv.h.
ColumnPolicy
parse_group_policy(const std::vector<Oid> &types, Jsonb *domain_json, Jsonb *metric_json)
{
	for (Oid t : types)
		if (t != INT2OID && t != INT4OID && t != INT8OID && t != FLOAT4OID && t != FLOAT8OID && t != NUMERICOID)
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "every column of a group must be numeric",
			     "Group numeric columns such as longitude and latitude.");
	if (types.size() < 2 || types.size() > kMaxPointDims)
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "a column group needs 2 to 8 columns",
		     "Declare a single column with dx.set_column.");
	ColumnPolicy col;
	col.domain = parse_points_domain(types.size(), domain_json);
	col.metric = parse_metric(col.domain, metric_json);
	col.metric.validate(col.domain);
	for (size_t m = 0; m < types.size(); ++m)
		if (types[m] == INT2OID || types[m] == INT4OID || types[m] == INT8OID)
			for (size_t i = 0; i < col.domain.size(); ++i)
				if (col.domain.coordinate(i, m) != std::floor(col.domain.coordinate(i, m)))
					fail(ERRCODE_INVALID_PARAMETER_VALUE, "an integer column of the group has a non-integer coordinate",
					     "Use whole-number coordinates for integer columns.");
	return col;
}

// See dxpriv.h.
bool
load_table_policy(Oid relid, TablePolicy &out)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext)
		return false;
	InternalSpi spi(ext->schema_owner);
	if (spi.exec("SELECT presence, delta FROM dx.protected_tables WHERE relid = $1", {{OIDOID, ObjectIdGetDatum(relid)}},
	             true) == 0)
		return false;
	out.relid = relid;
	out.presence = DatumGetFloat8(spi.value(0, 0));
	out.delta = DatumGetFloat8(spi.value(0, 1));
	uint64 n = spi.exec("SELECT c.column_name, c.domain, c.metric, a.attnum, a.atttypid, a.atttypmod, a.attcollation "
	                    "FROM dx.protected_columns c JOIN pg_catalog.pg_attribute a "
	                    "ON a.attrelid = c.relid AND a.attname = c.column_name AND NOT a.attisdropped "
	                    "WHERE c.relid = $1 ORDER BY a.attnum",
	                    {{OIDOID, ObjectIdGetDatum(relid)}}, true);
	for (uint64 r = 0; r < n; ++r) {
		Jsonb *domain = nullptr, *metric = nullptr;
		pg_call([&] {
			domain = DatumGetJsonbP(spi.value(r, 1));
			metric = DatumGetJsonbP(spi.value(r, 2));
		});
		ColumnPolicy col = parse_column_policy(DatumGetObjectId(spi.value(r, 4)), DatumGetInt32(spi.value(r, 5)),
		                                       domain, metric);
		col.name = spi.text(r, 0);
		col.attnum = DatumGetInt16(spi.value(r, 3));
		col.collation = DatumGetObjectId(spi.value(r, 6));
		col.members.push_back(ColumnPolicy::Member{col.name, col.attnum, col.type, col.typmod, col.collation});
		out.columns.push_back(std::move(col));
	}
	// column groups: members in declaration order
	n = spi.exec("SELECT g.domain, g.metric, array_to_string(g.columns, ','), "
	             "(SELECT array_agg(a.attnum ORDER BY u.ord) FROM unnest(g.columns) WITH ORDINALITY u(name, ord) "
	             " JOIN pg_catalog.pg_attribute a ON a.attrelid = g.relid AND a.attname = u.name AND NOT a.attisdropped)::int2[]::text "
	             "FROM dx.protected_column_groups g WHERE g.relid = $1",
	             {{OIDOID, ObjectIdGetDatum(relid)}}, true);
	for (uint64 r = 0; r < n; ++r) {
		Jsonb *domain = nullptr, *metric = nullptr;
		pg_call([&] {
			domain = DatumGetJsonbP(spi.value(r, 0));
			metric = DatumGetJsonbP(spi.value(r, 1));
		});
		std::string names = spi.text(r, 2), attnums = spi.text(r, 3);
		std::vector<ColumnPolicy::Member> members;
		size_t pos = 0;
		std::string nums = attnums.size() > 2 ? attnums.substr(1, attnums.size() - 2) : "";
		while (pos <= names.size()) {
			size_t comma = names.find(',', pos);
			std::string name = names.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
			members.push_back(ColumnPolicy::Member{name, 0, InvalidOid, -1, InvalidOid});
			if (comma == std::string::npos)
				break;
			pos = comma + 1;
		}
		size_t m = 0, p2 = 0;
		while (m < members.size() && p2 < nums.size()) {
			size_t comma = nums.find(',', p2);
			members[m++].attnum = static_cast<AttrNumber>(std::stoi(nums.substr(p2, comma == std::string::npos ? std::string::npos : comma - p2)));
			if (comma == std::string::npos)
				break;
			p2 = comma + 1;
		}
		std::vector<Oid> types;
		for (ColumnPolicy::Member &mem : members) {
			pg_call([&] { get_atttypetypmodcoll(relid, mem.attnum, &mem.type, &mem.typmod, &mem.collation); });
			types.push_back(mem.type);
		}
		ColumnPolicy col = parse_group_policy(types, domain, metric);
		col.members = members;
		col.name = "(" + names + ")";
		col.attnum = members[0].attnum;
		col.type = members[0].type;
		col.typmod = members[0].typmod;
		col.collation = members[0].collation;
		out.columns.push_back(std::move(col));
	}
	// the privacy unit (README "Privacy units"), read as the extension owner: its key stays inside
	// the statements dxpriv writes
	n = spi.exec("SELECT u.unit_column, a.attnum, a.atttypid, u.max_rows_per_unit, "
	             "coalesce(u.max_groups_per_unit, 0), coalesce(u.max_rows_per_unit_per_group, 0), "
	             "pg_catalog.encode(u.hash_key, 'hex') "
	             "FROM dx.privacy_units u LEFT JOIN pg_catalog.pg_attribute a "
	             "ON a.attrelid = u.relid AND a.attname = u.unit_column AND NOT a.attisdropped WHERE u.relid = $1",
	             {{OIDOID, ObjectIdGetDatum(relid)}}, true);
	if (n > 0 && spi.is_null(0, 1)) // fail closed: never fall back to one row per record
		fail(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
		     "the privacy unit column \"" + spi.text(0, 0) + "\" of a protected table no longer exists",
		     "The table owner can declare the unit again with dx.set_privacy_unit (after a rename) or remove it "
		     "with dx.unset_privacy_unit.");
	if (n > 0) {
		out.unit.column = spi.text(0, 0);
		out.unit.attnum = DatumGetInt16(spi.value(0, 1));
		out.unit.type = DatumGetObjectId(spi.value(0, 2));
		out.unit.max_rows = DatumGetInt32(spi.value(0, 3));
		out.unit.max_groups = DatumGetInt32(spi.value(0, 4));
		out.unit.max_rows_per_group = DatumGetInt32(spi.value(0, 5));
		out.unit.key_hex = spi.text(0, 6);
	}
	return true;
}

// See dxpriv.h.
Oid
relation_owner(Oid relid)
{
	HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	const Oid owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

// See dxpriv.h.
std::string
qualified_relation_name(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)), get_rel_name(relid));
}

} // namespace dxpriv::pg
