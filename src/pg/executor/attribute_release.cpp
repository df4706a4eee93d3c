// Attribute-privacy SQL functions: dx.attr_avg / dx.attr_sum (APGM releases charged to the
// attribute-privacy budget), dx.explain_attribute, the Gaussian model check of dx.protect_attribute
// and the Wasserstein calibration. The mathematics is in core/attribute_privacy.h and
// core/wasserstein.h; this file reads the policy, the table and the arguments, charges and answers.
//
// What runs on stored rows: only dxpriv's own fixed statement
//   SELECT count(*), sum(dx._weigh(<point table>, 'r', <declared column>, lo, hi, step)) FROM <table>
// as the table owner: the column is the declared one named by the caller (a name, never an
// expression), each row is mapped to its point of the declared domain by the same indexer as every
// other dxpriv aggregate, and weighed by the point's value. The answer leaves only after the
// ledger worker has committed the charge.
#include "pg/executor/attribute_release.h"
#include "pg/guard.h"
#include "pg/ledger/ledger_queue.h"
#include "pg/metadata/catalog.h"

#include "core/attribute_privacy.h"
#include "core/markov_quilt.h"
#include "core/point_table.h"
#include "core/sensitivity.h"
#include "core/wasserstein.h"

extern "C" {
#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "nodes/nodeFuncs.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"
}

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

using namespace dxpriv;
using namespace dxpriv::pg;

namespace {

// One row of dx.attribute_policies, read for a queried column.
struct SecretPolicy {
	std::string attribute;
	double diameter = 0, epsilon = 0, delta = 0;
	ApgmCalibration calibration = ApgmCalibration::Analytic;
	bool record_privacy = true;
	int dims = 0, secret_index = -1, column_index = -1; // -1: the column is not in the model
	std::vector<Eigen::MatrixXd> covariances;
};

// What a release of one column would add, and why.
struct AttributeAnalysis {
	std::string table, column;
	bool sum = false;
	double records = 0, exact_sum = 0;
	std::vector<SecretPolicy> secrets;
	std::vector<ApgmPlan> plans;       // one per secret
	double sigma = 0;                  // APGM noise standard deviation of the answer
	double epsilon = 0, delta = 0;     // charged to the attribute-privacy budget
	int binding = -1;                  // secret that set sigma
	bool record_privacy = false;
	double dx_epsilon = 0, dx_scale = 0; // d_X component: Laplace scale of the answer, its epsilon
};

// The policies of relid, with the positions of their secret and of `column` in their models.
std::vector<SecretPolicy>
load_secrets(const ExtensionObjects &ext, Oid relid, const std::string &column)
{
	std::vector<SecretPolicy> out;
	InternalSpi spi(ext.schema_owner);
	NameData name;
	namestrcpy(&name, column.c_str());
	// every name qualified: this runs as the extension owner, under the caller's search_path; the
	// covariances are read in binary (their text form depends on the caller's extra_float_digits)
	const uint64 n = spi.exec(
	    "SELECT attribute::pg_catalog.text, diameter, epsilon, delta, calibration, record_privacy, "
	    "  pg_catalog.cardinality(attributes), pg_catalog.array_position(attributes, attribute), "
	    "  pg_catalog.array_position(attributes, $2), covariances "
	    "FROM dx.attribute_policies WHERE relid = $1 ORDER BY attribute",
	    {{OIDOID, ObjectIdGetDatum(relid)}, {NAMEOID, NameGetDatum(&name)}}, true);
	for (uint64 r = 0; r < n; ++r) {
		SecretPolicy s;
		s.attribute = spi.text(r, 0);
		s.diameter = DatumGetFloat8(spi.value(r, 1));
		s.epsilon = DatumGetFloat8(spi.value(r, 2));
		s.delta = DatumGetFloat8(spi.value(r, 3));
		s.calibration = spi.text(r, 4) == "classical" ? ApgmCalibration::Classical : ApgmCalibration::Analytic;
		s.record_privacy = DatumGetBool(spi.value(r, 5));
		s.dims = DatumGetInt32(spi.value(r, 6));
		s.secret_index = DatumGetInt32(spi.value(r, 7)) - 1;
		s.column_index = spi.is_null(r, 8) ? -1 : DatumGetInt32(spi.value(r, 8)) - 1;
		std::vector<double> flat;
		pg_call([&] {
			Datum *values;
			bool *nulls;
			int count;
			deconstruct_array(DatumGetArrayTypeP(spi.value(r, 9)), FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
			                  &values, &nulls, &count);
			for (int k = 0; k < count; ++k)
				flat.push_back(DatumGetFloat8(values[k]));
		});
		const size_t per = static_cast<size_t>(s.dims) * static_cast<size_t>(s.dims);
		if (s.dims < 1 || flat.empty() || flat.size() % per != 0)
			fail(ERRCODE_DATA_CORRUPTED, "attribute-privacy policy of table is malformed",
			     "Declare it again with dx.protect_attribute.");
		for (size_t k = 0; k < flat.size() / per; ++k)
			s.covariances.push_back(
			    Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
			        flat.data() + k * per, s.dims, s.dims));
		out.push_back(std::move(s));
	}
	return out;
}

