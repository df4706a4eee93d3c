// GROUPING SETS, ROLLUP and CUBE over a join with public tables: one join, one release (join_grouping_sets.h).
#include "pg/planner/join_grouping_sets.h"

#include "pg/guard.h"
#include "pg/node_build.h"
#include "pg/planner/grouping_sets.h"
#include "pg/planner/public_joins.h"
#include "pg/planner/release_grouping_sets.h"
#include "pg/planner/release_rewrite.h"

#include "core/linear_query.h"

extern "C" {
#include "nodes/nodeFuncs.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
}

#include <algorithm>
#include <map>

namespace dxpriv::pg::analysis {

// See planner/join_grouping_sets.h.
bool
take_grouping_sets_join(Query *q, const ExtensionObjects &ext, PublicRows &rows, bool read_rows)
{
	// take_public_join refuses a query with grouping sets (a join nested in a subquery); here the
	// sets are expanded after the join is taken, over the protected table alone
	List *sets = q->groupingSets;
	q->groupingSets = NIL;
	const bool taken = take_public_join(q, ext, rows, read_rows);
	q->groupingSets = sets;
	return taken;
}

// See planner/join_grouping_sets.h.
void
check_grouping_sets_join(Query *q, const ExtensionObjects &ext)
{
	Query *probe = copy_node(q);
	PublicRows none;
	if (!take_grouping_sets_join(probe, ext, none, false))
		return;
	JoinScope scope(&none);
	Query *u = expand_grouping_sets_into_union(probe);
	if (!u)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv: a query with grouping sets has no grouping set");
	for (Query *b : grouping_set_branches(u)) {
		const Discovery d = discovery_of(b, ext);
		if (d.markers_top == 0)
			fail(ERRCODE_FEATURE_NOT_SUPPORTED, "a join with public tables needs count, sum, avg or dx aggregates",
			     kShapeHint);
		rewrite_query(b, ext, d, true); // its shape and columns are checked
	}
}

namespace {

// Sort-group references of a release's GROUP BY keys.
std::vector<Index>
key_refs(const ReleaseAnalysis &a)
{
	std::vector<Index> refs;
	for (TargetEntry *k : a.keys.keys)
		refs.push_back(k->ressortgroupref);
	return refs;
}

// Per group of the finest release f: the group of release s holding its key values, or nullopt
// when some group of f has none. pos: per key of s, the same key's position among f's keys.
std::optional<std::vector<size_t>>
map_groups(const ReleaseAnalysis &f, const ReleaseAnalysis &s, const std::vector<size_t> &pos)
{
	const size_t fg = f.keys.groups, sg = s.keys.groups;
	std::vector<size_t> out(fg, 0);
	if (pos.empty())
		return sg == 1 ? std::optional<std::vector<size_t>>(out) : std::nullopt;
	std::vector<int16> len(pos.size());
	std::vector<char> byval(pos.size());
	for (size_t k = 0; k < pos.size(); ++k)
		pg_call([&] {
			bool bv;
			get_typlenbyval(exprType((Node *) s.keys.keys[k]->expr), &len[k], &bv);
			byval[k] = bv;
		});
	bool all = true;
	pg_call([&] { // plain arrays only in here: datum_image_eq may detoast (and so raise an ERROR)
		for (size_t g = 0; g < fg && all; ++g) {
			bool found = false;
			for (size_t h = 0; h < sg && !found; ++h) {
				bool same = true;
				for (size_t k = 0; k < pos.size() && same; ++k) {
					const bool fn = f.keys.is_null[pos[k]][g] != 0, sn = s.keys.is_null[k][h] != 0;
					same = fn == sn && (fn || datum_image_eq(f.keys.value[pos[k]][g], s.keys.value[k][h], byval[k] != 0, len[k]));
				}
				if (same) {
					out[g] = h;
					found = true;
				}
			}
			all = found;
		}
	});
	return all ? std::optional<std::vector<size_t>>(out) : std::nullopt;
}

} // namespace

// See planner/join_grouping_sets.h.
std::optional<ConsistentSystem>
join_consistent_system(const std::vector<const ReleaseAnalysis *> &parts, const std::vector<size_t> &offset,
                       const std::vector<std::vector<double>> &cells, const MultiLinearPlan &plan, size_t j, int c)
{
	if (parts.size() < 2 || offset.size() != parts.size())
		return std::nullopt;
	// the finest set: its keys hold every set's keys
	size_t fine = parts.size();
	for (size_t f = 0; f < parts.size() && fine == parts.size(); ++f) {
		const std::vector<Index> rf = key_refs(*parts[f]);
		bool holds = true;
		for (const ReleaseAnalysis *p : parts)
			for (Index r : key_refs(*p))
				holds = holds && std::find(rf.begin(), rf.end(), r) != rf.end();
		if (holds)
			fine = f;
	}
	if (fine == parts.size())
		return std::nullopt;
	const ReleaseAnalysis &f = *parts[fine];
	const size_t fine_groups = f.keys.groups;
	if (fine_groups > kMaxConsistentAtoms)
		return std::nullopt; // more atoms than a projection solves
	const std::vector<Index> fine_refs = key_refs(f);
	const double grid = plan.cells.at(offset[fine] + f.cell(j, 0, c)).grid;
	const size_t n = f.sub.size();
	// per point, the finest set's groups it adds to, with its weight in grid units
	std::vector<std::vector<std::pair<size_t, __int128>>> adds(n);
	std::vector<char> atom(fine_groups, 0);
	for (size_t g = 0; g < fine_groups; ++g) {
		const std::vector<double> &q = cells.at(offset[fine] + f.cell(j, g, c));
		for (size_t u = 0; u < n; ++u) {
			const __int128 w = q[u] == 0 ? 0 : to_grid_units(q[u], grid);
			if (w != 0) {
				adds[u].emplace_back(g, w);
				atom[g] = 1;
			}
		}
	}
	std::vector<std::vector<size_t>> cell_of(parts.size()); // per set: per finest group, its cell
	size_t first_cell = 0;
	for (size_t s = 0; s < parts.size(); ++s) {
		const ReleaseAnalysis &p = *parts[s];
		if (p.sub.size() != n || plan.cells.size() < offset[s] + p.cells() || cells.size() < offset[s] + p.cells())
			return std::nullopt;
		std::vector<size_t> pos;
		for (Index r : key_refs(p))
			pos.push_back(static_cast<size_t>(std::find(fine_refs.begin(), fine_refs.end(), r) - fine_refs.begin()));
		std::optional<std::vector<size_t>> to = map_groups(f, p, pos);
		if (!to)
			return std::nullopt;
		// every point's weight in each cell of s is the sum of its finest groups' weights there
		const size_t groups = p.keys.groups;
		std::vector<__int128> sum(groups, 0);
		for (size_t g = 0; g < groups; ++g)
			if (plan.cells[offset[s] + p.cell(j, g, c)].grid != grid)
				return std::nullopt;
		for (size_t u = 0; u < n; ++u) {
			for (const auto &[g, w] : adds[u])
				sum[(*to)[g]] += w;
			for (size_t g = 0; g < groups; ++g) {
				const double w = cells[offset[s] + p.cell(j, g, c)][u];
				if ((w == 0 ? 0 : to_grid_units(w, grid)) != sum[g])
					return std::nullopt;
			}
			for (const auto &[g, w] : adds[u])
				sum[(*to)[g]] = 0;
		}
		for (size_t &g : *to)
			g += first_cell;
		cell_of[s] = std::move(*to);
		first_cell += groups;
	}
	ConsistentSystem system;
	system.cells = first_cell;
	for (size_t g = 0; g < fine_groups; ++g) {
		if (!atom[g])
			continue; // no weight at any point: its cells are exact zeros, no atom
		std::vector<size_t> cells;
		for (size_t s = 0; s < parts.size(); ++s)
			cells.push_back(cell_of[s][g]);
		system.atoms.push_back(std::move(cells)); // ascending: sets in order, each after the ones before
	}
	return system;
}

} // namespace dxpriv::pg::analysis
