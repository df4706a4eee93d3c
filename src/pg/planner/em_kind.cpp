// The exponential-mechanism release kind: dx.mode, dx.quantile and dx.median behind the release-kind interface.
#include "pg/planner/em_kind.h"

#include "pg/guard.h"
#include "pg/planner/em_rewrite.h"
#include "pg/planner/public_joins.h"
#include "pg/planner/release_analysis.h"

namespace dxpriv::pg::analysis {

namespace {

class EmReleaseKind final : public ReleaseKind {
public:
	const char *name() const override { return "exponential mechanism"; }

	bool present(const ReleaseAnalysis &a) const override { return !a.em.specs.empty(); }

	// Their markers leave `markers` here: they spend their own epsilon outside the linear allocation.
	void analyse(std::vector<Aggref *> &markers, ReleaseAnalysis &a, const ExtensionObjects &ext,
	             bool grouping_set) const override
	{
		const TablePolicy &policy = a.policy;
		EmAnalyzerHooks em_hooks;
		em_hooks.check_row_expression = [&policy](Node *e, const char *where_text) {
			check_row_expression(e, policy, where_text);
		};
		a.em = take_em_markers(markers, policy, ext, em_hooks);
		if (a.em.specs.empty())
			return;
		if (current_public_join())
			fail(ERRCODE_FEATURE_NOT_SUPPORTED, "dx.mode, dx.quantile and dx.median cannot be used in joins yet",
			     "Use dx.count, dx.sum, dx.avg or dx.linear in a join with public tables.");
		if (grouping_set)
			fail(ERRCODE_FEATURE_NOT_SUPPORTED,
			     "dx.mode, dx.quantile and dx.median cannot be used with GROUPING SETS, ROLLUP or CUBE yet",
			     "Their sets would not share the statement's epsilon: run them in one query per grouping set, or use "
			     "dx.count, dx.sum, dx.avg or dx.linear.");
		if (policy.unit.present()) // no unit-level calibration of their utility
			refuse_for_privacy_unit(a.relid, true, false, false);
	}

	void allocate(const ReleaseAnalysis &a, size_t, AllocationRequest &, AllocationIdentity &allocation) const override
	{
		for (const EmSpec &s : a.em.specs) // no linear cell: each spends its own epsilon
			allocation.epsilon += s.epsilon;
	}

	// Sensitivity, parameters and rewrite (em_rewrite.h), after the linear aggregates.
	void rewrite(Query *q, ReleaseAnalysis &a, KindRewrite &r) const override
	{
		if (a.em.specs.empty())
			return;
		std::vector<Aggref *> linear_aggrefs;
		for (const AggSpec &s : a.specs)
			linear_aggrefs.push_back(s.aggref);
		// the repeats of linear aggregates (a HAVING copy) take their representative's place, so
		// they stay one release with it
		EmQuery em = a.em;
		for (const auto &[dup, rep] : a.duplicates) {
			linear_aggrefs.push_back(dup);
			em.linear_positions.push_back(a.em.linear_positions.at(rep));
		}
		if (!a.keys.plain_columns)
			fail(ERRCODE_FEATURE_NOT_SUPPORTED, "dx.mode, dx.quantile and dx.median cannot be grouped by expressions yet",
			     "Group them by declared columns, or run the linear aggregates (count, sum, avg) with the "
			     "expression alone.");
		rewrite_em_aggregates(q, em,
		                      EmRewriteInput{a.relid, &a.policy, r.ext, a.where, &a.keys, r.group_index,
		                                     kRewrittenLocation, linear_aggrefs, r.distributed});
	}

	void add_source_attnos(const ReleaseAnalysis &a, std::set<AttrNumber> &out) const override
	{
		em_collect_attnos(a.em, a.policy, out); // their candidate columns, WHERE and FILTER (own sub-universe)
	}
};

} // namespace

// See planner/em_kind.h.
const ReleaseKind &
em_kind()
{
	static const EmReleaseKind kind;
	return kind;
}

} // namespace dxpriv::pg::analysis
