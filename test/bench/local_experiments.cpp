// Reproduction of the local-model experiments of MECHANISMS.md §4.7 (seed 002: geometric noise vs
// k-RR for locally private counting queries). The paper's parameters are lost; we use the proposed
// defaults of §4.7: values in {0..n}, epsilon in {0.5, 1, 2}, radius r in {5, 10}.
//
// For each domain and family (Binomial(n, 0.5); a "4-point" distribution: 4 random points of the range with
// random weights) and each sample size (1000, 10000, 50000, 100000) one true sample is drawn. Each
// run obfuscates every value with TG at epsilon/r (§4.6) and with k-RR at epsilon, counts the
// reports, runs IBU (5000 iterations, from uniform), and records the Kantorovich distance between
// the estimate and the sample's own distribution (also after only 10 IBU iterations). Runs use the
// exact samplers of src/core with a seeded stream, so results are reproducible. Two domains are run:
// {0..100} (the proposed default) and the smaller {0..20}, since k-RR's utility degrades with k.
//
// Writes local_kantorovich.csv (one row per run and mechanism) and local_kantorovich_summary.csv
// (means per setting and the ratio k-RR / geometric) and prints the summary. Target
// dxpriv_local_experiments (not part of ctest); plot with test/bench/plot_local.py.
//
// Usage: dxpriv_local_experiments [--out-dir DIR] [--runs R] [--iterations I] [--threads T]
//                                 [--max-value N] [--seed S] [--quick]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/local_model.h"
#include "core/random.h"

using namespace dxpriv;

namespace {

struct Config {
	std::string out_dir = "test/bench/results";
	int runs = 20;
	std::int64_t iterations = 5000;
	int threads = 2;
	std::vector<std::int64_t> max_values = {20, 100};
	std::uint64_t seed = 2019;
	std::vector<std::size_t> sizes = {1000, 10000, 50000, 100000};
	std::vector<double> epsilons = {0.5, 1.0, 2.0};
	std::vector<double> radii = {5.0, 10.0};
};

// One true sample: its values and its empirical distribution over 0..max_value.
struct Sample {
	std::string family;
	std::int64_t max_value;
	std::size_t size;
	std::vector<std::int64_t> values;
	std::vector<double> distribution;
};

// Uniform double in [0, 1) from the top 53 bits.
double uniform01(std::mt19937_64 &rng)
{
	return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

Sample draw_sample(const std::string &family, std::size_t size, std::int64_t n, std::uint64_t seed)
{
	std::mt19937_64 rng(seed);
	Sample s{family, n, size, {}, std::vector<double>(static_cast<std::size_t>(n + 1), 0.0)};
	s.values.reserve(size);
	if (family == "binomial") {
		for (std::size_t i = 0; i < size; ++i) {
			std::int64_t v = 0; // Binomial(n, 1/2): number of one bits among n fair bits
			for (std::int64_t j = 0; j < n; ++j)
				v += static_cast<std::int64_t>(rng() >> 63);
			s.values.push_back(v);
		}
	} else { // four distinct random points with random weights
		std::vector<std::int64_t> points;
		while (points.size() < 4) {
			const std::int64_t p = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(n + 1));
			if (std::find(points.begin(), points.end(), p) == points.end())
				points.push_back(p);
		}
		double w[4], total = 0.0;
		for (double &x : w)
			total += (x = 0.1 + uniform01(rng));
		for (std::size_t i = 0; i < size; ++i) {
			double u = uniform01(rng) * total;
			int j = 0;
			while (j < 3 && u >= w[j])
				u -= w[j++];
			s.values.push_back(points[j]);
		}
	}
	for (std::int64_t v : s.values)
		s.distribution[static_cast<std::size_t>(v)] += 1.0 / static_cast<double>(size);
	return s;
}

struct Task {
	std::size_t sample;
	double epsilon, radius;
	int run;
};

struct Outcome {
	double k_geo = 0, k_krr = 0, k_geo_10 = 0, k_krr_10 = 0;
	double seconds = 0;
};

// Obfuscates a sample with one mechanism and reconstructs it; returns (K after all, K after 10).
std::pair<double, double> run_mechanism(const Sample &s, LocalMechanism mech, double eps, std::int64_t n,
                                        std::int64_t iterations, RandomSource &rng)
{
	const std::size_t k = static_cast<std::size_t>(n + 1);
	std::vector<std::uint64_t> counts(k, 0);
	for (std::int64_t v : s.values)
		++counts[static_cast<std::size_t>(local_randomize(mech, rng, v, 0, n, eps))];
	const LocalChannel channel = LocalChannel::make(mech, k, sampling_epsilon(mech, eps));
	IbuOptions full;
	full.iterations = iterations;
	IbuOptions early;
	early.iterations = 10;
	const IbuResult r = iterative_bayesian_update(counts, channel, full);
	const IbuResult r10 = iterative_bayesian_update(counts, channel, early);
	return {kantorovich(r.theta, s.distribution), kantorovich(r10.theta, s.distribution)};
}

Config parse_args(int argc, char **argv)
{
	Config c;
	for (int i = 1; i < argc; ++i) {
		const std::string a = argv[i];
		auto next = [&]() -> std::string {
			if (i + 1 >= argc) {
				std::fprintf(stderr, "missing value for %s\n", a.c_str());
				std::exit(2);
			}
			return argv[++i];
		};
		if (a == "--out-dir")
			c.out_dir = next();
		else if (a == "--runs")
			c.runs = std::stoi(next());
		else if (a == "--iterations")
			c.iterations = std::stoll(next());
		else if (a == "--threads")
			c.threads = std::max(1, std::stoi(next()));
		else if (a == "--max-value")
			c.max_values = {std::stoll(next())};
		else if (a == "--seed")
			c.seed = std::stoull(next());
		else if (a == "--quick") {
			c.runs = 3;
			c.sizes = {1000, 10000};
		} else {
			std::fprintf(stderr,
			             "usage: %s [--out-dir DIR] [--runs R] [--iterations I] [--threads T] [--max-value N] "
			             "[--seed S] [--quick]\n",
			             argv[0]);
			std::exit(2);
		}
	}
	return c;
}

} // namespace

