// Charging: before a statement runs, every allocation its plan's noisy aggregates belong to is
// paid, once and for its whole total (noise_params.h: also the aggregates the planner removed),
// from the budget of the current role and recorded in the ledger, after checking that the
// aggregates the plan releases agree with their allocations. Runs at ExecutorStart, so prepared
// statements, cursors and functions are charged on every execution; EXPLAIN without ANALYZE is not
// charged. Parallel workers find the paid charge ids in dxpriv.charged_releases.
// The charge itself is committed by the ledger worker (ledger_queue.h), outside the caller's
// transaction, before the executor starts: nothing the caller does afterwards can refund it.
#include "pg/ledger/charge.h"
#include "pg/statement/statement_context.h"
#include "pg/metadata/extension_objects.h"
#include "pg/contract/param_consts.h"
#include "pg/guard.h"
#include "pg/plan_walk.h"
#include "pg/elevated/sealed_execution.h"
#include "core/siphash.h"
#include "pg/ledger/answer_cache.h"
#include "pg/ledger/open_row_cache.h"
#include "pg/settings.h"
#include "pg/ledger/replay_scan.h"
#include "pg/ledger/contents_version.h"
#include "pg/ledger/ledger_queue.h"
#include "pg/metadata/protected_rows.h"
#include "pg/contract/noise_params.h"

extern "C" {
#include "access/parallel.h"
#include "access/xact.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
}

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <tuple>
#include <unordered_set>

