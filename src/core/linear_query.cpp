// d_X-private Laplace for one linear query: noise calibration on a power-of-two grid, exact sums.
#include "core/linear_query.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"
#include "core/gaussian.h"
#include "core/samplers.h"
#include "core/truncated_laplace.h"

namespace dxpriv {

namespace {

constexpr double kTwo40 = 1099511627776.0;           // 2^40: integer weights keep grid 1 up to this scale
constexpr double kTwo43 = 8796093022208.0;           // 2^43: largest scale in grid units the samplers take
constexpr double kTwo53 = 9007199254740992.0;        // 2^53: largest integer weight represented exactly
constexpr double kTwo100 = 1267650600228229401496703205376.0; // 2^100: cap on one weight in grid units

// Exponent of the lowest set bit of a finite non-zero double: w is an integer multiple of 2^result.
int
lowest_bit_exponent(double w)
{
	int exponent;
	const double mantissa = std::frexp(std::fabs(w), &exponent); // in [0.5, 1)
	const auto bits = static_cast<std::uint64_t>(std::ldexp(mantissa, 53));
	return exponent - 53 + __builtin_ctzll(bits);
}

// Power-of-two grid for noise scale t (t == 0: the answer is released exactly; MECHANISMS.md §3.6).
double
grid_for_scale(double t, bool integer_weights, const std::vector<double> &q, double max_abs_weight)
{
	if (integer_weights && t <= kTwo40)
		return 1;
	if (max_abs_weight == 0)
		return 1; // every weight is zero
	int e;
	if (t > 0) {
		// Documented rule t/grid in [2^40, 2^41); the floor keeps every weight below 2^99 grid
		// units when the weights dwarf the noise, where the rule alone would overflow.
		e = std::max(std::ilogb(t) - 40, std::ilogb(max_abs_weight) - 98);
	} else {
		// Exact sum: the coarsest grid on which every weight is representable, but no finer than
		// 2^-60 of the largest weight so that 2^63 rows cannot overflow 128 bits.
		e = std::numeric_limits<int>::max();
		for (double w : q)
			if (w != 0)
				e = std::min(e, lowest_bit_exponent(w));
		e = std::max(e, std::ilogb(max_abs_weight) - 60);
	}
	return std::ldexp(1.0, std::clamp(e, -1074, 1023));
}

} // namespace

// See linear_query.h.
const char *
noise_family_name(NoiseFamily f)
{
	switch (f) {
	case NoiseFamily::Gaussian:
		return "gaussian";
	case NoiseFamily::TruncatedLaplace:
		return "truncated_laplace";
	case NoiseFamily::Laplace:
		break;
	}
	return "laplace";
}

// Rejects a noise scale above kMaxNoiseScale (also catches +inf from a zero distance).
void
check_noise_scale(double scale)
{
	if (!(scale <= kMaxNoiseScale))
		throw CoreError(ErrorKind::ProgramLimit, "noise scale of the query exceeds the limit of 1e15",
		                "Raise epsilon, narrow the domain of the aggregated column, or use a coarser metric.");
}

// Grid of LinearNoisePlan for weights q at noise scale t; reports whether q is integer-valued.
double
choose_grid(double t, const std::vector<double> &q, bool &integer_weights)
{
	integer_weights = true;
	double max_abs = 0;
	for (double w : q) {
		max_abs = std::max(max_abs, std::fabs(w));
		if (std::floor(w) != w || std::fabs(w) > kTwo53)
			integer_weights = false;
	}
	return grid_for_scale(t, integer_weights, q, max_abs);
}

// Rejects a plan whose scale in grid units exceeds what the samplers accept (2^43).
void
check_grid_ratio(double scale, double grid)
{
	// Rounding can raise S on pathologically short edges; the samplers accept scale/grid <= 2^43.
	if (scale / grid > kTwo43)
		throw CoreError(ErrorKind::ProgramLimit, "noise scale of the query is too large for its weight granularity",
		                "Raise epsilon or use a coarser metric on the referenced columns.");
}

// Weight in grid units, rounded half away from zero.
__int128
to_grid_units(double w, double grid)
{
	if (!(grid > 0) || !std::isfinite(grid))
		throw CoreError(ErrorKind::Internal, "noise grid is not a positive finite number");
	const double x = w / grid;
	if (!(std::fabs(x) < kTwo100)) // also rejects NaN and infinities
		throw CoreError(ErrorKind::DataException, "weight of a row is too large for the noise grid",
		                "Narrow the domain of the aggregated column or check the query expression.");
	if (std::fabs(x) < 4.0e18) {
		// std::round without the libm call: t = trunc(x) is exact, and so is x - t (Sterbenz for
		// |x| >= 1, x itself below; 0 from 2^52 on, where x is an integer), so halves round away
		// from zero exactly as std::round does
		std::int64_t t = static_cast<std::int64_t>(x);
		const double frac = x - static_cast<double>(t);
		if (frac >= 0.5)
			++t;
		else if (frac <= -0.5)
			--t;
		return t;
	}
	return static_cast<__int128>(std::round(x));
}

// Calibrates the d_X-private Laplace mechanism for one linear query with weights q at epsilon.
LinearNoisePlan
plan_linear_query(const SubUniverse &sub, const std::vector<double> &q, double epsilon)
{
	if (!std::isfinite(epsilon) || !(epsilon > 0))
		throw CoreError(ErrorKind::InvalidParameter, "epsilon must be positive and finite",
		                "Give the query a positive privacy budget.");
	const double s_raw = generalized_sensitivity(sub, q); // validates q and the sub-universe

	LinearNoisePlan plan;
	double t = s_raw / epsilon;
	check_noise_scale(t);
	if (s_raw > 0)
		t = std::max(t, std::numeric_limits<double>::min()); // never let a positive scale underflow to 0
	plan.grid = choose_grid(t, q, plan.integer_weights);
	if (s_raw == 0)
		return plan; // constant on every finite-distance edge: exact answer, no noise

	std::vector<double> q_grid(q.size());
	for (std::size_t i = 0; i < q.size(); i++)
		q_grid[i] = static_cast<double>(to_grid_units(q[i], plan.grid)) * plan.grid;
	plan.sensitivity = generalized_sensitivity(sub, q_grid);
	finish_noise_scale(plan, epsilon);
	return plan;
}

// See linear_query.h.
void
finish_noise_scale(LinearNoisePlan &plan, double epsilon)
{
	plan.scale = plan.sensitivity / epsilon;
	if (plan.sensitivity > 0)
		plan.scale = std::max(plan.scale, std::numeric_limits<double>::min());
	check_noise_scale(plan.scale);
	check_grid_ratio(plan.scale, plan.grid);
}

// Adds one row's weight in grid units; overflow is an error, never a wrapped sum.
void
GridSum::add(double w, double grid)
{
	GridSum row;
	row.units = to_grid_units(w, grid);
	row.rows = 1;
	merge(row);
}

// count rows of one weight: units(w) * count, the exact total of count calls of add().
void
GridSum::add_repeated(double w, double grid, std::int64_t count)
{
	if (count < 0)
		throw CoreError(ErrorKind::Internal, "negative row count");
	GridSum rows_of_w;
	if (__builtin_mul_overflow(to_grid_units(w, grid), static_cast<__int128>(count), &rows_of_w.units))
		throw CoreError(ErrorKind::DataException, "sum of the query weights overflows",
		                "Narrow the domain of the aggregated column or aggregate fewer rows.");
	rows_of_w.rows = count;
	merge(rows_of_w);
}

// Combines another partial sum into this one (order-independent).
void
GridSum::merge(const GridSum &other)
{
	__int128 new_units;
	std::int64_t new_rows;
	// Overflow leaves this state unchanged (the builtins store the wrapped value).
	if (__builtin_add_overflow(units, other.units, &new_units) || __builtin_add_overflow(rows, other.rows, &new_rows))
		throw CoreError(ErrorKind::DataException, "sum of the query weights overflows",
		                "Narrow the domain of the aggregated column or aggregate fewer rows.");
	units = new_units;
	rows = new_rows;
}

// Releases grid * (units + DLap(scale/grid)), or the exact sum when the plan needs no noise.
double
GridSum::release(RandomSource &rng, const LinearNoisePlan &plan) const
{
	if (!(plan.scale >= 0) || !(plan.grid > 0))
		throw CoreError(ErrorKind::Internal, "invalid noise plan");
	__int128 total = units;
	if (plan.scale > 0) {
		std::int64_t noise = 0;
		switch (plan.family) {
		case NoiseFamily::Laplace:
			noise = discrete_laplace(rng, rational_at_least(plan.scale / plan.grid));
			break;
		case NoiseFamily::Gaussian:
			noise = gaussian_grid_steps(rng, plan.scale, plan.grid);
			break;
		case NoiseFamily::TruncatedLaplace:
			if (!(plan.bound >= plan.grid))
				throw CoreError(ErrorKind::Internal, "invalid noise plan");
			noise = gtl_grid_steps(rng, GeneralizedTruncatedLaplace(plan.scale, -plan.bound, plan.bound), plan.grid);
			break;
		}
		if (__builtin_add_overflow(total, static_cast<__int128>(noise), &total))
			throw CoreError(ErrorKind::DataException, "sum of the query weights overflows",
			                "Narrow the domain of the aggregated column or aggregate fewer rows.");
	}
	// One correctly rounded int128 -> double conversion; scaling by a power of two is exact.
	return static_cast<double>(total) * plan.grid;
}

} // namespace dxpriv
