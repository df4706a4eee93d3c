// Experiment behind the rule for T of the group release (core/group_release.h, issue 25): RMSE
// and max error over a workload of the group release at T = 1..G (and the joint measurement),
// against the previous MWEM (core/mwem.h) and direct answers (every marginal table measured
// separately at epsilon / G, as G GROUP BY statements would be), on the table of
// test/bench/release_bench.py (8 columns: 8 x 10 x 2 x 6 x 8 x 6 x 4 x 2 points, a Bayesian-network
// joint law, presence 1, discrete metric weight 1, absolute metric on the two bands).
// Usage: dxpriv_group_rounds [rows] [runs]  -> CSV on stdout:
//   workload, epsilon, rows, method, T, rmse, max_error, seconds
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/group_release.h"
#include "core/mwem.h"
#include "core/random.h"
#include "core/release_steps.h"
#include "core/samplers.h"
#include "core/workload.h"

using namespace dxpriv;

namespace {

const std::vector<std::size_t> kSizes = {8, 10, 2, 6, 8, 6, 4, 2};
const std::vector<std::string> kNames = {"age_band", "region", "sex", "diagnosis", "income", "education", "employment", "smoker"};

SubUniverse
universe(const std::vector<std::size_t> &cols)
{
	SubUniverse sub;
	for (std::size_t c : cols) {
		sub.domains.push_back(Domain::range(0, static_cast<double>(kSizes[c] - 1), 1));
		sub.metrics.push_back(c == 0 || c == 4 ? ColumnMetric::absolute(1) : ColumnMetric::discrete(1));
	}
	sub.presence = 1;
	return sub;
}

double
uniform(SeededRandom &rng)
{
	return static_cast<double>(rng.next_u64() >> 11) / 9007199254740992.0;
}

std::size_t
draw(SeededRandom &rng, const std::vector<double> &p)
{
	double s = 0;
	for (double v : p)
		s += v;
	double u = uniform(rng) * s;
	for (std::size_t i = 0; i < p.size(); ++i) {
		u -= p[i];
		if (u <= 0)
			return i;
	}
	return p.size() - 1;
}

// One row: a Bayesian network (age -> education, income; sex, age, region -> diagnosis;
// education, age -> employment; education, sex -> smoker; region, education -> income).
std::vector<std::size_t>
row(SeededRandom &rng)
{
	std::vector<std::size_t> r(8);
	r[0] = draw(rng, {11, 12, 13, 14, 14, 13, 11, 8});
	r[1] = draw(rng, {18, 14, 12, 10, 9, 9, 8, 8, 7, 5});
	r[2] = draw(rng, {51, 49});
	const double a = static_cast<double>(r[0]);
	r[5] = draw(rng, {3 + a, 20, 30 - a, 20, 12, 6 + (r[0] < 2 ? 0 : 4)});
	std::vector<double> diag = {std::max(0.2, 0.85 - 0.08 * a), 0.01 + 0.02 * a, 0.005 + 0.035 * a * (r[2] ? 1.1 : 0.9),
	                            0.08 - 0.005 * a, 0.002 + 0.006 * a + (r[1] == 0 ? 0.01 : 0), 0.03};
	r[3] = draw(rng, diag);
	std::vector<double> inc(8);
	for (std::size_t i = 0; i < 8; ++i)
		inc[i] = std::exp(-0.5 * std::pow((static_cast<double>(i) - 1.0 - 0.6 * static_cast<double>(r[5]) -
		                                   (r[0] > 1 && r[0] < 6 ? 1.0 : 0.0) - (r[1] < 3 ? 0.7 : 0.0)) / 1.3, 2));
	r[4] = draw(rng, inc);
	r[6] = draw(rng, {r[0] < 7 ? 60.0 + 3 * static_cast<double>(r[5]) : 10.0, 8, 10, r[0] >= 6 ? 40.0 : 4.0});
	r[7] = draw(rng, {70.0 + 4 * static_cast<double>(r[5]), 30.0 + (r[2] ? 8 : 0)});
	return r;
}

std::vector<std::int64_t>
histogram(const std::vector<std::vector<std::size_t>> &rows, const std::vector<std::size_t> &cols)
{
	const SubUniverse sub = universe(cols);
	std::vector<std::int64_t> x(sub.size(), 0);
	for (const auto &r : rows) {
		std::size_t u = 0;
		for (std::size_t c : cols)
			u = u * kSizes[c] + r[c];
		x[u]++;
	}
	return x;
}

struct Err {
	double rmse = 0, max = 0;
};

Err
errors(const Workload &w, const std::vector<std::int64_t> &x, const std::vector<double> &est)
{
	Err e;
	for (std::size_t k = 0; k < w.queries.size(); ++k) {
		const double d = est[k] - static_cast<double>(w.exact_units(k, x)) * w.grid;
		e.rmse += d * d;
		e.max = std::max(e.max, std::fabs(d));
	}
	e.rmse = std::sqrt(e.rmse / static_cast<double>(w.queries.size()));
	return e;
}

std::vector<double>
answers(const Workload &w, const std::vector<double> &a)
{
	std::vector<double> v(w.queries.size());
	for (std::size_t k = 0; k < v.size(); ++k)
		v[k] = w.answer(k, a);
	return v;
}

double
now()
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

} // namespace

