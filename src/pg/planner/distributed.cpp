// Citus distributed tables: split releases, exposed charges, owner execution (distributed.h).
#include "pg/planner/distributed.h"

#include "pg/analyst/analyst_guard.h"
#include "pg/executor/agg_support.h"
#include "pg/executor/noise_params.h"
#include "pg/executor/point_table_cache.h"
#include "pg/guard.h"
#include "pg/plan_walk.h"
#include "pg/metadata/catalog.h"
#include "pg/elevated/sealed_execution.h"
#include "pg/planner/node_build.h"

#include "core/linear_query.h"
#include "core/point_table.h"

extern "C" {
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_proc.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/fmgroids.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

#include <limits>
#include <map>
#include <optional>
#include <vector>
#include <set>
#include <string>

namespace dxpriv::pg {

namespace {

// How Citus holds a table (pg_dist_partition, pg_dist_shard).
struct CitusTable {
	bool citus = false;
	char method = 0;  // 'h' hash, 'r' range, 'a' append, 'n' none (reference, single-shard, local)
	int64 shards = 0;
};

// True when Citus's metadata exists in this database (a syscache lookup).
bool
citus_installed()
{
	return OidIsValid(get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE));
}

// Citus's view of relid; not a Citus table when Citus is not installed in this database.
CitusTable
citus_table(const ExtensionObjects &ext, Oid relid)
{
	CitusTable t;
	if (!citus_installed())
		return t;
	InternalSpi spi(ext.schema_owner);
	if (spi.exec("SELECT p.partmethod::pg_catalog.text, (SELECT pg_catalog.count(*) FROM pg_catalog.pg_dist_shard s "
	             "WHERE s.logicalrelid OPERATOR(pg_catalog.=) p.logicalrelid) FROM pg_catalog.pg_dist_partition p "
	             "WHERE p.logicalrelid OPERATOR(pg_catalog.=) $1",
	             {{OIDOID, ObjectIdGetDatum(relid)}}, true) == 0)
		return t;
	t.citus = true;
	t.method = spi.text(0, 0).empty() ? 0 : spi.text(0, 0)[0];
	t.shards = DatumGetInt64(spi.value(0, 1));
	return t;
}

// True for the noisy linear aggregates the analyzer places (not yet split).
bool
is_linear_release_aggref(const ExtensionObjects &ext, Node *node)
{
	if (!IsA(node, Aggref))
		return false;
	Oid f = castNode(Aggref, node)->aggfnoid;
	return ((f == ext.noisy_count || f == ext.noisy_sum || f == ext.noisy_avg) &&
	        list_length(castNode(Aggref, node)->args) == 3) ||
	       (f == ext.noisy_avg_pairs && list_length(castNode(Aggref, node)->args) == 4);
}

struct SplitContext {
	const ExtensionObjects *ext;
	List *releases = NIL;
	List *shipments = NIL; // dx._store_point_table(digest, table) markers, one per large table
	std::map<Oid, CitusTable> tables;
	std::set<const FuncExpr *> every_row; // releases whose weight is never NULL: count(*) counts their rows
	bool single_level = false; // the statement is one query level on the Citus table (shard pruning)
	int depth = 0;
};

const CitusTable &
table_of(SplitContext &c, Oid relid)
{
	auto it = c.tables.find(relid);
	if (it == c.tables.end())
		it = c.tables.emplace(relid, citus_table(*c.ext, relid)).first;
	return it->second;
}

// ---- GROUP BY: every declared group from one state per aggregate ----

struct GroupedReleases {
	const ExtensionObjects *ext;
	std::vector<FuncExpr *> releases; // at this query level, in order of appearance
};

// Collects the releases of one query level (not inside sublinks' queries).
bool
collect_level_releases(Node *node, void *ctx)
{
	if (!node || IsA(node, Query))
		return false;
	auto *g = static_cast<GroupedReleases *>(ctx);
	if (IsA(node, FuncExpr) && g->ext->is_release(castNode(FuncExpr, node)->funcid)) {
		g->releases.push_back(castNode(FuncExpr, node));
		return false;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(collect_level_releases), ctx);
}

struct OuterContext {
	const GroupedReleases *found;
	Node *group_index;
	Oid partial_type;
	bool stray_var = false;
};

Var *
group_var()
{
	return makeVar(2, 1, INT4OID, -1, InvalidOid, 0);
}

// Mutator writing the outer query's expressions: a release reads its aggregate's state from the
// inner query (column j of range table entry 1) for the group of the row of generate_series
// (range table entry 2); the group index expression becomes that group.
Node *
outer_mutator(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	auto *c = static_cast<OuterContext *>(ctx);
	if (IsA(node, FuncExpr) && c->found->ext->is_release(castNode(FuncExpr, node)->funcid)) {
		FuncExpr *f = castNode(FuncExpr, node);
		for (size_t j = 0; j < c->found->releases.size(); ++j)
			if (c->found->releases[j] == f) {
				Var *state = makeVar(1, static_cast<AttrNumber>(j + 1), c->partial_type, -1, InvalidOid, 0);
				return (Node *) makeFuncExpr(f->funcid, f->funcresulttype,
				                             list_make3(state, copy_node(lsecond(f->args)), group_var()), InvalidOid,
				                             InvalidOid, COERCE_EXPLICIT_CALL);
			}
	}
	if (equal(node, c->group_index))
		return (Node *) group_var();
	if (IsA(node, Var) && castNode(Var, node)->varlevelsup == 0)
		c->stray_var = true;
	return expression_tree_mutator(node, reinterpret_cast<Node *(*) ()>(outer_mutator), ctx);
}

// generate_series(0, groups - 1) AS dx_groups(g), a range table entry.
RangeTblEntry *
groups_rte(int groups)
{
	FuncExpr *series = makeFuncExpr(F_GENERATE_SERIES_INT4_INT4, INT4OID,
	                                 list_make2(int4_const(0), int4_const(groups - 1)), InvalidOid, InvalidOid,
	                                 COERCE_EXPLICIT_CALL);
	series->funcretset = true;
	RangeTblFunction *rtf = makeNode(RangeTblFunction);
	rtf->funcexpr = (Node *) series;
	rtf->funccolcount = 1;
	RangeTblEntry *rte = makeNode(RangeTblEntry);
	rte->rtekind = RTE_FUNCTION;
	rte->functions = list_make1(rtf);
	rte->alias = makeAlias("dx_groups", list_make1(makeString(pstrdup("g"))));
	rte->eref = copy_node(rte->alias);
	rte->inFromCl = true;
	return rte;
}

// ---- native partial sums: PostgreSQL's sum(bigint) on the workers ----

// The arguments of a release's partial aggregate dx._partial(weight, group, params): its sums can be
// native, one bigint per row (dx._units), the row's weight in its cell's grid units.
struct NativePartial {
	Expr *weight;
	Expr *pairs; // an average over a join with public tables: the row's number of joined pairs (else nullptr)
	Expr *group;
	Const *params;
	NoiseParams p;
	bool every_row; // the weight is never NULL: an average counts its rows with count(*)
	Oid units_fn;   // dx._units(float8, float8)
};

bool
native_partial(FuncExpr *release, const SplitContext &c, NativePartial &out)
{
	const ExtensionObjects &ext = *c.ext;
	out.every_row = c.every_row.count(release) > 0;
	out.units_fn = ext.units;
	Node *a = static_cast<Node *>(linitial(release->args));
	if (!IsA(a, Aggref) || castNode(Aggref, a)->aggfnoid != ext.partial || castNode(Aggref, a)->agglevelsup != 0 ||
	    list_length(castNode(Aggref, a)->args) < 3 || castNode(Aggref, a)->aggfilter)
		return false;
	Aggref *agg = castNode(Aggref, a);
	out.weight = linitial_node(TargetEntry, agg->args)->expr;
	out.pairs = list_length(agg->args) == 4 ? lfourth_node(TargetEntry, agg->args)->expr : nullptr;
	out.group = lsecond_node(TargetEntry, agg->args)->expr;
	out.params = release_params_const((Node *) release, ext);
	if (!out.params)
		return false;
	out.p = parse_noise_params(DatumGetArrayTypeP(out.params->constvalue));
	return true;
}

// True when every group's value cell has the same grid (one constant grid for every row).
bool
one_grid(const NoiseParams &p)
{
	for (int g = 1; g < p.groups; ++g)
		if (p.grid(g, 0) != p.grid(0, 0))
			return false;
	return true;
}

// ---- building the subqueries of native partials ----

// GROUP BY the int4 target entry whose ressortgroupref is `ref` (hashable, as the parser builds it).
SortGroupClause *
int4_group_clause(Index ref)
{
	SortGroupClause *by = makeNode(SortGroupClause);
	by->tleSortGroupRef = ref;
	by->eqop = Int4EqualOperator;
	by->sortop = Int4LessOperator;
	by->hashable = true;
	return by;
}

// A copy of level q that returns `targets` grouped by the first `keys` of them (int4), without the
// level's own HAVING, ORDER BY, DISTINCT, LIMIT or shard-pruning conjuncts: the workers' share.
Query *
grouped_by_first(Query *q, List *targets, int keys = 1)
{
	Query *inner = copy_node(q);
	inner->targetList = targets;
	inner->groupClause = NIL;
	for (int k = 0; k < keys; ++k) {
		static_cast<TargetEntry *>(list_nth(targets, k))->ressortgroupref = static_cast<Index>(k + 1);
		inner->groupClause = lappend(inner->groupClause, int4_group_clause(static_cast<Index>(k + 1)));
	}
	inner->havingQual = nullptr;
	inner->sortClause = NIL;
	inner->distinctClause = NIL;
	inner->hasDistinctOn = false;
	inner->limitCount = nullptr;
	inner->limitOffset = nullptr;
	inner->hasAggs = true;
	inner->hasSubLinks = false;
	inner->canSetTag = false;
	if (inner->jointree)
		inner->jointree->quals = nullptr;
	return inner;
}

// `sub` as a range table entry named `alias` with columns `colnames`.
RangeTblEntry *
subquery_rte(Query *sub, const char *alias, List *colnames)
{
	RangeTblEntry *rte = makeNode(RangeTblEntry);
	rte->rtekind = RTE_SUBQUERY;
	rte->subquery = sub;
	rte->alias = makeAlias(alias, NIL);
	rte->eref = makeAlias(alias, colnames);
	rte->inFromCl = true;
	return rte;
}

// SELECT <targets> FROM <rte>: an aggregate level on the coordinator (targets added by the caller).
Query *
aggregate_over(RangeTblEntry *rte)
{
	Query *q = makeNode(Query);
	q->commandType = CMD_SELECT;
	q->querySource = QSRC_ORIGINAL;
	q->rtable = list_make1(rte);
	RangeTblRef *ref = makeNode(RangeTblRef);
	ref->rtindex = 1;
	q->jointree = makeFromExpr(list_make1(ref), nullptr);
	q->hasAggs = true;
	return q;
}

// An internal aggregate fn(args...) over the given argument expressions, as the parser builds it.
Aggref *
internal_aggref(Oid fn, Oid result, std::initializer_list<std::pair<Expr *, Oid>> args)
{
	Aggref *a = makeNode(Aggref);
	a->aggfnoid = fn;
	a->aggtype = result;
	AttrNumber i = 1;
	for (const auto &[e, type] : args) {
		a->aggargtypes = lappend_oid(a->aggargtypes, type);
		a->args = lappend(a->args, makeTargetEntry(e, i++, nullptr, false));
	}
	a->aggkind = AGGKIND_NORMAL;
	a->aggsplit = AGGSPLIT_SIMPLE;
	a->aggno = a->aggtransno = -1;
	a->location = -1;
	return a;
}

// agg(arg) as the parser would build it (one argument, no ORDER BY, FILTER or DISTINCT).
Aggref *
simple_aggref(Oid fn, Oid result, Expr *arg, Oid arg_type)
{
	return internal_aggref(fn, result, {{arg, arg_type}});
}

// count(*).
Aggref *
count_star()
{
	Aggref *a = internal_aggref(F_COUNT_, INT8OID, {});
	a->aggstar = true;
	return a;
}

// The per-point table of a weight dx._weigh(<constant table>, ...), or nothing for other weights
// (the view reads the constant's bytes, which live as long as the plan).
std::optional<PointTableView>
inline_point_table(Node *w, const ExtensionObjects &ext)
{
	if (!IsA(w, FuncExpr) || castNode(FuncExpr, w)->funcid != ext.weigh)
		return std::nullopt;
	Node *t = static_cast<Node *>(linitial(castNode(FuncExpr, w)->args));
	if (!IsA(t, Const) || castNode(Const, t)->constisnull)
		return std::nullopt;
	bytea *b = DatumGetByteaPP(castNode(Const, t)->constvalue);
	return PointTableView(reinterpret_cast<const unsigned char *>(VARDATA_ANY(b)), VARSIZE_ANY_EXHDR(b));
}

// True when weight w is the same value at every point that contributes: a non-NULL constant, or a
// lookup dx._weigh in an inline per-point table whose present points all hold one value (a count's
// table: 1 where the statement's conditions hold). `value` is that value; `every` says whether every
// point contributes (the weight is then never NULL). O(points) once per plan.
bool
uniform_weight(Node *w, const ExtensionObjects &ext, double &value, bool &every)
{
	if (IsA(w, Const)) {
		value = castNode(Const, w)->constisnull ? 0 : DatumGetFloat8(castNode(Const, w)->constvalue);
		every = true;
		return !castNode(Const, w)->constisnull && castNode(Const, w)->consttype == FLOAT8OID;
	}
	const std::optional<PointTableView> view = inline_point_table(w, ext);
	if (!view)
		return false;
	bool found = false;
	every = true;
	for (std::size_t u = 0; u < view->size(); ++u) {
		double v;
		if (!view->lookup(u, v)) {
			every = false;
			continue;
		}
		if (found && v != value)
			return false;
		value = v;
		found = true;
	}
	return found;
}

// numeric(count(*)) * k, or numeric(count(weight)) * k: the units sum of a weight that is k grid
// units at every row it counts (uniform_weight), without a per-row dx._units.
Expr *
counted_units(const NativePartial &n, bool every, int64 k)
{
	Aggref *rows = every ? count_star() : simple_aggref(F_COUNT_ANY, INT8OID, copy_node(n.weight), FLOAT8OID);
	Expr *as_numeric = (Expr *) makeFuncExpr(F_NUMERIC_INT8, NUMERICOID, list_make1(rows), InvalidOid, InvalidOid,
	                                         COERCE_EXPLICIT_CAST);
	Datum kd = DirectFunctionCall1(int8_numeric, Int64GetDatum(k));
	Const *kc = makeConst(NUMERICOID, -1, InvalidOid, -1, kd, false, false);
	return (Expr *) makeFuncExpr(F_NUMERIC_MUL, NUMERICOID, list_make2(as_numeric, kc), InvalidOid, InvalidOid,
	                             COERCE_EXPLICIT_CALL);
}

// sum(dx._units(weight, grid)), or sum(dx._units(weight, group, grids)) when the groups' grids
// differ: the exact sum of a cell's weights in grid units (numeric). A weight that is one value at
// every counted point (a count) becomes count * units instead (counted_units): the same exact sum.
Expr *
units_sum(const ExtensionObjects &ext, const NativePartial &n)
{
	FuncExpr *u;
	double value = 0;
	bool every = false;
	if (one_grid(n.p) && !n.pairs && uniform_weight((Node *) n.weight, ext, value, every)) {
		const __int128 k = to_grid_units(value, n.p.grid(0, 0));
		if (k <= std::numeric_limits<int64>::max() && k >= std::numeric_limits<int64>::min())
			return counted_units(n, every, static_cast<int64>(k));
	}
	if (one_grid(n.p)) {
		u = makeFuncExpr(ext.units, INT8OID, list_make2(copy_node(n.weight), float8_const(n.p.grid(0, 0))), InvalidOid,
		                 InvalidOid, COERCE_EXPLICIT_CALL);
	} else {
		std::vector<Datum> grids;
		for (int g = 0; g < n.p.groups; ++g)
			grids.push_back(Float8GetDatum(n.p.grid(g, 0)));
		ArrayType *arr = construct_array(grids.data(), static_cast<int>(grids.size()), FLOAT8OID, sizeof(float8),
		                                 FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
		Const *c = makeConst(FLOAT8ARRAYOID, -1, InvalidOid, -1, PointerGetDatum(arr), false, false);
		u = makeFuncExpr(ext.units_by_group, INT8OID, list_make3(copy_node(n.weight), copy_node(n.group), c),
		                 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	}
	return (Expr *) simple_aggref(F_SUM_INT8, NUMERICOID, (Expr *) u, INT8OID);
}

// count(weight) for an average's count component (count(*) when no point is filtered out: the
// weight is then looked up once per row, for the sum); over a join with public tables, the sum of
// the rows' pairs (integers, on count grids of 1: split_mutator refuses others); a NULL bigint for
// other releases.
Expr *
rows_count(const NativePartial &n)
{
	if (n.p.components < 2)
		return (Expr *) makeNullConst(INT8OID, -1, InvalidOid);
	if (n.pairs) {
		FuncExpr *u = makeFuncExpr(n.units_fn, INT8OID, list_make2(copy_node(n.pairs), float8_const(1.0)), InvalidOid,
		                           InvalidOid, COERCE_EXPLICIT_CALL);
		return (Expr *) makeFuncExpr(F_INT8_NUMERIC, INT8OID,
		                             list_make1(simple_aggref(F_SUM_INT8, NUMERICOID, (Expr *) u, INT8OID)), InvalidOid,
		                             InvalidOid, COERCE_EXPLICIT_CAST);
	}
	if (n.every_row)
		return (Expr *) count_star();
	return (Expr *) simple_aggref(F_COUNT_ANY, INT8OID, copy_node(n.weight), FLOAT8OID);
}

// True when a weight expression is never NULL: a constant, or a lookup in an inline per-point
// table where every point contributes (rows are mapped to points, NULL values included).
bool
never_null_weight(Node *w, const ExtensionObjects &ext)
{
	if (IsA(w, Const))
		return !castNode(Const, w)->constisnull;
	const std::optional<PointTableView> view = inline_point_table(w, ext);
	return view && view->every_point_contributes();
}

// Mutator of a query level without GROUP BY: each release of one group reads its state from
// dx._state_of(sum(dx._units(w, grid)), count(w), params, group), which Citus splits into sums on
// the workers and the state on the coordinator.
Node *
native_ungrouped_mutator(Node *node, void *ctx)
{
	if (!node || IsA(node, Query)) // other levels were visited on their own
		return node;
	const auto *c = static_cast<const SplitContext *>(ctx);
	const ExtensionObjects *ext = c->ext;
	if (IsA(node, FuncExpr) && ext->is_release(castNode(FuncExpr, node)->funcid)) {
		FuncExpr *f = castNode(FuncExpr, node);
		NativePartial n;
		if (!native_partial(f, *c, n) || n.p.groups != 1 || !IsA(lthird(f->args), Const))
			return node;
		FuncExpr *r = copy_node(f);
		linitial(r->args) = makeFuncExpr(ext->state_of, ext->linear_partial_type,
		                                 list_make4(units_sum(*ext, n), rows_count(n), copy_node(n.params),
		                                            copy_node(static_cast<Node *>(lthird(f->args)))),
		                                 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
		return (Node *) r;
	}
	return expression_tree_mutator(node, reinterpret_cast<Node *(*) ()>(native_ungrouped_mutator), ctx);
}

// For every_group_from_one_state, when every release's sums can be native and all share one group
// expression: SELECT dx._collect(x.g, x.u1, x.n1, params1) AS p1, ... FROM (SELECT g(row) AS g,
// sum(dx._units(w1, grid1)) AS u1, count(w1) AS n1, ... FROM t WHERE ... GROUP BY 1) x. Citus runs
// the inner query as PostgreSQL's own grouped sums on the workers; dx._collect builds the state
// of every group on the coordinator. nullptr when the sums cannot be native.
Query *
native_grouped_partials(Query *q, const std::vector<FuncExpr *> &releases, const SplitContext &c)
{
	const ExtensionObjects &ext = *c.ext;
	std::vector<NativePartial> parts(releases.size());
	for (size_t j = 0; j < releases.size(); ++j)
		if (!native_partial(releases[j], c, parts[j]) || !equal(parts[j].group, parts[0].group))
			return nullptr;
	List *targets = list_make1(makeTargetEntry(copy_node(parts[0].group), 1, pstrdup("g"), false));
	List *colnames = list_make1(makeString(pstrdup("g")));
	for (size_t j = 0; j < parts.size(); ++j) {
		const auto col = static_cast<AttrNumber>(list_length(targets) + 1);
		targets = lappend(targets, makeTargetEntry(units_sum(ext, parts[j]), col, psprintf("u%zu", j + 1), false));
		targets = lappend(targets, makeTargetEntry(rows_count(parts[j]), col + 1, psprintf("n%zu", j + 1), false));
		colnames = lappend(colnames, makeString(psprintf("u%zu", j + 1)));
		colnames = lappend(colnames, makeString(psprintf("n%zu", j + 1)));
	}
	Query *collect = aggregate_over(subquery_rte(grouped_by_first(q, targets), "dx_native", colnames));
	for (size_t j = 0; j < parts.size(); ++j) {
		const auto u = static_cast<AttrNumber>(2 + 2 * j);
		Aggref *a = internal_aggref(ext.collect, ext.linear_partial_type,
		                            {{(Expr *) makeVar(1, 1, INT4OID, -1, InvalidOid, 0), INT4OID},
		                             {(Expr *) makeVar(1, u, NUMERICOID, -1, InvalidOid, 0), NUMERICOID},
		                             {(Expr *) makeVar(1, u + 1, INT8OID, -1, InvalidOid, 0), INT8OID},
		                             {(Expr *) copy_node(parts[j].params), FLOAT8ARRAYOID}});
		collect->targetList = lappend(collect->targetList, makeTargetEntry((Expr *) a, static_cast<AttrNumber>(j + 1),
		                                                                   psprintf("p%zu", j + 1), false));
	}
	return collect;
}

// A grouped release on a Citus table, analysed without the local plan's empty row per group:
// SELECT keys, dx._release_*(dx._partial(w, g(row), params), params, g(row)) FROM t GROUP BY g(row)
// becomes
// SELECT keys(g), dx._release_*(s.p1, params, g) FROM (SELECT dx._collect(x.g, x.u1, x.n1, params)
//   AS p1 FROM (SELECT g(row) AS g, sum(dx._units(w, grid)) AS u1, count(w) AS n1 FROM t GROUP BY 1) x)
//   s, generate_series(0, G - 1) AS dx_groups(g) [WHERE having] [ORDER BY ...] [LIMIT ...]
// so Citus runs PostgreSQL's grouped sums on the workers (native_grouped_partials), dx._collect
// gathers every group's sums into one state on the coordinator, and every declared group is
// released there, empty ones included, exactly as the local plan's groups.
Query *
every_group_from_one_state(Query *q, const SplitContext &c)
{
	const ExtensionObjects &ext = *c.ext;
	GroupedReleases found{&ext, {}};
	collect_level_releases((Node *) q->targetList, &found);
	collect_level_releases(q->havingQual, &found);
	if (found.releases.empty())
		return q;
	if (list_length(q->rtable) != 1 || linitial_node(RangeTblEntry, q->rtable)->rtekind != RTE_RELATION ||
	    q->groupingSets != NIL || q->hasWindowFuncs || q->hasTargetSRFs || q->cteList != NIL)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "this grouped query cannot run on a Citus table yet",
		     "Group a distributed table's dx aggregates by declared columns or expressions of them, without "
		     "GROUPING SETS, window functions or set-returning functions in the same query level; wrap the "
		     "query in a subquery for post-processing.");
	Node *group_index = static_cast<Node *>(lthird(found.releases.front()->args));
	Const *k0 = release_params_const((Node *) found.releases.front(), ext);
	const int groups = parse_noise_params(DatumGetArrayTypeP(k0->constvalue)).groups;

	Query *inner = native_grouped_partials(q, found.releases, c);
	if (!inner) // (the releases of one level share its group index)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv cannot split the releases of this grouped query for Citus",
		     "Nothing was charged. Report this query to the dxpriv maintainers.");

	OuterContext oc{&found, group_index, ext.linear_partial_type};
	Query *outer = copy_node(q);
	outer->targetList = (List *) outer_mutator((Node *) q->targetList, &oc);
	Node *having = outer_mutator(q->havingQual, &oc);
	if (oc.stray_var)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv left a column reference outside the aggregates of a distributed query");
	RangeTblEntry *sub = makeNode(RangeTblEntry);
	sub->rtekind = RTE_SUBQUERY;
	sub->subquery = inner;
	List *colnames = NIL;
	for (size_t j = 0; j < found.releases.size(); ++j)
		colnames = lappend(colnames, makeString(psprintf("p%zu", j + 1)));
	sub->alias = makeAlias("dx_partials", NIL);
	sub->eref = makeAlias("dx_partials", colnames);
	sub->inFromCl = true;
	outer->rtable = list_make2(sub, groups_rte(groups));
	RangeTblRef *r1 = makeNode(RangeTblRef), *r2 = makeNode(RangeTblRef);
	r1->rtindex = 1;
	r2->rtindex = 2;
	outer->jointree = makeFromExpr(list_make2(r1, r2), having);
	outer->havingQual = nullptr;
	outer->groupClause = NIL;
	outer->hasAggs = false;
	return outer;
}

// True when node holds a noisy linear aggregate that was not split (at this query level).
bool
has_unsplit_release(Node *node, void *ctx)
{
	if (!node || IsA(node, Query))
		return false;
	if (is_linear_release_aggref(*static_cast<const ExtensionObjects *>(ctx), node))
		return true;
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(has_unsplit_release), ctx);
}

// True when the query holds an internal dx aggregate at any level.
bool
has_internal_aggref(Node *node, void *ctx)
{
	if (!node)
		return false;
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(has_internal_aggref), ctx, 0);
	if (IsA(node, Aggref) && static_cast<const ExtensionObjects *>(ctx)->is_internal(castNode(Aggref, node)->aggfnoid))
		return true;
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(has_internal_aggref), ctx);
}

