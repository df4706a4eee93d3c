// Analyst enforcement: side-channel deny list, catalog view substitution, plain-aggregate rewriting
// and owner-checked reads of protected tables for validated queries.
#include "pg/analyst/analyst_guard.h"

#include "pg/metadata/catalog.h"
#include "pg/executor/agg_support.h"
#include "pg/guard.h"

extern "C" {
#include "access/sysattr.h"
#include "access/transam.h"
#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
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
#include "nodes/plannodes.h"
#include "utils/array.h"
#include "access/htup_details.h"
}

#include <algorithm>
#include <cstring>
#include <set>
#include <string>

namespace dxpriv::pg {

namespace {

bool analyst_mode_flag = false;


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

// Built-in functions that reveal table sizes or statistics.
bool
is_statistics_function(const char *name)
{
	static const char *const names[] = {"pg_relation_size", "pg_table_size", "pg_total_relation_size",
	                                    "pg_indexes_size", "pg_column_size", "pg_database_size",
	                                    "pg_tablespace_size", "pg_relation_filepath", "pg_ls_dir"};
	for (const char *n : names)
		if (strcmp(name, n) == 0)
			return true;
	return strncmp(name, "pg_stat_get_", 12) == 0;
}

// Raises for a function an analyst may not call anywhere.
bool
check_function_allowed(Oid fn, void *)
{
	char *name = get_func_name(fn);
	if (name && get_func_namespace(fn) == PG_CATALOG_NAMESPACE && is_statistics_function(name))
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, std::string("analysts cannot call ") + name,
		     "Table sizes and statistics reveal information about protected rows.");
	return false;
}

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

struct RefCount {
	const AnalystContext *ac;
	int count = 0;
};

// Walker behind count_protected_refs.
bool
protected_ref_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *rc = static_cast<RefCount *>(ctx);
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(protected_ref_walker), ctx,
		                         QTW_EXAMINE_RTES_BEFORE);
	if (IsA(node, RangeTblEntry)) {
		RangeTblEntry *rte = castNode(RangeTblEntry, node);
		if (rte->rtekind == RTE_RELATION &&
		    (rc->ac->is_protected(rte->relid) || (rte->inh && rc->ac->has_protected_descendant(rte->relid))))
			rc->count++;
		return false;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(protected_ref_walker), ctx);
}

struct ViewSwap {
	Oid columns_view, tables_view, stat_view, dx_columns, dx_tables, dx_stat;
};

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
		}
		return false;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(view_swap_walker), ctx);
}

// OID of schema.name (a relation), or InvalidOid.
Oid
relation_oid(const char *schema, const char *name)
{
	Oid nsp = get_namespace_oid(schema, true);
	return OidIsValid(nsp) ? get_relname_relid(name, nsp) : InvalidOid;
}

struct PlainAggRewrite {
	const ExtensionObjects *ext;
	int rewritten = 0;
};

// The dx marker aggregate standing for a built-in count/sum/avg, or InvalidOid.
Oid
marker_for(Aggref *a, const ExtensionObjects &ext)
{
	if (get_func_namespace(a->aggfnoid) != PG_CATALOG_NAMESPACE || a->aggkind != AGGKIND_NORMAL)
		return InvalidOid;
	char *name = get_func_name(a->aggfnoid);
	if (!name)
		return InvalidOid;
	if (strcmp(name, "count") == 0)
		return a->aggstar ? ext.count_star : ext.count_any;
	if (strcmp(name, "sum") == 0)
		return ext.sum_any;
	if (strcmp(name, "avg") == 0)
		return ext.avg_any;
	return InvalidOid;
}

