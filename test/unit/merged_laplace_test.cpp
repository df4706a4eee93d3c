// Deterministic tests of the merged Laplacian (MECHANISMS.md §5.8–5.9): the Laplace and
// one-breakpoint columns of the seed's Appendix C table for all 35 rows, the corrected two-breakpoint
// costs of the §5.9 erratum (and the printed, buggy column through an explicitly bug-compatible
// test-only density), closed forms against quadrature, the exact privacy loss, the property that no
// merged Laplacian beats Laplace at the same epsilon, the grid law's epsilon, and argument checks.
#include "core/merged_laplace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/random.h"
#include "core/samplers.h"
#include "test_support.h"

namespace dxpriv {
namespace {

using ::dxpriv::testing::expect_core_error;
using ::dxpriv::testing::two_decimals;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Composite 20-point Gauss–Legendre integral over [a, b] split at the cuts, 200 panels per piece.
template <typename Fn>
double integrate(Fn fn, double a, double b, std::vector<double> cuts = {})
{
	return ::dxpriv::testing::integrate_gauss20(fn, a, b, std::move(cuts), 200);
}

// BUG-COMPATIBLE, test-only: the three-band density of the reference code's merge_three
// (vaikkunth/DPMechanisms merged_laplacian.py), whose a_3 carries -c2/lambda3 instead of +c2/lambda3.
// Not a probability density (mass 0.59–0.78); used only to show that it is what the paper printed.
struct CodeFaithfulThreeBand {
	double mass, l1, l2;

