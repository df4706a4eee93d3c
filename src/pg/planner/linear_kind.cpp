// The linear release kind: dx.count, dx.sum, dx.avg, dx.linear and dx.count_units behind the release-kind interface.
#include "pg/planner/linear_kind.h"

#include "pg/contract/noise_params.h"
#include "pg/guard.h"
#include "pg/metadata/citus_tables.h"
#include "pg/node_build.h"
#include "pg/settings.h"
#include "pg/planner/group_source.h"
#include "pg/planner/line_release.h"
#include "pg/planner/one_pass.h"
#include "pg/planner/point_lookup.h"
#include "pg/planner/release_allocation.h"
#include "pg/planner/release_analysis.h"
#include "pg/planner/unit_source.h"
#include "pg/planner/unit_count_set.h"

#include "core/unit_bound.h"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
}

namespace dxpriv::pg::analysis {

namespace {

class LinearKind final : public ReleaseKind {
public:
	const char *name() const override { return "linear"; }

	bool present(const ReleaseAnalysis &a) const override { return !a.specs.empty(); }

	void analyse(std::vector<Aggref *> &markers, ReleaseAnalysis &a, const ExtensionObjects &ext,
	             bool grouping_set) const override
	{
		// what the unit-level calibration cannot do yet (the exponential mechanism refused its own)
		if (a.policy.unit.present())
			refuse_for_privacy_unit(a.relid, false, a.join != nullptr, grouping_set);
		// Identical aggregates (a HAVING repeat of a SELECT aggregate; BETWEEN, which the parser turns
		// into two copies of its operand) are one release: one noise draw, charged once.
		std::vector<Aggref *> originals; // unmodified copies of the representatives
		std::vector<Aggref *> unique;
		for (Aggref *m : markers) {
			size_t rep = 0;
			while (rep < originals.size() && !equal(originals[rep], m))
				++rep;
			if (rep < originals.size()) {
				a.duplicates.emplace_back(m, rep);
				continue;
			}
			originals.push_back(copy_node(m));
			unique.push_back(m);
		}
		markers.clear();
		for (Aggref *m : unique) {
			a.specs.push_back(describe_aggregate(m, a.policy, ext));
			a.specs.back().first_cell = a.cells_per_group;
			a.cells_per_group += a.specs.back().components;
			a.eps_total += a.specs.back().epsilon;
		}
	}

	void allocate(const ReleaseAnalysis &a, size_t offset, AllocationRequest &request,
	              AllocationIdentity &allocation) const override
	{
		add_to_request(a, offset, request);
		allocation.epsilon += a.eps_total;
	}

	void rewrite(Query *, ReleaseAnalysis &a, KindRewrite &r) const override;

