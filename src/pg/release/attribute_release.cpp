// Attribute-privacy releases: dx.attr_avg / dx.attr_sum (charged to the attribute-privacy budget)
// and dx.explain_attribute. Every policy of the table adds its mechanism's noise: APGM Gaussian
// (gaussian family), Markov quilt Laplace (bayesian_network), Wasserstein Laplace
// (binary_conditional). The mathematics is in core/attribute_privacy.h, core/markov_quilt.h,
// core/wasserstein.h and core/binary_conditional.h; the policies are read by attribute_policy.cpp;
// this file reads the table and the arguments, charges and answers.
//
// What runs on stored rows: only dxpriv's own fixed statement
//   SELECT count(*), sum(dx._weigh(<point table>, 'r', <declared column>, lo, hi, step)) FROM <table>
// as the table owner: the column is the declared one named by the caller (a name, never an
// expression), each row is mapped to its point of the declared domain by the same indexer as every
// other dxpriv aggregate, and weighed by the point's value. The answer leaves only after the
// ledger worker has committed the charge.
#include "pg/release/attribute_release.h"
#include "pg/planner/explain.h"
#include "pg/executor/attribute_policy.h"
#include "pg/guard.h"
#include "pg/ledger/ledger_queue.h"
#include "pg/metadata/catalog.h"
#include "pg/metadata/protected_rows.h"
#include "pg/planner/point_lookup.h"
#include "pg/planner/row_condition.h"
#include "pg/planner/universe_eval.h"
#include "pg/settings.h"
#include "pg/metadata/extension_objects.h"
#include "pg/elevated/sealed_execution.h"
#include "pg/metadata/policy.h"
#include "pg/executor/noise_source.h"

#include "core/attribute_privacy.h"
#include "core/binary_conditional.h"
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
#include "utils/guc.h"
#include "utils/ruleutils.h"
#include "optimizer/optimizer.h"
}

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <vector>

using namespace dxpriv;
using namespace dxpriv::pg;

