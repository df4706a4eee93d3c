// Unit tests for core/range_index.h: range_index and range_index_recip against Domain::index_of
// (the reference mapping of a value to its range grid point) over millions of random and adversarial
// values: grid points, exact halves, a few ulps around the halves, huge and tiny magnitudes,
// negative values, NaN, infinities, subnormals, values outside the domain.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/domain.h"
#include "core/error.h"
#include "core/range_index.h"

using namespace dxpriv;

namespace {

struct Grid {
	double lo, hi, step;
};

// Declared grids of every kind: unit and power-of-two steps, decimal steps (0.001, 0.1, 0.003, 1/3),
// negative and huge bounds, tiny steps near the normal range, one point, the largest size.
const std::vector<Grid> &
grids()
{
	static const std::vector<Grid> g = {
	    {0, 1, 0.001},          {0, 50, 1},          {-4, 10, 2},         {0.1, 0.7, 0.1},
	    {-1, 1, 0.25},          {-123.456, 987.654, 0.003}, {0, 1, 1.0 / 3}, {5, 5, 1},
	    {0, 0.7, 0.07},         {0, 999999, 1},      {0, 200000, 1},      {-0.5, 0.5, 0.001},
	    {1e12, 1e12 + 4e4, 0.05}, {-1e300, 1e300, 1e295}, {-1e-300, 1e-300, 1e-305}, {0, 1e-303, 1e-308},
	    {1e-3, 1.7, 1e-5},      {-7.25, 3.5, 0.0625},  {2.5, 1000.5, 0.5}, {0, 99999.99, 0.1},
	    {-32768, 32767, 1},     {-2147483648.0, 2147483647.0, 4295}, {0, 1e6, 1e6}, {0, 3, 3}};
	return g;
}

// Every way the tests compute a grid's index: the reference, range_index (with the power-of-two
// reciprocal as the one-pass map sets it), range_index_recip when the grid is served.
struct Checker {
	Domain d;
	double lo, step, inv, recip, last;
	std::size_t size;
	std::size_t checked = 0, fast = 0, differ_quotient = 0;

	explicit Checker(const Grid &g) : d(Domain::range(g.lo, g.hi, g.step))
	{
		lo = d.lo();
		step = d.step();
		size = d.size();
		int e;
		const double i = 1.0 / step;
		inv = std::frexp(step, &e) == 0.5 && std::isfinite(i) && std::frexp(i, &e) == 0.5 ? i : 0.0;
		recip = range_recip(step, size);
		last = static_cast<double>(size - 1);
	}

	void check(double v)
	{
		const std::size_t want = d.index_of(v);
		ASSERT_EQ(range_index(v, lo, step, inv, size), want) << "range_index v=" << v << " lo=" << lo << " step=" << step;
		ASSERT_EQ(range_index(v, lo, step, 0.0, size), want) << "range_index/div v=" << v;
		if (recip != 0) {
			ASSERT_EQ(range_index_recip(v, lo, step, recip, last, size), want)
			    << "range_index_recip v=" << std::hexfloat << v << " lo=" << lo << " step=" << step;
			const double y = (v - lo) * recip;
			// the cases that answer without the reference (as range_index_recip decides)
			bool served = false;
			if (y >= 0.5 && y < last) {
				const double z = y + 0.5;
				const double f = z - static_cast<double>(static_cast<std::int64_t>(z));
				served = f > y * 0x1p-49 && f < 1.0 - y * 0x1p-49;
			} else {
				served = y < 0.5 - 0x1p-40 || y >= last;
			}
			fast += served;
			differ_quotient += !std::isnan(v) && y != (v - lo) / step;
		}
		++checked;
	}

