// The workers' inline grid-1 rounding (core/grid_units_int64.h, used by pg/executor/grid_units.h)
// against to_grid_units (core/linear_query.h) and against std::round, on extreme and random values.
#include "core/grid_units_int64.h"
#include "core/linear_query.h"

#include "test_support.h"

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace dxpriv;
using dxpriv::testing::expect_core_error;

namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

// The rounding both must implement, from the C library: half away from zero.
__int128
reference_units(double w)
{
	return static_cast<__int128>(std::round(w));
}

// w on grid 1: the inline path, to_grid_units and std::round agree (and both refuse what
// to_grid_units refuses: NaN, infinities, |w| >= 2^100).
void
expect_same(double w)
{
	SCOPED_TRACE(::testing::Message() << "w = " << std::hexfloat << w);
	if (!(std::fabs(w) < std::ldexp(1.0, 100))) {
		std::int64_t out = 0;
		expect_core_error(ErrorKind::DataException, [&] { (void) to_grid_units(w, 1.0); });
		expect_core_error(ErrorKind::DataException, [&] { (void) grid_units_int64(w, 1.0, &out); });
		return;
	}
	const __int128 core = to_grid_units(w, 1.0);
	EXPECT_TRUE(core == reference_units(w)) << "to_grid_units differs from std::round";
	std::int64_t inl = 0;
	const GridUnitsStatus st = grid_units_int64(w, 1.0, &inl);
	if (core > kMax || core < kMin) {
		EXPECT_EQ(static_cast<int>(GridUnitsStatus::OutOfRange), static_cast<int>(st));
		return;
	}
	ASSERT_EQ(static_cast<int>(GridUnitsStatus::Ok), static_cast<int>(st));
	EXPECT_TRUE(static_cast<__int128>(inl) == core) << "inline " << inl << " vs to_grid_units "
	                                                << static_cast<long long>(core);
}

// w and -w, and their neighbours one ulp away on both sides.
void
expect_same_around(double w)
{
	for (double s : {w, -w}) {
		expect_same(s);
		expect_same(std::nextafter(s, 0.0));
		expect_same(std::nextafter(s, s > 0 ? HUGE_VAL : -HUGE_VAL));
	}
}

TEST(GridUnitsInline, ExtremeValues)
{
	const double two52 = std::ldexp(1.0, 52), two53 = std::ldexp(1.0, 53), two62 = std::ldexp(1.0, 62),
	             two63 = std::ldexp(1.0, 63);
	const std::vector<double> values = {
	    0.0, std::numeric_limits<double>::denorm_min(), DBL_MIN, 0.25, 0.5, 0.75, 1.0, 1.5, 2.5, 3.5,
	    0.49999999999999994, // nextafter(0.5, 0): where floor(w + 0.5) rounds the wrong way
	    two52 - 0.5, two52 - 1.5, two52, two52 + 1, two53 - 1, two53, two53 + 2, two62, 4.0e18, 9.0e18, two63,
	    std::ldexp(1.0, 64), std::ldexp(1.0, 99), std::ldexp(1.0, 100), DBL_MAX,
	    static_cast<double>(kMax), static_cast<double>(kMin)};
	for (double w : values)
		expect_same_around(w);
	expect_same(-0.0);
	expect_same(std::numeric_limits<double>::quiet_NaN());
	expect_same(std::numeric_limits<double>::infinity());
	expect_same(-std::numeric_limits<double>::infinity());
	// the exact ends of int64: -2^63 is an int64, 2^63 is not
	std::int64_t out = 0;
	ASSERT_EQ(static_cast<int>(GridUnitsStatus::Ok), static_cast<int>(grid_units_int64(-two63, 1.0, &out)));
	EXPECT_EQ(kMin, out);
	EXPECT_EQ(static_cast<int>(GridUnitsStatus::OutOfRange), static_cast<int>(grid_units_int64(two63, 1.0, &out)));
	// halves round away from zero, including the last halves below 2^52
	for (double h : {0.5, 1.5, 2.5, two52 - 0.5}) {
		ASSERT_EQ(static_cast<int>(GridUnitsStatus::Ok), static_cast<int>(grid_units_int64(h, 1.0, &out)));
		EXPECT_EQ(static_cast<std::int64_t>(h + 0.5), out) << h;
		ASSERT_EQ(static_cast<int>(GridUnitsStatus::Ok), static_cast<int>(grid_units_int64(-h, 1.0, &out)));
		EXPECT_EQ(-static_cast<std::int64_t>(h + 0.5), out) << -h;
	}
}

TEST(GridUnitsInline, RandomDoublesAndInt64)
{
	std::mt19937_64 rng(20261129);
	for (int i = 0; i < 20000; ++i) {
		// any bit pattern (every exponent: denormals, NaNs, infinities, huge values; most of them
		// refused by both, which costs an exception each)
		const std::uint64_t bits = rng();
		double w;
		std::memcpy(&w, &bits, sizeof w);
		expect_same(w);
	}
	for (int i = 0; i < 100000; ++i) {
		// magnitudes spread over [2^-30, 2^64), the inline path's whole range and past it
		const double mag = std::ldexp(std::uniform_real_distribution<double>(1.0, 2.0)(rng),
		                              static_cast<int>(rng() % 94) - 30);
		expect_same(rng() & 1 ? mag : -mag);
		// halves and integers of every size
		const std::int64_t k = static_cast<std::int64_t>(rng() >> (rng() % 64));
		expect_same(static_cast<double>(k) + 0.5);
		expect_same(static_cast<double>(k));
		expect_same(-static_cast<double>(k));
	}
	for (std::int64_t k : {kMin, kMin + 1, kMax - 1, kMax, std::int64_t{0}, std::int64_t{-1}, std::int64_t{1}})
		expect_same(static_cast<double>(k));
}

TEST(GridUnitsInline, OtherGridsGoThroughToGridUnits)
{
	std::int64_t out = 0;
	for (double grid : {0.0, -1.0, -0.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()})
		EXPECT_EQ(static_cast<int>(GridUnitsStatus::BadGrid), static_cast<int>(grid_units_int64(3.0, grid, &out)));
	std::mt19937_64 rng(7);
	for (int i = 0; i < 20000; ++i) {
		const double grid = std::ldexp(1.0, static_cast<int>(rng() % 80) - 40);
		const double w = std::ldexp(std::uniform_real_distribution<double>(-2.0, 2.0)(rng), static_cast<int>(rng() % 100) - 40);
		const __int128 core = to_grid_units(w, grid);
		const GridUnitsStatus st = grid_units_int64(w, grid, &out);
		if (core > kMax || core < kMin) {
			EXPECT_EQ(static_cast<int>(GridUnitsStatus::OutOfRange), static_cast<int>(st));
		} else {
			ASSERT_EQ(static_cast<int>(GridUnitsStatus::Ok), static_cast<int>(st));
			EXPECT_TRUE(static_cast<__int128>(out) == core) << w << " / " << grid;
		}
	}
}

} // namespace