namespace dxpriv::pg {

namespace {

// One noisy aggregate found in a plan.
struct Charge {
	NoiseParams params;
	int aggno;
	bool exponential; // dx.mode/quantile/median: the scale is 2·S_EM/eps of the exponential mechanism
	int seq = 0;      // order in which the plan walk first met the aggregate
	bool selection = false; // dx._partition_select: private partition selection of an open key
};

struct PlanScan {
	const ExtensionObjects *ext;
	std::map<int64, Charge> charges; // by charge id: an aggregate appearing twice is paid once
	int final_node = -1;             // plan_node_id of the finalize-phase Agg above, or -1
	std::vector<std::tuple<int, int, NoiseParams>> finals; // (final_node, aggno, params) of partial Aggrefs
	bool below_gather = false;       // the node being visited is under a Gather (Merge)
	bool final_in_worker = false;    // some noisy aggregate's final function may run in a parallel worker
};

// One allocation of the statement (noise_params.h): the release whose cells were calibrated
// together within `epsilon`. It is charged once, for its total, whichever of its aggregates the
// planner kept.
struct Allocation {
	Oid relid = InvalidOid;
	double epsilon = 0, delta = 0;
	int members = 0;       // aggregates (grouping-set copies) allocated together
	uint64 cache_key = 0;
	std::set<int> kept;    // agg_index of the aggregates the plan releases
	std::map<int64, double> kept_epsilon; // their epsilons, by epsilon id (the sets' copies share one)
};

// True when a and b agree to a relative 1e-9 (sums of the same epsilons in another order).
bool
same_total(double a, double b)
{
	return std::fabs(a - b) <= 1e-9 * std::max({1.0, std::fabs(a), std::fabs(b)});
}

// The allocations of the statement's noisy aggregates, checked: every aggregate carries the
// identity of its allocation, all aggregates of one allocation agree on its totals, table and
// size, and what the kept aggregates were given never exceeds (and, when all are kept, equals)
// the total that will be charged. Raises an internal error otherwise: the plan would release
// cells whose noise was calibrated for a budget other than the one charged.
std::map<int64, Allocation>
allocations_of(const std::vector<Charge> &charges)
{
	auto broken = [](const char *what) {
		fail(ERRCODE_INTERNAL_ERROR, std::string("dxpriv refuses a plan whose releases do not match their charge: ") + what,
		     "No answer was released and nothing was charged. Please report this query.");
	};
	std::map<int64, Allocation> out;
	for (const Charge &c : charges) {
		const NoiseParams &p = c.params;
		if (p.alloc_id == 0 || !(p.alloc_epsilon > 0))
			broken("an aggregate carries no allocation");
		auto [it, first] = out.try_emplace(p.alloc_id);
		Allocation &a = it->second;
		if (first) {
			a.relid = p.relid;
			a.epsilon = p.alloc_epsilon;
			a.delta = p.alloc_delta;
			a.members = p.agg_count;
			a.cache_key = p.cache_key;
		} else if (a.relid != p.relid || a.epsilon != p.alloc_epsilon || a.delta != p.alloc_delta ||
		           a.members != p.agg_count || a.cache_key != p.cache_key) {
			broken("aggregates of one allocation disagree on its totals");
		}
		if (!a.kept.insert(p.agg_index).second)
			broken("two aggregates of one allocation share a position");
		auto [e, fresh] = a.kept_epsilon.try_emplace(p.charged_epsilon_id(), p.epsilon);
		if (!fresh && e->second != p.epsilon)
			broken("copies of one aggregate disagree on its epsilon");
	}
	for (const auto &[id, a] : out) {
		double given = 0;
		for (const auto &[eid, eps] : a.kept_epsilon)
			given += eps;
		if (given > a.epsilon && !same_total(given, a.epsilon))
			broken("the kept aggregates were given more epsilon than their allocation");
		if (static_cast<int>(a.kept.size()) == a.members && !same_total(given, a.epsilon))
			broken("an allocation's total is not the sum of its aggregates' epsilons");
		if (static_cast<int>(a.kept.size()) > a.members)
			broken("an allocation has more aggregates than it was made for");
	}
	return out;
}

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
		if ((scan->ext->is_internal(a->aggfnoid) || a->aggfnoid == scan->ext->em_collect) &&
		    (list_length(a->args) >= 3 || scan->ext->is_fold(a->aggfnoid) || // (a folded GROUP BY: its slice)
		     (scan->ext->is_one_pass(a->aggfnoid) && !DO_AGGSPLIT_COMBINE(a->aggsplit)))) { // (1 argument or more)
			Const *k = aggref_params_const(a);
			if (!k)
				fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate parameters are not constants");
			NoiseParams p = parse_noise_params(DatumGetArrayTypeP(k->constvalue));
			if (scan->final_node >= 0)
				scan->finals.emplace_back(scan->final_node, a->aggno, p);
			if (scan->below_gather && !DO_AGGSPLIT_SKIPFINAL(a->aggsplit))
				scan->final_in_worker = true; // a whole aggregate under a Gather: a worker may release it
			const int seq = scan->charges.count(p.charge_id) ? scan->charges[p.charge_id].seq
			                                                   : static_cast<int>(scan->charges.size());
			scan->charges[p.charge_id] =
			    Charge{p, a->aggno, a->aggfnoid == scan->ext->em_select || a->aggfnoid == scan->ext->em_collect, seq};
			scan->charges[p.charge_id].selection = a->aggfnoid == scan->ext->partition_select;
		}
	}
	// a release of a distributed table (planner/distributed.h): its parameters are the second argument
	if (IsA(node, FuncExpr) && scan->ext->is_release(castNode(FuncExpr, node)->funcid)) {
		Const *k = release_params_const(node, *scan->ext);
		if (!k)
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate parameters are not constants");
		NoiseParams p = parse_noise_params(DatumGetArrayTypeP(k->constvalue));
		auto [it, fresh] = scan->charges.emplace(p.charge_id, Charge{p, p.agg_index, false, static_cast<int>(scan->charges.size())});
		if (fresh) // an open key's selection on a distributed table (planner/distributed_open.h)
			it->second.selection = castNode(FuncExpr, node)->funcid == scan->ext->release_selection;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(collect_aggrefs), ctx);
}