// Mutator behind rewrite_plain_aggregates.
Node *
plain_agg_mutator(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	auto *c = static_cast<PlainAggRewrite *>(ctx);
	if (IsA(node, Aggref)) {
		Aggref *a = castNode(Aggref, node);
		Oid marker = a->agglevelsup == 0 ? marker_for(a, *c->ext) : InvalidOid;
		if (!OidIsValid(marker))
			return node;
		Oid original_type = a->aggtype;
		Aggref *m = static_cast<Aggref *>(copyObjectImpl(a));
		m->aggfnoid = marker;
		m->aggstar = false;
		m->aggtype = marker == c->ext->count_star || marker == c->ext->count_any ? INT8OID : FLOAT8OID;
		m->aggargtypes = NIL;
		ListCell *lc;
		foreach (lc, m->args)
			m->aggargtypes = lappend_oid(m->aggargtypes, exprType((Node *) lfirst_node(TargetEntry, lc)->expr));
		c->rewritten++;
		if (m->aggtype == original_type)
			return (Node *) m;
		return coerce_to_target_type(nullptr, (Node *) m, m->aggtype, original_type, -1, COERCION_EXPLICIT,
		                             COERCE_IMPLICIT_CAST, -1);
	}
	return expression_tree_mutator(node, reinterpret_cast<Node *(*) ()>(plain_agg_mutator), ctx);
}

// Built-in stable functions analysts may use: they depend only on the statement's time and on
// TimeZone/DateStyle (date and timestamp casts, date_trunc, extract, now()), are evaluated once at
// analysis on the declared points, and read no table, statistic or other session.
bool
is_allowed_stable(Oid fn)
{
	static const std::set<std::string> allowed = {
	    "now", "statement_timestamp", "transaction_timestamp", "date_trunc", "date_part", "extract", "date_bin",
	    "timezone", "age", "to_char", "to_timestamp", "to_date", "date", "timestamptz", "timestamp", "time",
	    "timetz", "timestamptz_in", "timestamptz_out", "timestamp_in", "timestamp_out", "date_in", "date_out",
	    "time_in", "timetz_in", "interval_in", "interval_out", "timestamptz_pl_interval", "timestamptz_mi_interval",
	    "timestamptz_trunc", "timestamptz_part", "timestamptz_bin", "isfinite", "make_timestamptz",
	    "date_pl_interval", "date_mi_interval", "date_cmp_timestamptz", "date_eq_timestamptz",
	    "date_ne_timestamptz", "date_lt_timestamptz", "date_le_timestamptz", "date_gt_timestamptz",
	    "date_ge_timestamptz", "timestamptz_eq_date", "timestamptz_ne_date", "timestamptz_lt_date",
	    "timestamptz_le_date", "timestamptz_gt_date", "timestamptz_ge_date", "timestamp_eq_timestamptz",
	    "timestamp_ne_timestamptz", "timestamp_lt_timestamptz", "timestamp_le_timestamptz",
	    "timestamp_gt_timestamptz", "timestamp_ge_timestamptz", "timestamptz_eq_timestamp",
	    "timestamptz_ne_timestamp", "timestamptz_lt_timestamp", "timestamptz_le_timestamp",
	    "timestamptz_gt_timestamp", "timestamptz_ge_timestamp"};
	if (fn >= FirstNormalObjectId || get_func_namespace(fn) != PG_CATALOG_NAMESPACE)
		return false;
	char *name = get_func_name(fn);
	return name && allowed.count(name) > 0;
}

// Raises for a function that is not a built-in immutable one (or an allowed stable one).
bool
check_builtin_immutable(Oid fn, void *ctx)
{
	const bool ours = get_func_namespace(fn) == get_namespace_oid("dx", true);
	const char volatility = func_volatile(fn);
	const bool allowed = volatility == PROVOLATILE_IMMUTABLE || (volatility == PROVOLATILE_STABLE && is_allowed_stable(fn));
	if ((fn >= FirstNormalObjectId && !ours) || !allowed) {
		char *name = get_func_name(fn);
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
		     std::string("function ") + (name ? name : "?") + " cannot be used in " + static_cast<const char *>(ctx) +
		         " by analysts",
		     "Only built-in immutable functions and operators, and the date and time functions now(), date_trunc, "
		     "extract and date/timestamp casts, may touch protected columns.");
	}
	return false;
}

