// GROUP BY keys: the groups as the image of the declared domain under the keys (group_keys.h).
#include "pg/planner/group_keys.h"

#include "pg/guard.h"
#include "pg/node_build.h"
#include "pg/planner/point_lookup.h"
#include "pg/planner/public_joins.h"
#include "pg/planner/universe_eval.h"
#include "pg/metadata/extension_objects.h"
#include "pg/metadata/policy.h"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/tlist.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"
}

#include <algorithm>
#include <numeric>
#include <optional>
#include <set>

namespace dxpriv::pg {

namespace {

// For each point of the keys' sub-universe, the run of equal key tuples it belongs to; runs are
// numbered in the order of their tuples (NULL first; each key type's btree comparison).
std::vector<size_t>
key_tuple_runs(const std::vector<TargetEntry *> &keys, const UniverseDatums &d, size_t n)
{
	std::vector<FmgrInfo *> cmp(keys.size());
	std::vector<Oid> collation(keys.size());
	for (size_t k = 0; k < keys.size(); ++k) {
		const Oid type = exprType((Node *) keys[k]->expr);
		TypeCacheEntry *tc = pg_value([&] { return lookup_type_cache(type, TYPECACHE_CMP_PROC_FINFO); });
		if (!OidIsValid(tc->cmp_proc))
			fail(ERRCODE_FEATURE_NOT_SUPPORTED,
			     std::string("GROUP BY keys of type ") + pg_value([&] { return format_type_be(type); }) +
			         " cannot be used in a query with dx aggregates",
			     "Group by an expression with an ordered type (text, numbers, dates, timestamps, booleans).");
		cmp[k] = &tc->cmp_proc_finfo;
		collation[k] = exprCollation((Node *) keys[k]->expr);
	}
	std::vector<size_t> order(n);
	std::iota(order.begin(), order.end(), 0);
	auto compare = [&](size_t a, size_t b) {
		for (size_t k = 0; k < keys.size(); ++k) {
			const bool na = d.is_null[k][a], nb = d.is_null[k][b];
			if (na || nb) {
				if (na != nb)
					return na ? -1 : 1;
				continue;
			}
			const int32 c = DatumGetInt32(FunctionCall2Coll(cmp[k], collation[k], d.value[k][a], d.value[k][b]));
			if (c != 0)
				return c < 0 ? -1 : 1;
		}
		return 0;
	};
	// std::sort allocates nothing (std::stable_sort's buffer would leak if a comparison raised); equal
	// tuples get one run whatever their order, so run_of is the same
	pg_call([&] { std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return compare(a, b) < 0; }); });
	// number the runs of equal tuples in sorted order
	std::vector<size_t> run_of(n);
	size_t run = 0;
	pg_call([&] {
		for (size_t i = 0; i < n; ++i) {
			if (i > 0 && compare(order[i - 1], order[i]) != 0)
				++run;
			run_of[order[i]] = run;
		}
	});
	return run_of;
}

// Whether a node still references a column outside the aggregates and dxpriv's own group lookups.
bool
var_outside_aggregates(Node *node, void *ctx)
{
	if (!node)
		return false;
	if (IsA(node, Var))
		return true;
	if (IsA(node, Aggref))
		return false;
	if (IsA(node, FuncExpr) && castNode(FuncExpr, node)->funcid == static_cast<const ExtensionObjects *>(ctx)->group_key)
		return false; // dx._group_key(dx._weigh_int(<table>, <the key columns>), <values>)
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(var_outside_aggregates), ctx);
}

struct ReplaceKeys {
	const GroupKeys *keys;
	std::vector<Expr *> replacement; // per key
};

// Replaces key expressions (equal() subtrees, outside aggregates) by their dx._group_key calls.
Node *
replace_keys_mutator(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	auto *r = static_cast<ReplaceKeys *>(ctx);
	if (IsA(node, Aggref))
		return node;
	for (size_t k = 0; k < r->keys->keys.size(); ++k)
		if (equal(node, r->keys->keys[k]->expr))
			return (Node *) copy_node(r->replacement[k]);
	return expression_tree_mutator(node, reinterpret_cast<Node *(*) ()>(replace_keys_mutator), ctx);
}

