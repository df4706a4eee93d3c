// Charging: before a statement runs, every noisy aggregate in its plan is paid from the budget
// of the current role and recorded in the ledger. Runs at ExecutorStart, so prepared statements,
// cursors and functions are charged on every execution; EXPLAIN without ANALYZE is not charged.
#include "pg/catalog.h"
#include "pg/dxpriv.h"
#include "pg/guard.h"
#include "pg/noise_params.h"

extern "C" {
#include "access/parallel.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_set>

namespace dxpriv::pg {

namespace {

ExecutorStart_hook_type prev_executor_start = nullptr;
std::unordered_set<int64> charged_ids; // charge ids paid in the current transaction
std::map<std::pair<const void *, int>, NoiseParams> params_by_agg; // (PlannedStmt, aggno) -> params

// One noisy aggregate found in a plan.
struct Charge {
	NoiseParams params;
	int aggno;
};

struct PlanScan {
	const ExtensionObjects *ext;
	std::map<int64, Charge> charges; // by charge id: an aggregate appearing twice is paid once
};

// Collects noisy Aggrefs whose constant parameters are present (simple or partial phase; the
// finalize-phase copy has its arguments replaced and shares the charge id).
bool
collect_aggrefs(Node *node, void *ctx)
{
	if (!node)
		return false;
	auto *scan = static_cast<PlanScan *>(ctx);
	if (IsA(node, Aggref)) {
		Aggref *a = castNode(Aggref, node);
		if (scan->ext->is_internal(a->aggfnoid) && list_length(a->args) == 3) {
			Node *e = (Node *) castNode(TargetEntry, lthird(a->args))->expr;
			if (!IsA(e, Const) || castNode(Const, e)->constisnull)
				fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate parameters are not constants");
			NoiseParams p = parse_noise_params(DatumGetArrayTypeP(castNode(Const, e)->constvalue));
			scan->charges[p.charge_id] = Charge{p, a->aggno};
		}
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(collect_aggrefs), ctx);
}

// Walks a plan tree and its node-specific child lists.
void
scan_plan(Plan *plan, PlanScan &scan)
{
	if (!plan)
		return;
	collect_aggrefs((Node *) plan->targetlist, &scan);
	collect_aggrefs((Node *) plan->qual, &scan);
	scan_plan(plan->lefttree, scan);
	scan_plan(plan->righttree, scan);
	ListCell *lc;
	List *children = NIL;
	switch (nodeTag(plan)) {
	case T_Append:
		children = ((Append *) plan)->appendplans;
		break;
	case T_MergeAppend:
		children = ((MergeAppend *) plan)->mergeplans;
		break;
	case T_BitmapAnd:
		children = ((BitmapAnd *) plan)->bitmapplans;
		break;
	case T_BitmapOr:
		children = ((BitmapOr *) plan)->bitmapplans;
		break;
	case T_SubqueryScan:
		scan_plan(((SubqueryScan *) plan)->subplan, scan);
		break;
	case T_CustomScan:
		children = ((CustomScan *) plan)->custom_plans;
		break;
	default:
		break;
	}
	foreach (lc, children)
		scan_plan((Plan *) lfirst(lc), scan);
}

// Text fingerprint of a statement: its query id, or a hash of its text.
std::string
fingerprint(QueryDesc *qd)
{
	char buf[40];
	if (qd->plannedstmt->queryId != 0)
		snprintf(buf, sizeof buf, "qid:%016llx", (unsigned long long) qd->plannedstmt->queryId);
	else {
		const char *src = qd->sourceText ? qd->sourceText : "";
		snprintf(buf, sizeof buf, "sql:%016llx", (unsigned long long) hash_bytes_extended((const unsigned char *) src, strlen(src), 0));
	}
	return buf;
}

// Name of the noise mechanism for the ledger: exact when no cell needed noise.
const char *
mechanism_name(const std::vector<Charge> &cs)
{
	bool noisy = false, grid = false;
	for (const Charge &c : cs)
		for (int g = 0; g < c.params.groups; ++g)
			for (int k = 0; k < c.params.components; ++k) {
				noisy = noisy || c.params.scale(g, k) > 0;
				grid = grid || (c.params.scale(g, k) > 0 && c.params.grid(g, k) != 1.0);
			}
	return !noisy ? "exact" : grid ? "laplace(grid)" : "discrete_laplace";
}

// Charges every table's share and writes the ledger rows; errors (and answers nothing) when a
// budget is missing or would be overspent.
void
charge_plan(QueryDesc *qd)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext)
		return;
	PlanScan scan{ext, {}};
	scan_plan(qd->plannedstmt->planTree, scan);
	ListCell *lc;
	foreach (lc, qd->plannedstmt->subplans)
		scan_plan((Plan *) lfirst(lc), scan);
	if (scan.charges.empty())
		return;

	// per table, aggregates in the order of their aggregate numbers (SELECT-list order)
	std::vector<Charge> ordered;
	for (auto &kv : scan.charges)
		ordered.push_back(kv.second);
	std::sort(ordered.begin(), ordered.end(), [](const Charge &a, const Charge &b) { return a.aggno < b.aggno; });
	std::map<Oid, std::vector<Charge>> by_table;
	for (const Charge &c : ordered) {
		by_table[c.params.relid].push_back(c);
		params_by_agg[{qd->plannedstmt, c.aggno}] = c.params;
	}

	Oid role = GetUserId();
	std::string fp = fingerprint(qd);
	std::string text = qd->sourceText ? std::string(qd->sourceText).substr(0, 4096) : std::string();
	InternalSpi spi(ext->schema_owner);
	for (auto &kv : by_table) {
		Oid relid = kv.first;
		double eps = 0;
		for (const Charge &c : kv.second)
			eps += c.params.epsilon;
		uint64 n = spi.exec("UPDATE dx.budget_grants SET spent = spent + $3 "
		                    "WHERE role = $1 AND relid = $2 AND spent + $3 <= granted + 1e-9 RETURNING spent",
		                    {{OIDOID, ObjectIdGetDatum(role)}, {OIDOID, ObjectIdGetDatum(relid)}, {FLOAT8OID, Float8GetDatum(eps)}},
		                    false);
		if (n == 0) {
			char *relname = get_rel_name(relid);
			std::string table = relname ? relname : "?";
			std::string who = GetUserNameFromId(role, true) ? GetUserNameFromId(role, true) : "?";
			uint64 found = spi.exec("SELECT greatest(granted - spent, 0) FROM dx.budget_grants WHERE role = $1 AND relid = $2",
			                        {{OIDOID, ObjectIdGetDatum(role)}, {OIDOID, ObjectIdGetDatum(relid)}}, true);
			if (found == 0)
				fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "role \"" + who + "\" has no privacy budget on table \"" + table + "\"",
				     "The table owner can grant one with dx.grant_budget('" + who + "', '" + table + "', 1.0).");
			char detail[160];
			snprintf(detail, sizeof detail, "The query needs epsilon %g; %g remains.", eps, DatumGetFloat8(spi.value(0, 0)));
			fail(ERRCODE_INSUFFICIENT_RESOURCES, "privacy budget of role \"" + who + "\" on table \"" + table + "\" is exhausted",
			     "Use a smaller epsilon (SET dxpriv.epsilon) or ask the table owner for more budget.", detail);
		}
		std::vector<Datum> scales; // aggregate by aggregate, group by group, component by component
		for (const Charge &c : kv.second)
			for (int g = 0; g < c.params.groups; ++g)
				for (int k = 0; k < c.params.components; ++k)
					scales.push_back(Float8GetDatum(c.params.scale(g, k)));
		ArrayType *arr = construct_array(scales.data(), static_cast<int>(scales.size()), FLOAT8OID, 8, FLOAT8PASSBYVAL,
		                                 TYPALIGN_DOUBLE);
		spi.exec("INSERT INTO dx.ledger (role, relid, fingerprint, query, mechanism, epsilon, scales) "
		         "VALUES ($1, $2, $3, $4, $5, $6, $7)",
		         {{OIDOID, ObjectIdGetDatum(role)},
		          {OIDOID, ObjectIdGetDatum(relid)},
		          {TEXTOID, CStringGetTextDatum(fp.c_str())},
		          {TEXTOID, CStringGetTextDatum(text.c_str())},
		          {TEXTOID, CStringGetTextDatum(mechanism_name(kv.second))},
		          {FLOAT8OID, Float8GetDatum(eps)},
		          {FLOAT8ARRAYOID, PointerGetDatum(arr)}},
		         false);
		for (const Charge &c : kv.second)
			charged_ids.insert(c.params.charge_id);
	}
}

