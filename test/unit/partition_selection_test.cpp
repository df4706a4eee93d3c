// Partition selection: the optimal recurrence, its closed form, the (eps, delta) inequalities on
// the probabilities the samplers actually use, the thresholded Laplace, and per-partition budgets.
#include "core/partition_selection.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "test_support.h"

namespace dxpriv {
namespace {

using ::dxpriv::testing::expect_core_error;

const std::vector<std::pair<double, double>> kBudgets = {
    {1.0, 1e-5}, {0.1, 1e-6}, {0.5, 1e-9}, {2.0, 1e-3}, {0.05, 1e-10}, {5.0, 0.2}, {1.0, 1e-12}};

// Both directions of (eps, delta) between n-1 and n, for keep and drop.
void
expect_private(const PartitionSelector &s, double eps, double delta)
{
	const long double e = std::exp(static_cast<long double>(eps));
	for (std::uint64_t n = 1; n <= s.threshold() + 5; ++n) {
		const long double a = s.keep_probability(n - 1), b = s.keep_probability(n);
		ASSERT_LE(a, b) << "monotone at n=" << n;
		EXPECT_LE(b, e * a + delta) << s.describe() << " keep, n=" << n;
		EXPECT_LE(a, e * b + delta) << s.describe() << " keep back, n=" << n;
		EXPECT_LE(1 - a, e * (1 - b) + delta) << s.describe() << " drop, n=" << n;
		EXPECT_LE(1 - b, e * (1 - a) + delta) << s.describe() << " drop back, n=" << n;
	}
}

TEST(PartitionSelection, RecurrenceMatchesTheClosedFormUpToTheCrossover)
{
	for (auto [eps, delta] : kBudgets) {
		for (std::uint64_t n = 1; n < 200; ++n) {
			const double closed = delta * std::expm1(n * eps) / std::expm1(eps);
			const double prev = optimal_keep_probability_reference(eps, delta, n - 1);
			// the first branch of the min is active while e^eps pi(n-1) + delta <= the second
			if (std::exp(eps) * prev + delta > 1.0 - std::exp(-eps) * (1.0 - prev - delta))
				break;
			EXPECT_NEAR(optimal_keep_probability_reference(eps, delta, n), closed, 1e-12 * std::max(1.0, closed))
			    << eps << " " << delta << " n=" << n;
		}
	}
}

TEST(PartitionSelection, OneContributorIsKeptWithProbabilityDelta)
{
	for (auto [eps, delta] : kBudgets) {
		PartitionSelector s(SelectionMechanism::Optimal, eps, delta);
		EXPECT_LE(s.keep_probability(1), delta);
		const double reserve = (std::exp(eps) + 1) * std::ldexp(1.0, -50); // partition_selection.cpp
		EXPECT_GE(s.keep_probability(1), delta - 2 * reserve) << "the reserve costs almost nothing";
		PartitionSelector l(SelectionMechanism::Laplace, eps, delta);
		EXPECT_LE(l.keep_probability(1), delta);
		EXPECT_EQ(0, s.keep_probability(0));
		EXPECT_EQ(0, l.keep_probability(0));
	}
}

TEST(PartitionSelection, SampledProbabilitiesArePrivate)
{
	for (auto [eps, delta] : kBudgets) {
		expect_private(PartitionSelector(SelectionMechanism::Optimal, eps, delta), eps, delta);
		expect_private(PartitionSelector(SelectionMechanism::Laplace, eps, delta), eps, delta);
	}
}

TEST(PartitionSelection, OptimalIsTheRecurrenceAndDominatesLaplace)
{
	for (auto [eps, delta] : kBudgets) {
		PartitionSelector s(SelectionMechanism::Optimal, eps, delta);
		PartitionSelector l(SelectionMechanism::Laplace, eps, delta);
		for (std::uint64_t n = 1; n < s.threshold() + 3; ++n) {
			const double ref = optimal_keep_probability_reference(eps, delta, n);
			// the table runs the recurrence with delta less a reserve of (e^eps + 1) 2^-50
			const double rel = 2 * (std::exp(eps) + 1) * std::ldexp(1.0, -50) / delta;
			const double got = static_cast<double>(s.keep_probability(n));
			EXPECT_LE(got, ref + 1e-15) << n;
			EXPECT_GE(got, ref * (1 - rel) - 1e-14) << eps << " " << delta << " n=" << n;
			EXPECT_GE(s.keep_probability(n) + 1e-12L, l.keep_probability(n)) << eps << " " << delta << " n=" << n;
		}
		EXPECT_EQ(1, s.keep_probability(s.threshold()));
		EXPECT_LT(s.keep_probability(s.threshold() - 1), 1);
	}
}

TEST(PartitionSelection, Thresholds)
{
	// eps = 1, delta = 1e-5: Laplace threshold 1 - ln(2 delta) ~ 11.8 for the continuous law; the
	// discrete one keeps at n + Z >= tau
	PartitionSelector l(SelectionMechanism::Laplace, 1.0, 1e-5);
	EXPECT_GE(l.threshold(), 11u);
	EXPECT_LE(l.threshold(), 13u);
	PartitionSelector s(SelectionMechanism::Optimal, 1.0, 1e-5);
	EXPECT_LE(s.threshold(), 2 * l.threshold());
	EXPECT_NE(std::string::npos, s.describe().find("optimal"));
	EXPECT_NE(std::string::npos, l.describe().find("threshold"));
}

TEST(PartitionSelection, BadParameters)
{
	expect_core_error(ErrorKind::InvalidParameter, [] { PartitionSelector(SelectionMechanism::Optimal, 0, 1e-5); });
	expect_core_error(ErrorKind::InvalidParameter, [] { PartitionSelector(SelectionMechanism::Optimal, 1, 0); });
	expect_core_error(ErrorKind::InvalidParameter, [] { PartitionSelector(SelectionMechanism::Laplace, 1, 1); });
	expect_core_error(ErrorKind::InvalidParameter,
	                  [] { PartitionSelector(SelectionMechanism::Optimal, 1, std::nan("")); });
	expect_core_error(ErrorKind::InvalidParameter, [] { PartitionSelector(SelectionMechanism::Optimal, 1, 1e-17); });
	expect_core_error(ErrorKind::ProgramLimit, [] { PartitionSelector(SelectionMechanism::Optimal, 1e-7, 1e-10); });
	expect_core_error(ErrorKind::InvalidParameter,
	                  [] { partition_budget(1, 1e-5, INFINITY, INFINITY, 1); });
	expect_core_error(ErrorKind::InvalidParameter, [] { partition_budget(1, 1e-5, 1, 1, 0); });
}

TEST(PartitionSelection, Budgets)
{
	// rows, presence 1, discrete key weight 1: a key change moves two partitions at distance 1
	PartitionBudget b = partition_budget(1.0, 1e-6, 1.0, 1.0, 1);
	EXPECT_DOUBLE_EQ(2.0, b.sensitivity);
	EXPECT_DOUBLE_EQ(0.5, b.epsilon);
	EXPECT_EQ(2u, b.max_changed);
	EXPECT_DOUBLE_EQ(5e-7, b.delta);
	// key metric 'none' (infinite): epsilon from presence only, but a changed key (at distance
	// 2 p0 through bottom) still moves two partitions: delta / 2
	b = partition_budget(1.0, 1e-6, 1.0, INFINITY, 1);
	EXPECT_DOUBLE_EQ(1.0, b.epsilon);
	EXPECT_EQ(2u, b.max_changed);
	EXPECT_DOUBLE_EQ(5e-7, b.delta);
	// key weight 4 >= 2 p0: presence dominates (a change is at most 2 p0 apart anyway)
	b = partition_budget(1.0, 1e-6, 1.0, 4.0, 1);
	EXPECT_DOUBLE_EQ(1.0, b.epsilon);
	EXPECT_EQ(2u, b.max_changed);
	// row count public: only changes
	b = partition_budget(0.3, 1e-6, INFINITY, 2.0, 1);
	EXPECT_DOUBLE_EQ(0.3, b.epsilon);
	// a unit of up to 10 rows: up to 10 partitions on presence, 20 on a change
	b = partition_budget(1.0, 1e-6, 1.0, 1.0, 10);
	EXPECT_DOUBLE_EQ(0.1, b.epsilon);
	EXPECT_EQ(20u, b.max_changed);
	EXPECT_DOUBLE_EQ(5e-8, b.delta);
}

} // namespace
} // namespace dxpriv

