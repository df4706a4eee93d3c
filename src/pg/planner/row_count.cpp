// Row-count queries over a release answered from the number of declared groups (row_count.h).
#include "pg/planner/row_count.h"

#include "pg/contract/param_consts.h"
#include "pg/contract/noise_params.h"
#include "pg/guard.h"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "utils/fmgroids.h"
}

namespace dxpriv::pg {

namespace {

// count(*) or count(<non-null constant>) without FILTER, DISTINCT or ORDER BY.
bool
counts_rows(Aggref *a)
{
	if (a->aggfilter || a->aggdistinct || a->aggorder || a->aggdirectargs || a->agglevelsup != 0)
		return false;
	if (a->aggfnoid == F_COUNT_)
		return true;
	if (a->aggfnoid != F_COUNT_ANY || list_length(a->args) != 1)
		return false;
	Node *arg = (Node *) linitial_node(TargetEntry, a->args)->expr;
	return IsA(arg, Const) && !castNode(Const, arg)->constisnull;
}

struct Collapse {
	int64 groups;
	bool ok = true;
};

// Replaces the row-counting aggregates by the group count; any other aggregate, column reference,
// sublink or window makes the query ineligible.
Node *
collapse_mutator(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	auto *c = static_cast<Collapse *>(ctx);
	if (IsA(node, Aggref)) {
		if (!counts_rows(castNode(Aggref, node)))
			c->ok = false;
		return (Node *) makeConst(INT8OID, -1, InvalidOid, sizeof(int64), Int64GetDatum(c->groups), false, true);
	}
	if (IsA(node, Var) || IsA(node, SubLink) || IsA(node, WindowFunc) || IsA(node, GroupingFunc) || IsA(node, Param))
		c->ok = false;
	return expression_tree_mutator(node, reinterpret_cast<Node *(*) ()>(collapse_mutator), ctx);
}

struct GroupSearch {
	const ExtensionObjects *ext;
	int groups = -1;
	bool conflict = false;
};

// The output groups of the release's internal aggregates (all must agree).
bool
group_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *s = static_cast<GroupSearch *>(ctx);
	if (IsA(node, Aggref) && s->ext->is_internal(castNode(Aggref, node)->aggfnoid)) {
		if (Const *k = aggref_params_const(castNode(Aggref, node))) {
			const NoiseParams p = parse_noise_params(DatumGetArrayTypeP(k->constvalue));
			if (s->groups >= 0 && s->groups != p.groups)
				s->conflict = true;
			s->groups = p.groups;
		} else {
			s->conflict = true;
		}
		return false;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(group_walker), ctx);
}

} // namespace

// See row_count.h.
bool
answer_row_count_query(Query *q, const ExtensionObjects &ext)
{
	if (q->commandType != CMD_SELECT || list_length(q->rtable) != 1 || q->jointree->quals || q->groupClause ||
	    q->groupingSets || q->havingQual || q->hasWindowFuncs || q->hasSubLinks || q->hasTargetSRFs || q->cteList ||
	    q->setOperations || q->distinctClause || !q->hasAggs || q->limitOffset || q->rowMarks ||
	    list_length(q->jointree->fromlist) != 1 || !IsA(linitial(q->jointree->fromlist), RangeTblRef))
		return false;
	RangeTblEntry *rte = linitial_node(RangeTblEntry, q->rtable);
	if (rte->rtekind != RTE_SUBQUERY || rte->lateral)
		return false;
	Query *r = rte->subquery;
	if (r->havingQual || r->limitCount || r->limitOffset || r->distinctClause || r->hasTargetSRFs || r->setOperations ||
	    r->hasWindowFuncs || r->cteList || r->groupingSets || list_length(r->rtable) < 1)
		return false;
	GroupSearch s{&ext};
	expression_tree_walker((Node *) r->targetList, reinterpret_cast<bool (*)()>(group_walker), &s);
	if (s.conflict || s.groups < 1)
		return false;
	Collapse c{s.groups};
	List *tlist = (List *) expression_tree_mutator((Node *) copyObjectImpl(q->targetList),
	                                              reinterpret_cast<Node *(*) ()>(collapse_mutator), &c);
	if (!c.ok)
		return false;
	q->targetList = tlist;
	q->rtable = NIL;
	q->jointree->fromlist = NIL;
	q->hasAggs = false;
	return true;
}

} // namespace dxpriv::pg
