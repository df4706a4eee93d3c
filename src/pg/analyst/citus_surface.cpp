// Analyst protection of the Citus surface (issue 13): the Citus functions and views that run SQL on
// the nodes, measure or count shards, or hand out Citus's internal aggregate states; the settings
// that show shards in pg_class; GRANTs that Citus would copy onto shards. Everything is looked up
// by name, so none of it does anything in a database without Citus (analyst_guard.h).
#include "pg/analyst/citus_surface.h"

#include "pg/analyst/analyst_context.h"
#include "pg/analyst/catalog_sizes.h"

#include "pg/guard.h"
#include "pg/metadata/catalog.h"
#include "pg/metadata/citus_tables.h"
#include "pg/metadata/extension_objects.h"

extern "C" {
#include "access/sysattr.h"
#include "access/transam.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_func.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"
}

#include <cstring>
#include <map>
#include <string>

namespace dxpriv::pg {

namespace {

enum class CitusKind {
	None,
	RunsSql,      // runs SQL text on nodes (run_command_on_*) or stores a query's result
	Intermediate, // reads intermediate results by id (Citus's plans call it: checked in queries only)
	PartialAgg,   // Citus's internal aggregate transport (Citus's plans call it: checked in queries only)
	Size,         // sizes, disk usage, size-based rebalance plans
	Stats,        // statistics counters of queries, tenants, activity
};

struct Named {
	const char *name;
	CitusKind kind;
};

const Named kCitusFunctions[] = {
    {"run_command_on_workers", CitusKind::RunsSql},
    {"run_command_on_placements", CitusKind::RunsSql},
    {"run_command_on_shards", CitusKind::RunsSql},
    {"run_command_on_colocated_placements", CitusKind::RunsSql},
    {"run_command_on_all_nodes", CitusKind::RunsSql},
    {"run_command_on_coordinator", CitusKind::RunsSql},
    {"master_run_on_worker", CitusKind::RunsSql},
    {"citus_run_local_command", CitusKind::RunsSql},
    {"database_command", CitusKind::RunsSql},                 // citus_internal.database_command
    {"citus_internal_database_command", CitusKind::RunsSql},
    {"create_intermediate_result", CitusKind::RunsSql},
    {"broadcast_intermediate_result", CitusKind::RunsSql},
    {"worker_partition_query_result", CitusKind::RunsSql},
    {"worker_save_query_explain_analyze", CitusKind::RunsSql},
    {"worker_last_saved_explain_analyze", CitusKind::RunsSql}, // EXPLAIN ANALYZE row counts
    {"read_intermediate_result", CitusKind::Intermediate},
    {"read_intermediate_results", CitusKind::Intermediate},
    {"fetch_intermediate_results", CitusKind::Intermediate},
    {"worker_partial_agg", CitusKind::PartialAgg},
    {"worker_partial_agg_sfunc", CitusKind::PartialAgg},
    {"worker_partial_agg_ffunc", CitusKind::PartialAgg},
    {"coord_combine_agg", CitusKind::PartialAgg},
    {"coord_combine_agg_sfunc", CitusKind::PartialAgg},
    {"coord_combine_agg_ffunc", CitusKind::PartialAgg},
    {"worker_partitioned_relation_size", CitusKind::Size},
    {"worker_partitioned_relation_total_size", CitusKind::Size},
    {"worker_partitioned_table_size", CitusKind::Size},
    {"citus_shard_cost_by_disk_size", CitusKind::Size},
    {"citus_local_disk_space_stats", CitusKind::Size},
    {"get_rebalance_table_shards_plan", CitusKind::Size},
    {"get_rebalance_progress", CitusKind::Size},
    {"citus_rebalance_status", CitusKind::Size},
    {"get_snapshot_based_node_split_plan", CitusKind::Size},
    {"citus_update_table_statistics", CitusKind::Size},
    {"citus_update_shard_statistics", CitusKind::Size},
    {"master_update_table_statistics", CitusKind::Size},
    {"master_update_shard_statistics", CitusKind::Size},
    {"citus_query_stats", CitusKind::Stats},
    {"citus_stat_statements", CitusKind::Stats},
    {"citus_stat_activity", CitusKind::Stats},
    {"citus_dist_stat_activity", CitusKind::Stats},
    {"citus_stat_counters", CitusKind::Stats},
    {"citus_stat_tenants", CitusKind::Stats},
    {"citus_stat_tenants_local", CitusKind::Stats},
};

// Views whose rows are statistics of queries or data (citus_stats: pg_stats of every shard).
const char *const kCitusStatViews[] = {"citus_stat_statements", "citus_stat_activity", "citus_dist_stat_activity",
                                        "citus_stat_counters",   "citus_stat_tenants",  "citus_stat_tenants_local",
                                        "citus_stats"};

// Citus installs its objects in pg_catalog (and citus_internal); only objects created after initdb
// (OIDs of an extension) count, so built-ins of the same name, if any, are never matched.
bool
in_citus_namespace(Oid nsp, Oid oid)
{
	if (oid < FirstNormalObjectId)
		return false;
	if (nsp == PG_CATALOG_NAMESPACE)
		return true;
	const char *name = get_namespace_name(nsp);
	return name && (strcmp(name, "citus_internal") == 0 || strcmp(name, "citus") == 0);
}

CitusKind
citus_kind(Oid fn)
{
	if (fn < FirstNormalObjectId)
		return CitusKind::None;
	const char *name = get_func_name(fn);
	if (!name || !in_citus_namespace(get_func_namespace(fn), fn))
		return CitusKind::None;
	for (const Named &n : kCitusFunctions)
		if (strcmp(name, n.name) == 0)
			return n.kind;
	if (strncmp(name, "citus_stat_", 11) == 0)
		return CitusKind::Stats;
	return CitusKind::None;
}

[[noreturn]] void
refuse_citus_function(const char *name, CitusKind kind)
{
	const std::string what = std::string("analysts cannot call ") + name;
	switch (kind) {
	case CitusKind::RunsSql:
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, what,
		     "It runs SQL on the Citus nodes or stores a query's result, where dxpriv does not guard the shards; "
		     "query the distributed table on the coordinator with count, sum, avg or the dx aggregates.");
	case CitusKind::Intermediate:
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, what,
		     "Intermediate results are Citus's internal transport of distributed queries.");
	case CitusKind::PartialAgg:
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, what,
		     "It is Citus's internal transport of aggregate states; Citus places it itself. "
		     "Use count, sum, avg or the dx aggregates.");
	case CitusKind::Size:
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, what,
		     "Shard sizes, disk usage and size-based rebalance plans reveal information about protected rows; "
		     "citus_tables and citus_shards show sizes of unprotected tables.");
	case CitusKind::Stats:
	case CitusKind::None:
		break;
	}
	fail(ERRCODE_INSUFFICIENT_PRIVILEGE, what,
	     "Citus's statistics count queries and rows, which reveals information about protected rows.");
}

