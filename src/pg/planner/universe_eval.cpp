// Evaluates expressions at every point of a sub-universe with the executor's expression engine.
#include "pg/planner/universe_eval.h"

#include "pg/guard.h"
#include "pg/settings.h"
#include "pg/metadata/policy.h"
#include "pg/metadata/policy_domain.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>

extern "C" {
#include "access/relation.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/rel.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
}

namespace dxpriv::pg {

// See universe_eval.h.
void
check_sub_universe_size(const std::vector<const ColumnPolicy *> &cols)
{
	double points = 1;
	std::string factors;
	const ColumnPolicy *largest = nullptr;
	for (const ColumnPolicy *c : cols) {
		points *= static_cast<double>(c->domain.size());
		factors += (factors.empty() ? "" : " x ") + c->name + " (" + std::to_string(c->domain.size()) + " values)";
		if (!largest || c->domain.size() > largest->domain.size())
			largest = c;
	}
	if (points <= static_cast<double>(kMaxSubUniverse))
		return;
	fail(ERRCODE_PROGRAM_LIMIT_EXCEEDED,
	     "the query references " + factors + ", " + std::to_string(static_cast<long long>(points)) +
	         " combinations of declared values; at most " + std::to_string(kMaxSubUniverse) + " are analysed",
	     "dxpriv evaluates the query on every combination of the referenced columns' declared values. Reference "
	     "fewer columns (split the query, e.g. one query per value of a WHERE condition), or ask the table owner "
	     "for a coarser domain of \"" + largest->name + "\".");
}

// See universe_eval.h.
SubUniverse
sub_universe_of(const TablePolicy &policy, const std::set<AttrNumber> &attnos, std::vector<const ColumnPolicy *> &cols)
{
	SubUniverse sub;
	sub.presence = policy.presence;
	cols.clear();
	for (AttrNumber att : attnos) {
		const ColumnPolicy *c = policy.find(att);
		if (!c || std::find(cols.begin(), cols.end(), c) != cols.end())
			continue;
		cols.push_back(c);
		sub.domains.push_back(c->domain);
		sub.metrics.push_back(c->metric);
	}
	check_sub_universe_size(cols);
	return sub;
}

namespace {

// The work cap of the analysis (dxpriv.analysis_time_limit, dxpriv.analysis_memory_limit): raised
// after each evaluation at a point (pair) once the pass over the points that began at `start` has
// taken its time, or when one point's evaluation holds more memory than allowed (intermediate
// values included: the per-point context keeps them until the next point). Honours cancels and
// statement_timeout. Runs inside pg_call: raises with ereport.
void
check_work(MemoryContext per_point, TimestampTz start)
{
	CHECK_FOR_INTERRUPTS();
	const Size used = MemoryContextMemAllocated(per_point, true);
	if (used > static_cast<Size>(guc_analysis_memory_limit) * 1024)
		ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
		                errmsg("evaluating the query at one declared domain point needs more than %d kB",
		                       guc_analysis_memory_limit),
		                errhint("dxpriv evaluates every expression on each declared domain value before reading any row; "
		                        "an expression building long values (repeat, lpad, array_fill) exceeds "
		                        "dxpriv.analysis_memory_limit. Shorten the expression.")));
	const TimestampTz now = GetCurrentTimestamp();
	if (now - start > static_cast<int64>(guc_analysis_time_limit) * 1000)
		ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
		                errmsg("evaluating the query on the declared domain points takes longer than %d ms",
		                       guc_analysis_time_limit),
		                errhint("dxpriv evaluates every expression on each declared domain value before reading any row "
		                        "and stops at dxpriv.analysis_time_limit; simplify the expressions or reference "
		                        "columns with fewer declared values.")));
}

