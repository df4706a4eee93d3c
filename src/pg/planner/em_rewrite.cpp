// Validation, sensitivity and rewriting of dx.mode, dx.quantile and dx.median (em_rewrite.h).
#include "pg/planner/em_rewrite.h"

#include "pg/contract/param_consts.h"
#include "pg/contract/em_params.h"
#include "pg/planner/explain.h"
#include "pg/planner/group_source.h"
#include "pg/guard.h"
#include "pg/node_build.h"
#include "pg/planner/point_lookup.h"
#include "pg/contract/noise_params.h"
#include "pg/planner/universe_eval.h"
#include "pg/settings.h"
#include "pg/metadata/extension_objects.h"
#include "pg/metadata/policy.h"

#include "core/accuracy.h"
#include "core/error.h"
#include "core/exponential_mechanism.h"
#include "core/sensitivity.h"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
}

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>

namespace dxpriv::pg {

namespace {

// Largest number of candidate counts one query may hold (groups x domain points): the states
// of all groups live in memory at once (8 bytes per count).
constexpr double kMaxEmCells = 4e6;

// The domain description the index and point functions take after their first arguments (the
// A constant non-null float8 argument of a marker (evaluated at analysis time).
double
constant_argument(Aggref *a, int n, const char *what, const char *example)
{
	TargetEntry *te = castNode(TargetEntry, list_nth(a->args, n));
	const Const *e = folded_const((Node *) te->expr);
	if (!e || e->constisnull)
		fail(ERRCODE_INVALID_PARAMETER_VALUE, std::string(what) + " must be a non-null constant",
		     std::string("Write for example ") + example + ".");
	return DatumGetFloat8(e->constvalue);
}

// Validates one marker and describes it.
EmSpec
describe_em_marker(Aggref *a, int position, const TablePolicy &policy, const ExtensionObjects &ext, const EmAnalyzerHooks &hooks)
{
	const Oid f = a->aggfnoid;
	EmSpec s{a, position, "mode", EmUtility{}, guc_epsilon, nullptr, nullptr, a->aggfilter};
	int eps_arg = -1;
	if (f == ext.mode_any || f == ext.mode_any_eps) {
		eps_arg = f == ext.mode_any_eps ? 1 : -1;
	} else if (f == ext.quantile_any || f == ext.quantile_any_eps) {
		s.name = "quantile";
		s.utility.kind = EmKind::Quantile;
		const double p = constant_argument(a, 1, "quantile level of dx.quantile", "dx.quantile(age, 0.9)");
		s.utility.p_num = quantile_numerator(p);
		eps_arg = f == ext.quantile_any_eps ? 2 : -1;
	} else if (f == ext.count_distinct || f == ext.count_distinct_eps) {
		s.name = "count_distinct";
		s.utility.kind = EmKind::Distinct;
		eps_arg = f == ext.count_distinct_eps ? 1 : -1;
	} else {
		s.name = "median";
		s.utility.kind = EmKind::Quantile;
		s.utility.p_num = kQuantileOne / 2;
		eps_arg = f == ext.median_any_eps ? 1 : -1;
	}
	const std::string fn = std::string("dx.") + s.name;
	if (a->aggdistinct)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "DISTINCT inside " + fn + " is not supported",
		     "Every row counts once; write " + fn + "(column).");
	if (a->aggorder)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "ORDER BY inside " + fn + " is not supported",
		     "Candidates are the declared values of the column; write " + fn + "(column).");
	if (eps_arg >= 0)
		s.epsilon = constant_argument(a, eps_arg, ("epsilon of " + fn).c_str(), (fn + "(col, 0.5)").c_str());
	if (!(s.epsilon > 0) || std::isinf(s.epsilon))
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "epsilon must be positive and finite",
		     "Use a value such as 0.1; smaller values give more randomness and spend less budget.");

	Expr *arg = linitial_node(TargetEntry, a->args)->expr;
	if (s.utility.kind == EmKind::Distinct && !IsA(arg, Var))
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "dx.count_distinct accepts only a declared column, not an expression",
		     "The number of distinct values of an expression has no sensitivity dxpriv can bound here; count the "
		     "distinct values of a declared column (COUNT(DISTINCT age)), or GROUP BY the expression with count(*).");
	if (!IsA(arg, Var))
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, fn + " accepts only a declared column, not an expression",
		     "Its answer is one of the column's declared values; transform the answer instead, e.g. " + fn +
		         "(age) + 1.");
	hooks.check_row_expression((Node *) arg, "aggregate arguments");
	s.var = castNode(Var, arg);
	s.column = policy.find(s.var->varattno);
	if (s.column->is_group())
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, fn + " cannot use a column of a column group",
		     "A group such as (lon, lat) is a location with a vector metric; " + fn +
		         " needs a separately declared column.");
	const DomainKind k = s.column->domain.kind();
	if (k == DomainKind::Points)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, fn + " needs an enumerated, range or date domain");
	if (s.utility.kind == EmKind::Quantile && k != DomainKind::Range && k != DomainKind::Date)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED,
		     fn + " needs a column with an ordered domain, but \"" + s.column->name + "\" is declared by its values",
		     "Quantiles need a range or date domain such as {\"min\": 0, \"max\": 100, \"step\": 1}; dx.mode works on "
		     "any declared column.");
	hooks.check_row_expression((Node *) s.filter, "FILTER clauses");
	return s;
}

