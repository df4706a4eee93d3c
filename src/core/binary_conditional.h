// Wasserstein mechanism (MECHANISMS.md §6.7, Algorithm 4) on the seed's binary model (Example 2)
// for a table of n records: released column X_rel and protected column X_prot both 0/1, and
// p1 = P(X_rel = 1 | X_prot = 1), p2 = P(X_rel = 1 | X_prot = 0) with Theta = [p1_lo, p1_hi] x
// [p2_lo, p2_hi]. The secret is the protected count g = sum X_prot; the discriminative pairs are
// (g = a, g = b) with |a - b| <= window, 0 <= a, b <= n. Given g = a, F = sum X_rel ~
// Bin(a, p1) * Bin(n - a, p2), and W = sup over Theta and pairs of W_inf of the two laws.
//
// The supremum over Theta is taken on a declared grid that contains both ends of each range; a
// grid finer than the model's variation is the DBA's declaration (as in the seed, whose grid
// search confirms Example 2's suprema). Cost grows as grid points x n^2 x window: callers bound it
// with binary_conditional_work before computing.
#pragma once

#include <cstdint>
#include <vector>

namespace dxpriv {

struct BinaryConditionalModel {
	double p1_lo = 0, p1_hi = 1; // range of P(X_rel = 1 | X_prot = 1)
	double p2_lo = 0, p2_hi = 1; // range of P(X_rel = 1 | X_prot = 0)
	double step = 0.1;           // grid step (> 0) of both ranges
};

// Validates the model: 0 <= lo <= hi <= 1 for both ranges, step finite > 0, at most
// kMaxBinaryGridPoints points per range. CoreError(InvalidParameter) with a hint otherwise.
constexpr int kMaxBinaryGridPoints = 1001;
void validate_binary_conditional(const BinaryConditionalModel &model);

// The grid points of [lo, hi]: lo, lo + step, ... and hi itself (always included, once).
std::vector<double> grid_points(double lo, double hi, double step);

// The window of a secret diameter on the protected mean: floor(diameter * n) (+1e-9 tolerance),
// at most n. diameter finite >= 0, n >= 1.
int64_t secret_window(double diameter, int64_t records);

// The largest work a release computes (about 0.5 s on one core; see binary_conditional_work).
constexpr double kMaxBinaryConditionalWork = 1e8;

// An estimate of the number of floating-point steps of binary_conditional_sensitivity: grid
// points x (n + 1) x (n^2 / 4 + window x n), so callers can refuse models that are too large.
double binary_conditional_work(const BinaryConditionalModel &model, int64_t records, int64_t window);

// W (see above) for n = records >= 1 and 0 <= window <= n. CoreError(InvalidParameter) otherwise.
double binary_conditional_sensitivity(const BinaryConditionalModel &model, int64_t records, int64_t window);

} // namespace dxpriv
