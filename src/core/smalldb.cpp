// d_X-private small database mechanism (smalldb.h).
#include "core/smalldb.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "core/error.h"

namespace dxpriv {

namespace {

double
work_of(double candidates, std::size_t queries, int m)
{
	return candidates * static_cast<double>(queries) * m;
}

bool
fits(std::size_t universe, std::size_t queries, int m)
{
	const double c = smalldb_candidates(universe, m);
	return c <= kMaxSmallDbCandidates && work_of(c, queries, m) <= kMaxSmallDbWork;
}

// Advances j (a non-decreasing sequence over 0..nx-1) to the next one; false after the last.
bool
next_multiset(std::vector<std::size_t> &j, std::size_t nx)
{
	std::size_t i = j.size();
	while (i > 0 && j[i - 1] == nx - 1)
		--i;
	if (i == 0)
		return false;
	const std::size_t v = j[i - 1] + 1;
	for (std::size_t k = i - 1; k < j.size(); ++k)
		j[k] = v;
	return true;
}

// A candidate count for messages: "%.3g".
std::string
candidates_text(double c)
{
	char buf[32];
	std::snprintf(buf, sizeof buf, "%.3g", c);
	return buf;
}

} // namespace

// See smalldb.h.
double
smalldb_candidates(std::size_t universe, int m)
{
	// C(N + m - 1, m) = prod_{i=1..m} (N - 1 + i) / i
	double c = 1;
	for (int i = 1; i <= m && std::isfinite(c); ++i)
		c = c * (static_cast<double>(universe) - 1 + i) / i;
	return std::round(c);
}

// See smalldb.h.
int
smalldb_theorem_size(double n_hat, double em_epsilon, double s_max, std::size_t universe, std::size_t queries)
{
	const double beta = 0.05;
	const double lnq = std::max(std::log(static_cast<double>(queries)), std::log(2.0));
	const double lnx = std::max(std::log(static_cast<double>(universe)), std::log(2.0));
	const double e_n = s_max > 0 ? em_epsilon * std::max(n_hat, 1.0) / s_max : INFINITY;
	double alpha = std::cbrt((16 * lnx * lnq + 4 * std::log(1 / beta)) / e_n);
	alpha = std::min(alpha, 1.0);
	if (!(alpha > 0))
		alpha = 1e-3; // S_max == 0: any size is exact; keep it finite
	const double m = std::ceil(lnq / ((alpha / 2) * (alpha / 2)));
	return static_cast<int>(std::clamp(m, 1.0, 1e6));
}

// See smalldb.h.
std::vector<__int128>
smalldb_scores(const Workload &w, const std::vector<std::int64_t> &counts, double n_hat, int m)
{
	const std::size_t nx = w.universe, nq = w.queries.size();
	if (m < 1 || !fits(nx, nq, m))
		throw CoreError(ErrorKind::ProgramLimit, "smalldb candidate set is too large",
		                "Use dx.release_mwem for larger universes.");
	// dense coefficients, query-major
	std::vector<double> coef(nq * nx, 0.0);
	std::vector<__int128> exact(nq);
	for (std::size_t k = 0; k < nq; ++k) {
		const WorkloadQuery &q = w.queries[k];
		for (std::size_t e = 0; e < q.index.size(); ++e)
			coef[k * nx + q.index[e]] = static_cast<double>(q.units[e]) * w.grid;
		exact[k] = w.exact_units(k, counts);
	}
	std::vector<__int128> utility;
	utility.reserve(static_cast<std::size_t>(smalldb_candidates(nx, m)));
	std::vector<std::size_t> j(static_cast<std::size_t>(m), 0);
	std::vector<double> answer(nq);
	const double scale = n_hat / m;
	do {
		std::fill(answer.begin(), answer.end(), 0.0);
		for (std::size_t p : j)
			for (std::size_t k = 0; k < nq; ++k)
				answer[k] += coef[k * nx + p];
		__int128 worst = 0;
		for (std::size_t k = 0; k < nq; ++k) {
			__int128 d = to_score_units(answer[k] * scale, w.grid) - exact[k];
			worst = std::max(worst, d < 0 ? -d : d);
		}
		utility.push_back(-worst);
	} while (next_multiset(j, nx));
	return utility;
}

// See smalldb.h.
std::vector<double>
smalldb_query_values(const Workload &w, std::size_t k, int m)
{
	if (m < 1 || smalldb_candidates(w.universe, m) > kMaxSmallDbCandidates)
		throw CoreError(ErrorKind::ProgramLimit, "smalldb candidate set is too large",
		                "Use dx.release_mwem for larger universes.");
	const std::vector<double> q = w.dense(k);
	std::vector<double> values;
	values.reserve(static_cast<std::size_t>(smalldb_candidates(w.universe, m)));
	std::vector<std::size_t> j(static_cast<std::size_t>(m), 0);
	do {
		double v = 0;
		for (std::size_t p : j)
			v += q[p];
		values.push_back(v);
	} while (next_multiset(j, w.universe));
	return values;
}

// See smalldb.h.
std::vector<std::int64_t>
smalldb_candidate(std::size_t universe, int m, std::size_t pick)
{
	std::vector<std::size_t> j(static_cast<std::size_t>(m), 0);
	for (std::size_t c = 0; c < pick; ++c)
		if (!next_multiset(j, universe))
			throw CoreError(ErrorKind::Internal, "smalldb candidate number out of range");
	std::vector<std::int64_t> rows(universe, 0);
	for (std::size_t p : j)
		++rows[p];
	return rows;
}

// See smalldb.h.
void
check_smalldb_arguments(const Workload &w, double epsilon, int size)
{
	if (!std::isfinite(epsilon) || !(epsilon > 0))
		throw CoreError(ErrorKind::InvalidParameter, "epsilon must be positive and finite",
		                "Give the release a positive privacy budget, e.g. 1.0.");
	if (size < 0)
		throw CoreError(ErrorKind::InvalidParameter, "database size must be positive",
		                "Leave the size out to use the default of MECHANISMS.md §3.10.");
	const std::size_t nx = w.universe, nq = w.queries.size();
	if (!fits(nx, nq, size > 0 ? size : 1))
		throw CoreError(ErrorKind::ProgramLimit,
		                "smalldb over " + std::to_string(nx) + " universe points with databases of " +
		                    std::to_string(size > 0 ? size : 1) + " rows has " +
		                    candidates_text(smalldb_candidates(nx, size > 0 ? size : 1)) +
		                    " candidates, over the limit of " + std::to_string(static_cast<long>(kMaxSmallDbCandidates)) +
		                    " (or the work limit)",
		                "SmallDB enumerates every small database; use dx.release_mwem for larger universes, or "
		                "fewer columns, coarser domains or a smaller size.");
}

// See smalldb.h.
SmallDbResult
run_smalldb(const SubUniverse &sub, const Workload &w, const std::vector<std::int64_t> &counts, double epsilon,
            int size, RandomSource &rng)
{
	check_smalldb_arguments(w, epsilon, size);
	if (w.queries.empty() || w.universe != sub.size() || counts.size() != w.universe)
		throw CoreError(ErrorKind::Internal, "workload and histogram do not match the universe");
	const std::size_t nx = w.universe, nq = w.queries.size();

	SmallDbResult r;
	const std::vector<double> sens = workload_sensitivities(sub, w);
	r.em_sensitivity = max_sensitivity(sens);
	const bool public_count = count_is_public(sub);
	r.count_epsilon = public_count ? 0 : epsilon * kCountShare;
	r.em_epsilon = (epsilon - r.count_epsilon) * (1 - 1e-12);
	r.n_hat = std::max(0.0, measure_count(sub, counts, r.count_epsilon, rng).value);

	int m = size;
	if (m == 0) {
		const int theorem = smalldb_theorem_size(r.n_hat, r.em_epsilon, r.em_sensitivity, nx, nq);
		m = 1; // the candidate set grows quickly with m: count up to the largest size that fits
		while (m < theorem && fits(nx, nq, m + 1))
			++m;
	}
	r.size = m;
	r.candidates = smalldb_candidates(nx, m);

	const std::vector<__int128> utility = smalldb_scores(w, counts, r.n_hat, m);
	const std::size_t pick = em_sample(rng, utility, score_denominator(w.grid), em_beta(r.em_epsilon, r.em_sensitivity));
	r.rows = smalldb_candidate(nx, m, pick);
	const double scale = r.n_hat / m;
	r.histogram.resize(nx);
	for (std::size_t p = 0; p < nx; ++p)
		r.histogram[p] = scale * static_cast<double>(r.rows[p]);
	return r;
}

} // namespace dxpriv