// The declared single column named `column` (range domain), or an error.
const ColumnPolicy &
declared_column(const TablePolicy &policy, const std::string &table, const std::string &column)
{
	for (const ColumnPolicy &c : policy.columns) {
		if (c.is_group() || c.name != column)
			continue;
		if (c.domain.kind() != DomainKind::Range)
			fail(ERRCODE_FEATURE_NOT_SUPPORTED,
			     "column \"" + column + "\" of table \"" + table + "\" does not have a numeric range domain",
			     "Attribute releases average or sum a numeric column declared with {\"min\", \"max\", \"step\"}.");
		return c;
	}
	fail(ERRCODE_INVALID_PARAMETER_VALUE, "column \"" + column + "\" of table \"" + table + "\" is not declared",
	     "Attribute releases read declared columns only; the table owner declares them with dx.set_column.");
}

// Row count and sum of the column's domain points over the table, read as the table's owner by
// dxpriv's fixed statement (see the file comment).
void
read_table(Oid relid, const ColumnPolicy &col, double &records, double &sum)
{
	const Domain &d = col.domain;
	std::vector<std::optional<double>> values(d.size());
	for (size_t u = 0; u < d.size(); ++u)
		values[u] = d.ordinal(u);
	const std::string bytes = encode_point_table(values, {d.size()});
	std::string hex;
	hex.reserve(2 * bytes.size());
	static const char digits[] = "0123456789abcdef";
	for (unsigned char b : bytes) {
		hex += digits[b >> 4];
		hex += digits[b & 15];
	}
	Oid owner = InvalidOid;
	std::string sql;
	pg_call([&] {
		HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
		if (!HeapTupleIsValid(tup))
			elog(ERROR, "dxpriv: relation %u does not exist", relid);
		owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
		ReleaseSysCache(tup);
		char bounds[256];
		snprintf(bounds, sizeof bounds, "%.17g::pg_catalog.float8, %.17g::pg_catalog.float8, %.17g::pg_catalog.float8",
		         d.ordinal(0),
		         d.ordinal(d.size() - 1), d.step());
		// every name qualified (runs as the table owner under the caller's search_path)
		sql = "SELECT pg_catalog.count(*)::pg_catalog.float8, coalesce(pg_catalog.sum(dx._weigh('\\x" + hex +
		      "'::pg_catalog.bytea, 'r'::pg_catalog.text, " + quote_identifier(col.name.c_str()) + ", " + bounds +
		      ")), 0)::pg_catalog.float8 FROM " + qualified_relation_name(relid);
	});
	InternalSpi spi(owner);
	spi.exec_dynamic(sql.c_str());
	records = DatumGetFloat8(spi.value(0, 0));
	sum = DatumGetFloat8(spi.value(0, 1));
}

