// Shared-memory answer cache and the per-statement replay/record bookkeeping.
#include "pg/ledger/answer_cache.h"

#include "pg/statement/statement_context.h"

extern "C" {
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"
}

#include <cmath>
#include <map>
#include <set>

namespace dxpriv::pg {

int guc_cache_lifetime = 3600;

namespace {

constexpr int kCacheEntries = 256;

struct CacheEntry {
	bool used;
	uint64 key;
	Oid role;
	Oid relid;
	TimestampTz created;
	int count;
	double answers[kCacheValues];
	double parts[2 * kCacheValues]; // an average's noisy sum and count per answer (NaN otherwise)
};

struct CacheShared {
	LWLock *lock;
	unsigned char secret[16]; // answer_cache_secret

	int next_victim;
	CacheEntry entries[kCacheEntries];
};

CacheShared *cache_shm = nullptr;

// The per-statement state (which aggregate replays, which records, what this execution released)
// is not here: it is the ChargeState of each charge id and the CacheRecording of each cache key in
// the statement context (statement/statement_context.h), freed at transaction end.

// True when an entry is still fresh.
bool
fresh(const CacheEntry &e)
{
	return e.used && GetCurrentTimestamp() - e.created < static_cast<int64>(guc_cache_lifetime) * USECS_PER_SEC;
}

} // namespace

// See answer_cache.h.
void
answer_cache_request_shmem()
{
	RequestAddinShmemSpace(MAXALIGN(sizeof(CacheShared)));
	RequestNamedLWLockTranche("dxpriv_answer_cache", 1);
}

// See answer_cache.h.
void
answer_cache_startup()
{
	bool found = false;
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	cache_shm = static_cast<CacheShared *>(ShmemInitStruct("dxpriv answer cache", sizeof(CacheShared), &found));
	if (!found) {
		memset(cache_shm, 0, sizeof(CacheShared));
		cache_shm->lock = &(GetNamedLWLockTranche("dxpriv_answer_cache"))->lock;
		if (!pg_strong_random(cache_shm->secret, sizeof cache_shm->secret))
			ereport(FATAL, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("could not generate the answer cache's secret"),
			                errhint("The server needs a working strong random source (pg_strong_random).")));
	}
	LWLockRelease(AddinShmemInitLock);
}

// See answer_cache.h.
const unsigned char *
answer_cache_secret()
{
	static const unsigned char none[16] = {0};
	return cache_shm ? cache_shm->secret : none;
}

// See answer_cache.h.
bool
answer_cache_lookup(uint64 key, Oid role, std::vector<double> &answers, std::vector<double> &parts)
{
	if (!cache_shm || guc_cache_lifetime <= 0)
		return false;
	bool hit = false;
	LWLockAcquire(cache_shm->lock, LW_SHARED);
	for (const CacheEntry &e : cache_shm->entries)
		if (e.used && e.key == key && e.role == role && fresh(e)) {
			answers.assign(e.answers, e.answers + e.count);
			parts.assign(e.parts, e.parts + 2 * e.count);
			hit = true;
			break;
		}
	LWLockRelease(cache_shm->lock);
	return hit;
}

// See answer_cache.h.
void
answer_cache_store(uint64 key, Oid role, Oid relid, const std::vector<double> &answers,
                   const std::vector<double> &parts)
{
	if (!cache_shm || guc_cache_lifetime <= 0 || answers.size() > static_cast<size_t>(kCacheValues) ||
	    parts.size() != 2 * answers.size())
		return;
	LWLockAcquire(cache_shm->lock, LW_EXCLUSIVE);
	CacheEntry *slot = nullptr;
	for (CacheEntry &e : cache_shm->entries)
		if ((e.used && e.key == key && e.role == role) || (!slot && !fresh(e)))
			slot = &e;
	if (!slot) {
		slot = &cache_shm->entries[cache_shm->next_victim];
		cache_shm->next_victim = (cache_shm->next_victim + 1) % kCacheEntries;
	}
	slot->used = true;
	slot->key = key;
	slot->role = role;
	slot->relid = relid;
	slot->created = GetCurrentTimestamp();
	slot->count = static_cast<int>(answers.size());
	std::copy(answers.begin(), answers.end(), slot->answers);
	std::copy(parts.begin(), parts.end(), slot->parts);
	LWLockRelease(cache_shm->lock);
}