// Mutator of a partial aggregate's arguments: a per-point table of kShipThreshold bytes or more
// is replaced by its SHA-256 (dx._weigh_cached), the table travelling once per worker instead of in
// every shard's task query.
Node *
by_digest_mutator(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	auto *c = static_cast<SplitContext *>(ctx);
	if (IsA(node, FuncExpr) &&
	    (castNode(FuncExpr, node)->funcid == c->ext->weigh || castNode(FuncExpr, node)->funcid == c->ext->weigh_int)) {
		FuncExpr *f = castNode(FuncExpr, node);
		Node *t = static_cast<Node *>(linitial(f->args));
		if (IsA(t, Const) && !castNode(Const, t)->constisnull) {
			bytea *table = DatumGetByteaPP(castNode(Const, t)->constvalue);
			if (VARSIZE_ANY_EXHDR(table) >= kShipThreshold) {
				bytea *digest = sha256_of(VARDATA_ANY(table), VARSIZE_ANY_EXHDR(table));
				Const *d = makeConst(BYTEAOID, -1, InvalidOid, -1, PointerGetDatum(digest), false, false);
				FuncExpr *cached = copy_node(f);
				cached->funcid = f->funcid == c->ext->weigh ? c->ext->weigh_cached : c->ext->weigh_int_cached;
				linitial(cached->args) = d;
				c->shipments = lappend(c->shipments, makeFuncExpr(c->ext->store_point_table, BOOLOID,
				                                                  list_make2(copy_node(d), copy_node(t)), InvalidOid,
				                                                  InvalidOid, COERCE_EXPLICIT_CALL));
				return (Node *) cached;
			}
		}
	}
	return expression_tree_mutator(node, reinterpret_cast<Node *(*) ()>(by_digest_mutator), ctx);
}

