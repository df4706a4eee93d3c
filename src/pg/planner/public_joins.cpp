// Joins of one protected table with DBA-declared public tables (public_joins.h): the public tables'
// referenced columns are read once at analysis and their columns become parameters that
// rewrite_query folds into the per-point tables; the executed query reads the protected table only.
#include "pg/planner/public_joins.h"

#include "pg/guard.h"
#include "pg/metadata/catalog.h"
#include "pg/node_build.h"
#include "pg/metadata/extension_objects.h"
#include "pg/metadata/policy.h"

extern "C" {
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
}

#include <map>
#include <set>
#include <string>
#include <vector>

namespace dxpriv::pg {

namespace {

// The public rows of the query being rewritten (nullptr: no join). Their columns appear in the
// query as PARAM_EXEC parameters 0 .. params-1 until rewrite_query folds them into the tables.
const PublicRows *current_join = nullptr;

bool public_outside_keys_walker(Node *node, void *ctx);

struct JoinMap {
	int protected_index = 0;
	std::set<int> public_index;
	std::map<std::pair<int, AttrNumber>, int> param_of; // (rtindex, attno) -> parameter
	std::vector<Var *> param_var;                       // parameter -> the public column
};

Node *
public_vars_to_params(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	auto *m = static_cast<JoinMap *>(ctx);
	if (IsA(node, Var) && castNode(Var, node)->varlevelsup == 0) {
		Var *v = castNode(Var, node);
		if (static_cast<int>(v->varno) == m->protected_index) {
			Var *c = copy_node(v);
			c->varno = 1;
			if (static_cast<int>(c->varnosyn) == m->protected_index)
				c->varnosyn = 1;
			return (Node *) c;
		}
		if (!m->public_index.count(static_cast<int>(v->varno)))
			fail(ERRCODE_FEATURE_NOT_SUPPORTED, "this column reference cannot be used in a join with dx aggregates",
			     "Reference the protected table's declared columns and the public tables' columns by name.");
		if (v->varattno <= 0)
			fail(ERRCODE_FEATURE_NOT_SUPPORTED, "system columns and whole-row references of public tables cannot be used "
			     "in queries with dx aggregates", "Reference the public table's columns by name.");
		auto key = std::make_pair(static_cast<int>(v->varno), v->varattno);
		auto it = m->param_of.find(key);
		int id = 0;
		if (it == m->param_of.end()) {
			id = static_cast<int>(m->param_var.size());
			m->param_of[key] = id;
			m->param_var.push_back(v);
		} else
			id = it->second;
		return (Node *) exec_param_like(v, id);
	}
	return expression_tree_mutator(node, reinterpret_cast<Node *(*)()>(public_vars_to_params), ctx);
}

// Finds a public column (PARAM_EXEC) outside aggregates and GROUP BY key expressions.
bool
public_outside_keys(Node *node, const std::vector<Expr *> &keys)
{
	if (!node || IsA(node, Aggref))
		return false;
	for (Expr *k : keys)
		if (equal(node, k))
			return false;
	if (IsA(node, Param) && castNode(Param, node)->paramkind == PARAM_EXEC)
		return true;
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(public_outside_keys_walker),
	                              const_cast<std::vector<Expr *> *>(&keys));
}

bool
public_outside_keys_walker(Node *node, void *ctx)
{
	return public_outside_keys(node, *static_cast<std::vector<Expr *> *>(ctx));
}

} // namespace

// See public_joins.h.
const PublicRows *
current_public_join()
{
	return current_join;
}

// See public_joins.h.
void
public_join_reset()
{
	current_join = nullptr;
}

// See public_joins.h.
JoinScope::JoinScope(const PublicRows *rows)
{
	current_join = rows;
}

// See public_joins.h.
JoinScope::~JoinScope()
{
	current_join = nullptr;
}

// True when q's FROM is more than one plain table.
bool
is_join_query(Query *q)
{
	return list_length(q->jointree->fromlist) != 1 || !IsA(linitial(q->jointree->fromlist), RangeTblRef);
}

