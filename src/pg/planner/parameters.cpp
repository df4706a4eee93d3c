// The planner hook that analyses queries with dx aggregates and bound parameters (parameters.h).
#include "pg/planner/parameters.h"

#include "pg/analyst/citus_surface.h"
#include "pg/elevated/sealed_execution.h"
#include "pg/guard.h"
#include "pg/planner/distributed.h"
#include "pg/planner/distributed_exposure.h"
#include "pg/planner/distributed_route.h"
#include "pg/planner/large_const_stand_ins.h"
#include "pg/planner/shared_const_copy.h"
#include "pg/node_build.h"
#include "pg/metadata/citus_tables.h"
#include "pg/metadata/extension_objects.h"
#include "pg/ledger/charge.h"

extern "C" {
#include "utils/guc.h"
#include "catalog/namespace.h"
#include "parser/parser.h"
#include "utils/float.h"
#include "nodes/nodeFuncs.h"
#include "nodes/params.h"
#include "optimizer/planner.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"
}

namespace dxpriv::pg {

namespace {


// Cost given to a generic plan of a query with dx aggregates and parameters: the plan cache
// compares it with the custom plans' average and always builds a custom plan.
constexpr Cost kGenericPlanCost = 1e30;

// True when the query calls a function or aggregate of the dx schema (lookups, partials, releases).
bool
calls_dx(Node *node, void *ctx)
{
	if (!node)
		return false;
	const Oid dx = *static_cast<const Oid *>(ctx);
	const Oid fn = IsA(node, FuncExpr) ? castNode(FuncExpr, node)->funcid
	               : IsA(node, Aggref) ? castNode(Aggref, node)->aggfnoid
	                                   : InvalidOid;
	if (OidIsValid(fn) && get_func_namespace(fn) == dx)
		return true;
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(calls_dx), ctx, 0);
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(calls_dx), ctx);
}

// True when the session prints constants in a form the Citus workers would read back differently
// and the statement calls dx functions. Citus deparses the workers' statements with the session's
// settings: at extra_float_digits < 1 a lookup's domain constants (a range's lo, hi and step, a
// group's coordinates) and a partial's grids reach the workers rounded (one significant digit at
// -15); with standard_conforming_strings off, backslashes in string constants (the per-point
// table's bytea, enumerated labels) are doubled for workers that read them as standard strings.
// Rows would be mapped on another domain than the one the analysis calibrated (wrong answers,
// sensitivities exceeded, errors that depend on the rows). Such statements are planned with
// extra_float_digits = 3 (exact) and standard_conforming_strings on.
bool
needs_portable_constants(Query *parse)
{
	if (extra_float_digits >= 1 && standard_conforming_strings)
		return false;
	bool calls = false;
	pg_call([&] {
		Oid dx = get_namespace_oid("dx", true);
		calls = OidIsValid(dx) && calls_dx(reinterpret_cast<Node *>(parse), &dx);
	});
	return calls;
}

// True when the query holds a dx aggregate marker (not yet rewritten).
bool
has_markers(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *ext = static_cast<const ExtensionObjects *>(ctx);
	if (IsA(node, Aggref) && ext->is_marker(castNode(Aggref, node)->aggfnoid))
		return true;
	if (IsA(node, Query)) // at any level: releases may be nested in post-processing wrappers
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(has_markers), ctx, 0);
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(has_markers), ctx);
}

struct BindContext {
	ParamListInfo params;
	int found = 0;        // client parameters seen
	bool unbound = false; // a parameter has no value: a generic plan
};

// The value of parameter `id` (1-based) of the given type, or false when it is not bound.
bool
fetch_param(ParamListInfo params, int id, Oid type, ParamExternData &out)
{
	if (!params || id <= 0 || id > params->numParams)
		return false;
	ParamExternData workspace;
	const ParamExternData *prm = params->paramFetch ? params->paramFetch(params, id, false, &workspace)
	                                                : &params->params[id - 1];
	if (!prm || !OidIsValid(prm->ptype) || prm->ptype != type)
		return false;
	out = *prm;
	return true;
}

// Replaces every client parameter by a constant holding its bound value.
Node *
bind_mutator(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	auto *c = static_cast<BindContext *>(ctx);
	if (IsA(node, Param) && castNode(Param, node)->paramkind == PARAM_EXTERN) {
		Param *p = castNode(Param, node);
		c->found++;
		ParamExternData value;
		if (!fetch_param(c->params, p->paramid, p->paramtype, value)) {
			c->unbound = true;
			return node;
		}
		int16 typlen;
		bool typbyval;
		get_typlenbyval(p->paramtype, &typlen, &typbyval);
		Datum v = value.isnull ? (Datum) 0 : datumCopy(value.value, typbyval, typlen);
		return (Node *) makeConst(p->paramtype, p->paramtypmod, p->paramcollid, typlen, v, value.isnull, typbyval);
	}
	if (IsA(node, Query))
		return (Node *) query_tree_mutator(castNode(Query, node), reinterpret_cast<Node *(*) ()>(bind_mutator), ctx, 0);
	return expression_tree_mutator(node, reinterpret_cast<Node *(*) ()>(bind_mutator), ctx);
}

