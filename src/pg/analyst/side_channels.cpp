// Analysts' statistics side channels: the deny list, and catalog views swapped for dx's.
#include "pg/analyst/pg_class_sizes.h"
#include "pg/analyst/side_channels.h"

#include "pg/analyst/citus_surface.h"

#include "pg/guard.h"
#include "pg/metadata/catalog_epoch.h"
#include "pg/metadata/extension_objects.h"

extern "C" {
#include "access/sysattr.h"
#include "access/transam.h"
#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/inval.h"
#include "utils/fmgroids.h"
#include "parser/parse_func.h"
#include "parser/parsetree.h"
#include "nodes/plannodes.h"
#include "utils/array.h"
#include "access/htup_details.h"
#include "catalog/dependency.h"
#include "commands/extension.h"
}

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <string>

namespace dxpriv::pg {

namespace {


// Relations whose contents describe the data of other tables (row counts, histograms, sizes).
bool
is_statistics_relation(const char *name)
{
	static const char *const names[] = {"pg_stats", "pg_stats_ext", "pg_stats_ext_exprs", "pg_statistic",
	                                    "pg_statistic_ext_data"};
	for (const char *n : names)
		if (strcmp(name, n) == 0)
			return true;
	return strncmp(name, "pg_stat_", 8) == 0 || strncmp(name, "pg_statio_", 10) == 0;
}

// Built-in functions that reveal table sizes or statistics: the size functions and every pg_stat_*
// function (pg_stat_get_* behind the pg_stat_* and pg_statio_* views, pg_stat_get_xact_*,
// pg_stat_have_stats, pg_stat_file, the resets).
bool
is_statistics_function(const char *name)
{
	static const char *const names[] = {"pg_relation_size", "pg_table_size", "pg_total_relation_size",
	                                    "pg_indexes_size", "pg_column_size", "pg_database_size",
	                                    "pg_tablespace_size", "pg_relation_filepath", "pg_ls_dir"};
	for (const char *n : names)
		if (strcmp(name, n) == 0)
			return true;
	return strncmp(name, "pg_stat_", 8) == 0 || strncmp(name, "pg_statio_", 10) == 0;
}

// Extensions whose functions and views are statistics about other relations or statements: row
// counts and buffer counters per statement (pg_stat_statements and its kin), tuple and page counts
// of a relation, its buffers, free space or visibility map, raw pages.
const char *const kStatisticsExtensions[] = {"pg_stat_statements", "pg_stat_monitor", "pg_stat_kcache",
                                             "pg_qualstats",       "pg_store_plans",  "pgstattuple",
                                             "pg_buffercache",     "pg_freespacemap", "pg_visibility",
                                             "pageinspect",        "pg_wait_sampling"};
constexpr int kStatisticsExtensionCount = sizeof kStatisticsExtensions / sizeof kStatisticsExtensions[0];

// The OID of each of kStatisticsExtensions installed in this database (InvalidOid for the others),
// by name; kept per backend while the catalog epoch (metadata/catalog_epoch.h) does not move: an
// extension created, dropped or altered creates or drops its functions and relations, whose
// invalidations move it. Before, each object's extension was looked up in pg_depend and its name
// compared, also where none of these extensions exists: a new backend opened pg_depend for its first
// statement's plan (about 4% of a new session's statement replayed from the answer cache, newsess).
const Oid *
installed_statistics_extensions()
{
	static Oid installed[kStatisticsExtensionCount];
	static uint64 epoch = 0;
	static bool valid = false;
	const uint64 now = catalog_epoch();
	if (valid && epoch == now)
		return installed;
	valid = false;
	for (int i = 0; i < kStatisticsExtensionCount; ++i)
		installed[i] = get_extension_oid(kStatisticsExtensions[i], true);
	epoch = now;
	valid = catalog_epoch() == now; // (a message that arrived meanwhile: looked up again next time)
	return installed;
}

// The statistics extension (kStatisticsExtensions) the object belongs to, or nullptr.
const char *
statistics_extension_of(Oid classid, Oid objid)
{
	if (objid < FirstNormalObjectId) // built-in objects belong to no extension
		return nullptr;
	const Oid *installed = installed_statistics_extensions();
	bool any = false;
	for (int i = 0; i < kStatisticsExtensionCount; ++i)
		any = any || OidIsValid(installed[i]);
	if (!any) // (none of them here: no object belongs to one)
		return nullptr;
	const Oid ext = getExtensionOfObject(classid, objid);
	if (!OidIsValid(ext))
		return nullptr;
	for (int i = 0; i < kStatisticsExtensionCount; ++i)
		if (installed[i] == ext)
			return kStatisticsExtensions[i];
	return nullptr;
}

[[noreturn]] void
refuse_statistics_extension(const std::string &object, const char *extension)
{
	fail(ERRCODE_INSUFFICIENT_PRIVILEGE, std::string("analysts cannot use ") + object + " of extension " + extension,
	     "Statement and relation statistics count the rows of protected tables (the owner's queries included) and "
	     "the pages dx statements read; ask the DBA for figures about unprotected tables.");
}


} // namespace

// Raises for a function an analyst may not call anywhere.
bool
check_function_allowed(Oid fn, void *ctx)
{
	if (const ExtensionObjects *ext = extension_objects(); ext && ext->is_own_function(fn))
		return false; // dxpriv's own: none of the kinds refused below (ExtensionObjects::is_own_function)
	char *name = get_func_name(fn);
	if (name && get_func_namespace(fn) == PG_CATALOG_NAMESPACE && is_statistics_function(name))
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, std::string("analysts cannot call ") + name,
		     "Table sizes and statistics reveal information about protected rows.");
	if (const char *ext = statistics_extension_of(ProcedureRelationId, fn))
		refuse_statistics_extension(std::string("function ") + (name ? name : "?"), ext);
	check_citus_function(fn, ctx != nullptr); // ctx: set when walking a plan
	return false;
}

