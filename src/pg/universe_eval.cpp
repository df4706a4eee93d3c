// Evaluates expressions at every point of a sub-universe with the executor's expression engine.
#include "pg/universe_eval.h"

#include "pg/guard.h"

extern "C" {
#include "access/relation.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "nodes/nodeFuncs.h"
#include "utils/rel.h"
}

namespace dxpriv::pg {

// See universe_eval.h.
UniverseValues
evaluate_over_universe(Oid relid, const std::vector<const ColumnPolicy *> &cols, const SubUniverse &sub,
                       const std::vector<Expr *> &exprs)
{
	const size_t n = sub.size();
	std::vector<std::vector<Datum>> points;
	for (const ColumnPolicy *c : cols)
		points.push_back(domain_datums(c->domain, c->type, c->typmod));
	UniverseValues out;
	out.value.assign(exprs.size(), std::vector<double>(n, 1.0));
	out.is_null.assign(exprs.size(), std::vector<char>(n, 0));
	std::vector<bool> is_bool(exprs.size(), false);
	for (size_t e = 0; e < exprs.size(); ++e)
		if (exprs[e] && exprType((Node *) exprs[e]) == BOOLOID)
			is_bool[e] = true;
	std::vector<size_t> idx(cols.size(), 0);
	pg_call([&] {
		Relation rel = relation_open(relid, AccessShareLock);
		TupleDesc td = RelationGetDescr(rel);
		EState *estate = CreateExecutorState();
		ExprContext *econtext = GetPerTupleExprContext(estate);
		TupleTableSlot *slot = MakeSingleTupleTableSlot(td, &TTSOpsVirtual);
		std::vector<ExprState *> states(exprs.size(), nullptr);
		for (size_t e = 0; e < exprs.size(); ++e)
			if (exprs[e])
				states[e] = ExecPrepareExpr(exprs[e], estate);
		for (size_t flat = 0; flat < n; ++flat) {
			ExecClearTuple(slot);
			for (int a = 0; a < td->natts; ++a)
				slot->tts_isnull[a] = true;
			for (size_t c = 0; c < cols.size(); ++c) {
				slot->tts_values[cols[c]->attnum - 1] = points[c][idx[c]];
				slot->tts_isnull[cols[c]->attnum - 1] = false;
			}
			ExecStoreVirtualTuple(slot);
			econtext->ecxt_scantuple = slot;
			ResetExprContext(econtext);
			for (size_t e = 0; e < states.size(); ++e) {
				if (!states[e])
					continue;
				bool isnull = false;
				Datum r = ExecEvalExprSwitchContext(states[e], econtext, &isnull);
				out.is_null[e][flat] = isnull;
				out.value[e][flat] = isnull ? 0.0 : is_bool[e] ? (DatumGetBool(r) ? 1.0 : 0.0) : DatumGetFloat8(r);
			}
			for (size_t c = cols.size(); c-- > 0;) { // odometer, last column fastest
				if (++idx[c] < sub.domains[c].size())
					break;
				idx[c] = 0;
			}
		}
		ExecDropSingleTupleTableSlot(slot);
		FreeExecutorState(estate);
		relation_close(rel, AccessShareLock);
	});
	return out;
}

} // namespace dxpriv::pg