// Adds the attributes of one column (all members of a group) to out.
void
add_column(const ColumnPolicy &c, std::set<AttrNumber> &out)
{
	for (const ColumnPolicy::Member &m : c.members)
		out.insert(m.attnum);
	out.insert(c.attnum);
}

// Adds every column an expression reads.
void
add_expr_columns(Node *expr, const TablePolicy &policy, std::set<AttrNumber> &out)
{
	if (!expr)
		return;
	List *vars = pull_var_clause(expr, 0);
	ListCell *lc;
	foreach (lc, vars) {
		const ColumnPolicy *c = policy.find(((Var *) lfirst(lc))->varattno);
		if (c)
			add_column(*c, out);
	}
}

// What the rewrite needs of one analysed aggregate.
struct EmPlan {
	double sensitivity;
	double scale;
	EmBeta beta;
	std::vector<const ColumnPolicy *> cols;             // its sub-universe, in point-index order
	std::vector<std::optional<double>> candidate_table; // per point: the candidate index, or none
};

// S_EM of one aggregate over the columns it reads (candidate, WHERE, FILTER, GROUP BY), and the
// per-point table of the row's candidate that execution reads instead of the expressions.
EmPlan
plan_one(const EmSpec &s, const EmRewriteInput &in)
{
	std::set<AttrNumber> attnos;
	add_column(*s.column, attnos);
	add_expr_columns(in.where, *in.policy, attnos);
	add_expr_columns((Node *) s.filter, *in.policy, attnos);
	for (const ColumnPolicy *g : in.keys->cols)
		add_column(*g, attnos);
	EmPlan p;
	std::vector<const ColumnPolicy *> &cols = p.cols;
	const SubUniverse sub = sub_universe_of(*in.policy, attnos, cols);
	const size_t n = sub.size();
	UniverseValues vals = evaluate_over_universe(in.relid, cols, sub, {(Expr *) in.where, s.filter});
	std::vector<char> counted(n);
	for (size_t u = 0; u < n; ++u)
		counted[u] = vals.value[0][u] != 0 && !vals.is_null[0][u] && vals.value[1][u] != 0 && !vals.is_null[1][u];
	const size_t candidate = std::find(cols.begin(), cols.end(), s.column) - cols.begin();
	std::vector<size_t> groups;
	for (const ColumnPolicy *g : in.keys->cols)
		groups.push_back(std::find(cols.begin(), cols.end(), g) - cols.begin());
	p.sensitivity = em_utility_sensitivity(sub, counted, candidate, groups, s.utility);
	p.scale = em_scale(s.epsilon, p.sensitivity);
	p.beta = em_beta(s.epsilon, p.sensitivity);
	size_t stride = 1; // of the candidate column (last column fastest)
	for (size_t c = cols.size(); c-- > candidate + 1;)
		stride *= sub.domains[c].size();
	p.candidate_table.resize(n);
	for (size_t u = 0; u < n; ++u)
		if (counted[u])
			p.candidate_table[u] = static_cast<double>((u / stride) % sub.domains[candidate].size());
	return p;
}

struct ReplaceContext {
	std::map<Aggref *, Expr *> *replacement;
};

