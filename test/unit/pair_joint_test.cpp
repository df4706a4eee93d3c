// The joint bound of the pair tree's row searches (pair_tree.cpp, joint_bound): with it on, the
// kept rows (values, pairs, and their order) and the finite flag are those of the searches without
// it, on random point sets, weights and rows (the work, each direction bound of a joint bound
// counted as one unit, is printed: 121% of the work without it over these cases, whose weights are
// mostly not linear); on sums of coordinates (the shape the sum of the cells' bounds cannot prune)
// it saves work.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "core/allocation_internal.h"
#include "core/domain.h"
#include "core/metric.h"
#include "core/pair_tree.h"
#include "pair_fixtures.h"

namespace dxpriv {
namespace {

struct JointGuard {
	~JointGuard() { detail::set_pair_joint_bound(true); }
};

PairRowResult
search(const Domain &dom, const ColumnMetric &metric, const std::vector<double> &w, std::size_t cells,
       const PairRowQuery &q, bool joint)
{
	detail::set_pair_joint_bound(joint);
	const std::unique_ptr<PairSearch> s = metric.pair_search(dom, w.data(), cells, cells, 2e9);
	return s->top_rows(q);
}

TEST(PairJointTest, SameRowsLessWork)
{
	testing::PairSwitchGuard guard;
	JointGuard jguard;
	detail::set_pair_tree_min_points(2);
	std::mt19937_64 rng(7575);
	std::uniform_real_distribution<double> unit(0, 1);
	double work_on = 0, work_off = 0;
	for (int t = 0; t < 120; t++) {
		const std::size_t dims = 2 + static_cast<std::size_t>(t % 3);
		const std::size_t n = 200 + static_cast<std::size_t>(rng() % 400);
		const std::vector<double> c = testing::pair_test_points(rng, n, dims, t % 5, 4);
		const Domain dom = Domain::points(dims, c);
		const ColumnMetric metric = t % 3 == 0 ? ColumnMetric::lp(1, 1.0)
		                            : t % 3 == 1 ? ColumnMetric::lp(2, 0.37)
		                                         : ColumnMetric::lp(0, 1.0);
		const std::size_t cells = 2 + static_cast<std::size_t>(rng() % 4);
		std::vector<double> w(n * cells);
		for (std::size_t k = 0; k < cells; k++) {
			const std::vector<double> q = testing::pair_test_weight(rng, c, n, dims, static_cast<int>(rng() % 8));
			for (std::size_t u = 0; u < n; u++)
				w[u * cells + k] = q[u];
		}
		PairRowQuery q;
		q.rows = 1 + (t % 4 == 3 ? 2 : 0);
		q.coef.resize(q.rows * cells);
		for (double &x : q.coef)
			x = rng() % 5 == 0 ? 0.0 : unit(rng);
		q.keep = 1 + rng() % 40;
		const PairRowResult off = search(dom, metric, w, cells, q, false);
		const PairRowResult on = search(dom, metric, w, cells, q, true);
		ASSERT_EQ(on.rows.size(), off.rows.size()) << "case " << t;
		for (std::size_t r = 0; r < on.rows.size(); r++) {
			EXPECT_EQ(on.rows[r].value, off.rows[r].value) << "case " << t;
			EXPECT_EQ(on.rows[r].i, off.rows[r].i) << "case " << t;
			EXPECT_EQ(on.rows[r].j, off.rows[r].j) << "case " << t;
		}
		EXPECT_EQ(on.finite, off.finite);
		work_on += on.work;
		work_off += off.work;
	}
	std::printf("joint bound: %.4g of %.4g units of work (%.1f%%)\n", work_on, work_off, 100 * work_on / work_off);
}

// Two sums of coordinates over uniform points (the rows of a generation round at its threshold):
// the joint bound prunes what the sum of the cells' bounds cannot.
TEST(PairJointTest, SumsOfCoordinatesPruneMore)
{
	testing::PairSwitchGuard guard;
	JointGuard jguard;
	detail::set_pair_tree_min_points(2);
	std::mt19937_64 rng(76);
	const std::size_t n = 3000;
	const std::vector<double> c = testing::pair_test_points(rng, n, 2, 0, 4);
	const Domain dom = Domain::points(2, c);
	const ColumnMetric metric = ColumnMetric::lp(2, 1.0);
	std::vector<double> w(2 * n);
	for (std::size_t u = 0; u < n; u++) {
		w[2 * u] = c[2 * u];
		w[2 * u + 1] = c[2 * u + 1];
	}
	PairRowQuery q;
	q.coef = {1.0, 0.5};
	q.keep = 512;
	q.threshold = 1.0;
	const PairRowResult off = search(dom, metric, w, 2, q, false), on = search(dom, metric, w, 2, q, true);
	ASSERT_EQ(on.rows.size(), off.rows.size());
	for (std::size_t r = 0; r < on.rows.size(); r++)
		EXPECT_EQ(on.rows[r].value, off.rows[r].value);
	EXPECT_LT(on.work, 0.85 * off.work); // units weighted by arithmetic (pair_tree_cost.h): 0.80 measured
	EXPECT_EQ(on.finite, off.finite);
	std::printf("two sums over 3,000 points: %.4g units with the joint bound, %.4g without\n", on.work, off.work);
}

} // namespace
} // namespace dxpriv
