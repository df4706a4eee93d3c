// Shared glue of the synthetic releases (synthetic_release.h): no mathematics here.
#include "pg/release/synthetic_release.h"

#include "pg/executor/agg_support.h"
#include "pg/executor/domain_index.h"
#include "pg/guard.h"
#include "pg/metadata/catalog.h"
#include "pg/metadata/protected_rows.h"
#include "pg/planner/universe_eval.h"
#include "pg/metadata/extension_objects.h"
#include "pg/metadata/policy.h"

extern "C" {
#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/regproc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

#include <cmath>
#include <set>

namespace dxpriv::pg {

namespace {

constexpr const char *kWorkloadHint =
    "Use 'marginals:K' for all K-way marginals of the chosen columns (e.g. 'marginals:2'), a float8[][] of weight "
    "vectors (one row per query, one weight per universe point), or a text[] of WHERE predicates on the columns.";

} // namespace

// See synthetic_release.h.
void
load_release_source(Oid relid, ArrayType *columns, ReleaseSource &out)
{
	out.relid = relid;
	std::string relname;
	pg_call([&] { relname = qualified_relation_name(relid); });
	if (!load_table_policy(relid, out.policy))
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "table " + relname + " is not protected by dxpriv",
		     "Releases are made from protected tables over their declared columns; the owner protects a table with "
		     "dx.protect_table.");
	if (ARR_NDIM(columns) > 1 || ARR_HASNULL(columns))
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "columns must be a one-dimensional array without nulls",
		     "Pass the declared columns to release, e.g. ARRAY['age', 'sex'].");
	const std::vector<std::string> names = text_array_strings(columns);
	if (names.empty())
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "a release needs at least one column",
		     "Pass the declared columns to release, e.g. ARRAY['age', 'sex'].");
	std::set<AttrNumber> attnos;
	for (const std::string &name : names) {
		AttrNumber att = InvalidAttrNumber;
		pg_call([&] { att = get_attnum(relid, name.c_str()); });
		const ColumnPolicy *c = att == InvalidAttrNumber ? nullptr : out.policy.find(att);
		if (!c)
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "column \"" + name + "\" of table " + relname + " is not declared",
			     "Releases cover declared columns only; see dx.my_columns for them.");
		if (c->is_group())
			fail(ERRCODE_FEATURE_NOT_SUPPORTED, "column \"" + name + "\" belongs to the column group " + c->name,
			     "Releases support single declared columns; column groups (vector metrics) are not supported.");
		if (!attnos.insert(att).second)
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "column \"" + name + "\" is listed twice",
			     "List each column once.");
	}
	out.sub = sub_universe_of(out.policy, attnos, out.cols); // may throw (size cap): not inside pg_call
	for (const ColumnPolicy *c : out.cols)
		out.names.push_back(c->name);
}

// See synthetic_release.h.
Workload
text_workload(const ReleaseSource &src, const std::string &spec)
{
	const std::string prefix = "marginals:";
	if (spec.compare(0, prefix.size(), prefix) != 0)
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "unknown workload \"" + spec + "\"", kWorkloadHint);
	const std::string digits = spec.substr(prefix.size());
	if (digits.empty() || digits.size() > 3 || digits.find_first_not_of("0123456789") != std::string::npos)
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "unknown workload \"" + spec + "\"", kWorkloadHint);
	return marginal_workload(src.sub, src.names, std::stoi(digits));
}

// See synthetic_release.h.
Workload
array_workload(const ReleaseSource &src, ArrayType *weights)
{
	if (ARR_HASNULL(weights) || ARR_NDIM(weights) != 2)
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "weight workload must be a two-dimensional array without nulls",
		     kWorkloadHint);
	const int rows = ARR_DIMS(weights)[0], cols = ARR_DIMS(weights)[1];
	const double *v = reinterpret_cast<const double *>(ARR_DATA_PTR(weights));
	std::vector<std::vector<double>> q(static_cast<size_t>(rows));
	for (int r = 0; r < rows; ++r)
		q[r].assign(v + static_cast<size_t>(r) * cols, v + static_cast<size_t>(r + 1) * cols);
	return weight_workload(src.sub, q);
}

// See synthetic_release.h.
std::string
check_release_target(const char *target)
{
	std::string quoted;
	bool exists = false, may_create = false;
	pg_call([&] {
		// "table" or "schema.table" (quoted parts allowed), as CREATE TABLE would read it
		RangeVar *rv = makeRangeVarFromNameList(stringToQualifiedNameList(target));
		const Oid ns = RangeVarGetCreationNamespace(rv);
		exists = OidIsValid(get_relname_relid(rv->relname, ns));
		may_create = pg_namespace_aclcheck(ns, GetUserId(), ACL_CREATE) == ACLCHECK_OK;
		quoted = quote_qualified_identifier(get_namespace_name(ns), rv->relname);
	});
	if (exists)
		fail(ERRCODE_DUPLICATE_TABLE, "relation " + quoted + " already exists",
		     "Choose a new target name; a release never overwrites a table.");
	if (!may_create)
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "permission denied to create " + quoted,
		     "The release is written to a new table owned by you; you need CREATE on its schema.");
	return quoted;
}