// Replaces the marker Aggrefs (by identity) with their rewritten expressions.
Node *
replace_mutator(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	auto *c = static_cast<ReplaceContext *>(ctx);
	if (IsA(node, Aggref)) {
		auto it = c->replacement->find(castNode(Aggref, node));
		if (it != c->replacement->end())
			return (Node *) it->second;
	}
	return expression_tree_mutator(node, reinterpret_cast<Node *(*) ()>(replace_mutator), ctx);
}

} // namespace

// See em_rewrite.h.
bool
is_em_marker(const ExtensionObjects &ext, Oid f)
{
	return f == ext.mode_any || f == ext.mode_any_eps || f == ext.quantile_any || f == ext.quantile_any_eps ||
	       f == ext.median_any || f == ext.median_any_eps || f == ext.count_distinct || f == ext.count_distinct_eps;
}

// See em_rewrite.h.
EmQuery
take_em_markers(std::vector<Aggref *> &markers, const TablePolicy &policy, const ExtensionObjects &ext,
                const EmAnalyzerHooks &hooks)
{
	EmQuery em;
	std::vector<Aggref *> rest;
	int next = 0;
	for (Aggref *a : markers) {
		if (!is_em_marker(ext, a->aggfnoid)) {
			// a repeat of an earlier linear aggregate (a HAVING copy) is the same release (linear_kind.h):
			// no place of its own
			if (std::none_of(rest.begin(), rest.end(), [a](const Aggref *r) { return equal(r, a); }))
				em.linear_positions.push_back(next++);
			rest.push_back(a);
			continue;
		}
		auto same = std::find_if(em.specs.begin(), em.specs.end(), [a](const EmSpec &s) { return equal(s.aggref, a); });
		if (same != em.specs.end())
			same->aliases.push_back(a);
		else
			em.specs.push_back(describe_em_marker(a, next++, policy, ext, hooks));
	}
	em.total = next;
	markers.swap(rest);
	return em;
}

// See em_rewrite.h.
void
em_collect_attnos(const EmQuery &em, const TablePolicy &policy, std::set<AttrNumber> &out)
{
	for (const EmSpec &s : em.specs) {
		add_column(*s.column, out);
		add_expr_columns((Node *) s.filter, policy, out);
	}
}

