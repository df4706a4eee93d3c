// Standalone timing of the per-point reference (build_constraints, plan_multi_linear) and of the
// allocation without pair rows (plan_multi_linear_grouped) on the sub-universes of the
// dashboard's grouped tiles (doc/performance.md, "Grouped statements").
// Build after `cmake --build build/core --target dxpriv_core`:
//   g++ -std=c++17 -O2 -Isrc test/bench/grouped_reference_timing.cpp build/core/libdxpriv_core.a -o /tmp/grt
//   /tmp/grt g73 discrete; /tmp/grt g73 none; /tmp/grt grp discrete; /tmp/grt grp none
// Times are process CPU milliseconds.
#include <algorithm>
#include <ctime>
#include <cmath>
#include <optional>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/allocation.h"
#include "core/grouped_allocation.h"
#include "core/domain.h"
#include "core/metric.h"
#include "core/sensitivity.h"

using namespace dxpriv;

// Process CPU time in ms (single-threaded: the work itself, whatever the machine's load).
static double
now_ms()
{
	timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return 1e3 * static_cast<double>(ts.tv_sec) + 1e-6 * static_cast<double>(ts.tv_nsec);
}

int
main(int argc, char **argv)
{
	const bool g73 = argc < 2 || std::strcmp(argv[1], "grp") != 0;
	const bool discrete = argc < 3 || std::strcmp(argv[2], "none") != 0;
	const ColumnMetric group_metric = discrete ? ColumnMetric::discrete(1) : ColumnMetric::none();
	SubUniverse sub; // columns in attribute order, the group column last (varies fastest)
	std::size_t groups, per;
	if (g73) { // SELECT g73, count(*), avg(qty) ... GROUP BY g73: count, sum(qty), count
		groups = 73, per = 3;
		sub.domains = {Domain::range(0, 50, 1), Domain::range(0, 72, 1)};
		sub.metrics = {ColumnMetric::none(), group_metric};
	} else { // SELECT grp, count(*), sum(qty), avg(age) ... GROUP BY grp: count, sum(qty), sum(age), count
		groups = 10, per = 4;
		sub.domains = {Domain::range(0, 120, 1), Domain::range(0, 50, 1), Domain::range(0, 9, 1)};
		sub.metrics = {ColumnMetric::absolute(10), ColumnMetric::none(), group_metric};
	}
	const std::size_t n = sub.size(), m = groups * per;
	std::vector<std::vector<double>> q(m, std::vector<double>(n, 0.0));
	AllocationRequest request;
	for (std::size_t u = 0; u < n; u++) {
		const std::size_t g = u % groups;
		if (g73) {
			q[per * g][u] = 1, q[per * g + 1][u] = static_cast<double>(u / groups), q[per * g + 2][u] = 1;
		} else {
			q[per * g][u] = 1, q[per * g + 1][u] = static_cast<double>((u / groups) % 51);
			q[per * g + 2][u] = static_cast<double>(u / (groups * 51)), q[per * g + 3][u] = 1;
		}
	}
	for (std::size_t g = 0; g < groups; g++)
		request.estimates.push_back(Estimate{{per * g + per - 2, per * g + per - 1}, {1.0, g73 ? 625.0 : 3600.0}});
	const double t0 = now_ms();
	const ConstraintSet c = build_constraints(sub, q);
	const double t1 = now_ms();
	ConstraintSet planned;
	plan_multi_linear(sub, q, 0.5, request, &planned);
	const double t2 = now_ms();
	std::printf("%s, group metric %s: %zu points, %zu cells, %zu rows (%zu entries), build_constraints %.1f ms, "
	            "plan_multi_linear %.1f ms\n", g73 ? "g73" : "grp", discrete ? "discrete" : "none", n, m, c.count(),
	            c.stored_entries(), t1 - t0, t2 - t1);
	const MultiLinearPlan ref = plan_multi_linear(sub, q, 0.5, request);
	GroupedStats st;
	const double t3 = now_ms();
	const std::optional<MultiLinearPlan> fast = plan_multi_linear_grouped(sub, q, 0.5, request, &st);
	const double t4 = now_ms();
	double worst = 0;
	for (std::size_t k = 0; fast && k < m; k++)
		if (ref.cells[k].scale > 0)
			worst = std::max(worst, std::fabs(fast->cells[k].scale - ref.cells[k].scale) / ref.cells[k].scale);
	std::printf("  plan_multi_linear_grouped %.1f ms: %s, %zu base rows + %zu generated, %zu allocations, pair ratio "
	            "%.12f, largest relative scale difference %.3g\n", t4 - t3, fast ? "planned" : "declined",
	            st.base_rows, st.generated_rows, st.rounds, st.pair_ratio, worst);
	return 0;
}
