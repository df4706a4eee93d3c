// Joint open releases: ROLLUP/CUBE/GROUPING SETS with an open key, one allocation and one delta.
#include "pg/planner/open_grouping_sets.h"

#include "pg/planner/explain.h"
#include "pg/planner/open_keys.h"
#include "pg/planner/release_allocation.h"
#include "pg/planner/release_analysis.h"
#include "pg/planner/release_grouping_sets.h"
#include "pg/planner/release_identity.h"
#include "pg/planner/release_rewrite.h"
#include "pg/contract/noise_params.h"
#include "pg/contract/param_consts.h"
#include "pg/metadata/policy.h"
#include "pg/guard.h"
#include "pg/node_build.h"
#include "pg/settings.h"

#include "core/allocation.h"

extern "C" {
#include "nodes/nodeFuncs.h"
}

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>

namespace dxpriv::pg::analysis {

namespace {

// Ends the open-key analysis state however the scope is left (errors are C++ exceptions here).
struct JointAnalysisEnd {
	~JointAnalysisEnd() { end_open_key_analysis(); }
};

} // namespace

// See planner/open_grouping_sets.h.
bool
rewrite_open_grouping_sets(Query *q, Query *u, const std::vector<Query *> &branches, const ExtensionObjects &ext,
                           const std::function<void(Query *)> &admit)
{
	if (branches.size() < 2 || q->rtable == NIL)
		return false;
	RangeTblEntry *rte = linitial_node(RangeTblEntry, q->rtable);
	TablePolicy policy;
	if (rte->rtekind != RTE_RELATION || !load_table_policy(rte->relid, policy) || policy.unit.present())
		return false; // (privacy unit: each set bounds its units with its own ranks: per-set path)
	for (Query *b : branches)
		if (discovery_of(b, ext).markers_top == 0)
			return false; // (the per-set path reports it)
	OpenKeysAllowed open_scope; // (as the per-set path: each set a release that may group by an open key)
	if (contains_param((Node *) q, nullptr)) { // checked now (the branches are copies), q left as it is:
		for (Query *b : branches)              // analysed with its bound values when planned
			rewrite_query(b, ext, discovery_of(b, ext)); // (analyze_bound_query, parameters.h)
		admit(q);
		return true;
	}
	JointAnalysisEnd end;

	// 1. the open keys out of every set; the presence every set's analysis gets
	const size_t sets = branches.size();
	std::vector<OpenKeyPlan> plans(sets);
	double presence = policy.presence;
	int open_sets = 0;
	for (size_t s = 0; s < sets; ++s) {
		plans[s] = detach_open_keys(branches[s], ext);
		end_open_key_analysis();
		if (plans[s].active) {
			presence = std::min(presence, plans[s].distance / 2);
			++open_sets;
		}
	}
	if (open_sets == 0)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv: a grouping-set release lost its open key");
	std::set<AttrNumber> key_attnos; // the declared keys of all sets: one sub-universe
	for (Query *b : branches) {
		const std::set<AttrNumber> k = grouping_key_attnos(b, policy);
		key_attnos.insert(k.begin(), k.end());
	}

	// 2. every set analysed on that sub-universe at that presence
	std::vector<std::unique_ptr<ReleaseAnalysis>> parts;
	std::vector<size_t> offset;
	size_t total = 0;
	for (size_t s = 0; s < sets; ++s) {
		parts.push_back(std::make_unique<ReleaseAnalysis>());
		ReleaseAnalysis &a = *parts.back();
		resume_open_key_analysis(rte->relid, presence, plans[s].attnums);
		a.open = plans[s].active;
		if (!analyse_release(branches[s], ext, discovery_of(branches[s], ext), key_attnos, total, true, a))
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv: a grouping set of an open release was not analysed");
		a.open = plans[s].active;
		end_open_key_analysis();
		offset.push_back(total);
		total += a.cells();
	}
	const ReleaseAnalysis &first = *parts.front();
	for (const auto &p : parts) // the same aggregates over the same points in every set
		if (p->specs.size() != first.specs.size() || p->sub.size() != first.sub.size() ||
		    p->eps_total != first.eps_total || p->cells_per_group != first.cells_per_group || !p->em.specs.empty())
			fail(ERRCODE_INTERNAL_ERROR, "dxpriv: the grouping sets of one query differ in their aggregates");

	// 3. one allocation over every cell of every set, within the statement's epsilon
	std::vector<std::vector<double>> cells;
	cells.reserve(total);
	for (const auto &p : parts)
		for (const std::vector<double> &c : p->q_cells)
			cells.push_back(c);
	AllocationRequest request = start_request(first.specs, total);
	for (size_t s = 0; s < sets; ++s)
		add_to_request(*parts[s], offset[s], request);
	double query_delta = 0;
	const NoiseFamily family = linear_noise_family(first, query_delta);
	const MultiLinearPlan plan = plan_multi_linear_noise(first.sub, cells, first.eps_total, query_delta, family, request);
	const double delta = any_noisy(plan) ? query_delta : 0;
	if (explain_capture_active()) {
		capture_statement(first, first.eps_total, request.strategy, family, delta, first.sub, cells);
		for (size_t j = 0; j < first.specs.size(); ++j)
			for (size_t s = 0; s < sets; ++s) { // a set's cells name its open keys: city=*, ward=A
				const size_t before = explain_capture().cells.size();
				capture_cells(*parts[s], plan, offset[s], j, "()");
				std::string open;
				for (const std::string &n : plans[s].names)
					open += (open.empty() ? "" : ", ") + n + "=*";
				for (size_t c = before; c < explain_capture().cells.size() && !open.empty(); ++c) {
					std::string &g = explain_capture().cells[c].group;
					g = parts[s]->keys.grouped() ? open + ", " + g : open;
				}
			}
	}

	// 4. each set's branch with its share of the plan; each set with open keys its selection at
	// eps_sel / m and delta / m; one identity (eps_agg + eps_sel, delta) for the statement
	const int specs = static_cast<int>(first.specs.size());
	const int agg_count = specs * static_cast<int>(sets) + open_sets; // (selections: S = 1, noise_params.h)
	SetIdentity set;
	set.sets = static_cast<int>(sets);
	std::vector<ReleaseText> texts;
	double selection_epsilon = 0;
	int next_selection = 0;
	const double statement_delta = policy.delta; // the table's per-query delta, once
	for (size_t s = 0; s < sets; ++s) {
		set.set = static_cast<int>(s);
		resume_open_key_analysis(rte->relid, presence, plans[s].attnums);
		texts.push_back(rewrite_release(branches[s], ext, *parts[s], plan, offset[s], family, delta, &set));
		if (plans[s].active) {
			OpenSetShare share;
			share.agg_index = specs * static_cast<int>(sets) + next_selection++;
			share.agg_count = agg_count;
			share.epsilon = guc_epsilon / open_sets;
			share.delta = statement_delta / open_sets;
			selection_epsilon += attach_open_keys(branches[s], ext, *parts[s], plans[s], &share);
		}
		end_open_key_analysis();
		// the statement's count: every set's copies and every set's selection
		set_rewritten_agg_count((Node *) branches[s], ext, agg_count);
	}
	*q = *u;
	StampContext ctx{&ext, grouping_sets_cache_key(branches),
	                 AllocationIdentity{first.eps_total + selection_epsilon, statement_delta}};
	query_tree_walker(q, reinterpret_cast<bool (*)()>(stamp_walker), &ctx, 0);
	int selection = 0;
	for (size_t s = 0; s < sets; ++s) {
		if (plans[s].active) { // its partitions' answers are held until their verdicts; not the others'
			std::map<int, int64> own;
			for (int j = 0; j < specs; ++j)
				own[j * static_cast<int>(sets) + static_cast<int>(s)] = ctx.charge_ids[j * static_cast<int>(sets) + static_cast<int>(s)];
			const int sel = specs * static_cast<int>(sets) + selection++;
			own[sel] = ctx.charge_ids[sel];
			register_open_release(own, plans[s], first.specs.size());
		}
		register_releases(parts[s]->specs, ctx.charge_ids, std::move(texts[s].descriptions),
		                  std::move(texts[s].labels));
	}
	for (Query *b : branches)
		admit(b);
	return true;
}

} // namespace dxpriv::pg::analysis
