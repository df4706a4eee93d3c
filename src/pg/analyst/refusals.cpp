// Refusals for analysts that name what was refused in the analyst's own query and what to do
// instead; the utility-statement guard (EXPLAIN and stored results, also through EXECUTE); the
// GROUP BY key check; the filter that keeps LOG/DEBUG messages away from analysts' clients.
#include "pg/analyst/refusals.h"

#include "pg/analyst/analyst_context.h"

#include "pg/guard.h"
#include "pg/metadata/extension_objects.h"
#include "pg/elevated/sealed_execution.h"
#include "pg/metadata/policy.h"

extern "C" {
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "commands/prepare.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/elog.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"
#include "utils/ruleutils.h"
}

#include <algorithm>
#include <cstring>

namespace dxpriv::pg {

namespace {

constexpr int kExplainScope = 1, kStoreScope = 2;
int explain_depth = 0; // > 0 while an analyst's EXPLAIN runs
int store_depth = 0;   // > 0 while an analyst's CREATE TABLE AS / SELECT INTO / materialized view runs
const char *store_statement = "CREATE TABLE AS"; // the innermost running one, for its refusal
bool last_seen_analyst = false;

// "name" of a relation, for messages.
std::string
rel_name(Oid relid)
{
	const char *n = OidIsValid(relid) ? get_rel_name(relid) : nullptr;
	return std::string("\"") + (n ? n : "?") + "\"";
}

// The declared single column best suited to a GROUP BY example (an enumerated one if any).
const ColumnPolicy *
example_column(const TablePolicy &policy)
{
	const ColumnPolicy *best = nullptr;
	for (const ColumnPolicy &c : policy.columns) {
		if (c.is_group())
			continue;
		if (c.domain.kind() == DomainKind::Enumerated && c.domain.size() <= 100)
			return &c;
		if (!best)
			best = &c;
	}
	return best;
}

struct FirstRef {
	const AnalystContext *ac;
	Oid relid = InvalidOid;
};

bool
first_ref_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *f = static_cast<FirstRef *>(ctx);
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(first_ref_walker), ctx,
		                         QTW_EXAMINE_RTES_BEFORE);
	if (IsA(node, RangeTblEntry)) {
		RangeTblEntry *rte = castNode(RangeTblEntry, node);
		if (rte->rtekind == RTE_RELATION &&
		    (f->ac->is_protected(rte->relid) || (rte->inh && f->ac->has_protected_descendant(rte->relid)))) {
			f->relid = rte->relid;
			return true;
		}
		return false;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(first_ref_walker), ctx);
}

// First aggregate of q's own level (not inside a sublink), or nullptr.
bool
find_aggref(Node *node, void *ctx)
{
	if (!node)
		return false;
	if (IsA(node, Aggref) && castNode(Aggref, node)->agglevelsup == 0) {
		*static_cast<Aggref **>(ctx) = castNode(Aggref, node);
		return true;
	}
	if (IsA(node, Query) || IsA(node, SubLink))
		return false;
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(find_aggref), ctx);
}

const char *
command_name(CmdType t)
{
	switch (t) {
	case CMD_INSERT:
		return "INSERT";
	case CMD_UPDATE:
		return "UPDATE";
	case CMD_DELETE:
		return "DELETE";
	case CMD_MERGE:
		return "MERGE";
	default:
		return "this statement";
	}
}

// What a utility statement that reads a protected table is called in its refusal.
std::string
utility_name(Node *stmt)
{
	if (IsA(stmt, ExplainStmt))
		return "EXPLAIN";
	if (IsA(stmt, CreateTableAsStmt)) {
		auto *c = castNode(CreateTableAsStmt, stmt);
		if (c->objtype == OBJECT_MATVIEW)
			return "CREATE MATERIALIZED VIEW";
		return c->is_select_into ? "SELECT INTO" : "CREATE TABLE AS";
	}
	if (IsA(stmt, RefreshMatViewStmt))
		return "REFRESH MATERIALIZED VIEW";
	return "this statement";
}

[[noreturn]] void
refuse_explain(const std::string &what_reads)
{
	fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "EXPLAIN cannot be used by analysts on " + what_reads,
	     "Plans show row estimates and, with ANALYZE, exact row counts. Use SELECT * FROM dx.explain('<query>') "
	     "to see what a query would cost and how noisy its answer would be.");
}

[[noreturn]] void
refuse_store(const std::string &statement, const std::string &what_reads)
{
	fail(ERRCODE_INSUFFICIENT_PRIVILEGE, statement + " cannot be used by analysts on " + what_reads,
	     "Analysts cannot store results computed from protected tables in the database; run the SELECT itself "
	     "and keep its noisy answer in the client.");
}

