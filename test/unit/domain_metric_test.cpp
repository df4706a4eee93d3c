// Unit tests for column domains and column metrics (MECHANISMS.md §3.12).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/domain.h"
#include "core/error.h"
#include "core/metric.h"
#include "test_support.h"

using namespace dxpriv;

namespace {

using ::dxpriv::testing::brute_line;
using ::dxpriv::testing::contract_error_kind;

const double kNaN = std::numeric_limits<double>::quiet_NaN();

// A few domains of every kind used by the brute-force metric checks.
std::vector<Domain>
sample_domains()
{
	return {Domain::range(0, 5, 1),       Domain::range(-1, 1, 0.25), Domain::range(0.1, 0.7, 0.1),
	        Domain::enumerated({"a", "b", "c", "d"}), Domain::dates(-3, 30, 4), Domain::range(7, 7, 1)};
}

// Random metrics of every kind fitted to dom.
std::vector<ColumnMetric>
sample_metrics(const Domain &dom, std::mt19937 &gen)
{
	std::uniform_real_distribution<double> u(0.05, 5);
	std::vector<double> w(dom.size());
	for (double &x : w)
		x = (gen() % 5 == 0) ? kInfinity : u(gen);
	std::vector<double> all_inf(dom.size(), kInfinity);
	return {ColumnMetric::discrete(u(gen)), ColumnMetric::discrete(kInfinity), ColumnMetric::absolute(u(gen)),
	        ColumnMetric::per_value(w), ColumnMetric::per_value(all_inf), ColumnMetric::none()};
}

} // namespace

TEST(Domain, RangeSizeOrdinalsAndLabels)
{
	Domain d = Domain::range(0, 1, 0.1);
	EXPECT_EQ(d.kind(), DomainKind::Range);
	EXPECT_EQ(d.size(), 11u);
	EXPECT_EQ(d.ordinal(3), 0 + 3 * 0.1); // computed as lo + i*step, not by accumulation
	EXPECT_EQ(d.label(3), "0.3");
	EXPECT_EQ(d.label(10), "1");
	EXPECT_EQ(Domain::range(0, 0.3, 0.1).size(), 4u); // 0.3/0.1 = 2.9999999999999996 still includes hi
	EXPECT_EQ(Domain::range(0, 1, 0.3).size(), 4u);   // hi not on the grid: 0, 0.3, 0.6, 0.9
	EXPECT_EQ(Domain::range(-2.5, -2.5, 1).size(), 1u);
	EXPECT_EQ(Domain::range(-5, 3, 1).label(0), "-5");
	EXPECT_EQ(Domain::range(0, 999999, 1).size(), kMaxDomainSize);
	Domain big = Domain::range(1.7e12, 1.7e12 + 1000, 1); // epoch milliseconds stay distinct
	EXPECT_EQ(big.label(1), "1700000000001");
	EXPECT_THROW(d.ordinal(11), CoreError);
	EXPECT_THROW(d.label(11), CoreError);
}

