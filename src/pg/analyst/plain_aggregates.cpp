// Analysts' plain aggregates (count, sum, avg, ...) rewritten to dx aggregates, or refused.
#include "pg/analyst/plain_aggregates.h"

#include "pg/analyst/dispersion_spelling.h"
#include "pg/analyst/refusals.h"

#include "pg/guard.h"
#include "pg/node_build.h"
#include "pg/metadata/extension_objects.h"
#include "pg/metadata/policy.h"

extern "C" {
#include "access/sysattr.h"
#include "access/transam.h"
#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/inval.h"
#include "utils/fmgroids.h"
#include "parser/parse_func.h"
#include "parser/parsetree.h"
#include "nodes/plannodes.h"
#include "utils/array.h"
#include "access/htup_details.h"
#include "catalog/dependency.h"
#include "commands/extension.h"
}

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <string>

namespace dxpriv::pg {

namespace {

struct PlainAggRewrite {
	const ExtensionObjects *ext;
	Query *q;
	int rewritten = 0;
};

// The table q reads directly (its one range table entry), or InvalidOid.
Oid
read_table(Query *q)
{
	if (list_length(q->rtable) != 1)
		return InvalidOid;
	RangeTblEntry *rte = linitial_node(RangeTblEntry, q->rtable);
	return rte->rtekind == RTE_RELATION ? rte->relid : InvalidOid;
}

// Name of the column expr refers to when it is a column of q's table (implicit casts stripped),
// else "<column>"; for the examples of hints.
std::string
column_for_hint(Query *q, Node *expr)
{
	Node *e = expr ? strip_implicit_coercions(expr) : nullptr;
	const Oid rel = read_table(q);
	if (e && IsA(e, Var) && OidIsValid(rel) && castNode(Var, e)->varattno > 0) {
		char *att = get_attname(rel, castNode(Var, e)->varattno, true);
		if (att)
			return quote_identifier(att);
	}
	return "<column>";
}

std::string
table_for_hint(Query *q)
{
	return relation_for_hint(read_table(q));
}

// The first aggregated argument of a, or nullptr.
Node *
first_arg(Aggref *a)
{
	return a->args ? (Node *) linitial_node(TargetEntry, a->args)->expr : nullptr;
}

// count(col) on a column that is not declared but NOT NULL (a primary key such as id): every row
// counts, so it is count(*). Declared columns keep dx.count(col) (NULL after clamping counts 0);
// a nullable undeclared column stays refused (whether it is NULL is data).
bool
counts_every_row(Query *q, Aggref *a)
{
	if (a->aggstar || list_length(a->args) != 1 || a->aggdistinct)
		return false;
	Node *e = first_arg(a);
	const Oid rel = read_table(q);
	if (!e || !IsA(e, Var) || !OidIsValid(rel))
		return false;
	Var *v = castNode(Var, e);
	if (v->varlevelsup != 0 || v->varno != 1 || v->varattno <= 0)
		return false;
	TablePolicy policy;
	if (!load_table_policy(rel, policy) || policy.find(v->varattno))
		return false; // not a directly protected table (children are refused elsewhere), or declared
	bool notnull = false;
	pg_call([&] {
		HeapTuple tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(rel), Int16GetDatum(v->varattno));
		if (HeapTupleIsValid(tup)) {
			notnull = ((Form_pg_attribute) GETSTRUCT(tup))->attnotnull;
			ReleaseSysCache(tup);
		}
	});
	return notnull;
}

// count(<non-null constant>) and sum(1) (Tableau's SUM(1) ... HAVING COUNT(1) > 0): every row
// weighs 1, which is count(*); spelled as count(*), equal occurrences are one cell, charged once.
bool
counts_rows_by_constant(Aggref *a, const std::string &fn)
{
	if (a->aggstar || a->aggdistinct || list_length(a->args) != 1)
		return false;
	Node *e = strip_implicit_coercions(first_arg(a));
	if (!e || !IsA(e, Const) || castNode(Const, e)->constisnull)
		return false;
	if (fn == "count")
		return true;
	const Const *c = castNode(Const, e);
	if (fn != "sum")
		return false;
	switch (c->consttype) {
	case INT2OID:
		return DatumGetInt16(c->constvalue) == 1;
	case INT4OID:
		return DatumGetInt32(c->constvalue) == 1;
	case INT8OID:
		return DatumGetInt64(c->constvalue) == 1;
	default:
		return false;
	}
}

// count(DISTINCT unit) on the privacy unit column of the table q reads: the number of units, which
// dx.count_units answers (README "Privacy units").
// The column of count(DISTINCT <column>) when it is a column of the protected table q reads (at
// its first range-table entry), with that table's policy in *policy; nullptr otherwise.
static Var *
distinct_table_column(Query *q, Aggref *a, TablePolicy *policy)
{
	if (!a->aggdistinct || list_length(a->args) != 1)
		return nullptr;
	Node *e = strip_implicit_coercions(first_arg(a));
	const Oid rel = read_table(q);
	if (!e || !IsA(e, Var) || !OidIsValid(rel))
		return nullptr;
	Var *v = castNode(Var, e);
	if (v->varlevelsup != 0 || v->varno != 1 || !load_table_policy(rel, *policy))
		return nullptr;
	return v;
}

bool
counts_units(Query *q, Aggref *a)
{
	TablePolicy policy;
	const Var *v = distinct_table_column(q, a, &policy);
	return v && policy.unit.present() && v->varattno == policy.unit.attnum;
}

// count(DISTINCT col) on a declared column of the table q reads (one column, not a member of a
// column group, on a table without a privacy unit): the number of its declared values present,
// which dx.count_distinct answers (core/exponential_mechanism.h, count_distinct).
bool
counts_declared_values(Query *q, Aggref *a)
{
	if (a->aggorder)
		return false;
	TablePolicy policy;
	const Var *v = distinct_table_column(q, a, &policy);
	if (!v || policy.unit.present())
		return false;
	const ColumnPolicy *c = policy.find(v->varattno);
	return c && !c->is_group();
}

// Refusals of built-in aggregates that have no private counterpart, with what to write instead.
[[noreturn]] void
refuse_plain_aggregate(Query *q, Aggref *a, const char *name)
{
	const std::string table = table_for_hint(q), col = column_for_hint(q, first_arg(a));
	const std::string fn = std::string(name);
	const char *rel = OidIsValid(read_table(q)) ? get_rel_name(read_table(q)) : nullptr;
	const std::string quoted = std::string("\"") + (rel ? rel : "?") + "\"";
	if (fn == "min" || fn == "max")
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "aggregate " + fn + " cannot be used by analysts on protected table " + quoted,
		     "The " + std::string(fn == "min" ? "smallest" : "largest") +
		         " value is one row's value. A private estimate of a low or high value is a quantile: SELECT "
		         "dx.quantile(" + col + ", " + (fn == "min" ? "0.05" : "0.95") + ") FROM " + table +
		         " (or percentile_disc(" + (fn == "min" ? "0.05" : "0.95") + ") WITHIN GROUP (ORDER BY " + col +
		         ")); dx.mode(" + col + ") gives the most frequent value.");
	TablePolicy policy;
	if (a->aggdistinct && OidIsValid(read_table(q)) && load_table_policy(read_table(q), policy) && policy.unit.present()) {
		const std::string unit = quote_identifier(policy.unit.column.c_str());
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
		     fn + "(DISTINCT ...) cannot be used by analysts on protected table " + quoted + " except count(DISTINCT " +
		         unit + ")",
		     "count(DISTINCT " + unit + ") counts the table's privacy units (people); the number of distinct values "
		     "of anything else is not a sum over people. SELECT " + col + ", count(DISTINCT " + unit + ") FROM " +
		         table + " GROUP BY " + col + " counts the people of every declared value.");
	}
	if (a->aggdistinct)
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE,
		     fn + "(DISTINCT ...) cannot be used by analysts on protected table " + quoted +
		         (fn == "count" ? " except count(DISTINCT <declared column>)" : ""),
		     "count(DISTINCT <declared column>) counts the declared values present (with noise); the distinct "
		     "values of an expression or of an undeclared column have no sensitivity dxpriv can bound. SELECT " +
		         col + ", count(*) FROM " + table + " GROUP BY " + col +
		         " counts the rows of every declared value; dx.mode(" + col +
		         ") gives the most frequent value and dx.quantile(" + col + ", 0.5) the median.");
	fail(ERRCODE_INSUFFICIENT_PRIVILEGE, fn + " WITHIN GROUP with an array of levels cannot be used by analysts",
	     "Write one aggregate per level, e.g. SELECT percentile_disc(0.25) WITHIN GROUP (ORDER BY " + col +
	         "), percentile_disc(0.75) WITHIN GROUP (ORDER BY " + col + ") FROM " + table + ", or dx.quantile(" +
	         col + ", 0.25).");
}