// OID of dx.<name>(args), or InvalidOid.
Oid
dx_function(const char *name, int nargs, const Oid *args)
{
	return LookupFuncName(list_make2(makeString(pstrdup("dx")), makeString(pstrdup(name))), nargs, args, true);
}

// OID of pg_catalog.<name>(args) when it is Citus's (an extension's), or InvalidOid.
Oid
citus_function(const char *name, int nargs, const Oid *args)
{
	Oid fn = LookupFuncName(list_make2(makeString(pstrdup("pg_catalog")), makeString(pstrdup(name))), nargs,
	                        args, true);
	return OidIsValid(fn) && fn >= FirstNormalObjectId ? fn : InvalidOid;
}

// Walker behind substitute_citus_sizes.
bool
citus_swap_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *swaps = static_cast<std::map<Oid, Oid> *>(ctx);
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(citus_swap_walker), ctx, 0);
	if (IsA(node, FuncExpr)) {
		FuncExpr *f = castNode(FuncExpr, node);
		auto it = swaps->find(f->funcid);
		if (it != swaps->end())
			f->funcid = it->second;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(citus_swap_walker), ctx);
}

// The analyst roles, for GRANT checks.
bool
grantee_reaches_analyst(Oid grantee, const std::vector<Oid> &analysts)
{
	for (Oid a : analysts)
		if (has_privs_of_role(a, grantee))
			return true;
	return false;
}

} // namespace

bool client_statement_text = false;

// See analyst_guard.h.
bool
set_client_statement_text(bool client)
{
	const bool previous = client_statement_text;
	client_statement_text = client;
	return previous;
}

// See analyst_guard.h.
void
check_citus_function(Oid fn, bool in_plan)
{
	const CitusKind kind = citus_kind(fn);
	if (kind == CitusKind::None)
		return;
	// Citus's own plans, and the queries it generates and analyses as the current user, read
	// intermediate results and combine partial aggregate states
	if ((in_plan || !client_statement_text) && (kind == CitusKind::Intermediate || kind == CitusKind::PartialAgg))
		return;
	refuse_citus_function(get_func_name(fn), kind);
}