// Refuses a Citus table that Citus answers on a single node (reference, single-shard, one shard).
void
refuse_single_node(const CitusTable &t, Oid relid)
{
	if (!t.citus || (t.method != 'n' && t.shards >= 2))
		return;
	const char *name = get_rel_name(relid);
	fail(ERRCODE_FEATURE_NOT_SUPPORTED,
	     std::string("dx aggregates cannot run on Citus table \"") + (name ? name : "?") +
	         "\", which Citus answers on a single node",
	     "Citus sends a query on a reference table, a single-shard table or a table with one shard whole to "
	     "one node, and dxpriv releases answers only on the coordinator that charged them. Distribute the "
	     "table by a column over several shards (create_distributed_table), or undistribute it "
	     "(undistribute_table).");
}

// ---- dx.mode, dx.quantile, dx.median: candidate counts on the workers ----

// The exponential-mechanism aggregates of one query level (not inside sublinks' queries).
bool
collect_level_em(Node *node, void *ctx)
{
	if (!node || IsA(node, Query))
		return false;
	auto *found = static_cast<std::pair<const ExtensionObjects *, std::vector<Aggref *>> *>(ctx);
	if (IsA(node, Aggref) && castNode(Aggref, node)->aggfnoid == found->first->em_select &&
	    castNode(Aggref, node)->agglevelsup == 0) {
		for (Aggref *seen : found->second)
			if (equal(seen, node))
				return false;
		found->second.push_back(castNode(Aggref, node));
		return false;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(collect_level_em), ctx);
}

