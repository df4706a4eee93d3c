// The CPU cost of one unit of pair-search work (core/work_budget.h) across shapes: with
// DXPRIV_BIG_BENCH=1, prints per shape (dimensions, cells, search) the CPU of the tree's
// construction and of a search stopped by a budget, per unit charged. Not a timed test: without the
// variable it is skipped (the numbers are for doc/performance.md, "Refusal before the work").
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <random>
#include <vector>

#include "core/domain.h"
#include "core/error.h"
#include "core/metric.h"
#include "core/pair_tree.h"
#include "core/work_budget.h"

namespace dxpriv {
namespace {

double
cpu_seconds()
{
	timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Shape {
	std::size_t dims, cells;
	bool rows; // a row search of every cell (else the largest change of cell 0)
};

TEST(WorkCalibrationTest, CpuPerUnit)
{
	if (!std::getenv("DXPRIV_BIG_BENCH"))
		GTEST_SKIP() << "set DXPRIV_BIG_BENCH=1";
	const std::size_t n = 100000;
	const double limit = std::getenv("DXPRIV_CAL_LIMIT") ? std::atof(std::getenv("DXPRIV_CAL_LIMIT")) : 2e7;
	const Shape shapes[] = {{2, 1, false}, {2, 2, true}, {2, 5, true}, {3, 3, true},
	                        {8, 1, false}, {8, 2, true}, {8, 16, true}};
	for (const Shape &s : shapes) {
		std::mt19937_64 rng(s.dims * 100 + s.cells);
		std::uniform_real_distribution<double> u(0, 100);
		std::vector<double> c(n * s.dims);
		for (double &x : c)
			x = u(rng);
		const Domain dom = Domain::points(s.dims, c);
		std::vector<double> w(n * s.cells);
		for (std::size_t p = 0; p < n; p++)
			for (std::size_t t = 0; t < s.cells; t++) {
				const double a = c[p * s.dims + t % s.dims], b = c[p * s.dims + (t + 1) % s.dims];
				w[p * s.cells + t] = t < s.dims ? a : a * b;
			}
		const ColumnMetric metric = ColumnMetric::lp(2, 1.0);
		WorkBudgetScope budget(limit);
		const double t0 = cpu_seconds();
		std::unique_ptr<PairSearch> search;
		try {
			search = metric.pair_search(dom, w.data(), s.cells, s.cells, 2e9);
		} catch (const CoreError &) {
		}
		const double t1 = cpu_seconds();
		const double setup_units = budget.spent();
		bool refused = !search;
		if (search)
		try {
			if (s.rows) {
				PairRowQuery q;
				q.coef.assign(s.cells, 1.0);
				q.keep = 512;
				search->top_rows(q);
			} else {
				search->max_cell(0, PairExpr::Metric, 0);
			}
		} catch (const CoreError &) {
			refused = true;
		}
		const double t2 = cpu_seconds();
		const double search_units = budget.spent() - setup_units;
		std::printf("dims %zu cells %2zu %-4s | setup %7.1f ms %10.3g units %6.2f ns/unit | search %7.1f ms %10.3g "
		            "units %6.2f ns/unit %s\n",
		            s.dims, s.cells, s.rows ? "rows" : "max", 1e3 * (t1 - t0), setup_units,
		            setup_units > 0 ? 1e9 * (t1 - t0) / setup_units : 0.0, 1e3 * (t2 - t1), search_units,
		            search_units > 0 ? 1e9 * (t2 - t1) / search_units : 0.0, refused ? "(refused)" : "");
	}
}

} // namespace
} // namespace dxpriv