// Evaluates exprs at every point, calling on_value(e, flat, value, isnull) for each (the value
// lives in a per-point context: copy what must outlive the call). Errors name the failing point.
template <class OnValue, class OnPair>
void
for_each_point_value(Oid relid, const std::vector<const ColumnPolicy *> &cols, const SubUniverse &sub,
                     const std::vector<Expr *> &exprs, OnValue &&on_value, const PublicRows *inner, OnPair &&on_pair)
{
	const size_t n = sub.size();
	std::vector<std::vector<std::vector<Datum>>> points; // column -> member -> point
	for (const ColumnPolicy *c : cols) {
		points.emplace_back();
		for (size_t m = 0; m < c->members.size(); ++m)
			points.back().push_back(member_datums(*c, m));
	}
	std::vector<size_t> idx(cols.size(), 0);
	const TimestampTz started = GetCurrentTimestamp();
	// outside the guarded lambda: an error at a point longjmps out of it, over what it declares
	std::vector<ExprState *> states, on_states;
	std::function<void(size_t)> descend;
	try {
	pg_call([&] {
		Relation rel = relation_open(relid, AccessShareLock);
		TupleDesc td = RelationGetDescr(rel);
		EState *estate = CreateExecutorState();
		ParamExecData *params = nullptr;
		if (inner && inner->params > 0) {
			params = static_cast<ParamExecData *>(palloc0(sizeof(ParamExecData) * inner->params));
			estate->es_param_exec_vals = params;
		}
		ExprContext *econtext = GetPerTupleExprContext(estate);
		TupleTableSlot *slot = MakeSingleTupleTableSlot(td, &TTSOpsVirtual);
		states.assign(exprs.size(), nullptr);
		for (size_t e = 0; e < exprs.size(); ++e)
			if (exprs[e])
				states[e] = ExecPrepareExpr(exprs[e], estate);
		for (size_t s = 0; inner && s < inner->steps.size(); ++s)
			on_states.push_back(inner->steps[s].on ? ExecPrepareExpr(inner->steps[s].on, estate) : nullptr);
		size_t flat = 0;
		// the public tables from `step` on, for the combination of earlier rows in params
		descend = [&](size_t step) {
			if (!inner || step == inner->steps.size()) {
				ResetExprContext(econtext);
				for (size_t e = 0; e < states.size(); ++e) {
					if (!states[e])
						continue;
					bool isnull = false;
					Datum r = ExecEvalExprSwitchContext(states[e], econtext, &isnull);
					check_work(econtext->ecxt_per_tuple_memory, started);
					on_value(e, flat, r, isnull);
				}
				on_pair(flat);
				return;
			}
			const PublicStep &ps = inner->steps[step];
			auto bind = [&](const std::vector<Datum> *row, const std::vector<char> *nul) {
				for (size_t k = 0; k < ps.params.size(); ++k) {
					ParamExecData &p = params[ps.params[k]];
					p.execPlan = nullptr;
					p.value = row ? (*row)[k] : (Datum) 0;
					p.isnull = row ? (*nul)[k] : true;
				}
			};
			bool matched = false;
			for (size_t r = 0; r < ps.values.size(); ++r) {
				bind(&ps.values[r], &ps.nulls[r]);
				if (on_states[step]) {
					bool isnull = false;
					const Datum ok = ExecEvalExprSwitchContext(on_states[step], econtext, &isnull);
					check_work(econtext->ecxt_per_tuple_memory, started);
					if (isnull || !DatumGetBool(ok))
						continue;
				}
				matched = true;
				descend(step + 1);
			}
			if (ps.left && !matched) {
				bind(nullptr, nullptr);
				descend(step + 1);
			}
		};
		for (flat = 0; flat < n; ++flat) {
			CHECK_FOR_INTERRUPTS(); // up to 2000000 points, each expression up to 10000 characters
			ExecClearTuple(slot);
			for (int a = 0; a < td->natts; ++a)
				slot->tts_isnull[a] = true;
			for (size_t c = 0; c < cols.size(); ++c)
				for (size_t m = 0; m < cols[c]->members.size(); ++m) {
					const AttrNumber att = cols[c]->members[m].attnum;
					slot->tts_values[att - 1] = points[c][m][idx[c]];
					slot->tts_isnull[att - 1] = false;
				}
			ExecStoreVirtualTuple(slot);
			econtext->ecxt_scantuple = slot;
			descend(0);
			for (size_t c = cols.size(); c-- > 0;) { // odometer, last column fastest
				if (++idx[c] < sub.domains[c].size())
					break;
				idx[c] = 0;
			}
		}
		ExecDropSingleTupleTableSlot(slot);
		FreeExecutorState(estate);
		relation_close(rel, AccessShareLock);
	});
	} catch (PgError &e) {
		// The failing point is a declared domain value, not data: say so, and where.
		if (e.edata && !e.edata->hint && e.edata->sqlerrcode != ERRCODE_QUERY_CANCELED) {
			std::string where;
			for (size_t c = 0; c < cols.size(); ++c)
				where += (c ? ", " : "") + cols[c]->name + " = " + cols[c]->domain.label(idx[c]);
			std::string hint = "dxpriv evaluates the query on every declared domain value before reading any row, "
			                   "and it fails at " + where + " whatever the data; change the expression or the domain.";
			e.edata->hint = MemoryContextStrdup(ErrorContext, hint.c_str());
		}
		throw;
	}
}