// Whether the ORDER BY of an ordered-set aggregate sorts in descending order; raises for an
// ordering that is not the column type's default btree order (ORDER BY ... USING).
bool
sorts_descending(Aggref *a)
{
	if (list_length(a->aggorder) != 1)
		return false;
	SortGroupClause *s = linitial_node(SortGroupClause, a->aggorder);
	bool reverse = false;
	if (!OidIsValid(get_equality_op_for_ordering_op(s->sortop, &reverse)))
		fail(ERRCODE_FEATURE_NOT_SUPPORTED, "ORDER BY ... USING cannot be used in percentiles by analysts",
		     "Order by the column itself (ASC or DESC): percentile_disc(0.5) WITHIN GROUP (ORDER BY <column>).");
	return reverse;
}

// A marker aggregate with the given arguments, in place of the built-in a; cast back to a's type.
Node *
marker_call(Aggref *a, Oid marker, List *exprs, const ExtensionObjects &ext)
{
	Aggref *m = static_cast<Aggref *>(copyObjectImpl(a));
	m->aggfnoid = marker;
	m->aggkind = AGGKIND_NORMAL;
	m->aggdirectargs = NIL;
	m->aggorder = NIL;
	m->aggdistinct = NIL;
	m->aggvariadic = false;
	m->args = NIL;
	m->aggargtypes = NIL;
	ListCell *lc;
	foreach (lc, exprs) {
		Expr *e = (Expr *) lfirst(lc);
		m->args = lappend(m->args, makeTargetEntry(e, static_cast<AttrNumber>(list_length(m->args) + 1), nullptr, false));
		m->aggargtypes = lappend_oid(m->aggargtypes, exprType((Node *) e));
	}
	if (marker == ext.count_star || marker == ext.count_any || marker == ext.count_units || marker == ext.count_distinct)
		m->aggtype = INT8OID;
	else if (marker == ext.sum_any || marker == ext.avg_any)
		m->aggtype = FLOAT8OID;
	else // dx.mode, dx.quantile: the column's own type
		m->aggtype = exprType((Node *) linitial(exprs));
	m->aggstar = false; // as the marker rewrite of count(*) always had it
	if (marker == ext.mode_any || marker == ext.quantile_any)
		m->aggcollid = exprCollation((Node *) linitial(exprs));
	if (m->aggtype == a->aggtype)
		return (Node *) m;
	Node *cast = coerce_to_target_type(nullptr, (Node *) m, m->aggtype, a->aggtype, -1, COERCION_EXPLICIT,
	                                   COERCE_IMPLICIT_CAST, -1);
	if (!cast)
		fail(ERRCODE_DATATYPE_MISMATCH,
		     std::string("the answer of ") + pg_value([&] { return format_type_be(m->aggtype); }) +
		         " cannot be cast to " + pg_value([&] { return format_type_be(a->aggtype); }),
		     "Write dx.quantile(column, p) or dx.mode(column) directly.");
	return cast;
}

