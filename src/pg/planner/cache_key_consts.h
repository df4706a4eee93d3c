// Large constants of a rewritten query (its per-point lookup tables) stood in for by a hash of their
// bytes while the answer-cache key is computed, so that the key's text does not spell every byte.
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
#include "nodes/pg_list.h"
}

namespace dxpriv::pg::analysis {

// Replaces, in place, the value of every varlena Const of q (subqueries included) longer than 1 kB
// by a 16-byte value holding a 64-bit hash of its stored bytes, seeded with the server's secret
// (answer_cache_secret), and their length; returns what
// restore_large_consts needs to put the originals back (NIL when none was replaced).
List *hash_large_consts(Query *q);

// Puts back the values hash_large_consts replaced.
void restore_large_consts(List *saved);

// nodeToString(q) with its large constants stood in for by their hashes, put back afterwards even
// when an error (out of memory) interrupts it. A PostgreSQL frame: call through pg_value.
char *query_text_with_hashed_consts(Query *q);

} // namespace dxpriv::pg::analysis
