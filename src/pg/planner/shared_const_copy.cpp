// A query's copy sharing its per-point tables with the original (shared_const_copy.h).
#include "pg/planner/shared_const_copy.h"

extern "C" {
#include "nodes/nodeFuncs.h"
#include "nodes/parsenodes.h"
#include "nodes/primnodes.h"
}

#include <cstring>

namespace dxpriv::pg {

namespace {

constexpr Size kSharedConstBytes = 1024;

// The walk of both trees: visits Consts in the same order in the original and in its copy.
struct ConstShare {
	bool mark;      // on the original: flag the large Consts null (copyConst then copies the pointer)
	List *marked;   // the original's flagged Consts, in walk order
	int index;      // on the copy: how many of its Consts were visited
	List *indices;  // walk positions of the flagged Consts (int list, in order)
	ListCell *next; // on the copy: the next position to put back
};

bool
share_const_walker(Node *node, void *p)
{
	if (!node)
		return false;
	if (IsA(node, Query))
		return query_tree_walker(reinterpret_cast<Query *>(node), reinterpret_cast<bool (*)()>(share_const_walker), p,
		                         0);
	if (IsA(node, Const)) {
		auto *s = static_cast<ConstShare *>(p);
		Const *c = reinterpret_cast<Const *>(node);
		const int at = s->index++;
		if (s->mark) {
			if (!c->constisnull && !c->constbyval && c->constlen == -1 &&
			    VARSIZE_ANY(DatumGetPointer(c->constvalue)) > kSharedConstBytes) {
				c->constisnull = true; // (the value stays: copyConst copies a null's Datum as is)
				s->marked = lappend(s->marked, c);
				s->indices = lappend_int(s->indices, at);
			} else if (c->constisnull && list_member_ptr(s->marked, c)) {
				s->indices = lappend_int(s->indices, at); // a node reached twice: copied twice, both put back
			}
		} else if (s->next && lfirst_int(s->next) == at) {
			c->constisnull = false; // the copy's Const: the same pointer, now a value again
			s->next = lnext(s->indices, s->next);
		}
		return false;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(share_const_walker), p);
}

// The distinct tables met so far (pointers, in order) and whether to free a duplicate's bytes.
struct EqualTables {
	List *tables;
	bool free_duplicates;
};

bool
equal_tables_walker(Node *node, void *p)
{
	if (!node)
		return false;
	if (IsA(node, Query))
		return query_tree_walker(reinterpret_cast<Query *>(node), reinterpret_cast<bool (*)()>(equal_tables_walker), p,
		                         0);
	if (IsA(node, Const)) {
		auto *e = static_cast<EqualTables *>(p);
		Const *c = reinterpret_cast<Const *>(node);
		if (c->constisnull || c->constbyval || c->constlen != -1)
			return false;
		void *v = DatumGetPointer(c->constvalue);
		if (VARATT_IS_EXTENDED(v) || VARSIZE(v) <= kSharedConstBytes)
			return false;
		ListCell *lc;
		foreach (lc, e->tables) {
			void *t = lfirst(lc);
			if (t == v)
				return false;
			if (VARSIZE(t) == VARSIZE(v) && memcmp(t, v, VARSIZE(v)) == 0) {
				c->constvalue = PointerGetDatum(t);
				if (e->free_duplicates)
					pfree(v);
				return false;
			}
		}
		e->tables = lappend(e->tables, v);
		return false;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(equal_tables_walker), p);
}

} // namespace

// See shared_const_copy.h.
void
share_equal_large_consts(Node *node, bool free_duplicates)
{
	EqualTables e{NIL, free_duplicates};
	equal_tables_walker(node, &e);
	list_free(e.tables);
}

// See shared_const_copy.h.
Node *
copy_sharing_large_consts(Node *node)
{
	ConstShare s{true, NIL, 0, NIL, nullptr};
	Node *copy = nullptr;
	PG_TRY();
	{
		share_const_walker(node, &s);
		copy = static_cast<Node *>(copyObjectImpl(node));
		ConstShare back{false, NIL, 0, s.indices, list_head(s.indices)};
		share_const_walker(copy, &back);
		if (back.next != nullptr) // (the copy has the original's shape: cannot happen)
			elog(ERROR, "dxpriv: a shared constant of a copied query was not found");
	}
	PG_FINALLY();
	{
		ListCell *lc;
		foreach (lc, s.marked)
			static_cast<Const *>(lfirst(lc))->constisnull = false;
	}
	PG_END_TRY();
	list_free(s.marked);
	list_free(s.indices);
	return copy;
}

} // namespace dxpriv::pg