int main(int argc, char **argv)
{
	const Config cfg = parse_args(argc, argv);
	const auto start = std::chrono::steady_clock::now();

	std::vector<Sample> samples;
	std::uint64_t sample_seed = cfg.seed;
	for (std::int64_t n : cfg.max_values)
		for (const char *family : {"binomial", "4-point"})
			for (std::size_t size : cfg.sizes)
				samples.push_back(draw_sample(family, size, n, ++sample_seed));

	std::vector<Task> tasks;
	for (std::size_t s = 0; s < samples.size(); ++s)
		for (double eps : cfg.epsilons)
			for (double r : cfg.radii)
				for (int run = 0; run < cfg.runs; ++run)
					tasks.push_back(Task{s, eps, r, run});
	std::vector<Outcome> outcomes(tasks.size());

	std::atomic<std::size_t> next{0};
	std::atomic<bool> failed{false};
	auto worker = [&] {
		for (;;) {
			const std::size_t t = next.fetch_add(1);
			if (t >= tasks.size() || failed)
				return;
			const Task &task = tasks[t];
			const auto t0 = std::chrono::steady_clock::now();
			try {
				// One stream per task: results do not depend on the thread schedule.
				SeededRandom rng(cfg.seed * 1000003u + t);
				const Sample &s = samples[task.sample];
				Outcome &o = outcomes[t];
				std::tie(o.k_geo, o.k_geo_10) =
				    run_mechanism(s, LocalMechanism::TruncatedGeometric,
				                  geometric_epsilon_for_radius(task.epsilon, task.radius), s.max_value,
				                  cfg.iterations, rng);
				std::tie(o.k_krr, o.k_krr_10) = run_mechanism(s, LocalMechanism::KRandomizedResponse, task.epsilon,
				                                              s.max_value, cfg.iterations, rng);
				o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
			} catch (const CoreError &e) {
				std::fprintf(stderr, "task %zu failed: %s\n", t, e.what());
				failed = true;
			}
		}
	};
	std::vector<std::thread> pool;
	for (int i = 0; i < cfg.threads; ++i)
		pool.emplace_back(worker);
	for (auto &th : pool)
		th.join();
	if (failed)
		return 1;

	const std::string detail_path = cfg.out_dir + "/local_kantorovich.csv";
	std::FILE *detail = std::fopen(detail_path.c_str(), "w");
	if (!detail) {
		std::perror(detail_path.c_str());
		return 1;
	}
	std::fprintf(detail, "max_value,family,sample_size,epsilon,radius,mechanism,mechanism_epsilon,run,ibu_iterations,"
	                     "kantorovich,kantorovich_10_iterations\n");
	// key: (sample index, epsilon, radius) -> sums
	struct Sums {
		double geo = 0, krr = 0, geo10 = 0, krr10 = 0, ratio = 0, max_ratio = 0;
		int n = 0;
	};
	std::map<std::tuple<std::size_t, double, double>, Sums> summary;
	for (std::size_t t = 0; t < tasks.size(); ++t) {
		const Task &task = tasks[t];
		const Sample &s = samples[task.sample];
		const Outcome &o = outcomes[t];
		std::fprintf(detail, "%lld,%s,%zu,%g,%g,geometric,%.10g,%d,%lld,%.10g,%.10g\n",
		             static_cast<long long>(s.max_value), s.family.c_str(), s.size,
		             task.epsilon, task.radius, task.epsilon / task.radius, task.run,
		             static_cast<long long>(cfg.iterations), o.k_geo, o.k_geo_10);
		std::fprintf(detail, "%lld,%s,%zu,%g,%g,krr,%.10g,%d,%lld,%.10g,%.10g\n",
		             static_cast<long long>(s.max_value), s.family.c_str(), s.size,
		             task.epsilon, task.radius, task.epsilon, task.run, static_cast<long long>(cfg.iterations),
		             o.k_krr, o.k_krr_10);
		Sums &sum = summary[{task.sample, task.epsilon, task.radius}];
		sum.geo += o.k_geo;
		sum.krr += o.k_krr;
		sum.geo10 += o.k_geo_10;
		sum.krr10 += o.k_krr_10;
		sum.ratio += o.k_krr / o.k_geo;
		sum.max_ratio = std::max(sum.max_ratio, o.k_krr / o.k_geo);
		++sum.n;
	}
	std::fclose(detail);

	const std::string summary_path = cfg.out_dir + "/local_kantorovich_summary.csv";
	std::FILE *out = std::fopen(summary_path.c_str(), "w");
	if (!out) {
		std::perror(summary_path.c_str());
		return 1;
	}
	std::fprintf(out, "max_value,family,sample_size,epsilon,radius,runs,mean_k_geometric,mean_k_krr,ratio_of_means,"
	                  "mean_ratio,max_ratio,mean_k_geometric_10_iterations,mean_k_krr_10_iterations\n");
	std::printf("%4s %-9s %7s %4s %3s | %10s %10s %7s %7s | %9s %9s\n", "max", "family", "users", "eps", "r", "K geo", "K krr",
	            "ratio", "maxrat", "K geo@10", "K krr@10");
	double best = 0.0, worst = 1e300;
	for (const auto &[key, sum] : summary) {
		const Sample &s = samples[std::get<0>(key)];
		const double g = sum.geo / sum.n, k = sum.krr / sum.n;
		best = std::max(best, k / g);
		worst = std::min(worst, k / g);
		std::fprintf(out, "%lld,%s,%zu,%g,%g,%d,%.8g,%.8g,%.6g,%.6g,%.6g,%.8g,%.8g\n",
		             static_cast<long long>(s.max_value), s.family.c_str(), s.size,
		             std::get<1>(key), std::get<2>(key), sum.n, g, k, k / g, sum.ratio / sum.n, sum.max_ratio,
		             sum.geo10 / sum.n, sum.krr10 / sum.n);
		std::printf("%4lld %-9s %7zu %4g %3g | %10.4f %10.4f %7.2f %7.2f | %9.4f %9.4f\n",
		            static_cast<long long>(s.max_value), s.family.c_str(), s.size,
		            std::get<1>(key), std::get<2>(key), g, k, k / g, sum.max_ratio, sum.geo10 / sum.n,
		            sum.krr10 / sum.n);
	}
	std::fclose(out);
	const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
	std::printf("ratio of mean Kantorovich distances (k-RR / geometric): %.2f to %.2f over %zu settings\n", worst,
	            best, summary.size());
	std::printf("wrote %s and %s in %.1f s (%d runs, %lld IBU iterations, %d threads)\n", detail_path.c_str(),
	            summary_path.c_str(), seconds, cfg.runs, static_cast<long long>(cfg.iterations), cfg.threads);
	return 0;
}
