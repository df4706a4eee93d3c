// ORDER BY count(*) DESC LIMIT k answered by the exponential mechanism's top-k (top_k_rewrite.h).
#include "pg/planner/top_k_rewrite.h"

#include "pg/guard.h"
#include "pg/node_build.h"
#include "pg/metadata/policy.h"
#include "pg/settings.h"

extern "C" {
#include "access/sysattr.h"
#include "catalog/pg_type.h"
#include "nodes/bitmapset.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/tlist.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
}

#include <cstdio>
#include <string>
#include <vector>

namespace dxpriv::pg {

namespace {

bool
has_param(Node *node, void *)
{
	if (!node)
		return false;
	if (IsA(node, Param))
		return true;
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(has_param), nullptr);
}

// count(*) as the analyst writes it, or dx.count(*) without an epsilon.
bool
counts_all_rows(Node *n, const ExtensionObjects &ext)
{
	if (!n || !IsA(n, Aggref))
		return false;
	Aggref *a = castNode(Aggref, n);
	if (a->aggfilter || a->aggdistinct || a->aggorder || a->agglevelsup != 0)
		return false;
	return (a->aggfnoid == F_COUNT_ && a->aggstar) || (a->aggfnoid == ext.count_star && a->args == NIL);
}

std::string
literal(const std::string &s)
{
	std::string out;
	pg_call([&] { out = quote_literal_cstr(s.c_str()); });
	return out;
}

std::string
ident(const char *s)
{
	return quote_identifier(s);
}

} // namespace

// See top_k_rewrite.h.
bool
rewrite_top_k_order(Query *q, const ExtensionObjects &ext, const AnalystContext *ac)
{
	if (guc_top_k != 1 || q->commandType != CMD_SELECT || list_length(q->rtable) != 1 || !q->hasAggs ||
	    list_length(q->groupClause) != 1 || q->groupingSets || q->havingQual || q->distinctClause ||
	    q->hasWindowFuncs || q->hasSubLinks || q->cteList || q->setOperations || q->hasTargetSRFs || q->rowMarks ||
	    q->limitOffset || !q->limitCount || q->limitOption != LIMIT_OPTION_COUNT || list_length(q->sortClause) != 1 ||
	    list_length(q->jointree->fromlist) != 1 || !IsA(linitial(q->jointree->fromlist), RangeTblRef))
		return false;
	RangeTblEntry *rte = linitial_node(RangeTblEntry, q->rtable);
	if (rte->rtekind != RTE_RELATION || (ac && !ac->is_protected(rte->relid)))
		return false;
	TablePolicy policy;
	if (!load_table_policy(rte->relid, policy))
		return false;
	if (has_param((Node *) q->targetList, nullptr) || has_param(q->jointree->quals, nullptr) ||
	    has_param(q->limitCount, nullptr))
		return false;
	// exactly the key and the count, in either order
	TargetEntry *key = get_sortgroupclause_tle(linitial_node(SortGroupClause, q->groupClause), q->targetList);
	TargetEntry *count = nullptr;
	ListCell *lc;
	foreach (lc, q->targetList) {
		TargetEntry *t = lfirst_node(TargetEntry, lc);
		if (t->resjunk || list_length(q->targetList) != 2)
			return false;
		if (t != key)
			count = t;
	}
	if (!count || !counts_all_rows((Node *) count->expr, ext) || !IsA(key->expr, Var))
		return false;
	Var *kv = castNode(Var, key->expr);
	const ColumnPolicy *col = kv->varlevelsup == 0 && kv->varattno > 0 ? policy.find(kv->varattno) : nullptr;
	if (!col || col->is_group())
		return false;
	// ORDER BY the count, descending
	SortGroupClause *sort = linitial_node(SortGroupClause, q->sortClause);
	bool reverse = false;
	if (sort->tleSortGroupRef != count->ressortgroupref || count->ressortgroupref == 0 ||
	    !OidIsValid(pg_value([&] { return get_equality_op_for_ordering_op(sort->sortop, &reverse); })) || !reverse)
		return false;
	const Const *limit = folded_const(q->limitCount); // LIMIT 5 is int8(5) until folded
	if (!limit || limit->constisnull || limit->consttype != INT8OID)
		return false;
	const int64 k = DatumGetInt64(limit->constvalue);
	if (k < 1 || k > 1000)
		return false;

	// the condition as text over the table's columns, and the declared columns it reads
	std::string where_text, condition = "NULL", columns = "NULL";
	Node *quals = q->jointree->quals;
	std::string rel, key_name = col->name;
	pg_call([&] { rel = qualified_relation_name(rte->relid); });
	if (quals) {
		std::vector<std::string> names;
		pg_call([&] {
			List *ctx = deparse_context_for(get_rel_name(rte->relid), rte->relid);
			where_text = deparse_expression(quals, ctx, false, false);
			Bitmapset *atts = nullptr;
			pull_varattnos(quals, 1, &atts);
			int x = -1;
			while ((x = bms_next_member(atts, x)) >= 0) {
				const AttrNumber att = static_cast<AttrNumber>(x + FirstLowInvalidHeapAttributeNumber);
				char *name = att > 0 ? get_attname(rte->relid, att, true) : nullptr;
				if (name && key_name != name)
					names.push_back(name);
			}
		});
		condition = literal(where_text);
		columns = "ARRAY[";
		for (std::size_t i = 0; i < names.size(); ++i)
			columns += (i ? ", " : "") + literal(names[i]);
		columns += "]::pg_catalog.text[]";
	}
	char eps[64];
	std::snprintf(eps, sizeof eps, "%.17g", guc_epsilon / 2);
	const std::string key_out = ident(key->resname ? key->resname : key_name.c_str());
	const std::string count_out = ident(count->resname ? count->resname : "count");
	const std::string sql =
	    "SELECT r.k AS " + key_out + ", r.n AS " + count_out + " FROM (SELECT " + ident(key_name.c_str()) +
	    " AS k, dx.count(1, " + eps + "::pg_catalog.float8) AS n FROM " + rel +
	    (quals ? " WHERE " + where_text : std::string()) + " GROUP BY 1) r JOIN dx.top_k(" + literal(rel) +
	    "::pg_catalog.regclass, " + literal(key_name) + ", " + std::to_string(k) + ", " + eps +
	    "::pg_catalog.float8, " + condition + ", " + columns + ") tk ON tk.value = r.k::pg_catalog.text ORDER BY tk.rank";
	Query *nq = nullptr;
	pg_call([&] {
		List *raw = raw_parser(sql.c_str(), RAW_PARSE_DEFAULT);
		nq = parse_analyze_fixedparams(linitial_node(RawStmt, raw), pstrdup(sql.c_str()), nullptr, 0, nullptr);
	});
	const int location = q->stmt_location, length = q->stmt_len;
	*q = *nq;
	q->stmt_location = location;
	q->stmt_len = length;
	return true;
}

} // namespace dxpriv::pg
