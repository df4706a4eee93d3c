// The exact partial state of a noisy linear aggregate and its release (linear_state.h).
#include "pg/executor/linear_state.h"
#include "pg/statement/statement_context.h"

#include "pg/executor/noise_source.h"
#include "pg/ledger/charge.h"
#include "pg/contract/noise_params.h"
#include "pg/executor/agg_support.h"
#include "pg/executor/consistent_release.h"
#include "pg/executor/release_log.h"
#include "pg/guard.h"
#include "pg/ledger/answer_cache.h"

#include "core/accuracy.h"
#include "core/error.h"
#include "core/postprocess.h"
#include "core/release_interval.h"

extern "C" {
#include "libpq/pqformat.h"
}

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <string>

namespace dxpriv::pg {

namespace {

constexpr uint8 kStateVersion = 3;
constexpr int kSerializedSize = 1 + 4 + 4 + 24 + 4 + 8 + 2 * 52;

// Noisy value of one component, refusing uncharged releases: the exact grid sum plus its own
// noise, or, in a consistent grouping-set release, plus its share of the projected noise of all
// the release's cells (consistent_release.h; variance: its variance after projection, else NaN).
double
release_component(LinearState *s, int c, double &variance)
{
	if (!statement::paid(s->charge_id))
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, "dxpriv refuses to release an answer that was not charged",
		     "Run the query directly; dx aggregates are charged when the statement starts.");
	double noise = 0;
	variance = std::nan("");
	if (consistent_noise(s->charge_id, s->group, c, s->plan[c], noise, variance)) {
		__int128 total = 0;
		if (__builtin_add_overflow(s->sum[c].units, static_cast<__int128>(noise), &total))
			fail(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE, "sum of the query weights overflows");
		return static_cast<double>(total) * s->plan[c].grid;
	}
	return s->sum[c].release(backend_random(), s->plan[c]);
}

// 1.96 standard deviations (a projected cell's noise is a mix of many cells: normal approximation).
double
projected_half_width(double variance)
{
	return std::isfinite(variance) ? 1.959963984540054 * std::sqrt(variance) : std::nan("");
}

[[noreturn]] void
corrupted()
{
	fail(ERRCODE_DATA_CORRUPTED, "invalid dxpriv aggregate state",
	     "Aggregate states are produced by dxpriv itself; they cannot be written by hand.");
}

} // namespace

// See linear_state.h.
LinearState *
new_state(MemoryContext mcxt)
{
	char *raw = static_cast<char *>(MemoryContextAllocZero(mcxt, sizeof(LinearState) + 16));
	auto *s = reinterpret_cast<LinearState *>(TYPEALIGN(16, reinterpret_cast<uintptr_t>(raw)));
	new (s) LinearState();
	return s;
}

// See linear_state.h.
LinearState *
state_for_group(MemoryContext mcxt, const NoiseParams &p, int group)
{
	if (group < 0 || group >= p.groups)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv aggregate received an invalid output group");
	LinearState *s = new_state(mcxt);
	s->components = p.components;
	s->group = group;
	s->epsilon = p.epsilon;
	s->lo = p.lo;
	s->hi = p.hi;
	s->relid = p.relid;
	s->charge_id = p.charge_id;
	for (int c = 0; c < p.components; ++c) {
		s->plan[c].grid = p.grid(group, c);
		s->plan[c].scale = p.scale(group, c);
		s->plan[c].bound = p.bound(group, c);
		s->plan[c].family = static_cast<NoiseFamily>(p.family);
		s->plan[c].sensitivity = s->plan[c].scale * p.epsilon;
	}
	return s;
}

namespace {

// GridSum::add through the state's memo: the same units (to_grid_units is a pure function of the
// weight's bits and the component's grid, which is fixed for a state), the same overflow checks.
inline void
add_component(LinearState &s, int c, double w)
{
	if (!s.memo_valid[c] || std::memcmp(&w, &s.memo_w[c], sizeof w) != 0) {
		s.memo_units[c] = to_grid_units(w, s.plan[c].grid);
		s.memo_w[c] = w;
		s.memo_valid[c] = true;
	}
	GridSum row;
	row.units = s.memo_units[c];
	row.rows = 1;
	s.sum[c].merge(row);
}

} // namespace

// See linear_state.h.
void
add_row(LinearState &s, double w, double count_weight)
{
	add_component(s, 0, w);
	if (s.components == 2)
		add_component(s, 1, count_weight);
}

// See linear_state.h.
void
merge_states(LinearState &a, const LinearState &b)
{
	if (a.charge_id != b.charge_id || a.group != b.group || a.components != b.components)
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv cannot combine states of different queries or groups");
	for (int c = 0; c < a.components; ++c)
		a.sum[c].merge(b.sum[c]);
}

// See linear_state.h.
bytea *
serialize_linear_state(const LinearState &s)
{
	StringInfoData buf;
	pq_begintypsend(&buf);
	pq_sendbyte(&buf, kStateVersion);
	pq_sendint32(&buf, s.components);
	pq_sendint32(&buf, s.group);
	pq_sendfloat8(&buf, s.epsilon);
	pq_sendfloat8(&buf, s.lo);
	pq_sendfloat8(&buf, s.hi);
	pq_sendint32(&buf, s.relid);
	pq_sendint64(&buf, s.charge_id);
	for (int c = 0; c < 2; ++c) {
		unsigned __int128 u = static_cast<unsigned __int128>(s.sum[c].units);
		pq_sendint64(&buf, static_cast<uint64>(u >> 64));
		pq_sendint64(&buf, static_cast<uint64>(u));
		pq_sendint64(&buf, s.sum[c].rows);
		pq_sendfloat8(&buf, s.plan[c].grid);
		pq_sendfloat8(&buf, s.plan[c].scale);
		pq_sendfloat8(&buf, s.plan[c].bound);
		pq_sendint32(&buf, static_cast<int32>(s.plan[c].family));
	}
	return pq_endtypsend(&buf);
}

