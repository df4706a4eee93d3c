// Unit tests for the metric catalogue of MECHANISMS.md §3.12: Points domains, explicit matrices,
// graph / hierarchy metrics, l1 / l2 / l_inf location metrics and the Blowfish threshold metrics.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/domain.h"
#include "core/error.h"
#include "core/metric.h"
#include "core/pair_tree.h"
#include "core/sensitivity.h"
#include "test_support.h"

using namespace dxpriv;

namespace {

using ::dxpriv::testing::brute_line;
using ::dxpriv::testing::closure;
using ::dxpriv::testing::contract_error_kind;
using ::dxpriv::testing::record_metric;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
using Matrix = std::vector<std::vector<double>>;

// a == b when either is infinite, otherwise equal within a relative 1e-12.
void
expect_close(double a, double b)
{
	if (a == kInfinity || b == kInfinity)
		EXPECT_EQ(a, b);
	else
		EXPECT_NEAR(a, b, 1e-12 * std::max(1.0, std::fabs(b)));
}

// Seconds elapsed since t0.
double
seconds_since(std::chrono::steady_clock::time_point t0)
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// k distinct random points in R^dims; integer coordinates in [0, span) when `lattice` (many ties).
Domain
random_points(std::mt19937 &gen, std::size_t dims, std::size_t k, bool lattice, int span = 6)
{
	std::uniform_real_distribution<double> u(-3, 3);
	std::set<std::vector<double>> seen;
	std::vector<double> coords;
	while (seen.size() < k) {
		std::vector<double> p(dims);
		for (double &x : p)
			x = lattice ? static_cast<double>(gen() % span) : u(gen);
		if (seen.insert(p).second)
			coords.insert(coords.end(), p.begin(), p.end());
	}
	return Domain::points(dims, coords);
}

// Small domains of every kind, including points in 1, 2 and 3 dimensions.
std::vector<Domain>
sample_domains(std::mt19937 &gen)
{
	return {random_points(gen, 2, 9, true, 4), random_points(gen, 2, 12, false), random_points(gen, 3, 8, true, 3),
	        random_points(gen, 1, 7, false),   random_points(gen, 1, 6, true, 10), Domain::range(-1, 1, 0.25),
	        Domain::enumerated({"a", "b", "c", "d", "e"}), Domain::dates(-3, 30, 4), Domain::range(7, 7, 1),
	        Domain::points(2, {1, 2})};
}

// Euclidean distance as the tests compute it: the 1-D kinds use their ordinals.
double
euclid(const Domain &dom, std::size_t i, std::size_t j)
{
	double s = 0;
	for (std::size_t d = 0; d < dom.dims(); d++) {
		double t = dom.coordinate(i, d) - dom.coordinate(j, d);
		s += t * t;
	}
	return dom.dims() == 1 ? std::fabs(dom.coordinate(i, 0) - dom.coordinate(j, 0)) : std::sqrt(s);
}

// Flattens a square matrix row-major.
std::vector<double>
flat(const Matrix &m)
{
	std::vector<double> out;
	for (const auto &row : m)
		out.insert(out.end(), row.begin(), row.end());
	return out;
}

// A random symmetric non-negative table with zero diagonal and some +inf entries.
Matrix
random_table(std::mt19937 &gen, std::size_t k)
{
	std::uniform_real_distribution<double> u(0.1, 5);
	Matrix d(k, std::vector<double>(k, 0));
	for (std::size_t i = 0; i < k; i++)
		for (std::size_t j = i + 1; j < k; j++)
			d[i][j] = d[j][i] = gen() % 5 == 0 ? kInfinity : u(gen);
	return d;
}

// A random graph on k vertices, possibly disconnected, with parallel edges.
std::vector<GraphEdge>
random_edges(std::mt19937 &gen, std::size_t k)
{
	std::uniform_real_distribution<double> u(0.1, 3);
	std::vector<GraphEdge> es;
	if (k < 2)
		return es;
	const std::size_t m = gen() % (2 * k + 1);
	for (std::size_t e = 0; e < m; e++) {
		std::size_t a = gen() % k, b = gen() % k;
		if (a != b)
			es.push_back(GraphEdge{a, b, u(gen)});
	}
	return es;
}

// Metrics of every new kind (plus the original kinds) fitted to dom.
std::vector<ColumnMetric>
catalogue_metrics(const Domain &dom, std::mt19937 &gen, bool with_old_kinds)
{
	std::uniform_real_distribution<double> u(0.2, 3);
	double spread = 0;
	for (std::size_t i = 0; i < dom.size(); i++)
		for (std::size_t j = 0; j < dom.size(); j++)
			spread = std::max(spread, euclid(dom, i, j));
	const double tau = std::max(1e-3, spread * (0.1 + 0.4 * (gen() % 100) / 100.0));
	std::vector<ColumnMetric> ms = {ColumnMetric::lp(1, u(gen)),       ColumnMetric::lp(2, u(gen)),
	                                ColumnMetric::lp(0, u(gen)),       ColumnMetric::theta1(tau, u(gen)),
	                                ColumnMetric::theta1(tau),         ColumnMetric::theta2(tau, u(gen)),
	                                ColumnMetric::theta2(tau * 2),     ColumnMetric::theta1(tau, kInfinity),
	                                ColumnMetric::matrix(dom.size(), flat(random_table(gen, dom.size())), nullptr),
	                                ColumnMetric::graph(dom.size(), random_edges(gen, dom.size()))};
	if (with_old_kinds) {
		std::vector<double> w(dom.size());
		for (double &x : w)
			x = gen() % 4 == 0 ? kInfinity : u(gen);
		ms.push_back(ColumnMetric::discrete(u(gen)));
		ms.push_back(ColumnMetric::per_value(w));
		ms.push_back(ColumnMetric::none());
		if (dom.kind() != DomainKind::Points)
			ms.push_back(ColumnMetric::absolute(u(gen)));
	}
	return ms;
}

// Reference nearest point: clamp into the widened bounding box, then brute-force squared distance.
std::size_t
brute_nearest(const Domain &dom, const std::vector<double> &x)
{
	const std::size_t k = dom.size(), dims = dom.dims();
	for (double v : x)
		if (std::isnan(v))
			return dom.default_index();
	std::vector<double> lo(dims, kInfinity), hi(dims, -kInfinity);
	for (std::size_t i = 0; i < k; i++)
		for (std::size_t d = 0; d < dims; d++) {
			lo[d] = std::min(lo[d], dom.coordinate(i, d));
			hi[d] = std::max(hi[d], dom.coordinate(i, d));
		}
	double s = 0;
	for (std::size_t d = 0; d < dims; d++)
		s = std::max(s, hi[d] - lo[d]);
	if (s == 0)
		s = 1;
	std::vector<double> c(dims);
	for (std::size_t d = 0; d < dims; d++)
		c[d] = std::min(std::max(x[d], lo[d] - s), hi[d] + s);
	std::size_t best = 0;
	double best_d2 = kInfinity;
	for (std::size_t i = 0; i < k; i++) {
		double d2 = 0;
		for (std::size_t d = 0; d < dims; d++) {
			double t = c[d] - dom.coordinate(i, d);
			d2 += t * t;
		}
		if (d2 < best_d2) {
			best_d2 = d2;
			best = i;
		}
	}
	return best;
}

} // namespace

