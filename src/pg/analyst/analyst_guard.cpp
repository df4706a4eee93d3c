// Analyst enforcement: side-channel deny list, catalog view substitution, plain-aggregate rewriting
// and owner-checked reads of protected tables for validated queries.
#include "pg/analyst/analyst_guard.h"
#include "pg/analyst/pg_class_sizes.h"

#include "pg/metadata/catalog.h"
#include "pg/executor/agg_support.h"
#include "pg/guard.h"
#include "pg/plan_walk.h"
#include "pg/planner/node_build.h"

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
const char *
statistics_extension_of(Oid classid, Oid objid)
{
	if (objid < FirstNormalObjectId) // built-in objects belong to no extension
		return nullptr;
	const Oid ext = getExtensionOfObject(classid, objid);
	if (!OidIsValid(ext))
		return nullptr;
	static const char *const names[] = {"pg_stat_statements", "pg_stat_monitor", "pg_stat_kcache", "pg_qualstats",
	                                    "pg_store_plans",     "pgstattuple",     "pg_buffercache", "pg_freespacemap",
	                                    "pg_visibility",      "pageinspect",     "pg_wait_sampling"};
	const char *name = get_extension_name(ext);
	for (const char *n : names)
		if (name && strcmp(name, n) == 0)
			return n;
	return nullptr;
}

[[noreturn]] void
refuse_statistics_extension(const std::string &object, const char *extension)
{
	fail(ERRCODE_INSUFFICIENT_PRIVILEGE, std::string("analysts cannot use ") + object + " of extension " + extension,
	     "Statement and relation statistics count the rows of protected tables (the owner's queries included) and "
	     "the pages dx statements read; ask the DBA for figures about unprotected tables.");
}

// Raises for a function an analyst may not call anywhere.
bool
check_function_allowed(Oid fn, void *ctx)
{
	char *name = get_func_name(fn);
	if (name && get_func_namespace(fn) == PG_CATALOG_NAMESPACE && is_statistics_function(name))
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, std::string("analysts cannot call ") + name,
		     "Table sizes and statistics reveal information about protected rows.");
	if (const char *ext = statistics_extension_of(ProcedureRelationId, fn))
		refuse_statistics_extension(std::string("function ") + (name ? name : "?"), ext);
	check_citus_function(fn, ctx != nullptr); // ctx: set when walking a plan
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
	std::map<Oid, Oid> out;
	for (const Swap &sw : swaps) {
		Oid fn = LookupFuncName(list_make2(makeString(pstrdup("dx")), makeString(pstrdup(sw.name))), sw.nargs,
		                        sw.args, true);
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

// OID of schema.name (a relation), or InvalidOid.
Oid
relation_oid(const char *schema, const char *name)
{
	Oid nsp = get_namespace_oid(schema, true);
	return OidIsValid(nsp) ? get_relname_relid(name, nsp) : InvalidOid;
}

struct PlainAggRewrite {
	const ExtensionObjects *ext;
	Query *q;
	int rewritten = 0;
};

// The table q reads directly (its one range table entry), or InvalidOid.
Oid
read_table(Query *q)
{
	if (list_length(q->rtable) != 1)
		return InvalidOid;
	RangeTblEntry *rte = linitial_node(RangeTblEntry, q->rtable);
	return rte->rtekind == RTE_RELATION ? rte->relid : InvalidOid;
}

// Name of the column expr refers to when it is a column of q's table (implicit casts stripped),
// else "<column>"; for the examples of hints.
std::string
column_for_hint(Query *q, Node *expr)
{
	Node *e = expr ? strip_implicit_coercions(expr) : nullptr;
	const Oid rel = read_table(q);
	if (e && IsA(e, Var) && OidIsValid(rel) && castNode(Var, e)->varattno > 0) {
		char *att = get_attname(rel, castNode(Var, e)->varattno, true);
		if (att)
			return quote_identifier(att);
	}
	return "<column>";
}

std::string
table_for_hint(Query *q)
{
	return relation_for_hint(read_table(q));
}

// The first aggregated argument of a, or nullptr.
Node *
first_arg(Aggref *a)
{
	return a->args ? (Node *) linitial_node(TargetEntry, a->args)->expr : nullptr;
}

// count(col) on a column that is not declared but NOT NULL (a primary key such as id): every row
// counts, so it is count(*). Declared columns keep dx.count(col) (NULL after clamping counts 0);
// a nullable undeclared column stays refused (whether it is NULL is data).
bool
counts_every_row(Query *q, Aggref *a)
{
	if (a->aggstar || list_length(a->args) != 1 || a->aggdistinct)
		return false;
	Node *e = first_arg(a);
	const Oid rel = read_table(q);
	if (!e || !IsA(e, Var) || !OidIsValid(rel))
		return false;
	Var *v = castNode(Var, e);
	if (v->varlevelsup != 0 || v->varno != 1 || v->varattno <= 0)
		return false;
	TablePolicy policy;
	if (!load_table_policy(rel, policy) || policy.find(v->varattno))
		return false; // not a directly protected table (children are refused elsewhere), or declared
	bool notnull = false;
	HeapTuple tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(rel), Int16GetDatum(v->varattno));
	if (HeapTupleIsValid(tup)) {
		notnull = ((Form_pg_attribute) GETSTRUCT(tup))->attnotnull;
		ReleaseSysCache(tup);
	}
	return notnull;
}