// A protected relation among the relations a prepared statement reads, or InvalidOid.
Oid
prepared_statement_protected_rel(const char *name, const AnalystContext &ac)
{
	PreparedStatement *ps = nullptr;
	pg_call([&] { ps = FetchPreparedStatement(name, false); });
	if (!ps || !ps->plansource)
		return InvalidOid;
	ListCell *lc;
	foreach (lc, ps->plansource->relationOids) {
		const Oid r = lfirst_oid(lc);
		if (ac.is_protected(r) || ac.has_protected_descendant(r))
			return r;
	}
	// relationOids lists the relations of the rewritten query; its range tables are checked as well
	foreach (lc, ps->plansource->query_list) {
		Node *q = (Node *) lfirst(lc);
		if (IsA(q, Query)) {
			Oid r = first_protected_ref(castNode(Query, q), ac);
			if (OidIsValid(r))
				return r;
		}
	}
	return InvalidOid;
}

// True for a message of auto_explain (a plan with its row counts), whatever level the DBA set for
// it (auto_explain.log_level = notice or warning reaches clients).
bool
from_auto_explain(const ErrorData *edata)
{
	static const char file[] = "auto_explain.c";
	const size_t n = edata->filename ? strlen(edata->filename) : 0;
	return n >= sizeof file - 1 && strcmp(edata->filename + n - (sizeof file - 1), file) == 0;
}

} // namespace

// See analyst_guard.h.
void
analyst_filter_log(ErrorData *edata)
{
	// dxpriv's own catalog queries (which run before the session is known to be an analyst's) too
	if ((edata->elevel < NOTICE || (edata->elevel < ERROR && from_auto_explain(edata))) && edata->output_to_client &&
	    (last_seen_analyst || in_internal_query()))
		edata->output_to_client = false;
}

// See analyst_guard.h.
void
note_analyst_session(bool analyst)
{
	last_seen_analyst = analyst;
}

// See analyst_guard.h.
std::string
relation_for_hint(Oid relid)
{
	const char *n = OidIsValid(relid) ? get_rel_name(relid) : nullptr;
	return n ? quote_identifier(n) : "<table>";
}

// See analyst_guard.h.
std::string
analyst_hint(Oid relid)
{
	const std::string table = relation_for_hint(relid);
	TablePolicy policy;
	const ColumnPolicy *col = load_table_policy(relid, policy) ? example_column(policy) : nullptr;
	std::string example;
	if (!col)
		example = "SELECT count(*) FROM " + table;
	else if (col->domain.kind() == DomainKind::Enumerated)
		example = "SELECT " + std::string(quote_identifier(col->name.c_str())) + ", count(*) FROM " + table +
		          " GROUP BY " + quote_identifier(col->name.c_str());
	else
		example = "SELECT count(*), avg(" + std::string(quote_identifier(col->name.c_str())) + ") FROM " + table;
	return "Analysts read protected tables only through aggregates, e.g. " + example +
	       "; dx.explain('<query>') shows a query's cost and noise.";
}

// See analyst_guard.h.
Oid
first_protected_ref(Query *q, const AnalystContext &ac)
{
	FirstRef f{&ac};
	query_tree_walker(q, reinterpret_cast<bool (*)()>(first_ref_walker), &f, QTW_EXAMINE_RTES_BEFORE);
	return f.relid;
}

// See analyst_guard.h.
void
refuse_unaggregated_read(Query *q, const AnalystContext &ac)
{
	const Oid rel = first_protected_ref(q, ac);
	const Oid owner = OidIsValid(ac.policy_table(rel)) ? ac.policy_table(rel) : rel;
	const std::string table = "protected table " + rel_name(rel);
	const std::string hint = analyst_hint(owner);
	if (q->commandType != CMD_SELECT)
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
		     std::string(command_name(q->commandType)) + " statements of analysts cannot read " + table,
		     "dxpriv answers only SELECT statements; run the aggregate on its own and keep its noisy answer in the "
		     "client. " + hint);
	ListCell *lc;
	foreach (lc, q->rtable)
		if (lfirst_node(RangeTblEntry, lc)->lateral)
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "LATERAL cannot be used by analysts with " + table,
			     "A query may read one protected table and nothing else. " + hint);
	bool reads_here = false; // the protected table is in q's own FROM (not in a subquery or CTE)
	foreach (lc, q->rtable) {
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
		reads_here = reads_here || (rte->rtekind == RTE_RELATION && rte->relid == rel);
	}
	if (reads_here && (list_length(q->jointree->fromlist) != 1 || !IsA(linitial(q->jointree->fromlist), RangeTblRef)))
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "joins cannot be used by analysts with " + table,
		     "A query may read one protected table and nothing else. " + hint);
	if (!reads_here)
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
		     "subqueries, CTEs and set operations cannot read " + table + " for analysts",
		     "Write one SELECT with aggregates directly over the table. " + hint);
	if (q->hasWindowFuncs)
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "window functions cannot be used by analysts with " + table, hint);
	Aggref *agg = nullptr;
	if (q->hasAggs && (find_aggref((Node *) q->targetList, &agg) || find_aggref(q->havingQual, &agg))) {
		const char *name = get_func_name(agg->aggfnoid);
		const Oid nsp = get_func_namespace(agg->aggfnoid);
		std::string full = (nsp == PG_CATALOG_NAMESPACE ? "" : std::string(get_namespace_name(nsp)) + ".") +
		                   (name ? name : "?");
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "aggregate " + full + " cannot be used by analysts on " + table,
		     "Analysts aggregate protected tables with count, sum and avg (answered with noise) or dx.count, "
		     "dx.sum, dx.avg, dx.linear, dx.mode and dx.quantile; dx.ibu reconstructs distributions from "
		     "randomised reports, not from protected tables. " + hint);
	}
	fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "analysts can read " + table + " only through aggregates", hint);
}