namespace dxpriv {
namespace {

// Brute force over all pairs of points (and bottom) with Floyd–Warshall distances of the record metric.
TEST(PartitionSelection, CountSensitivityMatchesBruteForce)
{
	for (int shape = 0; shape < 4; ++shape) {
		SubUniverse sub;
		sub.domains = {Domain::range(0, 4, 1), Domain::enumerated({"a", "b", "c"})};
		sub.metrics = {ColumnMetric::absolute(shape == 1 ? 0.5 : 10), ColumnMetric::discrete(shape == 2 ? 0.3 : 1)};
		sub.presence = shape == 3 ? INFINITY : 1.0;
		const size_t n = sub.size();
		std::vector<double> counted(n);
		std::vector<size_t> group(n);
		for (size_t u = 0; u < n; ++u) {
			const auto p = sub.unflatten(u);
			counted[u] = p[0] < 3 ? 1 : 0;            // WHERE x < 3
			group[u] = shape == 0 ? p[1] : p[1] % 2; // GROUP BY the enumerated column (or a bucket of it)
		}
		const double s = partition_count_sensitivity(sub, counted, group);
		// all-pairs distances: points 0..n-1 and bottom n
		std::vector<std::vector<double>> d(n + 1, std::vector<double>(n + 1, INFINITY));
		for (size_t u = 0; u <= n; ++u)
			d[u][u] = 0;
		for (size_t u = 0; u < n; ++u) {
			d[u][n] = d[n][u] = sub.presence;
			for (size_t v = 0; v < n; ++v) {
				const auto a = sub.unflatten(u), b = sub.unflatten(v);
				if (a[0] != b[0] && a[1] == b[1])
					d[u][v] = sub.metrics[0].distance(sub.domains[0], a[0], b[0]);
				if (a[1] != b[1] && a[0] == b[0])
					d[u][v] = sub.metrics[1].distance(sub.domains[1], a[1], b[1]);
			}
		}
		for (size_t m = 0; m <= n; ++m)
			for (size_t u = 0; u <= n; ++u)
				for (size_t v = 0; v <= n; ++v)
					d[u][v] = std::min(d[u][v], d[u][m] + d[m][v]);
		double brute = 0;
		for (size_t u = 0; u <= n; ++u)
			for (size_t v = 0; v <= n; ++v) {
				if (u == v || !std::isfinite(d[u][v]))
					continue;
				double l1;
				const double cu = u < n ? counted[u] : 0, cv = v < n ? counted[v] : 0;
				if (u < n && v < n && group[u] == group[v])
					l1 = std::fabs(cu - cv);
				else
					l1 = cu + cv;
				brute = std::max(brute, l1 / d[u][v]);
			}
		EXPECT_NEAR(s, brute, 1e-12) << "shape " << shape;
	}
}

} // namespace
} // namespace dxpriv
