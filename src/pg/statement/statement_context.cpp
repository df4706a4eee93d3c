// Statement context: the backend-local state charging hands to execution and final functions (see header).
#include "pg/statement/statement_context.h"

#include "pg/elevated/sealed_execution.h"
#include "pg/contract/noise_params.h"
#include "pg/guard.h"

extern "C" {
#include "access/parallel.h"
#include "access/xact.h"
#include "utils/guc.h"
}

#include <cstdlib>
#include <deque>
#include <map>
#include <unordered_map>
#include <string>
#include <tuple>
#include <unordered_set>
#include <utility>

namespace dxpriv::pg::statement {

namespace {

std::unordered_set<int64> paid_ids; // charge ids paid in the current transaction
// Charge ids of the statements executing now (set when charged, removed at their ExecutorEnd): a
// statement started while another runs, whose releases that one paid for, is part of it (Citus
// runs the coordinator's share of a distributed query as a nested local task) and is not charged
// again.
std::map<const QueryDesc *, std::vector<std::pair<int64, Oid>>> running_charges; // (charge id, table)
// How many of a statement's ExecutorStart/Run/Finish calls are in progress: a nested statement is
// part of a running one only while that one's executor is inside such a call (Citus's local tasks).
// An open cursor between two FETCHes is not executing: what runs then is a statement of its own.
std::map<const QueryDesc *, int> executing;
// (PlannedStmt, plan_node_id of a finalize-phase Agg, aggno) -> params of its partial aggregate
std::map<std::tuple<const void *, int, int>, NoiseParams> params_by_agg;
std::map<const QueryDesc *, Oid> run_as_owner; // set at every ExecutorStart, so never stale
std::unordered_map<int64, ChargeState> charge_states; // charge id -> what the answer cache and release log keep
std::map<uint64, CacheRecording> cache_recordings;    // cache key -> answers being collected
// release descriptions: the registrations, oldest first, and where each charge id's is
std::deque<std::pair<std::vector<int64>, std::shared_ptr<const DescribedStatement>>> descriptions;
std::unordered_map<int64, std::pair<std::shared_ptr<const DescribedStatement>, size_t>> description_of;

// dxpriv.charged_releases: the charge ids paid by the statements this backend runs now, as text.
// Parallel workers receive the leader's settings (PostgreSQL serialises them when it launches them)
// and consult this list where the leader consults paid_ids: a worker runs only plans its leader
// started, but the leader's memory is not theirs. Set by the leader only (superuser-only, local to
// the transaction); an analyst cannot set it.
char *guc_charged_releases = nullptr;
std::string worker_ids_text;          // the value worker_ids was parsed from
std::unordered_set<int64> worker_ids; // in a parallel worker: the leader's charged ids

// In a parallel worker: whether the leader published charge_id as paid.
bool
leader_paid(int64 charge_id)
{
	const char *text = guc_charged_releases ? guc_charged_releases : "";
	if (worker_ids_text != text) {
		worker_ids.clear();
		worker_ids_text = text;
		for (const char *p = text; *p;) {
			char *end = nullptr;
			const long long id = strtoll(p, &end, 10);
			if (end == p)
				break;
			worker_ids.insert(static_cast<int64>(id));
			p = *end == ',' ? end + 1 : end;
		}
	}
	return worker_ids.count(charge_id) > 0;
}

} // namespace

void
mark_paid(int64 charge_id)
{
	paid_ids.insert(charge_id);
}

bool
paid(int64 charge_id)
{
	if (IsParallelWorker())
		return leader_paid(charge_id);
	return paid_ids.count(charge_id) > 0;
}

void
set_final_params(const void *plan, int final_node, int aggno, const NoiseParams &params)
{
	params_by_agg[{plan, final_node, aggno}] = params;
}

bool
final_params(const void *plan, int final_node, int aggno, NoiseParams &out)
{
	auto it = params_by_agg.find({plan, final_node, aggno});
	if (it == params_by_agg.end())
		return false;
	out = it->second;
	return true;
}

void
forget_charges(const QueryDesc *qd)
{
	running_charges.erase(qd);
	executing.erase(qd);
}

void
add_charge(const QueryDesc *qd, int64 charge_id, Oid relid)
{
	running_charges[qd].emplace_back(charge_id, relid);
}

bool
all_running_and_paid(const std::vector<int64> &charge_ids)
{
	if (running_charges.empty())
		return false;
	std::unordered_set<int64> running;
	for (auto &kv : running_charges)
		for (auto &c : kv.second)
			running.insert(c.first);
	for (int64 id : charge_ids)
		if (!running.count(id) || !paid_ids.count(id))
			return false;
	return true;
}

bool
part_of_running(Oid relid)
{
	for (auto &kv : running_charges) {
		auto active = executing.find(kv.first);
		if (active == executing.end() || active->second <= 0)
			continue; // an open cursor between FETCHes: what runs now is not part of it
		for (auto &c : kv.second)
			if (c.second == relid && paid_ids.count(c.first))
				return true;
	}
	return false;
}

void
enter(const QueryDesc *qd)
{
	executing[qd]++;
}

void
leave(const QueryDesc *qd)
{
	auto it = executing.find(qd);
	if (it != executing.end() && --it->second <= 0)
		executing.erase(it);
}

void
set_owner(const QueryDesc *qd, Oid owner)
{
	run_as_owner[qd] = owner;
}

void
forget_owner(const QueryDesc *qd)
{
	run_as_owner.erase(qd);
}

Oid
owner(const QueryDesc *qd)
{
	auto it = run_as_owner.find(qd);
	return it == run_as_owner.end() ? InvalidOid : it->second;
}

Oid
take_owner(const QueryDesc *qd)
{
	const Oid o = owner(qd);
	run_as_owner.erase(qd);
	return o;
}

ChargeState &
charge_state(int64 charge_id)
{
	return charge_states[charge_id];
}

ChargeState *
find_charge_state(int64 charge_id)
{
	auto it = charge_states.find(charge_id);
	return it == charge_states.end() ? nullptr : &it->second;
}

CacheRecording &
cache_recording(uint64 key)
{
	return cache_recordings[key];
}

CacheRecording *
find_cache_recording(uint64 key)
{
	auto it = cache_recordings.find(key);
	return it == cache_recordings.end() ? nullptr : &it->second;
}

void
forget_cache_recording(uint64 key)
{
	cache_recordings.erase(key);
}

void
describe(const std::vector<int64> &charge_ids, std::shared_ptr<const DescribedStatement> d)
{
	while (descriptions.size() >= kMaxDescribedStatements) {
		for (int64 id : descriptions.front().first)
			description_of.erase(id);
		descriptions.pop_front();
	}
	descriptions.emplace_back(charge_ids, d);
	for (size_t i = 0; i < charge_ids.size(); ++i)
		description_of[charge_ids[i]] = {d, i};
}

std::pair<std::shared_ptr<const DescribedStatement>, size_t>
described(int64 charge_id)
{
	auto it = description_of.find(charge_id);
	if (it == description_of.end())
		return {nullptr, 0};
	return it->second;
}

void
publish_to_workers()
{
	if (IsInParallelMode()) // (settings cannot change during a parallel operation; nothing new starts)
		return;
	std::string text;
	for (auto &kv : running_charges)
		for (auto &c : kv.second)
			if (paid_ids.count(c.first))
				text += (text.empty() ? "" : ",") + std::to_string(c.first);
	pg_call([&] { set_internal_setting_local("dxpriv.charged_releases", text.c_str()); });
}

void
define_gucs()
{
	DefineCustomStringVariable("dxpriv.charged_releases", "Charge ids paid by the running statements (internal).",
	                           "Set by dxpriv for its parallel workers; not to be set by hand.", &guc_charged_releases,
	                           "", PGC_SUSET,
	                           GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE | GUC_NO_RESET_ALL | GUC_DISALLOW_IN_FILE |
	                               GUC_DISALLOW_IN_AUTO_FILE,
	                           nullptr, nullptr, nullptr);
}

void
reset_transaction()
{
	paid_ids.clear();
	params_by_agg.clear();
	running_charges.clear();
	executing.clear();
	charge_states.clear();
	cache_recordings.clear();
}

void
reset_subtransaction()
{
	running_charges.clear();
	executing.clear();
}

void
reset_owners()
{
	run_as_owner.clear();
}

} // namespace dxpriv::pg::statement
