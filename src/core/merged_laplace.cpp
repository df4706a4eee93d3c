// Merged Laplacian: corrected continuous density, exact privacy loss, closed-form costs and an exact
// grid sampler (MECHANISMS.md §5.8–5.9).
#include "core/merged_laplace.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include <boost/math/special_functions/gamma.hpp>

#include "core/big_sampling.h"
#include "core/error.h"
#include "core/samplers.h"

namespace dxpriv {

namespace {

using u128 = unsigned __int128;

constexpr double kMergedMaxGridUnits = 4611686018427387904.0; // 2^62
constexpr double kInf = std::numeric_limits<double>::infinity();

// int_0^y e^{-u} du, with y = +inf allowed.
double merged_phi0(double y)
{
	return std::isinf(y) ? 1.0 : -std::expm1(-y);
}

// int_0^y u e^{-u} du, with y = +inf allowed.
double merged_phi1(double y)
{
	return std::isinf(y) ? 1.0 : boost::math::gamma_p(2.0, y);
}

// int_0^y u^2 e^{-u} du, with y = +inf allowed.
double merged_phi2(double y)
{
	return std::isinf(y) ? 2.0 : 2.0 * boost::math::gamma_p(3.0, y);
}

// Value at u >= 0 of the continuous piecewise-linear function with value 0 at 0 and slope slopes[k]
// on [edges[k], edges[k+1]) (edges[0] = 0; the last band is unbounded).
double piecewise_height(const std::vector<double> &edges, const std::vector<double> &slopes, double u)
{
	double height = 0.0;
	for (std::size_t k = 0; k < slopes.size(); ++k) {
		const double end = k + 1 < edges.size() ? edges[k + 1] : kInf;
		if (u <= end)
			return height + (u - edges[k]) * slopes[k];
		height += (end - edges[k]) * slopes[k];
	}
	return height; // not reached: the last band is unbounded
}

// max over u >= 0 of H(u + width) - H(u) for the piecewise-linear H above. The window increase is
// piecewise linear in u with kinks where u or u + width crosses an edge, so its maximum is attained
// at u = 0, u = edge, or u = edge - width (the last edge covers the unbounded outer band).
double max_window_increase(const std::vector<double> &edges, const std::vector<double> &slopes, double width)
{
	std::vector<double> candidates{0.0};
	for (double e : edges) {
		candidates.push_back(e);
		if (e - width > 0.0)
			candidates.push_back(e - width);
	}
	double best = 0.0;
	for (double u : candidates)
		best = std::max(best, piecewise_height(edges, slopes, u + width) - piecewise_height(edges, slopes, u));
	return best;
}

// The grid law of merged_laplace_on_grid: rational scales and integer breakpoints.
struct GridLaw {
	std::vector<Rational> scales;     // t_k
	std::vector<std::uint64_t> edges; // b_0 = 0, b_1, ..., b_{K-1}
	std::size_t flattest = 0;         // index of the largest t_k (smallest slope)
};

// Rounds the scales up and the breakpoints to the nearest grid step.
GridLaw make_grid_law(const MergedLaplace &law, double grid)
{
	validate_grid(grid);
	GridLaw g;
	for (std::size_t k = 0; k < law.bands(); ++k)
		g.scales.push_back(scale_in_grid_units(law.band_scale(k), grid));
	g.edges.push_back(0);
	for (std::size_t k = 1; k < law.bands(); ++k) {
		const double steps = std::nearbyint(law.breakpoint(k) / grid);
		if (!(steps <= kMergedMaxGridUnits))
			throw CoreError(ErrorKind::ProgramLimit, "merged laplacian breakpoint is too far out for the grid",
			                "Breakpoints beyond 2^62 grid steps are not supported; use a coarser grid.");
		g.edges.push_back(static_cast<std::uint64_t>(steps));
	}
	// Slope den/num is smallest where num/den is largest: compare num_k den_j with num_j den_k exactly.
	for (std::size_t k = 1; k < g.scales.size(); ++k) {
		const Rational &a = g.scales[k], &b = g.scales[g.flattest];
		if (static_cast<u128>(a.num) * b.den > static_cast<u128>(b.num) * a.den)
			g.flattest = k;
	}
	return g;
}

} // namespace

// Validates the bands and precomputes h(c_k) and ln a_1 from the normalisation
// 2 a_1 sum_k e^{-h(c_{k-1})} lambda_k phi0((c_k - c_{k-1})/lambda_k) = 1.
MergedLaplace::MergedLaplace(double sensitivity, std::vector<double> epsilons, std::vector<double> breakpoints)
    : sensitivity_(sensitivity), log_a1_(0.0)
{
	if (!std::isfinite(sensitivity) || !(sensitivity > 0.0))
		throw CoreError(ErrorKind::InvalidParameter, "sensitivity must be positive and finite",
		                "The sensitivity bounds how much one record can change the query answer.");
	if (epsilons.empty())
		throw CoreError(ErrorKind::InvalidParameter, "merged laplacian needs at least one band",
		                "Pass one epsilon per band.");
	if (breakpoints.size() + 1 != epsilons.size())
		throw CoreError(ErrorKind::InvalidParameter, "merged laplacian needs one breakpoint fewer than bands",
		                "K bands are separated by K-1 breakpoints.");
	for (double e : epsilons) {
		if (!std::isfinite(e) || !(e > 0.0))
			throw CoreError(ErrorKind::InvalidParameter, "every band epsilon must be positive and finite");
	}
	double previous = 0.0;
	for (double c : breakpoints) {
		if (!std::isfinite(c) || !(c > previous))
			throw CoreError(ErrorKind::InvalidParameter, "merged laplacian breakpoints must increase from zero",
			                "Use finite breakpoints 0 < c_1 < c_2 < ...");
		previous = c;
	}
	edges_.push_back(0.0);
	edges_.insert(edges_.end(), breakpoints.begin(), breakpoints.end());
	for (double e : epsilons)
		scales_.push_back(sensitivity / e);
	log_height_.push_back(0.0);
	for (std::size_t k = 1; k < scales_.size(); ++k)
		log_height_.push_back(log_height_[k - 1] + (edges_[k] - edges_[k - 1]) / scales_[k - 1]);
	double half_mass = 0.0; // int_0^inf e^{-h(u)} du
	for (std::size_t k = 0; k < scales_.size(); ++k) {
		const double width = k + 1 < edges_.size() ? edges_[k + 1] - edges_[k] : kInf;
		half_mass += std::exp(-log_height_[k]) * scales_[k] * merged_phi0(width / scales_[k]);
	}
	log_a1_ = -std::log(2.0 * half_mass);
}

// c_k for k = 1..K-1.
double MergedLaplace::breakpoint(std::size_t k) const
{
	if (k == 0 || k >= edges_.size())
		throw CoreError(ErrorKind::InvalidParameter, "breakpoint index is out of range");
	return edges_[k];
}

// a_k = a_1 exp(-h(c_{k-1}) + c_{k-1}/lambda_k), the continuity recursion of §5.8 in closed form.
double MergedLaplace::band_coefficient(std::size_t k) const
{
	return std::exp(log_a1_ - log_height_.at(k) + edges_.at(k) / scales_.at(k));
}

// 2 a_1 e^{-h(c_{k-1})} lambda_k phi0(w_k/lambda_k).
double MergedLaplace::band_probability(std::size_t k) const
{
	const double width = k + 1 < edges_.size() ? edges_[k + 1] - edges_.at(k) : kInf;
	return 2.0 * std::exp(log_a1_ - log_height_.at(k)) * scales_.at(k) * merged_phi0(width / scales_[k]);
}

// ln a_1 - h(|x|).
double MergedLaplace::log_density(double x) const
{
	const double u = std::fabs(x);
	std::size_t k = scales_.size() - 1;
	while (k > 0 && u < edges_[k])
		--k;
	return log_a1_ - log_height_[k] - (u - edges_[k]) / scales_[k];
}

// exp(log_density(x)).
double MergedLaplace::density(double x) const
{
	return std::exp(log_density(x));
}

// For x >= 0: a_1 sum over the bands beyond x of e^{-h(start)} lambda_k phi0((end - start)/lambda_k);
// for x < 0: 1 - P(X > -x) by symmetry.
double MergedLaplace::survival(double x) const
{
	if (std::isnan(x))
		throw CoreError(ErrorKind::InvalidParameter, "argument must not be nan");
	if (x < 0.0)
		return 1.0 - survival(-x);
	double total = 0.0;
	for (std::size_t k = 0; k < scales_.size(); ++k) {
		const double end = k + 1 < edges_.size() ? edges_[k + 1] : kInf;
		if (end <= x)
			continue;
		const double start = std::max(x, edges_[k]);
		const double log_start = log_height_[k] + (start - edges_[k]) / scales_[k];
		total += std::exp(log_a1_ - log_start) * scales_[k] * merged_phi0((end - start) / scales_[k]);
	}
	return total;
}

// 1 - P(X > x), or P(X > -x) for negative x (no cancellation in the lower tail).
double MergedLaplace::cdf(double x) const
{
	if (x < 0.0)
		return survival(-x);
	return 1.0 - survival(x);
}

// 2 sum_k a_1 e^{-h_k} int_0^{w_k} (c + u) e^{-u/lambda} du, the integral as c lambda phi0 + lambda^2 phi1.
double MergedLaplace::mean_abs() const
{
	double total = 0.0;
	for (std::size_t k = 0; k < scales_.size(); ++k) {
		const double l = scales_[k], c = edges_[k];
		const double y = k + 1 < edges_.size() ? (edges_[k + 1] - c) / l : kInf;
		total += std::exp(log_a1_ - log_height_[k]) * (c * l * merged_phi0(y) + l * l * merged_phi1(y));
	}
	return 2.0 * total;
}

// 2 sum_k a_1 e^{-h_k} int_0^{w_k} (c + u)^2 e^{-u/lambda} du = c^2 l phi0 + 2 c l^2 phi1 + l^3 phi2.
double MergedLaplace::second_moment() const
{
	double total = 0.0;
	for (std::size_t k = 0; k < scales_.size(); ++k) {
		const double l = scales_[k], c = edges_[k];
		const double y = k + 1 < edges_.size() ? (edges_[k + 1] - c) / l : kInf;
		total += std::exp(log_a1_ - log_height_[k]) * (c * c * l * merged_phi0(y) + 2.0 * c * l * l * merged_phi1(y) + l * l * l * merged_phi2(y));
	}
	return 2.0 * total;
}

// sensitivity / min_k lambda_k.
double MergedLaplace::max_epsilon() const
{
	return sensitivity_ / *std::min_element(scales_.begin(), scales_.end());
}

// Largest window increase of h over a window of length `sensitivity`.
double MergedLaplace::privacy_epsilon() const
{
	std::vector<double> slopes;
	for (double l : scales_)
		slopes.push_back(1.0 / l);
	return max_window_increase(edges_, slopes, sensitivity_);
}

// Proposal DLap(t_max); acceptance exp(-sum_k len_k(|z|) (1/t_k - 1/t_max)) as one wide rational.
double merged_laplace_on_grid(RandomSource &rng, const MergedLaplace &law, double grid)
{
	const GridLaw g = make_grid_law(law, grid);
	const Rational flat = g.scales[g.flattest];
	// 1/t_k - 1/t_max = den_k/num_k - den_f/num_f = (den_k num_f - den_f num_k) / (num_k num_f) >= 0.
	// Over the common denominator D = prod_k num_k num_f: coef_k = (den_k num_f - den_f num_k) D/(num_k num_f).
	BigInt common = 1;
	for (const Rational &t : g.scales)
		common *= BigInt(t.num) * BigInt(flat.num);
	std::vector<BigInt> coef;
	for (const Rational &t : g.scales) {
		const BigInt diff = BigInt(t.den) * BigInt(flat.num) - BigInt(flat.den) * BigInt(t.num);
		coef.push_back(diff * (common / (BigInt(t.num) * BigInt(flat.num))));
	}
	for (;;) {
		const std::int64_t z = discrete_laplace(rng, flat);
		const std::uint64_t a = z < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(z) : static_cast<std::uint64_t>(z);
		BigInt gamma = 0;
		for (std::size_t k = 0; k < g.scales.size(); ++k) {
			const std::uint64_t start = g.edges[k];
			if (a <= start)
				break;
			const std::uint64_t end = k + 1 < g.edges.size() ? std::min(a, g.edges[k + 1]) : a;
			if (end > start)
				gamma += BigInt(end - start) * coef[k];
		}
		if (bernoulli_exp_minus_big(rng, gamma, common)) {
			const double noise = grid * static_cast<double>(z);
			return noise;
		}
	}
}

// Largest increase of H over ceil(sensitivity/grid) steps (slopes den_k/num_k per step).
double merged_laplace_grid_epsilon(const MergedLaplace &law, double grid)
{
	const GridLaw g = make_grid_law(law, grid);
	const double steps = std::ceil(law.sensitivity() / grid);
	if (!(steps <= kMergedMaxGridUnits))
		throw CoreError(ErrorKind::ProgramLimit, "sensitivity is too large for the grid", "Use a coarser grid.");
	std::vector<double> edges, slopes;
	for (std::uint64_t e : g.edges)
		edges.push_back(static_cast<double>(e));
	for (const Rational &t : g.scales)
		slopes.push_back(static_cast<double>(static_cast<long double>(t.den) / static_cast<long double>(t.num)));
	return max_window_increase(edges, slopes, steps);
}

} // namespace dxpriv