TEST(Domain, RangeValidation)
{
	EXPECT_EQ(contract_error_kind([] { Domain::range(1, 0, 1); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { Domain::range(kNaN, 1, 1); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { Domain::range(0, kInfinity, 1); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { Domain::range(-kInfinity, 0, 1); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { Domain::range(0, 1, 0); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { Domain::range(0, 1, -1); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { Domain::range(0, 1, kNaN); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { Domain::range(0, 1, kInfinity); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { Domain::range(0, 1000000, 1); }), ErrorKind::ProgramLimit);
	EXPECT_EQ(contract_error_kind([] { Domain::range(-1e308, 1e308, 1); }), ErrorKind::ProgramLimit);
	EXPECT_EQ(contract_error_kind([] { Domain::range(0, 1, 1e-300); }), ErrorKind::ProgramLimit);
	// Points that would collapse to equal ordinals (or equal labels) are rejected.
	EXPECT_EQ(contract_error_kind([] { Domain::range(1e16, 1e16 + 100, 1); }), ErrorKind::InvalidParameter);
}

TEST(Domain, IndexOfRoundsAndClamps)
{
	Domain d = Domain::range(0, 10, 1);
	EXPECT_EQ(d.index_of(2.4), 2u);
	EXPECT_EQ(d.index_of(2.5), 3u); // ties away from lo
	EXPECT_EQ(d.index_of(-0.4), 0u);
	EXPECT_EQ(d.index_of(-0.5), 0u);
	EXPECT_EQ(d.index_of(-100), 0u);
	EXPECT_EQ(d.index_of(9.6), 10u);
	EXPECT_EQ(d.index_of(10.4), 10u);
	EXPECT_EQ(d.index_of(kInfinity), 10u);
	EXPECT_EQ(d.index_of(-kInfinity), 0u);
	EXPECT_EQ(d.index_of(1e300), 10u);
	EXPECT_EQ(d.index_of(-1e300), 0u);
	EXPECT_EQ(d.index_of(std::numeric_limits<double>::max()), 10u);
	EXPECT_EQ(d.index_of(kNaN), d.default_index());
	Domain r = Domain::range(-5, 5, 2.5);
	EXPECT_EQ(r.index_of(-3.75), 1u); // (v - lo)/step = 0.5
	EXPECT_EQ(r.index_of(1.25), 3u);  // 2.5 -> 3
	EXPECT_EQ(r.index_of(1.2), 2u);
	Domain tenths = Domain::range(0.1, 0.7, 0.1);
	EXPECT_EQ(tenths.index_of(0.3), 2u); // (0.3-0.1)/0.1 = 1.9999999999999998
	EXPECT_EQ(tenths.label(tenths.index_of(0.3)), "0.3");
	Domain single = Domain::range(3, 3, 1);
	EXPECT_EQ(single.index_of(-1e9), 0u);
	EXPECT_EQ(single.index_of(1e9), 0u);
}

TEST(Domain, Enumerated)
{
	Domain d = Domain::enumerated({"low", "mid", "high"});
	EXPECT_EQ(d.kind(), DomainKind::Enumerated);
	EXPECT_EQ(d.size(), 3u);
	EXPECT_EQ(d.ordinal(2), 2.0);
	EXPECT_EQ(d.label(1), "mid");
	EXPECT_EQ(d.labels().size(), 3u);
	EXPECT_EQ(d.find_label("low"), 0);
	EXPECT_EQ(d.find_label("mid"), 1);
	EXPECT_EQ(d.find_label("high"), 2);
	EXPECT_EQ(d.find_label("none"), -1);
	EXPECT_EQ(d.find_label(""), -1);
	EXPECT_EQ(d.index_of(1.6), 2u);
	EXPECT_EQ(d.index_of(0.5), 1u);
	EXPECT_EQ(d.index_of(5), 2u);
	EXPECT_EQ(d.index_of(-1), 0u);
	EXPECT_EQ(d.index_of(kNaN), 0u);
	EXPECT_EQ(Domain::enumerated({"only"}).size(), 1u);
	EXPECT_EQ(Domain::enumerated({""}).find_label(""), 0); // an empty label is a legitimate value
	EXPECT_EQ(Domain::range(0, 1, 1).find_label("0"), -1);
	EXPECT_EQ(contract_error_kind([] { Domain::enumerated({}); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { Domain::enumerated({"a", "b", "a"}); }), ErrorKind::InvalidParameter);
	std::vector<std::string> many(kMaxDomainSize + 1);
	for (std::size_t i = 0; i < many.size(); i++)
		many[i] = std::to_string(i);
	EXPECT_EQ(contract_error_kind([&many] { Domain::enumerated(many); }), ErrorKind::ProgramLimit);
	many.pop_back();
	Domain big = Domain::enumerated(many);
	EXPECT_EQ(big.find_label("765432"), 765432);
}

TEST(Domain, DatesAndIsoLabels)
{
	Domain d = Domain::dates(-1, 366, 1);
	EXPECT_EQ(d.kind(), DomainKind::Date);
	EXPECT_EQ(d.size(), 368u);
	EXPECT_EQ(d.ordinal(0), -1.0);
	EXPECT_EQ(d.label(0), "1999-12-31");
	EXPECT_EQ(d.label(1), "2000-01-01");
	EXPECT_EQ(d.label(1 + 59), "2000-02-29");
	EXPECT_EQ(d.label(1 + 60), "2000-03-01");
	EXPECT_EQ(d.label(367), "2001-01-01");
	EXPECT_EQ(Domain::dates(-36524, -36524, 1).label(0), "1900-01-01");
	EXPECT_EQ(Domain::dates(-730119, -730119, 1).label(0), "0001-01-01");
	EXPECT_EQ(Domain::dates(-730120, -730120, 1).label(0), "0001-12-31 BC"); // PostgreSQL's spelling
	EXPECT_EQ(Domain::dates(2921940, 2921940, 1).label(0), "10000-01-01");
	Domain weeks = Domain::dates(0, 20, 7);
	EXPECT_EQ(weeks.size(), 3u);
	EXPECT_EQ(weeks.ordinal(2), 14.0);
	EXPECT_EQ(weeks.label(2), "2000-01-15");
	EXPECT_EQ(weeks.index_of(10), 1u);
	EXPECT_EQ(weeks.index_of(11), 2u);
	EXPECT_EQ(weeks.index_of(1e9), 2u);
	Domain extreme = Domain::dates(INT32_MIN, INT32_MAX, INT32_MAX);
	EXPECT_EQ(extreme.size(), 3u);
	EXPECT_FALSE(extreme.label(0).empty());
	EXPECT_EQ(Domain::dates(0, 999999, 1).size(), kMaxDomainSize);
	EXPECT_EQ(contract_error_kind([] { Domain::dates(0, 1000000, 1); }), ErrorKind::ProgramLimit);
	EXPECT_EQ(contract_error_kind([] { Domain::dates(1, 0, 1); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { Domain::dates(0, 10, 0); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { Domain::dates(0, 10, -7); }), ErrorKind::InvalidParameter);
}

TEST(Metric, ValidationErrors)
{
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::discrete(0); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::discrete(-1); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::discrete(kNaN); }), ErrorKind::InvalidParameter);
	EXPECT_NO_THROW(ColumnMetric::discrete(kInfinity));
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::absolute(0); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::absolute(-2); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::absolute(kInfinity); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::absolute(kNaN); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::per_value({}); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::per_value({1, 0}); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::per_value({1, -3}); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::per_value({1, kNaN}); }), ErrorKind::InvalidParameter);
	EXPECT_NO_THROW(ColumnMetric::per_value({1, kInfinity}));

	Domain three = Domain::enumerated({"a", "b", "c"});
	ColumnMetric two = ColumnMetric::per_value({1, 2});
	EXPECT_EQ(contract_error_kind([&] { two.validate(three); }), ErrorKind::InvalidParameter);
	EXPECT_NO_THROW(ColumnMetric::per_value({1, 2, 3}).validate(three));
	EXPECT_NO_THROW(ColumnMetric::absolute(1).validate(three)); // enum ordinals are allowed
	EXPECT_NO_THROW(ColumnMetric::discrete(1).validate(three));
	EXPECT_NO_THROW(ColumnMetric::none().validate(three));
	// A scale so large that neighbouring points would be at distance 0.
	Domain tiny = Domain::range(0, 1e-299, 1e-300);
	EXPECT_NO_THROW(ColumnMetric::absolute(1e10).validate(tiny));
	EXPECT_EQ(contract_error_kind([&] { ColumnMetric::absolute(1e300).validate(tiny); }), ErrorKind::InvalidParameter);
}

TEST(Metric, Distances)
{
	Domain r = Domain::range(0, 10, 2);
	EXPECT_EQ(ColumnMetric::discrete(3).distance(r, 1, 4), 3.0);
	EXPECT_EQ(ColumnMetric::discrete(3).distance(r, 2, 2), 0.0);
	EXPECT_EQ(ColumnMetric::absolute(4).distance(r, 1, 4), 1.5); // |2 - 8| / 4
	EXPECT_EQ(ColumnMetric::none().distance(r, 0, 1), kInfinity);
	EXPECT_EQ(ColumnMetric::none().distance(r, 3, 3), 0.0);
	Domain e = Domain::enumerated({"a", "b", "c"});
	ColumnMetric pv = ColumnMetric::per_value({1, 10, 10});
	EXPECT_EQ(pv.distance(e, 0, 1), 1.0);
	EXPECT_EQ(pv.distance(e, 1, 2), 2.0); // raw min would be 10 > d(b,a) + d(a,c) = 2
	EXPECT_EQ(pv.distance(e, 2, 2), 0.0);
	EXPECT_EQ(ColumnMetric::absolute(1).distance(Domain::dates(0, 70, 7), 0, 3), 21.0);
	EXPECT_THROW(pv.distance(e, 0, 3), CoreError);
}

TEST(Metric, AxiomsByBruteForce)
{
	std::mt19937 gen(20240601);
	for (const Domain &dom : sample_domains())
		for (int rep = 0; rep < 5; rep++)
			for (const ColumnMetric &m : sample_metrics(dom, gen)) {
				m.validate(dom);
				const std::size_t k = dom.size();
				for (std::size_t i = 0; i < k; i++) {
					EXPECT_EQ(m.distance(dom, i, i), 0.0);
					for (std::size_t j = 0; j < k; j++) {
						double dij = m.distance(dom, i, j);
						EXPECT_EQ(dij, m.distance(dom, j, i));
						if (i != j) {
							EXPECT_GT(dij, 0.0);
						}
						for (std::size_t l = 0; l < k; l++)
							EXPECT_LE(dij, (m.distance(dom, i, l) + m.distance(dom, l, j)) * (1 + 1e-12))
							    << "triangle " << i << " " << l << " " << j;
					}
				}
			}
}

TEST(Metric, PerValueIsClosureOfMinRule)
{
	Domain e = Domain::enumerated({"a", "b", "c"});
	// The raw min rule min(w_a, w_b) breaks the triangle inequality with three values.
	std::vector<double> w = {1, 10, 10};
	EXPECT_GT(std::min(w[1], w[2]), std::min(w[1], w[0]) + std::min(w[0], w[2]));

	std::mt19937 gen(7);
	std::uniform_real_distribution<double> u(0.1, 10);
	for (int rep = 0; rep < 200; rep++) {
		const std::size_t k = 2 + gen() % 6;
		std::vector<std::string> labels;
		std::vector<double> wv(k);
		for (std::size_t i = 0; i < k; i++) {
			labels.push_back(std::string(1, static_cast<char>('a' + i)));
			wv[i] = (gen() % 4 == 0) ? kInfinity : u(gen);
		}
		Domain dom = Domain::enumerated(labels);
		ColumnMetric m = ColumnMetric::per_value(wv);
		// Floyd-Warshall closure of the raw min rule.
		std::vector<std::vector<double>> d(k, std::vector<double>(k));
		for (std::size_t i = 0; i < k; i++)
			for (std::size_t j = 0; j < k; j++)
				d[i][j] = i == j ? 0 : std::min(wv[i], wv[j]);
		for (std::size_t l = 0; l < k; l++)
			for (std::size_t i = 0; i < k; i++)
				for (std::size_t j = 0; j < k; j++)
					d[i][j] = std::min(d[i][j], d[i][l] + d[l][j]);
		for (std::size_t i = 0; i < k; i++)
			for (std::size_t j = 0; j < k; j++)
				EXPECT_DOUBLE_EQ(m.distance(dom, i, j), d[i][j]);
	}
}

TEST(Metric, LineSensitivityMatchesAllPairs)
{
	std::mt19937 gen(12345);
	std::uniform_real_distribution<double> u(-10, 10);
	const std::size_t stride = 3;
	for (const Domain &dom : sample_domains())
		for (int rep = 0; rep < 40; rep++) {
			std::vector<double> q(dom.size() * stride, 1e300); // off-line entries must be ignored
			for (std::size_t i = 0; i < dom.size(); i++)
				q[i * stride] = (rep % 3 == 0) ? static_cast<double>(gen() % 3) : u(gen); // ties too
			for (const ColumnMetric &m : sample_metrics(dom, gen)) {
				double expect = brute_line(m, dom, q.data(), stride);
				double got = m.line_sensitivity(dom, q.data(), stride);
				EXPECT_NEAR(got, expect, 1e-12 * std::max(1.0, expect)) << "kind " << static_cast<int>(m.kind());
			}
		}
	// Constant q: 0 for every metric, even with infinite weights.
	Domain e = Domain::enumerated({"a", "b", "c"});
	std::vector<double> c(3, 4.5);
	EXPECT_EQ(ColumnMetric::per_value({1, kInfinity, 2}).line_sensitivity(e, c.data(), 1), 0.0);
	EXPECT_EQ(ColumnMetric::discrete(kInfinity).line_sensitivity(e, c.data(), 1), 0.0);
	std::vector<double> q = {0, 5, 1};
	EXPECT_EQ(ColumnMetric::none().line_sensitivity(e, q.data(), 1), 0.0);
	EXPECT_EQ(ColumnMetric::discrete(kInfinity).line_sensitivity(e, q.data(), 1), 0.0);
	EXPECT_EQ(ColumnMetric::discrete(2).line_sensitivity(e, q.data(), 1), 2.5);
	EXPECT_EQ(ColumnMetric::absolute(1).line_sensitivity(e, q.data(), 1), 5.0);
	EXPECT_EQ(ColumnMetric::per_value({1, 10, 10}).line_sensitivity(e, q.data(), 1), 5.0); // (b,a): 5/1
	EXPECT_EQ(ColumnMetric::per_value({10, 10, 1}).line_sensitivity(e, q.data(), 1), 4.0); // (b,c) 4/1 > (a,b) 5/2
}