// count(DISTINCT unit) on the privacy unit column of the table q reads: the number of units, which
// dx.count_units answers (README "Privacy units").
bool
counts_units(Query *q, Aggref *a)
{
	if (!a->aggdistinct || list_length(a->args) != 1)
		return false;
	Node *e = strip_implicit_coercions(first_arg(a));
	const Oid rel = read_table(q);
	if (!e || !IsA(e, Var) || !OidIsValid(rel))
		return false;
	Var *v = castNode(Var, e);
	TablePolicy policy;
	return v->varlevelsup == 0 && v->varno == 1 && load_table_policy(rel, policy) && policy.unit.present() &&
	       v->varattno == policy.unit.attnum;
}

// Refusals of built-in aggregates that have no private counterpart, with what to write instead.
[[noreturn]] void
refuse_plain_aggregate(Query *q, Aggref *a, const char *name)
{
	const std::string table = table_for_hint(q), col = column_for_hint(q, first_arg(a));
	const std::string fn = std::string(name);
	const char *rel = OidIsValid(read_table(q)) ? get_rel_name(read_table(q)) : nullptr;
	const std::string quoted = std::string("\"") + (rel ? rel : "?") + "\"";
	if (fn == "min" || fn == "max")
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "aggregate " + fn + " cannot be used by analysts on protected table " + quoted,
		     "The " + std::string(fn == "min" ? "smallest" : "largest") +
		         " value is one row's value. A private estimate of a low or high value is a quantile: SELECT "
		         "dx.quantile(" + col + ", " + (fn == "min" ? "0.05" : "0.95") + ") FROM " + table +
		         " (or percentile_disc(" + (fn == "min" ? "0.05" : "0.95") + ") WITHIN GROUP (ORDER BY " + col +
		         ")); dx.mode(" + col + ") gives the most frequent value.");
	TablePolicy policy;
	if (a->aggdistinct && OidIsValid(read_table(q)) && load_table_policy(read_table(q), policy) && policy.unit.present()) {
		const std::string unit = quote_identifier(policy.unit.column.c_str());
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
		     fn + "(DISTINCT ...) cannot be used by analysts on protected table " + quoted + " except count(DISTINCT " +
		         unit + ")",
		     "count(DISTINCT " + unit + ") counts the table's privacy units (people); the number of distinct values "
		     "of anything else is not a sum over people. SELECT " + col + ", count(DISTINCT " + unit + ") FROM " +
		         table + " GROUP BY " + col + " counts the people of every declared value.");
	}
	if (a->aggdistinct)
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
		     fn + "(DISTINCT ...) cannot be used by analysts on protected table " + quoted,
		     "The number of distinct values is not a sum over rows and has no noisy counterpart. SELECT " + col +
		         ", count(*) FROM " + table + " GROUP BY " + col +
		         " counts the rows of every declared value; dx.mode(" + col +
		         ") gives the most frequent value and dx.quantile(" + col + ", 0.5) the median.");
	fail(ERRCODE_INSUFFICIENT_PRIVILEGE, fn + " WITHIN GROUP with an array of levels cannot be used by analysts",
	     "Write one aggregate per level, e.g. SELECT percentile_disc(0.25) WITHIN GROUP (ORDER BY " + col +
	         "), percentile_disc(0.75) WITHIN GROUP (ORDER BY " + col + ") FROM " + table + ", or dx.quantile(" +
	         col + ", 0.25).");
}