// See synthetic_release.h.
std::vector<std::int64_t>
read_histogram(const ReleaseSource &src, const char *entry)
{
	std::vector<std::int64_t> counts(src.sub.size(), 0);
	std::vector<DomainIndexer *> ix;
	for (const ColumnPolicy *c : src.cols)
		ix.push_back(DomainIndexer::create(CurrentMemoryContext, c->domain, c->type, c->typmod));
	std::string sql = "SELECT ";
	pg_call([&] {
		for (size_t i = 0; i < src.cols.size(); ++i)
			sql += std::string(i ? ", " : "") + quote_identifier(src.cols[i]->name.c_str());
		sql += " FROM " + qualified_relation_name(src.relid);
	});
	ProtectedRowRead read(src.relid, entry); // sealed, as the owner, hooks off; refused on a privacy unit table
	read.spi().scan(sql.c_str(), 10000, [&](SPITupleTable *tuptable, uint64 n) {
		for (uint64 r = 0; r < n; ++r) {
			size_t u = 0;
			for (size_t c = 0; c < ix.size(); ++c) {
				bool isnull = false;
				const Datum v = SPI_getbinval(tuptable->vals[r], tuptable->tupdesc, static_cast<int>(c) + 1, &isnull);
				u = u * ix[c]->domain().size() + ix[c]->index(v, isnull);
			}
			counts[u]++;
		}
	});
	return counts;
}

// See synthetic_release.h.
Oid
write_histogram(const ReleaseSource &src, const std::string &target, const std::vector<double> &weights)
{
	const size_t n = src.sub.size(), k = src.cols.size();
	std::string create = "CREATE TABLE " + target + " (", insert = "INSERT INTO " + target + " SELECT ", args;
	std::vector<Oid> types;
	std::vector<Datum> values;
	Oid relid = InvalidOid;
	// dxpriv's own statements, sealed, run as the caller (who owns the new table); the column types
	// are printed inside the seal (qualified unless in pg_catalog)
	InternalSpi spi(InvalidOid);
	pg_call([&] {
		for (size_t c = 0; c < k; ++c) {
			const char *col = quote_identifier(src.cols[c]->name.c_str());
			const char *type = format_type_with_typemod(src.cols[c]->type, src.cols[c]->typmod);
			create += std::string(col) + " " + type + ", ";
			insert += "u" + std::to_string(c) + "::" + type + ", ";
			args += "pg_catalog.unnest($" + std::to_string(c + 1) + "::pg_catalog.text[]), ";
			// the label of every universe point's value of column c
			Datum *labels = static_cast<Datum *>(palloc(sizeof(Datum) * n));
			for (size_t u = 0; u < n; ++u)
				labels[u] = PointerGetDatum(cstring_to_text(src.sub.domains[c].label(src.sub.unflatten(u)[c]).c_str()));
			values.push_back(PointerGetDatum(construct_array(labels, static_cast<int>(n), TEXTOID, -1, false, TYPALIGN_INT)));
			types.push_back(TEXTARRAYOID);
		}
		Datum *w = static_cast<Datum *>(palloc(sizeof(Datum) * n));
		for (size_t u = 0; u < n; ++u)
			w[u] = Float8GetDatum(weights[u]);
		values.push_back(PointerGetDatum(construct_array(w, static_cast<int>(n), FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE)));
		types.push_back(FLOAT8ARRAYOID);
		create += "weight pg_catalog.float8 NOT NULL)";
		insert += "w FROM ROWS FROM (" + args + "pg_catalog.unnest($" + std::to_string(k + 1) + "::pg_catalog.float8[])) AS t(";
		for (size_t c = 0; c < k; ++c)
			insert += "u" + std::to_string(c) + ", ";
		insert += "w)";
	});
	spi.exec_dynamic(create.c_str(), {}, {}, false, SPI_OK_UTILITY);
	spi.exec_dynamic(insert.c_str(), types, values, false, SPI_OK_INSERT);
	pg_call([&] {
		List *names = stringToQualifiedNameList(target.c_str());
		relid = RangeVarGetRelid(makeRangeVarFromNameList(names), NoLock, false);
	});
	return relid;
}

