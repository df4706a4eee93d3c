// The exact partial state of a noisy linear aggregate (one output group), shared by the local
// aggregates (internal state) and the distributed ones (dx._linear_partial, Citus).
#pragma once

#include "pg/contract/noise_params.h"

#include "core/linear_query.h"

extern "C" {
#include "postgres.h"
}

namespace dxpriv::pg {

// Partial state of a noisy linear aggregate for one output group. Trivially copyable; 16-byte
// aligned for the __int128 sums. Component 0 is the value (count, sum, linear, avg's sum);
// component 1 is avg's count.
struct LinearState {
	GridSum sum[2];
	LinearNoisePlan plan[2];
	int32 components;
	int32 group;
	double epsilon;
	double lo, hi;
	Oid relid; // the coordinator's OID of the protected table; interpreted only where the statement was charged
	int64 charge_id;
	bool released;
	double answer;
	// Per-row memo of the last weight's grid units per component (not serialised): a count adds the
	// same weight on every row, a sum over a small domain repeats few weights.
	bool memo_valid[2];
	double memo_w[2];
	__int128 memo_units[2];
	// a part of a dispersion statistic (LinearRelease::Part): the variance of its released noise
	// (projected in a consistent release), set by its release (not serialised)
	double part_variance;
};

// What a final function releases from a state.
// Part: a component of stddev/variance/corr/... (dispersion_spelling.h), released raw (never
// clamped: the statistic's own post-processing applies) with its noise variance.
enum class LinearRelease { Count, Sum, Avg, Part };

// A zeroed, 16-byte aligned state in mcxt.
LinearState *new_state(MemoryContext mcxt);
// A state holding the parameters of output group `group` and no row; errors on a bad group.
LinearState *state_for_group(MemoryContext mcxt, const NoiseParams &p, int group);
// Adds one row of weight w, and count_weight to an average's count (1; a join's number of pairs).
// NULL rows add nothing: callers skip them.
void add_row(LinearState &s, double w, double count_weight = 1.0);
// Exact merge of b into a; errors when they belong to different statements, aggregates or groups.
void merge_states(LinearState &a, const LinearState &b);
// Version byte, then the fields in network order (the parallel-query and Citus wire format).
bytea *serialize_linear_state(const LinearState &s);
// Inverse of serialize_linear_state; refuses malformed bytes with 22P02-class data corruption.
LinearState deserialize_linear_state(bytea *b);
// True when s carries exactly the noise plan that p gives its group (what was charged).
bool state_matches_params(const LinearState &s, const NoiseParams &p);
// The released answer of a state: noisy (refused when its charge id was not paid in this
// transaction), replayed from the answer cache, or the memo of this execution; recorded for
// dx.last_release. A count is rounded; an average is noisy sum / max(noisy count, 1) clamped.
double release_linear_state(LinearState *s, LinearRelease kind);
// A released (rounded) count as bigint; errors when it is out of range.
int64 count_as_bigint(double v);

} // namespace dxpriv::pg
