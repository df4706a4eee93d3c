// Privacy units: the planner's row estimate of dx._unit_rows (its support function), so that the
// statement above the hash bounding plans for the table's rows, not for a set function's default 1000.
#include "pg/guard.h"

extern "C" {
#include "fmgr.h"
#include "nodes/pathnodes.h"
#include "nodes/primnodes.h"
#include "nodes/supportnodes.h"
}

namespace {

// The planner's rows of the innermost relation under the subquery `varno` of root: dx._unit_rows
// reads dx_s of (SELECT dx._unit_bound(...) AS dx_s FROM (SELECT ... FROM table) dx_l0) dx_b
// (planner/unit_hash_source.h), whose levels were planned before the outer target list is costed;
// 0 when the shape is not that one (the default estimate stays).
double
unit_rows_estimate(PlannerInfo *root, Index varno)
{
	for (int depth = 0; depth < 3 && root; ++depth) {
		if (varno < 1 || static_cast<int>(varno) >= root->simple_rel_array_size)
			return 0;
		RelOptInfo *rel = root->simple_rel_array[varno];
		if (!rel)
			return 0;
		if (rel->rtekind == RTE_RELATION)
			return rel->rows > 0 ? rel->rows : rel->tuples;
		if (rel->rtekind != RTE_SUBQUERY || !rel->subroot)
			return 0;
		root = rel->subroot;
		varno = 1; // (each level reads one relation: an inherited table's children follow it)
	}
	return 0;
}

} // namespace

// dx._unit_rows_support(internal) -> internal: answers SupportRequestRows for dx._unit_rows with the
// rows of the table its bounding reads (an upper bound of the kept rows; the planner then hashes
// or sorts the statement's groups as it would for the table's own rows). Anything else: NULL.
DX_FUNCTION(dx_unit_rows_support)
{
	Node *req = reinterpret_cast<Node *>(PG_GETARG_POINTER(0));
	if (!IsA(req, SupportRequestRows))
		PG_RETURN_POINTER(nullptr);
	auto *rows = reinterpret_cast<SupportRequestRows *>(req);
	if (!rows->root || !rows->node || !IsA(rows->node, FuncExpr))
		PG_RETURN_POINTER(nullptr);
	auto *call = reinterpret_cast<FuncExpr *>(rows->node);
	if (list_length(call->args) < 1 || !IsA(linitial(call->args), Var))
		PG_RETURN_POINTER(nullptr);
	const Var *handle = static_cast<const Var *>(linitial(call->args));
	if (handle->varlevelsup != 0)
		PG_RETURN_POINTER(nullptr);
	const double estimate = unit_rows_estimate(rows->root, handle->varno);
	if (!(estimate >= 1))
		PG_RETURN_POINTER(nullptr);
	rows->rows = estimate;
	PG_RETURN_POINTER(rows);
}
