// Dispersion statistics at execution: a part's release with its noise variance (dx._noisy_part)
// and the statistic computed from released parts (dx._dispersion), logged for dx.last_release.
#include "pg/executor/agg_support.h"
#include "pg/executor/consistent_release.h"
#include "pg/executor/dispersion_part.h"
#include "pg/executor/linear_state.h"
#include "pg/executor/release_log.h"
#include "pg/guard.h"
#include "pg/stand_in.h"

#include "core/accuracy.h"
#include "core/dispersion.h"
#include "core/error.h"

extern "C" {
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
}

#include <cmath>
#include <cstdint>
#include <string>

using namespace dxpriv;
using namespace dxpriv::pg;

namespace {

// Layout of a released part (dx._noisy_part's float8[]).
enum PartField { kAnswer = 0, kVariance, kChargeHigh, kChargeLow, kGroup, kLo, kHi, kKurtosis, kPartFields };

// A released part read back (false for a malformed array, which only a hand-written call can pass).
struct Part {
	double answer = 0, variance = 0, lo = 0, hi = 0, kurtosis = 0;
	int64 charge_id = 0;
	int group = 0;
};

bool
read_part(ArrayType *a, Part &out)
{
	if (ARR_NDIM(a) != 1 || ARR_ELEMTYPE(a) != FLOAT8OID || ARR_HASNULL(a) || ARR_DIMS(a)[0] != kPartFields)
		return false;
	const double *v = reinterpret_cast<const double *>(ARR_DATA_PTR(a));
	out.answer = v[kAnswer];
	out.variance = v[kVariance];
	out.lo = v[kLo];
	out.hi = v[kHi];
	out.kurtosis = v[kKurtosis];
	out.group = static_cast<int>(v[kGroup]);
	const uint64 high = static_cast<uint64>(static_cast<uint32>(v[kChargeHigh]));
	const uint64 low = static_cast<uint64>(static_cast<uint32>(v[kChargeLow]));
	out.charge_id = static_cast<int64>((high << 32) | low);
	return std::isfinite(out.answer) && out.variance >= 0 && out.kurtosis >= 0;
}

} // namespace

// See dispersion_part.h.
ArrayType *
dxpriv::pg::released_part_array(const LinearState *s, double answer)
{
	const uint64 id = static_cast<uint64>(s->charge_id);
	Datum v[kPartFields];
	v[kAnswer] = Float8GetDatum(answer);
	v[kVariance] = Float8GetDatum(s->part_variance);
	v[kChargeHigh] = Float8GetDatum(static_cast<double>(static_cast<uint32>(id >> 32)));
	v[kChargeLow] = Float8GetDatum(static_cast<double>(static_cast<uint32>(id & 0xffffffffu)));
	v[kGroup] = Float8GetDatum(static_cast<double>(s->group));
	v[kLo] = Float8GetDatum(s->lo);
	v[kHi] = Float8GetDatum(s->hi);
	v[kKurtosis] = Float8GetDatum(s->plan[0].family == NoiseFamily::Gaussian ? 0.0 : 3.0);
	ArrayType *out = nullptr;
	pg_call([&] { out = construct_array(v, kPartFields, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE); });
	return out;
}

// Final function of dx._noisy_part: the part's noisy sum (raw: the statistic post-processes) as
// {answer, noise variance, charge id high and low 32 bits, group, weight lo, weight hi, noise excess
// kurtosis (Gaussian 0; Laplace and truncated Laplace 3, an upper bound for the latter and for the
// mixtures of a consistent projection)}.
DX_FUNCTION(dx_linear_part_finalfn)
{
	LinearState *s = PG_ARGISNULL(0) ? state_for_group(CurrentMemoryContext, final_function_params(fcinfo), 0)
	                                 : reinterpret_cast<LinearState *>(PG_GETARG_POINTER(0));
	const double answer = release_linear_state(s, LinearRelease::Part);
	PG_RETURN_ARRAYTYPE_P(released_part_array(s, answer));
}

// dx._dispersion(kind, label, cx, cy, n, sx, sy, sxx, syy, sxy): the statistic from its released
// parts (NULL for an unneeded part), post-processed under dxpriv.postprocess, with its delta-method
// 95% half-width recorded for dx.last_release next to its count part. Pure post-processing.
DX_FUNCTION(dx_dispersion)
{
	const int32 raw_kind = PG_ARGISNULL(0) ? -1 : PG_GETARG_INT32(0);
	if (raw_kind < 0 || raw_kind >= kDispersionKinds)
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "invalid dispersion statistic",
		     "dx._dispersion is placed by dxpriv's analyzer; write stddev, variance, corr or regr_* instead.");
	const auto kind = static_cast<Dispersion>(raw_kind);
	const double cx = PG_ARGISNULL(2) ? 0 : PG_GETARG_FLOAT8(2), cy = PG_ARGISNULL(3) ? 0 : PG_GETARG_FLOAT8(3);
	DispersionParts parts{}, variances{}, kurtosis{};
	Part read[kParts];
	for (int p = 0; p < kParts; ++p) {
		if (!dispersion_needs(kind, p))
			continue;
		ArrayType *array = nullptr;
		if (!PG_ARGISNULL(4 + p))
			pg_call([&] { array = PG_GETARG_ARRAYTYPE_P(4 + p); });
		reject_stand_in(array, "a part of a dispersion statistic");
		if (!array || !read_part(array, read[p]))
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "invalid part of a dispersion statistic",
			     "dx._dispersion is placed by dxpriv's analyzer; write stddev, variance, corr or regr_* instead.");
		parts[p] = read[p].answer;
		variances[p] = read[p].variance;
		kurtosis[p] = read[p].kurtosis;
	}
	// the ranges of x and y on the declared domain: their centred sums' weight ranges, shifted back
	const double x_lo = read[kPartSx].lo + cx, x_hi = read[kPartSx].hi + cx;
	const double y_lo = read[kPartSy].lo + cy, y_hi = read[kPartSy].hi + cy;
	// the count's 95% half-width from its variance (normal approximation)
	const double count_half = 1.959963984540054 * std::sqrt(variances[kPartN]);
	DispersionAnswer answer;
	try {
		answer = dispersion_release(kind, parts, variances, kurtosis, cx, cy, x_lo, x_hi, y_lo, y_hi, count_half, guc_postprocess);
	} catch (const CoreError &) { // a non-finite part: no interval rather than a failed release
		answer.value = dispersion_value(kind, parts, cx, cy);
		answer.half_width = std::nan("");
	}
	std::string label;
	if (!PG_ARGISNULL(1))
		pg_call([&] { label = text_to_cstring(PG_GETARG_TEXT_PP(1)); });
	release_log_statistic(read[kPartN].charge_id, read[kPartN].group, raw_kind, dispersion_name(kind), label,
	                      answer.value, answer.half_width, answer.note);
	if (std::isnan(answer.value))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(answer.value);
}
