// d_X-private MWEM (mwem.h).
#include "core/mwem.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace dxpriv {

namespace {

// Elementary steps of one round.
double
round_work(const Workload &w)
{
	return static_cast<double>(w.queries.size() + w.entries() + w.universe);
}

// epsilon / parts, rounded down so that parts * result never exceeds epsilon.
double
mwem_share(double epsilon, double parts)
{
	return epsilon / parts * (1 - 1e-12);
}

// One multiplicative-weights step: A(j) *= exp(q(j) (m - q(A)) / (2 n_hat)), rescaled to n_hat.
void
mw_update(std::vector<double> &a, const Workload &w, std::size_t k, double measured, double n_hat)
{
	if (!(n_hat > 0))
		return;
	const double err = measured - w.answer(k, a);
	const WorkloadQuery &q = w.queries[k];
	for (std::size_t e = 0; e < q.index.size(); ++e)
		a[q.index[e]] *= std::exp(static_cast<double>(q.units[e]) * w.grid * err / (2 * n_hat));
	double total = 0;
	for (double v : a)
		total += v;
	if (total > 0 && std::isfinite(total))
		for (double &v : a)
			v *= n_hat / total;
	else
		std::fill(a.begin(), a.end(), n_hat / static_cast<double>(w.universe));
}

} // namespace

// See mwem.h.
int
mwem_default_iterations(double n, double e_tot, std::size_t universe, std::size_t queries)
{
	if (!std::isfinite(e_tot))
		return kMaxMwemIterations;
	const double lnq = std::max(std::log(static_cast<double>(queries)), std::log(2.0));
	const double lnx = std::max(std::log(static_cast<double>(universe)), std::log(2.0));
	const double t = std::pow(std::max(n, 0.0) * e_tot * std::sqrt(lnx) / (10 * lnq), 2.0 / 3.0);
	if (!(t >= 1))
		return 1;
	return static_cast<int>(std::min<double>(std::llround(t), kMaxMwemIterations));
}

// See mwem.h.
double
mwem_error_bound(double n, std::size_t universe, std::size_t queries, int iterations, double step_epsilon)
{
	return 2 * n * std::sqrt(std::log(static_cast<double>(universe)) / iterations) +
	       5 * std::log(static_cast<double>(queries)) / step_epsilon;
}

// See mwem.h.
void
check_mwem_arguments(const Workload &w, double epsilon, int iterations)
{
	if (!std::isfinite(epsilon) || !(epsilon > 0))
		throw CoreError(ErrorKind::InvalidParameter, "epsilon must be positive and finite",
		                "Give the release a positive privacy budget, e.g. 1.0.");
	if (iterations < 0 || iterations > kMaxMwemIterations)
		throw CoreError(ErrorKind::InvalidParameter,
		                "iterations must be between 1 and " + std::to_string(kMaxMwemIterations),
		                "Leave iterations out to use the default of MECHANISMS.md §3.11.");
	if (iterations > 0 && iterations * round_work(w) > kMaxMwemWork)
		throw CoreError(ErrorKind::ProgramLimit, "mwem release would take too many steps",
		                "Use fewer iterations, fewer workload queries or coarser domains.");
}

// See mwem.h.
MwemResult
run_mwem(const SubUniverse &sub, const Workload &w, const std::vector<std::int64_t> &counts, double epsilon,
         int iterations, RandomSource &rng, int replay_passes)
{
	check_mwem_arguments(w, epsilon, iterations);
	if (replay_passes < 0 || replay_passes > kMaxMwemReplayPasses)
		throw CoreError(ErrorKind::InvalidParameter, "replay passes out of range");
	if (w.queries.empty() || w.universe != sub.size() || counts.size() != w.universe)
		throw CoreError(ErrorKind::Internal, "workload and histogram do not match the universe");

	MwemResult r;
	const std::vector<double> sens = workload_sensitivities(sub, w);
	r.em_sensitivity = max_sensitivity(sens);

	// 1. the row count
	const bool public_count = count_is_public(sub);
	r.count_epsilon = public_count ? 0 : epsilon * kCountShare;
	const double rest = epsilon - r.count_epsilon;
	r.n_hat = std::max(0.0, measure_count(sub, counts, r.count_epsilon, rng).value);

	// 2. the number of rounds (from released values only)
	int t = iterations;
	if (t == 0) {
		const double e_tot = r.em_sensitivity > 0 ? rest / r.em_sensitivity : INFINITY;
		t = mwem_default_iterations(r.n_hat, e_tot, w.universe, w.queries.size());
		t = std::max(1, std::min<int>(t, static_cast<int>(kMaxMwemWork / round_work(w))));
	}
	r.iterations = t;
	r.step_epsilon = mwem_share(rest, 2.0 * t);

	const std::size_t nq = w.queries.size();
	std::vector<__int128> exact(nq);
	for (std::size_t k = 0; k < nq; ++k)
		exact[k] = w.exact_units(k, counts);
	const EmBeta beta = em_beta(r.step_epsilon, r.em_sensitivity);
	const std::uint64_t den = score_denominator(w.grid);

	std::vector<double> a(w.universe, w.universe ? r.n_hat / static_cast<double>(w.universe) : 0.0);
	std::vector<double> sum(w.universe, 0.0);
	for (int round = 0; round < t; ++round) {
		// exponential mechanism: the query A answers worst
		const std::size_t qt = em_sample(rng, workload_scores(w, exact, a), den, beta);
		// Laplace measurement of it
		const Measurement m = measure_query(sub, w, qt, counts, r.step_epsilon, rng);
		r.chosen.push_back(qt);
		r.measurements.push_back(m.value);
		r.scales.push_back(m.scale);
		// multiplicative weights (post-processing of released values), then the replay passes over
		// every measurement so far
		mw_update(a, w, qt, m.value, r.n_hat);
		for (int pass = 0; pass < replay_passes; ++pass)
			for (std::size_t s = 0; s < r.chosen.size(); ++s)
				mw_update(a, w, r.chosen[s], r.measurements[s], r.n_hat);
		for (std::size_t j = 0; j < w.universe; ++j)
			sum[j] += a[j];
	}
	r.last = a;
	r.histogram.resize(w.universe);
	for (std::size_t j = 0; j < w.universe; ++j)
		r.histogram[j] = sum[j] / t;
	return r;
}

} // namespace dxpriv
