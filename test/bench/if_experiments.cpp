// Reproduction of the improvement-factor experiments of MECHANISMS.md §3.14 (Sections 4.1-4.2 of
// the seed paper) with the proposed defaults: N = 500 points drawn without replacement from
// {0..99}^2, Euclidean metric (epsilon = 1; IF is scale-invariant), 1000 random single queries
// with U[0,1] coefficients, and m = 1..10 with R random matrices per m (U[0,1] and {0,1} entries)
// under Strategies 1-3 and the optimal allocation. Writes if_single.csv, if_multi.csv and
// if_multi_summary.csv and prints a summary. Target dxpriv_if_experiments (not part of ctest).
//
// Usage: dxpriv_if_experiments [--out-dir DIR] [--queries Q] [--matrices R] [--max-m M]
//                              [--points N] [--threads T] [--seed S]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/allocation.h"
#include "core/error.h"

using namespace dxpriv;

namespace {

using Matrix = std::vector<std::vector<double>>;

const AllocationStrategy kStrategies[] = {AllocationStrategy::EqualSplit, AllocationStrategy::EqualScale,
                                          AllocationStrategy::BudgetDistribution, AllocationStrategy::MinTotalVariance};

// Uniform double in [0, 1) from the top 53 bits (portable, unlike std::uniform_real_distribution).
double
uniform01(std::mt19937_64 &rng)
{
	return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

// Uniform integer in [0, n) by rejection (portable).
std::uint64_t
uniform_below(std::mt19937_64 &rng, std::uint64_t n)
{
	const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
	std::uint64_t v;
	do
		v = rng();
	while (v >= limit);
	return v % n;
}

// N distinct points of {0..side-1}^2 (partial Fisher-Yates) and their Euclidean distance matrix.
Matrix
grid_points_metric(std::size_t n, std::size_t side, std::uint64_t seed, std::vector<std::pair<int, int>> &points)
{
	std::mt19937_64 rng(seed);
	std::vector<std::uint32_t> cells(side * side);
	for (std::size_t i = 0; i < cells.size(); i++)
		cells[i] = static_cast<std::uint32_t>(i);
	for (std::size_t i = 0; i < n; i++)
		std::swap(cells[i], cells[i + uniform_below(rng, cells.size() - i)]);
	points.resize(n);
	for (std::size_t i = 0; i < n; i++)
		points[i] = {static_cast<int>(cells[i] / side), static_cast<int>(cells[i] % side)};
	Matrix d(n, std::vector<double>(n));
	for (std::size_t i = 0; i < n; i++)
		for (std::size_t j = 0; j < n; j++)
			d[i][j] = std::hypot(points[i].first - points[j].first, points[i].second - points[j].second);
	return d;
}

// Geometric mean over the noisy cells of baseline / b_k (cells with b_k = 0 are exact and skipped).
double
geometric_if(const std::vector<double> &b, double baseline)
{
	double log_sum = 0;
	int count = 0;
	for (double v : b)
		if (v > 0) {
			log_sum += std::log(baseline / v);
			count++;
		}
	return count == 0 ? NAN : std::exp(log_sum / count);
}

// Result of one random matrix.
struct MultiResult {
	int family = 0; // 0 real, 1 binary
	int m = 0, matrix = 0;
	std::size_t rows = 0;
	double baseline = 0;
	double if_by_strategy[4] = {0, 0, 0, 0};
	double max_ratio = 0;     // T4 over the four strategies
	double optimal_seconds = 0;
	double optimal_gap = 0;
};

// Runs the four strategies on one random matrix (seeded by family, m and matrix index).
MultiResult
run_matrix(const Matrix &d, int family, int m, int matrix, std::uint64_t seed)
{
	std::mt19937_64 rng(seed ^ (0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(1 + family * 1000003 + m * 1009 + matrix)));
	const std::size_t n = d.size();
	Matrix q(static_cast<std::size_t>(m), std::vector<double>(n));
	for (auto &row : q)
		for (double &v : row)
			v = family == 0 ? uniform01(rng) : (uniform01(rng) < 0.5 ? 0.0 : 1.0);
	MultiResult r;
	r.family = family;
	r.m = m;
	r.matrix = matrix;
	const ConstraintSet c = build_constraints_dense(d, q);
	r.rows = c.count();
	r.baseline = plain_dp_scale_dense(d, q, 1);
	for (int s = 0; s < 4; s++) {
		AllocationStats stats;
		const auto t0 = std::chrono::steady_clock::now();
		const std::vector<double> b = allocate(c, kStrategies[s], 1, &stats);
		const auto t1 = std::chrono::steady_clock::now();
		if (kStrategies[s] == AllocationStrategy::MinTotalVariance) {
			r.optimal_seconds = std::chrono::duration<double>(t1 - t0).count();
			r.optimal_gap = stats.relative_gap;
		}
		r.if_by_strategy[s] = geometric_if(b, r.baseline);
		r.max_ratio = std::max(r.max_ratio, privacy_ratio(c, b, 1));
	}
	return r;
}

// Parses "--name value" options.
long
option(int argc, char **argv, const std::string &name, long fallback)
{
	for (int i = 1; i + 1 < argc; i++)
		if (name == argv[i])
			return std::strtol(argv[i + 1], nullptr, 10);
	return fallback;
}

// Text option "--name value".
std::string
text_option(int argc, char **argv, const std::string &name, const std::string &fallback)
{
	for (int i = 1; i + 1 < argc; i++)
		if (name == argv[i])
			return argv[i + 1];
	return fallback;
}

// Runs f(i) for i in [0, jobs) on `threads` threads.
template <typename F>
void
parallel_for(int jobs, int threads, F f)
{
	std::atomic<int> next{0};
	std::vector<std::thread> pool;
	for (int t = 0; t < threads; t++)
		pool.emplace_back([&] {
			for (int i = next++; i < jobs; i = next++)
				f(i);
		});
	for (auto &th : pool)
		th.join();
}

// Mean, median and maximum of a sample (sorted copy).
void
summarize(std::vector<double> v, double &mean, double &median, double &max)
{
	std::sort(v.begin(), v.end());
	mean = 0;
	for (double x : v)
		mean += x / static_cast<double>(v.size());
	median = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
	max = v.back();
}

} // namespace

// Runs both experiments and writes the CSV files.
int
main(int argc, char **argv)
{
	const std::string out = text_option(argc, argv, "--out-dir", "test/bench/results");
	const int queries = static_cast<int>(option(argc, argv, "--queries", 1000));
	const int matrices = static_cast<int>(option(argc, argv, "--matrices", 100));
	const int max_m = static_cast<int>(option(argc, argv, "--max-m", 10));
	const std::size_t points_n = static_cast<std::size_t>(option(argc, argv, "--points", 500));
	const int threads = static_cast<int>(option(argc, argv, "--threads", 2));
	const std::uint64_t seed = static_cast<std::uint64_t>(option(argc, argv, "--seed", 2020));

	std::vector<std::pair<int, int>> points;
	const Matrix d = grid_points_metric(points_n, 100, seed, points);
	double eps_min = INFINITY;
	for (std::size_t i = 0; i < d.size(); i++)
		for (std::size_t j = i + 1; j < d.size(); j++)
			eps_min = std::min(eps_min, d[i][j]);
	std::printf("universe: %zu points of {0..99}^2 (seed %llu), Euclidean metric, eps_min = %g\n", points_n,
	            static_cast<unsigned long long>(seed), eps_min);

	// Experiment 1: random single queries with U[0,1] coefficients.
	const auto t_start = std::chrono::steady_clock::now();
	std::vector<double> b_star(static_cast<std::size_t>(queries)), base(static_cast<std::size_t>(queries));
	parallel_for(queries, threads, [&](int t) {
		std::mt19937_64 rng(seed * 7919 + static_cast<std::uint64_t>(t));
		std::vector<double> q(points_n);
		for (double &v : q)
			v = uniform01(rng);
		const ConstraintSet c = build_constraints_dense(d, {q});
		b_star[static_cast<std::size_t>(t)] = allocate(c, AllocationStrategy::MinTotalVariance, 1)[0];
		base[static_cast<std::size_t>(t)] = plain_dp_scale_dense(d, {q}, 1);
	});
	std::vector<double> ifs(static_cast<std::size_t>(queries));
	FILE *f = std::fopen((out + "/if_single.csv").c_str(), "w");
	if (!f) {
		std::perror("if_single.csv");
		return 1;
	}
	std::fprintf(f, "query,b_star,baseline,improvement_factor\n");
	for (int t = 0; t < queries; t++) {
		ifs[static_cast<std::size_t>(t)] = base[static_cast<std::size_t>(t)] / b_star[static_cast<std::size_t>(t)];
		std::fprintf(f, "%d,%.17g,%.17g,%.17g\n", t, b_star[static_cast<std::size_t>(t)], base[static_cast<std::size_t>(t)],
		             ifs[static_cast<std::size_t>(t)]);
	}
	std::fclose(f);
	double mean, median, max;
	summarize(ifs, mean, median, max);
	const double min_if = *std::min_element(ifs.begin(), ifs.end());
	std::printf("single queries (%d): IF mean %.4f median %.4f min %.4f max %.4f (%.1f s)\n", queries, mean, median,
	            min_if, max,
	            std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count());

	// Experiment 2: multiple queries.
	const auto t_multi = std::chrono::steady_clock::now();
	const int jobs = 2 * max_m * matrices;
	std::vector<MultiResult> results(static_cast<std::size_t>(jobs));
	parallel_for(jobs, threads, [&](int j) {
		const int family = j / (max_m * matrices);
		const int m = 1 + (j / matrices) % max_m;
		const int matrix = j % matrices;
		results[static_cast<std::size_t>(j)] = run_matrix(d, family, m, matrix, seed);
	});
	f = std::fopen((out + "/if_multi.csv").c_str(), "w");
	if (!f) {
		std::perror("if_multi.csv");
		return 1;
	}
	std::fprintf(f, "family,m,matrix,rows,baseline,if_equal_split,if_equal_scale,if_algorithm3,if_optimal,"
	                "max_privacy_ratio,optimal_seconds,optimal_relative_gap\n");
	double worst_ratio = 0, worst_seconds = 0;
	for (const MultiResult &r : results) {
		std::fprintf(f, "%s,%d,%d,%zu,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.6f,%.3g\n", r.family ? "binary" : "real", r.m,
		             r.matrix, r.rows, r.baseline, r.if_by_strategy[0], r.if_by_strategy[1], r.if_by_strategy[2],
		             r.if_by_strategy[3], r.max_ratio, r.optimal_seconds, r.optimal_gap);
		worst_ratio = std::max(worst_ratio, r.max_ratio);
		worst_seconds = std::max(worst_seconds, r.optimal_seconds);
	}
	std::fclose(f);

	f = std::fopen((out + "/if_multi_summary.csv").c_str(), "w");
	if (!f) {
		std::perror("if_multi_summary.csv");
		return 1;
	}
	std::fprintf(f, "family,m,matrices,mean_if_equal_split,mean_if_equal_scale,mean_if_algorithm3,mean_if_optimal\n");
	std::printf("multiple queries (%d matrices per m and family, %.1f s; max privacy ratio %.15g; slowest optimal "
	            "%.3f s)\n",
	            matrices, std::chrono::duration<double>(std::chrono::steady_clock::now() - t_multi).count(), worst_ratio,
	            worst_seconds);
	for (int family = 0; family < 2; family++) {
		std::printf("  %s entries: mean geometric-mean IF\n   m  equal_split  equal_scale  algorithm3   optimal\n",
		            family ? "binary {0,1}" : "real U[0,1]");
		for (int m = 1; m <= max_m; m++) {
			double sums[4] = {0, 0, 0, 0};
			int count = 0;
			for (const MultiResult &r : results)
				if (r.family == family && r.m == m) {
					for (int s = 0; s < 4; s++)
						sums[s] += r.if_by_strategy[s];
					count++;
				}
			for (double &v : sums)
				v /= count;
			std::printf("  %2d  %11.4f  %11.4f  %10.4f  %8.4f\n", m, sums[0], sums[1], sums[2], sums[3]);
			std::fprintf(f, "%s,%d,%d,%.10g,%.10g,%.10g,%.10g\n", family ? "binary" : "real", m, count, sums[0], sums[1],
			             sums[2], sums[3]);
		}
	}
	std::fclose(f);
	return worst_ratio <= 1 + 1e-9 ? 0 : 2;
}