// Whether the ORDER BY of an ordered-set aggregate sorts in descending order; raises for an
// ordering that is not the column type's default btree order (ORDER BY ... USING).
bool
sorts_descending(Aggref *a)
{
	if (list_length(a->aggorder) != 1)
		return false;
	SortGroupClause *s = linitial_node(SortGroupClause, a->aggorder);
	bool reverse = false;
	if (!OidIsValid(get_equality_op_for_ordering_op(s->sortop, &reverse)))
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "ORDER BY ... USING cannot be used in percentiles by analysts",
		     "Order by the column itself (ASC or DESC): percentile_disc(0.5) WITHIN GROUP (ORDER BY <column>).");
	return reverse;
}

// A marker aggregate with the given arguments, in place of the built-in a; cast back to a's type.
Node *
marker_call(Aggref *a, Oid marker, List *exprs, const ExtensionObjects &ext)
{
	Aggref *m = static_cast<Aggref *>(copyObjectImpl(a));
	m->aggfnoid = marker;
	m->aggkind = AGGKIND_NORMAL;
	m->aggdirectargs = NIL;
	m->aggorder = NIL;
	m->aggdistinct = NIL;
	m->aggvariadic = false;
	m->args = NIL;
	m->aggargtypes = NIL;
	ListCell *lc;
	foreach (lc, exprs) {
		Expr *e = (Expr *) lfirst(lc);
		m->args = lappend(m->args, makeTargetEntry(e, static_cast<AttrNumber>(list_length(m->args) + 1), nullptr, false));
		m->aggargtypes = lappend_oid(m->aggargtypes, exprType((Node *) e));
	}
	if (marker == ext.count_star || marker == ext.count_any || marker == ext.count_units)
		m->aggtype = INT8OID;
	else if (marker == ext.sum_any || marker == ext.avg_any)
		m->aggtype = FLOAT8OID;
	else // dx.mode, dx.quantile: the column's own type
		m->aggtype = exprType((Node *) linitial(exprs));
	m->aggstar = false; // as the marker rewrite of count(*) always had it
	if (marker == ext.mode_any || marker == ext.quantile_any)
		m->aggcollid = exprCollation((Node *) linitial(exprs));
	if (m->aggtype == a->aggtype)
		return (Node *) m;
	Node *cast = coerce_to_target_type(nullptr, (Node *) m, m->aggtype, a->aggtype, -1, COERCION_EXPLICIT,
	                                   COERCE_IMPLICIT_CAST, -1);
	if (!cast)
		fail(ERRCODE_DATATYPE_MISMATCH,
		     std::string("the answer of ") + format_type_be(m->aggtype) + " cannot be cast to " + format_type_be(a->aggtype),
		     "Write dx.quantile(column, p) or dx.mode(column) directly.");
	return cast;
}