namespace {

// The noise of one mechanism family in a release: the largest scale its policies need (Gaussian
// sigma or Laplace b) and what it is charged (the largest epsilon and delta among its policies:
// one noise at the largest scale satisfies each of them).
struct FamilyNoise {
	bool present = false;
	double scale = 0;
	int binding = -1; // policy that set the scale (-1: scale 0)
	double epsilon = 0, delta = 0;
};

// What one policy asks of a release.
struct SecretNoise {
	double scale = 0;         // its own sigma (gaussian) or Laplace b
	double sensitivity = 0;   // Delta_i F (apgm), Delta_{A ∩ N} F of the chosen quilt, or W (sum) / W / n (avg)
	double data_variance = 0; // apgm: credited conditional variance
	double epsilon = 0, delta = 0; // charged (with a §6.5 approximation: Theorem 3's guarantee)
	std::string quilt;        // markov_quilt: the quilt chosen and its nearby set
	int64_t window = 0;       // wasserstein: protected counts at most this far apart
};

// What a release of one column (or a count) would add, and why.
struct AttributeAnalysis {
	std::string table, column;
	bool sum = false;          // a sum (a count is a sum of ones), else a mean
	bool count = false;        // dx.attr_count: the rows satisfying `condition` (empty: all rows)
	std::string condition;
	double records = 0, exact_sum = 0;
	std::vector<SecretPolicy> secrets;
	std::vector<SecretNoise> noises;   // one per secret
	FamilyNoise apgm, quilt, wasserstein;
	double epsilon = 0, delta = 0;     // charged to the attribute-privacy budget (sum over families)
	bool record_privacy = false;
	double dx_epsilon = 0, dx_scale = 0; // d_X component: Laplace scale of the answer, its epsilon
};

FamilyNoise &
family_of(AttributeAnalysis &a, AttributeFamily f)
{
	return f == AttributeFamily::Gaussian ? a.apgm : f == AttributeFamily::BayesianNetwork ? a.quilt : a.wasserstein;
}

const char *
component_name(AttributeFamily f)
{
	return f == AttributeFamily::Gaussian ? "apgm" : f == AttributeFamily::BayesianNetwork ? "markov_quilt" : "wasserstein";
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
read_attribute_table(Oid relid, const ColumnPolicy &col, bool sum_release, double &records, double &sum)
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
	std::string sql;
	pg_call([&] {
		char bounds[256];
		snprintf(bounds, sizeof bounds, "%.17g::pg_catalog.float8, %.17g::pg_catalog.float8, %.17g::pg_catalog.float8",
		         d.ordinal(0),
		         d.ordinal(d.size() - 1), d.step());
		// every name qualified (runs as the table owner under the caller's search_path)
		sql = "SELECT pg_catalog.count(*)::pg_catalog.float8, coalesce(pg_catalog.sum(dx._weigh('\\x" + hex +
		      "'::pg_catalog.bytea, 'r'::pg_catalog.text, " + quote_identifier(col.name.c_str()) + ", " + bounds +
		      ")), 0)::pg_catalog.float8 FROM " + qualified_relation_name(relid);
	});
	ProtectedRowRead read(relid, sum_release ? "dx.attr_sum" : "dx.attr_avg"); // refused with a privacy unit
	read.spi().exec_dynamic(sql.c_str());
	records = DatumGetFloat8(read.spi().value(0, 0));
	sum = DatumGetFloat8(read.spi().value(0, 1));
}

// APGM of one gaussian policy (§6.3-6.5): sigma and, with a declared approximation, the charge of
// Theorem 3.
SecretNoise
plan_gaussian(const SecretPolicy &s, const AttributeAnalysis &a)
{
	LinearAttributeQuery q;
	q.weights = Eigen::VectorXd::Unit(static_cast<Eigen::Index>(s.attributes.size()), s.column_index);
	q.sum = a.sum;
	q.records = a.records;
	const ApgmPlan plan =
	    plan_apgm_gaussian(s.covariances, {{s.secret_index, s.diameter}}, q, s.epsilon, s.delta, s.calibration);
	SecretNoise n;
	n.scale = plan.sigma;
	n.sensitivity = plan.terms[0].sensitivity;
	n.data_variance = plan.terms[0].min_conditional_variance;
	const PufferfishGuarantee g =
	    apgm_non_gaussian_guarantee(s.epsilon, s.delta, s.approximation_lambda, s.approximation_eta);
	n.epsilon = g.epsilon;
	n.delta = g.delta;
	return n;
}

std::string
name_set(const std::vector<std::string> &names, const std::vector<int> &idx)
{
	std::string out = "{";
	for (size_t k = 0; k < idx.size(); ++k)
		out += (k ? ", " : "") + names[static_cast<size_t>(idx[k])];
	return out + "}";
}

// APMQM of one bayesian_network policy (§6.6, Algorithm 3) for a release whose value depends on
// the model attributes `queried`, with exact column sensitivities `sens` (from the declared
// domains and the public row count).
SecretNoise
plan_quilt(const SecretPolicy &s, const std::vector<int> &queried, const ColumnSensitivity &sens)
{
	const MarkovQuiltPlan plan = plan_markov_quilt(s.network, {s.secret_index}, queried, s.influences, sens, s.epsilon);
	const QuiltChoice &c = plan.choices[0];
	SecretNoise n;
	n.scale = c.scale;
	std::vector<int> touched;
	for (int v : c.nearby)
		if (std::find(queried.begin(), queried.end(), v) != queried.end())
			touched.push_back(v);
	n.sensitivity = sens(touched);
	n.epsilon = s.epsilon;
	n.quilt = c.quilt.empty() && c.nearby.size() == s.attributes.size()
	              ? "trivial: all attributes nearby"
	              : name_set(s.attributes, c.quilt) + "; nearby " + name_set(s.attributes, c.nearby);
	return n;
}

// The Wasserstein mechanism of one binary_conditional policy (§6.7, Algorithm 4): W over the
// declared grid and every pair of protected counts at most diameter * n apart. Computed on each
// call (nothing cached: n is the table's current row count), refused beyond the work cap.
SecretNoise
plan_wasserstein(const SecretPolicy &s, const AttributeAnalysis &a, const Domain &d)
{
	if (d.size() != 2 || d.ordinal(0) != 0 || d.ordinal(1) != 1)
		fail(ERRCODE_INVALID_PARAMETER_VALUE,
		     "column \"" + a.column + "\" of table \"" + a.table + "\" must be declared as a 0/1 column",
		     "The binary conditional model describes 0/1 columns: the table owner declares the column with "
		     "dx.set_column(rel, col, '{\"min\": 0, \"max\": 1, \"step\": 1}', ...).");
	const int64_t n = static_cast<int64_t>(a.records);
	SecretNoise out;
	out.window = secret_window(s.diameter, n);
	double w;
	if (s.column_index == s.secret_index) {
		w = static_cast<double>(out.window); // F = g itself: point masses at a and b, W_inf = |a - b|
	} else {
		if (a.records > 100000 || binary_conditional_work(s.theta, n, out.window) > kMaxBinaryConditionalWork)
			fail(ERRCODE_PROGRAM_LIMIT_EXCEEDED,
			     "the wasserstein model of attribute \"" + s.attribute + "\" is too large for table \"" + a.table + "\"",
			     "Wasserstein releases are computed exactly for small declared models: about (grid points) x n^2 x "
			     "(n / 4 + window) must stay below 1e8; declare a coarser grid or use the gaussian or "
			     "bayesian_network family for large tables.");
		w = binary_conditional_sensitivity(s.theta, n, out.window);
	}
	out.sensitivity = a.sum ? w : w / a.records;
	out.scale = wasserstein_scale(out.sensitivity, s.epsilon);
	out.epsilon = s.epsilon;
	return out;
}

// Each family's noise (the largest scale among its policies, charged the largest epsilon and
// delta) and the release's cost: independent noises of different mechanisms add (post-processing
// for each policy's guarantee), each family is charged, the sum is the release's cost.
void
combine_noises(AttributeAnalysis &a)
{
	for (size_t k = 0; k < a.secrets.size(); ++k) {
		const SecretNoise &n = a.noises[k];
		FamilyNoise &f = family_of(a, a.secrets[k].family);
		f.present = true;
		if (n.scale > f.scale) {
			f.scale = n.scale;
			f.binding = static_cast<int>(k);
		}
		f.epsilon = std::max(f.epsilon, n.epsilon);
		f.delta = std::max(f.delta, n.delta);
		a.record_privacy = a.record_privacy || a.secrets[k].record_privacy;
	}
	for (const FamilyNoise *f : {&a.apgm, &a.quilt, &a.wasserstein}) {
		a.epsilon += f->epsilon;
		a.delta += f->delta;
	}
}

// The start of every analysis: the table's name and its policies (`column` located in each model;
// empty: none), refused when the table has none.
AttributeAnalysis
start_analysis(Oid relid, const std::string &column)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext)
		fail(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, "dxpriv is not installed in this database");
	AttributeAnalysis a;
	pg_call([&] {
		const char *rel = get_rel_name(relid);
		a.table = rel ? rel : "?";
	});
	a.secrets = load_secrets(*ext, relid, column);
	if (a.secrets.empty())
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "table \"" + a.table + "\" has no attribute-privacy policy",
		     "The table owner declares one with dx.protect_attribute.");
	return a;
}

