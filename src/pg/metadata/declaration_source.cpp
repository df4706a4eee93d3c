// Tables named by a declaration (metric "table", "points_table"): checked, read once, copied.
#include "pg/metadata/declaration_source.h"

#include "pg/metadata/policy_json.h"
#include "pg/metadata/catalog.h"
#include "pg/metadata/extension_objects.h"
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
std::vector<std::vector<std::string>>
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
bool
parse_cell(const std::string &text, double &out, bool allow_inf)
{
	char *end = nullptr;
	out = std::strtod(text.c_str(), &end);
	return !text.empty() && *end == '\0' && !std::isnan(out) && (allow_inf || std::isfinite(out));
}

// A double as JSON (+-Infinity as the strings the metric readers accept).
std::string
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


// Triples from a JSON array of 3-element arrays or from the first three columns of a table.
std::vector<Triple>
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

} // namespace dxpriv::pg
