// A grouped Citus release's native sums as one Citus stage: the function source and the plan's table entries.
#include "pg/planner/distributed_stage.h"

#include "pg/contract/param_consts.h"
#include "pg/elevated/sealed_execution.h"
#include "pg/guard.h"
#include "pg/node_build.h"
#include "pg/settings.h"
#include "pg/metadata/extension_objects.h"

extern "C" {
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "lib/stringinfo.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/ruleutils.h"
}

#include <string>
#include <utility>
#include <vector>

namespace dxpriv::pg::dist {

namespace {

// Walker collecting the digests (first arguments) of the cached lookups of a task query.
struct TaskDigests {
	const ExtensionObjects *ext;
	std::vector<Const *> digests;
};

bool
task_digest_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *t = static_cast<TaskDigests *>(ctx);
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(task_digest_walker), ctx, 0);
	if (IsA(node, FuncExpr)) {
		const Oid f = castNode(FuncExpr, node)->funcid;
		if ((f == t->ext->weigh_cached || f == t->ext->weigh_int_cached || f == t->ext->weigh_units_cached) &&
		    castNode(FuncExpr, node)->args != NIL && IsA(linitial(castNode(FuncExpr, node)->args), Const))
			t->digests.push_back(linitial_node(Const, castNode(FuncExpr, node)->args));
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(task_digest_walker), ctx);
}

// bytea[] of (digest, table) pairs of the shipments whose digest the task reads; a NULL bytea[] when none.
Const *
task_shipments(Query *grouped, const SplitContext &c)
{
	TaskDigests found{c.ext, {}};
	task_digest_walker((Node *) grouped, &found);
	std::vector<Datum> items;
	ListCell *lc;
	foreach (lc, c.shipments) {
		FuncExpr *ship = lfirst_node(FuncExpr, lc);
		Const *d = linitial_node(Const, ship->args);
		for (Const *used : found.digests)
			if (equal(used, d)) {
				items.push_back(d->constvalue);
				items.push_back(lsecond_node(Const, ship->args)->constvalue);
				break;
			}
	}
	if (items.empty())
		return makeNullConst(BYTEAARRAYOID, -1, InvalidOid);
	ArrayType *arr = pg_value([&] {
		return construct_array(items.data(), static_cast<int>(items.size()), BYTEAOID, -1, false, TYPALIGN_INT);
	});
	return makeConst(BYTEAARRAYOID, -1, InvalidOid, -1, PointerGetDatum(arr), false, false);
}

// Tasks noted for the EXPLAIN being planned (explain_stages_begin), and whether one is.
std::vector<std::string> stage_explained_tasks;
int stage_explain_depth = 0;

} // namespace

// See distributed_stage.h.
void
explain_stages_begin()
{
	if (stage_explain_depth++ == 0)
		stage_explained_tasks.clear();
}

// See distributed_stage.h.
void
explain_stages_abandon()
{
	if (stage_explain_depth > 0 && --stage_explain_depth == 0)
		stage_explained_tasks.clear();
}

// See distributed_stage.h.
void
explain_stages_reset()
{
	stage_explain_depth = 0;
	stage_explained_tasks.clear();
}

// See distributed_stage.h.
void
explain_stages_end(void *explain_state)
{
	if (stage_explain_depth > 0)
		stage_explain_depth--;
	if (stage_explain_depth > 0 || stage_explained_tasks.empty())
		return;
	const std::vector<std::string> tasks = std::move(stage_explained_tasks);
	stage_explained_tasks.clear();
	auto *es = static_cast<ExplainState *>(explain_state);
	if (es->format != EXPLAIN_FORMAT_TEXT)
		return;
	const std::string options = std::string("EXPLAIN (VERBOSE ") + (es->verbose ? "on" : "off") + ", COSTS " +
	                            (es->costs ? "on" : "off") + ") ";
	for (const std::string &task : tasks) {
		std::vector<std::string> lines;
		{
			SealedSpi spi(InvalidOid);
			const uint64 n = spi.exec_dynamic((options + task).c_str(), {}, {}, false, SPI_OK_UTILITY);
			for (uint64 i = 0; i < n; ++i)
				lines.push_back(spi.text(i, 0));
		}
		pg_call([&] {
			appendStringInfoString(es->str, "dx._grouped_partials: one Citus stage\n");
			for (const std::string &l : lines)
				appendStringInfo(es->str, "  %s\n", l.c_str());
		});
	}
}

