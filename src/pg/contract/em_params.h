// The exponential-mechanism aggregate's parameters inside the shared NoiseParams layout
// (noise_params.h), so that charging (charge.cpp), charge ids and the answer cache treat it like
// the linear aggregates:
//   components = 1, groups = G, cells = (grid 1, scale 2 S_EM / epsilon) per group (the scale is
//   what the ledger records), epsilon = the aggregate's own epsilon (outside the linear allocation);
//   lo = beta numerator (beta = lo / 2^20 per unit of utility), or -1 for an infinite beta;
//   hi = K * 2^22 + code: K candidates (the column's domain points), code = 2^21 for mode, 2^21 + 1
//        for count_distinct, or the
//        quantile level's numerator p_num in [0, 2^20] (p = p_num / 2^20).
// Every value is an integer below 2^53, exact in float8.
#pragma once

#include "pg/guard.h"
#include "pg/contract/noise_params.h"

#include "core/domain.h"
#include "core/exponential_mechanism.h"

#include <cmath>

namespace dxpriv::pg {

struct EmParams {
	EmUtility utility;
	std::uint32_t candidates = 1;
	EmBeta beta;
};

namespace em_detail {
constexpr double kCandidateFactor = 4194304.0; // 2^22
constexpr double kModeCode = 2097152.0;        // 2^21
constexpr double kDistinctCode = 2097153.0;    // 2^21 + 1: count_distinct (EmKind::Distinct)
} // namespace em_detail

// Writes e into p.lo and p.hi.
inline void
encode_em_params(const EmParams &e, NoiseParams &p)
{
	p.lo = e.beta.infinite ? -1.0 : static_cast<double>(e.beta.num);
	p.hi = static_cast<double>(e.candidates) * em_detail::kCandidateFactor +
	       (e.utility.kind == EmKind::Mode       ? em_detail::kModeCode
	        : e.utility.kind == EmKind::Distinct ? em_detail::kDistinctCode
	                                             : static_cast<double>(e.utility.p_num));
}

// Reads and validates what encode_em_params wrote; fails with an internal error when malformed.
inline EmParams
decode_em_params(const NoiseParams &p)
{
	auto bad = [] { fail(ERRCODE_INTERNAL_ERROR, "malformed dxpriv exponential mechanism parameters"); };
	EmParams e;
	if (p.components != 1 || !(p.hi >= 0) || p.hi != std::floor(p.hi) || p.hi >= 9007199254740992.0)
		bad();
	if (p.lo == -1.0) {
		e.beta.infinite = true;
	} else {
		if (!(p.lo >= 0) || p.lo != std::floor(p.lo) || p.lo > static_cast<double>(kEmMaxBetaNum))
			bad();
		e.beta.num = static_cast<std::uint64_t>(p.lo);
	}
	const double k = std::floor(p.hi / em_detail::kCandidateFactor);
	const double code = p.hi - k * em_detail::kCandidateFactor;
	if (k < 1 || k > static_cast<double>(kMaxDomainSize))
		bad();
	e.candidates = static_cast<std::uint32_t>(k);
	if (code == em_detail::kModeCode) {
		e.utility.kind = EmKind::Mode;
	} else if (code == em_detail::kDistinctCode) {
		e.utility.kind = EmKind::Distinct;
	} else if (code <= static_cast<double>(kQuantileOne)) {
		e.utility.kind = EmKind::Quantile;
		e.utility.p_num = static_cast<std::uint32_t>(code);
	} else {
		bad();
	}
	return e;
}

} // namespace dxpriv::pg