// The dx counterpart of a built-in aggregate at q's top level, or nullptr when it has none (the
// statement is then refused as before). Raises for built-ins with a known private alternative.
Node *
standard_spelling(Aggref *a, PlainAggRewrite &c)
{
	const ExtensionObjects &ext = *c.ext;
	if (get_func_namespace(a->aggfnoid) != PG_CATALOG_NAMESPACE || a->agglevelsup != 0)
		return nullptr;
	char *name = get_func_name(a->aggfnoid);
	if (!name)
		return nullptr;
	const std::string fn = name;
	auto args = [&] {
		List *out = NIL;
		ListCell *lc;
		foreach (lc, a->args)
			out = lappend(out, lfirst_node(TargetEntry, lc)->expr);
		return out;
	};
	if (a->aggkind == AGGKIND_ORDERED_SET) {
		// percentile_cont(p) / percentile_disc(p) / mode() WITHIN GROUP (ORDER BY col): the exponential
		// mechanism over the declared values of col (dx.quantile, dx.mode). dx.quantile answers a
		// declared point, so percentile_cont does not interpolate.
		if (list_length(a->args) != 1)
			return nullptr;
		Expr *col = (Expr *) strip_implicit_coercions((Node *) linitial_node(TargetEntry, a->args)->expr);
		if (!IsA(col, Var))
			fail(ERRCODE_FEATURE_NOT_SUPPORTED, fn + " WITHIN GROUP needs a declared column in ORDER BY, not an expression",
			     "It is answered by dx." + std::string(fn == "mode" ? "mode" : "quantile") +
			         ", whose answer is one of the column's declared values; transform the answer instead, e.g. "
			         "SELECT 2 * percentile_disc(0.5) WITHIN GROUP (ORDER BY <column>) FROM " + table_for_hint(c.q) + ".");
		if (fn == "mode" && a->aggdirectargs == NIL)
			return marker_call(a, ext.mode_any, list_make1(col), ext);
		if ((fn == "percentile_cont" || fn == "percentile_disc") && list_length(a->aggdirectargs) == 1) {
			Expr *p = (Expr *) linitial(a->aggdirectargs);
			if (exprType((Node *) p) != FLOAT8OID)
				refuse_plain_aggregate(c.q, a, name);
			if (sorts_descending(a)) {
				// the p-quantile in descending order is the (1 - p)-quantile in ascending order
				const Const *folded = folded_const((Node *) p);
				if (!folded || folded->constisnull)
					fail(ERRCODE_FEATURE_NOT_SUPPORTED, fn + " with ORDER BY ... DESC needs a constant level",
					     "Write the ascending level instead: " + fn + "(1 - p) WITHIN GROUP (ORDER BY " +
					         column_for_hint(c.q, (Node *) col) + ").");
				p = (Expr *) float8_const(1.0 - DatumGetFloat8(folded->constvalue));
			}
			return marker_call(a, ext.quantile_any, list_make2(col, p), ext);
		}
		return nullptr;
	}
	if (a->aggkind != AGGKIND_NORMAL)
		return nullptr;
	const bool reads_table = OidIsValid(read_table(c.q));
	if ((fn == "min" || fn == "max") && reads_table)
		refuse_plain_aggregate(c.q, a, name);
	if (Node *d = dispersion_spelling(a, fn, c.q, ext)) // stddev, variance, corr, regr_* (dispersion_spelling.h)
		return d;
	if (fn != "count" && fn != "sum" && fn != "avg")
		return nullptr;
	if (fn == "count" && reads_table && counts_units(c.q, a))
		return marker_call(a, ext.count_units, args(), ext);
	if (fn == "count" && reads_table && counts_declared_values(c.q, a))
		return marker_call(a, ext.count_distinct, list_make1(strip_implicit_coercions(first_arg(a))), ext);
	if (a->aggdistinct && reads_table)
		refuse_plain_aggregate(c.q, a, name);
	if ((fn == "count" && (a->aggstar || counts_every_row(c.q, a))) || counts_rows_by_constant(a, fn))
		return marker_call(a, ext.count_star, NIL, ext);
	return marker_call(a, fn == "count" ? ext.count_any : fn == "sum" ? ext.sum_any : ext.avg_any, args(), ext);
}

// Mutator behind rewrite_plain_aggregates.
Node *
plain_agg_mutator(Node *node, void *ctx)
{
	if (!node)
		return nullptr;
	auto *c = static_cast<PlainAggRewrite *>(ctx);
	if (IsA(node, Aggref)) {
		Node *m = standard_spelling(castNode(Aggref, node), *c);
		if (!m)
			return node;
		c->rewritten++;
		return m;
	}
	return expression_tree_mutator(node, reinterpret_cast<Node *(*) ()>(plain_agg_mutator), ctx);
}

} // namespace

// See analyst_guard.h.
int
rewrite_plain_aggregates(Query *q, const ExtensionObjects &ext)
{
	PlainAggRewrite c{&ext, q};
	q->targetList = (List *) plain_agg_mutator((Node *) q->targetList, &c);
	q->havingQual = plain_agg_mutator(q->havingQual, &c);
	return c.rewritten;
}

} // namespace dxpriv::pg
