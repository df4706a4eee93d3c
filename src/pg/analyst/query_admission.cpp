// Analysts' validated queries: counted protected references, built-in functions, owner-checked reads.
#include "pg/analyst/query_admission.h"

#include "pg/analyst/analyst_context.h"
#include "pg/analyst/refusals.h"

#include "pg/guard.h"

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

// What admit_walker carries: the analyst's context, and the first protected relation found with
// row-level security on (refused after the walk: no C++ error is thrown through PostgreSQL's walker).
struct Admission {
	const AnalystContext *ac;
	Oid row_security = InvalidOid;
};

// Walker behind admit_protected_reads.
bool
admit_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *adm = static_cast<Admission *>(ctx);
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(admit_walker), ctx,
		                         QTW_EXAMINE_RTES_BEFORE);
	if (IsA(node, RangeTblEntry)) {
		RangeTblEntry *rte = castNode(RangeTblEntry, node);
		if (rte->rtekind == RTE_RELATION && adm->ac->is_protected(rte->relid)) {
			HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(rte->relid));
			if (HeapTupleIsValid(tup)) {
				const Form_pg_class form = (Form_pg_class) GETSTRUCT(tup);
				rte->checkAsUser = form->relowner;
				// The read runs as the owner, whom the table's policies exempt: an analyst they
				// would restrict would get answers over rows they hide (review6). PostgreSQL applies
				// only the named table's policies (not its partitions'), so this table's flag decides.
				if (form->relrowsecurity && !OidIsValid(adm->row_security))
					adm->row_security = rte->relid;
				ReleaseSysCache(tup);
			}
		}
		return false;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(admit_walker), ctx);
}

} // namespace

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
require_builtin_immutable(Node *expr, const char *where)
{
	if (expr)
		builtin_walker(expr, const_cast<char *>(where));
}

// See analyst_guard.h.
void
admit_protected_reads(Query *q, const AnalystContext &ac)
{
	Admission adm{&ac};
	query_tree_walker(q, reinterpret_cast<bool (*)()>(admit_walker), &adm, QTW_EXAMINE_RTES_BEFORE);
	if (OidIsValid(adm.row_security) && !has_bypassrls_privilege(GetUserId()))
		fail(ERRCODE_FEATURE_NOT_SUPPORTED,
		     "protected table \"" + relation_for_hint(adm.row_security) +
		         "\" has row-level security, which dx answers cannot apply",
		     "dx answers are computed over every row of the table as its owner reads it; disable row level security "
		     "on it, or grant the analyst BYPASSRLS if its answers may cover every row.");
}

} // namespace dxpriv::pg