// Walker of releases_in_workers: a noisy Aggref whose final function runs where it is evaluated.
bool
worker_release_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	const ExtensionObjects *ext = static_cast<const ExtensionObjects *>(ctx);
	if (IsA(node, Aggref) && (ext->is_internal(castNode(Aggref, node)->aggfnoid)) &&
	    !DO_AGGSPLIT_SKIPFINAL(castNode(Aggref, node)->aggsplit))
		return true;
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(worker_release_walker), ctx);
}

bool
contains_worker_release(Node *node, const ExtensionObjects &ext)
{
	return worker_release_walker(node, const_cast<ExtensionObjects *>(&ext));
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

// Name of the noise mechanism for the ledger: the linear aggregates' family (exact when none of
// their cells needed noise), "+exponential" when a noisy dx.mode/quantile/median is in the statement.
const char *
mechanism_name(const std::vector<Charge> &cs)
{
	bool linear_noisy = false, exponential_noisy = false, grid = false;
	int family = 0; // of the linear aggregates (one per query)
	for (const Charge &c : cs)
		for (int g = 0; g < c.params.groups; ++g)
			for (int k = 0; k < c.params.components; ++k) {
				if (!(c.params.scale(g, k) > 0))
					continue;
				if (c.exponential) {
					exponential_noisy = true;
				} else {
					linear_noisy = true;
					family = c.params.family;
					grid = grid || c.params.grid(g, k) != 1.0;
				}
			}
	if (!linear_noisy)
		return exponential_noisy ? "exponential" : "exact";
	static const char *const names[3][2][2] = {
		// [family][grid][with exponential]
		{{"discrete_laplace", "discrete_laplace+exponential"}, {"laplace(grid)", "laplace(grid)+exponential"}},
		{{"discrete_gaussian", "discrete_gaussian+exponential"}, {"gaussian(grid)", "gaussian(grid)+exponential"}},
		{{"truncated_laplace", "truncated_laplace+exponential"},
		 {"truncated_laplace(grid)", "truncated_laplace(grid)+exponential"}}};
	return names[family >= 0 && family <= 2 ? family : 0][grid ? 1 : 0][exponential_noisy ? 1 : 0];
}

// The privacy unit of a table's share of a statement, for the ledger's mechanism:
// " per unit person_id (3 rows[, 2 groups, 2 rows per group])", or "" without one.
std::string
unit_suffix(Oid relid, const std::vector<Charge> &cs)
{
	for (const Charge &c : cs) {
		const NoiseParams &p = c.params;
		if (p.unit_attnum <= 0)
			continue;
		char *name = nullptr;
		pg_call([&] { name = get_attname(relid, static_cast<AttrNumber>(p.unit_attnum), true); });
		std::string out = std::string(" per unit ") + (name ? name : "?") + " (" + std::to_string(p.unit_rows) + " rows";
		if (p.unit_groups > 0)
			out += ", " + std::to_string(p.unit_groups) + " groups, " + std::to_string(p.unit_rows_per_group) +
			       " rows per group";
		return out + ")";
	}
	return "";
}


// Parameters of the statement's aggregates in aggregate order, and which are dx.mode/quantile/median.
std::vector<NoiseParams>
all_params(const std::vector<Charge> &cs, std::vector<bool> &exponential)
{
	std::vector<NoiseParams> out;
	exponential.clear();
	for (const Charge &c : cs) {
		out.push_back(c.params);
		exponential.push_back(c.exponential);
	}
	return out;
}

// Raises the error for a refused or failed charge; nothing was charged unless the message says so.
[[noreturn]] void
refuse_charge(const ledger::Reply &r, Oid role, Oid relid, double eps, double delta)
{
	std::string table = "?", who = "?";
	pg_call([&] {
		if (char *relname = get_rel_name(relid))
			table = relname;
		if (const char *name = GetUserNameFromId(role, true))
			who = name;
	});
	char detail[200];
	switch (r.outcome) {
	case ledger::kNoBudget:
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "role \"" + who + "\" has no privacy budget on table \"" + table + "\"",
		     "The table owner can grant one with dx.grant_budget('" + who + "', '" + table + "', 1.0).");
	case ledger::kExhausted:
		snprintf(detail, sizeof detail, "The query needs epsilon %g; %g remains.", eps, r.remaining);
		fail(ERRCODE_INSUFFICIENT_RESOURCES, "privacy budget of role \"" + who + "\" on table \"" + table + "\" is exhausted",
		     "Use a smaller epsilon (SET dxpriv.epsilon) or ask the table owner for more budget.", detail);
	case ledger::kDeltaExhausted:
		snprintf(detail, sizeof detail, "The query needs delta %g; %g remains.", delta, r.remaining);
		fail(ERRCODE_INSUFFICIENT_RESOURCES, "delta budget of role \"" + who + "\" on table \"" + table + "\" is exhausted",
		     "Use pure-epsilon noise (SET dxpriv.noise = 'laplace'), which spends no delta, or ask the table owner for "
		     "a delta budget, for example dx.grant_budget('" + who + "', '" + table + "', <epsilon>, delta => 1e-5).",
		     detail);
	case ledger::kOverCap:
		snprintf(detail, sizeof detail, "The query needs epsilon %g; the cap is %g per query.", eps, r.cap);
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "query epsilon exceeds the per-query cap of table \"" + table + "\"",
		     "Use a smaller epsilon (SET dxpriv.epsilon or an explicit epsilon argument); the table owner sets the cap "
		     "with dx.set_query_cap.",
		     detail);
	default: {
		std::string d = "The ledger reported: " + (r.message.empty() ? std::string("unknown failure") : r.message);
		if (r.sqlstate != 0)
			d += std::string(" (SQLSTATE ") + unpack_sql_state(r.sqlstate) + ")";
		d += ".";
		std::string hint = "No answer was released. Retry the query; if this persists, see the server log of the "
		                   "\"dxpriv ledger\" background worker.";
		if (r.sqlstate == ERRCODE_LOCK_NOT_AVAILABLE)
			hint = "No answer was released. A transaction holds the budget row (for example an uncommitted "
			       "dx.grant_budget, possibly in this session); commit it and retry.";
		fail(ERRCODE_SYSTEM_ERROR, "the privacy budget ledger is unavailable", hint, d);
	}
	}
}

