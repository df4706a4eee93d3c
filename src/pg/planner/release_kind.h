// Release kinds: the one interface (analyse, allocate, rewrite) of the linear and the exponential-mechanism aggregates.
//
// A release (one SELECT with dx aggregates over one table, planner/release_analysis.h) may hold
// aggregates of two kinds:
//   * linear (planner/linear_kind.cpp): dx.count, dx.sum, dx.avg, dx.linear, dx.count_units; their
//     cells share one allocation of the release's epsilon and read per-point tables;
//   * exponential mechanism (planner/em_kind.cpp): dx.mode, dx.quantile, dx.median; each spends its
//     own epsilon with its own utility sensitivity (planner/em_rewrite.h).
// The release's own steps (shape, policy, GROUP BY keys, sub-universe, evaluation at the points,
// the statement's charge identities) are written once in release_analysis/release_rewrite; what
// differs by kind is behind this interface, and release_kinds() is the only list of kinds.
//
// Order (release_kinds() is in REWRITE order; ANALYSE walks it backwards):
//   ANALYSE   exponential mechanism, then linear: the exponential mechanism numbers every dx aggregate
//             of the query (EmSpec::position), so it sees all markers and takes its own; the linear
//             kind takes what is left.
//   ALLOCATE  linear, then exponential mechanism: the allocation's epsilon is the linear cells'
//             epsilon plus each exponential-mechanism aggregate's own (charged together).
//   REWRITE   linear, then exponential mechanism: the exponential mechanism renumbers the rewritten
//             linear aggregates among all dx aggregates (answer cache), so they must exist first.
// Every method raises a PostgreSQL error (through guard.h's fail) on what it refuses; none holds
// state between calls: what a kind found lives in the ReleaseAnalysis (specs for linear, em for
// the exponential mechanism), which lives in the analysing statement's memory and C++ heap for
// the duration of the analysis only.
#pragma once

#include "pg/metadata/extension_objects.h"
#include "pg/planner/release_analysis.h"
#include "pg/planner/release_identity.h"

#include "core/allocation.h"
#include "core/linear_query.h"

extern "C" {
#include "nodes/parsenodes.h"
}

#include <set>
#include <vector>

namespace dxpriv::pg::analysis {

// What a kind's REWRITE needs besides the analysis; built by rewrite_release for one release.
struct KindRewrite {
	const ExtensionObjects *ext = nullptr;
	const MultiLinearPlan *plan = nullptr; // the statement's linear plan
	size_t offset = 0;                     // of this release's cells among the plan's cells
	NoiseFamily family = NoiseFamily::Laplace;
	double delta = 0;                      // the linear cells' delta (0: pure epsilon)
	const SetIdentity *set = nullptr;      // the release's grouping set (nullptr: a release alone)
	Expr *group_index = nullptr;           // int4 output group of a row (never null)
	Expr *slot = nullptr;                  // GROUP BY public columns: the row's slot (else nullptr)
	bool distributed = false;              // a Citus table
	bool unit_profile = false;             // grouped, unit bounded by a profile's keep qual (unit_group_profile.h)
	bool unit_count_set = false;           // count_units beside other aggregates in one scan (unit_count_set.h)
	std::vector<Expr *> distinct_weights;  // out: count_units' per-point weights (unit_source.h)
};

class ReleaseKind {
public:
	virtual ~ReleaseKind() = default;

	// "linear" or "exponential mechanism" (for messages and comments).
	virtual const char *name() const = 0;

	// True when the analysed release holds aggregates of this kind.
	virtual bool present(const ReleaseAnalysis &a) const = 0;

	// ANALYSE: moves this kind's markers out of `markers` (the others keep their order), validates
	// them against a.policy and records them in a (before the sub-universe is built: what the linear
	// aggregates read joins it). a.relid, a.policy, a.where, a.join, a.keys are set. grouping_set:
	// the release is one set of a GROUPING SETS statement.
	virtual void analyse(std::vector<Aggref *> &markers, ReleaseAnalysis &a, const ExtensionObjects &ext,
	                     bool grouping_set) const = 0;

	// ALLOCATE: adds this kind's cells (at `offset` among the statement's cells) to the linear
	// allocation request and the epsilon it spends to the statement's allocation identity.
	virtual void allocate(const ReleaseAnalysis &a, size_t offset, AllocationRequest &request,
	                      AllocationIdentity &allocation) const = 0;

	// REWRITE: replaces this kind's aggregates in q by their internal noisy aggregates (parameters
	// with charge id 0: the caller stamps the statement's identities afterwards). Runs before the
	// remaining column references of q are replaced (GROUP BY: before the row source is).
	virtual void rewrite(Query *q, ReleaseAnalysis &a, KindRewrite &r) const = 0;

	// The attributes this kind's rewritten aggregates read from rows beyond a.attnos (a GROUP BY's
	// row source must carry them).
	virtual void add_source_attnos(const ReleaseAnalysis &a, std::set<AttrNumber> &out) const = 0;
};

// Every kind, in rewrite order (see the top of this file): linear_kind() (linear_kind.h), then
// em_kind() (em_kind.h). Static objects: no lifetime to manage.
const std::vector<const ReleaseKind *> &release_kinds();

} // namespace dxpriv::pg::analysis