// See analyst_guard.h.
void
check_citus_relation(RangeTblEntry *rte)
{
	if (rte->rtekind != RTE_RELATION || rte->relid < FirstNormalObjectId)
		return;
	const Oid nsp = get_rel_namespace(rte->relid);
	if (!in_citus_namespace(nsp, rte->relid))
		return;
	const char *name = get_rel_name(rte->relid);
	if (!name)
		return;
	for (const char *v : kCitusStatViews)
		if (strcmp(name, v) == 0)
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE, std::string("analysts cannot read ") + name,
			     "Citus's statistics views reveal information about protected rows.");
	// pg_dist_placement.shardlength: a shard's size (kept for append-distributed tables)
	if (strcmp(name, "pg_dist_placement") == 0 || strcmp(name, "pg_dist_shard_placement") == 0) {
		const AttrNumber att = get_attnum(rte->relid, "shardlength");
		if (att != InvalidAttrNumber &&
		    (bms_is_member(att - FirstLowInvalidHeapAttributeNumber, rte->selectedCols) ||
		     bms_is_member(InvalidAttrNumber - FirstLowInvalidHeapAttributeNumber, rte->selectedCols)))
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE, std::string("analysts cannot read ") + name + ".shardlength",
			     "Select the columns you need by name; shard sizes are not available to analysts.");
	}
}

// See analyst_guard.h.
void
add_citus_size_swaps(std::map<Oid, Oid> &swaps)
{
	struct Swap {
		const char *citus, *dx;
		int nargs;
		Oid args[2];
	};
	static const Swap list[] = {
	    {"citus_relation_size", "analyst_citus_relation_size", 1, {REGCLASSOID}},
	    {"citus_table_size", "analyst_citus_table_size", 1, {REGCLASSOID}},
	    {"citus_total_relation_size", "analyst_citus_total_relation_size", 2, {REGCLASSOID, BOOLOID}},
	    {"citus_shard_sizes", "analyst_citus_shard_sizes", 0, {}},
	};
	for (const Swap &s : list) {
		const Oid from = citus_function(s.citus, s.nargs, s.args);
		const Oid to = OidIsValid(from) ? dx_function(s.dx, s.nargs, s.args) : InvalidOid;
		if (OidIsValid(to))
			swaps[from] = to;
	}
}

// See analyst_guard.h.
void
substitute_citus_sizes(Query *q)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext || !load_analyst_context(*ext).analyst)
		return;
	std::map<Oid, Oid> swaps;
	add_citus_size_swaps(swaps);
	if (!swaps.empty())
		query_tree_walker(q, reinterpret_cast<bool (*)()>(citus_swap_walker), &swaps, 0);
}

// See analyst_guard.h.
void
check_citus_settings()
{
	const char *visibility = GetConfigOption("citus.override_table_visibility", true, false);
	if (visibility && strcmp(visibility, "on") != 0)
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "analysts cannot use citus.override_table_visibility = off",
		     "RESET citus.override_table_visibility: shards are not for analysts.");
	const char *prefixes = GetConfigOption("citus.show_shards_for_app_name_prefixes", true, false);
	if (prefixes && prefixes[0] != '\0')
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "analysts cannot use citus.show_shards_for_app_name_prefixes",
		     "RESET citus.show_shards_for_app_name_prefixes: shards are not for analysts.");
}

// See analyst_guard.h.
void
check_citus_set(VariableSetStmt *stmt)
{
	if (!stmt->name || (stmt->kind != VAR_SET_VALUE && stmt->kind != VAR_SET_CURRENT))
		return;
	if (pg_strcasecmp(stmt->name, "citus.override_table_visibility") != 0 &&
	    pg_strcasecmp(stmt->name, "citus.show_shards_for_app_name_prefixes") != 0)
		return;
	const ExtensionObjects *ext = extension_objects();
	if (!ext || !load_analyst_context(*ext).analyst)
		return;
	fail(ERRCODE_INSUFFICIENT_PRIVILEGE, std::string("analysts cannot set ") + stmt->name,
	     "Shards of distributed tables are not for analysts; query the distributed table itself.");
}