// Per expression: true when it is boolean (read as 1 or 0 by point_value; the others are float8).
std::vector<bool>
boolean_expressions(const std::vector<Expr *> &exprs)
{
	std::vector<bool> is_bool(exprs.size(), false);
	for (size_t e = 0; e < exprs.size(); ++e)
		is_bool[e] = exprs[e] && exprType((Node *) exprs[e]) == BOOLOID;
	return is_bool;
}

// An expression's value at a point as a double (0 when NULL).
double
point_value(Datum r, bool isnull, bool is_bool)
{
	return isnull ? 0.0 : is_bool ? (DatumGetBool(r) ? 1.0 : 0.0) : DatumGetFloat8(r);
}


// ---- direct evaluation: expressions the point values answer without the executor ----
// float8(<integer column>), comparisons of an integer column with a constant of its type, and
// AND / OR / NOT of those: exactly what the executor computes (integer to float8 conversion is
// exact below 2^53, comparisons are exact, and a declared point is never NULL), without an
// executor call per point.
struct DirectNode {
	enum Kind { Float8Of, Compare, And, Or, Not } kind = Float8Of;
	size_t col = 0;      // column (Float8Of, Compare)
	int op = 0;          // Compare: -2 <, -1 <=, 0 =, 1 >=, 2 >, 3 <>
	int64 constant = 0;  // Compare: the constant, on the right of the column
	std::vector<std::unique_ptr<DirectNode>> args;
	double eval(const int64 *v) const
	{
		switch (kind) {
		case Float8Of:
			return static_cast<double>(v[col]);
		case Compare: {
			const int64 a = v[col];
			bool r = false;
			switch (op) {
			case -2: r = a < constant; break;
			case -1: r = a <= constant; break;
			case 0: r = a == constant; break;
			case 1: r = a >= constant; break;
			case 2: r = a > constant; break;
			default: r = a != constant; break;
			}
			return r ? 1.0 : 0.0;
		}
		case And:
			for (const auto &x : args)
				if (x->eval(v) == 0.0)
					return 0.0;
			return 1.0;
		case Or:
			for (const auto &x : args)
				if (x->eval(v) != 0.0)
					return 1.0;
			return 0.0;
		default:
			return args[0]->eval(v) == 0.0 ? 1.0 : 0.0;
		}
	}
};

// The column (index into cols) a Var of an integer type reads, or -1.
long
direct_column(Node *n, const std::vector<const ColumnPolicy *> &cols)
{
	if (!n || !IsA(n, Var))
		return -1;
	const Var *v = castNode(Var, n);
	if (v->varno != 1 || v->varlevelsup != 0 || (v->vartype != INT2OID && v->vartype != INT4OID && v->vartype != INT8OID))
		return -1;
	for (size_t c = 0; c < cols.size(); ++c)
		if (!cols[c]->is_group() && cols[c]->members[0].attnum == v->varattno && cols[c]->members[0].type == v->vartype)
			return static_cast<long>(c);
	return -1;
}

// Comparison code of an integer comparison function of one type (-9: none), and that type.
int
comparison_of(Oid f, Oid &type)
{
	struct Entry {
		Oid f;
		Oid type;
		int op;
	};
	static const Entry table[] = {
	    {F_INT4LT, INT4OID, -2}, {F_INT4LE, INT4OID, -1}, {F_INT4EQ, INT4OID, 0}, {F_INT4GE, INT4OID, 1},
	    {F_INT4GT, INT4OID, 2},  {F_INT4NE, INT4OID, 3},  {F_INT8LT, INT8OID, -2}, {F_INT8LE, INT8OID, -1},
	    {F_INT8EQ, INT8OID, 0},  {F_INT8GE, INT8OID, 1},  {F_INT8GT, INT8OID, 2},  {F_INT8NE, INT8OID, 3},
	    {F_INT2LT, INT2OID, -2}, {F_INT2LE, INT2OID, -1}, {F_INT2EQ, INT2OID, 0},  {F_INT2GE, INT2OID, 1},
	    {F_INT2GT, INT2OID, 2},  {F_INT2NE, INT2OID, 3},
	};
	for (const Entry &e : table)
		if (e.f == f) {
			type = e.type;
			return e.op;
		}
	return -9;
}