// See distributed_stage.h.
bool
one_stage_applies(const Query *grouped, Oid relid, SplitContext &c)
{
	if (!guc_citus_grouped_stage || !OidIsValid(c.ext->grouped_partials))
		return false;
	if (list_length(grouped->rtable) != 1 || linitial_node(RangeTblEntry, grouped->rtable)->rtekind != RTE_RELATION ||
	    linitial_node(RangeTblEntry, grouped->rtable)->relid != relid)
		return false;
	const CitusTable &t = table_of(c, relid);
	return t.citus && !answered_on_one_node(t);
}

// See distributed_stage.h.
RangeTblEntry *
one_stage_source(Query *grouped, List *colnames, Const *params, SplitContext &c)
{
	// the task's text, every name qualified: deparsed under the sealed search_path and formatting
	// settings, as the function plans it again (and as Citus deparses the workers' task queries)
	const int level = push_sealed_settings();
	char *task = pg_value([&] { return pg_get_querydef(grouped, false); });
	pop_sealed_settings(level);
	if (stage_explain_depth > 0)
		stage_explained_tasks.emplace_back(task);
	List *types = NIL, *typmods = NIL, *collations = NIL;
	ListCell *lc;
	foreach (lc, grouped->targetList) {
		Node *e = (Node *) lfirst_node(TargetEntry, lc)->expr;
		types = lappend_oid(types, exprType(e));
		typmods = lappend_int(typmods, exprTypmod(e));
		collations = lappend_oid(collations, exprCollation(e));
	}
	FuncExpr *call = makeFuncExpr(c.ext->grouped_partials, RECORDOID,
	                              list_make3(makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID, -1,
	                                                   PointerGetDatum(cstring_to_text(task)), false, false),
	                                         copy_node(params), task_shipments(grouped, c)),
	                              InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	call->funcretset = true;
	call->location = kStageLocation; // placed by dxpriv: the analyzer and the function refuse any other call
	RangeTblFunction *rtf = makeNode(RangeTblFunction);
	rtf->funcexpr = (Node *) call;
	rtf->funccolcount = list_length(colnames);
	rtf->funccolnames = copy_node(colnames);
	rtf->funccoltypes = types;
	rtf->funccoltypmods = typmods;
	rtf->funccolcollations = collations;
	RangeTblEntry *rte = makeNode(RangeTblEntry);
	rte->rtekind = RTE_FUNCTION;
	rte->functions = list_make1(rtf);
	rte->alias = makeAlias("dx_native", NIL);
	rte->eref = makeAlias("dx_native", copy_node(colnames));
	rte->inFromCl = true;
	// the table's entry (the caller's privileges, its lock): appended to the plan after planning
	c.stage_tables = lappend(c.stage_tables, copy_node(linitial_node(RangeTblEntry, grouped->rtable)));
	return rte;
}

// See distributed_stage.h.
void
attach_stage_tables(PlannedStmt *stmt, List *stage_tables)
{
	ListCell *lc;
	foreach (lc, stage_tables) {
		RangeTblEntry *rte = copy_node(lfirst_node(RangeTblEntry, lc));
		rte->inFromCl = false;
		stmt->rtable = lappend(stmt->rtable, rte);
		stmt->relationOids = lappend_oid(stmt->relationOids, rte->relid);
	}
}

} // namespace dxpriv::pg::dist