TEST(PointsDomain, BasicsAndLabels)
{
	Domain d = Domain::points(2, {0, 0, 1.5, -2, 0.1, 1e6});
	EXPECT_EQ(d.kind(), DomainKind::Points);
	EXPECT_EQ(d.size(), 3u);
	EXPECT_EQ(d.dims(), 2u);
	EXPECT_EQ(d.coordinate(1, 0), 1.5);
	EXPECT_EQ(d.coordinate(1, 1), -2.0);
	EXPECT_EQ(d.ordinal(2), 2.0);
	EXPECT_EQ(d.label(0), "(0,0)");
	EXPECT_EQ(d.label(1), "(1.5,-2)");
	EXPECT_EQ(d.label(2), "(0.1,1000000)");
	EXPECT_EQ(d.find_label("(0,0)"), -1); // labels are looked up for enumerated domains only
	EXPECT_EQ(d.index_of(1.4), d.default_index()); // multi-dimensional: use nearest()
	EXPECT_THROW(d.coordinate(3, 0), CoreError);
	EXPECT_THROW(d.coordinate(0, 2), CoreError);
	EXPECT_THROW(d.label(3), CoreError);
	Domain three = Domain::points(3, {1, 2, 3});
	EXPECT_EQ(three.label(0), "(1,2,3)");
	Domain line = Domain::points(1, {5, -1, 2});
	EXPECT_EQ(line.dims(), 1u);
	EXPECT_EQ(line.label(1), "(-1)");
	EXPECT_EQ(line.index_of(1.6), 2u); // 1-D points: index_of is nearest()
	EXPECT_EQ(line.index_of(-100), 1u);
	EXPECT_EQ(line.index_of(kNaN), 0u);
	// The one-dimensional kinds: one coordinate, the ordinal; nearest() is index_of().
	Domain r = Domain::range(0, 10, 2.5);
	EXPECT_EQ(r.dims(), 1u);
	EXPECT_EQ(r.coordinate(3, 0), 7.5);
	EXPECT_THROW(r.coordinate(3, 1), CoreError);
	double x = 6.3;
	EXPECT_EQ(r.nearest(&x), 3u);
	EXPECT_EQ(Domain::enumerated({"a", "b"}).dims(), 1u);
	// Copies share the point set and answer the same.
	Domain copy = d;
	double q[2] = {1.4, -1.9};
	EXPECT_EQ(copy.nearest(q), 1u);
}

