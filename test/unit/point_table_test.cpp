// Per-point tables of execution by lookup: exact round trips, compact widths, rejection of forged bytes.
#include "core/point_table.h"

#include "test_support.h"

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