// Validates a release of `column` of relid and computes its noise (and, when read_values, the
// table's row count and sum). Errors name the table and column, never a value.
AttributeAnalysis
analyse(Oid relid, const std::string &column, bool sum)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext)
		fail(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, "dxpriv is not installed in this database");
	AttributeAnalysis a;
	a.column = column;
	a.sum = sum;
	pg_call([&] {
		const char *rel = get_rel_name(relid);
		a.table = rel ? rel : "?";
	});
	a.secrets = load_secrets(*ext, relid, column);
	if (a.secrets.empty())
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "table \"" + a.table + "\" has no attribute-privacy policy",
		     "The table owner declares one with dx.protect_attribute.");
	for (const SecretPolicy &s : a.secrets)
		if (s.column_index < 0)
			fail(ERRCODE_INVALID_PARAMETER_VALUE,
			     "column \"" + column + "\" is not an attribute of the data model of table \"" + a.table + "\"",
			     "The attribute-privacy noise is calibrated on the declared model: the table owner lists the column "
			     "in the model's \"attributes\" (dx.protect_attribute).");
	TablePolicy policy;
	if (!load_table_policy(relid, policy))
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "table \"" + a.table + "\" is not protected");
	if (!std::isinf(policy.presence))
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "attribute privacy needs a public row count on table \"" + a.table + "\"",
		     "The table owner protects the table with presence 'Infinity' (dx.protect_table).");
	const ColumnPolicy &col = declared_column(policy, a.table, column);
	read_table(relid, col, a.records, a.exact_sum);
	if (!(a.records >= 1))
		fail(ERRCODE_NO_DATA, "table \"" + a.table + "\" has no rows",
		     "The attribute-privacy model describes tables of n >= 1 records.");

	for (size_t k = 0; k < a.secrets.size(); ++k) {
		const SecretPolicy &s = a.secrets[k];
		LinearAttributeQuery q;
		q.weights = Eigen::VectorXd::Unit(s.dims, s.column_index);
		q.sum = sum;
		q.records = a.records;
		a.plans.push_back(plan_apgm_gaussian(s.covariances, {{s.secret_index, s.diameter}}, q, s.epsilon, s.delta,
		                                     s.calibration));
		if (a.plans.back().sigma > a.sigma) {
			a.sigma = a.plans.back().sigma;
			a.binding = static_cast<int>(k);
		}
		a.epsilon = std::max(a.epsilon, s.epsilon);
		a.delta = std::max(a.delta, s.delta);
		a.record_privacy = a.record_privacy || s.record_privacy;
	}
	if (a.record_privacy) {
		SubUniverse sub;
		sub.domains = {col.domain};
		sub.metrics = {col.metric};
		sub.presence = policy.presence;
		std::vector<double> q(col.domain.size());
		for (size_t u = 0; u < q.size(); ++u)
			q[u] = col.domain.ordinal(u);
		const double s = generalized_sensitivity(sub, q);
		if (s > 0) {
			a.dx_epsilon = guc_epsilon;
			a.dx_scale = s / guc_epsilon / (sum ? 1.0 : a.records);
		}
	}
	return a;
}

