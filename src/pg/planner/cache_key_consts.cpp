// Large constants stood in for by their hash while the answer-cache key is computed (cache_key_consts.h).
#include "pg/planner/cache_key_consts.h"

#include "pg/ledger/answer_cache.h"

extern "C" {
#include "common/hashfn.h"
#include "nodes/nodeFuncs.h"
#include "nodes/primnodes.h"
}

namespace dxpriv::pg::analysis {

namespace {

constexpr Size kLargeConstBytes = 1024;

struct ConstSwap {
	List *saved; // pairs: the Const, then its original value (as a pointer)
};

bool
swap_large_const_walker(Node *node, void *p)
{
	if (!node)
		return false;
	if (IsA(node, Query))
		return query_tree_walker(reinterpret_cast<Query *>(node), reinterpret_cast<bool (*)()>(swap_large_const_walker),
		                         p, 0);
	if (IsA(node, Const)) {
		Const *c = reinterpret_cast<Const *>(node);
		if (c->constisnull || c->constlen != -1)
			return false;
		const struct varlena *v = reinterpret_cast<const struct varlena *>(DatumGetPointer(c->constvalue));
		const Size bytes = VARSIZE_ANY(v);
		if (bytes <= kLargeConstBytes)
			return false;
		// the stored bytes, as nodeToString would print them (outDatum: datumGetSize bytes), by a hash
		// seeded with the server's secret (answer_cache_secret: a table built to collide offline with
		// another one under a public seed collides under this one only by chance; one 64-bit hash is
		// enough against an online search, which pays a charge per miss)
		uint64 seed;
		memcpy(&seed, answer_cache_secret(), sizeof seed);
		const uint64 stand[2] = {
		    hash_bytes_extended(reinterpret_cast<const unsigned char *>(v), static_cast<int>(bytes), seed), bytes};
		struct varlena *stand_in = static_cast<struct varlena *>(palloc(VARHDRSZ + sizeof stand));
		SET_VARSIZE(stand_in, VARHDRSZ + sizeof stand);
		memcpy(VARDATA(stand_in), stand, sizeof stand);
		ConstSwap *swap = static_cast<ConstSwap *>(p);
		swap->saved = lappend(swap->saved, c);
		swap->saved = lappend(swap->saved, DatumGetPointer(c->constvalue));
		c->constvalue = PointerGetDatum(stand_in);
		return false;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(swap_large_const_walker), p);
}

} // namespace

// See cache_key_consts.h.
List *
hash_large_consts(Query *q)
{
	ConstSwap swap{NIL};
	query_tree_walker(q, reinterpret_cast<bool (*)()>(swap_large_const_walker), &swap, 0);
	return swap.saved;
}

// See cache_key_consts.h.
void
restore_large_consts(List *saved)
{
	for (int i = 0; i + 1 < list_length(saved); i += 2) {
		Const *c = static_cast<Const *>(list_nth(saved, i));
		c->constvalue = PointerGetDatum(list_nth(saved, i + 1));
	}
}

// See cache_key_consts.h.
char *
query_text_with_hashed_consts(Query *q)
{
	List *volatile hashed = NIL;
	char *text = nullptr;
	PG_TRY();
	{
		hashed = hash_large_consts(q);
		text = nodeToString(q);
	}
	PG_FINALLY();
	{
		restore_large_consts(hashed);
	}
	PG_END_TRY();
	return text;
}

} // namespace dxpriv::pg::analysis
