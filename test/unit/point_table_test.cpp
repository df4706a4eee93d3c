// Per-point tables of execution by lookup: exact round trips, compact widths, rejection of forged bytes.
#include "core/point_table.h"

#include "test_support.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace dxpriv;
using dxpriv::testing::expect_core_error;

namespace {

using Table = std::vector<std::optional<double>>;

PointTableView
view(const std::string &bytes)
{
	return PointTableView(reinterpret_cast<const unsigned char *>(bytes.data()), bytes.size());
}

// Every point decodes to exactly what was encoded (bit-identical doubles, missing stays missing).
void
expect_round_trip(const Table &t)
{
	const std::string bytes = encode_point_table(t);
	PointTableView v = view(bytes);
	ASSERT_EQ(v.size(), t.size());
	bool every = true;
	for (const auto &x : t)
		every = every && x.has_value();
	EXPECT_EQ(v.every_point_contributes(), every);
	for (size_t u = 0; u < t.size(); ++u) {
		double out = std::numeric_limits<double>::quiet_NaN();
		const bool has = v.lookup(u, out);
		ASSERT_EQ(has, t[u].has_value()) << "point " << u;
		if (has)
			ASSERT_EQ(out, *t[u]) << "point " << u;
	}
}

} // namespace

TEST(PointTable, CountWithWhereIsOneBytePerPoint)
{
	Table t;
	for (int u = 0; u < 1000; ++u)
		t.push_back(u % 3 == 0 ? std::optional<double>(1.0) : std::nullopt);
	const std::string bytes = encode_point_table(t);
	EXPECT_EQ(bytes.size(), 12u + 8u * 1u + 1000u);
	EXPECT_EQ(view(bytes).distinct(), 1u);
	expect_round_trip(t);
}

TEST(PointTable, WidthGrowsWithDistinctValues)
{
	// each value on 4 points, so the dictionary stays smaller than the direct layout
	for (size_t k : {1u, 254u, 255u, 65534u, 65535u, 70000u}) {
		Table t;
		for (size_t u = 0; u < 4 * k; ++u)
			t.push_back(static_cast<double>(u / 4) * 0.5 - 7);
		t.push_back(std::nullopt);
		const std::string bytes = encode_point_table(t);
		const size_t width = k < 255 ? 1 : k < 65535 ? 2 : 4;
		EXPECT_EQ(bytes.size(), 12 + 8 * k + width * t.size()) << k;
		expect_round_trip(t);
	}
}

TEST(PointTable, OneValuePerPointIsStoredDirectly)
{
	// sum over a wide range: every point has its own value; a dictionary would double the size
	for (size_t n : {1u, 7u, 8u, 9u, 100001u}) {
		Table t;
		for (size_t u = 0; u < n; ++u)
			t.push_back(u % 5 == 3 ? std::nullopt : std::optional<double>(static_cast<double>(u) * 100 + 0.25));
		const std::string bytes = encode_point_table(t);
		size_t k = 0;
		for (const auto &x : t)
			k += x.has_value();
		const size_t width = k < 255 ? 1 : k < 65535 ? 2 : 4;
		// the smaller layout: here the direct one as soon as the points are many
		EXPECT_EQ(bytes.size(), 12 + std::min(8 * k + width * n, (n + 7) / 8 + 8 * n)) << n;
		if (n == 100001)
			EXPECT_EQ(static_cast<unsigned char>(bytes[2]), PointTableView::kDirect);
		expect_round_trip(t);
	}
}

TEST(PointTable, RandomTablesRoundTripExactly)
{
	std::mt19937_64 rng(7);
	std::uniform_real_distribution<double> value(-1e12, 1e12);
	for (int trial = 0; trial < 50; ++trial) {
		Table t(1 + rng() % 5000);
		const int distinct = 1 + static_cast<int>(rng() % 600);
		std::vector<double> pool;
		for (int i = 0; i < distinct; ++i)
			pool.push_back(i == 0 ? -0.0 : value(rng));
		for (auto &x : t)
			if (rng() % 4)
				x = pool[rng() % pool.size()];
		expect_round_trip(t);
	}
}