// See answer_cache.h.
int
answer_cache_clear(Oid relid)
{
	if (!cache_shm)
		return 0;
	int dropped = 0;
	LWLockAcquire(cache_shm->lock, LW_EXCLUSIVE);
	for (CacheEntry &e : cache_shm->entries)
		if (e.used && (!OidIsValid(relid) || e.relid == relid)) {
			e.used = false;
			dropped++;
		}
	LWLockRelease(cache_shm->lock);
	return dropped;
}

// See answer_cache.h.
void
answer_cache_new_execution(int64 charge_id)
{
	if (statement::ChargeState *c = statement::find_charge_state(charge_id))
		c->released.clear();
}

// See answer_cache.h.
void
answer_cache_plan_replay(int64 charge_id, const std::vector<double> &answers, const std::vector<double> &parts,
                         size_t offset)
{
	statement::ChargeState &c = statement::charge_state(charge_id);
	c.replays = true;
	c.replay_answers = answers;
	c.replay_parts = parts;
	c.replay_offset = offset;
}

// See answer_cache.h.
void
answer_cache_plan_record(int64 charge_id, uint64 key, Oid role, Oid relid, size_t offset, size_t total)
{
	statement::ChargeState &c = statement::charge_state(charge_id);
	c.records = true;
	c.record_key = key;
	c.record_offset = offset;
	statement::CacheRecording &r = statement::cache_recording(key);
	if (r.answers.empty()) {
		r.key = key;
		r.role = role;
		r.relid = relid;
		r.expected = static_cast<int>(total);
		r.answers.assign(r.expected, 0.0);
		r.parts.assign(2 * static_cast<size_t>(r.expected), std::nan(""));
		r.filled.assign(r.expected, 0);
	}
}

// Charge ids of releases grouped by an open key (answer_cache_exclude).
static std::set<int64> excluded_charges;

// See answer_cache.h.
void
answer_cache_exclude(int64 charge_id)
{
	excluded_charges.insert(charge_id);
}

// See answer_cache.h.
bool
answer_cache_excluded(int64 charge_id)
{
	return excluded_charges.count(charge_id) > 0;
}

// See answer_cache.h.
bool
answer_cache_replayed(int64 charge_id, int group, double &answer, double *parts)
{
	if (answer_cache_excluded(charge_id)) // grouped by an open key: partitions share its groups
		return false;
	const statement::ChargeState *c = statement::find_charge_state(charge_id);
	if (!c)
		return false;
	// a release already drawn in this execution of the statement (the same aggregate run again: a
	// rescan, a second copy of a subquery) gets the same answer: one charge, one noise draw
	auto done = c->released.find(group);
	if (done != c->released.end()) {
		answer = done->second.answer;
		if (parts && done->second.has_parts) {
			parts[0] = done->second.parts[0];
			parts[1] = done->second.parts[1];
		}
		return true;
	}
	if (!c->replays)
		return false;
	const size_t pos = c->replay_offset + static_cast<size_t>(group);
	if (pos >= c->replay_answers.size())
		return false;
	answer = c->replay_answers[pos];
	if (parts) {
		const bool stored = 2 * pos + 1 < c->replay_parts.size();
		parts[0] = stored ? c->replay_parts[2 * pos] : std::nan("");
		parts[1] = stored ? c->replay_parts[2 * pos + 1] : std::nan("");
	}
	return true;
}

// See answer_cache.h.
void
answer_cache_note(int64 charge_id, int group, double answer, const double *parts)
{
	if (answer_cache_excluded(charge_id))
		return;
	statement::ChargeState &c = statement::charge_state(charge_id);
	c.released[group] =
		statement::ReleasedAnswer{answer, {parts ? parts[0] : 0.0, parts ? parts[1] : 0.0}, parts != nullptr};
	if (!c.records)
		return;
	statement::CacheRecording *rec = statement::find_cache_recording(c.record_key);
	if (!rec)
		return;
	statement::CacheRecording &r = *rec;
	const size_t pos = c.record_offset + static_cast<size_t>(group);
	if (pos >= r.answers.size() || r.filled[pos])
		return;
	r.answers[pos] = answer;
	if (parts) {
		r.parts[2 * pos] = parts[0];
		r.parts[2 * pos + 1] = parts[1];
	}
	r.filled[pos] = 1;
	if (++r.filled_count == r.expected) {
		answer_cache_store(r.key, r.role, r.relid, r.answers, r.parts);
		statement::forget_cache_recording(c.record_key);
	}
}

} // namespace dxpriv::pg