struct EmOuterContext {
	const std::vector<Aggref *> *ems;
	Node *group_index = nullptr; // grouped: the row's output group, read from column 1 of the first subquery
	bool stray_var = false;
};

// Mutator of the outer query: each dx._em_select(...) becomes the chosen index of its subquery
// (column `sel`: 1 ungrouped, 2 grouped), the group index expression that subquery's group.
Node *
em_outer_mutator(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	auto *c = static_cast<EmOuterContext *>(ctx);
	if (IsA(node, Aggref))
		for (size_t j = 0; j < c->ems->size(); ++j)
			if (equal(node, (*c->ems)[j]))
				return (Node *) makeVar(static_cast<int>(j + 1), c->group_index ? 2 : 1, INT4OID, -1, InvalidOid, 0);
	if (c->group_index && equal(node, c->group_index))
		return (Node *) makeVar(1, 1, INT4OID, -1, InvalidOid, 0);
	if (IsA(node, Var) && castNode(Var, node)->varlevelsup == 0)
		c->stray_var = true;
	return expression_tree_mutator(node, reinterpret_cast<Node *(*) ()>(em_outer_mutator), ctx);
}

// int4 a = int4 b.
Expr *
int4_equal(Expr *a, Expr *b)
{
	return make_opclause(Int4EqualOperator, BOOLOID, false, a, b, InvalidOid, InvalidOid);
}

