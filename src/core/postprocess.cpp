// Free post-processing of released answers (postprocess.h).
#include "core/postprocess.h"

#include <cmath>

namespace dxpriv {

// See postprocess.h.
double
clamp_nonnegative(double value, double weight_lo)
{
	if (!(weight_lo >= 0) || std::isnan(value))
		return value;
	return value < 0 ? 0.0 : value;
}

// See postprocess.h.
AverageVerdict
judge_average(double count, double count_half_width, double average_half_width, double lo, double hi)
{
	if (!std::isfinite(count) || !(count > count_half_width))
		return AverageVerdict::CountCoversZero;
	if (std::isfinite(average_half_width) && hi > lo && 2.0 * average_half_width >= hi - lo)
		return AverageVerdict::WiderThanRange;
	return AverageVerdict::None;
}

// See postprocess.h.
const char *
average_verdict_text(AverageVerdict v)
{
	switch (v) {
	case AverageVerdict::CountCoversZero:
		return "null: the count's 95% interval reaches 0";
	case AverageVerdict::WiderThanRange:
		return "null: the 95% interval is wider than the value range";
	case AverageVerdict::None:
		break;
	}
	return "";
}

} // namespace dxpriv