// Mixes the bits of a double into a cache key.
uint64
mix_double(uint64 key, double v)
{
	uint64 bits = 0;
	memcpy(&bits, &v, sizeof bits);
	return hash_combine64(key, bits);
}

// The key under which the released rows of a release grouped by an open key are stored
// (ledger/open_row_cache.h): the statement's cache key (query tree, role, contents versions) with
// its text (ORDER BY, LIMIT), the policy version, the selection and noise settings, every
// aggregate's calibration and the top node's output types. False when its rows are not stored:
// not a plain SELECT, bound parameters, or a read of anything but the released tables (the rows
// must be a function of the release alone).
bool
open_rows_key(QueryDesc *qd, const std::vector<Charge> &ordered, const std::map<Oid, std::vector<Charge>> &by_table,
              uint64 *key)
{
	PlannedStmt *ps = qd->plannedstmt;
	if (qd->operation != CMD_SELECT || ps->commandType != CMD_SELECT || ps->hasModifyingCTE || !qd->sourceText ||
	    (qd->params && qd->params->numParams > 0) || !ps->planTree)
		return false;
	bool ok = true;
	uint64 k = *key;
	pg_call([&] {
		List *allowed = NIL;
		for (const auto &kv : by_table)
			allowed = list_concat(allowed, find_all_inheritors(kv.first, NoLock, nullptr));
		ListCell *lc;
		foreach (lc, ps->rtable) {
			RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
			if (rte->rtekind == RTE_RELATION)
				ok = ok && list_member_oid(allowed, rte->relid);
			else if (rte->rtekind != RTE_SUBQUERY && rte->rtekind != RTE_JOIN && rte->rtekind != RTE_CTE &&
			         rte->rtekind != RTE_RESULT && rte->rtekind != RTE_VALUES)
				ok = false;
		}
		uint64 version = 0;
		ok = ok && policy_version(qd->snapshot, &version);
		k = hash_combine64(k, version);
		// (keyed with the server's secret, as the release's identity: no collision built offline)
		k = hash_combine64(k, siphash24(answer_cache_secret(), qd->sourceText, strlen(qd->sourceText)));
		foreach (lc, ps->planTree->targetlist) {
			TargetEntry *tle = lfirst_node(TargetEntry, lc);
			k = hash_combine64(k, static_cast<uint64>(exprType((Node *) tle->expr)));
			k = hash_combine64(k, static_cast<uint64>(static_cast<uint32>(exprTypmod((Node *) tle->expr))));
		}
	});
	k = hash_combine64(k, static_cast<uint64>(guc_partition_selection));
	k = hash_combine64(k, static_cast<uint64>(guc_noise));
	k = mix_double(k, guc_epsilon);
	for (const Charge &c : ordered) {
		const NoiseParams &p = c.params;
		k = hash_combine64(k, static_cast<uint64>(p.agg_index) + (c.selection ? 1u << 20 : 0u));
		for (double v : {p.epsilon, p.delta, p.alloc_epsilon, p.alloc_delta})
			k = mix_double(k, v);
		for (int g = 0; g < p.groups; ++g)
			for (int j = 0; j < p.components; ++j)
				k = mix_double(k, p.scale(g, j));
	}
	*key = k;
	return ok;
}