	// v and the k doubles either side of it
	void around(double v, int k)
	{
		check(v);
		double a = v, b = v;
		for (int i = 0; i < k; ++i) {
			a = std::nextafter(a, -INFINITY);
			b = std::nextafter(b, INFINITY);
			check(a);
			check(b);
		}
	}
};

double
from_bits(std::uint64_t b)
{
	double v;
	std::memcpy(&v, &b, sizeof v);
	return v;
}

const double kSpecial[] = {0.0, -0.0, INFINITY, -INFINITY, std::numeric_limits<double>::quiet_NaN(),
                           -std::numeric_limits<double>::quiet_NaN(), DBL_MAX, -DBL_MAX, DBL_MIN, -DBL_MIN,
                           std::numeric_limits<double>::denorm_min(), -std::numeric_limits<double>::denorm_min(),
                           0.5, -0.5, 0.49999999999999994, 1e300, -1e300, 1e-300, 4503599627370496.0,
                           9223372036854775808.0, 1.8446744073709552e19, 2147483647.0, -2147483648.0};

TEST(RangeIndex, RecipServesEveryDeclarableGrid)
{
	for (const Grid &g : grids()) {
		const Domain d = Domain::range(g.lo, g.hi, g.step);
		// only a subnormal step (or 1/step overflowing) leaves a grid to range_index
		EXPECT_EQ(range_recip(d.step(), d.size()) != 0, d.step() >= DBL_MIN) << g.lo << " " << g.hi << " " << g.step;
	}
	EXPECT_EQ(range_recip(1e-310, 10), 0.0);
	EXPECT_EQ(range_recip(0.0, 10), 0.0);
	EXPECT_EQ(range_recip(-1.0, 10), 0.0);
	EXPECT_EQ(range_recip(INFINITY, 10), 0.0);
	EXPECT_EQ(range_recip(std::numeric_limits<double>::quiet_NaN(), 10), 0.0);
	EXPECT_EQ(range_recip(1.0, 0), 0.0);
	EXPECT_EQ(range_recip(1.0, (std::size_t(1) << 41) + 1), 0.0);
	EXPECT_EQ(range_recip(0.001, 1001), 1.0 / 0.001);
}

// Grid points, exact halves and the 8 doubles either side of both (as computed several ways), the
// domain's ends and beyond, and the special values, on every grid.
TEST(RangeIndex, GridPointsHalvesAndNeighbours)
{
	for (const Grid &g : grids()) {
		Checker c(g);
		const std::size_t n = c.size;
		const std::size_t stride = n > 20000 ? n / 20000 : 1;
		for (std::size_t i = 0; i < n + 2; i += (i < 3 || i + 3 > n ? 1 : stride)) {
			const double di = static_cast<double>(i);
			c.around(c.lo + di * c.step, 8);
			c.around(c.lo + (di + 0.5) * c.step, 8);
			c.around(c.lo + di * c.step + 0.5 * c.step, 4);
			c.around(c.lo + (di - 0.5) * c.step, 4);
			c.around(std::fma(di + 0.5, c.step, c.lo), 4);
			c.around(-(c.lo + (di + 0.5) * c.step), 2);
			if (HasFatalFailure())
				return;
		}
		for (double v : kSpecial) {
			c.around(v, 3);
			c.around(c.lo - v, 2);
			c.around(c.lo + v, 2);
		}
		c.around(c.lo, 16);
		c.around(c.lo + c.last * c.step, 16);
		c.around(c.lo + (c.last + 0.5) * c.step, 16);
		c.around(c.lo - 0.5 * c.step, 16);
		c.around(c.lo + 0.5 * c.step * (1 - 0x1p-40), 16); // y near the 1/2 - 2^-40 cut
		if (HasFatalFailure())
			return;
		EXPECT_GT(c.checked, 500u);
	}
}

// Uniform values over the domain widened by its span on both sides, and over every exponent of
// the double format (random bit patterns: NaNs, infinities, subnormals, both signs).
TEST(RangeIndex, RandomValues)
{
	std::mt19937_64 rng(20261128);
	std::size_t total = 0, fast = 0, differ = 0;
	for (const Grid &g : grids()) {
		Checker c(g);
		const double span = c.last * c.step + c.step;
		std::uniform_real_distribution<double> in(c.lo - span, c.lo + 2 * span);
		for (int i = 0; i < 200000; ++i) {
			c.check(in(rng));
			c.check(from_bits(rng()));
			if (HasFatalFailure())
				return;
		}
		total += c.checked;
		fast += c.fast;
		differ += c.differ_quotient;
	}
	// meaningful: the reciprocal's product differs from the quotient on many values, and the fast
	// path answers nearly all of them without the reference
	std::printf("range_index_recip: %zu values, %zu answered without the reference, %zu products != quotients\n",
	            total, fast, differ);
	EXPECT_GT(total, 9000000u);
	EXPECT_GT(differ, 100000u);
	EXPECT_GT(fast, total * 9 / 10 - total / 50);
}

// Values whose product and quotient differ next to a half-way point: searched around every half of
// a 0.001 grid and a 1/3 grid, where the rounding of the reciprocal matters most.
TEST(RangeIndex, ProductAndQuotientDisagreeNearHalves)
{
	for (const Grid &g : {Grid{0, 1, 0.001}, Grid{0, 1000, 1.0 / 3}, Grid{-123.456, 987.654, 0.003}}) {
		Checker c(g);
		std::size_t near_half_differ = 0;
		for (std::size_t i = 0; i < c.size; ++i) {
			const double h = c.lo + (static_cast<double>(i) + 0.5) * c.step;
			double v = h;
			for (int k = 0; k < 64; ++k)
				v = std::nextafter(v, -INFINITY);
			for (int k = 0; k < 129; ++k) {
				const double q = (v - c.lo) / c.step, y = (v - c.lo) * c.recip;
				near_half_differ += q != y;
				c.check(v);
				v = std::nextafter(v, INFINITY);
			}
			if (HasFatalFailure())
				return;
		}
		EXPECT_GT(near_half_differ, 100u) << g.step;
	}
}

} // namespace