	// Band coefficients as in the code, band integrals in closed form (the code integrates numerically).
	CodeFaithfulThreeBand(double e1, double e2, double e3, double c1, double c2)
	{
		const double l1_ = 1 / e1, l2_ = 1 / e2, l3_ = 1 / e3;
		const double b1 = l1_ * (1 - std::exp(-c1 / l1_));
		const double b2 = l2_ * (std::exp(-c1 / l1_) - std::exp(-c1 / l1_ - (c2 - c1) / l2_));
		const double b3 = l3_ * std::exp(-c1 / l1_ - (c2 - c1) / l2_);
		const double a1 = 1 / (2 * (b1 + b2 + b3));
		const double a2 = a1 * std::exp(c1 / l2_ - c1 / l1_);
		const double a3 = a1 * std::exp(-c2 / l3_ - c2 / l2_ + c1 / l2_ - c1 / l1_); // the bug
		const auto g0 = [](double l, double c) { return std::isinf(c) ? 0.0 : l * std::exp(-c / l); };
		const auto g1 = [](double l, double c) { return std::isinf(c) ? 0.0 : l * (c + l) * std::exp(-c / l); };
		const auto g2 = [](double l, double c) {
			return std::isinf(c) ? 0.0 : l * (c * c + 2 * l * c + 2 * l * l) * std::exp(-c / l);
		};
		const std::array<double, 3> a{a1, a2, a3}, l{l1_, l2_, l3_};
		const std::array<double, 4> c{0.0, c1, c2, kInf};
		mass = l1 = l2 = 0;
		for (int k = 0; k < 3; ++k) {
			mass += 2 * a[k] * (g0(l[k], c[k]) - g0(l[k], c[k + 1]));
			l1 += 2 * a[k] * (g1(l[k], c[k]) - g1(l[k], c[k + 1]));
			l2 += 2 * a[k] * (g2(l[k], c[k]) - g2(l[k], c[k + 1]));
		}
	}
};

// One row of the Appendix C table (§5.9).
struct AppendixCRow {
	int row;
	std::array<double, 3> printed_eps;
	std::array<int, 3> inverse_eps; // the exact budgets are 1/k
	std::array<double, 2> c;
	std::array<double, 3> printed_l1, printed_l2;       // (Laplace, 1 breakpoint, 2 breakpoints)
	std::array<double, 3> code_l1, code_l2;             // the spec's code-faithful recomputation
	double code_mass, corrected_l1, corrected_l2;       // mass of the buggy density; corrected costs
};

const std::vector<AppendixCRow> kAppendixC = {
    {1, {0.2, 0.25, 0.33}, {5, 4, 3}, {1, 3}, {3, 3.03, 1.12}, {18, 18.22, 3.94}, {3.0000, 3.0329, 1.1176}, {18.000, 18.219, 3.941}, 0.6504, 3.2152, 19.672},
    {2, {0.17, 0.25, 0.33}, {6, 4, 3}, {1, 3}, {3, 3.03, 1.12}, {18, 18.22, 3.96}, {3.0000, 3.0329, 1.1209}, {18.000, 18.219, 3.956}, 0.6489, 3.2273, 19.754},
    {3, {0.17, 0.2, 0.33}, {6, 5, 3}, {1, 3}, {3, 3.05, 1.13}, {18, 18.35, 4.07}, {3.0000, 3.0521, 1.1267}, {18.000, 18.347, 4.066}, 0.6337, 3.3242, 20.547},
    {4, {0.14, 0.25, 0.33}, {7, 4, 3}, {1, 3}, {3, 3.03, 1.12}, {18, 18.22, 3.97}, {3.0000, 3.0329, 1.1233}, {18.000, 18.219, 3.968}, 0.6479, 3.2359, 19.812},
    {5, {0.14, 0.2, 0.33}, {7, 5, 3}, {1, 3}, {3, 3.05, 1.13}, {18, 18.35, 4.08}, {3.0000, 3.0521, 1.1290}, {18.000, 18.347, 4.077}, 0.6327, 3.3326, 20.604},
    {6, {0.14, 0.17, 0.33}, {7, 6, 3}, {1, 3}, {3, 3.06, 1.13}, {18, 18.43, 4.15}, {3.0000, 3.0647, 1.1324}, {18.000, 18.431, 4.148}, 0.6226, 3.3966, 21.130},
    {7, {0.14, 0.17, 0.2}, {7, 6, 5}, {1, 3}, {5, 5.01, 1.96}, {50, 50.15, 16.26}, {5.0000, 5.0145, 1.9603}, {50.000, 50.154, 16.258}, 0.6063, 5.1103, 51.302},
    {8, {0.12, 0.25, 0.33}, {8, 4, 3}, {1, 3}, {3, 3.03, 1.13}, {18, 18.22, 3.98}, {3.0000, 3.0329, 1.1250}, {18.000, 18.219, 3.976}, 0.6471, 3.2423, 19.855},
    {9, {0.12, 0.2, 0.33}, {8, 5, 3}, {1, 3}, {3, 3.05, 1.13}, {18, 18.35, 4.08}, {3.0000, 3.0521, 1.1306}, {18.000, 18.347, 4.085}, 0.6320, 3.3388, 20.646},
    {10, {0.12, 0.17, 0.33}, {8, 6, 3}, {1, 3}, {3, 3.06, 1.13}, {18, 18.43, 4.16}, {3.0000, 3.0647, 1.1340}, {18.000, 18.431, 4.156}, 0.6219, 3.4027, 21.172},
    {11, {0.12, 0.17, 0.2}, {8, 6, 5}, {1, 3}, {5, 5.01, 1.96}, {50, 50.15, 16.28}, {5.0000, 5.0145, 1.9628}, {50.000, 50.154, 16.283}, 0.6057, 5.1176, 51.380},
    {12, {0.12, 0.14, 0.33}, {8, 7, 3}, {1, 3}, {3, 3.07, 1.14}, {18, 18.49, 4.21}, {3.0000, 3.0736, 1.1363}, {18.000, 18.490, 4.207}, 0.6147, 3.4481, 21.545},
    {13, {0.12, 0.14, 0.2}, {8, 7, 5}, {1, 3}, {5, 5.02, 1.98}, {50, 50.26, 16.5}, {5.0000, 5.0247, 1.9767}, {50.000, 50.263, 16.500}, 0.5999, 5.1777, 52.110},
    {14, {0.11, 0.25, 0.33}, {9, 4, 3}, {1, 3}, {3, 3.03, 1.13}, {18, 18.22, 3.98}, {3.0000, 3.0329, 1.1264}, {18.000, 18.219, 3.982}, 0.6465, 3.2472, 19.888},
    {15, {0.11, 0.2, 0.33}, {9, 5, 3}, {1, 3}, {3, 3.05, 1.13}, {18, 18.35, 4.09}, {3.0000, 3.0521, 1.1319}, {18.000, 18.347, 4.091}, 0.6314, 3.3436, 20.679},
    {16, {0.11, 0.17, 0.33}, {9, 6, 3}, {1, 3}, {3, 3.06, 1.14}, {18, 18.43, 4.16}, {3.0000, 3.0647, 1.1352}, {18.000, 18.431, 4.162}, 0.6213, 3.4074, 21.204},
    {17, {0.11, 0.17, 0.2}, {9, 6, 5}, {1, 3}, {5, 5.01, 1.96}, {50, 50.15, 16.3}, {5.0000, 5.0145, 1.9648}, {50.000, 50.154, 16.302}, 0.6052, 5.1233, 51.441},
    {18, {0.11, 0.14, 0.33}, {9, 7, 3}, {1, 3}, {3, 3.07, 1.14}, {18, 18.49, 4.21}, {3.0000, 3.0736, 1.1375}, {18.000, 18.490, 4.213}, 0.6141, 3.4527, 21.577},
    {19, {0.11, 0.14, 0.2}, {9, 7, 5}, {1, 3}, {5, 5.02, 1.98}, {50, 50.26, 16.52}, {5.0000, 5.0247, 1.9786}, {50.000, 50.263, 16.518}, 0.5994, 5.1832, 52.170},
    {20, {0.11, 0.12, 0.33}, {9, 8, 3}, {1, 3}, {3, 3.08, 1.14}, {18, 18.53, 4.25}, {3.0000, 3.0802, 1.1391}, {18.000, 18.534, 4.250}, 0.6088, 3.4865, 21.856},
    {21, {0.11, 0.12, 0.2}, {9, 8, 5}, {1, 3}, {5, 5.03, 1.99}, {50, 50.34, 16.68}, {5.0000, 5.0322, 1.9888}, {50.000, 50.344, 16.679}, 0.5951, 5.2277, 52.711},
    {22, {0.11, 0.12, 0.14}, {9, 8, 7}, {1, 3}, {7, 7.01, 3.28}, {98, 98.12, 42.57}, {7.0000, 7.0081, 3.2758}, {98.000, 98.118, 42.570}, 0.6210, 7.0663, 99.048},
    {23, {0.2, 0.25, 0.33}, {5, 4, 3}, {1, 5}, {3, 3.03, 1.61}, {18, 18.22, 5.17}, {3.0000, 3.0329, 1.6050}, {18.000, 18.219, 5.167}, 0.7754, 3.4016, 21.561},
    {24, {0.17, 0.25, 0.33}, {6, 4, 3}, {1, 5}, {3, 3.03, 1.61}, {18, 18.22, 5.19}, {3.0000, 3.0329, 1.6101}, {18.000, 18.219, 5.187}, 0.7745, 3.4139, 21.646},
    {25, {0.17, 0.2, 0.33}, {6, 5, 3}, {1, 5}, {3, 3.05, 1.63}, {18, 18.35, 5.4}, {3.0000, 3.0521, 1.6278}, {18.000, 18.347, 5.401}, 0.7495, 3.6316, 23.686},
    {26, {0.14, 0.25, 0.33}, {7, 4, 3}, {1, 5}, {3, 3.03, 1.61}, {18, 18.22, 5.2}, {3.0000, 3.0329, 1.6137}, {18.000, 18.219, 5.201}, 0.7739, 3.4225, 21.706},
    {27, {0.14, 0.2, 0.33}, {7, 5, 3}, {1, 5}, {3, 3.05, 1.63}, {18, 18.35, 5.41}, {3.0000, 3.0521, 1.6311}, {18.000, 18.347, 5.414}, 0.7489, 3.6401, 23.746},
    {28, {0.14, 0.17, 0.33}, {7, 6, 3}, {1, 5}, {3, 3.06, 1.64}, {18, 18.43, 5.55}, {3.0000, 3.0647, 1.6403}, {18.000, 18.431, 5.550}, 0.7316, 3.7872, 25.140},
    {29, {0.14, 0.17, 0.2}, {7, 6, 5}, {1, 5}, {5, 5.01, 1.85}, {50, 50.15, 10.69}, {5.0000, 5.0145, 1.8461}, {50.000, 50.154, 10.689}, 0.6617, 5.2290, 52.974},
    {30, {0.12, 0.25, 0.33}, {8, 4, 3}, {1, 5}, {3, 3.03, 1.62}, {18, 18.22, 5.21}, {3.0000, 3.0329, 1.6164}, {18.000, 18.219, 5.212}, 0.7734, 3.4290, 21.751},
    {31, {0.12, 0.2, 0.33}, {8, 5, 3}, {1, 5}, {3, 3.05, 1.63}, {18, 18.35, 5.42}, {3.0000, 3.0521, 1.6335}, {18.000, 18.347, 5.424}, 0.7484, 3.6463, 23.791},
    {32, {0.12, 0.17, 0.33}, {8, 6, 3}, {1, 5}, {3, 3.06, 1.64}, {18, 18.43, 5.56}, {3.0000, 3.0647, 1.6427}, {18.000, 18.431, 5.560}, 0.7312, 3.7933, 25.185},
    {33, {0.12, 0.17, 0.2}, {8, 6, 5}, {1, 5}, {5, 5.01, 1.85}, {50, 50.15, 10.7}, {5.0000, 5.0145, 1.8484}, {50.000, 50.154, 10.704}, 0.6612, 5.2363, 53.053},
    {34, {0.12, 0.14, 0.33}, {8, 7, 3}, {1, 5}, {3, 3.07, 1.65}, {18, 18.49, 5.65}, {3.0000, 3.0736, 1.6480}, {18.000, 18.490, 5.653}, 0.7186, 3.8989, 26.193},
    {35, {0.12, 0.14, 0.2}, {8, 7, 5}, {1, 5}, {5, 5.02, 1.86}, {50, 50.26, 10.98}, {5.0000, 5.0247, 1.8609}, {50.000, 50.263, 10.983}, 0.6480, 5.3810, 54.984},
};

TEST(MergedLaplaceAppendixC, LaplaceAndOneBreakpointColumnsOfEveryRow)
{
	ASSERT_EQ(35u, kAppendixC.size());
	for (const AppendixCRow &r : kAppendixC) {
		SCOPED_TRACE("Appendix C row " + std::to_string(r.row));
		const double e2 = 1.0 / r.inverse_eps[1], e3 = 1.0 / r.inverse_eps[2];
		// The printed budgets are 1/k to two decimals (1/8 = 0.125 printed as 0.12: half-to-even).
		for (int k = 0; k < 3; ++k)
			EXPECT_LE(std::fabs(r.printed_eps[k] - 1.0 / r.inverse_eps[k]), 0.005 + 1e-12);
		const MergedLaplace laplace(1.0, {e3}, {});
		const MergedLaplace one(1.0, {e2, e3}, {r.c[0]});
		const std::array<const MergedLaplace *, 2> laws{&laplace, &one};
		for (int k = 0; k < 2; ++k) {
			SCOPED_TRACE(k == 0 ? "Laplace column" : "one-breakpoint column");
			const double l1 = laws[k]->mean_abs(), l2 = laws[k]->second_moment();
			EXPECT_EQ(two_decimals(r.printed_l1[k]), two_decimals(l1)) << l1;
			EXPECT_EQ(two_decimals(r.printed_l2[k]), two_decimals(l2)) << l2;
			EXPECT_NEAR(r.code_l1[k], l1, 5e-5);
			EXPECT_NEAR(r.code_l2[k], l2, 5e-4);
		}
		// The Laplace column in closed form.
		EXPECT_NEAR(1 / e3, laplace.mean_abs(), 1e-13);
		EXPECT_NEAR(2 / (e3 * e3), laplace.second_moment(), 1e-12);
	}
	// The exact budgets matter: with the printed 0.33 the Laplace column would read 3.03, not 3.
	EXPECT_EQ(303, two_decimals(MergedLaplace(1.0, {0.33}, {}).mean_abs()));
}

TEST(MergedLaplaceAppendixC, CorrectedTwoBreakpointCostsOfEveryRow)
{
	for (const AppendixCRow &r : kAppendixC) {
		SCOPED_TRACE("Appendix C row " + std::to_string(r.row));
		const double e1 = 1.0 / r.inverse_eps[0], e2 = 1.0 / r.inverse_eps[1], e3 = 1.0 / r.inverse_eps[2];
		const MergedLaplace two(1.0, {e1, e2, e3}, {r.c[0], r.c[1]});
		EXPECT_NEAR(r.corrected_l1, two.mean_abs(), 5e-5);
		EXPECT_NEAR(r.corrected_l2, two.second_moment(), 5e-4);
		// A valid epsilon_3-DP density: never cheaper than Laplace(1/epsilon_3).
		EXPECT_GT(two.mean_abs(), 1 / e3);
		EXPECT_GT(two.second_moment(), 2 / (e3 * e3));
		EXPECT_NEAR(e3, two.privacy_epsilon(), 1e-12);
	}
}

TEST(MergedLaplaceAppendixC, PrintedTwoBreakpointColumnOnlyThroughTheBugCompatibleDensity)
{
	for (const AppendixCRow &r : kAppendixC) {
		SCOPED_TRACE("Appendix C row " + std::to_string(r.row));
		const double e1 = 1.0 / r.inverse_eps[0], e2 = 1.0 / r.inverse_eps[1], e3 = 1.0 / r.inverse_eps[2];
		const CodeFaithfulThreeBand buggy(e1, e2, e3, r.c[0], r.c[1]);
		EXPECT_EQ(two_decimals(r.printed_l1[2]), two_decimals(buggy.l1)) << buggy.l1;
		EXPECT_EQ(two_decimals(r.printed_l2[2]), two_decimals(buggy.l2)) << buggy.l2;
		EXPECT_NEAR(r.code_l1[2], buggy.l1, 5e-5);
		EXPECT_NEAR(r.code_l2[2], buggy.l2, 5e-4);
		EXPECT_NEAR(r.code_mass, buggy.mass, 5e-5);
		// Not a density, and its apparent costs undercut Laplace: exactly what the property test below
		// rejects for every valid merged Laplacian.
		EXPECT_LT(buggy.mass, 0.8);
		EXPECT_LT(buggy.l1, 1 / e3);
		EXPECT_LT(buggy.l2, 2 / (e3 * e3));
		const MergedLaplace corrected(1.0, {e1, e2, e3}, {r.c[0], r.c[1]});
		EXPECT_GT(two_decimals(corrected.mean_abs()), two_decimals(buggy.l1));
	}
}

TEST(MergedLaplace, ClosedFormsOfSection58)
{
	// K = 2 (code): a_1 = 1 / (2 (lambda_1 + (lambda_2 - lambda_1) e^{-c_1/lambda_1})), a_2 = a_1 e^{c_1/lambda_2 - c_1/lambda_1}.
	{
		const double l1 = 4, l2 = 3, c1 = 1;
		const MergedLaplace law(1.0, {1 / l1, 1 / l2}, {c1});
		const double a1 = 1 / (2 * (l1 + (l2 - l1) * std::exp(-c1 / l1)));
		EXPECT_NEAR(a1, law.band_coefficient(0), 1e-15);
		EXPECT_NEAR(a1 * std::exp(c1 / l2 - c1 / l1), law.band_coefficient(1), 1e-15);
	}
	// K = 3 with the corrected a_3.
	for (const std::array<double, 5> &p : {std::array<double, 5>{5, 4, 3, 1, 3}, std::array<double, 5>{0.5, 8, 2, 0.2, 7},
	                                       std::array<double, 5>{2, 2, 2, 1, 2}}) {
		const double l1 = p[0], l2 = p[1], l3 = p[2], c1 = p[3], c2 = p[4];
		const MergedLaplace law(2.0, {2 / l1, 2 / l2, 2 / l3}, {c1, c2});
		const double b1 = l1 * (1 - std::exp(-c1 / l1));
		const double b2 = l2 * (std::exp(-c1 / l1) - std::exp(-c1 / l1 - (c2 - c1) / l2));
		const double b3 = l3 * std::exp(-c1 / l1 - (c2 - c1) / l2);
		const double a1 = 1 / (2 * (b1 + b2 + b3));
		EXPECT_NEAR(a1, law.band_coefficient(0), 1e-15);
		EXPECT_NEAR(a1 * std::exp(c1 / l2 - c1 / l1), law.band_coefficient(1), 1e-15);
		EXPECT_NEAR(a1 * std::exp(c1 / l2 - c1 / l1 + c2 / l3 - c2 / l2), law.band_coefficient(2), 1e-14);
		// Continuity at both breakpoints, and the band form of the density.
		for (double c : {c1, c2})
			EXPECT_NEAR(law.density(std::nextafter(c, 0.0)), law.density(c), 1e-14);
		EXPECT_NEAR(law.band_coefficient(1) * std::exp(-(c1 + c2) / 2 / l2), law.density(-(c1 + c2) / 2), 1e-15);
	}
}

TEST(MergedLaplace, CostsAndLawMatchQuadrature)
{
	struct Case {
		double sensitivity;
		std::vector<double> eps, c;
	};
	for (const Case &k : {Case{1.0, {0.2, 0.25, 1.0 / 3}, {1, 3}}, Case{2.5, {1.0, 0.2}, {0.3}},
	                      Case{1.0, {3.0, 0.1, 0.7}, {0.05, 12}}, Case{0.5, {0.4}, {}}}) {
		const MergedLaplace law(k.sensitivity, k.eps, k.c);
		const double far = (k.c.empty() ? 0.0 : k.c.back()) + 80 * k.sensitivity / *std::min_element(k.eps.begin(), k.eps.end());
		std::vector<double> cuts{0.0};
		for (double c : k.c) {
			cuts.push_back(c);
			cuts.push_back(-c);
		}
		const auto moment = [&](auto weight) {
			return integrate([&](double x) { return weight(x) * law.density(x); }, -far, far, cuts);
		};
		EXPECT_NEAR(1.0, moment([](double) { return 1.0; }), 1e-12);
		EXPECT_NEAR(law.mean_abs(), moment([](double x) { return std::fabs(x); }), 1e-10 * law.mean_abs());
		EXPECT_NEAR(law.second_moment(), moment([](double x) { return x * x; }), 1e-10 * law.second_moment());
		double total = 0;
		for (std::size_t b = 0; b < law.bands(); ++b)
			total += law.band_probability(b);
		EXPECT_NEAR(1.0, total, 1e-14);
		for (double x : {-7.0, -1.0, -0.01, 0.0, 0.2, 2.0, 3.5, 40.0}) {
			const double lower = integrate([&](double y) { return law.density(y); }, -far, x, cuts);
			EXPECT_NEAR(lower, law.cdf(x), 1e-12) << x;
			EXPECT_NEAR(1.0, law.cdf(x) + law.survival(x), 1e-15) << x;
		}
		EXPECT_DOUBLE_EQ(0.5, law.cdf(0.0));
	}
}

TEST(MergedLaplacePrivacy, ExactEpsilonMatchesBruteForce)
{
	struct Case {
		double sensitivity;
		std::vector<double> eps, c;
		double expected; // by hand
	};
	// Steep outer band: max epsilon. Steep inner band narrower than the sensitivity: 0.3*1 + 0.7*0.2.
	// Steep middle band of width 0.5 < 1: 0.5*2 + 0.5*0.5. Steep middle band wider than the
	// sensitivity 2: 2 * 1.2/2.
	for (const Case &k : {Case{1.0, {0.2, 0.25, 1.0 / 3}, {1, 3}, 1.0 / 3}, Case{1.0, {1.0, 0.2}, {0.3}, 0.44},
	                      Case{1.0, {0.5, 2.0, 0.5}, {1, 1.5}, 1.25}, Case{2.0, {0.3, 1.2, 0.6}, {0.5, 4}, 1.2}}) {
		const MergedLaplace law(k.sensitivity, k.eps, k.c);
		EXPECT_NEAR(k.expected, law.privacy_epsilon(), 1e-12);
		EXPECT_LE(law.privacy_epsilon(), law.max_epsilon() + 1e-15);
		// Brute force: sup over x in a fine grid and shifts |s| <= sensitivity of |ln f(x) - ln f(x+s)|.
		double worst = 0;
		const double span = (k.c.empty() ? 0.0 : k.c.back()) + 3 * k.sensitivity;
		for (double x = -span; x <= span; x += 1e-3) {
			for (int j = 1; j <= 20; ++j) {
				const double s = k.sensitivity * j / 20;
				worst = std::max(worst, std::fabs(law.log_density(x) - law.log_density(x + s)));
			}
		}
		EXPECT_LE(worst, law.privacy_epsilon() + 1e-12);
		EXPECT_GT(worst, law.privacy_epsilon() - 3e-3);
	}
}

TEST(MergedLaplaceProperty, NoMergedLaplacianBeatsLaplaceAtTheSameEpsilon)
{
	const std::vector<double> budgets{0.05, 0.2, 0.5, 1.0, 3.0};
	const std::vector<double> points{0.05, 0.5, 1.0, 4.0, 20.0};
	int checked = 0, strictly_worse = 0;
	for (double sensitivity : {1.0, 2.5}) {
		const auto check = [&](const std::vector<double> &eps, const std::vector<double> &c) {
			const MergedLaplace law(sensitivity, eps, c);
			const double b = sensitivity / law.max_epsilon(); // Laplace at the same epsilon
			EXPECT_GE(law.mean_abs(), b * (1 - 1e-12)) << checked;
			EXPECT_GE(law.second_moment(), 2 * b * b * (1 - 1e-12)) << checked;
			strictly_worse += law.mean_abs() > b * (1 + 1e-9) ? 1 : 0;
			++checked;
		};
		for (double e1 : budgets) {
			check({e1}, {});
			for (double e2 : budgets) {
				for (double c1 : points)
					check({e1, e2}, {c1});
				for (double e3 : budgets) {
					for (std::size_t i = 0; i < points.size(); ++i)
						for (std::size_t j = i + 1; j < points.size(); ++j)
							check({e1, e2, e3}, {points[i], points[j]});
				}
			}
		}
	}
	EXPECT_EQ(2 * (5 + 25 * 5 + 125 * 10), checked);
	EXPECT_GT(strictly_worse, checked / 2);
}

TEST(MergedLaplaceGrid, GridEpsilon)
{
	// Appendix C row 1 on a fine grid: the rounded-up scales only lower the epsilon.
	const MergedLaplace law(1.0, {0.2, 0.25, 1.0 / 3}, {1, 3});
	const double fine = merged_laplace_grid_epsilon(law, std::ldexp(1.0, -20));
	EXPECT_LE(fine, law.max_epsilon());
	EXPECT_GT(fine, law.max_epsilon() * (1 - 1e-6));
	// Coarse grid 1/4: t = (20, 16, 12) steps exactly, breakpoints (4, 12); k = 4 steps of the outer band.
	EXPECT_NEAR(4.0 / 12.0, merged_laplace_grid_epsilon(law, 0.25), 1e-15);
	// Steep inner band narrower than the sensitivity: slopes (1/4, 1/20) per step of 1/4, breakpoint
	// round(0.3 * 4) = 1, window of 4 steps: 1/4 + 3/20 = 0.4 (the continuous law has 0.44).
	const MergedLaplace narrow(1.0, {1.0, 0.2}, {0.3});
	EXPECT_NEAR(0.4, merged_laplace_grid_epsilon(narrow, 0.25), 1e-15);
	// A sensitivity that is not a multiple of the grid costs a whole extra step.
	EXPECT_NEAR(1.5, merged_laplace_grid_epsilon(MergedLaplace(1.1, {1.1}, {}), 0.5), 1e-12); // 3 steps of 1/2
}

TEST(MergedLaplaceGrid, SamplesAreOnTheGridAndReproducible)
{
	const MergedLaplace law(1.0, {0.2, 0.25, 1.0 / 3}, {1, 3});
	const double grid = std::ldexp(1.0, -12);
	SeededRandom a(9), b(9);
	for (int i = 0; i < 2000; ++i) {
		const double x = merged_laplace_on_grid(a, law, grid);
		ASSERT_EQ(std::trunc(x / grid), x / grid) << x;
		ASSERT_EQ(x, merged_laplace_on_grid(b, law, grid));
	}
}

TEST(MergedLaplaceErrors, RejectsBadInputs)
{
	for (double bad : {0.0, -1.0, kNaN, kInf}) {
		expect_core_error(ErrorKind::InvalidParameter, [&] { MergedLaplace(bad, {1.0}, {}); });
		expect_core_error(ErrorKind::InvalidParameter, [&] { MergedLaplace(1.0, {1.0, bad}, {1.0}); });
		expect_core_error(ErrorKind::InvalidParameter, [&] { MergedLaplace(1.0, {1.0, 2.0}, {bad}); });
	}
	expect_core_error(ErrorKind::InvalidParameter, [] { MergedLaplace(1.0, {}, {}); });
	expect_core_error(ErrorKind::InvalidParameter, [] { MergedLaplace(1.0, {1.0, 2.0}, {}); });
	expect_core_error(ErrorKind::InvalidParameter, [] { MergedLaplace(1.0, {1.0}, {1.0}); });
	expect_core_error(ErrorKind::InvalidParameter, [] { MergedLaplace(1.0, {1.0, 2.0, 3.0}, {2.0, 2.0}); });
	expect_core_error(ErrorKind::InvalidParameter, [] { MergedLaplace(1.0, {1.0, 2.0, 3.0}, {3.0, 2.0}); });
	expect_core_error(ErrorKind::InvalidParameter, [] { MergedLaplace(1.0, {1.0, 2.0}, {1.0}).breakpoint(0); });
	expect_core_error(ErrorKind::InvalidParameter, [] { MergedLaplace(1.0, {1.0, 2.0}, {1.0}).breakpoint(2); });
	SeededRandom rng(1);
	const MergedLaplace law(1.0, {0.5, 1.0}, {2.0});
	for (double bad : {0.0, -0.25, 0.3, kNaN, kInf}) {
		expect_core_error(ErrorKind::InvalidParameter, [&] { merged_laplace_on_grid(rng, law, bad); });
		expect_core_error(ErrorKind::InvalidParameter, [&] { merged_laplace_grid_epsilon(law, bad); });
	}
	expect_core_error(ErrorKind::ProgramLimit, [&] { merged_laplace_on_grid(rng, law, std::ldexp(1.0, -50)); });
	expect_core_error(ErrorKind::ProgramLimit,
	                  [&] { merged_laplace_on_grid(rng, MergedLaplace(1.0, {1.0, 1.0}, {1e30}), 1.0); });
}

} // namespace
} // namespace dxpriv
