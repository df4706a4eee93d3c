// Per-point tables stood in for by small constants while the planner runs (large_const_stand_ins.h).
#include "pg/planner/large_const_stand_ins.h"

#include "pg/guard.h"
#include "pg/metadata/extension_objects.h"
#include "pg/plan_walk.h"
#include "pg/settings.h"
#include "pg/stand_in.h"

extern "C" {
#include "common/hashfn.h"
#include "nodes/nodeFuncs.h"
#include "nodes/primnodes.h"
#include "port.h"
}

#include <cstring>

namespace dxpriv::pg {

namespace {

constexpr Size kStandInFrom = 1024; // a Const longer than this (bytes) is stood in for
// a stand-in's value (pg/stand_in.h): the fixed magic, then (nonce, nonce ^ class, length)
static_assert(kStandInSize < kStandInFrom, "a stand-in is never itself stood in for");

// One class of equal tables: its first table, and its stand-in.
struct StandInClass {
	void *table;
	Size bytes;
	void *stand_in;
};

// The substitution of one planner call (palloc'd: lives across the planner's longjmp).
struct StandIns {
	const ExtensionObjects *ext;
	StandInClass *classes;
	int count, capacity;
	List *replaced; // pairs: a Const of the query, its table
	int restored;   // Consts given their table back (the last restore walk)
	int foreign;    // Consts holding a stand-in of no class of this call (the last restore walk)
};

uint64 stand_in_nonce[2];
bool nonce_drawn = false;

bool
large_table(const Const *c)
{
	if (c->constisnull || c->constbyval || c->constlen != -1)
		return false;
	const void *v = DatumGetPointer(c->constvalue);
	return !VARATT_IS_EXTENDED(v) && VARSIZE(v) > kStandInFrom;
}

// The stand-in of c's table: that of its class, made when the class is new.
void *
stand_in_of(StandIns *s, const Const *c)
{
	void *v = DatumGetPointer(c->constvalue);
	const Size bytes = VARSIZE(v);
	for (int i = 0; i < s->count; ++i) // (the same bytes: one memcmp against the class's first)
		if (s->classes[i].table == v || (s->classes[i].bytes == bytes && memcmp(s->classes[i].table, v, bytes) == 0))
			return s->classes[i].stand_in;
	if (s->count == s->capacity) {
		s->capacity = s->capacity ? 2 * s->capacity : 8;
		s->classes = static_cast<StandInClass *>(
		    s->classes ? repalloc(s->classes, sizeof(StandInClass) * s->capacity)
		               : palloc(sizeof(StandInClass) * s->capacity));
	}
	// (magic, nonce, class, length): no analysed constant is one, short of guessing the nonce; every
	// reader refuses it by its magic (pg/stand_in.h)
	const uint64 words[kStandInWords] = {stand_in_nonce[0], stand_in_nonce[1] ^ static_cast<uint64>(s->count), bytes};
	auto *stand_in = static_cast<struct varlena *>(palloc(kStandInSize));
	SET_VARSIZE(stand_in, kStandInSize);
	memcpy(VARDATA(stand_in), kStandInMagic, kStandInMagicBytes);
	memcpy(VARDATA(stand_in) + kStandInMagicBytes, words, sizeof words);
	s->classes[s->count++] = {v, bytes, stand_in};
	return stand_in;
}

bool
substitute_walker(Node *node, void *p)
{
	if (!node)
		return false;
	if (IsA(node, Query))
		return query_tree_walker(reinterpret_cast<Query *>(node), reinterpret_cast<bool (*)()>(substitute_walker), p, 0);
	auto *s = static_cast<StandIns *>(p);
	if (IsA(node, Aggref) && s->ext->is_internal(castNode(Aggref, node)->aggfnoid)) {
		ListCell *lc;
		foreach (lc, castNode(Aggref, node)->args) {
			TargetEntry *tle = lfirst_node(TargetEntry, lc);
			if (tle->expr && IsA(tle->expr, Const) && large_table(castNode(Const, tle->expr))) {
				Const *c = castNode(Const, tle->expr);
				void *stand_in = stand_in_of(s, c);
				s->replaced = lappend(s->replaced, c);
				s->replaced = lappend(s->replaced, DatumGetPointer(c->constvalue));
				c->constvalue = PointerGetDatum(stand_in);
			}
		}
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(substitute_walker), p);
}

// Gives every Const holding a stand-in its table back. By the stand-in's bytes, not its pointer: the
// planner copies a subquery (copyObject, which copies a Const's value) before planning it. Counts
// in s->foreign the Consts holding a stand-in of no class of this call (never raises: it runs under
// the plan walk's C++ frames).
bool
restore_walker(Node *node, void *p)
{
	if (!node)
		return false;
	if (IsA(node, Query))
		return query_tree_walker(reinterpret_cast<Query *>(node), reinterpret_cast<bool (*)()>(restore_walker), p, 0);
	if (IsA(node, Const)) {
		auto *s = static_cast<StandIns *>(p);
		Const *c = reinterpret_cast<Const *>(node);
		if (c->constisnull || c->constbyval || c->constlen != -1)
			return false;
		const void *v = DatumGetPointer(c->constvalue);
		if (!is_stand_in(v))
			return false;
		for (int i = 0; i < s->count; ++i)
			if (v == s->classes[i].stand_in || (VARATT_IS_4B_U(v) && memcmp(v, s->classes[i].stand_in, kStandInSize) == 0)) {
				c->constvalue = PointerGetDatum(s->classes[i].table);
				s->restored++;
				return false;
			}
		s->foreign++;
		return false;
	}
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(restore_walker), p);
}

void
restore_query(StandIns *s, Query *parse)
{
	for (int i = 0; i + 1 < list_length(s->replaced); i += 2)
		static_cast<Const *>(list_nth(s->replaced, i))->constvalue = PointerGetDatum(list_nth(s->replaced, i + 1));
	// (the planner's own copies in the query: preprocess_expression replaces its target list)
	restore_walker(reinterpret_cast<Node *>(parse), s);
}

} // namespace