namespace {

// Walker behind reject_side_channels.
bool
side_channel_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(side_channel_walker), ctx,
		                         QTW_EXAMINE_RTES_BEFORE);
	if (IsA(node, RangeTblEntry)) {
		RangeTblEntry *rte = castNode(RangeTblEntry, node);
		check_citus_relation(rte);
		if (rte->rtekind == RTE_RELATION)
			if (const char *ext = statistics_extension_of(RelationRelationId, rte->relid)) {
				const char *name = get_rel_name(rte->relid);
				refuse_statistics_extension(std::string("relation ") + (name ? name : "?"), ext);
			}
		if (rte->rtekind == RTE_RELATION && get_rel_namespace(rte->relid) == PG_CATALOG_NAMESPACE) {
			const char *name = get_rel_name(rte->relid);
			if (name && is_statistics_relation(name))
				fail(ERRCODE_INSUFFICIENT_PRIVILEGE, std::string("analysts cannot read ") + name,
				     "Statistics views reveal information about protected rows.");
			if (rte->relid == RelationRelationId) {
				const char *cols[] = {"reltuples", "relpages", "relallvisible"};
				for (const char *c : cols) {
					AttrNumber att = get_attnum(RelationRelationId, c);
					if (bms_is_member(att - FirstLowInvalidHeapAttributeNumber, rte->selectedCols) ||
					    bms_is_member(InvalidAttrNumber - FirstLowInvalidHeapAttributeNumber, rte->selectedCols))
						fail(ERRCODE_INSUFFICIENT_PRIVILEGE, std::string("analysts cannot read pg_class.") + c,
						     "Select the columns you need by name; row-count estimates are not available to analysts.");
				}
			}
		}
		return false;
	}
	if (check_functions_in_node(node, check_function_allowed, nullptr))
		return true;
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(side_channel_walker), ctx);
}

struct ViewSwap {
	Oid columns_view, tables_view, stat_view, dx_columns, dx_tables, dx_stat;
	std::map<Oid, Oid> functions; // built-in size function -> dx.analyst_* counterpart
};

