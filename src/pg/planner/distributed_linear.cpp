// The linear split of a Citus release: native sums on the workers, the state and the release on the coordinator.
#include "pg/planner/distributed_linear.h"

#include "pg/planner/distributed_nodes.h"
#include "pg/planner/distributed_raw_keys.h"
#include "pg/planner/distributed_stage.h"
#include "pg/contract/param_consts.h"
#include "pg/contract/noise_params.h"
#include "pg/guard.h"
#include "pg/node_build.h"
#include "pg/metadata/extension_objects.h"

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

namespace dxpriv::pg::dist {

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

namespace {

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
// point contributes (the weight is then never NULL). O(points) once per plan (O(pieces) by pieces).
bool
uniform_weight(Node *w, const ExtensionObjects &ext, double &value, bool &every)
{
	if (IsA(w, Const)) {
		value = castNode(Const, w)->constisnull ? 0 : DatumGetFloat8(castNode(Const, w)->constvalue);
		every = true;
		return !castNode(Const, w)->constisnull && castNode(Const, w)->consttype == FLOAT8OID;
	}
	const std::optional<PointTableView> view = inline_point_table(w, ext);
	return view && view->uniform(value, every); // (O(pieces) for a pieces table)
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

// sum(dx._units(weight, grid)) (sum(dx._weigh_units(table, layout, grid, ...)) for a weight
// dx._weigh(table, layout, ...) inline in the task query), or sum(dx._units(weight, group, grids))
// when the groups' grids differ: the exact sum of a cell's weights in grid units (numeric). A weight that is one value at
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
	const Oid fused = !IsA(n.weight, FuncExpr)                                      ? InvalidOid
	                  : castNode(FuncExpr, n.weight)->funcid == ext.weigh        ? ext.weigh_units
	                  : castNode(FuncExpr, n.weight)->funcid == ext.weigh_cached ? ext.weigh_units_cached
	                                                                            : InvalidOid;
	if (one_grid(n.p) && OidIsValid(fused) && list_length(castNode(FuncExpr, n.weight)->args) >= 2) {
		// dx._units(dx._weigh(table, layout, ...), grid) in one call: dx._weigh_units(table, layout,
		// grid, ...) (the cached variants alike)
		List *args = list_copy_deep(castNode(FuncExpr, n.weight)->args);
		args = list_insert_nth(args, 2, float8_const(n.p.grid(0, 0)));
		u = makeFuncExpr(fused, INT8OID, args, InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	} else if (one_grid(n.p)) {
		u = makeFuncExpr(ext.units, INT8OID, list_make2(copy_node(n.weight), float8_const(n.p.grid(0, 0))), InvalidOid,
		                 InvalidOid, COERCE_EXPLICIT_CALL);
	} else {
		std::vector<Datum> grids;
		for (int g = 0; g < n.p.groups; ++g)
			grids.push_back(Float8GetDatum(n.p.grid(g, 0)));
		ArrayType *arr = pg_value([&] {
			return construct_array(grids.data(), static_cast<int>(grids.size()), FLOAT8OID, sizeof(float8),
			                       FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
		});
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

} // namespace

// See distributed_linear.h.
bool
release_native_sums(FuncExpr *release, const SplitContext &c, Expr *&units, Expr *&rows, Const *&params)
{
	NativePartial n;
	if (!native_partial(release, c, n))
		return false;
	units = units_sum(*c.ext, n);
	rows = rows_count(n);
	params = n.params;
	return true;
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

namespace {

// For every_group_from_one_state, when every release's sums can be native and all share one group
// expression: SELECT dx._collect(x.g, x.u1, x.n1, params1) AS p1, ... FROM (SELECT g(row) AS g,
// sum(dx._units(w1, grid1)) AS u1, count(w1) AS n1, ... FROM t WHERE ... GROUP BY 1) x. Citus runs
// the inner query as PostgreSQL's own grouped sums on the workers; dx._collect builds the state
// of every group on the coordinator (where distributed_stage.h applies, x is
// dx._grouped_partials(<that inner query's text>, params1, shipments) AS x(g, u1, n1, ...), one Citus
// stage inside a local statement, instead of the subquery). Where the group index g(row) is a lookup of plain integer
// columns (distributed_raw_keys.h), the workers group by those columns instead (GROUP BY k, as
// native) and dx._collect reads g(x.k1, ...): the same lookup, once per grouped row on the
// coordinator; groups that share an index add up there. nullptr when the sums cannot be native.
Query *
native_grouped_partials(Query *q, const std::vector<FuncExpr *> &releases, SplitContext &c)
{
	const ExtensionObjects &ext = *c.ext;
	std::vector<NativePartial> parts(releases.size());
	for (size_t j = 0; j < releases.size(); ++j)
		if (!native_partial(releases[j], c, parts[j]) || !equal(parts[j].group, parts[0].group))
			return nullptr;
	// the workers group by the group index's own columns where they can (distributed_raw_keys.h)
	const std::vector<Var *> raw = raw_group_columns((Node *) parts[0].group, ext);
	const int keys = raw.empty() ? 1 : static_cast<int>(raw.size());
	List *targets = NIL, *colnames = NIL;
	if (raw.empty()) {
		targets = list_make1(makeTargetEntry(copy_node(parts[0].group), 1, pstrdup("g"), false));
		colnames = list_make1(makeString(pstrdup("g")));
	}
	for (size_t i = 0; i < raw.size(); ++i) {
		targets = lappend(targets, makeTargetEntry((Expr *) copy_node(raw[i]), static_cast<AttrNumber>(i + 1),
		                                           psprintf("g%zu", i + 1), false));
		colnames = lappend(colnames, makeString(psprintf("g%zu", i + 1)));
	}
	for (size_t j = 0; j < parts.size(); ++j) {
		const auto col = static_cast<AttrNumber>(list_length(targets) + 1);
		targets = lappend(targets, makeTargetEntry(units_sum(ext, parts[j]), col, psprintf("u%zu", j + 1), false));
		targets = lappend(targets, makeTargetEntry(rows_count(parts[j]), col + 1, psprintf("n%zu", j + 1), false));
		colnames = lappend(colnames, makeString(psprintf("u%zu", j + 1)));
		colnames = lappend(colnames, makeString(psprintf("n%zu", j + 1)));
	}
	Query *grouped = grouped_by_first(q, targets, keys);
	if (!raw.empty())
		type_group_clauses(grouped, raw);
	// the workers' sums as one Citus stage where it applies (distributed_stage.h): a function scan
	// in a statement that stays local; else a subquery over the table (a Citus subplan)
	Query *collect = aggregate_over(one_stage_applies(grouped, parts[0].p.relid, c)
	                                    ? one_stage_source(grouped, colnames, parts[0].params, c)
	                                    : subquery_rte(grouped, "dx_native", colnames));
	for (size_t j = 0; j < parts.size(); ++j) {
		const auto u = static_cast<AttrNumber>(keys + 1 + 2 * j);
		Expr *g = raw.empty() ? (Expr *) makeVar(1, 1, INT4OID, -1, InvalidOid, 0)
		                      : group_index_over_columns((Node *) parts[0].group, raw);
		Aggref *a = internal_aggref(ext.collect, ext.linear_partial_type,
		                            {{g, INT4OID},
		                             {(Expr *) makeVar(1, u, NUMERICOID, -1, InvalidOid, 0), NUMERICOID},
		                             {(Expr *) makeVar(1, u + 1, INT8OID, -1, InvalidOid, 0), INT8OID},
		                             {(Expr *) copy_node(parts[j].params), FLOAT8ARRAYOID}});
		collect->targetList = lappend(collect->targetList, makeTargetEntry((Expr *) a, static_cast<AttrNumber>(j + 1),
		                                                                   psprintf("p%zu", j + 1), false));
	}
	return collect;
}

} // namespace

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
every_group_from_one_state(Query *q, SplitContext &c)
{
	const ExtensionObjects &ext = *c.ext;
	GroupedReleases found{&ext, {}};
	collect_level_releases((Node *) q->targetList, &found);
	collect_level_releases(q->havingQual, &found);
	if (found.releases.empty())
		return q;
	// one source: the table, or its rows bounded per privacy unit (planner/unit_source.h)
	if (list_length(q->rtable) != 1 ||
	    (linitial_node(RangeTblEntry, q->rtable)->rtekind != RTE_RELATION &&
	     linitial_node(RangeTblEntry, q->rtable)->rtekind != RTE_SUBQUERY) ||
	    q->groupingSets != NIL || q->hasWindowFuncs || q->hasTargetSRFs || q->cteList != NIL)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "this grouped query cannot run on a Citus table yet",
		     "Group a distributed table's dx aggregates by declared columns or expressions of them, without "
		     "GROUPING SETS, window functions or set-returning functions in the same query level; wrap the "
		     "query in a subquery for post-processing.");
	Node *group_index = static_cast<Node *>(lthird(found.releases.front()->args));
	Const *k0 = release_params_const((Node *) found.releases.front(), ext);
	const int groups = parse_noise_params(pg_value([&] { return DatumGetArrayTypeP(k0->constvalue); })).groups;

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

} // namespace dxpriv::pg::dist