// If `parse` is a query with dx markers and parameters: binds and analyses it, or sets `generic`
// when it is planned without values. Other queries are left as they are.
void
bind_and_analyze(Query *&parse, ParamListInfo params, bool &generic)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext || parse->commandType != CMD_SELECT)
		return;
	if (!query_tree_walker(parse, reinterpret_cast<bool (*)()>(has_markers), const_cast<ExtensionObjects *>(ext), 0))
		return;
	BindContext ctx{params};
	Query *bound = castNode(Query, bind_mutator((Node *) copy_node(parse), &ctx));
	if (ctx.found == 0)
		return; // analysed when it was parsed
	if (ctx.unbound) {
		if (plan_cache_mode == PLAN_CACHE_MODE_FORCE_GENERIC_PLAN)
			fail(ERRCODE_FEATURE_NOT_SUPPORTED,
			     "queries with dx aggregates and parameters cannot use a generic plan",
			     "dxpriv analyses, charges and noises each execution with its bound values; "
			     "SET plan_cache_mode = auto (the default) or force_custom_plan.");
		generic = true;
		return;
	}
	analyze_bound_query(bound);
	parse = bound;
}

} // namespace

// See parameters.h.
PlannedStmt *
plan_statement(Query *parse, const char *query_string, int cursor_options, ParamListInfo params, PlannerStage next)
{
	bool generic = false, prune = false, route = false;
	List *releases = NIL; // releases split for Citus (distributed.h)
	if (!in_internal_query())
		guarded([&] {
			bind_and_analyze(parse, params, generic);
			substitute_citus_sizes(parse); // views expanded: citus_tables, citus_shards (analysts only)
			releases = split_distributed_releases(parse, prune, route);
		});
	// a subplan Citus's recursive planner plans for a routed statement (distributed_route.h)
	const bool subplan = !in_internal_query() && routed_subplan_active();
	bool subplan_off = false;
	if (subplan)
		guarded([&] { subplan_off = routed_subplan_needs_multi_shard(parse); });
	bool exact = false;
	guarded([&] { exact = needs_portable_constants(parse); });
	// A statement with releases on a Citus table is planned (and deparsed for the workers) with the
	// sealed settings (sealed_execution.h): the analyst's search_path, DateStyle, float digits or
	// citus.* settings never shape the statements that run as the table owner on the workers. A pruned
	// release is planned by Citus's multi-shard planner, which keeps the release here.
	// A statement of several levels on a single-shard table on a worker (`route`) is planned with the
	// router planner off until its first subplan is planned (distributed_route.h).
	const bool seal = releases != NIL || prune || exact || route || subplan;
	const char *router = prune || route || subplan_off ? "off" : subplan ? "on" : nullptr;
	const int guc_level = !seal ? 0 : router ? push_sealed_settings({{"citus.enable_router_execution", router}})
	                                         : push_sealed_settings();
	if (route)
		routed_planning_begin(guc_level);
	// a copy to plan again when a noisy aggregate's final function would run in a parallel worker
	Query *again = nullptr;
	guarded([&] {
		if (!in_internal_query() && releases == NIL && holds_noisy_aggregates(parse))
			again = reinterpret_cast<Query *>(copy_sharing_large_consts(reinterpret_cast<Node *>(parse)));
	});
	// a local statement: its per-point tables stood in for while the planner looks for aggregates
	// sharing a transition state (large_const_stand_ins.h; not where Citus could deparse the query
	// with the stand-ins into a worker's statement)
	bool stand_ins = false;
	if (!in_internal_query() && !seal)
		guarded([&] { stand_ins = !pg_value([] { return citus_installed(); }); });
	PlannedStmt *result = stand_ins ? plan_with_stand_ins(next, parse, query_string, cursor_options, params)
	                                : next(parse, query_string, cursor_options, params);
	bool in_workers = false;
	if (again)
		guarded([&] { in_workers = releases_in_workers(result); });
	if (in_workers) { // whole aggregates under a Gather: the leader must release (charge.cpp)
		const int level = push_plan_settings({{"force_parallel_mode", "off"}, {"enable_parallel_append", "off"}});
		result = stand_ins ? plan_with_stand_ins(next, again, query_string, cursor_options, params)
		                   : next(again, query_string, cursor_options, params);
		pop_sealed_settings(level);
	}
	const int routed_subplans = route ? routed_planning_end() : 0;
	if (seal)
		pop_sealed_settings(guc_level);
	if (route && routed_subplans == 0) // Citus sent it without a subplan: its releases would reach the worker
		guarded([&] { refuse_unrouted_statement(); });
	if (subplan) // the rest of the routed statement: its final query is planned on the coordinator
		routed_router_on();
	if (releases != NIL)
		guarded([&] { expose_releases(result, releases); });
	if (generic && result->planTree) // never preferred by the plan cache; its markers refuse to run
		result->planTree->total_cost = kGenericPlanCost;
	return result;
}

} // namespace dxpriv::pg