// Walker behind require_builtin_immutable.
bool
builtin_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	if (check_functions_in_node(node, check_builtin_immutable, ctx))
		return true;
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(builtin_walker), ctx);
}

// Walker behind admit_protected_reads.
bool
admit_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *ac = static_cast<const AnalystContext *>(ctx);
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(admit_walker), ctx,
		                         QTW_EXAMINE_RTES_BEFORE);
	if (IsA(node, RangeTblEntry)) {
		RangeTblEntry *rte = castNode(RangeTblEntry, node);
		if (rte->rtekind == RTE_RELATION && ac->is_protected(rte->relid)) {
			HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(rte->relid));
			if (HeapTupleIsValid(tup)) {
				rte->checkAsUser = ((Form_pg_class) GETSTRUCT(tup))->relowner;
				ReleaseSysCache(tup);
			}
		}
		return false;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(admit_walker), ctx);
}

} // namespace

// Backend cache of the analyst roles and protected tables; dropped when dx.analysts or
// dx.protected_tables is invalidated (the DBA functions send the invalidation) or on any
// whole-relcache reset.
struct CatalogCache {
	bool valid = false;
	Oid analysts_rel = InvalidOid, tables_rel = InvalidOid;
	std::vector<Oid> analysts, protected_rels;
};
CatalogCache catalog_cache;

// Relcache invalidation callback.
void
on_relcache_invalidation(Datum, Oid relid)
{
	if (!OidIsValid(relid) || relid == catalog_cache.analysts_rel || relid == catalog_cache.tables_rel)
		catalog_cache.valid = false;
}

// See analyst_guard.h.
AnalystContext
load_analyst_context(const ExtensionObjects &ext)
{
	if (!catalog_cache.valid) {
		CatalogCache fresh;
		fresh.analysts_rel = relation_oid("dx", "analysts");
		fresh.tables_rel = relation_oid("dx", "protected_tables");
		InternalSpi spi(ext.schema_owner);
		uint64 n = spi.exec("SELECT role::oid FROM dx.analysts", {}, true);
		for (uint64 i = 0; i < n; ++i)
			fresh.analysts.push_back(DatumGetObjectId(spi.value(i, 0)));
		n = spi.exec("SELECT relid::oid FROM dx.protected_tables", {}, true);
		for (uint64 i = 0; i < n; ++i)
			fresh.protected_rels.push_back(DatumGetObjectId(spi.value(i, 0)));
		fresh.valid = true;
		catalog_cache = fresh;
	}
	AnalystContext ac;
	ac.protected_rels = catalog_cache.protected_rels;
	// The current role and the session's login role both count: SET ROLE to a group that holds
	// privileges, or a SECURITY DEFINER function, does not shed the analyst restrictions.
	for (Oid who : {GetUserId(), GetSessionUserId()})
		if (!superuser_arg(who))
			for (Oid a : catalog_cache.analysts)
				if (has_privs_of_role(who, a))
					ac.analyst = true;
	note_analyst_session(ac.analyst);
	return ac;
}

// See analyst_guard.h.
void
install_catalog_cache_invalidation()
{
	CacheRegisterRelcacheCallback(on_relcache_invalidation, (Datum) 0);
}

// See analyst_guard.h.
int
count_protected_refs(Query *q, const AnalystContext &ac)
{
	RefCount rc{&ac};
	query_tree_walker(q, reinterpret_cast<bool (*)()>(protected_ref_walker), &rc, QTW_EXAMINE_RTES_BEFORE);
	return rc.count;
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
	            relation_oid("dx", "analyst_tables"), relation_oid("dx", "analyst_stat_user_tables")};
	if (!OidIsValid(vs.dx_columns) || !OidIsValid(vs.dx_tables))
		return;
	query_tree_walker(q, reinterpret_cast<bool (*)()>(view_swap_walker), &vs, QTW_EXAMINE_RTES_BEFORE);
}