int64
integer_datum(Datum d, Oid type)
{
	return type == INT2OID ? DatumGetInt16(d) : type == INT4OID ? DatumGetInt32(d) : DatumGetInt64(d);
}

// The direct form of an expression, or nullptr when the executor must evaluate it.
std::unique_ptr<DirectNode>
compile_direct(Node *n, const std::vector<const ColumnPolicy *> &cols)
{
	if (!n)
		return nullptr;
	auto node = std::make_unique<DirectNode>();
	if (IsA(n, FuncExpr)) {
		const FuncExpr *f = castNode(FuncExpr, n);
		if ((f->funcid != F_FLOAT8_INT2 && f->funcid != F_FLOAT8_INT4 && f->funcid != F_FLOAT8_INT8) ||
		    list_length(f->args) != 1)
			return nullptr;
		const long c = direct_column((Node *) linitial(f->args), cols);
		if (c < 0)
			return nullptr;
		node->kind = DirectNode::Float8Of;
		node->col = static_cast<size_t>(c);
		return node;
	}
	if (IsA(n, OpExpr)) {
		const OpExpr *o = castNode(OpExpr, n);
		Oid type = InvalidOid;
		int op = comparison_of(o->opfuncid, type);
		if (op == -9 || list_length(o->args) != 2)
			return nullptr;
		Node *l = (Node *) linitial(o->args), *r = (Node *) lsecond(o->args);
		if (IsA(l, Const)) { // constant on the left: mirror the comparison
			std::swap(l, r);
			op = op == 3 ? 3 : -op;
		}
		const long c = direct_column(l, cols);
		if (c < 0 || !IsA(r, Const) || castNode(Const, r)->constisnull || castNode(Const, r)->consttype != type ||
		    castNode(Var, l)->vartype != type)
			return nullptr;
		node->kind = DirectNode::Compare;
		node->col = static_cast<size_t>(c);
		node->op = op;
		node->constant = integer_datum(castNode(Const, r)->constvalue, type);
		return node;
	}
	if (IsA(n, BoolExpr)) {
		const BoolExpr *b = castNode(BoolExpr, n);
		node->kind = b->boolop == AND_EXPR ? DirectNode::And : b->boolop == OR_EXPR ? DirectNode::Or : DirectNode::Not;
		ListCell *lc;
		foreach (lc, b->args) {
			auto a = compile_direct((Node *) lfirst(lc), cols);
			if (!a || a->kind == DirectNode::Float8Of)
				return nullptr;
			node->args.push_back(std::move(a));
		}
		if (node->args.empty() || (node->kind == DirectNode::Not && node->args.size() != 1))
			return nullptr;
		return node;
	}
	return nullptr;
}

// Evaluates exprs directly (see DirectNode) when every one of them allows it; false otherwise.
bool
evaluate_directly(const std::vector<const ColumnPolicy *> &cols, const SubUniverse &sub,
                  const std::vector<Expr *> &exprs, UniverseValues &out)
{
	std::vector<std::unique_ptr<DirectNode>> programs(exprs.size());
	for (size_t e = 0; e < exprs.size(); ++e)
		if (exprs[e] && !(programs[e] = compile_direct((Node *) exprs[e], cols)))
			return false;
	for (size_t c = 0; c < cols.size(); ++c) // only integer columns can be read directly
		if (cols[c]->is_group() || (cols[c]->members[0].type != INT2OID && cols[c]->members[0].type != INT4OID &&
		                            cols[c]->members[0].type != INT8OID))
			for (const auto &p : programs)
				if (p)
					return false;
	// the points' values, as member_datums gives them (a range's ordinal rounded to the type)
	std::vector<std::vector<int64>> values(cols.size());
	for (size_t c = 0; c < cols.size(); ++c) {
		const Oid type = cols[c]->members[0].type;
		const Domain &dom = cols[c]->domain;
		values[c].resize(dom.size());
		if (dom.kind() == DomainKind::Range) {
			for (size_t i = 0; i < dom.size(); ++i) {
				const long long r = std::llround(dom.ordinal(i));
				values[c][i] = type == INT2OID ? static_cast<int16>(r) : type == INT4OID ? static_cast<int32>(r) : r;
			}
			continue;
		}
		std::vector<Datum> datums;
		pg_call([&] { datums = member_datums(*cols[c], 0); });
		for (size_t i = 0; i < datums.size(); ++i)
			values[c][i] = integer_datum(datums[i], type);
	}
	const size_t n = sub.size();
	std::vector<size_t> idx(cols.size(), 0);
	std::vector<int64> v(cols.size(), 0);
	for (size_t flat = 0; flat < n; ++flat) {
		if ((flat & 65535) == 0)
			pg_call([] { CHECK_FOR_INTERRUPTS(); });
		for (size_t c = 0; c < cols.size(); ++c)
			v[c] = values[c][idx[c]];
		for (size_t e = 0; e < exprs.size(); ++e)
			if (programs[e])
				out.value[e][flat] = programs[e]->eval(v.data());
		for (size_t c = cols.size(); c-- > 0;) { // odometer, last column fastest
			if (++idx[c] < sub.domains[c].size())
				break;
			idx[c] = 0;
		}
	}
	return true;
}

} // namespace