TEST(PointsDomain, ValidationErrors)
{
	EXPECT_EQ(contract_error_kind([] { Domain::points(0, {1}); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { Domain::points(9, std::vector<double>(9, 1)); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { Domain::points(2, {}); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { Domain::points(2, {1, 2, 3}); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { Domain::points(2, {1, kNaN}); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { Domain::points(2, {1, kInfinity}); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { Domain::points(1, {-kInfinity}); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { Domain::points(1, {2e150}); }), ErrorKind::InvalidParameter);
	EXPECT_NO_THROW(Domain::points(1, {1e150, -1e150}));
	EXPECT_EQ(contract_error_kind([] { Domain::points(2, {1, 2, 3, 4, 1, 2}); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { Domain::points(2, {0, 0, -0.0, 0}); }), ErrorKind::InvalidParameter);
	// Distinct coordinates that would print the same "%.15g" label.
	EXPECT_EQ(contract_error_kind([] { Domain::points(1, {0.1, 0.1 + 1e-17}); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { Domain::points(2, {1, 0, 1 + 1e-15, 5}); }), ErrorKind::InvalidParameter);
	EXPECT_NO_THROW(Domain::points(1, {1e-200, 0})); // tiny but far apart relative to their size
	std::vector<double> many(kMaxDomainSize + 1);
	for (std::size_t i = 0; i < many.size(); i++)
		many[i] = static_cast<double>(i);
	EXPECT_EQ(contract_error_kind([&many] { Domain::points(1, many); }), ErrorKind::ProgramLimit);
}

TEST(PointsDomain, NearestMatchesBruteForce)
{
	std::mt19937 gen(99);
	std::uniform_real_distribution<double> u(-8, 8);
	for (int rep = 0; rep < 30; rep++) {
		const std::size_t dims = 1 + rep % 4;
		const bool lattice = rep % 2 == 0;
		const std::size_t k = 1 + gen() % 300;
		const std::size_t cap = static_cast<std::size_t>(std::pow(5.0, static_cast<double>(dims)));
		Domain dom = random_points(gen, dims, lattice ? std::min(k, cap) : k, lattice, 5);
		for (int t = 0; t < 400; t++) {
			std::vector<double> x(dims);
			for (double &v : x) {
				switch (gen() % 6) {
				case 0: v = 0.5 * static_cast<double>(gen() % 11) - 0.5; break; // midpoints: ties
				case 1: v = static_cast<double>(gen() % 5); break;                // exact points
				default: v = u(gen);
				}
			}
			if (t % 50 == 1)
				x[gen() % dims] = gen() % 2 ? kInfinity : -kInfinity;
			if (t % 50 == 2)
				x[gen() % dims] = 1e300;
			if (t % 50 == 3)
				x[gen() % dims] = kNaN;
			ASSERT_EQ(dom.nearest(x.data()), brute_nearest(dom, x)) << "rep " << rep << " t " << t;
		}
	}
	// Ties go to the lowest index; NaN anywhere maps to the default point.
	Domain sq = Domain::points(2, {1, 1, 0, 0, 1, 0, 0, 1});
	double centre[2] = {0.5, 0.5};
	EXPECT_EQ(sq.nearest(centre), 0u);
	double nan_y[2] = {0.9, kNaN};
	EXPECT_EQ(sq.nearest(nan_y), sq.default_index());
	double far[2] = {kInfinity, -kInfinity};
	EXPECT_EQ(sq.nearest(far), 2u); // clamped to (2, -1): nearest is (1, 0)
}

TEST(PointsDomain, NearestIsFast)
{
	std::mt19937 gen(5);
	std::uniform_real_distribution<double> u(0, 100);
	std::vector<double> coords;
	for (int i = 0; i < 100; i++)
		for (int j = 0; j < 100; j++) {
			coords.push_back(i + 0.25 * (gen() % 2));
			coords.push_back(j);
		}
	Domain dom = Domain::points(2, coords);
	auto t0 = std::chrono::steady_clock::now();
	std::size_t sum = 0;
	const int lookups = 1000000;
	for (int t = 0; t < lookups; t++) {
		double x[2] = {u(gen), u(gen)};
		sum += dom.nearest(x);
	}
	const double secs = seconds_since(t0);
	std::printf("[timing] %d nearest() lookups over 10^4 points: %.3f s (%.0f ns each)\n", lookups, secs,
	            secs / lookups * 1e9);
	EXPECT_GT(sum, 0u);
	EXPECT_LT(secs, 5.0);
}

TEST(MetricCatalogue, ConstructionErrors)
{
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::lp(3, 1); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::lp(-1, 1); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::lp(2, 0); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::lp(2, -1); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::lp(1, kInfinity); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::lp(0, kNaN); }), ErrorKind::InvalidParameter);
	for (auto make : {+[](double t, double w) { return ColumnMetric::theta1(t, w); },
	                  +[](double t, double w) { return ColumnMetric::theta2(t, w); }}) {
		EXPECT_EQ(contract_error_kind([&] { make(0, 1); }), ErrorKind::InvalidParameter);
		EXPECT_EQ(contract_error_kind([&] { make(-1, 1); }), ErrorKind::InvalidParameter);
		EXPECT_EQ(contract_error_kind([&] { make(kInfinity, 1); }), ErrorKind::InvalidParameter);
		EXPECT_EQ(contract_error_kind([&] { make(kNaN, 1); }), ErrorKind::InvalidParameter);
		EXPECT_EQ(contract_error_kind([&] { make(1, 0); }), ErrorKind::InvalidParameter);
		EXPECT_EQ(contract_error_kind([&] { make(1, -2); }), ErrorKind::InvalidParameter);
		EXPECT_EQ(contract_error_kind([&] { make(1, kNaN); }), ErrorKind::InvalidParameter);
		EXPECT_NO_THROW(make(1, kInfinity));
	}
	// Matrix.
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::matrix(0, {}, nullptr); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::matrix(2, {0, 1, 1}, nullptr); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::matrix(2, {0, 1, 2, 0}, nullptr); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::matrix(2, {0, -1, -1, 0}, nullptr); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::matrix(2, {0, 0, 0, 0}, nullptr); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::matrix(2, {1, 1, 1, 0}, nullptr); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::matrix(2, {0, kNaN, kNaN, 0}, nullptr); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::matrix(2, {kNaN, 1, 1, 0}, nullptr); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::matrix(4097, {}, nullptr); }), ErrorKind::ProgramLimit);
	EXPECT_NO_THROW(ColumnMetric::matrix(2, {0, kInfinity, kInfinity, 0}, nullptr));
	EXPECT_NO_THROW(ColumnMetric::matrix(1, {0}, nullptr));
	try {
		ColumnMetric::matrix(3, {0, 1, 2, 1, 0, 3, 2, 4, 0}, nullptr);
		ADD_FAILURE();
	} catch (const CoreError &e) {
		EXPECT_EQ(std::string(e.what()), "matrix metric is not symmetric at row 2, column 3");
	}
	// Graph.
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::graph(0, {}); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::graph(kMaxDomainSize + 1, {}); }), ErrorKind::ProgramLimit);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::graph(3, {{0, 3, 1}}); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::graph(3, {{1, 1, 1}}); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::graph(3, {{0, 1, 0}}); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::graph(3, {{0, 1, -1}}); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::graph(3, {{0, 1, kInfinity}}); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::graph(3, {{0, 1, kNaN}}); }), ErrorKind::InvalidParameter);
	EXPECT_NO_THROW(ColumnMetric::graph(3, {}));
}