// The dx counterpart of a built-in aggregate at q's top level, or nullptr when it has none (the
// statement is then refused as before). Raises for built-ins with a known private alternative.
Node *
standard_spelling(Aggref *a, PlainAggRewrite &c)
{
	const ExtensionObjects &ext = *c.ext;
	if (get_func_namespace(a->aggfnoid) != PG_CATALOG_NAMESPACE || a->agglevelsup != 0)
		return nullptr;
	char *name = get_func_name(a->aggfnoid);
	if (!name)
		return nullptr;
	const std::string fn = name;
	auto args = [&] {
		List *out = NIL;
		ListCell *lc;
		foreach (lc, a->args)
			out = lappend(out, lfirst_node(TargetEntry, lc)->expr);
		return out;
	};
	if (a->aggkind == AGGKIND_ORDERED_SET) {
		// percentile_cont(p) / percentile_disc(p) / mode() WITHIN GROUP (ORDER BY col): the exponential
		// mechanism over the declared values of col (dx.quantile, dx.mode). dx.quantile answers a
		// declared point, so percentile_cont does not interpolate.
		if (list_length(a->args) != 1)
			return nullptr;
		Expr *col = (Expr *) strip_implicit_coercions((Node *) linitial_node(TargetEntry, a->args)->expr);
		if (!IsA(col, Var))
			fail(ERRCODE_FEATURE_NOT_SUPPORTED, fn + " WITHIN GROUP needs a declared column in ORDER BY, not an expression",
			     "It is answered by dx." + std::string(fn == "mode" ? "mode" : "quantile") +
			         ", whose answer is one of the column's declared values; transform the answer instead, e.g. "
			         "SELECT 2 * percentile_disc(0.5) WITHIN GROUP (ORDER BY <column>) FROM " + table_for_hint(c.q) + ".");
		if (fn == "mode" && a->aggdirectargs == NIL)
			return marker_call(a, ext.mode_any, list_make1(col), ext);
		if ((fn == "percentile_cont" || fn == "percentile_disc") && list_length(a->aggdirectargs) == 1) {
			Expr *p = (Expr *) linitial(a->aggdirectargs);
			if (exprType((Node *) p) != FLOAT8OID)
				refuse_plain_aggregate(c.q, a, name);
			if (sorts_descending(a)) {
				// the p-quantile in descending order is the (1 - p)-quantile in ascending order
				const Const *folded = folded_const((Node *) p);
				if (!folded || folded->constisnull)
					fail(ERRCODE_FEATURE_NOT_SUPPORTED, fn + " with ORDER BY ... DESC needs a constant level",
					     "Write the ascending level instead: " + fn + "(1 - p) WITHIN GROUP (ORDER BY " +
					         column_for_hint(c.q, (Node *) col) + ").");
				p = (Expr *) float8_const(1.0 - DatumGetFloat8(folded->constvalue));
			}
			return marker_call(a, ext.quantile_any, list_make2(col, p), ext);
		}
		return nullptr;
	}
	if (a->aggkind != AGGKIND_NORMAL)
		return nullptr;
	const bool reads_table = OidIsValid(read_table(c.q));
	if ((fn == "min" || fn == "max") && reads_table)
		refuse_plain_aggregate(c.q, a, name);
	if (fn != "count" && fn != "sum" && fn != "avg")
		return nullptr;
	if (fn == "count" && reads_table && counts_units(c.q, a))
		return marker_call(a, ext.count_units, args(), ext);
	if (a->aggdistinct && reads_table)
		refuse_plain_aggregate(c.q, a, name);
	if (fn == "count" && (a->aggstar || counts_every_row(c.q, a)))
		return marker_call(a, ext.count_star, NIL, ext);
	return marker_call(a, fn == "count" ? ext.count_any : fn == "sum" ? ext.sum_any : ext.avg_any, args(), ext);
}