// Raises the error for a refused charge (nothing was charged).
[[noreturn]] void
refuse(const ledger::Reply &r, const AttributeAnalysis &a, const std::vector<ledger::Item> &items)
{
	const size_t t = static_cast<size_t>(r.failed_table) < items.size() ? static_cast<size_t>(r.failed_table) : 0;
	const bool attribute = items[t].budget == ledger::kAttributeBudget;
	const std::string which = attribute ? "attribute-privacy budget" : "privacy budget";
	std::string who = "?";
	pg_call([&] {
		if (const char *name = GetUserNameFromId(GetUserId(), true))
			who = name;
	});
	char detail[200];
	switch (r.outcome) {
	case ledger::kNoBudget:
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "role \"" + who + "\" has no " + which + " on table \"" + a.table + "\"",
		     attribute ? "The table owner can grant one with dx.grant_attribute_budget('" + who + "', '" + a.table +
		                     "', 2.0)."
		               : "The table owner can grant one with dx.grant_budget('" + who + "', '" + a.table + "', 1.0).");
	case ledger::kExhausted:
	case ledger::kDeltaExhausted: {
		const bool d = r.outcome == ledger::kDeltaExhausted;
		snprintf(detail, sizeof detail, "The release needs %s %g; %g remains.", d ? "delta" : "epsilon",
		         d ? items[t].delta : items[t].epsilon, r.remaining);
		fail(ERRCODE_INSUFFICIENT_RESOURCES,
		     std::string(d ? "delta of the " : "") + which + " of role \"" + who + "\" on table \"" + a.table +
		         "\" is exhausted",
		     attribute ? "Ask the table owner for more attribute-privacy budget (dx.grant_attribute_budget)."
		               : "Use a smaller dxpriv.epsilon for the d_X component or ask the table owner for more budget.",
		     detail);
	}
	case ledger::kOverCap:
		snprintf(detail, sizeof detail, "The d_X component needs epsilon %g; the cap is %g per query.", items[t].epsilon,
		         r.cap);
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "query epsilon exceeds the per-query cap of table \"" + a.table + "\"",
		     "Use a smaller epsilon (SET dxpriv.epsilon).", detail);
	default:
		fail(ERRCODE_SYSTEM_ERROR, "the privacy budget ledger is unavailable",
		     "No answer was released. Retry; if this persists, see the server log of the \"dxpriv ledger\" worker.",
		     "The ledger reported: " + (r.message.empty() ? std::string("unknown failure") : r.message) + ".");
	}
}

// dx.attr_avg / dx.attr_sum: analyse, charge durably, then answer.
double
attribute_release(Oid relid, const std::string &column, bool sum)
{
	const AttributeAnalysis a = analyse(relid, column, sum);
	std::vector<ledger::Item> items;
	ledger::Item attr;
	attr.relid = relid;
	attr.budget = ledger::kAttributeBudget;
	attr.epsilon = a.epsilon;
	attr.delta = a.delta;
	attr.mechanism = a.sigma > 0 ? "apgm(gaussian)" : "apgm(exact)";
	attr.scales = {a.sigma};
	items.push_back(attr);
	if (a.dx_scale > 0) {
		ledger::Item dx;
		dx.relid = relid;
		dx.budget = ledger::kDxBudget;
		dx.epsilon = a.dx_epsilon;
		dx.mechanism = "laplace(grid)";
		dx.scales = {a.dx_scale};
		items.push_back(dx);
	}
	const std::string call = std::string("dx.attr_") + (sum ? "sum" : "avg") + "(" + a.table + ", " + column + ")";
	char fingerprint[64];
	snprintf(fingerprint, sizeof fingerprint, "attr:%s:%u", sum ? "sum" : "avg", relid);
	const ledger::Reply r = ledger::charge(GetUserId(), GetSessionUserId(), fingerprint + (":" + column), call, items);
	if (r.outcome != ledger::kCharged)
		refuse(r, a, items);
	const double exact = sum ? a.exact_sum : a.exact_sum / a.records;
	RandomSource &rng = backend_random();
	const double with_attribute_noise = apgm_release(rng, exact, a.sigma);
	return laplace_release(rng, with_attribute_noise, a.dx_scale);
}

// The explain cells of one release (see attribute_release.h).
void
add_explain_cells(const AttributeAnalysis &a, ExplainCapture &cap)
{
	const std::string kind = a.sum ? "attr_sum" : "attr_avg";
	const int aggregate = cap.cells.empty() ? 1 : cap.cells.back().aggregate + 1;
	for (size_t k = 0; k < a.secrets.size(); ++k) {
		ExplainCell c;
		c.aggregate = aggregate;
		c.kind = kind;
		char diameter[40];
		snprintf(diameter, sizeof diameter, "%g", a.secrets[k].diameter);
		c.component = "apgm: mean of " + a.secrets[k].attribute + " (diameter " + diameter + ")" +
		              (static_cast<int>(k) == a.binding ? ", binding" : "");
		c.epsilon = a.secrets[k].epsilon;
		c.plan.scale = a.sigma;
		c.plan.family = NoiseFamily::Gaussian;
		c.reported_half_width = apgm_accuracy(a.sigma * a.sigma, 0.05);
		c.linear = false;
		c.noise = "gaussian (attribute privacy)";
		cap.cells.push_back(c);
	}
	if (a.record_privacy) {
		ExplainCell c;
		c.aggregate = aggregate;
		c.kind = kind;
		c.component = "d_x: rows of " + a.table;
		c.epsilon = a.dx_epsilon;
		c.plan.scale = a.dx_scale;
		c.reported_half_width = a.dx_scale * std::log(20.0);
		c.linear = false;
		c.noise = "laplace";
		cap.cells.push_back(c);
	}
	cap.epsilon = std::max(cap.epsilon, a.epsilon);
	cap.delta = std::max(cap.delta, a.delta);
	cap.attribute = true;
	cap.strategy = "none";
}

