// Per-point, per-group sums of a join with public tables, evaluated at analysis (join_cells.h).
#include "pg/planner/join_cells.h"

#include "pg/guard.h"
#include "pg/metadata/policy.h"

extern "C" {
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"
}

#include <algorithm>
#include <map>
#include <string>

namespace dxpriv::pg {

namespace {

// Distinct key tuples of the pairs, ordered by each key type's btree comparison (NULL first).
class TupleSet {
public:
	explicit TupleSet(const std::vector<Expr *> &keys) : cmp_(keys.size()), collation_(keys.size()), keys_(keys.size())
	{
		for (size_t k = 0; k < keys.size(); ++k) {
			const Oid type = exprType((Node *) keys[k]);
			TypeCacheEntry *tc = lookup_type_cache(type, TYPECACHE_CMP_PROC_FINFO);
			if (!OidIsValid(tc->cmp_proc))
				fail(ERRCODE_FEATURE_NOT_SUPPORTED,
				     std::string("GROUP BY keys of type ") + pg_value([&] { return format_type_be(type); }) +
				         " cannot be used in a query with dx aggregates",
				     "Group by an expression with an ordered type (text, numbers, dates, timestamps, booleans).");
			cmp_[k] = &tc->cmp_proc_finfo;
			collation_[k] = exprCollation((Node *) keys[k]);
			int16 len;
			bool byval;
			get_typlenbyval(type, &len, &byval);
			keys_[k] = {len, byval};
		}
	}

	// The id of the tuple (values, nulls), stored (copied) when new; ids count from 0 in order of
	// first appearance.
	size_t id(const std::vector<Datum> &values, const std::vector<char> &nulls)
	{
		probe_values_ = &values;
		probe_nulls_ = &nulls;
		auto it = index_.find(kProbe);
		if (it != index_.end())
			return it->second;
		const size_t id = values_.size();
		values_.emplace_back();
		nulls_.push_back(nulls);
		for (size_t k = 0; k < values.size(); ++k)
			values_.back().push_back(nulls[k] ? (Datum) 0 : datumCopy(values[k], keys_[k].second, keys_[k].first));
		index_.emplace(id, id);
		return id;
	}

	size_t size() const { return values_.size(); }
	// rank[id]: the tuple's position in key order.
	std::vector<size_t> ranks() const
	{
		std::vector<size_t> rank(values_.size());
		size_t r = 0;
		for (const auto &e : index_)
			rank[e.second] = r++;
		return rank;
	}
	const std::vector<Datum> &values(size_t id) const { return values_[id]; }
	const std::vector<char> &nulls(size_t id) const { return nulls_[id]; }

private:
	static constexpr size_t kProbe = static_cast<size_t>(-1);
	struct Less {
		const TupleSet *set;
		bool operator()(size_t a, size_t b) const { return set->compare(a, b) < 0; }
	};

	int compare(size_t a, size_t b) const
	{
		const std::vector<Datum> &va = a == kProbe ? *probe_values_ : values_[a];
		const std::vector<Datum> &vb = b == kProbe ? *probe_values_ : values_[b];
		const std::vector<char> &na = a == kProbe ? *probe_nulls_ : nulls_[a];
		const std::vector<char> &nb = b == kProbe ? *probe_nulls_ : nulls_[b];
		for (size_t k = 0; k < va.size(); ++k) {
			if (na[k] || nb[k]) {
				if (na[k] != nb[k])
					return na[k] ? -1 : 1;
				continue;
			}
			const int32 c = DatumGetInt32(FunctionCall2Coll(cmp_[k], collation_[k], va[k], vb[k]));
			if (c != 0)
				return c < 0 ? -1 : 1;
		}
		return 0;
	}

