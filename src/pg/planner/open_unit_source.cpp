// Open GROUP BY keys on a table with a privacy unit: bounded source with keys and unit; distinct-unit selection.
#include "pg/planner/open_unit_source.h"

#include "pg/guard.h"
#include "pg/node_build.h"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_oper.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"
}

#include <string>

namespace dxpriv::pg::analysis {

namespace {

// A column the bounded source reads and outputs under its own name (never analysed: the policy
// copy that holds it is used only to name the source's columns).
ColumnPolicy
passthrough_column(Oid relid, AttrNumber attnum)
{
	ColumnPolicy c;
	char *name = pg_value([&] { return get_attname(relid, attnum, false); });
	c.name = name;
	c.attnum = attnum;
	ColumnPolicy::Member m;
	m.name = name;
	m.attnum = attnum;
	pg_call([&] { get_atttypetypmodcoll(relid, attnum, &m.type, &m.typmod, &m.collation); });
	c.type = m.type;
	c.typmod = m.typmod;
	c.collation = m.collation;
	c.members.push_back(m);
	return c;
}

} // namespace

// See open_unit_source.h.
std::map<AttrNumber, AttrNumber>
replace_with_open_unit_source(Query *q, const UnitSource &spec, const std::vector<AttrNumber> &open_keys)
{
	if (spec.empty_groups && spec.keys)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv: an open release has no empty-group rows");
	TablePolicy policy = *spec.policy;
	UnitSource open = spec;
	for (AttrNumber att : open_keys) {
		if (policy.find(att))
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv: an open key is a declared column");
		policy.columns.push_back(passthrough_column(policy.relid, att));
		open.columns.push_back(att);
	}
	open.flag_columns = open_keys; // count_units: a unit counts once per partition
	if (policy.find(policy.unit.attnum))
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv: the privacy unit is a declared column");
	policy.columns.push_back(passthrough_column(policy.relid, policy.unit.attnum));
	open.columns.push_back(policy.unit.attnum);
	open.policy = &policy;
	return replace_with_unit_source(q, open);
}

// See open_unit_source.h.
Expr *
unit_selection_weight(Expr *counted, Oid relid, const UnitPolicy &unit)
{
	Oid type = InvalidOid, collation = InvalidOid;
	int32 typmod = -1;
	pg_call([&] { get_atttypetypmodcoll(relid, unit.attnum, &type, &typmod, &collation); });
	TypeCacheEntry *tc = pg_value([&] { return lookup_type_cache(type, TYPECACHE_HASH_EXTENDED_PROC); });
	if (!OidIsValid(tc->hash_extended_proc))
		fail(ERRCODE_FEATURE_NOT_SUPPORTED,
		     "the privacy unit column \"" + unit.column + "\" has a type without hash support",
		     "Open GROUP BY keys count the units of each partition by a hash of the unit: use a unit column of a "
		     "built-in type (integer, text, uuid).");
	Var *u = makeVar(1, unit.attnum, type, typmod, collation, 0);
	Const *seed = makeConst(INT8OID, -1, InvalidOid, sizeof(int64), Int64GetDatum(0), false, FLOAT8PASSBYVAL);
	FuncExpr *hash = makeFuncExpr(tc->hash_extended_proc, INT8OID, list_make2(u, seed), InvalidOid, collation,
	                              COERCE_EXPLICIT_CALL);
	FuncExpr *as_float = makeFuncExpr(F_FLOAT8_INT8, FLOAT8OID, list_make1(hash), InvalidOid, InvalidOid,
	                                  COERCE_EXPLICIT_CAST);
	NullTest *nt = makeNode(NullTest);
	nt->arg = counted;
	nt->nulltesttype = IS_NOT_NULL;
	nt->argisrow = false;
	nt->location = -1;
	return case_when((Expr *) nt, (Expr *) as_float, FLOAT8OID);
}

// See open_unit_source.h.
void
make_distinct_selection(Aggref *agg)
{
	List *distinct = NIL;
	Index ref = 1;
	ListCell *lc;
	foreach (lc, agg->args) {
		TargetEntry *te = lfirst_node(TargetEntry, lc);
		const Oid type = exprType((Node *) te->expr);
		Oid sortop = InvalidOid, eqop = InvalidOid;
		bool hashable = false;
		pg_call([&] { get_sort_group_operators(type, true, true, false, &sortop, &eqop, nullptr, &hashable); });
		te->ressortgroupref = ref;
		SortGroupClause *sgc = makeNode(SortGroupClause);
		sgc->tleSortGroupRef = ref;
		sgc->eqop = eqop;
		sgc->sortop = sortop;
		sgc->nulls_first = false;
		sgc->hashable = hashable;
		distinct = lappend(distinct, sgc);
		++ref;
	}
	agg->aggdistinct = distinct;
}

} // namespace dxpriv::pg::analysis
