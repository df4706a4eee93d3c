// Confidence half-widths of the noise added by a LinearNoisePlan.
#include "core/accuracy.h"

#include <cmath>

#include "core/error.h"

namespace dxpriv {

// See accuracy.h.
double
confidence_half_width(const LinearNoisePlan &plan, double confidence)
{
	if (!(confidence > 0 && confidence < 1))
		throw CoreError(ErrorKind::InvalidParameter, "confidence must lie strictly between 0 and 1");
	if (plan.scale == 0)
		return 0;
	const double t = plan.scale / plan.grid;
	const double log_a = -1.0 / t; // ln a
	const double a = std::exp(log_a);
	const double miss = 1 - confidence;
	// P(|Z| >= k + 1) = 2 a^(k+1) / (1 + a) <= miss  <=>  k + 1 >= ln(miss (1 + a) / 2) / ln a
	const double k = std::ceil(std::log(miss * (1 + a) / 2) / log_a - 1e-12) - 1;
	return std::fmax(k, 0.0) * plan.grid;
}

} // namespace dxpriv