std::string
name_arg(FunctionCallInfo fcinfo, int n)
{
	return NameStr(*PG_GETARG_NAME(n));
}

} // namespace

// See attribute_release.h.
bool
dxpriv::pg::explain_attribute_calls(Query *q, ExplainCapture &cap)
{
	if (q->commandType != CMD_SELECT || q->rtable || q->jointree->quals || q->hasAggs || q->setOperations)
		return false;
	struct Call {
		Oid relid;
		std::string column;
		bool sum;
	};
	std::vector<Call> calls;
	bool other = false;
	pg_call([&] {
		const Oid dx = get_namespace_oid("dx", true);
		ListCell *lc;
		foreach (lc, q->targetList) {
			Node *e = (Node *) lfirst_node(TargetEntry, lc)->expr;
			if (!IsA(e, FuncExpr) || get_func_namespace(castNode(FuncExpr, e)->funcid) != dx ||
			    list_length(castNode(FuncExpr, e)->args) != 2) {
				other = true;
				continue;
			}
			FuncExpr *f = castNode(FuncExpr, e);
			const char *fname = get_func_name(f->funcid);
			Node *rel = (Node *) linitial(f->args), *col = (Node *) lsecond(f->args);
			if (!fname || (strcmp(fname, "attr_avg") != 0 && strcmp(fname, "attr_sum") != 0) || !IsA(rel, Const) ||
			    !IsA(col, Const) || castNode(Const, rel)->constisnull || castNode(Const, col)->constisnull) {
				other = true;
				continue;
			}
			calls.push_back({DatumGetObjectId(castNode(Const, rel)->constvalue),
			                 NameStr(*DatumGetName(castNode(Const, col)->constvalue)), strcmp(fname, "attr_sum") == 0});
		}
	});
	if (other || calls.empty())
		return false;
	for (const Call &c : calls) {
		add_explain_cells(analyse(c.relid, c.column, c.sum), cap);
		cap.relid = c.relid;
	}
	return true;
}

DX_FUNCTION(dx_attr_avg)
{
	const double v = attribute_release(PG_GETARG_OID(0), name_arg(fcinfo, 1), false);
	PG_RETURN_FLOAT8(v);
}

DX_FUNCTION(dx_attr_sum)
{
	const double v = attribute_release(PG_GETARG_OID(0), name_arg(fcinfo, 1), true);
	PG_RETURN_FLOAT8(v);
}