// Mutator behind rewrite_plain_aggregates.
Node *
plain_agg_mutator(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	auto *c = static_cast<PlainAggRewrite *>(ctx);
	if (IsA(node, Aggref)) {
		Node *m = standard_spelling(castNode(Aggref, node), *c);
		if (!m)
			return node;
		c->rewritten++;
		return m;
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

// Raises when an analyst role holds the privileges of a predefined role that reads or writes
// around dxpriv: the server's files (data files, the log with auto_explain plans), programs run as
// the server, and every table's rows (other analysts' ledger rows, dxpriv's catalog and budgets).
static void
refuse_bypass_roles(Oid who)
{
	static const struct {
		Oid role;
		const char *name;
	} bypass[] = {{ROLE_PG_READ_SERVER_FILES, "pg_read_server_files"},
	              {ROLE_PG_WRITE_SERVER_FILES, "pg_write_server_files"},
	              {ROLE_PG_EXECUTE_SERVER_PROGRAM, "pg_execute_server_program"},
	              {ROLE_PG_READ_ALL_DATA, "pg_read_all_data"},
	              {ROLE_PG_WRITE_ALL_DATA, "pg_write_all_data"}};
	for (const auto &b : bypass)
		if (has_privs_of_role(who, b.role)) {
			const char *name = GetUserNameFromId(who, true);
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
			     std::string("role \"") + (name ? name : "?") + "\" of an analyst's statement has the privileges of " + b.name,
			     std::string(b.name) + " reads or writes around dxpriv (data files, the server log, every table's "
			     "rows, dxpriv's catalog); REVOKE " + b.name + " FROM the analyst, or dx.remove_analyst.");
		}
}

// See analyst_guard.h.
AnalystContext
load_analyst_context(const ExtensionObjects &ext)
{
	// pg_upgrade's restore (binary-upgrade mode: the server admits only pg_upgrade's superuser
	// connections, on its own socket) creates dx's tables one at a time, so they cannot be read
	// yet; no analyst statement runs in that mode.
	if (IsBinaryUpgrade)
		return AnalystContext{};
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
	if (ac.analyst) {
		refuse_client_auto_explain();
		// both roles: SET ROLE from an analyst's session to a role holding one does not help either
		for (Oid who : {GetUserId(), GetSessionUserId()})
			if (!superuser_arg(who))
				refuse_bypass_roles(who);
	}
	return ac;
}

// See analyst_guard.h.
void
install_catalog_cache_invalidation()
{
	CacheRegisterRelcacheCallback(on_relcache_invalidation, (Datum) 0);
}

// See analyst_guard.h.
std::vector<Oid>
analyst_roles(const ExtensionObjects &ext)
{
	(void) load_analyst_context(ext); // refreshes the cache
	return catalog_cache.analysts;
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
	            relation_oid("dx", "analyst_tables"), relation_oid("dx", "analyst_stat_user_tables"),
	            size_function_swaps()};
	if (!OidIsValid(vs.dx_columns) || !OidIsValid(vs.dx_tables))
		return;
	query_tree_walker(q, reinterpret_cast<bool (*)()>(view_swap_walker), &vs, QTW_EXAMINE_RTES_BEFORE);
}

// See analyst_guard.h.
int
rewrite_plain_aggregates(Query *q, const ExtensionObjects &ext)
{
	PlainAggRewrite c{&ext, q};
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
	if (Const *k = release_params_const(node, *s->ext)) // a distributed release (planner/distributed.h)
		s->relids.push_back(parse_noise_params(DatumGetArrayTypeP(k->constvalue)).relid);
	if (IsA(node, Aggref) && castNode(Aggref, node)->aggfnoid == s->ext->em_collect) // (its mode/quantile/median)
		if (Const *k = aggref_params_const(castNode(Aggref, node)))
			s->relids.push_back(parse_noise_params(DatumGetArrayTypeP(k->constvalue)).relid);
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(admitted_walker), ctx);
}

// Finds a scan of a protected relation that no noisy aggregate above it releases: a view or
// function over the table placed next to a release (a join, UNION ALL, a CTE) reads the table in
// the same plan as the release, so a per-table check would admit its raw rows. A scan is released
// when an Agg node above it (in its own plan tree; a subplan counts on its own) computes a noisy
// aggregate of the scanned relation's policy table.
struct ReleasedScans {
	const ExtensionObjects *ext;
	const AnalystContext *ac;
	List *rtable;
	Oid unreleased = InvalidOid; // the first scanned protected relation with no release above
};