TEST(PointTable, ValuesLinearInOneColumnAreStoredAsAFormula)
{
	// sum(income) GROUP BY sex: income 0..200000 step 100 (2001 points) x sex (2): the value depends
	// on the income index only; with a WHERE on sex, half the points are absent
	const std::vector<std::size_t> dims{2001, 2};
	for (bool filtered : {false, true}) {
		Table t;
		for (std::size_t i = 0; i < 2001; ++i)
			for (std::size_t sex = 0; sex < 2; ++sex)
				t.push_back(filtered && sex == 1 ? std::nullopt : std::optional<double>(100.0 * static_cast<double>(i)));
		const std::string bytes = encode_point_table(t, dims);
		EXPECT_EQ(static_cast<unsigned char>(bytes[2]), PointTableView::kAffine);
		EXPECT_EQ(bytes.size(), 12 + (t.size() + 7) / 8 + 24);
		const std::string plain = encode_point_table(t); // without the shape: no formula
		EXPECT_NE(static_cast<unsigned char>(plain[2]), PointTableView::kAffine);
		PointTableView v = view(bytes);
		for (std::size_t u = 0; u < t.size(); ++u) {
			double out = -1;
			ASSERT_EQ(v.lookup(u, out), t[u].has_value());
			if (t[u])
				ASSERT_EQ(out, *t[u]);
		}
	}
	// the formula's column last (d = 1: no integer division on the per-row path), alone (u < m) and
	// repeated under a first column (u >= m: u % m)
	for (const std::vector<std::size_t> &shape : {std::vector<std::size_t>{1001}, std::vector<std::size_t>{3, 1001}}) {
		Table t;
		for (std::size_t outer = 0; outer < (shape.size() == 2 ? shape[0] : 1); ++outer)
			for (std::size_t i = 0; i < 1001; ++i)
				t.push_back(i % 7 == 3 ? std::nullopt : std::optional<double>(-5.0 + 0.25 * static_cast<double>(i)));
		const std::string bytes = encode_point_table(t, shape);
		ASSERT_EQ(static_cast<unsigned char>(bytes[2]), PointTableView::kAffine);
		PointTableView v = view(bytes);
		for (std::size_t u = 0; u < t.size(); ++u) {
			double out = -1;
			ASSERT_EQ(v.lookup(u, out), t[u].has_value());
			if (t[u])
				ASSERT_EQ(out, *t[u]);
		}
	}
	// one value off the line by one ulp: not a formula
	Table t;
	for (std::size_t i = 0; i < 1000; ++i)
		t.push_back(0.1 * static_cast<double>(i));
	t[500] = std::nextafter(*t[500], 1e9);
	EXPECT_NE(static_cast<unsigned char>(encode_point_table(t, {1000})[2]), PointTableView::kAffine);
	expect_round_trip(t);
}

TEST(PointTable, EmptyAndAllMissing)
{
	expect_round_trip({});
	expect_round_trip(Table(17, std::nullopt));
}

TEST(PointTable, NaNIsRefusedAtEncoding)
{
	expect_core_error(ErrorKind::Internal,
	                  [] { encode_point_table({1.0, std::numeric_limits<double>::quiet_NaN()}); });
}