TEST(MetricCatalogue, ValidateAgainstDomains)
{
	Domain pts = Domain::points(2, {0, 0, 1, 0, 0, 1});
	Domain e4 = Domain::enumerated({"a", "b", "c", "d"});
	EXPECT_EQ(contract_error_kind([&] { ColumnMetric::absolute(1).validate(pts); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(contract_error_kind([] { ColumnMetric::absolute(1).validate(Domain::points(1, {0, 1})); }),
	          ErrorKind::InvalidParameter);
	for (const Domain &dom : {pts, e4, Domain::range(0, 1, 0.5), Domain::dates(0, 30, 7), Domain::points(1, {3, 1})})
		for (const ColumnMetric &m : {ColumnMetric::lp(1, 2), ColumnMetric::lp(2, 2), ColumnMetric::lp(0, 2),
		                              ColumnMetric::theta1(1), ColumnMetric::theta2(1), ColumnMetric::discrete(1)})
			EXPECT_NO_THROW(m.validate(dom));
	EXPECT_EQ(contract_error_kind([&] { ColumnMetric::matrix(4, std::vector<double>(16, 1), nullptr).validate(pts); }),
	          ErrorKind::InvalidParameter); // diagonal not zero
	std::vector<double> t4(16, 1);
	for (int i = 0; i < 4; i++)
		t4[i * 5] = 0;
	EXPECT_EQ(contract_error_kind([&] { ColumnMetric::matrix(4, t4, nullptr).validate(pts); }), ErrorKind::InvalidParameter);
	EXPECT_NO_THROW(ColumnMetric::matrix(4, t4, nullptr).validate(e4));
	EXPECT_EQ(contract_error_kind([&] { ColumnMetric::graph(4, {{0, 1, 1}}).validate(pts); }), ErrorKind::InvalidParameter);
	EXPECT_NO_THROW(ColumnMetric::graph(3, {{0, 1, 1}}).validate(pts));
	// A scale so large that distinct points would be at distance 0.
	Domain tiny = Domain::points(2, {0, 0, 1e-300, 0});
	EXPECT_NO_THROW(ColumnMetric::lp(2, 1e10).validate(tiny));
	EXPECT_EQ(contract_error_kind([&] { ColumnMetric::lp(2, 1e300).validate(tiny); }), ErrorKind::InvalidParameter);
	Domain tiny_range = Domain::range(0, 1e-299, 1e-300);
	EXPECT_EQ(contract_error_kind([&] { ColumnMetric::lp(1, 1e300).validate(tiny_range); }), ErrorKind::InvalidParameter);
	// Tiny coordinates still give positive, exact l2 distances (scaled formula).
	EXPECT_DOUBLE_EQ(ColumnMetric::lp(2, 1).distance(tiny, 0, 1), 1e-300);
	Domain tiny3 = Domain::points(2, {0, 0, 3e-200, 4e-200});
	EXPECT_DOUBLE_EQ(ColumnMetric::lp(2, 1).distance(tiny3, 0, 1), 5e-200);
}

TEST(MetricCatalogue, Distances)
{
	Domain pts = Domain::points(2, {0, 0, 3, 4, 6, 0});
	EXPECT_EQ(ColumnMetric::lp(2, 1).distance(pts, 0, 1), 5.0);
	EXPECT_EQ(ColumnMetric::lp(2, 2).distance(pts, 0, 1), 2.5);
	EXPECT_EQ(ColumnMetric::lp(1, 1).distance(pts, 0, 1), 7.0);
	EXPECT_EQ(ColumnMetric::lp(0, 1).distance(pts, 0, 1), 4.0);
	EXPECT_EQ(ColumnMetric::lp(2, 1).distance(pts, 1, 1), 0.0);
	// theta1 with tau = 5: 0-1 and 1-2 are secrets (5 apart), 0-2 (6 apart) is two hops.
	EXPECT_EQ(ColumnMetric::theta1(5, 0.5).distance(pts, 0, 1), 0.5);
	EXPECT_EQ(ColumnMetric::theta1(5, 0.5).distance(pts, 0, 2), 1.0);
	EXPECT_EQ(ColumnMetric::theta1(4.9, 0.5).distance(pts, 0, 2), kInfinity); // no edges at all
	EXPECT_EQ(ColumnMetric::theta2(5, 0.5).distance(pts, 0, 2), 0.5 * 6 / 5);
	EXPECT_EQ(ColumnMetric::theta2(5, 0.5).distance(pts, 0, 1), 0.5);
	// On the one-dimensional kinds l_p is the absolute metric.
	Domain r = Domain::range(0, 10, 2);
	for (int p : {0, 1, 2})
		for (std::size_t i = 0; i < r.size(); i++)
			for (std::size_t j = 0; j < r.size(); j++)
				EXPECT_EQ(ColumnMetric::lp(p, 4).distance(r, i, j), ColumnMetric::absolute(4).distance(r, i, j));
	EXPECT_EQ(ColumnMetric::theta1(4, 1).distance(r, 0, 5), 3.0); // hops of at most 4: 0-4-8-10
	EXPECT_EQ(ColumnMetric::theta2(4, 1).distance(r, 0, 5), 2.5);
}

TEST(MetricCatalogue, DateScaledMetricIsAbsolute)
{
	// §3.12(e): d = epsilon * |t_i - t_j| / W with a window of W = 7 days.
	Domain days = Domain::dates(0, 60, 1); // 2000-01-01 .. 2000-03-01
	ColumnMetric week = ColumnMetric::absolute(7);
	EXPECT_EQ(days.label(7), "2000-01-08");
	EXPECT_EQ(week.distance(days, 0, 7), 1.0);  // one week apart: one unit of epsilon
	EXPECT_EQ(week.distance(days, 0, 14), 2.0);
	EXPECT_DOUBLE_EQ(week.distance(days, 3, 4), 1.0 / 7);
	// COUNT of days in January: the boundary pair (Jan 31, Feb 1) binds, scale 7 / epsilon.
	std::vector<double> q(days.size());
	for (std::size_t i = 0; i < q.size(); i++)
		q[i] = i < 31 ? 1 : 0;
	EXPECT_DOUBLE_EQ(week.line_sensitivity(days, q.data(), 1), 7.0);
	EXPECT_DOUBLE_EQ(ColumnMetric::lp(1, 7).line_sensitivity(days, q.data(), 1), 7.0);
	// Weekly granularity: neighbouring points are a full window apart.
	Domain weeks = Domain::dates(0, 70, 7);
	EXPECT_EQ(week.distance(weeks, 2, 3), 1.0);
}

TEST(MetricCatalogue, AxiomsByBruteForce)
{
	std::mt19937 gen(20240602);
	for (int rep = 0; rep < 3; rep++)
		for (const Domain &dom : sample_domains(gen))
			for (const ColumnMetric &m : catalogue_metrics(dom, gen, false)) {
				m.validate(dom);
				const std::size_t k = dom.size();
				for (std::size_t i = 0; i < k; i++) {
					EXPECT_EQ(m.distance(dom, i, i), 0.0);
					for (std::size_t j = 0; j < k; j++) {
						const double dij = m.distance(dom, i, j);
						EXPECT_EQ(dij, m.distance(dom, j, i));
						if (i != j) {
							EXPECT_GT(dij, 0.0);
						}
						for (std::size_t l = 0; l < k; l++)
							EXPECT_LE(dij, (m.distance(dom, i, l) + m.distance(dom, l, j)) * (1 + 1e-12))
							    << "kind " << static_cast<int>(m.kind()) << " triangle " << i << " " << l << " " << j;
					}
				}
			}
}

TEST(MetricCatalogue, MatrixClosure)
{
	// Not a metric: d(0,2) = 5 > d(0,1) + d(1,2) = 2, and d(0,3) = inf reachable through 2.
	std::vector<double> raw = {0, 1, 5, kInfinity, 1, 0, 1, kInfinity, 5, 1, 0, 2, kInfinity, kInfinity, 2, 0};
	bool changed = false;
	ColumnMetric m = ColumnMetric::matrix(4, raw, &changed);
	EXPECT_TRUE(changed);
	EXPECT_EQ(m.kind(), MetricKind::Matrix);
	Domain e = Domain::enumerated({"a", "b", "c", "d"});
	EXPECT_EQ(m.distance(e, 0, 2), 2.0);
	EXPECT_EQ(m.distance(e, 0, 3), 4.0);
	EXPECT_EQ(m.distance(e, 3, 1), 3.0);
	// Its closure is already closed: closure_changed false, same distances.
	std::vector<double> closed;
	for (std::size_t i = 0; i < 4; i++)
		for (std::size_t j = 0; j < 4; j++)
			closed.push_back(m.distance(e, i, j));
	changed = true;
	ColumnMetric again = ColumnMetric::matrix(4, closed, &changed);
	EXPECT_FALSE(changed);
	for (std::size_t i = 0; i < 4; i++)
		for (std::size_t j = 0; j < 4; j++)
			EXPECT_EQ(again.distance(e, i, j), closed[i * 4 + j]);
	// Random tables: closure equals an independent Floyd-Warshall; changed iff some entry dropped.
	std::mt19937 gen(3);
	for (int rep = 0; rep < 100; rep++) {
		const std::size_t k = 1 + gen() % 9;
		Matrix t = random_table(gen, k);
		Matrix c = closure(t);
		bool ch = false;
		ColumnMetric mm = ColumnMetric::matrix(k, flat(t), &ch);
		EXPECT_EQ(ch, c != t);
		Domain dom = Domain::range(0, static_cast<double>(k - 1), 1);
		for (std::size_t i = 0; i < k; i++)
			for (std::size_t j = 0; j < k; j++)
				EXPECT_EQ(mm.distance(dom, i, j), c[i][j]);
	}
	// A discrete table is already a metric; a null closure_changed pointer is accepted.
	EXPECT_NO_THROW(ColumnMetric::matrix(3, {0, 1, 1, 1, 0, 1, 1, 1, 0}, nullptr));
}

TEST(MetricCatalogue, MatrixClosureTiming)
{
	const std::size_t k = 1024;
	std::mt19937 gen(11);
	std::uniform_real_distribution<double> u(1, 10);
	std::vector<double> d(k * k, 0);
	for (std::size_t i = 0; i < k; i++)
		for (std::size_t j = i + 1; j < k; j++)
			d[i * k + j] = d[j * k + i] = u(gen);
	auto t0 = std::chrono::steady_clock::now();
	bool changed = false;
	ColumnMetric m = ColumnMetric::matrix(k, d, &changed);
	std::printf("[timing] matrix metric closure, k = %zu: %.3f s\n", k, seconds_since(t0));
	EXPECT_TRUE(changed);
}

TEST(MetricCatalogue, GraphHierarchy)
{
	// zip -> city -> state hierarchy: zips 0..4, cities 5..7, states 8..9, plus an isolated
	// vertex 10 (a value nobody may be confused with).
	// zips 0,1 in city 5; zip 2 in city 6; zips 3,4 in city 7; cities 5,6 in state 8, 7 in 9.
	std::vector<GraphEdge> edges = {{0, 5, 0.5}, {1, 5, 0.5}, {2, 6, 0.5}, {3, 7, 0.5}, {4, 7, 0.5},
	                                {5, 8, 1},   {6, 8, 1},   {7, 9, 1},   {8, 9, 4},
	                                {5, 0, 0.7},  // parallel edge: the lightest is kept
	                                {0, 2, 10}};  // longer than the path through the tree (3)
	ColumnMetric g = ColumnMetric::graph(11, edges);
	std::vector<std::string> labels;
	for (int i = 0; i < 11; i++)
		labels.push_back("v" + std::to_string(i));
	Domain dom = Domain::enumerated(labels);
	g.validate(dom);
	EXPECT_EQ(g.kind(), MetricKind::Graph);
	EXPECT_EQ(g.distance(dom, 0, 1), 1.0);  // same city
	EXPECT_EQ(g.distance(dom, 0, 2), 3.0);  // same state
	EXPECT_EQ(g.distance(dom, 0, 3), 7.0);  // other state
	EXPECT_EQ(g.distance(dom, 5, 9), 5.0);
	EXPECT_EQ(g.distance(dom, 4, 8), 5.5);
	EXPECT_EQ(g.distance(dom, 10, 0), kInfinity); // another component
	EXPECT_EQ(g.distance(dom, 10, 10), 0.0);
	// Sufficient edges: the deduplicated edges with their shortest-path lengths.
	std::vector<std::tuple<std::size_t, std::size_t, double>> got;
	g.for_each_edge(dom, [&](std::size_t i, std::size_t j, double d) { got.emplace_back(i, j, d); });
	EXPECT_EQ(got.size(), 10u);
	for (auto [i, j, d] : got) {
		EXPECT_LT(i, j);
		EXPECT_EQ(d, g.distance(dom, i, j));
	}
	EXPECT_NE(std::find(got.begin(), got.end(), std::make_tuple(std::size_t{0}, std::size_t{2}, 3.0)), got.end());
	// COUNT of zip 0: the binding pair is (0, 1) at distance 1 (or ⊥); SUM of a state indicator.
	std::vector<double> q(11, 0);
	q[0] = 1;
	EXPECT_EQ(g.line_sensitivity(dom, q.data(), 1), 2.0); // edge (0,5) at 0.5
	std::vector<double> state8 = {1, 1, 1, 0, 0, 1, 1, 0, 1, 0, 0};
	EXPECT_EQ(g.line_sensitivity(dom, state8.data(), 1), 0.25); // edge (8,9) at 4
	// Disconnected: a query that differs only across components costs nothing.
	std::vector<double> iso(11, 0);
	iso[10] = 5;
	EXPECT_EQ(g.line_sensitivity(dom, iso.data(), 1), 0.0);
}

TEST(MetricCatalogue, GraphMatchesFloydWarshall)
{
	std::mt19937 gen(8);
	for (int rep = 0; rep < 100; rep++) {
		const std::size_t k = 1 + gen() % 12;
		std::vector<GraphEdge> es = random_edges(gen, k);
		Matrix d(k, std::vector<double>(k, kInfinity));
		for (std::size_t i = 0; i < k; i++)
			d[i][i] = 0;
		for (const GraphEdge &e : es)
			d[e.a][e.b] = d[e.b][e.a] = std::min(d[e.a][e.b], e.weight);
		d = closure(d);
		ColumnMetric g = ColumnMetric::graph(k, es);
		Domain dom = Domain::range(0, static_cast<double>(k - 1), 1);
		for (std::size_t i = 0; i < k; i++)
			for (std::size_t j = 0; j < k; j++)
				expect_close(g.distance(dom, i, j), d[i][j]);
	}
}

TEST(MetricCatalogue, Theta1IsClosureOfBlowfishRecipe)
{
	std::mt19937 gen(17);
	std::uniform_real_distribution<double> u(-1, 1);
	for (int rep = 0; rep < 60; rep++) {
		std::vector<Domain> doms = {random_points(gen, 2, 2 + gen() % 14, rep % 2 == 0, 5),
		                            random_points(gen, 1 + gen() % 3, 2 + gen() % 10, false),
		                            Domain::range(0, 0.5 * (gen() % 12), 0.5)};
		for (const Domain &dom : doms) {
			const std::size_t k = dom.size();
			const double tau = 0.5 + 0.25 * (gen() % 8);
			const double eps = 0.1 + 0.1 * (gen() % 20);
			// Recipe: 0 on the diagonal, +inf elsewhere, epsilon on the secret pairs, then closure.
			Matrix raw(k, std::vector<double>(k, kInfinity));
			for (std::size_t i = 0; i < k; i++)
				for (std::size_t j = 0; j < k; j++)
					if (i == j)
						raw[i][j] = 0;
					else if (euclid(dom, i, j) <= tau)
						raw[i][j] = eps;
			Matrix closed = closure(raw);
			ColumnMetric t1 = ColumnMetric::theta1(tau, eps);
			ColumnMetric t2 = ColumnMetric::theta2(tau, eps);
			ColumnMetric as_matrix = ColumnMetric::matrix(k, flat(raw), nullptr);
			for (std::size_t i = 0; i < k; i++)
				for (std::size_t j = 0; j < k; j++) {
					expect_close(t1.distance(dom, i, j), closed[i][j]);
					EXPECT_LE(t2.distance(dom, i, j), t1.distance(dom, i, j) * (1 + 1e-12)); // theta2 <= theta1
				}
			// The raw Blowfish matrix and its closure give the same d_X-Laplace scale.
			for (int t = 0; t < 5; t++) {
				std::vector<double> q(k);
				for (double &x : q)
					x = t == 0 ? static_cast<double>(gen() % 2) : u(gen);
				double raw_scale = 0;
				for (std::size_t i = 0; i < k; i++)
					for (std::size_t j = 0; j < k; j++)
						if (i != j && std::fabs(q[i] - q[j]) > 0)
							raw_scale = std::max(raw_scale, std::fabs(q[i] - q[j]) / raw[i][j]);
				const double got = t1.line_sensitivity(dom, q.data(), 1);
				EXPECT_NEAR(got, raw_scale, 1e-12 * std::max(1.0, raw_scale));
				EXPECT_NEAR(as_matrix.line_sensitivity(dom, q.data(), 1), raw_scale, 1e-12 * std::max(1.0, raw_scale));
				EXPECT_GE(t2.line_sensitivity(dom, q.data(), 1), got * (1 - 1e-12)); // tighter privacy, more noise
			}
		}
	}
}

TEST(MetricCatalogue, LineSensitivityMatchesAllPairs)
{
	std::mt19937 gen(424242);
	std::uniform_real_distribution<double> u(-10, 10);
	const std::size_t stride = 3;
	for (int rep = 0; rep < 4; rep++)
		for (const Domain &dom : sample_domains(gen))
			for (int t = 0; t < 6; t++) {
				std::vector<double> q(dom.size() * stride, 1e300); // off-line entries must be ignored
				for (std::size_t i = 0; i < dom.size(); i++)
					q[i * stride] = (t % 3 == 0) ? static_cast<double>(gen() % 3) : u(gen); // ties too
				for (const ColumnMetric &m : catalogue_metrics(dom, gen, true)) {
					m.validate(dom);
					const double expect = brute_line(m, dom, q.data(), stride);
					const double got = m.line_sensitivity(dom, q.data(), stride);
					EXPECT_NEAR(got, expect, 1e-12 * std::max(1.0, expect)) << "kind " << static_cast<int>(m.kind());
					EXPECT_NEAR(m.line_sensitivity(dom, q.data(), stride), got, 0.0); // deterministic
				}
			}
	// Constant q: 0 for every kind.
	std::mt19937 gen2(1);
	Domain pts = random_points(gen2, 2, 10, false);
	std::vector<double> c(10, 2.5);
	for (const ColumnMetric &m : catalogue_metrics(pts, gen2, true))
		EXPECT_EQ(m.line_sensitivity(pts, c.data(), 1), 0.0);
}

TEST(MetricCatalogue, EdgeClosureEqualsDistance)
{
	std::mt19937 gen(77);
	for (int rep = 0; rep < 3; rep++)
		for (const Domain &dom : sample_domains(gen))
			for (const ColumnMetric &m : catalogue_metrics(dom, gen, true)) {
				m.validate(dom);
				const std::size_t k = dom.size();
				Matrix d(k, std::vector<double>(k, kInfinity));
				for (std::size_t i = 0; i < k; i++)
					d[i][i] = 0;
				std::size_t calls = 0;
				m.for_each_edge(dom, [&](std::size_t i, std::size_t j, double dij) {
					EXPECT_LT(i, j);
					EXPECT_LT(j, k);
					EXPECT_LT(dij, kInfinity);
					EXPECT_EQ(dij, m.distance(dom, i, j));
					d[i][j] = d[j][i] = std::min(d[i][j], dij);
					calls++;
				});
				d = closure(d);
				for (std::size_t i = 0; i < k; i++)
					for (std::size_t j = 0; j < k; j++) {
						SCOPED_TRACE("kind " + std::to_string(static_cast<int>(m.kind())));
						expect_close(d[i][j], m.distance(dom, i, j));
					}
				// Line metrics use only adjacent points.
				if (m.kind() == MetricKind::Absolute || ((m.kind() == MetricKind::L1 || m.kind() == MetricKind::L2 ||
				                                          m.kind() == MetricKind::LInf) &&
				                                         dom.dims() == 1))
					EXPECT_EQ(calls, k - 1);
			}
}

TEST(MetricCatalogue, GeneralizedSensitivityMatchesRecordMetric)
{
	std::mt19937 gen(2024);
	std::uniform_real_distribution<double> u(-3, 3);
	for (int rep = 0; rep < 40; rep++) {
		SubUniverse sub;
		sub.domains = {random_points(gen, 2, 2 + gen() % 5, rep % 2 == 0, 4), Domain::range(0, 2, 1)};
		std::vector<ColumnMetric> ms = catalogue_metrics(sub.domains[0], gen, false);
		sub.metrics = {ms[gen() % ms.size()], ColumnMetric::absolute(1 + gen() % 3)};
		sub.presence = gen() % 3 == 0 ? kInfinity : 0.5 + gen() % 4;
		std::vector<double> q(sub.size());
		for (double &x : q)
			x = gen() % 3 == 0 ? static_cast<double>(gen() % 2) : u(gen);
		Matrix d = record_metric(sub);
		std::vector<double> qx = q;
		qx.push_back(0);
		double expect = 0;
		for (std::size_t i = 0; i < qx.size(); i++)
			for (std::size_t j = i + 1; j < qx.size(); j++)
				if (std::fabs(qx[i] - qx[j]) > 0)
					expect = std::max(expect, std::fabs(qx[i] - qx[j]) / d[i][j]);
		EXPECT_NEAR(generalized_sensitivity(sub, q), expect, 1e-12 * std::max(1.0, expect))
		    << "kind " << static_cast<int>(sub.metrics[0].kind());
	}
}

TEST(MetricCatalogue, TimingsAndWorkCap)
{
	std::mt19937 gen(31337);
	std::uniform_real_distribution<double> u(0, 1000);
	// 10^4 points in 2-D, l2: one line is 5 * 10^7 pairs.
	std::vector<double> coords;
	for (int i = 0; i < 100; i++)
		for (int j = 0; j < 100; j++) {
			coords.push_back(10 * i + 0.5 * (gen() % 3));
			coords.push_back(10 * j);
		}
	Domain pts = Domain::points(2, coords);
	std::vector<double> q(pts.size());
	for (double &x : q)
		x = u(gen);
	ColumnMetric l2 = ColumnMetric::lp(2, 50);
	auto t0 = std::chrono::steady_clock::now();
	const double s_l2 = l2.line_sensitivity(pts, q.data(), 1);
	const double t_l2 = seconds_since(t0);
	std::printf("[timing] l2 line_sensitivity over 10^4 points (5e7 pairs): %.3f s (S = %g)\n", t_l2, s_l2);
	EXPECT_GT(s_l2, 0);
	EXPECT_LT(t_l2, 5.0);
	t0 = std::chrono::steady_clock::now();
	const double s_t2 = ColumnMetric::theta2(30).line_sensitivity(pts, q.data(), 1);
	std::printf("[timing] theta2 line_sensitivity over 10^4 points: %.3f s (S = %g)\n", seconds_since(t0), s_t2);
	t0 = std::chrono::steady_clock::now();
	const double s_t1 = ColumnMetric::theta1(15).line_sensitivity(pts, q.data(), 1);
	std::printf("[timing] theta1 line_sensitivity over 10^4 points (tau = 1.5 grid steps): %.4f s (S = %g)\n",
	            seconds_since(t0), s_t1);
	EXPECT_GE(s_t2, s_t1 * (1 - 1e-12));

	// Sub-universe with 2 * 10^6 one-column edges: Range(1000) x hierarchy graph of 1000 vertices.
	std::vector<GraphEdge> tree;
	for (std::size_t v = 1; v < 1000; v++)
		tree.push_back(GraphEdge{v, (v - 1) / 10, 1.0 + static_cast<double>(v % 3)});
	t0 = std::chrono::steady_clock::now();
	ColumnMetric g = ColumnMetric::graph(1000, tree);
	const double t_build = seconds_since(t0);
	SubUniverse sub;
	sub.domains = {Domain::range(0, 999, 1), Domain::range(0, 999, 1)};
	sub.metrics = {ColumnMetric::absolute(10), g};
	sub.presence = 1;
	std::vector<double> w(sub.size());
	for (std::size_t i = 0; i < w.size(); i++)
		w[i] = static_cast<double>((i * 2654435761u) % 1000) / 100;
	t0 = std::chrono::steady_clock::now();
	const double s_sub = generalized_sensitivity(sub, w);
	const double t_sub = seconds_since(t0);
	std::printf("[timing] graph build (1000 vertices): %.4f s; generalized_sensitivity over 10^6 points and "
	            "2e6 edges: %.3f s (S = %g)\n",
	            t_build, t_sub, s_sub);
	EXPECT_LT(t_sub, 2.0);

	// Large hierarchy graph: 10^6 vertices, one line.
	std::vector<GraphEdge> big;
	for (std::size_t v = 1; v < kMaxDomainSize; v++)
		big.push_back(GraphEdge{v, (v - 1) / 8, 1.0});
	t0 = std::chrono::steady_clock::now();
	ColumnMetric gb = ColumnMetric::graph(kMaxDomainSize, big);
	const double t_big = seconds_since(t0);
	Domain big_dom = Domain::range(0, static_cast<double>(kMaxDomainSize - 1), 1);
	std::vector<double> qb(kMaxDomainSize);
	for (std::size_t i = 0; i < qb.size(); i++)
		qb[i] = static_cast<double>(i % 7);
	t0 = std::chrono::steady_clock::now();
	const double s_big = gb.line_sensitivity(big_dom, qb.data(), 1);
	const double t_line = seconds_since(t0);
	t0 = std::chrono::steady_clock::now();
	const double d_far = gb.distance(big_dom, 0, kMaxDomainSize - 1);
	std::printf("[timing] graph build with 10^6 vertices: %.3f s; one line over its 10^6 edges: %.4f s; "
	            "distance(0, 999999) = %g in %.3f s (one Dijkstra row)\n",
	            t_big, t_line, d_far, seconds_since(t0));
	EXPECT_EQ(s_big, 6.0);
	EXPECT_EQ(d_far, 7.0);

	// The work cap: all pairs of 10^4 points on each of 100 lines is refused before it starts when
	// every pair is rated (the pair tree off, as under dxpriv.exhaustive_analysis); the pair tree
	// (core/pair_tree.h) estimates k log2 k per line and answers it.
	SubUniverse heavy;
	heavy.domains = {pts, Domain::range(0, 99, 1)};
	heavy.metrics = {l2, ColumnMetric::absolute(1)};
	std::vector<double> hq(heavy.size(), 1);
	detail::set_pair_tree(false);
	t0 = std::chrono::steady_clock::now();
	EXPECT_EQ(contract_error_kind([&] { generalized_sensitivity(heavy, hq); }), ErrorKind::ProgramLimit);
	EXPECT_LT(seconds_since(t0), 1.0);
	detail::set_pair_tree(true);
	EXPECT_EQ(generalized_sensitivity(heavy, hq), 1.0); // presence 1, a constant weight
}