// See linear_state.h.
LinearState
deserialize_linear_state(bytea *b)
{
	StringInfoData buf = bytea_reader(b);
	if (buf.len != kSerializedSize || pq_getmsgbyte(&buf) != kStateVersion)
		corrupted();
	LinearState s{};
	s.components = pq_getmsgint(&buf, 4);
	s.group = pq_getmsgint(&buf, 4);
	s.epsilon = pq_getmsgfloat8(&buf);
	s.lo = pq_getmsgfloat8(&buf);
	s.hi = pq_getmsgfloat8(&buf);
	s.relid = pq_getmsgint(&buf, 4);
	s.charge_id = pq_getmsgint64(&buf);
	for (int c = 0; c < 2; ++c) {
		uint64 hi = pq_getmsgint64(&buf), lo = pq_getmsgint64(&buf);
		s.sum[c].units = static_cast<__int128>((static_cast<unsigned __int128>(hi) << 64) | lo);
		s.sum[c].rows = pq_getmsgint64(&buf);
		s.plan[c].grid = pq_getmsgfloat8(&buf);
		s.plan[c].scale = pq_getmsgfloat8(&buf);
		s.plan[c].bound = pq_getmsgfloat8(&buf);
		const int32 family = pq_getmsgint(&buf, 4);
		if (family < 0 || family > 2)
			corrupted();
		s.plan[c].family = static_cast<NoiseFamily>(family);
		s.plan[c].sensitivity = s.plan[c].scale * s.epsilon;
	}
	if (s.components < 1 || s.components > 2 || s.group < 0 || s.sum[0].rows < 0 || s.sum[1].rows < 0)
		corrupted();
	return s;
}

// See linear_state.h.
bool
state_matches_params(const LinearState &s, const NoiseParams &p)
{
	if (s.charge_id != p.charge_id || s.components != p.components || s.group < 0 || s.group >= p.groups ||
	    s.epsilon != p.epsilon || s.lo != p.lo || s.hi != p.hi || s.relid != p.relid)
		return false;
	for (int c = 0; c < p.components; ++c)
		if (s.plan[c].grid != p.grid(s.group, c) || s.plan[c].scale != p.scale(s.group, c) ||
		    s.plan[c].bound != p.bound(s.group, c) || s.plan[c].family != static_cast<NoiseFamily>(p.family))
			return false;
	return true;
}

// See linear_state.h.
double
release_linear_state(LinearState *s, LinearRelease kind)
{
	if (s->released)
		return s->answer;
	double cached;
	double parts[2] = {std::nan(""), std::nan("")};
	double var[2] = {std::nan(""), std::nan("")};
	std::string note; // what free post-processing did (dx.last_release)
	if (answer_cache_replayed(s->charge_id, s->group, cached, parts)) {
		s->answer = cached;
		s->part_variance = noise_variance(s->plan[0]); // (a replay keeps no projected variance)
	} else {
		switch (kind) {
		case LinearRelease::Count:
		case LinearRelease::Sum: {
			const double raw = release_component(s, 0, var[0]);
			s->answer = kind == LinearRelease::Count ? std::nearbyint(raw) : raw;
			if (std::isfinite(var[0])) {
				note = "consistent totals";
			} else if (guc_postprocess && clamp_nonnegative(s->answer, s->lo) != s->answer) {
				s->answer = 0; // the weights are non-negative at every declared point
				note = "clamped at 0";
			}
			break;
		}
		case LinearRelease::Part:
			s->answer = release_component(s, 0, var[0]);
			s->part_variance = std::isfinite(var[0]) ? var[0] : noise_variance(s->plan[0]);
			if (std::isfinite(var[0]))
				note = "consistent totals";
			break;
		case LinearRelease::Avg: {
			// post-processing of two d_X-private releases, so no further privacy cost
			parts[0] = release_component(s, 0, var[0]);
			parts[1] = release_component(s, 1, var[1]);
			s->answer = std::clamp(parts[0] / std::max(parts[1], 1.0), s->lo, s->hi);
			if (std::isfinite(var[0]) || std::isfinite(var[1]))
				note = "consistent totals";
			if (guc_postprocess) {
				double avg_half = std::nan("");
				try {
					avg_half = average_half_width(s->plan[0], s->plan[1], s->answer, parts[1]);
				} catch (const CoreError &) {
				}
				const double count_half = std::isfinite(var[1]) ? projected_half_width(var[1])
				                                                : confidence_half_width(s->plan[1]);
				const AverageVerdict v = judge_average(parts[1], count_half, avg_half, s->lo, s->hi);
				if (v != AverageVerdict::None) {
					s->answer = std::nan(""); // released as NULL
					note = average_verdict_text(v);
				}
			}
			break;
		}
		}
		answer_cache_note(s->charge_id, s->group, s->answer, s->components == 2 ? parts : nullptr);
	}
	s->released = true;
	const bool has_parts = s->components == 2 && std::isfinite(parts[0]) && std::isfinite(parts[1]);
	release_log_record(s->charge_id, s->group, s->components, s->plan, s->answer, has_parts ? parts : nullptr);
	if (!note.empty())
		release_log_annotate(s->charge_id, s->group, note, projected_half_width(var[0]), projected_half_width(var[1]));
	return s->answer;
}

// See linear_state.h.
int64
count_as_bigint(double v)
{
	if (!(v > -9.2e18 && v < 9.2e18))
		fail(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE, "noisy count is out of range for bigint");
	return static_cast<int64>(v);
}

} // namespace dxpriv::pg
