// Surrogate predicates for k-way marginal frequencies (statistical_query.h).
#include "core/statistical_query.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/samplers.h"

namespace dxpriv {

namespace {

// min over a != v of d_l(v, a) (per unit of epsilon); +inf for a one-point domain.
double
nearest_distance(const Domain &dom, const ColumnMetric &metric, std::size_t v)
{
	double best = kInfinity;
	for (std::size_t a = 0; a < dom.size(); ++a)
		if (a != v)
			best = std::min(best, metric.distance(dom, v, a));
	return best;
}

double
objective(const std::vector<double> &c, double eps_prime, double *bias)
{
	double b = 0;
	for (double cl : c)
		b += std::max(0.0, (1 - cl / eps_prime) / 2);
	*bias = b;
	return b * b + 2 / (eps_prime * eps_prime);
}

} // namespace

// See statistical_query.h.
bool
marginal_cell_of(const SubUniverse &sub, const std::vector<double> &q, MarginalCell *cell)
{
	const std::size_t ncols = sub.domains.size();
	if (q.size() != sub.size() || ncols == 0)
		return false;
	std::vector<std::vector<char>> seen(ncols);
	for (std::size_t c = 0; c < ncols; ++c)
		seen[c].assign(sub.domains[c].size(), 0);
	std::size_t ones = 0;
	for (std::size_t u = 0; u < q.size(); ++u) {
		if (q[u] == 0)
			continue;
		if (q[u] != 1)
			return false;
		++ones;
		const std::vector<std::size_t> idx = sub.unflatten(u);
		for (std::size_t c = 0; c < ncols; ++c)
			seen[c][idx[c]] = 1;
	}
	if (ones == 0)
		return false;
	MarginalCell out;
	std::size_t free_points = 1;
	for (std::size_t c = 0; c < ncols; ++c) {
		std::size_t distinct = 0, value = 0;
		for (std::size_t v = 0; v < seen[c].size(); ++v)
			if (seen[c][v]) {
				++distinct;
				value = v;
			}
		if (distinct == 1 && seen[c].size() > 1) {
			out.columns.push_back(c);
			out.values.push_back(value);
		} else if (distinct == seen[c].size()) {
			free_points *= distinct;
		} else {
			return false;
		}
	}
	if (out.columns.empty() || ones != free_points) // a cylinder: every combination of the free columns
		return false;
	*cell = out;
	return true;
}

// See statistical_query.h.
double
separable_column_optimum(const Domain &dom, const ColumnMetric &metric, std::size_t value, double n_epsilon,
                         double eps_prime, std::vector<double> *psi)
{
	const double c = n_epsilon * nearest_distance(dom, metric, value) / eps_prime;
	const double t = std::max(0.0, (1 - c) / 2);
	if (psi) {
		psi->assign(dom.size(), 0.0);
		for (std::size_t a = 0; a < dom.size(); ++a)
			(*psi)[a] = a == value ? 1 - t
			                       : std::max(0.0, 1 - t - n_epsilon * metric.distance(dom, value, a) / eps_prime);
	}
	return t;
}

// See statistical_query.h.
SurrogatePlan
plan_marginal_surrogate(const SubUniverse &sub, const MarginalCell &cell, double n, double epsilon)
{
	if (!(n > 0) || !std::isfinite(n) || !(epsilon > 0) || !std::isfinite(epsilon))
		throw CoreError(ErrorKind::InvalidParameter, "row count and epsilon must be positive and finite",
		                "Give the number of rows the frequency divides by and a positive epsilon.");
	if (cell.columns.empty() || cell.columns.size() != cell.values.size())
		throw CoreError(ErrorKind::InvalidParameter, "a marginal needs one value per column",
		                "Name each column of the marginal once with one of its declared values.");
	std::vector<double> c; // per column: n epsilon min_a d_l(v_l, a): t_l = max(0, (1 - c_l / eps') / 2)
	for (std::size_t i = 0; i < cell.columns.size(); ++i) {
		const std::size_t col = cell.columns[i];
		if (col >= sub.domains.size() || cell.values[i] >= sub.domains[col].size())
			throw CoreError(ErrorKind::InvalidParameter, "marginal column or value out of range",
			                "Name declared columns and declared values.");
		for (std::size_t j = 0; j < i; ++j)
			if (cell.columns[j] == col)
				throw CoreError(ErrorKind::InvalidParameter, "a marginal names a column twice",
				                "Name each column of the marginal once.");
		c.push_back(n * epsilon * nearest_distance(sub.domains[col], sub.metrics[col], cell.values[i]));
	}
	const double cap = n * epsilon * sub.presence; // presence edges: eps' <= n epsilon presence
	SurrogatePlan p;
	p.plain_eps_prime = std::min(cap, *std::min_element(c.begin(), c.end()));
	if (!std::isfinite(p.plain_eps_prime))
		throw CoreError(ErrorKind::InvalidParameter, "the marginal is not protected by the metric",
		                "No change of a row moves this frequency at a finite distance: it can be released exactly.");
	p.plain_objective = 2 / (p.plain_eps_prime * p.plain_eps_prime);
	// outer search over eps' in [plain, min(cap, 1e6 plain)] (larger eps' only adds bias beyond it)
	const double lo = std::log(p.plain_eps_prime), hi = std::log(std::min(cap, 1e6 * p.plain_eps_prime));
	double best = p.plain_eps_prime, best_g = p.plain_objective, bias = 0;
	const int steps = 2000;
	for (int s = 0; s <= steps && hi > lo; ++s) {
		const double e = std::exp(lo + (hi - lo) * s / steps);
		const double g = objective(c, e, &bias);
		if (g < best_g) {
			best_g = g;
			best = e;
		}
	}
	// golden-section refinement around the best grid point
	if (hi > lo) {
		double a = std::max(lo, std::log(best) - (hi - lo) / steps), b = std::min(hi, std::log(best) + (hi - lo) / steps);
		const double r = (std::sqrt(5.0) - 1) / 2;
		for (int it = 0; it < 60; ++it) {
			const double x1 = b - r * (b - a), x2 = a + r * (b - a);
			if (objective(c, std::exp(x1), &bias) < objective(c, std::exp(x2), &bias))
				b = x2;
			else
				a = x1;
		}
		const double e = std::exp((a + b) / 2);
		if (objective(c, e, &bias) < best_g) {
			best = e;
			best_g = objective(c, e, &bias);
		}
	}
	p.eps_prime = best;
	p.objective = objective(c, best, &p.bias);
	for (std::size_t i = 0; i < cell.columns.size(); ++i) {
		std::vector<double> psi;
		const std::size_t col = cell.columns[i];
		p.t.push_back(separable_column_optimum(sub.domains[col], sub.metrics[col], cell.values[i], n * epsilon, best, &psi));
		p.psi.push_back(std::move(psi));
	}
	return p;
}

// See statistical_query.h.
double
surrogate_frequency(const SubUniverse &sub, const MarginalCell &cell, const SurrogatePlan &plan,
                    const std::vector<std::int64_t> &counts, double n)
{
	if (counts.size() != sub.size() || plan.psi.size() != cell.columns.size())
		throw CoreError(ErrorKind::Internal, "histogram or plan does not match the marginal");
	double total = 0;
	for (std::size_t u = 0; u < counts.size(); ++u) {
		if (counts[u] == 0)
			continue;
		const std::vector<std::size_t> idx = sub.unflatten(u);
		double w = 1;
		for (std::size_t i = 0; i < cell.columns.size(); ++i)
			w *= plan.psi[i][idx[cell.columns[i]]];
		total += w * static_cast<double>(counts[u]);
	}
	return total / n;
}

// See statistical_query.h.
double
release_marginal_frequency(const SubUniverse &sub, const MarginalCell &cell, const SurrogatePlan &plan,
                           const std::vector<std::int64_t> &counts, double n, RandomSource &rng)
{
	return surrogate_frequency(sub, cell, plan, counts, n) + laplace_on_grid(rng, 1 / plan.eps_prime, std::ldexp(1.0, -40));
}

} // namespace dxpriv
