// Open GROUP BY keys: detach them for the analysis, put them back with private partition selection.
#include "pg/planner/open_keys.h"
#include "pg/planner/open_buckets.h"
#include "pg/planner/open_release_log.h"
#include "pg/planner/open_unit_source.h"

#include "pg/planner/explain.h"
#include "pg/planner/group_keys.h"
#include "pg/planner/group_source.h"
#include "pg/planner/point_lookup.h"
#include "pg/contract/noise_params.h"
#include "pg/contract/param_consts.h"
#include "pg/ledger/answer_cache.h"
#include "pg/metadata/policy.h"
#include "pg/guard.h"
#include "pg/node_build.h"
#include "pg/settings.h"

#include "core/partition_selection.h"

extern "C" {
#include "catalog/pg_aggregate.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "parser/parse_clause.h"
#include "utils/lsyscache.h"
}

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace dxpriv::pg::analysis {

namespace {

bool allowed = false;          // inside an OpenKeysAllowed scope
bool analysing = false;        // an active plan applies to the analysis
Oid analysing_relid = InvalidOid;
double analysing_presence = 0; // min(p0, w/2)
std::vector<AttrNumber> analysing_keys;           // the active plan's open keys
std::map<AttrNumber, AttrNumber> unit_mapping;    // privacy unit: the bounded source's columns
bool unit_source_built = false;

constexpr double kInf = std::numeric_limits<double>::infinity();

const char *kBareHint = "Group by the open column itself and select it as it is. Its values are never enumerated, so "
                        "conditions, expressions, aggregates and HAVING on it cannot be analysed; conditions on "
                        "declared columns work as usual.";

// Finds references to the open columns of range table entry 1 (whole-row references included).
struct RefScan {
	const std::set<AttrNumber> *attnums;
	int depth = 0;
	AttrNumber found = -1;
};

bool
ref_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *s = static_cast<RefScan *>(ctx);
	if (IsA(node, Var)) {
		Var *v = castNode(Var, node);
		if (v->varno == 1 && static_cast<int>(v->varlevelsup) == s->depth &&
		    (v->varattno == 0 || s->attnums->count(v->varattno))) {
			s->found = v->varattno;
			return true;
		}
		return false;
	}
	if (IsA(node, Query)) {
		++s->depth;
		const bool r = query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(ref_walker), ctx, 0);
		--s->depth;
		return r;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(ref_walker), ctx);
}

std::string
relation_name(Oid relid)
{
	char *n = get_rel_name(relid);
	return n ? n : "?";
}

// The aggregate count to write into every rewritten dx aggregate (set_rewritten_agg_count).
struct Renumber {
	const ExtensionObjects *ext;
	int count;
};

bool
renumber_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *r = static_cast<Renumber *>(ctx);
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(renumber_walker), ctx, 0);
	if (IsA(node, Aggref) && r->ext->is_internal(castNode(Aggref, node)->aggfnoid) &&
	    castNode(Aggref, node)->location == kRewrittenLocation) {
		if (Const *k = aggref_params_const(castNode(Aggref, node))) {
			NoiseParams p = parse_noise_params(DatumGetArrayTypeP(k->constvalue));
			p.agg_count = r->count;
			k->constvalue = PointerGetDatum(build_noise_params(p));
		}
		return false;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(renumber_walker), ctx);
}

int
selection_mechanism_code()
{
	return guc_partition_selection; // 0 optimal, 1 laplace
}

} // namespace

// See planner/open_keys.h.
void
set_rewritten_agg_count(Node *node, const ExtensionObjects &ext, int count)
{
	Renumber r{&ext, count};
	renumber_walker(node, &r);
}

OpenKeysAllowed::OpenKeysAllowed() : previous_(allowed)
{
	allowed = true;
}

OpenKeysAllowed::~OpenKeysAllowed()
{
	allowed = previous_;
}