// dx.explain_attribute(rel, col, kind): one row per protected attribute, then the d_X component.
DX_FUNCTION(dx_explain_attribute)
{
	const std::string kind = text_to_cstring(PG_GETARG_TEXT_PP(2));
	if (kind != "avg" && kind != "sum")
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "kind must be 'avg' or 'sum'", "Explain dx.attr_avg or dx.attr_sum.");
	const AttributeAnalysis a = analyse(PG_GETARG_OID(0), name_arg(fcinfo, 1), kind == "sum");
	const double half_width = apgm_accuracy(a.sigma * a.sigma, 0.05);
	pg_call([&] {
		InitMaterializedSRF(fcinfo, 0);
		ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
		for (size_t k = 0; k < a.secrets.size(); ++k) {
			const ApgmTerm &t = a.plans[k].terms[0];
			Datum values[11];
			bool nulls[11] = {false};
			values[0] = CStringGetTextDatum("apgm");
			values[1] = CStringGetTextDatum(("mean of " + a.secrets[k].attribute).c_str());
			values[2] = Float8GetDatum(a.secrets[k].diameter);
			values[3] = Float8GetDatum(a.secrets[k].epsilon);
			values[4] = Float8GetDatum(a.secrets[k].delta);
			values[5] = Float8GetDatum(t.sensitivity);
			values[6] = Float8GetDatum(t.min_conditional_variance);
			values[7] = Float8GetDatum(a.sigma);
			values[8] = BoolGetDatum(static_cast<int>(k) == a.binding);
			values[9] = Float8GetDatum(half_width);
			values[10] = CStringGetTextDatum("attribute");
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
		if (a.record_privacy) {
			Datum values[11];
			bool nulls[11] = {false, false, true, false, true, true, true, false, true, false, false};
			values[0] = CStringGetTextDatum("d_x laplace");
			values[1] = CStringGetTextDatum(("rows of " + a.table + " (d_X policy of " + a.column + ")").c_str());
			values[3] = Float8GetDatum(a.dx_epsilon);
			values[7] = Float8GetDatum(std::sqrt(2.0) * a.dx_scale);
			values[9] = Float8GetDatum(a.dx_scale * std::log(20.0));
			values[10] = CStringGetTextDatum("d_x");
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	});
	return (Datum) 0;
}

// dx._check_gaussian_model(rel, attributes, covariances, matrices): see sql/55_attribute.sql.
DX_FUNCTION(dx_check_gaussian_model)
{
	const Oid relid = PG_GETARG_OID(0);
	ArrayType *names = PG_GETARG_ARRAYTYPE_P(1);
	ArrayType *covs = PG_GETARG_ARRAYTYPE_P(2);
	const int matrices = PG_GETARG_INT32(3);
	Datum *name_values = nullptr, *cov_values = nullptr;
	bool *name_nulls = nullptr, *cov_nulls = nullptr;
	int m = 0, entries = 0;
	std::vector<std::string> attributes;
	pg_call([&] {
		deconstruct_array(names, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR, &name_values, &name_nulls, &m);
		deconstruct_array(covs, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &cov_values, &cov_nulls, &entries);
		for (int i = 0; i < m; ++i) {
			if (name_nulls[i])
				continue;
			const char *attname = NameStr(*DatumGetName(name_values[i]));
			const AttrNumber att = get_attnum(relid, attname);
			if (att == InvalidAttrNumber)
				ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
				                errmsg("model attribute \"%s\" is not a column of table \"%s\"", attname, get_rel_name(relid)),
				                errhint("Name the table's columns in the model's \"attributes\".")));
			const Oid type = get_atttype(relid, att);
			if (type != INT2OID && type != INT4OID && type != INT8OID && type != FLOAT4OID && type != FLOAT8OID &&
			    type != NUMERICOID)
				ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
				                errmsg("model attribute \"%s\" is not a numeric column", attname),
				                errhint("A Gaussian model describes numeric columns (integer, numeric or floating point).")));
			attributes.emplace_back(attname);
		}
	});
	if (static_cast<int>(attributes.size()) != m)
		fail(ERRCODE_NULL_VALUE_NOT_ALLOWED, "model attributes must not be null", "Name a column of the table.");
	for (int i = 0; i < m; ++i)
		for (int j = i + 1; j < m; ++j)
			if (attributes[i] == attributes[j])
				fail(ERRCODE_INVALID_PARAMETER_VALUE, "model attribute \"" + attributes[i] + "\" is listed twice",
				     "List each column once; the covariance has one row and column per attribute.");
	if (matrices < 1 || entries != matrices * m * m)
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "every covariance must have one row and one column per attribute",
		     "Give an m x m matrix for m attributes.");
	std::vector<double> flat(static_cast<size_t>(entries));
	for (int k = 0; k < entries; ++k)
		flat[static_cast<size_t>(k)] = DatumGetFloat8(cov_values[k]);
	for (int k = 0; k < matrices; ++k)
		validate_covariance(Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
		    flat.data() + static_cast<size_t>(k) * m * m, m, m));
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