// See analyst_guard.h.
void
refuse_analyst_utility(Node *stmt, Oid relid)
{
	const std::string what = "protected table " + rel_name(relid);
	if (IsA(stmt, ExplainStmt))
		refuse_explain(what);
	refuse_store(utility_name(stmt), what);
}

// See analyst_guard.h.
int
enter_analyst_utility(Node *stmt)
{
	int scope = 0;
	if (IsA(stmt, ExplainStmt))
		scope = kExplainScope;
	else if (IsA(stmt, CreateTableAsStmt) || IsA(stmt, RefreshMatViewStmt))
		scope = kStoreScope;
	const ExtensionObjects *ext = scope ? extension_objects() : nullptr;
	if (!ext)
		return 0;
	const AnalystContext ac = load_analyst_context(*ext);
	if (!ac.analyst)
		return 0;
	// EXPLAIN [ANALYZE] [CREATE TABLE ... AS] EXECUTE p, CREATE TABLE ... AS EXECUTE p: the prepared
	// statement's query was analysed when it was prepared (maybe before the role became an analyst)
	Node *inner = IsA(stmt, ExplainStmt) ? castNode(ExplainStmt, stmt)->query
	              : IsA(stmt, CreateTableAsStmt) ? castNode(CreateTableAsStmt, stmt)->query
	                                             : nullptr;
	std::string statement = utility_name(stmt);
	while (inner) {
		Node *u = IsA(inner, Query) && castNode(Query, inner)->commandType == CMD_UTILITY
		              ? castNode(Query, inner)->utilityStmt
		              : (IsA(inner, Query) ? nullptr : inner);
		if (!u)
			break;
		if (IsA(u, CreateTableAsStmt)) {
			scope |= kStoreScope;
			inner = castNode(CreateTableAsStmt, u)->query;
			continue;
		}
		if (IsA(u, ExecuteStmt)) {
			const char *name = castNode(ExecuteStmt, u)->name;
			const Oid r = prepared_statement_protected_rel(name, ac);
			if (OidIsValid(r)) {
				const std::string what = std::string("prepared statement \"") + name + "\"" +
				                         ", which reads protected table " + rel_name(r);
				if (scope & kExplainScope)
					refuse_explain(what);
				refuse_store(statement, what);
			}
		}
		break;
	}
	if (scope & kExplainScope)
		explain_depth++;
	if (scope & kStoreScope) {
		store_depth++;
		store_statement = IsA(stmt, ExplainStmt) ? "CREATE TABLE AS" : IsA(stmt, RefreshMatViewStmt)
		                                                                   ? "REFRESH MATERIALIZED VIEW"
		                                                                   : castNode(CreateTableAsStmt, stmt)->objtype == OBJECT_MATVIEW
		                                                                         ? "CREATE MATERIALIZED VIEW"
		                                                                         : castNode(CreateTableAsStmt, stmt)->is_select_into ? "SELECT INTO"
		                                                                                                                             : "CREATE TABLE AS";
	}
	return scope;
}

// See analyst_guard.h.
void
leave_analyst_utility(int scope)
{
	if (scope & kExplainScope)
		explain_depth--;
	if (scope & kStoreScope)
		store_depth--;
}

// See analyst_guard.h.
void
refuse_protected_read_in_utility(Oid relid)
{
	const std::string what = "protected table " + rel_name(relid);
	if (explain_depth > 0)
		refuse_explain(what);
	if (store_depth > 0)
		refuse_store(store_statement, what);
	if (client_min_messages < NOTICE)
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
		     "client_min_messages below notice cannot be used by analysts on " + what,
		     "Debug and log messages (plans, executor statistics) describe the data; SET client_min_messages = notice.");
}