// The middle level of a grouped exponential mechanism on a Citus table: every declared group's
// state, empty ones included (a group without rows meets a NULL candidate, which creates its state):
// SELECT dx_groups.g, dx._em_collect(x.c, dx_groups.g, params, x.n) AS sel
//   FROM generate_series(0, G - 1) dx_groups(g) LEFT JOIN (<counts>) x ON x.g = dx_groups.g
//   GROUP BY dx_groups.g
Query *
em_every_group(Query *counts, int groups, Const *params, const ExtensionObjects &ext, Aggref *&collect)
{
	Query *mid = makeNode(Query);
	mid->commandType = CMD_SELECT;
	mid->querySource = QSRC_ORIGINAL;
	RangeTblEntry *series = groups_rte(groups);
	RangeTblEntry *x = subquery_rte(counts, "dx_counts", list_make3(makeString(pstrdup("g")), makeString(pstrdup("c")),
	                                                              makeString(pstrdup("n"))));
	RangeTblEntry *join = makeNode(RangeTblEntry);
	join->rtekind = RTE_JOIN;
	join->jointype = JOIN_LEFT;
	join->joinmergedcols = 0;
	join->joinaliasvars = list_make4(makeVar(1, 1, INT4OID, -1, InvalidOid, 0), makeVar(2, 1, INT4OID, -1, InvalidOid, 0),
	                                 makeVar(2, 2, INT4OID, -1, InvalidOid, 0), makeVar(2, 3, INT8OID, -1, InvalidOid, 0));
	join->joinleftcols = list_make1_int(1);
	join->joinrightcols = list_make3_int(1, 2, 3);
	join->eref = makeAlias("unnamed_join", list_make4(makeString(pstrdup("g")), makeString(pstrdup("g")),
	                                                 makeString(pstrdup("c")), makeString(pstrdup("n"))));
	join->inFromCl = true;
	mid->rtable = list_make3(series, x, join);
	JoinExpr *je = makeNode(JoinExpr);
	je->jointype = JOIN_LEFT;
	RangeTblRef *l = makeNode(RangeTblRef), *r = makeNode(RangeTblRef);
	l->rtindex = 1;
	r->rtindex = 2;
	je->larg = (Node *) l;
	je->rarg = (Node *) r;
	je->quals = (Node *) int4_equal((Expr *) makeVar(2, 1, INT4OID, -1, InvalidOid, 0),
	                                (Expr *) makeVar(1, 1, INT4OID, -1, InvalidOid, 0));
	je->rtindex = 3;
	mid->jointree = makeFromExpr(list_make1(je), nullptr);
	collect = internal_aggref(ext.em_collect, INT4OID,
	                          {{(Expr *) makeVar(2, 2, INT4OID, -1, InvalidOid, 0), INT4OID},
	                           {(Expr *) makeVar(1, 1, INT4OID, -1, InvalidOid, 0), INT4OID},
	                           {(Expr *) copy_node(params), FLOAT8ARRAYOID},
	                           {(Expr *) makeVar(2, 3, INT8OID, -1, InvalidOid, 0), INT8OID}});
	TargetEntry *g = makeTargetEntry((Expr *) makeVar(1, 1, INT4OID, -1, InvalidOid, 0), 1, pstrdup("g"), false);
	g->ressortgroupref = 1;
	mid->targetList = list_make2(g, makeTargetEntry((Expr *) collect, 2, pstrdup("sel"), false));
	mid->groupClause = list_make1(int4_group_clause(1));
	mid->hasAggs = true;
	return mid;
}