int
main(int argc, char **argv)
{
	const long rows_n = argc > 1 ? std::atol(argv[1]) : 100000;
	const int runs = argc > 2 ? std::atoi(argv[2]) : 3;
	const std::string only = argc > 3 ? argv[3] : "";
	SeededRandom data_rng(25);
	std::vector<std::vector<std::size_t>> rows;
	for (long i = 0; i < rows_n; ++i)
		rows.push_back(row(data_rng));
	struct Case {
		std::string name;
		std::vector<std::size_t> cols;
		int k;
	};
	const std::vector<Case> cases = {{"cells80", {0, 1}, 2},
	                                 {"marg2of4", {0, 1, 2, 3}, 2},
	                                 {"marg2of8", {0, 1, 2, 3, 4, 5, 6, 7}, 2},
	                                 {"marg3of8", {0, 1, 2, 3, 4, 5, 6, 7}, 3}};
	std::printf("workload,cells,epsilon,rows,method,T,rmse,max_error,seconds\n");
	SeededRandom rng(7);
	for (const Case &c : cases) {
		if (!only.empty() && c.name != only)
			continue;
		const SubUniverse sub = universe(c.cols);
		std::vector<std::string> names;
		for (std::size_t i : c.cols)
			names.push_back(kNames[i]);
		const Workload w = marginal_workload(sub, names, c.k);
		const auto x = histogram(rows, c.cols);
		const auto groups = workload_groups(w, nullptr);
		const int g = static_cast<int>(groups.size());
		for (double eps : {0.1, 0.5, 1.0, 2.0}) {
			auto report = [&](const char *method, int t, std::vector<Err> &es, double sec) {
				Err m;
				for (auto &e : es) {
					m.rmse += e.rmse / es.size();
					m.max += e.max / es.size();
				}
				std::printf("%s,%zu,%g,%ld,%s,%d,%.4g,%.4g,%.3f\n", c.name.c_str(), w.queries.size(), eps, rows_n, method, t,
				            m.rmse, m.max, sec / es.size());
				std::fflush(stdout);
			};
			// direct: each group at eps / G
			{
				std::vector<Err> es;
				const double t0 = now();
				// the joint plan's per-group plans, rescaled from measure_epsilon to epsilon / G
				const GroupPlan jp = plan_group_release(sub, w, eps, g, nullptr);
				const double rescale = jp.measure_epsilon * g / eps;
				for (int r = 0; r < runs; ++r) {
					std::vector<double> est(w.queries.size());
					for (std::size_t k = 0; k < est.size(); ++k)
						est[k] = static_cast<double>(w.exact_units(k, x)) * w.grid +
						         (jp.query_scale[k] > 0 ? laplace_on_grid(rng, jp.query_scale[k] * rescale, 1.0 / 1024) : 0);
					es.push_back(errors(w, x, est));
				}
				report("direct", g, es, now() - t0);
			}
			// previous MWEM (default T, last iterate and average)
			if (w.universe <= 20000) {
				std::vector<Err> es, ea;
				const double t0 = now();
				int tt = 0;
				for (int r = 0; r < runs; ++r) {
					const MwemResult m = run_mwem(sub, w, x, eps, 0, rng);
					tt = m.iterations;
					es.push_back(errors(w, x, answers(w, m.last)));
					ea.push_back(errors(w, x, answers(w, m.histogram)));
				}
				report("mwem_last", tt, es, now() - t0);
				report("mwem_avg", tt, ea, 0);
			}
			std::vector<int> ts = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32};
			if (const char *e = std::getenv("TS")) { // e.g. TS=4,8,12
				ts.clear();
				for (std::string t = e; !t.empty();) {
					const std::size_t c = t.find(',');
					ts.push_back(std::atoi(t.substr(0, c).c_str()));
					t = c == std::string::npos ? "" : t.substr(c + 1);
				}
			}
			std::vector<int> tried;
			for (int t : ts)
				if (t < g)
					tried.push_back(t);
			tried.push_back(g); // joint
			tried.push_back(0); // the rule
			for (int t : tried) {
				std::vector<Err> es, ea;
				const double t0 = now();
				int tt = 0;
				for (int r = 0; r < runs; ++r) {
					const GroupPlan p = plan_group_release(sub, w, eps, t, nullptr);
					tt = p.rounds;
					const GroupReleaseResult res = run_group_release(sub, w, p, x, rng);
					es.push_back(errors(w, x, answers(w, res.histogram)));
					ea.push_back(errors(w, x, answers(w, res.average)));
				}
				const std::string lab = t == 0 ? "rule" : (tt >= g ? "joint" : "group");
				report((lab + "_last").c_str(), tt, es, now() - t0);
				if (lab == "group")
					report((lab + "_avg").c_str(), tt, ea, 0);
			}
		}
	}
	return 0;
}