// See analyst_guard.h.
void
refuse_client_auto_explain()
{
	// INFO always reaches the client and NOTICE at the default client_min_messages, while
	// emit_log_hook (analyst_filter_log) only sees messages that also go to the server log
	const char *level = GetConfigOption("auto_explain.log_level", true, false);
	const char *min_duration = GetConfigOption("auto_explain.log_min_duration", true, false);
	if (!level || !min_duration || strcmp(min_duration, "-1") == 0)
		return;
	if (strcmp(level, "info") == 0 || strcmp(level, "notice") == 0 || strcmp(level, "warning") == 0)
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
		     std::string("auto_explain.log_level = ") + level + " would send plans with their row counts to an analyst's client",
		     "Plans with actual row counts describe the data: the DBA sets auto_explain.log_level to log (the default) "
		     "for analysts' sessions, for example ALTER ROLE <analyst> SET auto_explain.log_level = log.");
}

// ---- GROUP BY keys ----

namespace {

struct Ungrouped {
	List *group_exprs = NIL;
	Var *offender = nullptr;
};

// Finds a column reference of q's level outside aggregates that is no GROUP BY key.
bool
ungrouped_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *u = static_cast<Ungrouped *>(ctx);
	ListCell *lc;
	foreach (lc, u->group_exprs)
		if (equal(lfirst(lc), node))
			return false; // a GROUP BY key (other shapes of keys are refused later)
	if (IsA(node, Aggref) || IsA(node, GroupingFunc))
		return false; // aggregate arguments are evaluated per row, not shown
	if (IsA(node, Query))
		return false;
	if (IsA(node, Var) && castNode(Var, node)->varlevelsup == 0) {
		u->offender = castNode(Var, node);
		return true;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(ungrouped_walker), ctx);
}

} // namespace

// See analyst_guard.h.
void
check_grouped_references(Query *q)
{
	if (q->groupingSets) {
		bool all_empty = true;
		ListCell *lc;
		foreach (lc, q->groupingSets)
			all_empty = all_empty && IsA(lfirst(lc), GroupingSet) &&
			            castNode(GroupingSet, lfirst(lc))->kind == GROUPING_SET_EMPTY;
		if (all_empty)
			fail(ERRCODE_FEATURE_NOT_SUPPORTED, "GROUP BY () cannot be used in a query with dx aggregates",
			     "Leave GROUP BY () out: a query with aggregates and no GROUP BY already returns one row.");
		return; // other grouping sets are refused by the caller
	}
	if (!q->groupClause && !q->constraintDeps)
		return;
	Ungrouped u;
	ListCell *lc;
	foreach (lc, q->groupClause)
		u.group_exprs = lappend(u.group_exprs, get_sortgroupclause_expr(lfirst_node(SortGroupClause, lc), q->targetList));
	if (!ungrouped_walker((Node *) q->targetList, &u))
		ungrouped_walker(q->havingQual, &u);
	if (!u.offender && !q->constraintDeps)
		return;
	std::string table = "?", column = "?", key = "?";
	if (u.offender && u.offender->varno >= 1 && u.offender->varno <= list_length(q->rtable)) {
		RangeTblEntry *rte = rt_fetch(u.offender->varno, q->rtable);
		if (rte->rtekind == RTE_RELATION) {
			table = relation_for_hint(rte->relid);
			char *att = pg_value([&] { return get_attname(rte->relid, u.offender->varattno, true); });
			column = att ? att : "?";
		}
	}
	if (u.group_exprs && IsA(linitial(u.group_exprs), Var)) {
		Var *k = linitial_node(Var, u.group_exprs);
		RangeTblEntry *rte = rt_fetch(k->varno, q->rtable);
		if (rte->rtekind == RTE_RELATION) {
			char *att = pg_value([&] { return get_attname(rte->relid, k->varattno, true); });
			key = att ? att : "?";
		}
	}
	fail(ERRCODE_FEATURE_NOT_SUPPORTED,
	     u.offender ? "column \"" + column + "\" is not a GROUP BY key and cannot be used outside aggregates"
	                : std::string("columns that are not GROUP BY keys cannot be used outside aggregates"),
	     "In a query with dx aggregates, SELECT, HAVING and ORDER BY may use only GROUP BY keys, aggregates and "
	     "expressions over them (a primary key in GROUP BY does not make the other columns of the row usable); "
	     "if the column is declared, group by it too: SELECT " + std::string(quote_identifier(key.c_str())) + ", " +
	         quote_identifier(column.c_str()) + ", count(*) FROM " + table + " GROUP BY " +
	         quote_identifier(key.c_str()) + ", " + quote_identifier(column.c_str()) + ".");
}

} // namespace dxpriv::pg
