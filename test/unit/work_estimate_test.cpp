// calibration_work reports the real number of constraints of location metrics (all pairs of points
// in 2+ dimensions) instead of stopping its count at twice the cap, so a refusal names the real
// numbers; build_constraints refuses the same queries before building anything. With the pair tree
// (pair_tree.h) an l_p column of 2,048+ points counts the tree's work instead.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/allocation.h"
#include "core/domain.h"
#include "core/error.h"
#include "core/metric.h"
#include "core/pair_tree.h"
#include "core/sensitivity.h"
#include "core/work_estimate.h"

namespace dxpriv {
namespace {

// k distinct points on a 2-D grid.
Domain
grid_points(std::size_t k)
{
	std::vector<double> coords;
	const std::size_t side = static_cast<std::size_t>(std::ceil(std::sqrt(static_cast<double>(k))));
	for (std::size_t i = 0; i < k; i++) {
		coords.push_back(static_cast<double>(i % side));
		coords.push_back(static_cast<double>(i / side));
	}
	return Domain::points(2, coords);
}

// With the pair tree off (dxpriv.exhaustive_analysis); with it on, an l_p column of 2,048 or more
// points counts the tree's k log2 k instead (PairPlanner refuses two varying cells after evaluation).
TEST(WorkEstimateTest, LocationMetricsCountEveryPair)
{
	for (bool tree : {false, true}) {
		detail::set_pair_tree(tree);
		for (const ColumnMetric &metric : {ColumnMetric::lp(2, 1), ColumnMetric::lp(1, 3), ColumnMetric::lp(0, 2),
		                                   ColumnMetric::theta2(1.5)}) {
			for (std::size_t k : {950u, 100000u}) {
				SubUniverse sub;
				sub.domains = {grid_points(k)};
				sub.metrics = {metric};
				sub.presence = 1;
				const WorkEstimate w = calibration_work(sub, 2);
				const double kd = static_cast<double>(k);
				const double pairs = 0.5 * kd * (kd - 1);
				if (tree && k == 100000u && metric.kind() != MetricKind::Theta2) {
					EXPECT_EQ(w.edges, kd + kd * std::log2(kd)) << "k " << k;
					EXPECT_FALSE(w.over());
					continue;
				}
				EXPECT_EQ(w.edges, pairs + kd) << "k " << k; // every pair, plus presence
				EXPECT_EQ(w.over(), k == 100000u);
			}
		}
	}
	detail::set_pair_tree(true);
}

// The closed count agrees with the enumeration where the enumeration is affordable.
TEST(WorkEstimateTest, ClosedCountMatchesEnumeration)
{
	for (std::size_t k : {2u, 3u, 40u, 300u}) {
		const Domain dom = grid_points(k);
		for (const ColumnMetric &metric : {ColumnMetric::lp(2, 1), ColumnMetric::theta2(0.5, 2)}) {
			double enumerated = 0;
			metric.for_each_edge(dom, [&](std::size_t, std::size_t, double) { enumerated++; });
			SubUniverse sub;
			sub.domains = {dom};
			sub.metrics = {metric};
			sub.presence = std::numeric_limits<double>::infinity();
			EXPECT_EQ(calibration_work(sub, 2).edges, enumerated);
		}
	}
}

// A query over the cap is refused by build_constraints too (before any row is built).
TEST(WorkEstimateTest, BuildConstraintsRefusesOverTheCap)
{
	SubUniverse sub;
	sub.domains = {grid_points(100000)};
	sub.metrics = {ColumnMetric::lp(2, 1)};
	sub.presence = 1;
	std::vector<std::vector<double>> q(2, std::vector<double>(100000, 1.0));
	for (std::size_t u = 0; u < 100000; u++)
		q[0][u] = static_cast<double>(u % 7);
	EXPECT_THROW(build_constraints(sub, q), CoreError);
}

} // namespace
} // namespace dxpriv