TEST(PointTable, ForgedBytesAreRejected)
{
	const std::string good = encode_point_table({1.0, std::nullopt, 2.5, 1.0});
	auto expect_bad = [](std::string b) {
		expect_core_error(ErrorKind::DataException, [&] { view(b); });
	};
	expect_bad("");
	expect_bad(good.substr(0, good.size() - 1));     // truncated
	expect_bad(good + "x");                          // trailing byte
	std::string b = good;
	b[0] = 'Q';                                      // magic
	expect_bad(b);
	b = good;
	b[1] = 9;                                        // version
	expect_bad(b);
	b = good;
	b[2] = 3;                                        // width
	expect_bad(b);
	b = good;
	b[b.size() - 1] = 3;                             // code beyond the dictionary
	expect_bad(b);
	b = good;
	const double nan = std::numeric_limits<double>::quiet_NaN();
	std::memcpy(&b[12], &nan, 8);                    // NaN in the dictionary
	expect_bad(b);
	b = good;
	b[4] = 5;                                        // point count disagrees with the length
	expect_bad(b);

	Table wide;
	for (int u = 0; u < 20; ++u)
		wide.push_back(u == 4 ? std::nullopt : std::optional<double>(u + 0.5));
	const std::string direct = encode_point_table(wide);
	ASSERT_EQ(static_cast<unsigned char>(direct[2]), PointTableView::kDirect);
	view(direct); // valid
	Table line;
	for (int u = 0; u < 300; ++u)
		line.push_back(3.0 + 2.0 * u);
	const std::string affine = encode_point_table(line, {300});
	ASSERT_EQ(static_cast<unsigned char>(affine[2]), PointTableView::kAffine);
	view(affine); // valid
	expect_bad(affine.substr(0, affine.size() - 1));
	b = affine;
	b[b.size() - 4] = 0;                             // m = 0
	b[b.size() - 3] = 0;
	b[b.size() - 2] = 0;
	b[b.size() - 1] = 0;
	expect_bad(b);
	b = affine;
	std::memcpy(&b[12 + 38], &nan, 8);               // a NaN slope
	expect_bad(b);
	expect_bad(direct.substr(0, direct.size() - 1)); // truncated
	b = direct;
	b[8] = 1;                                        // direct tables have no dictionary
	expect_bad(b);
	b = direct;
	b[12 + 2] = static_cast<char>(0xf0);             // bits past the 20th point
	expect_bad(b);
	b = direct;
	std::memcpy(&b[12 + 3 + 8 * 7], &nan, 8);        // NaN value
	expect_bad(b);
}

// Distributed averages count every row instead of every weighed row when no point is filtered out:
// a single missing point in any layout (dictionary, direct, column-affine) must be seen.
TEST(PointTable, EveryPointContributesSeesOneMissingPoint)
{
	for (size_t missing : {0u, 7u, 8u, 999u}) {
		Table dict, direct, affine;
		for (size_t u = 0; u < 1000; ++u) {
			dict.push_back(u == missing ? std::nullopt : std::optional<double>(1.0));
			direct.push_back(u == missing ? std::nullopt : std::optional<double>(u * 1.37 + 0.01));
			affine.push_back(u == missing ? std::nullopt : std::optional<double>(static_cast<double>(u % 10)));
		}
		for (const Table &t : {dict, direct, affine}) {
			Table full = t;
			full[missing] = 2.0;
			EXPECT_FALSE(view(encode_point_table(t)).every_point_contributes()) << missing;
			EXPECT_TRUE(view(encode_point_table(full)).every_point_contributes()) << missing;
			EXPECT_FALSE(view(encode_point_table(t, {100, 10})).every_point_contributes()) << missing;
		}
	}
}

namespace {

// The point of the reduced table that original point u (of `dims`) maps to, keeping `kept`.
std::size_t
project(std::size_t u, const std::vector<std::size_t> &dims, const std::vector<std::size_t> &kept)
{
	std::vector<std::size_t> coord(dims.size());
	for (std::size_t i = dims.size(); i-- > 0;) {
		coord[i] = u % dims[i];
		u /= dims[i];
	}
	std::size_t r = 0;
	for (std::size_t i : kept)
		r = r * dims[i] + coord[i];
	return r;
}

} // namespace

