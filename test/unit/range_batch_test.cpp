// Unit tests for core/range_batch.h: a batch of values indexed together gets, value by value, the
// index Domain::index_of gives (the reference), in order, on grids served by the reciprocal and on
// grids that keep the division, with NaN (a NULL's stand-in), infinities, halves and out-of-domain values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/domain.h"
#include "core/range_batch.h"

using namespace dxpriv;

namespace {

// The grid of a range domain as executor/lookup.cpp fills a column's constants.
RangeGrid
grid_of(const Domain &d)
{
	RangeGrid g;
	g.lo = d.lo();
	g.step = d.step();
	g.size = d.size();
	int e;
	const double i = 1.0 / g.step;
	g.inv_step = std::frexp(g.step, &e) == 0.5 && std::isfinite(i) && std::frexp(i, &e) == 0.5 ? i : 0.0;
	g.recip = range_recip(g.step, g.size);
	g.last = static_cast<double>(g.size - 1);
	return g;
}

// Values around the grid: points, halves and their neighbours, ends, beyond, special values, random.
std::vector<double>
values_for(const Domain &d, std::mt19937_64 &rng)
{
	std::vector<double> v;
	const double lo = d.lo(), step = d.step();
	const double hi = lo + step * static_cast<double>(d.size() - 1);
	for (std::size_t k = 0; k < d.size() && k < 3000; ++k) {
		const double p = lo + step * static_cast<double>(k);
		const double h = lo + step * (static_cast<double>(k) + 0.5);
		v.push_back(p);
		v.push_back(h);
		v.push_back(std::nextafter(h, -INFINITY));
		v.push_back(std::nextafter(h, INFINITY));
	}
	for (double s : {0.0, -0.0, lo, hi, lo - step, hi + step, lo - 0.5 * step, hi + 0.5 * step, 1e300, -1e300,
	                 std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
	                 std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::denorm_min()})
		v.push_back(s);
	std::uniform_real_distribution<double> u(lo - 0.1 * (hi - lo) - step, hi + 0.1 * (hi - lo) + step);
	for (int i = 0; i < 20000; ++i)
		v.push_back(u(rng));
	for (int i = 0; i < 5000; ++i) { // random bit patterns: every exponent, NaNs, infinities
		const std::uint64_t bits = rng();
		double x;
		std::memcpy(&x, &bits, sizeof x);
		v.push_back(x);
	}
	std::shuffle(v.begin(), v.end(), rng);
	return v;
}

} // namespace

TEST(RangeBatch, EveryValueGetsTheReferenceIndexInOrder)
{
	std::mt19937_64 rng(20261129);
	const struct {
		double lo, hi, step;
	} grids[] = {{0, 1, 0.001},   {0, 50, 1},      {-4, 10, 2},         {0.1, 0.7, 0.1},     {-1, 1, 0.25},
	             {0, 1, 1.0 / 3}, {5, 5, 1},       {0, 0.7, 0.07},      {-123.456, 987.654, 0.003},
	             {0, 200000, 1},  {0, 1e-303, 1e-308}, {-1e300, 1e300, 1e295}, {0, 99999.99, 0.1}};
	for (const auto &gr : grids) {
		const Domain d = Domain::range(gr.lo, gr.hi, gr.step);
		const RangeGrid g = grid_of(d);
		const std::vector<double> v = values_for(d, rng);
		std::vector<std::size_t> got;
		// batches of every length from 1 to 300, as the transition flushes full and partial buffers
		std::size_t at = 0, len = 1;
		while (at < v.size()) {
			const std::size_t n = std::min(len, v.size() - at);
			for_each_range_index(g, v.data() + at, n, [&](std::size_t k) { got.push_back(k); });
			at += n;
			len = len % 300 + 1;
		}
		ASSERT_EQ(got.size(), v.size());
		for (std::size_t i = 0; i < v.size(); ++i) {
			ASSERT_EQ(got[i], d.index_of(v[i])) << "grid " << gr.lo << ".." << gr.hi << " step " << gr.step
			                                    << " value " << v[i];
			ASSERT_EQ(got[i], g.index(v[i]));
		}
	}
}

TEST(RangeBatch, NanStandsForNullAtIndexZero)
{
	const Domain d = Domain::range(3, 9, 0.5);
	const RangeGrid g = grid_of(d);
	const double v[] = {std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::quiet_NaN(), 9.0};
	std::vector<std::size_t> got;
	for_each_range_index(g, v, 3, [&](std::size_t k) { got.push_back(k); });
	EXPECT_EQ(got, (std::vector<std::size_t>{0, 0, d.size() - 1}));
	for_each_range_index(g, v, 0, [&](std::size_t) { ADD_FAILURE() << "an empty batch calls nothing"; });
}

TEST(RangeBatch, IntegersOnUnitGridsGetTheReferenceIndex)
{
	std::mt19937_64 rng(73);
	const struct {
		double lo, hi;
	} grids[] = {{0, 50}, {-4, 10}, {17, 17}, {-32768, 32767}, {0, 999999}, {2147000000.0, 2147483647.0}, {-2147483648.0, -2147000000.0}, {1, 2}};
	for (const auto &gr : grids) {
		const Domain d = Domain::range(gr.lo, gr.hi, 1);
		const auto lo = static_cast<std::int64_t>(gr.lo);
		std::vector<std::int64_t> v;
		for (std::int64_t x = lo - 3; x <= lo + 3; ++x)
			v.push_back(x);
		const auto hi = static_cast<std::int64_t>(gr.hi);
		for (std::int64_t x = hi - 3; x <= hi + 3; ++x)
			v.push_back(x);
		for (std::int64_t x : {std::int64_t(INT32_MIN), std::int64_t(INT32_MAX), std::int64_t(0), std::int64_t(-1)})
			v.push_back(x);
		std::uniform_int_distribution<std::int64_t> u(INT32_MIN, INT32_MAX);
		std::uniform_int_distribution<std::int64_t> near(lo - 100, hi + 100);
		for (int i = 0; i < 20000; ++i)
			v.push_back(i % 2 ? u(rng) : near(rng));
		std::vector<std::size_t> got;
		for_each_unit_int_index(lo, d.size(), v.data(), v.size(), [&](std::size_t k) { got.push_back(k); });
		ASSERT_EQ(got.size(), v.size());
		for (std::size_t i = 0; i < v.size(); ++i)
			ASSERT_EQ(got[i], d.index_of(static_cast<double>(v[i]))) << "grid " << gr.lo << ".." << gr.hi << " value " << v[i];
		// a NULL is stored as lo: index 0
		EXPECT_EQ(unit_int_index(lo, lo, d.size()), 0u);
	}
}
