// Closed-form analysis of one-column releases: recognises the shape and states its cells and
// per-point tables by pieces (planner/line_release.h, core/line_form.h).
#include "pg/planner/line_release.h"

#include "pg/guard.h"
#include "pg/node_build.h"
#include "pg/planner/point_lookup.h"
#include "pg/settings.h"

#include "core/line_form.h"
#include "core/point_table.h"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "utils/fmgroids.h"
}

#include <algorithm>
#include <cmath>

namespace dxpriv::pg::analysis {

namespace {

using Int = __int128;

// An integer comparison function: its operand types and its comparison (-2 <, -1 <=, 0 =, 1 >=,
// 2 >); <> is not a range and is not listed.
struct Comparison {
	Oid f;
	Oid left, right;
	int op;
};

#define DX_CMP(P, A, B)                                                                                              \
	{F_INT##P##LT, A, B, -2}, {F_INT##P##LE, A, B, -1}, {F_INT##P##EQ, A, B, 0}, {F_INT##P##GE, A, B, 1},            \
	{                                                                                                                \
		F_INT##P##GT, A, B, 2                                                                                        \
	}

const Comparison kComparisons[] = {
    DX_CMP(2, INT2OID, INT2OID),  DX_CMP(4, INT4OID, INT4OID),  DX_CMP(8, INT8OID, INT8OID),
    DX_CMP(24, INT2OID, INT4OID), DX_CMP(28, INT2OID, INT8OID), DX_CMP(42, INT4OID, INT2OID),
    DX_CMP(48, INT4OID, INT8OID), DX_CMP(82, INT8OID, INT2OID), DX_CMP(84, INT8OID, INT4OID),
};
#undef DX_CMP

const Comparison *
line_comparison_of(Oid f)
{
	for (const Comparison &c : kComparisons)
		if (c.f == f)
			return &c;
	return nullptr;
}

bool
integer_type(Oid t)
{
	return t == INT2OID || t == INT4OID || t == INT8OID;
}

int64
line_integer_value(Datum d, Oid type)
{
	return type == INT2OID ? DatumGetInt16(d) : type == INT4OID ? DatumGetInt32(d) : DatumGetInt64(d);
}

// The line: one column, its values lo + u * step (exact integers), u in [0, n).
struct Line {
	const ColumnPolicy *col;
	Int lo, step, n;

	// Whether n is the column itself (a plain Var of its type).
	bool is_column(Node *n) const
	{
		if (!n || !IsA(n, Var))
			return false;
		const Var *v = castNode(Var, n);
		return v->varno == 1 && v->varlevelsup == 0 && v->varattno == col->members[0].attnum &&
		       v->vartype == col->members[0].type;
	}
};

Int
floor_div(Int a, Int b) // b > 0
{
	Int q = a / b;
	if (a % b != 0 && a < 0)
		--q;
	return q;
}

Int
ceil_div(Int a, Int b) // b > 0
{
	return -floor_div(-a, b);
}

// Narrows [first, last] to the points where `value op c` holds.
void
narrow(const Line &line, int op, int64 c, Int &first, Int &last)
{
	const Int d = static_cast<Int>(c) - line.lo; // value op c  <=>  u * step op d
	Int lo = 0, hi = line.n - 1;
	switch (op) {
	case -2: hi = ceil_div(d, line.step) - 1; break;
	case -1: hi = floor_div(d, line.step); break;
	case 2: lo = floor_div(d, line.step) + 1; break;
	case 1: lo = ceil_div(d, line.step); break;
	default:
		if (floor_div(d, line.step) * line.step != d) {
			lo = 1;
			hi = 0;
		} else {
			lo = hi = d / line.step;
		}
	}
	first = std::max(first, lo);
	last = std::min(last, hi);
}

// Narrows [first, last] to where condition n holds: an AND of comparisons of the column with an
// integer constant. False when n has another form.
bool
condition(Node *n, const Line &line, Int &first, Int &last)
{
	if (!n)
		return true;
	if (IsA(n, BoolExpr)) {
		const BoolExpr *b = castNode(BoolExpr, n);
		if (b->boolop != AND_EXPR)
			return false;
		ListCell *lc;
		foreach (lc, b->args)
			if (!condition((Node *) lfirst(lc), line, first, last))
				return false;
		return true;
	}
	if (IsA(n, List)) { // an implicit AND
		ListCell *lc;
		foreach (lc, castNode(List, n))
			if (!condition((Node *) lfirst(lc), line, first, last))
				return false;
		return true;
	}
	if (!IsA(n, OpExpr))
		return false;
	const OpExpr *o = castNode(OpExpr, n);
	const Comparison *cmp = line_comparison_of(o->opfuncid);
	if (!cmp || list_length(o->args) != 2)
		return false;
	Node *l = (Node *) linitial(o->args), *r = (Node *) lsecond(o->args);
	int op = cmp->op;
	Oid const_type = cmp->right;
	if (IsA(l, Const)) { // constant on the left: mirror the comparison
		std::swap(l, r);
		op = -op;
		const_type = cmp->left;
	}
	if (!line.is_column(l) || !IsA(r, Const))
		return false;
	const Const *k = castNode(Const, r);
	if (k->constisnull || k->consttype != const_type || !integer_type(const_type))
		return false;
	narrow(line, op, line_integer_value(k->constvalue, const_type), first, last);
	return true;
}

// The weight of an aggregate: 1 (count(*): nullptr) or the column's value (float8(column)).
// False for anything else.
bool
weight_form(Expr *w, const Line &line, double &a, double &b)
{
	if (!w) {
		a = 1;
		b = 0;
		return true;
	}
	if (!IsA(w, FuncExpr))
		return false;
	const FuncExpr *f = castNode(FuncExpr, w);
	if ((f->funcid != F_FLOAT8_INT2 && f->funcid != F_FLOAT8_INT4 && f->funcid != F_FLOAT8_INT8) ||
	    list_length(f->args) != 1 || !line.is_column((Node *) linitial(f->args)))
		return false;
	a = 0;
	b = 1;
	return true;
}

// Whether the table of piece values is the same at every point (drop_constant_dimensions drops
// the column): every piece absent, or every piece present with one constant value.
bool
constant_table(const LineTable &t, const Domain &dom, std::optional<double> &value)
{
	const std::size_t pieces = t.present.size();
	bool all_absent = true, all_present = true;
	for (std::size_t p = 0; p < pieces; p++) {
		all_absent = all_absent && !t.present[p];
		all_present = all_present && t.present[p];
	}
	if (all_absent) {
		value.reset();
		return true;
	}
	if (!all_present)
		return false;
	const double first = t.a[0] + t.b[0] * dom.ordinal(0);
	for (std::size_t p = 0; p < pieces; p++)
		if (t.a[p] + t.b[p] * dom.ordinal(t.start[p]) != first ||
		    t.a[p] + t.b[p] * dom.ordinal(t.start[p + 1] - 1) != first)
			return false;
	value = first;
	return true;
}

} // namespace

// See planner/line_release.h.
bool
analyse_line_release(ReleaseAnalysis &a, const std::vector<Expr *> &exprs, bool grouping_set)
{
	if (guc_exhaustive_analysis || a.open || a.join || a.keys.grouped() || a.policy.unit.present() || !a.em.specs.empty() ||
	    grouping_set || a.specs.empty() || a.cols.size() != 1 || a.cols[0]->is_group() ||
	    exprs.size() != 1 + 2 * a.specs.size())
		return false;
	const ColumnPolicy *col = a.cols[0];
	const Oid type = col->members[0].type;
	const Domain &dom = col->domain;
	if (!integer_type(type) || a.sub.domains.size() != 1 || dom.kind() != DomainKind::Range)
		return false;
	// the values the executor gives the points (llround of the ordinal, in the column's type) are
	// the ordinals themselves: integers inside the type's range
	const double type_max = type == INT2OID ? 32767.0 : type == INT4OID ? 2147483647.0 : 9.2e18;
	const double hi_value = dom.lo() + static_cast<double>(dom.size() - 1) * dom.step();
	if (!(std::fabs(dom.lo()) <= type_max && std::fabs(hi_value) <= type_max))
		return false;
	LineCells cells;
	cells.cells = static_cast<size_t>(a.cells_per_group);
	cells.start = {0, dom.size()};
	cells.a.assign(cells.cells, 0.0);
	cells.b.assign(cells.cells, 0.0);
	if (!line_cells_exact(a.sub, cells)) // the domain and metric (the coefficients come below)
		return false;
	const Line line{col, static_cast<Int>(dom.lo()), static_cast<Int>(dom.step()), static_cast<Int>(dom.size())};
	Int where_first = 0, where_last = line.n - 1;
	if (!condition((Node *) exprs[0], line, where_first, where_last))
		return false;
	struct Agg {
		Int first, last; // points that pass WHERE and FILTER
		double wa, wb;   // weight a + b * value
	};
	std::vector<Agg> aggs;
	for (size_t j = 0; j < a.specs.size(); ++j) {
		const AggSpec &s = a.specs[j];
		if (s.kind == AggKind::CountUnits || s.part || (s.kind == AggKind::Count && s.weight))
			return false;
		Agg g{where_first, where_last, 0, 0};
		if (!condition((Node *) exprs[1 + 2 * j], line, g.first, g.last) ||
		    !weight_form(exprs[2 + 2 * j], line, g.wa, g.wb))
			return false;
		aggs.push_back(g);
	}
	// the pieces: cut where some aggregate's range begins or ends
	std::vector<size_t> cuts{0, dom.size()};
	for (const Agg &g : aggs)
		if (g.first <= g.last) {
			cuts.push_back(static_cast<size_t>(g.first));
			cuts.push_back(static_cast<size_t>(g.last + 1));
		}
	std::sort(cuts.begin(), cuts.end());
	cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
	cells.start = cuts;
	const size_t pieces = cuts.size() - 1, m = cells.cells;
	cells.a.assign(pieces * m, 0.0);
	cells.b.assign(pieces * m, 0.0);
	a.line_tables.assign(a.specs.size(), LineTable{});
	for (size_t j = 0; j < aggs.size(); ++j) {
		LineTable &t = a.line_tables[j];
		t.start = cuts;
		for (size_t p = 0; p < pieces; ++p) {
			const bool in = static_cast<Int>(cuts[p]) >= aggs[j].first && static_cast<Int>(cuts[p]) <= aggs[j].last;
			t.present.push_back(in);
			t.a.push_back(in ? aggs[j].wa : 0.0);
			t.b.push_back(in ? aggs[j].wb : 0.0);
			if (!in)
				continue;
			const size_t k = static_cast<size_t>(a.specs[j].first_cell);
			cells.a[p * m + k] = aggs[j].wa;
			cells.b[p * m + k] = aggs[j].wb;
			if (a.specs[j].components == 2)
				cells.a[p * m + k + 1] = 1; // an average's count
		}
		if (!line_table_exact(dom, t))
			return false;
	}
	if (!line_cells_exact(a.sub, cells))
		return false;
	// the weights' range over every point, WHERE aside (as the per-point path computes it)
	a.lo.assign(a.specs.size(), 0);
	a.hi.assign(a.specs.size(), 0);
	for (size_t j = 0; j < aggs.size(); ++j) {
		const double w0 = aggs[j].wa + aggs[j].wb * dom.ordinal(0);
		const double w1 = aggs[j].wa + aggs[j].wb * dom.ordinal(dom.size() - 1);
		a.lo[j] = std::min(w0, w1);
		a.hi[j] = std::max(w0, w1);
	}
	a.line_cells = std::move(cells);
	a.line = true;
	a.q_cells.assign(m, {});
	a.tables.assign(a.specs.size(), {});
	a.count_tables.assign(a.specs.size(), {});
	a.where_table.clear();
	a.group_of_point.clear();
	return true;
}

// See planner/line_release.h.
std::vector<std::vector<double>>
line_dense_cells(const ReleaseAnalysis &a)
{
	return a.line_cells.dense(a.sub.domains[0]);
}

// See planner/line_release.h.
Expr *
line_weigh_expr(const ReleaseAnalysis &a, size_t j, const ExtensionObjects &ext)
{
	const Domain &dom = a.cols[0]->domain;
	std::optional<double> value;
	if (constant_table(a.line_tables[j], dom, value))
		return weigh_expr({}, {value}, false, ext);
	return weigh_expr_bytes(a.cols, encode_line_table(dom, a.line_tables[j]), false, ext);
}

// See planner/line_release.h.
Const *
line_one_pass_table(const ReleaseAnalysis &a, size_t j, std::vector<size_t> &kept, std::vector<size_t> &dims)
{
	const Domain &dom = a.cols[0]->domain;
	std::optional<double> value;
	if (constant_table(a.line_tables[j], dom, value)) {
		kept.clear();
		dims.clear();
		return point_table_constant({value}, dims);
	}
	kept = {0};
	dims = {dom.size()};
	return bytes_constant(encode_line_table(dom, a.line_tables[j]));
}

} // namespace dxpriv::pg::analysis