// int_grid_of: which grids are integral (lo and step integers in bounds, at most 2^31 + 1 points).
TEST(RangeIndex, IntGridEligibility)
{
	IntGrid g;
	EXPECT_TRUE(int_grid_of(0, 100, 2001, g));
	EXPECT_EQ(g.step, 100u);
	EXPECT_EQ(g.last, 2000u);
	EXPECT_TRUE(int_grid_of(-1099511627776.0, 2147483648.0, 2, g));
	EXPECT_TRUE(int_grid_of(0, 1, 2147483649ULL, g));
	EXPECT_FALSE(int_grid_of(0, 1, 2147483650ULL, g));
	EXPECT_EQ(g.step, 0u); // (reset when refused)
	EXPECT_FALSE(int_grid_of(0.5, 100, 10, g));
	EXPECT_FALSE(int_grid_of(0, 0.5, 10, g));
	EXPECT_FALSE(int_grid_of(0, 2.5, 10, g));
	EXPECT_FALSE(int_grid_of(0, 2147483649.0, 10, g));
	EXPECT_FALSE(int_grid_of(1099511627777.0, 1, 10, g));
	EXPECT_FALSE(int_grid_of(0, 0, 10, g));
	EXPECT_FALSE(int_grid_of(0, std::numeric_limits<double>::quiet_NaN(), 10, g));
	EXPECT_FALSE(int_grid_of(std::numeric_limits<double>::quiet_NaN(), 1, 10, g));
	EXPECT_FALSE(int_grid_of(0, INFINITY, 10, g));
	EXPECT_FALSE(int_grid_of(0, 1, 0, g));
}

// int_grid_index equals Domain::index_of (the reference) for integer values: every int16 value on
// small grids, every grid point, half-way point (ties when the step is even) and their neighbours,
// the int32 extremes, and random int32 values, on integral grids of every size of step and bound.
TEST(RangeIndex, IntGridMatchesReference)
{
	struct IG {
		double lo, hi, step;
	};
	const IG grids[] = {{0, 200000, 100},       {0, 200000, 1},        {-5, 5, 1},           {-100, 100, 7},
	                    {-32768, 32767, 3},      {3, 3, 1},             {0, 1000, 2},         {17, 1017, 10},
	                    {-2147483648.0, 2147483647.0, 4295}, {-1099511627776.0, -1099511627776.0 + 1e9, 65536},
	                    {1099511627776.0 - 1e6, 1099511627776.0, 1000}, {0, 4294967296.0, 2147483648.0},
	                    {-1000000, 1000000, 999983}, {5, 5e8, 999}, {0, 65535, 65535}, {-40, 40, 40},
	                    {-1000, 1000000, 49}, {0, 48000000, 49}};
	std::mt19937_64 rng(20261129);
	std::size_t checked = 0, ties = 0;
	for (const IG &x : grids) {
		const Domain d = Domain::range(x.lo, x.hi, x.step);
		IntGrid g;
		ASSERT_TRUE(int_grid_of(d.lo(), d.step(), d.size(), g)) << x.lo << " " << x.step;
		auto check = [&](std::int64_t v) {
			if (v < INT32_MIN || v > INT32_MAX)
				return;
			ASSERT_EQ(int_grid_index(v, g), d.index_of(static_cast<double>(v)))
			    << "v=" << v << " lo=" << x.lo << " step=" << x.step;
			++checked;
		};
		for (std::int64_t v = INT16_MIN; v <= INT16_MAX; ++v)
			check(v);
		const std::size_t stride = d.size() > 20000 ? d.size() / 20000 : 1;
		for (std::size_t i = 0; i < d.size() + 2; i += (i < 3 || i + 3 > d.size() ? 1 : stride)) {
			const std::int64_t p = g.lo + static_cast<std::int64_t>(i * g.step);
			const std::int64_t half = p + static_cast<std::int64_t>(g.step / 2); // a tie when step is even
			ties += g.step % 2 == 0;
			for (std::int64_t k = -2; k <= 2; ++k) {
				check(p + k);
				check(half + k);
				check(p - static_cast<std::int64_t>(g.step / 2) + k);
			}
			if (HasFatalFailure())
				return;
		}
		for (std::int64_t v : {std::int64_t(INT32_MIN), std::int64_t(INT32_MIN) + 1, std::int64_t(-1), std::int64_t(0),
		                       std::int64_t(1), std::int64_t(INT32_MAX) - 1, std::int64_t(INT32_MAX)})
			check(v);
		std::uniform_int_distribution<std::int64_t> any(INT32_MIN, INT32_MAX);
		for (int i = 0; i < 200000; ++i)
			check(any(rng));
		if (HasFatalFailure())
			return;
	}
	EXPECT_GT(checked, 4000000u);
	EXPECT_GT(ties, 10000u);
}