// See synthetic_release.h.
void
record_release(const ReleaseSource &src, Oid target, const ReleaseRecord &rec)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv is not installed in this database");
	std::string details;
	auto num = [](double v) {
		char buf[64];
		snprintf(buf, sizeof buf, "%.17g", v);
		return std::string(std::isfinite(v) ? buf : "null");
	};
	std::string cols;
	for (size_t i = 0; i < src.names.size(); ++i)
		cols += std::string(i ? "," : "") + src.names[i];
	pg_call([&] {
		StringInfoData buf;
		initStringInfo(&buf);
		escape_json(&buf, rec.workload.c_str());
		appendStringInfoString(&buf, ", \"output\": ");
		escape_json(&buf, rec.output.c_str());
		details = "{\"workload\": " + std::string(buf.data) + ", \"iterations\": " + std::to_string(rec.iterations) +
		          ", \"queries\": " + std::to_string(rec.queries) + ", \"n_hat\": " + num(rec.n_hat) +
		          ", \"count_epsilon\": " + num(rec.count_epsilon) + ", \"step_epsilon\": " + num(rec.step_epsilon) +
		          ", \"sensitivity\": " + num(rec.sensitivity) + ", \"presence\": " + num(src.policy.presence) + "}";
	});
	const Oid role = GetUserId(); // the caller, before InternalSpi switches to the extension owner
	InternalSpi spi(ext->schema_owner);
	Datum cols_text = 0, details_text = 0, mech = 0;
	pg_call([&] {
		cols_text = CStringGetTextDatum(cols.c_str());
		details_text = CStringGetTextDatum(details.c_str());
		mech = CStringGetTextDatum(rec.mechanism.c_str());
	});
	spi.exec("INSERT INTO dx.releases (role, source, target, columns, mechanism, epsilon, details) "
	         "SELECT $1, $2, $3, pg_catalog.string_to_array($4, ',')::pg_catalog.name[], $5, $6, $7::pg_catalog.jsonb "
	         "OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('policy', "
	         "(SELECT pg_catalog.jsonb_object_agg(c.column_name, pg_catalog.jsonb_build_object('domain', c.domain, "
	         "'metric', c.metric)) FROM dx.protected_columns c WHERE c.relid OPERATOR(pg_catalog.=) $2 AND c.column_name "
	         "OPERATOR(pg_catalog.=) ANY (pg_catalog.string_to_array($4, ','))))",
	         {{OIDOID, ObjectIdGetDatum(role)},
	          {OIDOID, ObjectIdGetDatum(src.relid)},
	          {OIDOID, ObjectIdGetDatum(target)},
	          {TEXTOID, cols_text},
	          {TEXTOID, mech},
	          {FLOAT8OID, Float8GetDatum(rec.epsilon)},
	          {TEXTOID, details_text}},
	         false);
}

// See synthetic_release.h.
std::string
statement_text()
{
	std::string text;
	if (debug_query_string)
		text.assign(debug_query_string, strnlen(debug_query_string, 4096));
	return text;
}

// See synthetic_release.h.
WorkloadArgument
read_workload_argument(FunctionCallInfo fcinfo, int argno)
{
	WorkloadArgument arg;
	const Oid type = get_fn_expr_argtype(fcinfo->flinfo, argno);
	if (type == FLOAT8ARRAYOID)
		arg.weights = pg_value([&] { return PG_GETARG_ARRAYTYPE_P(argno); });
	else if (type == TEXTARRAYOID)
		arg.predicates = pg_value([&] { return PG_GETARG_ARRAYTYPE_P(argno); });
	else
		arg.text = pg_value([&] { return text_to_cstring(PG_GETARG_TEXT_PP(argno)); });
	return arg;
}

// See synthetic_release.h.
Workload
workload_of(const ReleaseSource &src, const WorkloadArgument &arg)
{
	if (arg.predicates)
		return predicate_workload(src, arg.predicates);
	return arg.weights ? array_workload(src, arg.weights) : text_workload(src, arg.text);
}

// See synthetic_release.h.
std::string
workload_label(const WorkloadArgument &arg, const Workload &w)
{
	if (arg.predicates)
		return "predicates:" + std::to_string(w.queries.size());
	return arg.weights ? "weights:" + std::to_string(w.queries.size()) : arg.text;
}

// See synthetic_release.h.
ReleaseHead
read_release_head(FunctionCallInfo fcinfo, bool with_target, const char *example)
{
	const int required = with_target ? 5 : 4;
	for (int i = 0; i < required; ++i)
		if (PG_ARGISNULL(i))
			fail(ERRCODE_NULL_VALUE_NOT_ALLOWED,
			     std::string("source, columns, workload, epsilon") + (with_target ? " and target" : "") +
			         " must not be null",
			     example);
	ReleaseHead h;
	pg_call([&] {
		h.relid = PG_GETARG_OID(0);
		h.columns = PG_GETARG_ARRAYTYPE_P(1);
		h.workload = read_workload_argument(fcinfo, 2);
		h.epsilon = PG_GETARG_FLOAT8(3);
		if (with_target)
			h.target = NameStr(*PG_GETARG_NAME(4));
	});
	return h;
}

// See synthetic_release.h.
void
check_release_epsilon(double epsilon)
{
	if (!(epsilon > 0) || !std::isfinite(epsilon))
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "epsilon must be positive and finite",
		     "Give the release a positive privacy budget, e.g. 1.0.");
}

} // namespace dxpriv::pg