// See em_rewrite.h.
void
rewrite_em_aggregates(Query *q, const EmQuery &em, const EmRewriteInput &in)
{
	if (em.specs.empty())
		return;
	const ExtensionObjects &ext = *in.ext;
	const size_t groups = in.keys->groups; // plain columns: the product of their domains, in order
	const bool grouped = in.keys->grouped();

	// the linear aggregates' places among all dx aggregates (answer cache slots)
	for (size_t j = 0; j < in.linear_aggrefs.size(); ++j) {
		Const *k = aggref_params_const(in.linear_aggrefs[j]);
		if (!k)
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate parameters are not constants");
		NoiseParams p = parse_noise_params(DatumGetArrayTypeP(k->constvalue));
		p.agg_index = em.linear_positions[j];
		p.agg_count = em.total;
		k->constvalue = PointerGetDatum(build_noise_params(p));
	}

	std::map<Aggref *, Expr *> replacement;
	std::vector<ExplainCell> cells;
	double eps_total = 0;
	for (const EmSpec &s : em.specs) {
		const ColumnPolicy &col = *s.column;
		const size_t k = col.domain.size();
		if (static_cast<double>(k) * static_cast<double>(groups) > kMaxEmCells)
			fail(ERRCODE_PROGRAM_LIMIT_EXCEEDED,
			     std::string("dx.") + s.name + " over \"" + col.name + "\" would hold more than 4000000 candidate counts",
			     "Declare a coarser domain for the column or group by fewer or coarser columns.");
		EmPlan plan = plan_one(s, in);
		eps_total += s.epsilon;
		const bool distinct = s.utility.kind == EmKind::Distinct;
		if (distinct) { // Laplace noise of scale 1/(2 beta) >= S_EM / epsilon (exponential_mechanism.h)
			try {
				plan.scale = em_distinct_scale(plan.beta);
			} catch (const CoreError &e) {
				fail(ERRCODE_PROGRAM_LIMIT_EXCEEDED, e.what(), e.hint());
			}
		}

		NoiseParams p;
		p.components = 1;
		p.epsilon = s.epsilon;
		p.relid = in.relid;
		p.charge_id = 0; // set by the analyzer's stamp_identities()
		p.groups = static_cast<int>(groups);
		p.agg_index = s.position;
		p.agg_count = em.total;
		for (size_t g = 0; g < groups; ++g) {
			p.cells.push_back(1.0);
			p.cells.push_back(plan.scale);
			p.cells.push_back(0.0); // no truncation bound: the exponential mechanism is pure epsilon
		}
		encode_em_params(EmParams{s.utility, static_cast<std::uint32_t>(k), plan.beta}, p);

		// the row's candidate: read from the table at the row's point (NULL: not counted)
		const bool enumerated = col.domain.kind() == DomainKind::Enumerated;
		Expr *index = weigh_expr(plan.cols, plan.candidate_table, true, ext);
		if (grouped && !in.distributed) // the added empty-group rows create their group's state without counting (NULL)
			index = real_rows_only(index, INT4OID, nullptr);
		Aggref *a = s.aggref;
		const Oid result_collation = a->aggcollid;
		Const *params = makeConst(FLOAT8ARRAYOID, -1, InvalidOid, -1, PointerGetDatum(build_noise_params(p)), false, false);
		a->aggfnoid = ext.em_select;
		a->aggtype = INT4OID;
		a->aggcollid = InvalidOid;
		a->inputcollid = InvalidOid;
		a->aggargtypes = list_make3_oid(INT4OID, INT4OID, FLOAT8ARRAYOID);
		a->aggdirectargs = NIL;
		a->args = list_make3(makeTargetEntry(index, 1, nullptr, false),
		                     makeTargetEntry((Expr *) copy_node(in.group_index), 2, nullptr, false),
		                     makeTargetEntry((Expr *) params, 3, nullptr, false));
		a->aggorder = NIL;
		a->aggdistinct = NIL;
		a->aggstar = false;
		a->aggvariadic = false;
		a->aggfilter = nullptr;
		a->location = in.rewritten_location;

		// the chosen index back to the column's value: dx._em_point(index, NULL::type, domain); a
		// distinct count is the final function's number itself, as bigint
		List *args = lcons(a, lcons(makeNullConst(col.type, col.typmod, col.collation), domain_arg_tail(col.domain)));
		replacement[a] = distinct ? (Expr *) makeFuncExpr(F_INT8_INT4, INT8OID, list_make1(a), InvalidOid, InvalidOid,
		                                                  COERCE_IMPLICIT_CAST)
		                          : (Expr *) makeFuncExpr(enumerated ? ext.em_point_enum : ext.em_point_range, col.type,
		                                                  args, result_collation, col.collation, COERCE_EXPLICIT_CALL);
		for (Aggref *alias : s.aliases) // equal copies: the planner computes them once (one state, one draw)
			replacement[alias] = copy_node(replacement[a]);

		if (explain_capture_active()) {
			LinearNoisePlan lp;
			lp.sensitivity = plan.sensitivity;
			lp.scale = plan.scale;
			lp.grid = 1;
			lp.integer_weights = true;
			for (size_t g = 0; g < groups; ++g) {
				ExplainCell cell{s.position + 1, s.name, grouped ? in.keys->label(g) : "", distinct ? "value" : "choice",
				                 s.epsilon, lp};
				cell.reported_half_width = distinct ? confidence_half_width(lp)
				                                    : em_utility_loss_bound(plan.beta, k, std::log(20.0));
				cell.linear = false;
				if (distinct)
					cell.noise = "laplace"; // discrete Laplace, whatever dxpriv.noise says
				cells.push_back(cell);
			}
		}
	}

	ReplaceContext ctx{&replacement};
	q->targetList = (List *) replace_mutator((Node *) q->targetList, &ctx);
	q->havingQual = replace_mutator(q->havingQual, &ctx);

	if (explain_capture_active()) {
		ExplainCapture &cap = explain_capture();
		for (ExplainCell &c : cap.cells) // linear cells are numbered among the linear aggregates
			c.aggregate = em.linear_positions[c.aggregate - 1] + 1;
		cap.cells.insert(cap.cells.end(), cells.begin(), cells.end());
		std::stable_sort(cap.cells.begin(), cap.cells.end(),
		                 [](const ExplainCell &x, const ExplainCell &y) { return x.aggregate < y.aggregate; });
		cap.epsilon += eps_total;
		cap.relid = in.relid;
	}
}

} // namespace dxpriv::pg