// See planner/open_keys.h.
OpenKeyPlan
detach_open_keys(Query *q, const ExtensionObjects &ext)
{
	OpenKeyPlan plan;
	if (q->commandType != CMD_SELECT || q->groupClause == NIL || q->rtable == NIL)
		return plan;
	RangeTblEntry *rte = linitial_node(RangeTblEntry, q->rtable);
	if (rte->rtekind != RTE_RELATION)
		return plan;
	bool candidate = false;
	ListCell *lc;
	foreach (lc, q->groupClause) {
		TargetEntry *tle = get_sortgroupclause_tle(lfirst_node(SortGroupClause, lc), q->targetList);
		if ((IsA(tle->expr, Var) && castNode(Var, tle->expr)->varno == 1 && castNode(Var, tle->expr)->varlevelsup == 0) ||
		    IsA(tle->expr, FuncExpr)) // (a time bucket: open_buckets.h)
			candidate = true;
	}
	if (!candidate)
		return plan;
	TablePolicy policy;
	if (!load_table_policy(rte->relid, policy) || policy.open_columns.empty())
		return plan;
	std::set<AttrNumber> open;
	for (const ColumnPolicy &c : policy.open_columns)
		open.insert(c.attnum);
	std::set<AttrNumber> grouped;
	std::set<TargetEntry *> key_entries; // GROUP BY items that are an open key or its bucket
	foreach (lc, q->groupClause) {
		TargetEntry *tle = get_sortgroupclause_tle(lfirst_node(SortGroupClause, lc), q->targetList);
		bool bucket = false;
		if (const AttrNumber att = open_key_column(tle->expr, open, &bucket)) {
			grouped.insert(att);
			key_entries.insert(tle);
		}
	}
	if (grouped.empty())
		return plan;
	const std::string table = relation_name(rte->relid);
	const ColumnPolicy *first = policy.find_open(*grouped.begin());
	const std::string col = "open column \"" + first->name + "\" of table \"" + table + "\"";
	if (!allowed)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, col + " can only be grouped on in a release of its own",
		     "Run SELECT <key>, count(*), ... FROM <table> GROUP BY <key> directly, in FROM or in WITH, with or "
		     "without ROLLUP/GROUPING SETS; not in a scalar or IN subquery or a join.");
	if (q->distinctClause != NIL || q->hasWindowFuncs || q->hasTargetSRFs)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "SELECT DISTINCT, window functions and set-returning functions cannot be used "
		                                    "with " + col,
		     "Group by the open key in a plain release; its released rows are the partitions the selection kept.");
	if (list_length(q->rtable) != 1)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "joins cannot group by " + col,
		     "Group the protected table alone by its open key.");
	// (a Citus table: the candidates are counted on the workers, planner/distributed_open.h)
	if (guc_noise != 0)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "grouping by " + col + " needs laplace noise",
		     "SET dxpriv.noise = 'laplace': the selection already spends the table's delta.");
	if (!(policy.delta > 0))
		fail(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, "grouping by " + col + " needs a per-query delta",
		     "Keys are released by private partition selection, which spends delta: the table owner sets one with "
		     "dx.set_delta('" + table + "', 1e-7) and grants a delta budget with dx.grant_budget(role, '" + table +
		         "', epsilon, delta => 1e-5).");
	plan.distance = kInf;
	for (AttrNumber att : grouped) {
		const ColumnPolicy *c = policy.find_open(att);
		plan.distance = std::min(plan.distance, c->open_distance);
		plan.attnums.push_back(att);
		plan.names.push_back(c->name);
	}
	if (!std::isfinite(policy.presence) && !std::isfinite(plan.distance))
		fail(ERRCODE_INVALID_PARAMETER_VALUE, col + " is not protected: presence and its metric are both infinite",
		     "Declare the open column with a finite weight, or give the table a finite presence.");
	// the bare keys in the output stand aside; anything else that reads an open column is refused
	// (an output column that is an open key or its bucket but not grouped on is left in place: the
	// scan below refuses it)
	foreach (lc, q->targetList) {
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		bool bucket = false;
		const AttrNumber att = open_key_column(tle->expr, open, &bucket);
		if (att && grouped.count(att) && (key_entries.count(tle) || !bucket)) {
			plan.entries.push_back(tle);
			plan.resnos.push_back(tle->resno);
			plan.exprs.push_back(bucket ? guarded_bucket(tle->expr) : tle->expr);
			plan.written.push_back(tle->expr);
			Node *e = reinterpret_cast<Node *>(tle->expr);
			tle->expr = (Expr *) makeNullConst(exprType(e), exprTypmod(e), exprCollation(e));
		}
	}
	RefScan scan{&open};
	if (query_tree_walker(q, reinterpret_cast<bool (*)()>(ref_walker), &scan, 0)) {
		for (size_t i = 0; i < plan.entries.size(); ++i) // leave the query as it was
			plan.entries[i]->expr = plan.written[i];
		if (scan.found == 0)
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "whole-row references cannot be used with " + col, kBareHint);
		const ColumnPolicy *c = policy.find_open(scan.found);
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
		     "open column \"" + c->name + "\" of table \"" + table + "\" can only be a bare GROUP BY key", kBareHint);
	}
	List *kept = NIL;
	foreach (lc, q->groupClause) {
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		TargetEntry *tle = get_sortgroupclause_tle(sgc, q->targetList);
		if (std::find(plan.entries.begin(), plan.entries.end(), tle) != plan.entries.end())
			plan.clauses.push_back(sgc);
		else
			kept = lappend(kept, sgc);
	}
	q->groupClause = kept;
	plan.active = true;
	plan.relid = rte->relid;
	plan.presence = policy.presence;
	plan.delta = policy.delta;
	analysing = true;
	analysing_relid = rte->relid;
	analysing_presence = std::min(policy.presence, plan.distance / 2);
	analysing_keys = plan.attnums;
	unit_mapping.clear();
	unit_source_built = false;
	(void) ext;
	return plan;
}