std::vector<std::string>
text_array(ArrayType *a)
{
	std::vector<std::string> out;
	pg_call([&] {
		Datum *values;
		bool *nulls;
		int n;
		deconstruct_array(a, TEXTOID, -1, false, TYPALIGN_INT, &values, &nulls, &n);
		for (int i = 0; i < n; ++i) {
			if (nulls[i])
				ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("attribute names must not be null"),
				                errhint("Name attributes of the declared network.")));
			out.push_back(TextDatumGetCString(values[i]));
		}
	});
	return out;
}

// Index of a declared attribute, or an error naming it.
int
attribute_index(const std::vector<std::string> &names, const std::string &name)
{
	for (size_t i = 0; i < names.size(); ++i)
		if (names[i] == name)
			return static_cast<int>(i);
	fail(ERRCODE_INVALID_PARAMETER_VALUE, "\"" + name + "\" is not an attribute of the network",
	     "Use the names listed in the network's \"attributes\".");
}

ArrayType *
names_array(const std::vector<std::string> &all, const std::vector<int> &idx)
{
	ArrayType *out = nullptr;
	pg_call([&] {
		std::vector<Datum> d;
		for (int i : idx)
			d.push_back(CStringGetTextDatum(all[static_cast<size_t>(i)].c_str()));
		out = construct_array(d.data(), static_cast<int>(d.size()), TEXTOID, -1, false, TYPALIGN_INT);
	});
	return out;
}

} // namespace

// dx._markov_quilt_scale(...): see sql/55_attribute.sql.
DX_FUNCTION(dx_markov_quilt_scale)
{
	AttributeNetwork net;
	net.names = text_array(PG_GETARG_ARRAYTYPE_P(0));
	const std::vector<std::string> edges = text_array(PG_GETARG_ARRAYTYPE_P(1));
	const std::vector<std::string> sensitive = text_array(PG_GETARG_ARRAYTYPE_P(2));
	const std::vector<std::string> queried = text_array(PG_GETARG_ARRAYTYPE_P(3));
	const std::vector<std::string> infl_attr = text_array(PG_GETARG_ARRAYTYPE_P(4));
	const std::vector<std::string> infl_quilt = text_array(PG_GETARG_ARRAYTYPE_P(5));
	std::vector<double> infl_value;
	pg_call([&] {
		Datum *values;
		bool *nulls;
		int n;
		deconstruct_array(PG_GETARG_ARRAYTYPE_P(6), FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &values, &nulls, &n);
		for (int i = 0; i < n; ++i)
			infl_value.push_back(DatumGetFloat8(values[i]));
	});
	const double records = PG_GETARG_FLOAT8(7), epsilon = PG_GETARG_FLOAT8(8);
	if (!(records >= 0) || !std::isfinite(records))
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "records must be finite and non-negative",
		     "A count changes by at most the number of records.");
	validate_network(net); // names first: the lookups below rely on them
	for (size_t e = 0; e + 1 < edges.size(); e += 2)
		net.edges.emplace_back(attribute_index(net.names, edges[e]), attribute_index(net.names, edges[e + 1]));
	std::vector<int> sens, query;
	for (const std::string &s : sensitive)
		sens.push_back(attribute_index(net.names, s));
	for (const std::string &q : queried)
		query.push_back(attribute_index(net.names, q));
	QuiltInfluences influences;
	for (size_t k = 0; k < infl_attr.size() && k < infl_quilt.size() && k < infl_value.size(); ++k) {
		std::vector<int> members;
		size_t pos = 0;
		while (pos <= infl_quilt[k].size()) {
			size_t end = infl_quilt[k].find(',', pos);
			if (end == std::string::npos)
				end = infl_quilt[k].size();
			members.push_back(attribute_index(net.names, infl_quilt[k].substr(pos, end - pos)));
			pos = end + 1;
		}
		std::sort(members.begin(), members.end());
		influences[attribute_index(net.names, infl_attr[k])][members] = infl_value[k];
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