void
find_unreleased_scan(Plan *plan, std::vector<Oid> released, ReleasedScans &r)
{
	if (!plan || OidIsValid(r.unreleased))
		return;
	if (IsA(plan, Agg)) {
		AdmittedScan s{r.ext, {}};
		admitted_walker((Node *) plan->targetlist, &s);
		admitted_walker((Node *) plan->qual, &s);
		released.insert(released.end(), s.relids.begin(), s.relids.end());
	}
	switch (nodeTag(plan)) {
	case T_SeqScan:
	case T_SampleScan:
	case T_IndexScan:
	case T_IndexOnlyScan:
	case T_BitmapHeapScan:
	case T_TidScan:
	case T_TidRangeScan: {
		const Index rti = ((Scan *) plan)->scanrelid;
		if (rti > 0 && rti <= static_cast<Index>(list_length(r.rtable))) {
			const Oid rel = rt_fetch(rti, r.rtable)->relid;
			const Oid policy = r.ac->policy_table(rel);
			if (OidIsValid(policy) && std::find(released.begin(), released.end(), policy) == released.end())
				r.unreleased = rel;
		}
		break;
	}
	default:
		break;
	}
	find_unreleased_scan(plan->lefttree, released, r);
	find_unreleased_scan(plan->righttree, released, r);
	List *children = extra_child_plans(plan);
	ListCell *lc;
	foreach (lc, children)
		find_unreleased_scan((Plan *) lfirst(lc), released, r);
}

// Raises for a size or statistics function in a plan: pg_stat_get_* (and every other pg_stat_*
// function) wherever it is reached -- a column DEFAULT, an inlined SQL function body, a view the
// DBA granted -- since it would count protected rows. dx.analyst_stat_user_tables reads them in
// dxpriv's own statement (stat_tables.cpp), never in the analyst's plan.
bool
check_plan_function_allowed(Oid fn, void *ctx)
{
	char *name = get_func_name(fn);
	if (name && strncmp(name, "pg_stat_", 8) == 0)
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
		     std::string("function ") + name + " cannot be reached by analysts' statements",
		     "Statistics functions count protected rows; read dx.analyst_stat_user_tables (pg_stat_user_tables "
		     "as analysts see it) instead.");
	return check_function_allowed(fn, ctx);
}

// Walker over a plan expression: raises for a size function (check_plan_function_allowed).
bool
plan_function_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	static char in_plan = 1;
	if (check_functions_in_node(node, check_plan_function_allowed, &in_plan))
		return true;
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(plan_function_walker), ctx);
}