// See planner/open_keys.h.
bool
groups_by_open_key(Query *q)
{
	if (q->commandType != CMD_SELECT || q->groupClause == NIL || list_length(q->rtable) != 1)
		return false;
	RangeTblEntry *rte = linitial_node(RangeTblEntry, q->rtable);
	TablePolicy policy;
	if (rte->rtekind != RTE_RELATION || !load_table_policy(rte->relid, policy) || policy.open_columns.empty())
		return false;
	std::set<AttrNumber> open;
	for (const ColumnPolicy &c : policy.open_columns)
		open.insert(c.attnum);
	ListCell *lc;
	foreach (lc, q->groupClause) {
		TargetEntry *tle = get_sortgroupclause_tle(lfirst_node(SortGroupClause, lc), q->targetList);
		bool bucket = false;
		if (open_key_column(tle->expr, open, &bucket))
			return true;
	}
	return false;
}

// See planner/open_keys.h.
void
restore_open_keys(Query *q, const OpenKeyPlan &plan, bool guarded)
{
	for (size_t i = 0; i < plan.resnos.size(); ++i) {
		TargetEntry *tle = get_tle_by_resno(q->targetList, plan.resnos[i]);
		if (!tle)
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv lost an open GROUP BY key");
		tle->expr = guarded ? plan.exprs[i] : plan.written[i];
	}
	for (SortGroupClause *sgc : plan.clauses)
		q->groupClause = lappend(q->groupClause, sgc);
}

// See planner/open_keys.h.
void
end_open_key_analysis()
{
	analysing = false;
	analysing_relid = InvalidOid;
	analysing_keys.clear();
	unit_mapping.clear();
	unit_source_built = false;
}

// See planner/open_keys.h.
void
apply_open_key_presence(TablePolicy &policy)
{
	if (!analysing || policy.relid != analysing_relid)
		return;
	policy.presence = std::min(policy.presence, analysing_presence);
	// a unit keeps its min(k, G) rows of smallest rank (open_unit_source.h): at most that many
	// partitions, with the rule of the unit bound (no group limit: a rule choosing partitions by key
	// would let a changed row displace others)
	UnitPolicy &u = policy.unit;
	if (u.present()) {
		if (u.max_groups > 0 && u.max_groups < u.max_rows)
			u.max_rows = u.max_groups;
		u.max_groups = 0;
		u.max_rows_per_group = 0;
	}
}

// See planner/open_keys.h.
std::map<AttrNumber, AttrNumber>
open_unit_source(Query *q, const UnitSource &spec)
{
	if (!analysing || spec.policy->relid != analysing_relid)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv: no open release is being rewritten");
	UnitSource open = spec;
	open.empty_groups = false;
	unit_mapping = replace_with_open_unit_source(q, open, analysing_keys);
	unit_source_built = true;
	return unit_mapping;
}

// See planner/open_keys.h.
void
resume_open_key_analysis(Oid relid, double presence, const std::vector<AttrNumber> &keys)
{
	analysing = true;
	analysing_relid = relid;
	analysing_presence = presence;
	analysing_keys = keys;
	unit_mapping.clear();
	unit_source_built = false;
}