// See large_const_stand_ins.h.
PlannedStmt *
plan_with_stand_ins(PlanNext next, Query *parse, const char *query_string, int cursor_options, ParamListInfo params)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext)
		return next(parse, query_string, cursor_options, params);
	if (!nonce_drawn) {
		if (!pg_strong_random(stand_in_nonce, sizeof stand_in_nonce))
			return next(parse, query_string, cursor_options, params); // (no nonce: the tables as they are)
		nonce_drawn = true;
	}
	auto *s = static_cast<StandIns *>(palloc0(sizeof(StandIns)));
	s->ext = ext;
	PlannedStmt *result = nullptr;
	PG_TRY();
	{
		query_tree_walker(parse, reinterpret_cast<bool (*)()>(substitute_walker), s, 0);
		result = next(parse, query_string, cursor_options, params);
	}
	PG_FINALLY();
	{
		restore_query(s, parse);
	}
	PG_END_TRY();
	// Every expression of every plan node (not only the Agg nodes' lists, where the planner puts an
	// aggregate's arguments: a ForeignScan's fdw_scan_tlist, a CustomScan's, an index qual, ...),
	// and after it no stand-in may remain: one that would reach execution is refused here (and by
	// every reader of the arguments, pg/stand_in.h). The same walk: no second pass over the plan.
	// dxpriv.test_skip_stand_in_restore (superuser-only, tests only) leaves the plan as planned, to
	// show that the readers refuse it.
	if (s->count > 0 && result && !guc_test_skip_stand_in_restore) {
		bool known = true;
		guarded([&] {
			pg_call([&] { known = walk_every_plan_expression(result, [s](Node *n) { restore_walker(n, s); }); });
		});
		if (s->foreign > 0)
			ereport_stand_in("a plan (a stand-in of no table of this planning)");
		if (!known)
			ereport_stand_in("a plan node dxpriv cannot walk (its stand-ins could not be restored)");
	}
	return result;
}

} // namespace dxpriv::pg
