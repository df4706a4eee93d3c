// Reuse of released answers: an identical query (same role, same normalised query tree, same
// epsilon and policy) gets the stored noisy answer back without spending budget again, so
// refreshing dashboards do not drain budgets and averaging repeated answers gains nothing.
//
// Entries live in shared memory (dxpriv.cache_size entries of up to kCacheValues answers), expire
// after dxpriv.cache_lifetime seconds and are dropped by dx.clear_cache(). After a restart the
// cache is empty: a repeated query is then charged again (never cheaper, only fresher noise).
#pragma once

extern "C" {
#include "postgres.h"
}


#include <vector>

namespace dxpriv::pg {

constexpr int kCacheValues = 1024; // answers per entry (aggregates x groups); larger results are not cached

extern int guc_cache_lifetime; // seconds; 0 disables reuse

// Shared memory sizing and initialisation (called from _PG_init's hooks).
void answer_cache_request_shmem();
void answer_cache_startup();

// A 16-byte secret drawn (pg_strong_random) when the server starts, the same in every backend: the
// answer-cache keys are keyed hashes under it (planner/release_identity.cpp, cache_key_consts.cpp),
// so an analyst cannot build offline two statements whose keys collide and be served one's answer
// for the other (the hashes' code and seeds are public; the secret is not, and the cache does not
// outlive it). Zero before answer_cache_startup.
const unsigned char *answer_cache_secret();

// Stored answers for (key, role), or false when absent or expired. parts: two values per answer
// (an average's noisy sum and count, NaN for other aggregates), for dx.last_release.
bool answer_cache_lookup(uint64 key, Oid role, std::vector<double> &answers, std::vector<double> &parts);
// Stores the answers of a completed query (replaces an older entry with the same key and role).
void answer_cache_store(uint64 key, Oid role, Oid relid, const std::vector<double> &answers,
                        const std::vector<double> &parts);
// Drops every entry (relid InvalidOid) or those of one table; returns how many were dropped.
int answer_cache_clear(Oid relid);

// Per-statement replay and recording, by the aggregates' charge ids; the state lives in the
// statement context (statement/statement_context.h: ChargeState, CacheRecording), which frees it
// at transaction end.
// replay: the aggregate's answers come from the cache; record: its answers are collected and
// stored once every answer of the query has been released. offset: position of the aggregate's
// group 0 among the statement's answers (aggregate after aggregate, group after group); total: the
// statement's number of answers.
void answer_cache_plan_replay(int64 charge_id, const std::vector<double> &answers, const std::vector<double> &parts,
                              size_t offset);
void answer_cache_plan_record(int64 charge_id, uint64 key, Oid role, Oid relid, size_t offset, size_t total);
// Starts a new execution of the aggregate charge_id (it was just charged): its earlier answers are
// forgotten, so each execution of a cached plan draws fresh noise for its own charge.
void answer_cache_new_execution(int64 charge_id);
// The answer of (charge_id, group) if it was already released in this execution (the same
// aggregate run again returns the same noisy answer) or the aggregate replays the cache; false
// otherwise. parts (when given) receives the two stored parts of an average.
bool answer_cache_replayed(int64 charge_id, int group, double &answer, double *parts = nullptr);
// Marks charge_id as a release grouped by an open key (planner/open_keys.h): several partitions
// share one group's cells, so its answers are never reused, replayed nor stored (answer_cache_replayed
// returns false and answer_cache_note does nothing for it); dx.last_release() holds them until the
// selection's verdict on their partition (executor/release_log.h). Backend-local. (A repeat of the
// whole statement by the same role replays its released rows instead: ledger/open_row_cache.h.)
void answer_cache_exclude(int64 charge_id);
bool answer_cache_excluded(int64 charge_id);
// Records a freshly released answer for this execution and, for the cache if the aggregate records,
// the answer and, for an average, its two parts.
void answer_cache_note(int64 charge_id, int group, double answer, const double *parts = nullptr);

} // namespace dxpriv::pg