// The size functions psql's \dt+, \di+, \l+ and \db+ call, and their dxpriv counterparts, which
// answer NULL where the size would describe protected rows (sql/40_analysts.sql).
std::map<Oid, Oid>
size_function_swaps()
{
	struct Swap {
		Oid builtin;
		const char *name;
		int nargs;
		Oid args[2];
	};
	static const Swap swaps[] = {
	    {F_PG_RELATION_SIZE_REGCLASS, "analyst_relation_size", 1, {REGCLASSOID}},
	    {F_PG_RELATION_SIZE_REGCLASS_TEXT, "analyst_relation_size", 2, {REGCLASSOID, TEXTOID}},
	    {F_PG_TABLE_SIZE, "analyst_table_size", 1, {REGCLASSOID}},
	    {F_PG_TOTAL_RELATION_SIZE, "analyst_total_relation_size", 1, {REGCLASSOID}},
	    {F_PG_INDEXES_SIZE, "analyst_indexes_size", 1, {REGCLASSOID}},
	    {F_PG_DATABASE_SIZE_NAME, "analyst_database_size", 1, {NAMEOID}},
	    {F_PG_DATABASE_SIZE_OID, "analyst_database_size", 1, {OIDOID}},
	    {F_PG_TABLESPACE_SIZE_NAME, "analyst_tablespace_size", 1, {NAMEOID}},
	    {F_PG_TABLESPACE_SIZE_OID, "analyst_tablespace_size", 1, {OIDOID}},
	};
	const Oid dx = pg_value([&] { return get_namespace_oid("dx", true); });
	std::map<Oid, Oid> out;
	for (const Swap &sw : swaps) {
		const Oid fn = pg_value([&] { return dx_routine_oid(dx, sw.name, sw.nargs, sw.args); });
		if (OidIsValid(fn))
			out[sw.builtin] = fn;
	}
	add_citus_size_swaps(out);
	return out;
}

// Walker behind substitute_catalog_views.
bool
view_swap_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *vs = static_cast<ViewSwap *>(ctx);
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(view_swap_walker), ctx,
		                         QTW_EXAMINE_RTES_BEFORE);
	if (IsA(node, RangeTblEntry)) {
		RangeTblEntry *rte = castNode(RangeTblEntry, node);
		if (rte->rtekind == RTE_RELATION && OidIsValid(rte->relid)) {
			if (rte->relid == vs->columns_view)
				rte->relid = vs->dx_columns;
			else if (rte->relid == vs->tables_view)
				rte->relid = vs->dx_tables;
			else if (rte->relid == vs->stat_view && OidIsValid(vs->dx_stat))
				rte->relid = vs->dx_stat;
			else
				swap_pg_class_sizes(rte); // pg_class_sizes.h
		}
		return false;
	}
	if (IsA(node, FuncExpr)) {
		FuncExpr *f = castNode(FuncExpr, node);
		auto it = vs->functions.find(f->funcid);
		if (it != vs->functions.end())
			f->funcid = it->second;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(view_swap_walker), ctx);
}


} // namespace

// OID of schema.name (a relation), or InvalidOid.
Oid
relation_oid(const char *schema, const char *name)
{
	Oid nsp = get_namespace_oid(schema, true);
	return OidIsValid(nsp) ? get_relname_relid(name, nsp) : InvalidOid;
}

// See analyst_guard.h.
void
reject_side_channels(Query *q)
{
	query_tree_walker(q, reinterpret_cast<bool (*)()>(side_channel_walker), nullptr, QTW_EXAMINE_RTES_BEFORE);
}

// See analyst_guard.h.
void
substitute_catalog_views(Query *q, const ExtensionObjects &ext)
{
	ViewSwap vs{relation_oid("information_schema", "columns"), relation_oid("information_schema", "tables"),
	            relation_oid("pg_catalog", "pg_stat_user_tables"), relation_oid("dx", "analyst_columns"),
	            relation_oid("dx", "analyst_tables"), relation_oid("dx", "analyst_stat_user_tables"),
	            size_function_swaps()};
	if (!OidIsValid(vs.dx_columns) || !OidIsValid(vs.dx_tables))
		return;
	query_tree_walker(q, reinterpret_cast<bool (*)()>(view_swap_walker), &vs, QTW_EXAMINE_RTES_BEFORE);
}

} // namespace dxpriv::pg