// The d_X policy of the analysed table, which must publish its row count (the models describe
// i.i.d. draws of n records).
TablePolicy
public_count_policy(Oid relid, const AttributeAnalysis &a)
{
	TablePolicy policy;
	if (!load_table_policy(relid, policy))
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "table \"" + a.table + "\" is not protected");
	if (!std::isinf(policy.presence))
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "attribute privacy needs a public row count on table \"" + a.table + "\"",
		     "The table owner protects the table with presence 'Infinity' (dx.protect_table).");
	return policy;
}

// Validates a release of `column` of relid, reads the table's row count and sum, and computes the
// noise of every policy. Errors name the table and column, never a value.
AttributeAnalysis
analyse(Oid relid, const std::string &column, bool sum)
{
	AttributeAnalysis a = start_analysis(relid, column);
	a.column = column;
	a.sum = sum;
	for (const SecretPolicy &s : a.secrets)
		if (s.column_index < 0)
			fail(ERRCODE_INVALID_PARAMETER_VALUE,
			     "column \"" + column + "\" is not an attribute of the data model of table \"" + a.table + "\"",
			     "The attribute-privacy noise is calibrated on the declared model: the table owner lists the column "
			     "in the model's \"attributes\" (dx.protect_attribute).");
	const TablePolicy policy = public_count_policy(relid, a);
	const ColumnPolicy &col = declared_column(policy, a.table, column);
	read_attribute_table(relid, col, sum, a.records, a.exact_sum);
	if (!(a.records >= 1))
		fail(ERRCODE_NO_DATA, "table \"" + a.table + "\" has no rows",
		     "The attribute-privacy model describes tables of n >= 1 records.");

	for (size_t k = 0; k < a.secrets.size(); ++k) {
		const SecretPolicy &s = a.secrets[k];
		a.noises.push_back(s.family == AttributeFamily::Gaussian        ? plan_gaussian(s, a)
		                   : s.family == AttributeFamily::BayesianNetwork
		                       ? plan_quilt(s, {s.column_index},
		                                    single_column_sensitivity(s.column_index, col.domain.ordinal(0),
		                                                              col.domain.ordinal(col.domain.size() - 1),
		                                                              a.records, a.sum))
		                       : plan_wasserstein(s, a, col.domain));
	}
	combine_noises(a);
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

constexpr const char *kCountHint =
    "dx.attr_count(table, condition) counts the rows where a condition on declared columns of the table's Bayesian "
    "network holds, e.g. dx.attr_count('students', 'height > 168 AND sat > 1300'); NULL counts every row.";

// Row count and the number of rows whose point is present in `table` (the condition's values at
// every point of the sub-universe of `cols`), read as the table's owner by dxpriv's fixed
// statement SELECT count(*), count(<lookup>) FROM <table>: each row is only mapped to its point.
void
read_count(Oid relid, const std::vector<const ColumnPolicy *> &cols, const std::vector<std::optional<double>> &table,
           double &records, double &count)
{
	const ExtensionObjects *ext = extension_objects();
	std::string sql;
	// deparsed inside the sealed path (sealed_execution.h): every name the lookup deparses to is
	// qualified, nothing resolves through the caller's search_path; its float8 constants (a range's lo,
	// hi and step, a group's coordinates) are printed exactly: the caller's extra_float_digits (down to
	// -15: one significant digit) would otherwise move the domain the rows are mapped on away from the
	// one the condition was evaluated on
	{
		SealedScope sealed(InvalidOid);
		Expr *lookup = weigh_expr(cols, table, false, *ext);
		pg_call([&] {
			const char *rel = get_rel_name(relid);
			char *text = deparse_expression((Node *) lookup, deparse_context_for(rel ? rel : "?", relid), false, true);
			sql = std::string("SELECT pg_catalog.count(*)::pg_catalog.float8, pg_catalog.count(") + text +
			      ")::pg_catalog.float8 FROM " + qualified_relation_name(relid);
		});
	}
	{
		ProtectedRowRead read(relid, "dx.attr_count"); // refused with a privacy unit
		read.spi().exec_dynamic(sql.c_str());
		records = DatumGetFloat8(read.spi().value(0, 0));
		count = DatumGetFloat8(read.spi().value(0, 1));
	}
}

// Validates dx.attr_count(relid, condition): every policy of the table is a bayesian_network (the
// other families model means), the condition's columns are declared single columns of every
// network; the condition is evaluated on their declared points (never on a row); Algorithm 3 with
// Delta_S F = n when S meets the condition's attributes.
AttributeAnalysis
analyse_count(Oid relid, const std::string &condition)
{
	AttributeAnalysis a = start_analysis(relid, std::string());
	a.count = a.sum = true;
	a.condition = condition;
	for (const SecretPolicy &s : a.secrets)
		if (s.family != AttributeFamily::BayesianNetwork)
			fail(ERRCODE_FEATURE_NOT_SUPPORTED,
			     "dx.attr_count needs bayesian_network policies, and attribute \"" + s.attribute + "\" of table \"" +
			         a.table + "\" has a " + (s.family == AttributeFamily::Gaussian ? "gaussian" : "binary_conditional") +
			         " policy",
			     "The gaussian and binary_conditional models describe means of columns: use dx.attr_avg or "
			     "dx.attr_sum on this table.");
	const TablePolicy policy = public_count_policy(relid, a);
	Expr *e = condition.empty()
	              ? nullptr
	              : parse_row_condition(relid, policy, condition, "the condition of dx.attr_count", kCountHint);
	std::set<AttrNumber> attnos;
	if (e) {
		List *vars = pull_var_clause((Node *) e, 0);
		ListCell *lc;
		foreach (lc, vars)
			attnos.insert(static_cast<const Var *>(lfirst(lc))->varattno);
	}
	for (AttrNumber att : attnos)
		if (policy.find(att)->is_group())
			fail(ERRCODE_FEATURE_NOT_SUPPORTED, "column group " + policy.find(att)->name + " cannot be counted on",
			     kCountHint);
	std::vector<const ColumnPolicy *> cols;
	SubUniverse sub = sub_universe_of(policy, attnos, cols);
	sub.presence = policy.presence;
	const UniverseValues v = evaluate_over_universe(relid, cols, sub, {e});
	std::vector<std::optional<double>> table(sub.size());
	std::vector<double> q(sub.size(), 0.0);
	for (size_t u = 0; u < sub.size(); ++u)
		if (!v.is_null[0][u] && v.value[0][u] != 0) {
			table[u] = 1.0;
			q[u] = 1.0;
		}
	read_count(relid, cols, table, a.records, a.exact_sum);
	if (!(a.records >= 1))
		fail(ERRCODE_NO_DATA, "table \"" + a.table + "\" has no rows",
		     "The attribute-privacy model describes tables of n >= 1 records.");
	for (const SecretPolicy &s : a.secrets) {
		std::vector<int> queried;
		for (const ColumnPolicy *c : cols) {
			const auto at = std::find(s.attributes.begin(), s.attributes.end(), c->name);
			if (at == s.attributes.end())
				fail(ERRCODE_INVALID_PARAMETER_VALUE,
				     "column \"" + c->name + "\" is not an attribute of the data model of table \"" + a.table + "\"",
				     "The attribute-privacy noise is calibrated on the declared Bayesian network: the table owner "
				     "lists the column in the model's \"attributes\" (dx.protect_attribute).");
			queried.push_back(static_cast<int>(at - s.attributes.begin()));
		}
		a.noises.push_back(plan_quilt(s, queried, count_sensitivity(queried, a.records)));
	}
	combine_noises(a);
	if (a.record_privacy) {
		const double sens = generalized_sensitivity(sub, q);
		if (sens > 0) {
			a.dx_epsilon = guc_epsilon;
			a.dx_scale = sens / guc_epsilon;
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

// dx.attr_avg / dx.attr_sum / dx.attr_count: charge the analysed release durably, then answer.
double
attribute_release(Oid relid, const AttributeAnalysis &a)
{
	std::vector<ledger::Item> items;
	ledger::Item attr;
	attr.relid = relid;
	attr.budget = ledger::kAttributeBudget;
	attr.epsilon = a.epsilon;
	attr.delta = a.delta;
	// one ledger row for the attribute budget: the mechanisms and their scales, in family order
	std::string mechanism;
	if (a.apgm.present) {
		mechanism = a.apgm.scale > 0 ? "apgm(gaussian)" : "apgm(exact)";
		attr.scales.push_back(a.apgm.scale);
	}
	if (a.quilt.present) {
		mechanism += std::string(mechanism.empty() ? "" : "+") + (a.quilt.scale > 0 ? "markov_quilt(laplace)" : "markov_quilt(exact)");
		attr.scales.push_back(a.quilt.scale);
	}
	if (a.wasserstein.present) {
		mechanism += std::string(mechanism.empty() ? "" : "+") + (a.wasserstein.scale > 0 ? "wasserstein(laplace)" : "wasserstein(exact)");
		attr.scales.push_back(a.wasserstein.scale);
	}
	attr.mechanism = mechanism;
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
	const char *kind = a.count ? "count" : a.sum ? "sum" : "avg";
	const std::string argument = a.count ? (a.condition.empty() ? "NULL" : a.condition.substr(0, 1000)) : a.column;
	const std::string call = std::string("dx.attr_") + kind + "(" + a.table + ", " + argument + ")";
	char fingerprint[64];
	snprintf(fingerprint, sizeof fingerprint, "attr:%s:%u", kind, relid);
	const ledger::Reply r = ledger::charge(GetUserId(), GetSessionUserId(), fingerprint + (":" + argument), call, items);
	if (r.outcome != ledger::kCharged)
		refuse(r, a, items);
	const double exact = a.sum ? a.exact_sum : a.exact_sum / a.records;
	RandomSource &rng = backend_random();
	// independent noises, one per family present, then the d_X component (each exact at scale 0)
	double v = apgm_release(rng, exact, a.apgm.scale);
	v = laplace_release(rng, v, a.quilt.scale);
	v = laplace_release(rng, v, a.wasserstein.scale);
	return laplace_release(rng, v, a.dx_scale);
}

// What a policy protects, for explain rows.
std::string
protects(const SecretPolicy &s, const SecretNoise &n)
{
	switch (s.family) {
	case AttributeFamily::Gaussian: {
		if (s.approximation_lambda == 0 && s.approximation_eta == 0)
			return "mean of " + s.attribute;
		char approx[96];
		snprintf(approx, sizeof approx, " (approximately gaussian: lambda %g, eta %g)", s.approximation_lambda,
		         s.approximation_eta);
		return "mean of " + s.attribute + approx;
	}
	case AttributeFamily::BayesianNetwork:
		return "parameter of " + s.attribute + " (bayesian network)";
	default:
		return "mean of " + s.attribute + " (counts within " + std::to_string(n.window) + ")";
	}
}

// The explain cells of one release (see attribute_release.h).
void
add_explain_cells(const AttributeAnalysis &a, ExplainCapture &cap)
{
	const std::string kind = a.count ? "attr_count" : a.sum ? "attr_sum" : "attr_avg";
	const int aggregate = cap.cells.empty() ? 1 : cap.cells.back().aggregate + 1;
	for (size_t k = 0; k < a.secrets.size(); ++k) {
		const SecretPolicy &s = a.secrets[k];
		const FamilyNoise &f = s.family == AttributeFamily::Gaussian          ? a.apgm
		                       : s.family == AttributeFamily::BayesianNetwork ? a.quilt
		                                                                      : a.wasserstein;
		ExplainCell c;
		c.aggregate = aggregate;
		c.kind = kind;
		char diameter[40];
		snprintf(diameter, sizeof diameter, "%g", s.diameter);
		c.component = std::string(component_name(s.family)) + ": " + protects(s, a.noises[k]) +
		              (s.family == AttributeFamily::BayesianNetwork ? ", quilt " + a.noises[k].quilt
		                                                            : std::string(" (diameter ") + diameter + ")") +
		              (static_cast<int>(k) == f.binding ? ", binding" : "");
		c.epsilon = a.noises[k].epsilon;
		c.plan.scale = f.scale;
		c.linear = false;
		if (s.family == AttributeFamily::Gaussian) {
			c.plan.family = NoiseFamily::Gaussian;
			c.reported_half_width = apgm_accuracy(f.scale * f.scale, 0.05);
			c.noise = "gaussian (attribute privacy)";
		} else {
			c.plan.family = NoiseFamily::Laplace;
			c.reported_half_width = f.scale * std::log(20.0);
			c.noise = "laplace (attribute privacy)";
		}
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

namespace {
// dx.explain (planner/explain.cpp) reaches explain_attribute_calls through this registration: the
// release layer sits above the planner, which includes nothing of it (src/pg/LAYERS.md).
const bool attribute_explain_registered = (register_attribute_explain(dxpriv::pg::explain_attribute_calls), true);
} // namespace

// See attribute_release.h.
bool
dxpriv::pg::explain_attribute_calls(Query *q, ExplainCapture &cap)
{
	if (q->commandType != CMD_SELECT || q->rtable || q->jointree->quals || q->hasAggs || q->setOperations)
		return false;
	struct Call {
		Oid relid;
		std::string column; // attr_count: the condition ("" for NULL)
		bool sum, count;
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
			const bool count = fname && strcmp(fname, "attr_count") == 0;
			if (!fname || (strcmp(fname, "attr_avg") != 0 && strcmp(fname, "attr_sum") != 0 && !count) ||
			    !IsA(rel, Const) || !IsA(col, Const) || castNode(Const, rel)->constisnull ||
			    (!count && castNode(Const, col)->constisnull)) {
				other = true;
				continue;
			}
			const Const *arg = castNode(Const, col);
			calls.push_back({DatumGetObjectId(castNode(Const, rel)->constvalue),
			                 count ? (arg->constisnull ? std::string() : std::string(TextDatumGetCString(arg->constvalue)))
			                       : std::string(NameStr(*DatumGetName(arg->constvalue))),
			                 strcmp(fname, "attr_sum") == 0, count});
		}
	});
	if (other || calls.empty())
		return false;
	for (const Call &c : calls) {
		add_explain_cells(c.count ? analyse_count(c.relid, c.column) : analyse(c.relid, c.column, c.sum), cap);
		cap.relid = c.relid;
	}
	return true;
}

DX_FUNCTION(dx_attr_avg)
{
	const double v = attribute_release(PG_GETARG_OID(0), analyse(PG_GETARG_OID(0), name_arg(fcinfo, 1), false));
	PG_RETURN_FLOAT8(v);
}

DX_FUNCTION(dx_attr_sum)
{
	const double v = attribute_release(PG_GETARG_OID(0), analyse(PG_GETARG_OID(0), name_arg(fcinfo, 1), true));
	PG_RETURN_FLOAT8(v);
}

// dx.attr_count(rel, condition DEFAULT NULL): the rows where the condition holds (all rows: NULL).
DX_FUNCTION(dx_attr_count)
{
	if (PG_ARGISNULL(0))
		fail(ERRCODE_NULL_VALUE_NOT_ALLOWED, "table must not be null", kCountHint);
	std::string condition;
	if (!PG_ARGISNULL(1))
		pg_call([&] { condition = text_to_cstring(PG_GETARG_TEXT_PP(1)); });
	if (!PG_ARGISNULL(1) && condition.empty())
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "the condition of dx.attr_count must not be empty", kCountHint);
	const double v = attribute_release(PG_GETARG_OID(0), analyse_count(PG_GETARG_OID(0), condition));
	PG_RETURN_FLOAT8(v);
}

// dx.explain_attribute(rel, col, kind): one row per protected attribute, then the d_X component.
DX_FUNCTION(dx_explain_attribute)
{
	const std::string kind = text_to_cstring(PG_GETARG_TEXT_PP(2));
	if (kind != "avg" && kind != "sum")
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "kind must be 'avg' or 'sum'", "Explain dx.attr_avg or dx.attr_sum.");
	const AttributeAnalysis a = analyse(PG_GETARG_OID(0), name_arg(fcinfo, 1), kind == "sum");
	constexpr int kColumns = 14;
	pg_call([&] {
		InitMaterializedSRF(fcinfo, 0);
		ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
		for (size_t k = 0; k < a.secrets.size(); ++k) {
			const SecretPolicy &s = a.secrets[k];
			const SecretNoise &n = a.noises[k];
			const bool gaussian = s.family == AttributeFamily::Gaussian;
			const FamilyNoise &f = gaussian ? a.apgm : s.family == AttributeFamily::BayesianNetwork ? a.quilt : a.wasserstein;
			Datum values[kColumns];
			bool nulls[kColumns] = {false};
			values[0] = CStringGetTextDatum(component_name(s.family));
			values[1] = CStringGetTextDatum(protects(s, n).c_str());
			values[2] = Float8GetDatum(s.diameter);
			values[3] = Float8GetDatum(n.epsilon);
			values[4] = Float8GetDatum(n.delta);
			values[5] = Float8GetDatum(n.sensitivity);
			values[6] = Float8GetDatum(n.data_variance);
			nulls[6] = !gaussian;
			values[7] = Float8GetDatum(gaussian ? f.scale : std::sqrt(2.0) * f.scale);
			values[8] = BoolGetDatum(static_cast<int>(k) == f.binding);
			values[9] = Float8GetDatum(gaussian ? apgm_accuracy(f.scale * f.scale, 0.05) : f.scale * std::log(20.0));
			values[10] = CStringGetTextDatum("attribute");
			values[11] = CStringGetTextDatum(gaussian ? "gaussian" : "laplace");
			values[12] = Float8GetDatum(n.scale);
			values[13] = CStringGetTextDatum(n.quilt.c_str());
			nulls[13] = s.family != AttributeFamily::BayesianNetwork;
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
		if (a.record_privacy) {
			Datum values[kColumns];
			bool nulls[kColumns] = {false, false, true, false, true, true, true, false, true, false, false, false, false, true};
			values[0] = CStringGetTextDatum("d_x laplace");
			values[1] = CStringGetTextDatum(("rows of " + a.table + " (d_X policy of " + a.column + ")").c_str());
			values[3] = Float8GetDatum(a.dx_epsilon);
			values[7] = Float8GetDatum(std::sqrt(2.0) * a.dx_scale);
			values[9] = Float8GetDatum(a.dx_scale * std::log(20.0));
			values[10] = CStringGetTextDatum("d_x");
			values[11] = CStringGetTextDatum("laplace");
			values[12] = Float8GetDatum(a.dx_scale);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	});
	return (Datum) 0;
}
