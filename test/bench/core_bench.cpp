// Google Benchmark micro-benchmarks of the core: multi-cell budget allocation, constraint
// building and generalized sensitivity (target dxpriv_core_bench; not part of ctest).
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "core/allocation.h"
#include "core/sensitivity.h"

using namespace dxpriv;

namespace {

using Matrix = std::vector<std::vector<double>>;

// One enumerated column of n values under a discrete metric (all n(n-1)/2 pairs are edges),
// presence distance 2.
SubUniverse
discrete_column(std::size_t n)
{
	std::vector<std::string> labels;
	for (std::size_t i = 0; i < n; i++)
		labels.push_back("v" + std::to_string(i));
	SubUniverse sub;
	sub.domains = {Domain::enumerated(labels)};
	sub.metrics = {ColumnMetric::discrete(1)};
	sub.presence = 2;
	return sub;
}

// m cells of U[0,1] (binary = false) or {0,1} (binary = true) weights over n points, fixed seed.
Matrix
random_cells(std::size_t m, std::size_t n, bool binary)
{
	std::mt19937_64 rng(42);
	std::uniform_real_distribution<double> u(0, 1);
	Matrix q(m, std::vector<double>(n));
	for (auto &row : q)
		for (double &v : row)
			v = binary ? (u(rng) < 0.5 ? 0.0 : 1.0) : u(rng);
	return q;
}

// Optimal allocation of m = 100 cells over a 1,000-value discrete column (500,500 constraint
// rows: random weights have no duplicate pairs; dense rows). Arg 0: real, 1: binary.
void
BM_OptimalAllocation_m100_N1000(benchmark::State &state)
{
	const bool binary = state.range(0) == 1;
	const ConstraintSet c = build_constraints(discrete_column(1000), random_cells(100, 1000, binary));
	AllocationStats stats;
	for (auto _ : state)
		benchmark::DoNotOptimize(allocate(c, AllocationStrategy::MinTotalVariance, 1, &stats));
	state.SetLabel(binary ? "binary" : "real");
	state.counters["rows"] = static_cast<double>(c.count());
	state.counters["rounds"] = static_cast<double>(stats.rounds);
	state.counters["working_rows"] = static_cast<double>(stats.working_rows);
	state.counters["newton_steps"] = static_cast<double>(stats.newton_steps);
	state.counters["rel_gap"] = stats.relative_gap;
}
BENCHMARK(BM_OptimalAllocation_m100_N1000)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same instance on a two-column 40 x 25 universe (absolute x discrete): 13,975 rows.
void
BM_OptimalAllocation_m100_40x25(benchmark::State &state)
{
	SubUniverse sub;
	sub.domains = {Domain::range(0, 39, 1), Domain::range(0, 24, 1)};
	sub.metrics = {ColumnMetric::absolute(1), ColumnMetric::discrete(2)};
	sub.presence = 2;
	const ConstraintSet c = build_constraints(sub, random_cells(100, sub.size(), state.range(0) == 1));
	AllocationStats stats;
	for (auto _ : state)
		benchmark::DoNotOptimize(allocate(c, AllocationStrategy::MinTotalVariance, 1, &stats));
	state.SetLabel(state.range(0) == 1 ? "binary" : "real");
	state.counters["rows"] = static_cast<double>(c.count());
	state.counters["rounds"] = static_cast<double>(stats.rounds);
	state.counters["newton_steps"] = static_cast<double>(stats.newton_steps);
}
BENCHMARK(BM_OptimalAllocation_m100_40x25)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// The three heuristics on the 1,000-value instance (arg: strategy index), real weights.
void
BM_HeuristicAllocation_m100_N1000(benchmark::State &state)
{
	const AllocationStrategy s = static_cast<AllocationStrategy>(state.range(0));
	const ConstraintSet c = build_constraints(discrete_column(1000), random_cells(100, 1000, state.range(1) == 1));
	for (auto _ : state)
		benchmark::DoNotOptimize(allocate(c, s, 1));
	state.SetLabel(std::string(strategy_name(s)) + (state.range(1) == 1 ? "/binary" : "/real"));
}
BENCHMARK(BM_HeuristicAllocation_m100_N1000)
    ->ArgsProduct({{0, 1, 2}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Building the constraints of m = 100 cells over the 1,000-value discrete column
// (500,500 pair edges + 1,000 presence edges, 5e7 entries).
void
BM_BuildConstraints(benchmark::State &state)
{
	const SubUniverse sub = discrete_column(1000);
	const Matrix q = random_cells(static_cast<std::size_t>(state.range(0)), 1000, state.range(1) == 1);
	std::size_t rows = 0;
	for (auto _ : state) {
		const ConstraintSet c = build_constraints(sub, q);
		rows = c.count();
		benchmark::DoNotOptimize(c.values.data());
	}
	state.SetLabel(state.range(1) == 1 ? "binary" : "real");
	state.counters["rows"] = static_cast<double>(rows);
	state.counters["edges_per_s"] =
	    benchmark::Counter(501500.0, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_BuildConstraints)->ArgsProduct({{10, 100}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();

// GROUP BY g of AVG(v): a SUM and a COUNT cell per group, g discrete with G groups, v absolute
// over 20 values (presence 1). m = 2G cells, G(G-1)/2 x 20 group-change edges.
struct GroupBy {
	SubUniverse sub;
	Matrix q;
};

// Builds the GROUP BY instance with G groups.
GroupBy
group_by_avg(std::size_t groups)
{
	GroupBy g;
	std::vector<std::string> labels;
	for (std::size_t i = 0; i < groups; i++)
		labels.push_back("g" + std::to_string(i));
	g.sub.domains = {Domain::enumerated(labels), Domain::range(0, 19, 1)};
	g.sub.metrics = {ColumnMetric::discrete(1), ColumnMetric::absolute(5)};
	g.sub.presence = 1;
	const std::size_t n = g.sub.size();
	g.q.assign(2 * groups, std::vector<double>(n, 0));
	for (std::size_t u = 0; u < n; u++) {
		const auto idx = g.sub.unflatten(u);
		g.q[2 * idx[0]][u] = g.sub.domains[1].ordinal(idx[1]);
		g.q[2 * idx[0] + 1][u] = 1;
	}
	return g;
}

// Building the constraints of GROUP BY AVG over G groups (arg).
void
BM_BuildConstraints_GroupByAvg(benchmark::State &state)
{
	const GroupBy g = group_by_avg(static_cast<std::size_t>(state.range(0)));
	std::size_t rows = 0, entries = 0;
	for (auto _ : state) {
		const ConstraintSet c = build_constraints(g.sub, g.q);
		rows = c.count();
		entries = c.stored_entries();
		benchmark::DoNotOptimize(c.values.data());
	}
	state.counters["cells"] = static_cast<double>(g.q.size());
	state.counters["rows"] = static_cast<double>(rows);
	state.counters["entries"] = static_cast<double>(entries);
}
BENCHMARK(BM_BuildConstraints_GroupByAvg)->Arg(50)->Arg(200)->Unit(benchmark::kMillisecond)->UseRealTime();

// Optimal allocation for GROUP BY AVG over G groups (arg): degenerate (every group pair binds).
void
BM_OptimalAllocation_GroupByAvg(benchmark::State &state)
{
	const GroupBy g = group_by_avg(static_cast<std::size_t>(state.range(0)));
	const ConstraintSet c = build_constraints(g.sub, g.q);
	AllocationStats stats;
	for (auto _ : state)
		benchmark::DoNotOptimize(allocate(c, AllocationStrategy::MinTotalVariance, 1, &stats));
	state.counters["cells"] = static_cast<double>(g.q.size());
	state.counters["rows"] = static_cast<double>(c.count());
	state.counters["rounds"] = static_cast<double>(stats.rounds);
	state.counters["working_rows"] = static_cast<double>(stats.working_rows);
	state.counters["newton_steps"] = static_cast<double>(stats.newton_steps);
}
BENCHMARK(BM_OptimalAllocation_GroupByAvg)->Arg(50)->Arg(200)->Unit(benchmark::kMillisecond)->UseRealTime();

// generalized_sensitivity over a 1000 x 500 grid of two absolute columns: 998,500 one-column
// edges (500 x 999 + 1000 x 499) plus 500,000 presence edges.
void
BM_SensitivityMillionEdges(benchmark::State &state)
{
	SubUniverse sub;
	sub.domains = {Domain::range(0, 999, 1), Domain::range(0, 499, 1)};
	sub.metrics = {ColumnMetric::absolute(1), ColumnMetric::absolute(3)};
	sub.presence = 5;
	const std::size_t n = sub.size();
	std::mt19937_64 rng(3);
	std::uniform_real_distribution<double> u(0, 100);
	std::vector<double> q(n);
	for (double &v : q)
		v = u(rng);
	for (auto _ : state)
		benchmark::DoNotOptimize(generalized_sensitivity(sub, q));
	state.counters["edges_per_s"] =
	    benchmark::Counter(998500.0 + static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SensitivityMillionEdges)->Unit(benchmark::kMillisecond)->UseRealTime();

// generalized_sensitivity over 1000 x 2 discrete columns: 999,000 + 1,000 pair edges, computed
// by the per-line max-min shortcut.
void
BM_SensitivityMillionEdgesDiscrete(benchmark::State &state)
{
	SubUniverse sub = discrete_column(1000);
	sub.domains.push_back(Domain::enumerated({"a", "b"}));
	sub.metrics.push_back(ColumnMetric::discrete(0.5));
	std::mt19937_64 rng(4);
	std::uniform_real_distribution<double> u(0, 100);
	std::vector<double> q(sub.size());
	for (double &v : q)
		v = u(rng);
	for (auto _ : state)
		benchmark::DoNotOptimize(generalized_sensitivity(sub, q));
	state.counters["edges_per_s"] = benchmark::Counter(1000000.0, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SensitivityMillionEdgesDiscrete)->Unit(benchmark::kMicrosecond)->UseRealTime();

} // namespace

BENCHMARK_MAIN();