// Charges every table's share through the ledger worker, which commits the budget update and the
// ledger rows in its own durable transaction before this returns; errors (and answers nothing)
// when a budget is missing, would be overspent, a per-query cap is exceeded or the ledger fails.
void
charge_plan(QueryDesc *qd, PaidRelease &paid)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext)
		return;
	PlanScan scan{ext, {}};
	walk_plan_expressions(qd->plannedstmt, [&](Node *n) { collect_aggrefs(n, &scan); }, nullptr, &scan.final_node,
	                      &scan.below_gather);
	if (scan.charges.empty())
		return;
	std::vector<int64> ids;
	for (auto &kv : scan.charges)
		ids.push_back(kv.first);
	if (statement::all_running_and_paid(ids)) { // paid by the statement this one is part of
		if (qd->plannedstmt->parallelModeNeeded)
			statement::publish_to_workers();
		return;
	}
	for (auto &kv : scan.charges) {
		answer_cache_new_execution(kv.first);
		statement::add_charge(qd, kv.first, kv.second.params.relid);
	}

	// per table, aggregates in the order of their aggregate numbers (SELECT-list order); the copies
	// of one aggregate in the branches of a grouping-set statement (same aggregate number, each in
	// its own branch) in the order of their sets (agg_index)
	std::vector<Charge> ordered;
	for (auto &kv : scan.charges)
		ordered.push_back(kv.second);
	// (several releases in one statement: release by release, in the order the plan meets them)
	std::map<int64, int> release_seq;
	for (const Charge &c : ordered) {
		auto [it, fresh] = release_seq.try_emplace(c.params.alloc_id, c.seq);
		if (!fresh)
			it->second = std::min(it->second, c.seq);
	}
	std::sort(ordered.begin(), ordered.end(), [&](const Charge &a, const Charge &b) {
		const int ra = release_seq[a.params.alloc_id], rb = release_seq[b.params.alloc_id];
		if (ra != rb)
			return ra < rb;
		return a.aggno != b.aggno ? a.aggno < b.aggno : a.params.agg_index < b.params.agg_index;
	});
	// what the plan releases, checked against what was allocated: each allocation is charged its total
	const std::map<int64, Allocation> allocations = allocations_of(ordered);
	std::map<Oid, std::vector<Charge>> by_table;
	for (const Charge &c : ordered)
		by_table[c.params.relid].push_back(c);
	for (const auto &[node, aggno, params] : scan.finals)
		statement::set_final_params(qd->plannedstmt, node, aggno, params);

	// Answer reuse: an identical query of this role gets its stored answers back, free of charge.
	const Oid asking = GetUserId();
	const NoiseParams &first = ordered.front().params;
	// (not when a parallel worker may run a final function: it could not replay the stored answers)
	bool cacheable = first.cache_key != 0 && guc_cache_lifetime > 0 && !scan.final_in_worker &&
	                 ordered.size() == static_cast<size_t>(first.agg_count) && allocations.size() == 1;
	for (const Charge &c : ordered)
		cacheable = cacheable && c.params.cache_key == first.cache_key;
	// where each aggregate's answers lie in the cached entry: after those of the aggregates before it
	// in agg_index order (the grouping sets of one statement have different numbers of groups)
	std::map<int, size_t> answer_offset;
	size_t answer_count = 0;
	for (const Charge &c : ordered)
		answer_offset[c.params.agg_index] = static_cast<size_t>(c.params.groups);
	for (auto &[index, offset] : answer_offset) {
		const size_t groups = offset;
		offset = answer_count;
		answer_count += groups;
	}
	cacheable = cacheable && answer_offset.size() == ordered.size();
	// the key also holds the contents version of every table released, read under the statement's
	// snapshot: after a write the same statement is a new release (charged), never a replay
	// (and the database: one made from another as its template has the same OIDs and versions)
	uint64 key = hash_combine64(first.cache_key, static_cast<uint64>(MyDatabaseId));
	for (auto &kv : by_table) {
		if (!cacheable)
			break;
		uint64 version = 0;
		bool known = false;
		pg_call([&] { known = contents_version(kv.first, qd->snapshot, &version); });
		cacheable = known;
		key = hash_combine64(key, hash_combine64(static_cast<uint64>(kv.first), version));
	}
	// a release grouped by an open key replays its released rows (ledger/open_row_cache.h), never
	// its per-group answers: the selection is not drawn again
	const bool open_release = std::any_of(ordered.begin(), ordered.end(), [](const Charge &c) { return c.selection; });
	if (open_release && cacheable)
		cacheable = open_rows_key(qd, ordered, by_table, &key);
	if (open_release && cacheable) {
		bool hit = false;
		pg_call([&] { hit = open_row_cache_plan_replay(qd, key, asking); });
		if (hit) {
			for (const Charge &c : ordered)
				statement::mark_paid(c.params.charge_id);
			paid.aggregates = all_params(ordered, paid.exponential);
			paid.reused = true;
			paid.logged = true;
			return;
		}
	}
	if (cacheable && !open_release) {
		std::vector<double> answers, parts;
		if (answer_cache_lookup(key, asking, answers, parts) && answers.size() == answer_count) {
			for (const Charge &c : ordered) {
				answer_cache_plan_replay(c.params.charge_id, answers, parts, answer_offset[c.params.agg_index]);
				statement::mark_paid(c.params.charge_id);
			}
			paid.aggregates = all_params(ordered, paid.exponential);
			paid.reused = true;
			paid.logged = true;
			std::vector<Oid> tables; // its scans of them read nothing (ledger/replay_scan.h)
			for (auto &kv : by_table)
				tables.push_back(kv.first);
			note_replayed_plan(qd->plannedstmt, tables);
			return;
		}
	}

	std::vector<ledger::Item> items;
	for (auto &kv : by_table) {
		ledger::Item it;
		it.relid = kv.first;
		it.epsilon = 0;
		it.delta = 0;
		// every allocation on the table, for its whole total (the epsilon and delta its cells were
		// calibrated with, also for the aggregates the planner removed); several releases compose
		int kept = 0, members = 0;
		for (const auto &[id, a] : allocations)
			if (a.relid == kv.first) {
				it.epsilon += a.epsilon;
				it.delta += a.delta;
				kept += static_cast<int>(a.kept.size());
				members += a.members;
			}
		it.mechanism = mechanism_name(kv.second) + unit_suffix(kv.first, kv.second);
		if (std::any_of(kv.second.begin(), kv.second.end(), [](const Charge &c) { return c.selection; }))
			it.mechanism += "+partition_selection"; // an open GROUP BY key (planner/open_keys.h)
		if (kept < members)
			it.mechanism += " (" + std::to_string(kept) + " of " + std::to_string(members) + " aggregates released)";
		for (const Charge &c : kv.second) // aggregate by aggregate, group by group, component by component
			for (int g = 0; g < c.params.groups; ++g)
				for (int k = 0; k < c.params.components; ++k)
					it.scales.push_back(c.params.scale(g, k));
		items.push_back(std::move(it));
	}

	Oid role = GetUserId();
	// the first 4096 bytes of the statement, cut at a character boundary (the ledger is text)
	std::string text;
	if (qd->sourceText) {
		int len = static_cast<int>(strlen(qd->sourceText));
		pg_call([&] { len = pg_mbcliplen(qd->sourceText, len, 4096); });
		text.assign(qd->sourceText, static_cast<size_t>(len));
	}
	ledger::Reply r = ledger::charge(role, GetSessionUserId(), fingerprint(qd), text, items);
	if (r.outcome != ledger::kCharged) {
		size_t t = static_cast<size_t>(r.failed_table) < items.size() ? static_cast<size_t>(r.failed_table) : 0;
		refuse_charge(r, role, items[t].relid, items[t].epsilon, items[t].delta);
	}
	paid.aggregates = all_params(ordered, paid.exponential);
	paid.logged = true;
	for (const Charge &c : ordered) {
		statement::mark_paid(c.params.charge_id);
		if (cacheable && !open_release)
			answer_cache_plan_record(c.params.charge_id, key, asking, c.params.relid,
			                         answer_offset[c.params.agg_index], answer_count);
	}
	if (cacheable && open_release)
		open_row_cache_plan_record(qd, key, asking, first.relid);
	if (qd->plannedstmt->parallelModeNeeded)
		statement::publish_to_workers();
}

} // namespace

