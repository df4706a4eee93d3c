// Free post-processing of released answers (no privacy cost): non-negative counts and sums, and
// the verdict on an average whose count is too noisy to divide by.
#pragma once

namespace dxpriv {

// A released value of a cell whose weight is non-negative at every declared point (a count, the
// sum of a non-negative column) clamped at 0: the true value is never negative, so max(v, 0) is
// never farther from it than v. Other cells (weight_lo < 0) are returned unchanged. NaN stays NaN.
double clamp_nonnegative(double value, double weight_lo);

// Why an average is withheld (released as NULL), or None.
enum class AverageVerdict {
	None,          // the average is released
	CountCoversZero, // the count's 95% interval reaches 0: the division has no meaningful scale
	WiderThanRange,  // the average's 95% interval is at least as wide as the range [lo, hi]
};

// The verdict on an average released from noisy parts: count and count_half_width (the noisy count
// and its 95% half-width), average_half_width (the delta-method 95% half-width of the average, NaN
// when unknown) and the value range [lo, hi] its answer is clamped to. Uses released values only.
AverageVerdict judge_average(double count, double count_half_width, double average_half_width, double lo, double hi);

// Short text of a verdict for dx.last_release ("" for None).
const char *average_verdict_text(AverageVerdict v);

} // namespace dxpriv
