// Wasserstein mechanism on the binary conditional model (MECHANISMS.md §6.7, Example 2): the seed's
// W = 1, 2, 4 for Theta = [.4,.6]^2, [.3,.7]^2, [0,1]^2 at n = 4 with every pair of secrets, the
// window of secrets, the grid (ends included) and bad input.
#include "core/binary_conditional.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "core/wasserstein.h"
#include "test_support.h"

namespace dxpriv {
namespace {

using ::dxpriv::testing::expect_core_error;

BinaryConditionalModel square(double lo, double hi, double step)
{
	return {lo, hi, lo, hi, step};
}

TEST(BinaryConditional, Example2)
{
	// diameter 1 on the mean of X_2 at n = 4: every pair of secrets g = a, b in 0..4
	const int64_t window = secret_window(1.0, 4);
	EXPECT_EQ(4, window);
	EXPECT_DOUBLE_EQ(1.0, binary_conditional_sensitivity(square(0.4, 0.6, 0.01), 4, window));
	EXPECT_DOUBLE_EQ(2.0, binary_conditional_sensitivity(square(0.3, 0.7, 0.01), 4, window));
	EXPECT_DOUBLE_EQ(4.0, binary_conditional_sensitivity(square(0.0, 1.0, 0.01), 4, window));
	// a coarse grid still contains the range ends, where the suprema are
	EXPECT_DOUBLE_EQ(1.0, binary_conditional_sensitivity(square(0.4, 0.6, 0.15), 4, window));
	EXPECT_DOUBLE_EQ(4.0, binary_conditional_sensitivity(square(0.0, 1.0, 0.3), 4, window));
}

TEST(BinaryConditional, AgreesWithTheGeneralComputation)
{
	// the worst model of Example 2 computed by wasserstein_sensitivity over all pairs
	std::vector<IntegerPmf> laws;
	for (int a = 0; a <= 4; ++a)
		laws.push_back(convolve(binomial_pmf(a, 0.3), binomial_pmf(4 - a, 0.7)));
	EXPECT_DOUBLE_EQ(wasserstein_sensitivity({laws}), binary_conditional_sensitivity({0.3, 0.3, 0.7, 0.7, 0.1}, 4, 4));
}

TEST(BinaryConditional, WindowLimitsThePairs)
{
	// Theta = [0, 1]^2: W equals the window (p1 = 1, p2 = 0 makes F = g); a smaller secret is cheaper
	for (int64_t w = 0; w <= 6; ++w)
		EXPECT_DOUBLE_EQ(static_cast<double>(w), binary_conditional_sensitivity(square(0, 1, 0.25), 6, w));
	EXPECT_EQ(2, secret_window(0.2, 10));
	EXPECT_EQ(3, secret_window(0.3, 10)); // 0.3 * 10 is 2.9999999999999996 in binary
	EXPECT_EQ(10, secret_window(5.0, 10));
	EXPECT_EQ(0, secret_window(0.0, 10));
	// W never exceeds the window (each changed record moves F by at most 1)
	EXPECT_LE(binary_conditional_sensitivity(square(0.2, 0.9, 0.1), 8, 3), 3.0);
}

TEST(BinaryConditional, GridContainsBothEnds)
{
	const std::vector<double> g = grid_points(0.3, 0.7, 0.15);
	ASSERT_EQ(4u, g.size());
	EXPECT_DOUBLE_EQ(0.3, g.front());
	EXPECT_DOUBLE_EQ(0.7, g.back());
	EXPECT_EQ(1u, grid_points(0.5, 0.5, 0.1).size());
	EXPECT_EQ(11u, grid_points(0, 1, 0.1).size());
}

TEST(BinaryConditional, WorkEstimateGrowsWithTheModel)
{
	const double small = binary_conditional_work(square(0.4, 0.6, 0.1), 4, 4);
	EXPECT_GT(binary_conditional_work(square(0.4, 0.6, 0.01), 4, 4), small);
	EXPECT_GT(binary_conditional_work(square(0.4, 0.6, 0.1), 400, 4), 1000 * small);
}

TEST(BinaryConditional, BadInput)
{
	expect_core_error(ErrorKind::InvalidParameter, [] { validate_binary_conditional({0.6, 0.4, 0, 1, 0.1}); });
	expect_core_error(ErrorKind::InvalidParameter, [] { validate_binary_conditional({0, 1, -0.1, 1, 0.1}); });
	expect_core_error(ErrorKind::InvalidParameter, [] { validate_binary_conditional({0, 1, 0, 1.5, 0.1}); });
	expect_core_error(ErrorKind::InvalidParameter, [] { validate_binary_conditional({0, 1, 0, 1, 0}); });
	expect_core_error(ErrorKind::InvalidParameter, [] { validate_binary_conditional({0, 1, 0, 1, 1e-5}); });
	expect_core_error(ErrorKind::InvalidParameter, [] { validate_binary_conditional({0, 1, 0, 1, NAN}); });
	expect_core_error(ErrorKind::InvalidParameter, [] { binary_conditional_sensitivity(square(0, 1, 0.1), 4, 5); });
	expect_core_error(ErrorKind::InvalidParameter, [] { binary_conditional_sensitivity(square(0, 1, 0.1), 0, 0); });
	expect_core_error(ErrorKind::InvalidParameter, [] { secret_window(-1, 4); });
}

} // namespace
} // namespace dxpriv

namespace dxpriv {
namespace {

// Theorem 5 by brute force on the binary model at n = 6 with secrets at most 2 apart: the output
// density given g = a, sum_F P(F | a) Lap(w - F; W / eps), stays within e^eps of the one given
// g = b for every grid model, every pair |a - b| <= 2 and every w on a fine grid; with half the
// scale the bound fails somewhere (the check can fail).
double worst_log_ratio(const BinaryConditionalModel &m, int n, int window, double scale)
{
	double worst = 0;
	for (double p1 : grid_points(m.p1_lo, m.p1_hi, m.step))
		for (double p2 : grid_points(m.p2_lo, m.p2_hi, m.step)) {
			std::vector<IntegerPmf> laws;
			for (int a = 0; a <= n; ++a)
				laws.push_back(convolve(binomial_pmf(a, p1), binomial_pmf(n - a, p2)));
			for (int a = 0; a <= n; ++a)
				for (int b = 0; b <= n; ++b) {
					if (std::abs(a - b) > window)
						continue;
					for (double w = -8; w <= n + 8; w += 0.05) {
						double da = 0, db = 0;
						for (int f = 0; f <= n; ++f) {
							const double k = std::exp(-std::abs(w - f) / scale);
							da += laws[static_cast<size_t>(a)][static_cast<size_t>(f)] * k;
							db += laws[static_cast<size_t>(b)][static_cast<size_t>(f)] * k;
						}
						worst = std::max(worst, std::log(da / db));
					}
				}
		}
	return worst;
}

TEST(BinaryConditional, Theorem5ByBruteForce)
{
	const double eps = 0.5;
	const BinaryConditionalModel m{0.2, 0.7, 0.3, 0.6, 0.1};
	const double w = binary_conditional_sensitivity(m, 6, 2);
	ASSERT_GT(w, 0.0);
	EXPECT_LE(worst_log_ratio(m, 6, 2, w / eps), eps + 1e-9);
	EXPECT_GT(worst_log_ratio(m, 6, 2, w / eps / 2), eps);
}

} // namespace
} // namespace dxpriv