// See planner/open_keys.h.
double
attach_open_keys(Query *q, const ExtensionObjects &ext, const ReleaseAnalysis &a, OpenKeyPlan &plan,
                 const OpenSetShare *share)
{
	if (!a.em.specs.empty())
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "dx.mode, dx.quantile and dx.median cannot be grouped by an open key yet",
		     "Use dx.count, dx.sum, dx.avg or dx.linear.");
	if (a.specs.empty())
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "a release grouped by an open key needs count, sum, avg or linear",
		     kBareHint);
	const bool unit = a.policy.unit.present();
	// (dx.count_units: a unit counts once per partition, calibrated as a count of its k' rows:
	// release_allocation.cpp unit_cells_of, open_unit_source.h)
	if (unit && !unit_source_built)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv: the bounded source of an open release is missing");
	restore_open_keys(q, plan, true);
	if (unit) // the keys are read from the bounded source
		for (AttrNumber resno : plan.resnos) {
			TargetEntry *tle = get_tle_by_resno(q->targetList, resno);
			tle->expr = (Expr *) remap_vars((Node *) tle->expr, unit_mapping);
		}
	ListCell *lc;

	// the selection's budget: S = the l1 sensitivity of the partitions' counts of rows passing
	// WHERE, on the analysis' sub-universe with presence min(p0, w/2) (which covers a change of open
	// key: two partitions, at distance >= min(w, 2 p0)); a partition's count moves by at most 1
	std::vector<double> counted(a.where_table.size(), 0.0);
	for (size_t u = 0; u < counted.size(); ++u)
		counted[u] = a.where_table[u] ? 1.0 : 0.0;
	const double sensitivity = partition_count_sensitivity(a.sub, counted, a.group_of_point);
	plan.epsilon = share ? share->epsilon : guc_epsilon;
	if (share)
		plan.delta = share->delta;
	PartitionBudget b;
	b.sensitivity = sensitivity;
	// a smaller per-partition epsilon is always safe: 50 caps the case of counts that never move
	b.epsilon = sensitivity > 0 ? std::min(50.0, plan.epsilon / sensitivity) : 50.0;
	// a changed record leaves one partition and enters another: with a finite presence that pair
	// is at distance <= 2 p0 even when the open metric is 'none', so delta is shared by two
	b.max_changed = 2;
	// a privacy unit (k' kept rows, so at most k' partitions, each counting the unit once) moves at
	// most k' counts when present or absent (distance p0 >= p0') and 2 k' when its rows change: at
	// distance >= 2 p0' when a key changes; a change within its partitions moves no more than the
	// rows' counts, which S bounds (doc/mechanisms.md, "Privacy units in open releases")
	plan.unit_partitions = unit ? static_cast<std::uint64_t>(a.policy.unit.max_rows) : 0;
	if (unit) {
		const double per_unit = static_cast<double>(plan.unit_partitions) / a.policy.presence;
		b.sensitivity = std::max(sensitivity, per_unit);
		b.epsilon = std::min(50.0, plan.epsilon / b.sensitivity);
		b.max_changed = 2 * plan.unit_partitions;
	}
	b.delta = plan.delta / static_cast<double>(b.max_changed);
	const int mech = selection_mechanism_code();
	const PartitionSelector sel(mech == 0 ? SelectionMechanism::Optimal : SelectionMechanism::Laplace, b.epsilon,
	                            b.delta);
	plan.mechanism = sel.describe();
	plan.part_epsilon = b.epsilon;
	plan.part_delta = b.delta;

	NoiseParams p;
	p.components = 1;
	p.epsilon = plan.epsilon;
	p.relid = a.relid;
	p.agg_index = share ? share->agg_index : static_cast<int>(a.specs.size());
	p.agg_count = share ? share->agg_count : static_cast<int>(a.specs.size()) + 1;
	p.groups = static_cast<int>(a.keys.groups);
	p.family = 0;
	p.delta = plan.delta;
	const double scale = mech == 1 ? sel.laplace_scale() : 1.0 / b.epsilon; // shown in the ledger
	for (size_t g = 0; g < a.keys.groups; ++g) {
		p.cells.push_back(1.0);
		p.cells.push_back(scale);
		p.cells.push_back(0.0);
	}
	set_rewritten_agg_count((Node *) q->targetList, ext, p.agg_count); // one more: the selection
	set_rewritten_agg_count(q->havingQual, ext, p.agg_count);

	Datum sel_values[3] = {Float8GetDatum(static_cast<double>(mech)), Float8GetDatum(b.epsilon),
	                       Float8GetDatum(b.delta)};
	ArrayType *sel_array = nullptr;
	pg_call([&] { sel_array = construct_array(sel_values, 3, FLOAT8OID, sizeof(double), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE); });
	Expr *weight = reduced_weigh_expr(a.cols, a.where_table, false, ext);
	if (unit) // each unit counts once per partition (DISTINCT over its hash)
		weight = unit_selection_weight(weight, a.relid, a.policy.unit);
	Aggref *agg = makeNode(Aggref);
	agg->aggfnoid = ext.partition_select;
	agg->aggtype = BOOLOID;
	agg->aggcollid = InvalidOid;
	agg->inputcollid = InvalidOid;
	agg->aggtranstype = InvalidOid;
	agg->aggargtypes = pg_value([&] { return list_make4_oid(FLOAT8OID, INT4OID, FLOAT8ARRAYOID, FLOAT8ARRAYOID); });
	agg->aggdirectargs = NIL;
	agg->args = list_make4(
	    makeTargetEntry(weight, 1, nullptr, false), makeTargetEntry(group_index_expr(a.keys, ext), 2, nullptr, false),
	    makeTargetEntry((Expr *) makeConst(FLOAT8ARRAYOID, -1, InvalidOid, -1, PointerGetDatum(build_noise_params(p)),
	                                       false, false),
	                    3, nullptr, false),
	    makeTargetEntry((Expr *) makeConst(FLOAT8ARRAYOID, -1, InvalidOid, -1, PointerGetDatum(sel_array), false, false),
	                    4, nullptr, false));
	agg->aggorder = NIL;
	agg->aggdistinct = NIL;
	agg->aggfilter = nullptr;
	agg->aggstar = false;
	agg->aggvariadic = false;
	agg->aggkind = AGGKIND_NORMAL;
	agg->agglevelsup = 0;
	agg->aggsplit = AGGSPLIT_SIMPLE;
	agg->aggno = -1;
	agg->aggtransno = -1;
	agg->location = kRewrittenLocation;
	if (unit) { // the selection reads the bounded source (weight, unit and group, all over the table's Vars)
		agg->args = (List *) remap_vars((Node *) agg->args, unit_mapping);
		make_distinct_selection(agg);
	}
	// the analyst's HAVING is evaluated only on kept partitions (CASE evaluates its condition first),
	// so that nothing it computes (an error, a slow expression) depends on a partition not released;
	// the kept partitions' answers enter dx.last_release() (open_release_log.h)
	q->havingQual = open_release_having(q, ext, (Expr *) agg, q->havingQual);
	q->hasAggs = true;
	// a fence: the planner pushes a wrapper's conditions on grouping columns into a grouped
	// subquery's WHERE, where they would run on the rows of partitions not released (an error
	// there would reveal a key); with OFFSET 0 nothing is pushed down (subquery_is_pushdown_safe)
	if (!q->limitOffset && !q->limitCount)
		q->limitOffset = (Node *) makeConst(INT8OID, -1, InvalidOid, sizeof(int64), Int64GetDatum(0), false,
		                                    FLOAT8PASSBYVAL);
	// the order of the released rows must not depend on the partitions that were not (a hash
	// aggregate returns its groups in an order that depends on every group it held): the GROUP BY
	// keys complete the ORDER BY, so the order is a function of the released rows alone
	foreach (lc, q->groupClause) {
		SortGroupClause *g = lfirst_node(SortGroupClause, lc);
		bool sorted = false;
		ListCell *sc;
		foreach (sc, q->sortClause)
			sorted = sorted || lfirst_node(SortGroupClause, sc)->tleSortGroupRef == g->tleSortGroupRef;
		if (sorted)
			continue;
		if (!OidIsValid(g->sortop))
			fail(ERRCODE_FEATURE_NOT_SUPPORTED, "the GROUP BY keys of a release grouped by an open key must be sortable",
			     "Group by columns of types with an ordering (text, numbers, dates).");
		SortGroupClause *copy = copy_node(g);
		copy->hashable = false;
		q->sortClause = lappend(q->sortClause, copy);
	}
	return plan.epsilon;
}

// See planner/open_keys.h.
void
register_open_release(const std::map<int, int64> &charge_ids, const OpenKeyPlan &plan, size_t aggregates)
{
	for (const auto &[index, id] : charge_ids)
		answer_cache_exclude(id);
	if (!explain_capture_active())
		return;
	ExplainCapture &cap = explain_capture();
	cap.epsilon += plan.epsilon;
	cap.open_delta += plan.delta; // (several open releases in one statement: each spends its delta)
	ExplainCell cell;
	cell.aggregate = static_cast<int>(aggregates) + 1;
	cell.kind = "selection";
	std::string keys;
	for (const std::string &n : plan.names)
		keys += (keys.empty() ? "" : ", ") + n;
	cell.group = "open key " + keys;
	cell.component = plan.mechanism + " per partition";
	if (plan.unit_partitions > 0)
		cell.component += ", distinct units, at most " + std::to_string(plan.unit_partitions) + " partitions per unit";
	cell.epsilon = plan.epsilon;
	cell.plan = LinearNoisePlan{};
	cell.reported_half_width = 0;
	cell.linear = false;
	cell.ledger = false;
	cap.cells.push_back(cell);
}

} // namespace dxpriv::pg::analysis