// See ledger/charge.h.
void
charge_release(Oid relid, double epsilon, const std::string &mechanism, const std::vector<double> &scales,
               const std::string &fingerprint_text, const std::string &query_text)
{
	require_row_level_table(relid, ("the " + mechanism + " release").c_str()); // before anything is charged
	ledger::Item it;
	it.relid = relid;
	it.epsilon = epsilon;
	it.mechanism = mechanism;
	it.scales = scales;
	const Oid role = GetUserId();
	ledger::Reply r = ledger::charge(role, GetSessionUserId(), fingerprint_text, query_text, {it});
	if (r.outcome != ledger::kCharged)
		refuse_charge(r, role, relid, epsilon, 0);
}

// See ledger/charge.h.
PaidRelease
charge_statement(QueryDesc *qd)
{
	PaidRelease paid;
	charge_plan(qd, paid);
	return paid;
}

// See ledger/charge.h.
bool
releases_in_workers(PlannedStmt *stmt)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext || !stmt->parallelModeNeeded)
		return false;
	bool below_gather = false, found = false;
	walk_plan_expressions(
	    stmt,
	    [&](Node *n) {
		    if (below_gather && !found)
			    found = contains_worker_release(n, *ext);
	    },
	    nullptr, nullptr, &below_gather);
	return found;
}

namespace {

bool
holds_noisy_walker(Node *node, void *ctx)
{
	if (!node)
		return false;
	const ExtensionObjects *ext = static_cast<const ExtensionObjects *>(ctx);
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), reinterpret_cast<bool (*)()>(holds_noisy_walker), ctx, 0);
	if (IsA(node, Aggref) && ext->is_internal(castNode(Aggref, node)->aggfnoid))
		return true;
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(holds_noisy_walker), ctx);
}

} // namespace

// See ledger/charge.h.
bool
holds_noisy_aggregates(Query *q)
{
	const ExtensionObjects *ext = extension_objects();
	return ext && query_tree_walker(q, reinterpret_cast<bool (*)()>(holds_noisy_walker), const_cast<ExtensionObjects *>(ext), 0);
}

} // namespace dxpriv::pg