// The values of key k per group as an array constant of the key's type.
Const *
key_values_const(const GroupKeys &keys, size_t k)
{
	const Oid type = exprType((Node *) keys.keys[k]->expr);
	const Oid array_type = get_array_type(type);
	if (!OidIsValid(array_type))
		fail(ERRCODE_FEATURE_NOT_SUPPORTED,
		     std::string("GROUP BY keys of type ") + pg_value([&] { return format_type_be(type); }) + " cannot be used in a query with dx aggregates",
		     "Group by an expression of a built-in scalar type.");
	int16 typlen;
	bool typbyval;
	char typalign;
	get_typlenbyvalalign(type, &typlen, &typbyval, &typalign);
	bool *null_flags = static_cast<bool *>(palloc(sizeof(bool) * keys.groups));
	for (size_t g = 0; g < keys.groups; ++g)
		null_flags[g] = keys.is_null[k][g];
	int dims[1] = {static_cast<int>(keys.groups)};
	int lbs[1] = {1};
	ArrayType *arr = construct_md_array(const_cast<Datum *>(keys.value[k].data()), null_flags, 1, dims, lbs, type, typlen,
	                                    typbyval, typalign);
	return makeConst(array_type, -1, InvalidOid, -1, PointerGetDatum(arr), false, false);
}

} // namespace

// See group_keys.h.
std::string
GroupKeys::label(size_t g) const
{
	std::string out;
	for (size_t k = 0; k < keys.size(); ++k) {
		std::string text = "NULL";
		if (const ColumnPolicy *c = key_column[k]) {
			size_t stride = 1, pos = 0; // the column's index in the representative point
			for (size_t i = cols.size(); i-- > 0;) {
				if (cols[i] == c) {
					pos = (representative[g] / stride) % c->domain.size();
					break;
				}
				stride *= cols[i]->domain.size();
			}
			text = c->domain.label(pos);
		} else if (!is_null[k][g]) {
			const char *shown = pg_value([&] {
				Oid output;
				bool varlena;
				getTypeOutputInfo(exprType((Node *) keys[k]->expr), &output, &varlena);
				return OidOutputFunctionCall(output, value[k][g]);
			});
			text = shown;
		}
		out += (k ? ", " : "") + names[k] + "=" + text;
	}
	return out;
}

// See group_keys.h.
GroupKeys
analyse_group_keys(Query *q, Oid relid, const TablePolicy &policy, size_t max_groups,
                   const std::function<void(Node *, const char *)> &check)
{
	GroupKeys gk;
	std::set<AttrNumber> attnos;
	ListCell *lc;
	foreach (lc, q->groupClause) {
		TargetEntry *tle = get_sortgroupclause_tle(lfirst_node(SortGroupClause, lc), q->targetList);
		if (std::find_if(gk.keys.begin(), gk.keys.end(), [&](TargetEntry *t) { return equal(t->expr, tle->expr); }) !=
		    gk.keys.end())
			continue;
		Node *e = (Node *) tle->expr;
		check(e, "GROUP BY");
		List *vars = pull_var_clause(e, 0);
		ListCell *vc;
		foreach (vc, vars) {
			const ColumnPolicy *c = policy.find(lfirst_node(Var, vc)->varattno);
			if (c->is_group())
				fail(ERRCODE_FEATURE_NOT_SUPPORTED, "GROUP BY cannot use a column of a column group",
				     "Group by separately declared columns; a group such as (lon, lat) is a location, not a category.");
			attnos.insert(c->attnum);
		}
		gk.plain_columns = gk.plain_columns && IsA(e, Var);
		gk.key_column.push_back(IsA(e, Var) ? policy.find(castNode(Var, e)->varattno) : nullptr);
		gk.names.push_back(gk.key_column.back() ? gk.key_column.back()->name : tle->resname ? tle->resname : "key");
		gk.keys.push_back(tle);
	}
	if (gk.keys.empty())
		return gk;
	const SubUniverse sub = sub_universe_of(policy, attnos, gk.cols);
	const size_t n = sub.size();
	std::vector<Expr *> exprs;
	for (TargetEntry *t : gk.keys)
		exprs.push_back(t->expr);
	UniverseDatums d = evaluate_datums_over_universe(relid, gk.cols, sub, exprs);
	std::vector<size_t> run_of = n > 0 ? key_tuple_runs(gk.keys, d, n) : std::vector<size_t>{};
	// number the runs (distinct tuples) by their first point
	std::vector<std::optional<size_t>> group_of_run;
	gk.group_of_point.assign(n, 0);
	for (size_t v = 0; v < n; ++v) {
		const size_t r = run_of[v];
		if (r >= group_of_run.size())
			group_of_run.resize(r + 1);
		if (!group_of_run[r]) {
			group_of_run[r] = gk.representative.size();
			gk.representative.push_back(v);
			if (gk.representative.size() > max_groups)
				fail(ERRCODE_PROGRAM_LIMIT_EXCEEDED,
				     "GROUP BY would return more than " + std::to_string(max_groups) + " groups",
				     "Every group of the declared domains is returned; group by coarser columns or expressions "
				     "(e.g. date_trunc('month', ...) instead of a day).");
		}
		gk.group_of_point[v] = *group_of_run[r];
	}
	gk.groups = gk.representative.size();
	gk.value.assign(gk.keys.size(), std::vector<Datum>(gk.groups));
	gk.is_null.assign(gk.keys.size(), std::vector<char>(gk.groups));
	for (size_t k = 0; k < gk.keys.size(); ++k)
		for (size_t g = 0; g < gk.groups; ++g) {
			gk.value[k][g] = d.value[k][gk.representative[g]];
			gk.is_null[k][g] = d.is_null[k][gk.representative[g]];
		}
	return gk;
}