bool
has_lateral(Query *q)
{
	ListCell *lc;
	foreach (lc, q->rtable)
		if (lfirst_node(RangeTblEntry, lc)->lateral)
			return true;
	return false;
}

// Finds a PARAM_EXEC anywhere (none may survive the rewrite).
bool
any_exec_param(Node *node, void *)
{
	if (!node)
		return false;
	if (IsA(node, Param) && castNode(Param, node)->paramkind == PARAM_EXEC)
		return true;
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(any_exec_param), nullptr, 0);
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(any_exec_param), nullptr);
}

// A join of one protected table with public tables: checks it, reads the public tables' referenced
// columns once (with the caller's privileges) into `out`, and turns the query into one over the
// protected table alone, public columns becoming parameters. Returns false (query untouched) when
// no protected table is joined.
bool
take_public_join(Query *q, const ExtensionObjects &ext, PublicRows &out, bool read_rows)
{
	const char *hint = "Join the protected table with tables the owner declared public (dx.set_public): "
	                   "SELECT dx.count(*) FROM people p JOIN regions r ON r.region = p.region WHERE r.zone = 'north'.";
	std::vector<int> bases;                      // every base table, in join order
	std::map<int, Node *> left_on;              // LEFT JOIN table -> its ON condition
	Node *quals = q->jointree->quals;
	auto add_qual = [&](Node *c) {
		if (c)
			quals = quals ? (Node *) makeBoolExpr(AND_EXPR, list_make2(quals, c), -1) : c;
	};
	std::function<void(Node *)> walk = [&](Node *n) {
		if (IsA(n, RangeTblRef)) {
			bases.push_back(castNode(RangeTblRef, n)->rtindex);
			return;
		}
		if (IsA(n, JoinExpr)) {
			JoinExpr *j = castNode(JoinExpr, n);
			if (j->jointype == JOIN_INNER) {
				walk(j->larg);
				walk(j->rarg);
				add_qual(j->quals);
				return;
			}
			if (j->jointype == JOIN_LEFT || j->jointype == JOIN_RIGHT) {
				// the preserved side first; the nullable side must be one table (checked public below)
				Node *kept = j->jointype == JOIN_LEFT ? j->larg : j->rarg;
				Node *nullable = j->jointype == JOIN_LEFT ? j->rarg : j->larg;
				walk(kept);
				if (!IsA(nullable, RangeTblRef))
					fail(ERRCODE_FEATURE_NOT_SUPPORTED,
					     "the nullable side of an outer join with a protected table must be one public table",
					     "Write protected LEFT JOIN public_table ON ..., joining further tables outside it.");
				const int rt = castNode(RangeTblRef, nullable)->rtindex;
				bases.push_back(rt);
				left_on[rt] = j->quals ? j->quals : (Node *) makeBoolConst(true, false);
				return;
			}
			fail(ERRCODE_FEATURE_NOT_SUPPORTED, "FULL joins cannot be used in queries with dx aggregates",
			     "A FULL join would output public rows no protected row joins, which depends on the protected "
			     "rows; use protected LEFT JOIN public_table.");
		}
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "this FROM item cannot be used in a join with dx aggregates", hint);
	};
	ListCell *lc;
	foreach (lc, q->jointree->fromlist)
		walk((Node *) lfirst(lc));
	JoinMap map;
	std::vector<int> protected_bases;
	for (int i : bases) {
		RangeTblEntry *rte = rt_fetch(i, q->rtable);
		if (rte->lateral)
			fail(ERRCODE_FEATURE_NOT_SUPPORTED, "LATERAL cannot be used in queries with dx aggregates", hint);
		if (rte->rtekind != RTE_RELATION)
			continue;
		TablePolicy p;
		if (load_table_policy(rte->relid, p))
			protected_bases.push_back(i);
	}
	if (protected_bases.empty())
		return false;
	if (protected_bases.size() > 1)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "joins of two protected tables cannot be answered",
		     "A query with dx aggregates reads one protected table; join it only with public tables (dx.set_public).");
	map.protected_index = protected_bases[0];
	if (left_on.count(map.protected_index))
		fail(ERRCODE_FEATURE_NOT_SUPPORTED,
		     "a protected table cannot be the nullable side of an outer join",
		     "The join would output public rows that no protected row joins, which depends on the protected rows; "
		     "write protected LEFT JOIN public_table instead.");
	for (int i : bases) {
		if (i == map.protected_index)
			continue;
		RangeTblEntry *rte = rt_fetch(i, q->rtable);
		if (rte->rtekind != RTE_RELATION)
			fail(ERRCODE_FEATURE_NOT_SUPPORTED, "subqueries, functions and VALUES cannot be joined to a protected table",
			     hint);
		bool is_public = false, shares_rows = false, runs_code = false;
		{
			// the snapshot reads the table and, without ONLY, its descendants: none may hold a
			// protected table's rows, and none may run a reader's code on the way (row-level security
			// policies, foreign tables), which the analyst checks would not see
			InternalSpi spi(ext.schema_owner);
			spi.exec("WITH RECURSIVE down(r) AS (SELECT $1::pg_catalog.oid UNION "
			         "  SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN down ON i.inhparent = down.r) "
			         "SELECT EXISTS (SELECT 1 FROM dx.public_tables WHERE relid = $1), "
			         "  EXISTS (SELECT 1 FROM dx.protected_tables p WHERE p.relid::pg_catalog.oid IN (SELECT r FROM down)), "
			         "  EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid IN (SELECT r FROM down) "
			         "          AND (c.relrowsecurity OR c.relkind NOT IN ('r', 'p')))",
			         {{OIDOID, ObjectIdGetDatum(rte->relid)}}, true);
			is_public = DatumGetBool(spi.value(0, 0));
			shares_rows = DatumGetBool(spi.value(0, 1));
			runs_code = DatumGetBool(spi.value(0, 2));
		}
		if (is_public && shares_rows)
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
			     "public table \"" + qualified_relation_name(rte->relid) + "\" shares rows with a protected table",
			     "A partition or inheritance child of a public table is protected: join the protected table itself.");
		if (is_public && runs_code)
			fail(ERRCODE_FEATURE_NOT_SUPPORTED,
			     "public table \"" + qualified_relation_name(rte->relid) +
			         "\" (or one of its partitions or children) has row-level security or is not an ordinary table",
			     "Copy the rows the join needs into an ordinary table without row-level security and declare it public.");
		if (!is_public || (rte->relkind != RELKIND_RELATION && rte->relkind != RELKIND_PARTITIONED_TABLE))
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
			     "table \"" + qualified_relation_name(rte->relid) + "\" is not public and cannot be joined to a protected table",
			     "Its owner can declare it public with dx.set_public('" + qualified_relation_name(rte->relid) +
			         "') when its rows may be read by every analyst of the join; otherwise query the protected table "
			         "alone.");
		map.public_index.insert(i);
	}
	if (q->groupingSets) // (a top-level one is expanded into one join per grouping set before this)
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "GROUPING SETS, ROLLUP and CUBE of a join inside a subquery cannot be answered",
		     "Run the join with GROUPING SETS as the statement itself (its wrappers may only post-process it), or "
		     "one query per grouping set.");
	// columns of joins: the base tables' columns (a LEFT JOIN's USING column is its preserved side's)
	q->targetList = (List *) flatten_join_alias_vars(q, (Node *) q->targetList);
	q->havingQual = flatten_join_alias_vars(q, q->havingQual);
	quals = flatten_join_alias_vars(q, quals);
	for (auto &[rt, on] : left_on)
		on = flatten_join_alias_vars(q, on);
	q->targetList = (List *) public_vars_to_params((Node *) q->targetList, &map);
	q->havingQual = public_vars_to_params(q->havingQual, &map);
	quals = public_vars_to_params(quals, &map);
	for (auto &[rt, on] : left_on)
		on = public_vars_to_params(on, &map);
	std::vector<Expr *> keys; // GROUP BY keys: their public columns are read from the snapshot at analysis
	ListCell *gc;
	foreach (gc, q->groupClause)
		keys.push_back(get_sortgroupclause_tle(lfirst_node(SortGroupClause, gc), q->targetList)->expr);
	if (public_outside_keys((Node *) q->targetList, keys) || public_outside_keys(q->havingQual, keys))
		fail(ERRCODE_FEATURE_NOT_SUPPORTED,
		     "columns of public tables can only be used in ON, WHERE, GROUP BY keys, aggregate arguments and FILTER",
		     "Group by the public column to output it, e.g. SELECT r.zone, dx.count(*) FROM people p JOIN regions r "
		     "ON r.region = p.region GROUP BY r.zone.");

	// snapshot of every public table's referenced columns, read as the caller, in join order
	out = PublicRows{};
	out.params = static_cast<int>(map.param_var.size());
	MemoryContext outer = CurrentMemoryContext;
	for (int i : bases) {
		if (!map.public_index.count(i))
			continue;
		RangeTblEntry *rte = rt_fetch(i, q->rtable);
		const std::string name = qualified_relation_name(rte->relid);
		if (pg_value([&] { return pg_class_aclcheck(rte->relid, GetUserId(), ACL_SELECT); }) != ACLCHECK_OK)
			fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "permission denied for public table \"" + name + "\"",
			     "A join reads the public table with your own privileges: its owner can GRANT SELECT ON " + name +
			         " to you.");
		PublicStep step;
		auto on = left_on.find(i);
		step.left = on != left_on.end();
		step.on = step.left ? (Expr *) on->second : nullptr;
		std::string list;
		for (size_t k = 0; k < map.param_var.size(); ++k)
			if (static_cast<int>(map.param_var[k]->varno) == i) {
				step.params.push_back(static_cast<int>(k));
				char *att = pg_value([&] { return get_attname(rte->relid, map.param_var[k]->varattno, false); });
				list += (list.empty() ? "" : ", ") + std::string(quote_identifier(att));
			}
		if (!read_rows) {
			out.steps.push_back(std::move(step));
			continue;
		}
		{
			InternalSpi spi(GetUserId()); // the caller's privileges and row-level security apply
			const std::string sql = "SELECT " + (list.empty() ? std::string("1") : list) + " FROM " +
			                        (rte->inh ? "" : "ONLY ") + name;
			const uint64 n = spi.exec_dynamic(sql.c_str());
			if (static_cast<double>(n) * out.combinations() > kMaxJoinPairs)
				fail(ERRCODE_PROGRAM_LIMIT_EXCEEDED,
				     "the public tables of the join have too many rows: at most " +
				         std::to_string(static_cast<long long>(kMaxJoinPairs)) + " combinations are analysed",
				     "Join smaller public tables, or fewer of them.");
			for (uint64 r = 0; r < n; ++r) {
				step.values.emplace_back();
				step.nulls.emplace_back();
				for (size_t c = 0; c < step.params.size(); ++c) {
					const bool isnull = spi.is_null(r, static_cast<int>(c));
					Datum d = (Datum) 0;
					if (!isnull)
						pg_call([&] {
							int16 len;
							bool byval;
							get_typlenbyval(map.param_var[step.params[c]]->vartype, &len, &byval);
							MemoryContext old = MemoryContextSwitchTo(outer);
							d = datumCopy(spi.value(r, static_cast<int>(c)), byval, len);
							MemoryContextSwitchTo(old);
						});
					step.values.back().push_back(d);
					step.nulls.back().push_back(isnull);
				}
			}
		}
		out.steps.push_back(std::move(step));
	}
	// the statement reads the protected table alone: public tables are not read at execution
	RangeTblEntry *prot = rt_fetch(map.protected_index, q->rtable);
	q->rtable = list_make1(prot);
	q->jointree = makeFromExpr(list_make1(makeNode(RangeTblRef)), quals);
	linitial_node(RangeTblRef, q->jointree->fromlist)->rtindex = 1;
	return true;
}

// Makes the public rows visible to rewrite_query while it runs.
} // namespace dxpriv::pg