// review8: random integral grids at the edges int_grid_of serves (lo at or near +-2^40 or anywhere
// between, steps from 1 to 2^31 log-uniformly and at both ends, sizes up to the domain limit), each
// against Domain::index_of at every value class an int2/int4 column can bring: the grid points near
// the int32 range and their neighbours, the half-way points (exact ties for even steps) and theirs,
// the clamps' edges, the int16 and int32 extremes, and random int32 values.
TEST(RangeIndex, IntGridRandomEdgeGrids)
{
	std::mt19937_64 rng(88);
	const double two40 = 1099511627776.0;
	std::size_t grids = 0, checked = 0;
	for (int n = 0; n < 4000; ++n) {
		double lo;
		switch (n % 4) {
		case 0: lo = -two40 + static_cast<double>(rng() % 3); break;
		case 1: lo = two40 - static_cast<double>(rng() % 3); break;
		case 2: lo = static_cast<double>(static_cast<std::int64_t>(rng() % (2 * 4294967296ULL)) - 4294967296LL); break;
		default: lo = std::floor(std::ldexp(static_cast<double>(rng() % 1000000) / 1e6 * 2 - 1, 40)); break;
		}
		double step;
		switch (n % 7) {
		case 0: step = 2147483648.0; break;
		case 1: step = 2147483647.0; break;
		case 2: step = static_cast<double>(1 + rng() % 3); break;
		default: step = std::floor(std::ldexp(1.0, static_cast<int>(rng() % 31)) * (1 + static_cast<double>(rng() % 1000) / 1000)); break;
		}
		step = std::min(std::max(step, 1.0), 2147483648.0);
		const std::size_t points = 1 + rng() % (n % 3 == 0 ? 999999 : 5000);
		const double hi = lo + step * static_cast<double>(points - 1);
		Domain d = Domain::range(lo, lo, 1);
		try {
			d = Domain::range(lo, hi, step);
		} catch (const CoreError &) {
			continue; // (too many points, or a step too small for the bounds: not a domain)
		}
		IntGrid g;
		ASSERT_TRUE(int_grid_of(d.lo(), d.step(), d.size(), g)) << lo << " " << step;
		++grids;
		auto check = [&](std::int64_t v) {
			if (v < INT32_MIN || v > INT32_MAX)
				return;
			ASSERT_EQ(int_grid_index(v, g), d.index_of(static_cast<double>(v)))
			    << "v=" << v << " lo=" << lo << " step=" << step << " size=" << d.size();
			++checked;
		};
		// the grid points whose neighbourhood int32 values reach
		const double first = std::ceil((static_cast<double>(INT32_MIN) - lo) / step) - 1;
		const double last = std::floor((static_cast<double>(INT32_MAX) - lo) / step) + 1;
		const double from = std::max(first, 0.0), to = std::min(last, static_cast<double>(d.size()) + 1);
		for (double i = from; i <= to && i <= from + 200; ++i) {
			const std::int64_t p = g.lo + static_cast<std::int64_t>(i) * static_cast<std::int64_t>(g.step);
			for (std::int64_t k = -2; k <= 2; ++k) {
				check(p + k);
				check(p + static_cast<std::int64_t>(g.step / 2) + k);
				check(p + static_cast<std::int64_t>((g.step + 1) / 2) + k);
			}
		}
		for (std::int64_t v : {std::int64_t(INT32_MIN), std::int64_t(INT32_MIN) + 1, std::int64_t(INT16_MIN), std::int64_t(-1),
		                       std::int64_t(0), std::int64_t(1), std::int64_t(INT16_MAX), std::int64_t(INT32_MAX) - 1,
		                       std::int64_t(INT32_MAX)})
			check(v);
		std::uniform_int_distribution<std::int64_t> any(INT32_MIN, INT32_MAX);
		for (int i = 0; i < 200; ++i)
			check(any(rng));
		if (HasFatalFailure())
			return;
	}
	EXPECT_GT(grids, 2000u);
	EXPECT_GT(checked, 500000u);
}