TEST(DropConstantDimensions, KeepsOnlyTheColumnsTheTableDependsOn)
{
	// 2 x 3 (last fastest): the value depends on the second column only
	std::vector<std::optional<double>> t = {1, 2, std::nullopt, 1, 2, std::nullopt};
	std::vector<std::size_t> dims = {2, 3};
	EXPECT_EQ(std::vector<std::size_t>({1}), drop_constant_dimensions(t, dims));
	EXPECT_EQ(std::vector<std::size_t>({3}), dims);
	EXPECT_EQ((std::vector<std::optional<double>>{1, 2, std::nullopt}), t);
	// a count without condition: constant everywhere, no column left, one point
	std::vector<std::optional<double>> c(12, 1.0);
	std::vector<std::size_t> cd = {3, 4};
	EXPECT_TRUE(drop_constant_dimensions(c, cd).empty());
	EXPECT_TRUE(cd.empty());
	EXPECT_EQ((std::vector<std::optional<double>>{1.0}), c);
	// depends on both: unchanged; a value against nothing is not constant
	std::vector<std::optional<double>> b = {1, 2, 3, 4};
	std::vector<std::size_t> bd = {2, 2};
	EXPECT_EQ(std::vector<std::size_t>({0, 1}), drop_constant_dimensions(b, bd));
	std::vector<std::optional<double>> n = {1, std::nullopt};
	std::vector<std::size_t> nd = {2};
	EXPECT_EQ(std::vector<std::size_t>({0}), drop_constant_dimensions(n, nd));
	std::vector<std::optional<double>> bad(5);
	std::vector<std::size_t> bad_dims = {2, 3};
	EXPECT_THROW(drop_constant_dimensions(bad, bad_dims), CoreError);
}

// Brute force: random tables over 2 x 3 x 2 x 2 that ignore random subsets of their columns give,
// after the reduction, the same value at every original point; a column is dropped only when the
// table is constant along it.
TEST(DropConstantDimensions, SameValueAtEveryPointByBruteForce)
{
	std::mt19937_64 rng(7);
	const std::vector<std::size_t> dims0 = {2, 3, 2, 2};
	for (int trial = 0; trial < 200; ++trial) {
		const unsigned used = static_cast<unsigned>(rng() % 16); // bit i: the value depends on column i
		std::vector<std::optional<double>> by_key(64);
		for (auto &v : by_key)
			v = rng() % 4 == 0 ? std::nullopt : std::optional<double>(static_cast<double>(rng() % 5));
		std::vector<std::optional<double>> t(24);
		for (std::size_t u = 0; u < t.size(); ++u) {
			std::size_t key = 0, rest = u;
			for (std::size_t i = dims0.size(); i-- > 0;) {
				if (used & (1u << i))
					key = key * 4 + rest % dims0[i];
				rest /= dims0[i];
			}
			t[u] = by_key[key % 64];
		}
		std::vector<std::optional<double>> r = t;
		std::vector<std::size_t> dims = dims0;
		const std::vector<std::size_t> kept = drop_constant_dimensions(r, dims);
		for (std::size_t u = 0; u < t.size(); ++u)
			ASSERT_EQ(t[u], r[project(u, dims0, kept)]) << "trial " << trial << " point " << u;
		ASSERT_EQ(kept.size(), dims.size());
		for (std::size_t k = 0; k < kept.size(); ++k)
			ASSERT_EQ(dims0[kept[k]], dims[k]);
		// every dropped column is one along which the table is constant
		for (std::size_t i = 0; i < dims0.size(); ++i)
			if (std::find(kept.begin(), kept.end(), i) == kept.end())
				for (std::size_t u = 0; u < t.size(); ++u)
					for (std::size_t w = 0; w < t.size(); ++w) {
						std::vector<std::size_t> others;
						for (std::size_t j = 0; j < dims0.size(); ++j)
							if (j != i)
								others.push_back(j);
						if (project(u, dims0, others) == project(w, dims0, others))
							ASSERT_EQ(t[u], t[w]) << "trial " << trial << " column " << i;
					}
	}
}