// See analyst_guard.h.
void
check_citus_grant(GrantStmt *stmt)
{
	if (!stmt->is_grant || stmt->objtype != OBJECT_TABLE)
		return;
	const ExtensionObjects *ext = extension_objects();
	if (!ext)
		return;
	const AnalystContext ac = load_analyst_context(*ext);
	const std::vector<Oid> analysts = analyst_roles(*ext);
	if (analysts.empty() || ac.protected_rels.empty())
		return;
	std::vector<Oid> rels;
	ListCell *lc;
	if (stmt->targtype == ACL_TARGET_OBJECT) {
		foreach (lc, stmt->objects) {
			Oid rel = InvalidOid;
			RangeVar *rv = lfirst_node(RangeVar, lc);
			pg_call([&] { rel = RangeVarGetRelid(rv, NoLock, true); });
			if (OidIsValid(rel))
				rels.push_back(rel);
		}
	} else if (stmt->targtype == ACL_TARGET_ALL_IN_SCHEMA) {
		foreach (lc, stmt->objects) {
			const Oid nsp = pg_value([&] { return get_namespace_oid(strVal(lfirst(lc)), true); });
			for (Oid rel : ac.protected_rels)
				if (get_rel_namespace(rel) == nsp)
					rels.push_back(rel);
		}
	}
	for (Oid rel : rels) {
		if (!ac.is_protected(rel) || !citus_distributed_table(rel))
			continue;
		foreach (lc, stmt->grantees) {
			RoleSpec *spec = lfirst_node(RoleSpec, lc);
			const bool reaches = spec->roletype == ROLESPEC_PUBLIC ||
			                     grantee_reaches_analyst(pg_value([&] { return get_rolespec_oid(spec, true); }), analysts);
			if (!reaches)
				continue;
			const char *name = get_rel_name(rel);
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
			     std::string("privileges on protected distributed table \"") + (name ? name : "?") +
			         "\" cannot be granted to analysts",
			     "Citus copies the grant onto every shard, where an analyst connecting to a worker would read raw "
			     "rows. Analysts query distributed tables through dxpriv on the coordinator without any privilege; "
			     "the column grants that let BI tools list a table are not for Citus.",
			     spec->roletype == ROLESPEC_PUBLIC ? "PUBLIC includes the analyst roles." : "");
		}
	}
}

} // namespace dxpriv::pg

using namespace dxpriv::pg;

namespace {

// dx._holds_protected_rows(rel) (SECURITY DEFINER): true when unknown.
bool
holds_protected_rows(Oid rel)
{
	return dx_helper("_holds_protected_rows", rel, false);
}

} // namespace

// dx.analyst_citus_relation_size(regclass), dx.analyst_citus_table_size(regclass),
// dx.analyst_citus_total_relation_size(regclass, boolean): Citus's function of the same name
// (called as the caller), NULL for a relation holding protected rows. STRICT, bigint.
DX_FUNCTION(dx_analyst_citus_size)
{
	std::string self;
	pg_call([&] {
		const char *n = get_func_name(fcinfo->flinfo->fn_oid);
		self = n ? n : "";
	});
	const Oid rel = PG_GETARG_OID(0);
	if (holds_protected_rows(rel))
		PG_RETURN_NULL();
	Datum result = 0;
	pg_call([&] {
		const char *citus = self == "analyst_citus_relation_size" ? "citus_relation_size"
		                    : self == "analyst_citus_table_size"  ? "citus_table_size"
		                                                          : "citus_total_relation_size";
		Oid args[2] = {REGCLASSOID, BOOLOID};
		const int nargs = PG_NARGS();
		Oid fn = LookupFuncName(list_make2(makeString(pstrdup("pg_catalog")), makeString(pstrdup(citus))), nargs,
		                        args, false);
		result = nargs == 2 ? OidFunctionCall2(fn, ObjectIdGetDatum(rel), PG_GETARG_DATUM(1))
		                    : OidFunctionCall1(fn, ObjectIdGetDatum(rel));
	});
	return result;
}

// dx.analyst_citus_shard_sizes() RETURNS TABLE(shard_id integer, size bigint): citus_shard_sizes()
// with a NULL size for the shards of tables holding protected rows (and shards Citus does not
// know). Put in place of citus_shard_sizes() in analysts' statements, also inside the views
// citus_tables and citus_shards (which then show NULL sizes for protected tables).
DX_FUNCTION(dx_analyst_citus_shard_sizes)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext)
		fail(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, "dxpriv is not installed in this database");
	struct Row {
		int32 shard;
		bool size_null;
		int64 size;
	};
	std::vector<Row> out;
	{
		InternalSpi spi(GetUserId());
		const uint64 n = spi.exec_dynamic(
		    "SELECT s.shard_id, CASE WHEN ds.logicalrelid IS NULL OR dx._holds_protected_rows(ds.logicalrelid::oid) "
		    "THEN NULL ELSE s.size END FROM pg_catalog.citus_shard_sizes() s(shard_id, size) "
		    "LEFT JOIN pg_catalog.pg_dist_shard ds ON ds.shardid = s.shard_id");
		for (uint64 i = 0; i < n; ++i)
			out.push_back(Row{DatumGetInt32(spi.value(i, 0)), spi.is_null(i, 1),
			                  spi.is_null(i, 1) ? 0 : DatumGetInt64(spi.value(i, 1))});
	}
	pg_call([&] {
		InitMaterializedSRF(fcinfo, 0);
		ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
		for (const Row &r : out) {
			Datum values[2] = {Int32GetDatum(r.shard), Int64GetDatum(r.size)};
			bool nulls[2] = {false, r.size_null};
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	});
	return (Datum) 0;
}
