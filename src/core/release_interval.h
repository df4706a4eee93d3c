// Error bars of released answers (dx.last_release): the 95% interval of an average released as a
// noisy sum over a noisy count, by the delta method, and a plain-DP baseline that depends only on
// what a query computes, not on which columns its text mentions.
#pragma once

#include <vector>

#include "core/linear_query.h"
#include "core/sensitivity.h"

namespace dxpriv {

// Half-width h of an approximate `confidence` interval for an average A = S / C released from a
// noisy sum S (noise law `sum`) and a noisy count C (noise law `count`), given the released average
// and the released count (post-processing: nothing else is used). Delta method: A - a ≈
// (Z_S - A·Z_C) / C with Z_S, Z_C the two independent noises, so h = w / max(C, 1) where w is the
// `confidence` half-width of X = Z_S + |A|·Z_C, computed for the continuous laws of the families:
// Laplace: exact tail of the sum of two Laplace variables (scales b1, b2: P(X > x) =
// (b1² e^{-x/b1} - b2² e^{-x/b2}) / (2 (b1² - b2²)), and e^{-x/b}(2 + x/b)/4 when b1 = b2);
// Gaussian: normal of variance σ1² + σ2²; TruncatedLaplace: the Laplace value capped at the sum of
// the bounds (the noise never exceeds it). When one of the two noises is zero, w is the exact
// half-width of the other (confidence_half_width). The approximation ignores the curvature of
// S / C (small when C is large against its noise) and the clamping of A to the value range.
// Throws CoreError(InvalidParameter) for non-finite inputs or confidence outside (0, 1).
double average_half_width(const LinearNoisePlan &sum, const LinearNoisePlan &count, double average,
                          double count_answer, double confidence = 0.95);

// The sub-universe and cells restricted to the columns some cell depends on: a column is dropped
// when, along every line of that column, every cell takes the same value at every point. The
// projected cells keep the row-major order of sensitivity.h. The result defines the same function
// of a record, so any quantity defined over all pairs of records is unchanged.
struct ProjectedCells {
	SubUniverse sub;
	std::vector<std::vector<double>> q;
	std::vector<std::size_t> kept; // indexes of the kept columns in the original sub
};
ProjectedCells project_to_relevant_columns(const SubUniverse &sub, const std::vector<std::vector<double>> &q);

} // namespace dxpriv