// Forgets paid charge ids when the transaction ends.
void
on_xact(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_COMMIT ||
	    event == XACT_EVENT_PARALLEL_ABORT || event == XACT_EVENT_PREPARE)
	{
		charged_ids.clear();
		params_by_agg.clear();
	}
}

// ExecutorStart hook: charge first, then start the executor.
extern "C" void
dx_executor_start(QueryDesc *qd, int eflags)
{
	if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY) && !IsParallelWorker() && !in_internal_query())
		guarded([&] { charge_plan(qd); });
	if (prev_executor_start)
		prev_executor_start(qd, eflags);
	else
		standard_ExecutorStart(qd, eflags);
}

} // namespace

// See dxpriv.h.
void
mark_charged(int64 charge_id)
{
	charged_ids.insert(charge_id);
}

// See dxpriv.h.
bool
was_charged(int64 charge_id)
{
	return charged_ids.count(charge_id) > 0;
}

// See dxpriv.h.
bool
lookup_noise_params(const void *planned_stmt, int aggno, NoiseParams &out)
{
	auto it = params_by_agg.find({planned_stmt, aggno});
	if (it == params_by_agg.end())
		return false;
	out = it->second;
	return true;
}

// See dxpriv.h.
void
install_charging_hooks()
{
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = dx_executor_start;
	RegisterXactCallback(on_xact, nullptr);
}

} // namespace dxpriv::pg