	void add_source_attnos(const ReleaseAnalysis &, std::set<AttrNumber> &) const override
	{
		// their columns are in a.attnos already (the sub-universe is built from them)
	}
};

// See planner/release_kind.h.
void
LinearKind::rewrite(Query *, ReleaseAnalysis &a, KindRewrite &r) const
{
	const ExtensionObjects &ext = *r.ext;
	const std::vector<AggSpec> &specs = a.specs;
	const size_t groups = a.keys.groups;
	const bool grouped = a.keys.grouped();
	const std::vector<const ColumnPolicy *> &cols = a.cols;
	const size_t slots = a.jc.slots;
	// one pass over the rows (planner/one_pass.h): the linear aggregates read by lookup share one
	// transition (not on Citus, in joins, grouping sets or beside exponential-mechanism aggregates)
	// (open keys: one state per partition, without a privacy unit, planner/open_keys.h)
	const bool one_pass = guc_one_pass && !r.distributed && !r.slot && !a.join && !r.set && a.em.specs.empty() &&
	                      (!a.open || !a.policy.unit.present());
	// (a unit bounded by a profile's keep qual: as a table without unit, planner/unit_group_profile.h)
	const std::vector<bool> key = one_pass && (!a.policy.unit.present() || r.unit_profile)
	                                  ? one_pass_key_columns(a.keys, cols) : std::vector<bool>{};
	List *shared = one_pass ? one_pass_args(cols, groups, (Expr *) copy_node(r.group_index),
	                                        grouped && !a.open ? (Expr *) present_flag_var() : nullptr, key, a.open)
	                        : NIL;
	for (size_t j = 0; j < specs.size(); ++j) {
		const AggSpec &s = specs[j];
		NoiseParams p;
		p.components = s.components;
		p.epsilon = s.epsilon;
		p.relid = a.relid;
		p.charge_id = 0; // stamped once the whole statement is rewritten
		p.agg_index = r.set ? static_cast<int>(j) * r.set->sets + r.set->set : static_cast<int>(j);
		p.agg_count = static_cast<int>(specs.size()) * (r.set ? r.set->sets : 1);
		p.epsilon_id = 0; // stamped with the charge ids (shared by the sets' copies of the aggregate)
		p.sets = r.set ? r.set->sets : 1;
		p.lo = a.lo[j];
		p.hi = a.hi[j];
		p.groups = static_cast<int>(groups);
		p.family = static_cast<int>(r.family);
		p.delta = r.delta; // the query's delta, carried by each of its aggregates
		if (a.policy.unit.present()) { // the ledger records the unit and the bound
			const ContributionBound b = unit_bound_of(a);
			p.unit_attnum = a.policy.unit.attnum;
			p.unit_rows = static_cast<int>(b.max_rows);
			const bool limits = grouped && (b.max_groups < b.max_rows || b.max_rows_per_group < b.max_rows);
			p.unit_groups = limits ? static_cast<int>(b.max_groups) : 0; // 0: no group limit (for_query)
			p.unit_rows_per_group = limits ? static_cast<int>(b.max_rows_per_group) : 0;
		}
		for (size_t g = 0; g < groups; ++g)
			for (int c = 0; c < s.components; ++c) {
				const LinearNoisePlan &cell = r.plan->cells[r.offset + a.cell(j, g, c)];
				p.cells.push_back(cell.grid);
				p.cells.push_back(cell.scale);
				p.cells.push_back(cell.bound);
			}
		// a value's table does not depend on the GROUP BY columns, a count's often on none: the
		// lookup maps only the columns its table depends on (not with slots or privacy units)
		// (count_units: its arguments are not the shared ones; a stddev/corr part keeps its own final
		// function, which returns the part with its noise variance for dx._dispersion)
		const bool in_one_pass = one_pass && s.kind != AggKind::CountUnits && !s.part;
		Expr *weight = in_one_pass ? (Expr *) makeNullConst(FLOAT8OID, -1, InvalidOid)
		               : r.slot || a.policy.unit.present() || s.kind == AggKind::CountUnits
		                   ? weigh_expr(cols, a.tables[j], false, ext, copy_node(r.slot), slots)
		               : a.line ? line_weigh_expr(a, j, ext) // by pieces (planner/line_release.h)
		                   : reduced_weigh_expr(cols, a.tables[j], false, ext);
		if (grouped && !r.distributed && !a.open && s.kind != AggKind::CountUnits && !in_one_pass) // the empty-group rows create the group's state (so it gets a noisy answer) but add nothing
			weight = real_rows_only(weight, FLOAT8OID, nullptr);
		Aggref *agg = s.aggref;
		const bool pair_avg = a.join && s.kind == AggKind::Avg; // its count grows by the row's joined pairs
		if (s.kind == AggKind::CountUnits && r.unit_count_set) { // distinct units of the kept rows (unit_count_set.h)
			make_unit_count_set(agg, weight, (Expr *) copy_node(r.group_index),
			                    makeConst(FLOAT8ARRAYOID, -1, InvalidOid, -1, PointerGetDatum(build_noise_params(p)), false, false),
			                    a.policy, ext);
			agg->location = kRewrittenLocation;
			continue;
		}
		if (s.kind == AggKind::CountUnits) { // the unit's first counted row of its group adds 1 (unit_source.h)
			r.distinct_weights.push_back(weight); // dx._weigh: 1 or NULL at the row's point
			weight = unit_count_weight(r.distinct_weights.size() - 1, grouped && !r.distributed && !a.open);
		}
		Oid internal = s.kind == AggKind::Count || s.kind == AggKind::CountUnits ? ext.noisy_count
		               : s.kind == AggKind::Avg ? (pair_avg ? ext.noisy_avg_pairs : ext.noisy_avg)
		                                        : s.part ? ext.noisy_part : ext.noisy_sum;
		Const *params = makeConst(FLOAT8ARRAYOID, -1, InvalidOid, -1, PointerGetDatum(build_noise_params(p)), false, false);
		agg->aggfnoid = internal;
		agg->aggargtypes = list_make3_oid(FLOAT8OID, INT4OID, FLOAT8ARRAYOID);
		agg->args = list_make3(makeTargetEntry(weight, 1, nullptr, false),
		                     makeTargetEntry((Expr *) copy_node(r.group_index), 2, nullptr, false),
		                     makeTargetEntry((Expr *) params, 3, nullptr, false));
		if (pair_avg) {
			Expr *pairs = weigh_expr(cols, a.count_tables[j], false, ext, copy_node(r.slot), slots);
			if (grouped && !r.distributed) // (as the weight above)
				pairs = real_rows_only(pairs, FLOAT8OID, nullptr);
			agg->aggargtypes = lappend_oid(agg->aggargtypes, FLOAT8OID);
			agg->args = lappend(agg->args, makeTargetEntry(pairs, 4, nullptr, false));
		}
		if (in_one_pass && a.line) { // its table by pieces (planner/line_release.h)
			std::vector<size_t> kept, dims;
			Const *table = line_one_pass_table(a, j, kept, dims);
			make_one_pass_table(agg, s.kind == AggKind::Count ? 0 : s.kind == AggKind::Avg ? 2 : 1, shared, params, cols,
			                    table, kept, ext, key);
		} else if (in_one_pass)
			make_one_pass(agg, s.kind == AggKind::Count ? 0 : s.kind == AggKind::Avg ? 2 : 1, shared, params, cols,
			              a.tables[j], ext, key);
		agg->aggstar = false;
		agg->aggvariadic = false;
		agg->aggdistinct = NIL; // dx.count(DISTINCT unit): the bounded source flags each unit's first row
		agg->aggfilter = nullptr;
		agg->inputcollid = InvalidOid;
		agg->location = kRewrittenLocation;
	}
	for (auto &[dup, rep] : a.duplicates) {
		const Aggref *rp = specs[rep].aggref;
		dup->aggfnoid = rp->aggfnoid;
		dup->aggargtypes = list_copy(rp->aggargtypes);
		dup->args = static_cast<List *>(copyObjectImpl(rp->args));
		dup->aggdirectargs = static_cast<List *>(copyObjectImpl(rp->aggdirectargs));
		dup->aggstar = rp->aggstar;
		dup->aggdistinct = NIL;
		dup->aggvariadic = rp->aggvariadic;
		dup->aggfilter = static_cast<Expr *>(copyObjectImpl(rp->aggfilter));
		dup->inputcollid = rp->inputcollid;
		dup->location = rp->location;
	}
}

} // namespace

// See planner/linear_kind.h.
const ReleaseKind &
linear_kind()
{
	static const LinearKind kind;
	return kind;
}

} // namespace dxpriv::pg::analysis
