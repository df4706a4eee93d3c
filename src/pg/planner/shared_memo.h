// Shared analysis memo: the second level behind the per-backend analysis memo (analysis_memo.h),
// in a fixed shared-memory region (dxpriv.shared_memo_memory), so that a new session's first
// statement does not pay an analysis another backend already made.
#pragma once

#include "pg/executor/release_log.h"

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

#include <string>
#include <vector>

namespace dxpriv::pg {

extern int guc_shared_memo_memory; // dxpriv.shared_memo_memory (kB, postmaster; 0: no shared memo)

// One registration of release descriptions made by an analysis (release_log_describe).
struct MemoDescribed {
	std::vector<int64> ids;
	std::vector<ReleaseDescription> descriptions;
	std::vector<std::string> labels;
};

// True when the region exists (dxpriv preloaded, dxpriv.shared_memo_memory > 0).
bool shared_memo_enabled();

// Stores the analysis of a statement (tree: the rewritten query; analyst: analyst_mode() after it;
// described: its release descriptions) under key (exact bytes; hash: its hash). The tree is kept
// as nodeToString text in which every pass-by-reference Const over 96 bytes (the per-point tables, the
// noise parameters) is a
// placeholder for a blob kept as raw bytes. Stores nothing, silently, when the text does not read
// back to an equal tree, when a large constant is not plain bytes (an external or expanded datum),
// when the entry is over a quarter of the region, or when the lock is busy (fail closed: the next
// backend analyses). Evicts the oldest entries to make room. A PostgreSQL call: may ERROR (out of
// memory).
void shared_memo_store(const std::string &key, uint64 hash, Query *tree, bool analyst,
                       const std::vector<MemoDescribed> &described);

// A pinned shared entry: while this backend holds a pin on it, the entry is neither dropped nor
// overwritten, so a tree whose per-point tables point into it may read them. slot -1: none.
struct SharedMemoRef {
	int slot = -1;
	uint64 stamp = 0;
};

// Looks up key: on a hit, pins the entry (*ref) and builds the stored tree in a new memory context
// under TopMemoryContext (*cxt; the caller owns it): the tree's nodes are in *cxt, its per-point
// tables are read IN PLACE in the shared entry (not copied), valid only while the entry is pinned.
// When pinned entries would then hold more than half the region, the entry is copied into *cxt
// instead and nothing is pinned (ref->slot stays -1: the tables are the caller's own).
// Fills analyst and described. False (nothing allocated, nothing pinned) when there is no entry.
// The caller must release the pin (shared_memo_unpin) when no tree reads the tables any more;
// pins still held at backend exit (FATAL included) are released then. May ERROR (out of memory;
// the pin is then released).
bool shared_memo_lookup(const std::string &key, uint64 hash, MemoryContext *cxt, Query **tree, bool *analyst,
                        std::vector<MemoDescribed> &described, SharedMemoRef *ref);

// Pins ref's entry again: true when it is still the same entry (same slot and stamp: never dropped
// or overwritten since), which then cannot go until shared_memo_unpin; false (nothing pinned) when
// it went, or when pinned entries would then hold more than half the region. Does not ERROR.
bool shared_memo_pin(const SharedMemoRef &ref);

// Releases one pin of ref's entry taken by shared_memo_lookup or shared_memo_pin. Takes no lock
// and does not ERROR (callable from a memory-context reset callback during abort).
void shared_memo_unpin(const SharedMemoRef &ref);

// Counts a statement answered from the shared memo (dx._shared_memo_hits).
void shared_memo_count_hit();

// The GUC (_PG_init) and shared memory (shmem_request / shmem_startup hooks).
void shared_memo_define_gucs();
void shared_memo_request_shmem();
void shared_memo_startup();

} // namespace dxpriv::pg