// A query level without GROUP BY whose dx aggregates are dx.mode/quantile/median on a Citus table
// (the analyzer allows no other dx aggregate beside them):
// SELECT ... dx._em_point(dx._em_select(c(row), 0, params), ...) ... FROM t
// becomes
// SELECT ... dx._em_point(s1.sel, ...) ... FROM (SELECT dx._em_collect(x.c, 0, params, x.n) AS sel
//   FROM (SELECT c(row) AS c, count(*) AS n FROM t GROUP BY 1) x) s1, ...
// so the workers count the rows of each candidate with PostgreSQL's own grouped count, and the
// exponential mechanism draws on the coordinator, from the counts, for the statement it charged.
Query *
em_from_counts(Query *q, SplitContext &c)
{
	std::pair<const ExtensionObjects *, std::vector<Aggref *>> found{c.ext, {}};
	collect_level_em((Node *) q->targetList, &found);
	collect_level_em(q->havingQual, &found);
	if (found.second.empty())
		return q;
	Const *k0 = aggref_params_const(found.second.front());
	if (!k0 || !table_of(c, parse_noise_params(DatumGetArrayTypeP(k0->constvalue)).relid).citus)
		return q;
	if (q->groupingSets != NIL || list_length(q->rtable) != 1 ||
	    linitial_node(RangeTblEntry, q->rtable)->rtekind != RTE_RELATION || q->hasWindowFuncs || q->hasTargetSRFs ||
	    q->cteList != NIL)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "this dx.mode, dx.quantile or dx.median query cannot run on a Citus table yet",
		     "On a distributed table, ask for them without GROUPING SETS, window functions or set-returning functions "
		     "in the same query level; wrap the query in a subquery for post-processing.");
	const bool grouped = q->groupClause != NIL;
	const std::vector<Aggref *> &ems = found.second;
	Node *group_index = (Node *) lsecond_node(TargetEntry, ems.front()->args)->expr;
	List *rtable = NIL, *from = NIL;
	Node *same_group = nullptr; // grouped: every subquery's group equals the first one's
	for (size_t j = 0; j < ems.size(); ++j) {
		Aggref *em = ems[j];
		Const *params = aggref_params_const(em);
		Node *group = (Node *) lsecond_node(TargetEntry, em->args)->expr;
		if (!params || IsA(group, Const) == grouped || (grouped && !equal(group, group_index)))
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv exponential mechanism parameters are not constants");
		// innermost: the candidate of each row (its table by digest when large) and its row count,
		// per output group when grouped (the group index by digest as well)
		Node *candidate = by_digest_mutator(copy_node((Node *) linitial_node(TargetEntry, em->args)->expr), &c);
		Query *mid;
		Aggref *collect;
		if (grouped) {
			Node *g = by_digest_mutator(copy_node(group), &c);
			Query *counts = grouped_by_first(q,
			                                 list_make3(makeTargetEntry((Expr *) g, 1, pstrdup("g"), false),
			                                            makeTargetEntry((Expr *) candidate, 2, pstrdup("c"), false),
			                                            makeTargetEntry((Expr *) count_star(), 3, pstrdup("n"), false)),
			                                 2);
			mid = em_every_group(counts, parse_noise_params(DatumGetArrayTypeP(params->constvalue)).groups, params,
			                     *c.ext, collect);
		} else {
			Query *inner = grouped_by_first(q, list_make2(makeTargetEntry((Expr *) candidate, 1, pstrdup("c"), false),
			                                              makeTargetEntry((Expr *) count_star(), 2, pstrdup("n"), false)));
			// middle: the exponential mechanism's state from the counts, its draw in the final function
			mid = aggregate_over(
			    subquery_rte(inner, "dx_counts", list_make2(makeString(pstrdup("c")), makeString(pstrdup("n")))));
			collect = internal_aggref(c.ext->em_collect, INT4OID,
			                          {{(Expr *) makeVar(1, 1, INT4OID, -1, InvalidOid, 0), INT4OID},
			                           {(Expr *) copy_node(group), INT4OID},
			                           {(Expr *) copy_node(params), FLOAT8ARRAYOID},
			                           {(Expr *) makeVar(1, 2, INT8OID, -1, InvalidOid, 0), INT8OID}});
			mid->targetList = list_make1(makeTargetEntry((Expr *) collect, 1, pstrdup("sel"), false));
		}
		c.releases = lappend(c.releases, copy_node(collect)); // charged and exposed like a release
		List *cols = grouped ? list_make2(makeString(pstrdup("g")), makeString(pstrdup("sel")))
		                     : list_make1(makeString(pstrdup("sel")));
		rtable = lappend(rtable, subquery_rte(mid, psprintf("dx_em%zu", j + 1), cols));
		RangeTblRef *r = makeNode(RangeTblRef);
		r->rtindex = static_cast<int>(j + 1);
		from = lappend(from, r);
		if (grouped && j > 0) {
			Expr *eq = int4_equal((Expr *) makeVar(static_cast<int>(j + 1), 1, INT4OID, -1, InvalidOid, 0),
			                      (Expr *) makeVar(1, 1, INT4OID, -1, InvalidOid, 0));
			same_group = same_group ? (Node *) make_andclause(list_make2(same_group, eq)) : (Node *) eq;
		}
	}
	EmOuterContext oc{&ems, grouped ? group_index : nullptr};
	Query *outer = copy_node(q);
	outer->targetList = (List *) em_outer_mutator((Node *) q->targetList, &oc);
	Node *having = em_outer_mutator(q->havingQual, &oc);
	if (oc.stray_var)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv left a column reference outside the aggregates of a distributed query");
	if (same_group)
		having = having ? (Node *) make_andclause(list_make2(same_group, having)) : same_group;
	outer->rtable = rtable;
	outer->jointree = makeFromExpr(from, having);
	outer->havingQual = nullptr;
	outer->groupClause = NIL;
	outer->hasAggs = false;
	return outer;
}

// Mutator behind split_distributed_releases.
Node *
split_mutator(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	auto *c = static_cast<SplitContext *>(ctx);
	if (IsA(node, Query)) {
		c->depth++;
		Query *q = query_tree_mutator(castNode(Query, node), reinterpret_cast<Node *(*) ()>(split_mutator), ctx, 0);
		c->depth--;
		GroupedReleases here{c->ext, {}};
		collect_level_releases((Node *) q->targetList, &here);
		if (!here.releases.empty() && q->jointree && (c->depth > 0 || !c->single_level))
			q->jointree->quals = nullptr; // shard-pruning conjuncts only where Citus can prune (shard_pruning.h)
		if (q->groupClause != NIL && list_length(q->rtable) == 1 &&
		    linitial_node(RangeTblEntry, q->rtable)->rtekind == RTE_RELATION &&
		    expression_tree_walker((Node *) q->targetList, reinterpret_cast<bool (*)()>(has_unsplit_release), const_cast<ExtensionObjects *>(c->ext)))
			// analysed for a Citus table (no empty row per group in its source), planned for one that is not
			fail(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
			     "the table of this grouped dx query is no longer distributed by Citus",
			     "Run the statement again (PREPARE it again): it is analysed for how the table is stored now.");
		Query *em = em_from_counts(q, *c);
		if (em != q)
			return (Node *) em;
		if (q->groupClause != NIL)
			return (Node *) every_group_from_one_state(q, *c);
		q->targetList = (List *) native_ungrouped_mutator((Node *) q->targetList, c);
		q->havingQual = native_ungrouped_mutator(q->havingQual, c);
		return (Node *) q;
	}
	if (IsA(node, Aggref) && castNode(Aggref, node)->aggfnoid == c->ext->em_select) {
		if (Const *k = aggref_params_const(castNode(Aggref, node)))
			refuse_single_node(table_of(*c, parse_noise_params(DatumGetArrayTypeP(k->constvalue)).relid),
			                   parse_noise_params(DatumGetArrayTypeP(k->constvalue)).relid);
	}
	if (is_linear_release_aggref(*c->ext, node)) {
		Aggref *a = castNode(Aggref, node);
		Const *k = aggref_params_const(a);
		if (!k)
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate parameters are not constants");
		const NoiseParams p = parse_noise_params(DatumGetArrayTypeP(k->constvalue));
		const CitusTable &t = table_of(*c, p.relid);
		if (!t.citus)
			return node;
		refuse_single_node(t, p.relid);
		Aggref *part = copy_node(a);
		part->args = (List *) by_digest_mutator((Node *) part->args, c);
		part->aggfnoid = c->ext->partial;
		part->aggtype = c->ext->linear_partial_type;
		part->aggtranstype = InvalidOid;
		const Oid fn = a->aggfnoid == c->ext->noisy_count                                          ? c->ext->release_count
		               : a->aggfnoid == c->ext->noisy_avg || a->aggfnoid == c->ext->noisy_avg_pairs ? c->ext->release_avg
		                                                                                            : c->ext->release_sum;
		if (a->aggfnoid == c->ext->noisy_avg_pairs)
			for (int g = 0; g < p.groups; ++g)
				if (p.grid(g, 1) != 1.0)
					fail(ERRCODE_FEATURE_NOT_SUPPORTED, "this dx.avg over a join cannot run on a Citus table",
					     "Its noise is so large that the count of joined pairs is rounded; use a larger epsilon, or "
					     "dx.sum and dx.count over the join.");
		Expr *group = copy_node(lsecond_node(TargetEntry, a->args)->expr);
		FuncExpr *release = makeFuncExpr(fn, a->aggtype, list_make3(part, copy_node(k), group), InvalidOid,
		                                 InvalidOid, COERCE_EXPLICIT_CALL);
		if (never_null_weight((Node *) linitial_node(TargetEntry, a->args)->expr, *c->ext))
			c->every_row.insert(release);
		c->releases = lappend(c->releases, copy_node(release));
		return (Node *) release;
	}
	return expression_tree_mutator(node, reinterpret_cast<Node *(*) ()>(split_mutator), ctx);
}