	std::vector<FmgrInfo *> cmp_;
	std::vector<Oid> collation_;
	std::vector<std::pair<int16, bool>> keys_; // typlen, typbyval
	std::vector<std::vector<Datum>> values_;
	std::vector<std::vector<char>> nulls_;
	const std::vector<Datum> *probe_values_ = nullptr;
	const std::vector<char> *probe_nulls_ = nullptr;
	std::map<size_t, size_t, Less> index_{Less{this}};
};

} // namespace

// See join_cells.h.
JoinCells
evaluate_join_cells(Oid relid, const std::vector<const ColumnPolicy *> &cols, const SubUniverse &sub,
                    const std::vector<Expr *> &exprs, const std::vector<Expr *> &keys,
                    const std::vector<size_t> &group_of_point, size_t groups, const PublicRows &rows, size_t max_groups)
{
	const size_t n = sub.size();
	const size_t aggs = (exprs.size() - 1) / 2;
	JoinCells out;
	out.pair_lo.assign(aggs, 0);
	out.pair_hi.assign(aggs, 0);
	out.seen.assign(aggs, 0);
	out.nonzero.assign(aggs, 0);
	std::vector<char> any_pair(aggs, 0);
	// per point: group id -> (sum, count) per aggregate
	std::vector<std::map<size_t, std::vector<double>>> acc(n);
	TupleSet tuples(keys);
	bool too_many = false;
	evaluate_pairs_over_universe(relid, cols, sub, exprs, keys, rows,
	                             [&](size_t u, const std::vector<double> &v, const std::vector<char> &nul,
	                                 const std::vector<Datum> &key, const std::vector<char> &key_null) {
		for (size_t j = 0; j < aggs; ++j) {
			const bool w_null = nul[2 + 2 * j];
			out.nonzero[j] = out.nonzero[j] || (!w_null && v[2 + 2 * j] != 0);
			out.seen[j] = out.seen[j] || !w_null;
		}
		if (v[0] == 0 || nul[0])
			return; // WHERE (and the inner joins' conditions) do not hold: not a joined row
		size_t g = group_of_point[u];
		if (!keys.empty()) {
			// (no C++ exception may leave this callback: it runs inside the executor's error handling)
			if (too_many || (g = tuples.id(key, key_null)) >= max_groups) {
				too_many = true;
				return;
			}
		}
		std::vector<double> &a = acc[u][g];
		a.resize(2 * aggs, 0.0);
		for (size_t j = 0; j < aggs; ++j) {
			const double w = v[2 + 2 * j];
			if (v[1 + 2 * j] == 0 || nul[1 + 2 * j] || nul[2 + 2 * j])
				continue;
			a[2 * j] += w;
			a[2 * j + 1] += 1;
			out.pair_lo[j] = any_pair[j] ? std::min(out.pair_lo[j], w) : w;
			out.pair_hi[j] = any_pair[j] ? std::max(out.pair_hi[j], w) : w;
			any_pair[j] = 1;
		}
	});
	if (too_many)
		fail(ERRCODE_PROGRAM_LIMIT_EXCEEDED, "GROUP BY would return more than " + std::to_string(max_groups) + " groups",
		     "The groups are the key values of the public rows the declared values join; group by a coarser public "
		     "column, or filter the public table in WHERE.");
	std::vector<size_t> rank;
	if (!keys.empty()) {
		if (tuples.size() == 0)
			fail(ERRCODE_FEATURE_NOT_SUPPORTED, "no public row joins a declared value: the GROUP BY has no group",
			     "The groups of a GROUP BY on public columns are the key values of the joined (declared value, "
			     "public row) pairs; check the join condition and WHERE against the declared domains.");
		rank = tuples.ranks();
		out.groups = tuples.size();
		out.key_value.assign(keys.size(), std::vector<Datum>(out.groups));
		out.key_null.assign(keys.size(), std::vector<char>(out.groups));
		for (size_t id = 0; id < out.groups; ++id)
			for (size_t k = 0; k < keys.size(); ++k) {
				out.key_value[k][rank[id]] = tuples.values(id)[k];
				out.key_null[k][rank[id]] = tuples.nulls(id)[k];
			}
		for (const auto &groups_of_u : acc)
			out.slots = std::max(out.slots, groups_of_u.size());
	} else {
		out.groups = groups;
	}
	const size_t slots = out.slots;
	out.sum.assign(aggs, std::vector<std::optional<double>>(n * slots));
	out.count.assign(aggs, std::vector<double>(n * slots, 0.0));
	if (!keys.empty())
		out.group_of_slot.assign(n * slots, std::nullopt);
	for (size_t u = 0; u < n; ++u) {
		// a point's groups in key order (its slots)
		std::vector<std::pair<size_t, const std::vector<double> *>> mine;
		for (const auto &e : acc[u])
			mine.emplace_back(keys.empty() ? e.first : rank[e.first], &e.second);
		std::sort(mine.begin(), mine.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
		for (size_t s = 0; s < mine.size(); ++s) {
			const size_t cell = u * slots + s;
			if (!keys.empty())
				out.group_of_slot[cell] = static_cast<double>(mine[s].first);
			for (size_t j = 0; j < aggs; ++j) {
				const double c = (*mine[s].second)[2 * j + 1];
				if (c == 0)
					continue;
				out.sum[j][cell] = (*mine[s].second)[2 * j];
				out.count[j][cell] = c;
			}
		}
	}
	return out;
}

} // namespace dxpriv::pg