// Every expression of a plan tree (targetlists, quals and the node types' own expressions),
// through subplans: size functions reached at execution only -- a column DEFAULT of an INSERT, an
// inlined SQL function whose body was never analysed as the analyst's -- are refused like the ones
// an analyst writes (there, dxpriv substitutes its dx.analyst_*_size functions).
void
check_plan_functions(Plan *plan)
{
	if (!plan)
		return;
	auto walk = [](void *n) { plan_function_walker(static_cast<Node *>(n), nullptr); };
	walk(plan->targetlist);
	walk(plan->qual);
	auto walk_plans = [](List *plans) {
		ListCell *lc;
		foreach (lc, plans)
			check_plan_functions((Plan *) lfirst(lc));
	};
	switch (nodeTag(plan)) {
	case T_Result:
		walk(((Result *) plan)->resconstantqual);
		break;
	case T_ProjectSet:
		break;
	case T_ModifyTable: {
		auto *m = (ModifyTable *) plan;
		walk(m->returningLists);
		walk(m->onConflictSet);
		walk(m->onConflictWhere);
		walk(m->withCheckOptionLists);
		break;
	}
	case T_Append:
		walk_plans(((Append *) plan)->appendplans);
		break;
	case T_MergeAppend:
		walk_plans(((MergeAppend *) plan)->mergeplans);
		break;
	case T_BitmapAnd:
		walk_plans(((BitmapAnd *) plan)->bitmapplans);
		break;
	case T_BitmapOr:
		walk_plans(((BitmapOr *) plan)->bitmapplans);
		break;
	case T_IndexScan:
		walk(((IndexScan *) plan)->indexqual);
		walk(((IndexScan *) plan)->indexorderby);
		break;
	case T_IndexOnlyScan:
		walk(((IndexOnlyScan *) plan)->indexqual);
		walk(((IndexOnlyScan *) plan)->indexorderby);
		break;
	case T_BitmapIndexScan:
		walk(((BitmapIndexScan *) plan)->indexqual);
		break;
	case T_BitmapHeapScan:
		walk(((BitmapHeapScan *) plan)->bitmapqualorig);
		break;
	case T_TidScan:
		walk(((TidScan *) plan)->tidquals);
		break;
	case T_TidRangeScan:
		walk(((TidRangeScan *) plan)->tidrangequals);
		break;
	case T_SubqueryScan:
		check_plan_functions(((SubqueryScan *) plan)->subplan);
		break;
	case T_FunctionScan:
		walk(((FunctionScan *) plan)->functions);
		break;
	case T_ValuesScan:
		walk(((ValuesScan *) plan)->values_lists);
		break;
	case T_TableFuncScan:
		walk(((TableFuncScan *) plan)->tablefunc);
		break;
	case T_SampleScan:
		walk(((SampleScan *) plan)->tablesample);
		break;
	case T_ForeignScan:
		walk(((ForeignScan *) plan)->fdw_exprs);
		break;
	case T_CustomScan:
		walk(((CustomScan *) plan)->custom_exprs);
		walk_plans(((CustomScan *) plan)->custom_plans);
		break;
	case T_NestLoop:
		walk(((Join *) plan)->joinqual);
		break;
	case T_MergeJoin:
		walk(((Join *) plan)->joinqual);
		walk(((MergeJoin *) plan)->mergeclauses);
		break;
	case T_HashJoin:
		walk(((Join *) plan)->joinqual);
		walk(((HashJoin *) plan)->hashclauses);
		walk(((HashJoin *) plan)->hashkeys);
		break;
	case T_Hash:
		walk(((Hash *) plan)->hashkeys);
		break;
	case T_Memoize:
		walk(((Memoize *) plan)->param_exprs);
		break;
	case T_WindowAgg:
		walk(((WindowAgg *) plan)->startOffset);
		walk(((WindowAgg *) plan)->endOffset);
		walk(((WindowAgg *) plan)->runConditionOrig);
		break;
	case T_Limit:
		walk(((Limit *) plan)->limitOffset);
		walk(((Limit *) plan)->limitCount);
		break;
	default:
		break;
	}
	check_plan_functions(plan->lefttree);
	check_plan_functions(plan->righttree);
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
	if (stmt->commandType != CMD_UTILITY) {
		check_plan_functions(stmt->planTree);
		ListCell *sp;
		foreach (sp, stmt->subplans)
			check_plan_functions((Plan *) lfirst(sp));
	}
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
	walk_plan_expressions(stmt, [&](Node *n) { admitted_walker(n, &s); });
	// Citus runs parts of a charged distributed statement as nested statements, as the table's owner
	// (planner/distributed.cpp); an analyst's own function running inside a statement is not one
	auto part_of_running = [&](Oid policy) {
		return released_by_running_statement(policy) && pg_class_ownercheck(policy, GetUserId());
	};
	auto refuse = [&](Oid rel) {
		const char *name = get_rel_name(rel);
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
		     std::string("analysts can read protected table \"") + (name ? name : "?") + "\" only through aggregates",
		     "A view, rule, policy, function or parent table that reads a protected table is not a way around "
		     "dxpriv. " + analyst_hint(rel));
	};
	// a partition or inheritance child is released by the aggregate of the table whose policy covers it
	for (Oid rel : touched)
		if (std::find(s.relids.begin(), s.relids.end(), ac.policy_table(rel)) == s.relids.end() &&
		    !part_of_running(ac.policy_table(rel)))
			refuse(rel);
	// and every scan of such a table feeds a release of it (not a view read next to a release)
	ReleasedScans r{ext, &ac, stmt->rtable};
	find_unreleased_scan(stmt->planTree, {}, r);
	foreach (lc, stmt->subplans)
		find_unreleased_scan((Plan *) lfirst(lc), {}, r);
	if (OidIsValid(r.unreleased) && !part_of_running(ac.policy_table(r.unreleased)))
		refuse(r.unreleased);
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