// Built-in stable functions that run SQL or read server state as the current user: refused in
// statements that run as the owner (the immutable and other stable built-ins only compute).
const std::set<std::string> kRunsAsCurrentUser = {
    "query_to_xml", "query_to_xmlschema", "query_to_xml_and_xmlschema", "cursor_to_xml", "cursor_to_xmlschema",
    "table_to_xml", "table_to_xmlschema", "table_to_xml_and_xmlschema", "schema_to_xml", "schema_to_xmlschema",
    "schema_to_xml_and_xmlschema", "database_to_xml", "database_to_xmlschema", "database_to_xml_and_xmlschema",
    "ts_stat", "ts_rewrite", "current_setting", "pg_settings_get_flags", "has_table_privilege",
    "has_column_privilege", "has_any_column_privilege", "has_function_privilege", "has_schema_privilege"};

// Raises for a function an analyst's distributed statement must not run as the table owner: one
// that is not built-in (nor dxpriv's own), one the analyst may not execute, a volatile one (it may
// change state: set_config, pg_read_file, ...), or a stable one that runs SQL or reads settings as
// the current user.
bool
check_owner_safe_function(Oid fn, void *ctx)
{
	const Oid dx = get_namespace_oid("dx", true);
	if (get_func_namespace(fn) == dx)
		return false;
	char *name = get_func_name(fn);
	const std::string shown = name ? name : "?";
	const char *hint = "A query on a Citus table runs as the table owner once it is charged, so it may use only built-in "
	                   "immutable or stable functions and operators that you may execute; apply other functions to the "
	                   "answers in a separate statement.";
	if (fn >= FirstNormalObjectId)
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "function " + shown + " cannot be used in analysts' queries on distributed tables", hint);
	if (pg_proc_aclcheck(fn, GetUserId(), ACL_EXECUTE) != ACLCHECK_OK)
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "permission denied for function " + shown, hint);
	const char volatility = func_volatile(fn);
	if (volatility == PROVOLATILE_VOLATILE || (volatility == PROVOLATILE_STABLE && kRunsAsCurrentUser.count(shown)))
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
		     "function " + shown + " cannot be used in analysts' queries on distributed tables", hint);
	return false;
}

// Walker behind require_owner_safe: every function, and domain checks of user-defined domains.
bool
owner_safe_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(owner_safe_walker), ctx, 0);
	if (IsA(node, CoerceToDomain) && castNode(CoerceToDomain, node)->resulttype >= FirstNormalObjectId)
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "casts to user-defined domains cannot be used in analysts' queries on distributed tables",
		     "A query on a Citus table runs as the table owner once it is charged; cast the answers in a separate statement.");
	check_functions_in_node(node, check_owner_safe_function, nullptr);
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(owner_safe_walker), ctx);
}

// Collects the range table entries of every level of a query (views are already expanded: their
// entries carry the view owner in checkAsUser, the protected table's its owner).
bool
collect_rtes(Node *node, void *ctx)
{
	if (!node)
		return false;
	if (IsA(node, RangeTblEntry)) {
		auto *out = static_cast<List **>(ctx);
		*out = lappend(*out, node);
		return false;
	}
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(collect_rtes), ctx,
		                         QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(collect_rtes), ctx);
}

// ---- plans: where the releases are ----

struct ReleaseScan {
	const ExtensionObjects *ext;
	std::set<int64> charge_ids;
	Oid relid = InvalidOid;
	CustomScan *custom = nullptr; // the first CustomScan met
};

bool
release_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *s = static_cast<ReleaseScan *>(ctx);
	Const *k = release_params_const(node, *s->ext);
	if (!k && IsA(node, Aggref) && castNode(Aggref, node)->aggfnoid == s->ext->em_collect)
		k = aggref_params_const(castNode(Aggref, node));
	if (k) {
		NoiseParams p = parse_noise_params(DatumGetArrayTypeP(k->constvalue));
		s->charge_ids.insert(p.charge_id);
		if (!OidIsValid(s->relid))
			s->relid = p.relid;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(release_walker), ctx);
}

ReleaseScan
scan_statement(const ExtensionObjects &ext, PlannedStmt *stmt)
{
	ReleaseScan s{&ext, {}};
	walk_plan_expressions(
	    stmt, [&](Node *n) { release_walker(n, &s); }, [&](CustomScan *cs) { s.custom = cs; });
	return s;
}

// ---- running analysts' distributed statements as the owner ----

ExecutorStart_hook_type prev_start = nullptr;
ExecutorRun_hook_type prev_run = nullptr;
ExecutorFinish_hook_type prev_finish = nullptr;
ExecutorEnd_hook_type prev_end = nullptr;
std::map<const QueryDesc *, Oid> run_as_owner; // set at every ExecutorStart, so never stale

// Runs f as `owner` (when valid) through the sealed path (forced settings, restored afterwards);
// f runs unchanged for statements that are not analysts' distributed releases.
template <class F>
void
as_owner(Oid owner, F &&f)
{
	if (!OidIsValid(owner)) {
		f();
		return;
	}
	sealed_call(owner, f);
}

Oid
owner_for(const QueryDesc *qd)
{
	auto it = run_as_owner.find(qd);
	return it == run_as_owner.end() ? InvalidOid : it->second;
}