// See analyst_guard.h.
int
rewrite_plain_aggregates(Query *q, const ExtensionObjects &ext)
{
	PlainAggRewrite c{&ext};
	q->targetList = (List *) plain_agg_mutator((Node *) q->targetList, &c);
	q->havingQual = plain_agg_mutator(q->havingQual, &c);
	return c.rewritten;
}

// See analyst_guard.h.
void
require_builtin_immutable(Node *expr, const char *where)
{
	if (expr)
		builtin_walker(expr, const_cast<char *>(where));
}

// See analyst_guard.h.
void
admit_protected_reads(Query *q, const AnalystContext &ac)
{
	query_tree_walker(q, reinterpret_cast<bool (*)()>(admit_walker), const_cast<AnalystContext *>(&ac),
	                  QTW_EXAMINE_RTES_BEFORE);
}

// Walker collecting the protected tables that noisy aggregates in a plan release.
struct AdmittedScan {
	const ExtensionObjects *ext;
	std::vector<Oid> relids;
};

bool
admitted_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *s = static_cast<AdmittedScan *>(ctx);
	if (IsA(node, Aggref) && s->ext->is_internal(castNode(Aggref, node)->aggfnoid))
		if (Const *k = aggref_params_const(castNode(Aggref, node)))
			s->relids.push_back(parse_noise_params(DatumGetArrayTypeP(k->constvalue)).relid);
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(admitted_walker), ctx);
}

void
scan_plan_for_admitted(Plan *plan, AdmittedScan &s)
{
	if (!plan)
		return;
	admitted_walker((Node *) plan->targetlist, &s);
	admitted_walker((Node *) plan->qual, &s);
	scan_plan_for_admitted(plan->lefttree, s);
	scan_plan_for_admitted(plan->righttree, s);
	if (IsA(plan, Append)) {
		ListCell *lc;
		foreach (lc, ((Append *) plan)->appendplans)
			scan_plan_for_admitted((Plan *) lfirst(lc), s);
	} else if (IsA(plan, SubqueryScan)) {
		scan_plan_for_admitted(((SubqueryScan *) plan)->subplan, s);
	}
}

// See analyst_guard.h.
void
enforce_executor_admission(PlannedStmt *stmt)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext || !stmt)
		return;
	const AnalystContext ac = load_analyst_context(*ext);
	if (!ac.analyst)
		return;
	std::vector<Oid> touched;
	ListCell *lc;
	foreach (lc, stmt->rtable) {
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
		if (rte->rtekind == RTE_RELATION && ac.is_protected(rte->relid))
			touched.push_back(rte->relid);
	}
	if (touched.empty())
		return;
	refuse_protected_read_in_utility(touched.front());
	AdmittedScan s{ext, {}};
	scan_plan_for_admitted(stmt->planTree, s);
	foreach (lc, stmt->subplans)
		scan_plan_for_admitted((Plan *) lfirst(lc), s);
	// a partition or inheritance child is released by the aggregate of the table whose policy covers it
	for (Oid rel : touched)
		if (std::find(s.relids.begin(), s.relids.end(), ac.policy_table(rel)) == s.relids.end()) {
			const char *name = get_rel_name(rel);
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
			     std::string("analysts can read protected table \"") + (name ? name : "?") +
			         "\" only through aggregates",
			     "A view, rule, policy, function or parent table that reads a protected table is not a way around "
			     "dxpriv. " + analyst_hint(rel));
		}
}

// See analyst_guard.h.
bool
analyst_mode()
{
	return analyst_mode_flag;
}

void
set_analyst_mode(bool on)
{
	analyst_mode_flag = on;
}

} // namespace dxpriv::pg