// See universe_eval.h.
UniverseValues
evaluate_over_universe(Oid relid, const std::vector<const ColumnPolicy *> &cols, const SubUniverse &sub,
                       const std::vector<Expr *> &exprs)
{
	const size_t n = sub.size();
	UniverseValues out;
	out.value.assign(exprs.size(), std::vector<double>(n, 1.0));
	out.is_null.assign(exprs.size(), std::vector<char>(n, 0));
	if (evaluate_directly(cols, sub, exprs, out))
		return out;
	const std::vector<bool> is_bool = boolean_expressions(exprs);
	for_each_point_value(relid, cols, sub, exprs, [&](size_t e, size_t flat, Datum r, bool isnull) {
		out.is_null[e][flat] = isnull;
		out.value[e][flat] = point_value(r, isnull, is_bool[e]);
	}, nullptr, [](size_t) {});
	return out;
}

// See universe_eval.h.
double
PublicRows::combinations() const
{
	double c = 1;
	for (const PublicStep &s : steps)
		c *= static_cast<double>(s.left ? std::max<size_t>(s.values.size(), 1) : s.values.size());
	return c;
}

// See universe_eval.h.
void
evaluate_pairs_over_universe(Oid relid, const std::vector<const ColumnPolicy *> &cols, const SubUniverse &sub,
                             const std::vector<Expr *> &exprs, const std::vector<Expr *> &keys,
                             const PublicRows &inner, const PairCallback &on_pair)
{
	const std::vector<bool> is_bool = boolean_expressions(exprs);
	std::vector<Expr *> all = exprs;
	all.insert(all.end(), keys.begin(), keys.end());
	std::vector<double> v(exprs.size(), 1.0);
	std::vector<char> nul(exprs.size(), 0);
	std::vector<Datum> key(keys.size(), (Datum) 0);
	std::vector<char> key_null(keys.size(), 1);
	for_each_point_value(relid, cols, sub, all, [&](size_t e, size_t, Datum r, bool isnull) {
		if (e >= exprs.size()) {
			key[e - exprs.size()] = isnull ? (Datum) 0 : r;
			key_null[e - exprs.size()] = isnull;
			return;
		}
		nul[e] = isnull;
		v[e] = point_value(r, isnull, is_bool[e]);
	}, &inner, [&](size_t flat) {
		on_pair(flat, v, nul, key, key_null);
		std::fill(v.begin(), v.end(), 1.0);
		std::fill(nul.begin(), nul.end(), 0);
	});
}

// See universe_eval.h.
UniverseDatums
evaluate_datums_over_universe(Oid relid, const std::vector<const ColumnPolicy *> &cols, const SubUniverse &sub,
                              const std::vector<Expr *> &exprs)
{
	const size_t n = sub.size();
	UniverseDatums out;
	out.value.assign(exprs.size(), std::vector<Datum>(n, (Datum) 0));
	out.is_null.assign(exprs.size(), std::vector<char>(n, 1));
	std::vector<int16> typlen(exprs.size());
	std::vector<bool> typbyval(exprs.size());
	for (size_t e = 0; e < exprs.size(); ++e) {
		bool byval = true;
		get_typlenbyval(exprType((Node *) exprs[e]), &typlen[e], &byval);
		typbyval[e] = byval;
	}
	MemoryContext outer = CurrentMemoryContext;
	for_each_point_value(relid, cols, sub, exprs, [&](size_t e, size_t flat, Datum r, bool isnull) {
		out.is_null[e][flat] = isnull;
		if (!isnull) {
			MemoryContext old = MemoryContextSwitchTo(outer);
			out.value[e][flat] = datumCopy(r, typbyval[e], typlen[e]);
			MemoryContextSwitchTo(old);
		}
	}, nullptr, [](size_t) {});
	return out;
}

} // namespace dxpriv::pg