// See group_keys.h.
bool
groups_by_public_columns(Query *q)
{
	ListCell *lc;
	foreach (lc, q->groupClause)
		if (any_exec_param((Node *) get_sortgroupclause_tle(lfirst_node(SortGroupClause, lc), q->targetList)->expr,
		                   nullptr))
			return true;
	return false;
}

// See group_keys.h.
GroupKeys
list_join_group_keys(Query *q, const TablePolicy &policy, const std::function<void(Node *, const char *)> &check)
{
	GroupKeys gk;
	gk.plain_columns = false;
	ListCell *lc;
	foreach (lc, q->groupClause) {
		TargetEntry *tle = get_sortgroupclause_tle(lfirst_node(SortGroupClause, lc), q->targetList);
		if (std::find_if(gk.keys.begin(), gk.keys.end(), [&](TargetEntry *t) { return equal(t->expr, tle->expr); }) !=
		    gk.keys.end())
			continue;
		check((Node *) tle->expr, "GROUP BY");
		List *vars = pull_var_clause((Node *) tle->expr, 0);
		ListCell *vc;
		foreach (vc, vars)
			if (policy.find(lfirst_node(Var, vc)->varattno)->is_group())
				fail(ERRCODE_FEATURE_NOT_SUPPORTED, "GROUP BY cannot use a column of a column group",
				     "Group by separately declared columns; a group such as (lon, lat) is a location, not a category.");
		gk.key_column.push_back(nullptr);
		gk.names.push_back(tle->resname ? tle->resname : "key");
		gk.keys.push_back(tle);
	}
	return gk;
}

// See group_keys.h.
Expr *
group_index_expr(const GroupKeys &keys, const ExtensionObjects &ext)
{
	if (!keys.grouped())
		return (Expr *) int4_const(0);
	std::vector<std::optional<double>> table(keys.group_of_point.size());
	for (size_t v = 0; v < table.size(); ++v)
		table[v] = static_cast<double>(keys.group_of_point[v]);
	return weigh_expr(keys.cols, table, true, ext);
}

// See group_keys.h.
std::vector<Expr *>
replace_group_keys(Query *q, const GroupKeys &keys, Expr *group_index, const ExtensionObjects &ext)
{
	ReplaceKeys r{&keys, {}};
	for (size_t k = 0; k < keys.keys.size(); ++k) {
		Expr *e = keys.keys[k]->expr;
		r.replacement.push_back((Expr *) makeFuncExpr(ext.group_key, exprType((Node *) e),
		                                              list_make2(copy_node(group_index), key_values_const(keys, k)),
		                                              exprCollation((Node *) e), InvalidOid, COERCE_EXPLICIT_CALL));
	}
	q->targetList = (List *) replace_keys_mutator((Node *) q->targetList, &r);
	q->havingQual = replace_keys_mutator(q->havingQual, &r);
	auto *ctx = const_cast<ExtensionObjects *>(&ext);
	if (var_outside_aggregates((Node *) q->targetList, ctx) || var_outside_aggregates(q->havingQual, ctx))
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv left a column reference outside the aggregates");
	return r.replacement;
}

} // namespace dxpriv::pg