// Stores the large per-point tables of a distributed statement on the workers (once per session);
// runs after the statement was charged, before Citus starts it.
void
ship_point_tables(PlannedStmt *stmt)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext || !stmt || stmt->commandType != CMD_SELECT || !citus_installed())
		return;
	// only where expose_releases put them (a statement that calls dx._store_point_table itself, as
	// run_command_on_workers does on a worker, ships nothing)
	std::vector<FuncExpr *> found;
	walk_plan_expressions(
	    stmt, [](Node *) {},
	    [&](CustomScan *cs) {
		    ListCell *lc;
		    foreach (lc, cs->custom_exprs)
			    if (IsA(lfirst(lc), FuncExpr) && castNode(FuncExpr, lfirst(lc))->funcid == ext->store_point_table)
				    found.push_back(castNode(FuncExpr, lfirst(lc)));
	    });
	for (FuncExpr *f : found) {
		Const *d = castNode(Const, linitial(f->args));
		Const *t = castNode(Const, lsecond(f->args));
		ship_point_table(DatumGetByteaPP(d->constvalue), DatumGetByteaPP(t->constvalue));
	}
}

extern "C" void
dist_executor_start(QueryDesc *qd, int eflags)
{
	Oid owner = InvalidOid;
	run_as_owner.erase(qd);
	if (!in_internal_query())
		guarded([&] { owner = distributed_run_as(qd->plannedstmt); });
	if (OidIsValid(owner)) {
		guarded([&] {
			if (worker_settings_propagated()) // SET LOCAL replayed on the workers' connections
				refuse_propagated_settings();
		});
		guarded([&] { pg_call([&] { ExecCheckRTPerms(qd->plannedstmt->rtable, true); }); }); // as the analyst
		run_as_owner[qd] = owner;
	}
	if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY) && !in_internal_query())
		as_owner(owner, [&] { guarded([&] { ship_point_tables(qd->plannedstmt); }); });
	as_owner(owner, [&] {
		if (prev_start)
			prev_start(qd, eflags);
		else
			standard_ExecutorStart(qd, eflags);
	});
}

extern "C" void
dist_executor_run(QueryDesc *qd, ScanDirection direction, uint64 count, bool execute_once)
{
	as_owner(owner_for(qd), [&] {
		if (prev_run)
			prev_run(qd, direction, count, execute_once);
		else
			standard_ExecutorRun(qd, direction, count, execute_once);
	});
}

extern "C" void
dist_executor_finish(QueryDesc *qd)
{
	as_owner(owner_for(qd), [&] {
		if (prev_finish)
			prev_finish(qd);
		else
			standard_ExecutorFinish(qd);
	});
}

extern "C" void
dist_executor_end(QueryDesc *qd)
{
	const Oid owner = owner_for(qd);
	run_as_owner.erase(qd);
	as_owner(owner, [&] {
		if (prev_end)
			prev_end(qd);
		else
			standard_ExecutorEnd(qd);
	});
}

void
forget_owners(XactEvent event, void *)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT || event == XACT_EVENT_PREPARE)
		run_as_owner.clear();
}

} // namespace

// See distributed.h.
bool
citus_distributed_table(Oid relid)
{
	const ExtensionObjects *ext = extension_objects();
	return ext && citus_table(*ext, relid).citus;
}

// See distributed.h.
List *
split_distributed_releases(Query *parse, bool &prune)
{
	prune = false;
	const ExtensionObjects *ext = extension_objects();
	if (!ext || parse->commandType != CMD_SELECT ||
	    !query_tree_walker(parse, reinterpret_cast<bool (*)()>(has_internal_aggref), const_cast<ExtensionObjects *>(ext), 0))
		return NIL;
	SplitContext c{ext};
	c.single_level = list_length(parse->rtable) == 1 && linitial_node(RangeTblEntry, parse->rtable)->rtekind == RTE_RELATION &&
	                 !parse->hasSubLinks && parse->cteList == NIL && parse->groupClause == NIL &&
	                 parse->groupingSets == NIL && !parse->setOperations && !parse->hasWindowFuncs &&
	                 !parse->hasTargetSRFs;
	Query *split = castNode(Query, split_mutator((Node *) parse, &c));
	if (c.releases == NIL)
		return NIL;
	if (load_analyst_context(*ext).analyst) {
		if (worker_settings_propagated()) // refused before anything is charged
			refuse_propagated_settings();
		owner_safe_walker((Node *) split, nullptr);
		// the statement will run as the table owner: every other table it reads is checked as the
		// analyst now (and again when it starts), so the owner's privileges serve only the release
		List *rtes = NIL;
		collect_rtes((Node *) split, &rtes);
		pg_call([&] { ExecCheckRTPerms(rtes, true); });
		// and it reads no other table at all: row-level security or defaults of another table would
		// be evaluated as the owner
		std::set<Oid> released;
		ListCell *rc;
		foreach (rc, c.releases) {
			ReleaseScan one{ext, {}};
			release_walker((Node *) lfirst(rc), &one);
			released.insert(one.relid);
		}
		foreach (rc, rtes) {
			RangeTblEntry *rte = lfirst_node(RangeTblEntry, rc);
			if (rte->rtekind == RTE_RELATION && !released.count(rte->relid)) {
				const char *name = get_rel_name(rte->relid);
				fail(ERRCODE_FEATURE_NOT_SUPPORTED,
				     std::string("analysts' queries on distributed tables cannot also read table \"") +
				         (name ? name : "?") + "\"",
				     "A query on a Citus table runs as the table owner once it is charged; join its answers with "
				     "other tables in a separate statement.");
			}
		}
	}
	*parse = *split;
	prune = c.single_level && parse->jointree && parse->jointree->quals;
	return list_concat(c.releases, c.shipments);
}

// See distributed.h.
void
expose_releases(PlannedStmt *stmt, List *releases)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext || releases == NIL)
		return;
	ReleaseScan seen = scan_statement(*ext, stmt);
	List *missing = NIL;
	ListCell *lc;
	foreach (lc, releases) {
		if (castNode(FuncExpr, lfirst(lc))->funcid == ext->store_point_table) { // tables to ship: only here
			missing = lappend(missing, lfirst(lc));
			continue;
		}
		ReleaseScan one{ext, {}};
		release_walker((Node *) lfirst(lc), &one);
		for (int64 id : one.charge_ids)
			if (!seen.charge_ids.count(id)) {
				missing = lappend(missing, lfirst(lc));
				break;
			}
	}
	if (missing == NIL)
		return;
	if (!seen.custom)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv cannot find where Citus runs a distributed release",
		     "Nothing was charged or released. Report this query to the dxpriv maintainers.");
	seen.custom->custom_exprs = list_concat(seen.custom->custom_exprs, missing);
}

// See distributed.h.
Oid
distributed_run_as(PlannedStmt *stmt)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext || !stmt || stmt->commandType != CMD_SELECT || !citus_installed())
		return InvalidOid; // (releases are placed only for Citus tables: no plan walk without Citus)
	ReleaseScan s = scan_statement(*ext, stmt);
	if (!OidIsValid(s.relid) || !load_analyst_context(*ext).analyst)
		return InvalidOid;
	HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(s.relid));
	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	const Oid owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

// See distributed.h.
void
install_distributed_hooks()
{
	prev_start = ExecutorStart_hook;
	ExecutorStart_hook = dist_executor_start;
	prev_run = ExecutorRun_hook;
	ExecutorRun_hook = dist_executor_run;
	prev_finish = ExecutorFinish_hook;
	ExecutorFinish_hook = dist_executor_finish;
	prev_end = ExecutorEnd_hook;
	ExecutorEnd_hook = dist_executor_end;
	RegisterXactCallback(forget_owners, nullptr);
}

} // namespace dxpriv::pg
