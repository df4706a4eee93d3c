// d_X-private Laplace for one linear query: calibration (scale, grid) and exact grid accumulation.
#pragma once

#include <cstdint>
#include <vector>

#include "core/random.h"
#include "core/sensitivity.h"

namespace dxpriv {

// Largest noise scale dxpriv will apply (an answer this noisy is useless, and the samplers'
// integer arithmetic is sized for it).
constexpr double kMaxNoiseScale = 1e15;

// The law of the noise added to a linear query's exact grid sum (approximate_dp.h calibrates the
// two (epsilon, delta) families).
enum class NoiseFamily {
	Laplace,         // discrete Laplace DLap(scale/grid): pure epsilon
	Gaussian,        // discrete Gaussian N_Z(0, (scale/grid)^2): (epsilon, delta) via zCDP
	TruncatedLaplace // discrete Laplace of scale/grid truncated to |Z| <= bound/grid: (epsilon, delta)
};

// SQL-facing name: "laplace", "gaussian", "truncated_laplace".
const char *noise_family_name(NoiseFamily f);

// How one linear query is answered: answer = grid * (sum_rows round(w/grid) + Z), Z drawn from
// `family` (Laplace: DLap(scale/grid)).
struct LinearNoisePlan {
	double sensitivity = 0; // S(q) of the grid-rounded weights
	double scale = 0;       // Laplace scale S(q)/epsilon (Gaussian: standard deviation); 0 = no noise
	// Power of two. Integer weights: 1 while scale <= 2^40. Otherwise 2^(floor(log2 scale) - 40),
	// so scale/grid lies in [2^40, 2^41) and rounding bias per row is below scale * 2^-41.
	double grid = 1;
	bool integer_weights = false;
	NoiseFamily family = NoiseFamily::Laplace;
	double bound = 0; // TruncatedLaplace: |noise| <= bound, a positive multiple of grid; else 0
};

// Weight in grid units: round-half-away-from-zero of w/grid. The transition function and the
// calibration use this same function, so the sensitivity is computed on exactly what is summed.
__int128 to_grid_units(double w, double grid);

// Throws CoreError(ProgramLimit) when a noise scale exceeds kMaxNoiseScale (or is +inf or NaN).
void check_noise_scale(double scale);

// The grid rule of LinearNoisePlan for the weights q at noise scale t >= 0 (t == 0: the coarsest
// grid on which the exact sum is representable). Sets integer_weights (every weight an integer
// of magnitude <= 2^53). Shared by plan_linear_query and plan_multi_linear.
double choose_grid(double t, const std::vector<double> &q, bool &integer_weights);

// Throws CoreError(ProgramLimit) when scale/grid exceeds what the samplers accept (2^43).
void check_grid_ratio(double scale, double grid);

// Sets plan.scale = plan.sensitivity / epsilon (a positive sensitivity never gives scale 0) and
// checks it against kMaxNoiseScale and the grid ratio: the last step of every linear noise plan.
void finish_noise_scale(LinearNoisePlan &plan, double epsilon);

// Chooses the grid, rounds q to it and computes S(q) and the scale S/epsilon (MECHANISMS.md §3.6–3.7).
// epsilon > 0 finite. Throws CoreError(InvalidParameter) for bad epsilon, (ProgramLimit) when the
// scale exceeds kMaxNoiseScale.
LinearNoisePlan plan_linear_query(const SubUniverse &sub, const std::vector<double> &q, double epsilon);

// Exact partial sum of grid units; associative, so partial states combine in any order.
struct GridSum {
	__int128 units = 0;
	std::int64_t rows = 0;
	// Adds one row's weight. Throws CoreError(DataException) on overflow.
	void add(double w, double grid);
	// Adds `count` rows of weight w (count >= 0): the same units and rows as `count` calls of
	// add(w, grid), in one overflow-checked multiplication. Throws CoreError(DataException) on overflow.
	void add_repeated(double w, double grid, std::int64_t count);
	void merge(const GridSum &other);
	// Noisy release: grid * (units + Z) with Z from plan.family (DLap(scale/grid), N_Z(0,
	// (scale/grid)^2) or DLap(scale/grid) truncated to [-bound/grid, bound/grid]); exact when
	// scale == 0.
	double release(RandomSource &rng, const LinearNoisePlan &plan) const;
};

} // namespace dxpriv
