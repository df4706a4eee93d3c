// Unit tests for generalized sensitivity (MECHANISMS.md §3.2, §3.7, §3.12, §3.14 T1, T2, T4) and
// for the calibration and exact accumulation of one linear query (§3.6).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/linear_query.h"
#include "core/random.h"
#include "core/sensitivity.h"
#include "test_support.h"

using namespace dxpriv;

namespace {

using ::dxpriv::testing::error_kind;
using ::dxpriv::testing::record_metric;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
using Matrix = std::vector<std::vector<double>>;

// Builds q over the sub-universe from a function of the per-column point indexes.
std::vector<double>
make_q(const SubUniverse &sub, const std::function<double(const std::vector<std::size_t> &)> &f)
{
	std::vector<double> q(sub.size());
	for (std::size_t u = 0; u < q.size(); u++)
		q[u] = f(sub.unflatten(u));
	return q;
}

// q(u) = value of the first referenced column (SUM of that column).
std::vector<double>
values_of_first_column(const SubUniverse &sub)
{
	return make_q(sub, [&sub](const std::vector<std::size_t> &i) { return sub.domains[0].ordinal(i[0]); });
}

// Reference S(q): max over all pairs of the closed record metric (q(⊥) = 0).
double
brute_sensitivity(const Matrix &d, const std::vector<double> &q)
{
	std::vector<double> qx = q;
	qx.push_back(0); // ⊥
	double s = 0;
	for (std::size_t i = 0; i < qx.size(); i++)
		for (std::size_t j = i + 1; j < qx.size(); j++) {
			double diff = std::fabs(qx[i] - qx[j]);
			if (diff > 0)
				s = std::max(s, diff / d[i][j]);
		}
	return s;
}

// Smallest distance between two distinct records (the baseline's eps_min).
double
min_distance(const Matrix &d)
{
	double m = kInfinity;
	for (std::size_t i = 0; i + 1 < d.size(); i++)
		for (std::size_t j = i + 1; j + 1 < d.size(); j++)
			m = std::min(m, d[i][j]);
	return m;
}

// A random small domain of any kind.
Domain
random_domain(std::mt19937 &gen)
{
	const int k = 1 + static_cast<int>(gen() % 4);
	switch (gen() % 3) {
	case 0: {
		std::vector<std::string> labels;
		for (int i = 0; i < k; i++)
			labels.push_back("v" + std::to_string(i));
		return Domain::enumerated(labels);
	}
	case 1: {
		double step = 0.25 * (1 + gen() % 8);
		double lo = -2.0 + 0.5 * (gen() % 8);
		return Domain::range(lo, lo + (k - 1) * step, step);
	}
	default: {
		std::int32_t step = 1 + static_cast<std::int32_t>(gen() % 10);
		std::int32_t lo = static_cast<std::int32_t>(gen() % 1000) - 500;
		return Domain::dates(lo, lo + (k - 1) * step, step);
	}
	}
}

// A random metric for dom, covering every kind and infinite weights.
ColumnMetric
random_metric(const Domain &dom, std::mt19937 &gen)
{
	std::uniform_real_distribution<double> u(0.1, 4);
	switch (gen() % 5) {
	case 0:
		return ColumnMetric::discrete(gen() % 4 == 0 ? kInfinity : u(gen));
	case 1:
		return ColumnMetric::absolute(u(gen));
	case 2: {
		std::vector<double> w(dom.size());
		for (double &x : w)
			x = gen() % 4 == 0 ? kInfinity : u(gen);
		return ColumnMetric::per_value(w);
	}
	case 3:
		return ColumnMetric::none();
	default:
		return ColumnMetric::discrete(1);
	}
}

// Example 1 of MECHANISMS.md §3.12(b): Gender, Native (sensitive value Y), Age; bounded model.
SubUniverse
example1(double eps, double eps2)
{
	SubUniverse sub;
	sub.domains = {Domain::enumerated({"M", "F"}), Domain::enumerated({"Y", "N"}), Domain::enumerated({"A", "B"})};
	sub.metrics = {ColumnMetric::discrete(eps2), ColumnMetric::per_value({eps, eps2}), ColumnMetric::discrete(eps2)};
	sub.presence = kInfinity;
	return sub;
}

} // namespace

TEST(SubUniverse, SizeAndUnflatten)
{
	SubUniverse empty;
	EXPECT_EQ(empty.size(), 1u);
	EXPECT_TRUE(empty.unflatten(0).empty());
	SubUniverse sub = example1(1, 2);
	EXPECT_EQ(sub.size(), 8u);
	EXPECT_EQ(sub.unflatten(5), (std::vector<std::size_t>{1, 0, 1})); // FYB: last column fastest
	EXPECT_THROW(sub.unflatten(8), CoreError);

	SubUniverse big;
	big.domains = {Domain::range(0, 1999, 1), Domain::range(0, 999, 1)};
	big.metrics = {ColumnMetric::none(), ColumnMetric::none()};
	EXPECT_EQ(big.size(), kMaxSubUniverse);
	big.domains.push_back(Domain::range(0, 1, 1));
	big.metrics.push_back(ColumnMetric::none());
	EXPECT_EQ(error_kind([&] { big.size(); }), ErrorKind::ProgramLimit);
	SubUniverse huge;
	for (int c = 0; c < 6; c++) { // 1e36 points: the product itself would overflow 64 bits
		huge.domains.push_back(Domain::range(0, 999999, 1));
		huge.metrics.push_back(ColumnMetric::none());
	}
	EXPECT_EQ(error_kind([&] { huge.size(); }), ErrorKind::ProgramLimit);
	try {
		huge.size();
	} catch (const CoreError &e) {
		EXPECT_NE(e.hint().find("coarser"), std::string::npos);
	}
	SubUniverse mismatched;
	mismatched.domains = {Domain::range(0, 1, 1)};
	EXPECT_EQ(error_kind([&] { mismatched.size(); }), ErrorKind::Internal);
}

TEST(Sensitivity, InputValidation)
{
	SubUniverse sub = example1(1, 2);
	EXPECT_EQ(error_kind([&] { generalized_sensitivity(sub, std::vector<double>(7, 0)); }), ErrorKind::Internal);
	std::vector<double> q(8, 1);
	q[3] = kNaN;
	EXPECT_EQ(error_kind([&] { generalized_sensitivity(sub, q); }), ErrorKind::DataException);
	q[3] = -kInfinity;
	EXPECT_EQ(error_kind([&] { generalized_sensitivity(sub, q); }), ErrorKind::DataException);
	try {
		generalized_sensitivity(sub, q);
	} catch (const CoreError &e) {
		EXPECT_STREQ(e.what(), "weight of the query is not finite for some domain value");
	}
	q[3] = 1;
	sub.presence = 0;
	EXPECT_EQ(error_kind([&] { generalized_sensitivity(sub, q); }), ErrorKind::InvalidParameter);
	sub.presence = kNaN;
	EXPECT_EQ(error_kind([&] { generalized_sensitivity(sub, q); }), ErrorKind::InvalidParameter);
	sub.presence = 1;
	sub.metrics[1] = ColumnMetric::per_value({1, 2, 3}); // wrong number of weights
	EXPECT_EQ(error_kind([&] { generalized_sensitivity(sub, q); }), ErrorKind::InvalidParameter);
}

TEST(Sensitivity, T1LineMetric)
{
	// Reference on the four points p = (0, 1, 3, 6), d = |p_i - p_j|.
	const std::vector<double> p = {0, 1, 3, 6};
	auto t1 = [&p](const std::vector<double> &q) {
		double s = 0;
		for (std::size_t i = 0; i < 4; i++)
			for (std::size_t j = i + 1; j < 4; j++)
				s = std::max(s, std::fabs(q[i] - q[j]) / std::fabs(p[i] - p[j]));
		return s;
	};
	EXPECT_DOUBLE_EQ(t1({0, 1, 2, 3}), 1.0);
	EXPECT_DOUBLE_EQ(t1({0, 0, 1, 1}), 0.5);

	// Same universe embedded in Range(0, 6, 1) with |.| metric: q interpolated linearly between the
	// four points keeps every ratio, so S is unchanged; eps_min of T1 is 1 (points 0 and 1).
	SubUniverse sub;
	sub.domains = {Domain::range(0, 6, 1)};
	sub.metrics = {ColumnMetric::absolute(1)};
	sub.presence = kInfinity;
	auto interpolate = [&p](const std::vector<double> &q4) {
		std::vector<double> q(7);
		for (std::size_t x = 0; x <= 6; x++)
			for (std::size_t i = 0; i + 1 < 4; i++)
				if (x >= p[i] && x <= p[i + 1])
					q[x] = q4[i] + (q4[i + 1] - q4[i]) * (x - p[i]) / (p[i + 1] - p[i]);
		return q;
	};
	struct Case {
		std::vector<double> q4;
		double s, baseline, improvement;
	};
	for (const Case &c : {Case{{0, 1, 2, 3}, 1, 3, 3}, Case{{0, 0, 1, 1}, 0.5, 1, 2}}) {
		std::vector<double> q = interpolate(c.q4);
		double s = generalized_sensitivity(sub, q);
		EXPECT_DOUBLE_EQ(s, c.s);
		EXPECT_DOUBLE_EQ(s, brute_sensitivity(record_metric(sub), q));
		double delta_q = *std::max_element(c.q4.begin(), c.q4.end()) - *std::min_element(c.q4.begin(), c.q4.end());
		double baseline = delta_q / 1.0;
		EXPECT_DOUBLE_EQ(baseline, c.baseline);
		EXPECT_DOUBLE_EQ(baseline / s, c.improvement);
	}
}

TEST(Sensitivity, T2Example1)
{
	const double eps = 1, eps2 = 2;
	SubUniverse sub = example1(eps, eps2);
	// Universe order MYA, MYB, MNA, MNB, FYA, FYB, FNA, FNB.
	Matrix d = record_metric(sub);
	EXPECT_DOUBLE_EQ(d[0][7], eps + 2 * eps2); // d(MYA, FNB) = 5
	EXPECT_DOUBLE_EQ(d[0][2], eps);            // d(MYA, MNA)
	EXPECT_DOUBLE_EQ(d[0][4], eps2);           // d(MYA, FYA)
	EXPECT_DOUBLE_EQ(d[0][1], eps2);           // d(MYA, MYB)
	double direct = 0;
	auto a = sub.unflatten(0), b = sub.unflatten(7);
	for (std::size_t c = 0; c < 3; c++)
		direct += sub.metrics[c].distance(sub.domains[c], a[c], b[c]);
	EXPECT_DOUBLE_EQ(direct, 5.0);
	EXPECT_DOUBLE_EQ(min_distance(d), eps);

	struct Case {
		std::vector<double> q;
		double scale;
	};
	const std::vector<Case> cases = {
	    {{1, 1, 0, 0, 1, 1, 0, 0}, 1 / eps},  // Native = Y
	    {{1, 0, 0, 0, 0, 0, 0, 0}, 1 / eps},  // cell MYA
	    {{1, 1, 1, 1, 0, 0, 0, 0}, 1 / eps2}, // Gender = M
	    {{1, 0, 1, 0, 0, 0, 0, 0}, 1 / eps2}, // adult males MYA + MNA
	};
	for (const Case &c : cases) {
		EXPECT_DOUBLE_EQ(generalized_sensitivity(sub, c.q), c.scale);
		EXPECT_DOUBLE_EQ(brute_sensitivity(d, c.q), c.scale);
		LinearNoisePlan plan = plan_linear_query(sub, c.q, 1.0);
		EXPECT_DOUBLE_EQ(plan.scale, c.scale);
		EXPECT_EQ(plan.grid, 1.0);
		EXPECT_TRUE(plan.integer_weights);
	}
}

TEST(Sensitivity, StandardDpSpecialCase)
{
	// presence 1 and no column metric: textbook Laplace sensitivities.
	SubUniverse sub;
	sub.domains = {Domain::enumerated({"x", "y", "z"}), Domain::range(0, 4, 1)};
	sub.metrics = {ColumnMetric::none(), ColumnMetric::none()};
	sub.presence = 1;
	std::mt19937 gen(99);
	for (int rep = 0; rep < 20; rep++) {
		std::vector<double> q(sub.size());
		for (double &x : q)
			x = static_cast<double>(gen() % 2);
		q[gen() % q.size()] = 1; // the predicate holds somewhere
		EXPECT_EQ(generalized_sensitivity(sub, q), 1.0);
		LinearNoisePlan plan = plan_linear_query(sub, q, 0.5);
		EXPECT_EQ(plan.scale, 2.0);
		EXPECT_EQ(plan.sensitivity, 1.0);
		EXPECT_EQ(plan.grid, 1.0);
	}
	EXPECT_EQ(generalized_sensitivity(sub, std::vector<double>(sub.size(), 0)), 0.0);

	for (auto bounds : std::vector<std::pair<double, double>>{{-5, 3}, {2, 10}}) {
		SubUniverse s1;
		s1.domains = {Domain::range(bounds.first, bounds.second, 1)};
		s1.metrics = {ColumnMetric::none()};
		std::vector<double> q = values_of_first_column(s1);
		EXPECT_EQ(generalized_sensitivity(s1, q), std::max(std::fabs(bounds.first), std::fabs(bounds.second)));
	}
	// SUM of a non-integer range: grid-rounding is exact here, so the scale is still textbook.
	SubUniverse half;
	half.domains = {Domain::range(0.5, 2.5, 0.5)};
	half.metrics = {ColumnMetric::none()};
	std::vector<double> q = values_of_first_column(half);
	LinearNoisePlan plan = plan_linear_query(half, q, 1);
	EXPECT_FALSE(plan.integer_weights);
	EXPECT_EQ(plan.scale, 2.5);

	// No referenced column: COUNT(*) has one weight, S = |q| / presence.
	SubUniverse none;
	EXPECT_EQ(generalized_sensitivity(none, {1}), 1.0);
	none.presence = 0.5;
	EXPECT_EQ(generalized_sensitivity(none, {2.5}), 5.0);
	none.presence = kInfinity; // bounded model: the row count is public
	EXPECT_EQ(generalized_sensitivity(none, {1}), 0.0);
	EXPECT_EQ(plan_linear_query(none, {1}, 1).scale, 0.0);
}

TEST(Sensitivity, T4DeclaredGuaranteeHolds)
{
	std::mt19937 gen(424242);
	std::uniform_real_distribution<double> u(-5, 5);
	for (int rep = 0; rep < 400; rep++) {
		SubUniverse sub;
		const int columns = static_cast<int>(gen() % 4); // 0..3
		for (int c = 0; c < columns; c++) {
			sub.domains.push_back(random_domain(gen));
			sub.metrics.push_back(random_metric(sub.domains.back(), gen));
		}
		sub.presence = gen() % 3 == 0 ? kInfinity : 0.2 + 3 * std::uniform_real_distribution<double>(0, 1)(gen);
		std::vector<double> q(sub.size());
		const int style = rep % 3;
		for (double &x : q)
			x = style == 0 ? u(gen) : style == 1 ? static_cast<double>(gen() % 3) : std::round(u(gen));
		Matrix d = record_metric(sub);
		const double s = generalized_sensitivity(sub, q);
		const double ref = brute_sensitivity(d, q);
		ASSERT_NEAR(s, ref, 1e-12 * std::max(1.0, ref)) << "rep " << rep;
		// The guarantee itself: every pair's change is covered by S times its distance.
		std::vector<double> qx = q;
		qx.push_back(0);
		for (std::size_t i = 0; i < qx.size(); i++)
			for (std::size_t j = 0; j < qx.size(); j++)
				if (qx[i] != qx[j] && d[i][j] < kInfinity) {
					ASSERT_LE(std::fabs(qx[i] - qx[j]), s * d[i][j] * (1 + 1e-12));
				}
	}
}

TEST(LinearQuery, GridRounding)
{
	EXPECT_EQ(to_grid_units(2.5, 1), 3);
	EXPECT_EQ(to_grid_units(-2.5, 1), -3);
	EXPECT_EQ(to_grid_units(2.4, 1), 2);
	EXPECT_EQ(to_grid_units(0.75, 0.5), 2);
	EXPECT_EQ(to_grid_units(-0.25, 0.5), -1);
	EXPECT_EQ(to_grid_units(0, 0.125), 0);
	EXPECT_EQ(to_grid_units(std::ldexp(1.0, 99), 1), static_cast<__int128>(1) << 99);
	// the inline rounding against std::round: halves, one ulp around them, negative, tiny, large
	for (double x : {0.5, 1.5, 2.5, -0.5, -1.5, 0.49999999999999994, -0.49999999999999994, 4503599627370495.5,
	                 -4503599627370495.5, 4503599627370497.0, 1e-300, -1e-300, 0.0, -0.0, 123456.5000000001,
	                 3.9999999999999995e18, -3.9999999999999995e18, 4.0e18, 7.5e18}) {
		EXPECT_EQ(to_grid_units(x, 1), static_cast<__int128>(std::round(x))) << x;
		EXPECT_EQ(to_grid_units(std::nextafter(x, 1e300), 1), static_cast<__int128>(std::round(std::nextafter(x, 1e300)))) << x;
		EXPECT_EQ(to_grid_units(std::nextafter(x, -1e300), 1), static_cast<__int128>(std::round(std::nextafter(x, -1e300)))) << x;
	}
	std::uint64_t state = 12345;
	for (int i = 0; i < 200000; ++i) {
		state = state * 6364136223846793005ULL + 1442695040888963407ULL;
		// integers of 1 to 62 bits over 2^0 .. 2^11: many exact halves, quarters, and large values
		double x = std::ldexp(static_cast<double>(state >> (2 + state % 61)), -static_cast<int>((state >> 58) % 12));
		if (state & 2)
			x = -x;
		ASSERT_EQ(to_grid_units(x, 1), static_cast<__int128>(std::round(x))) << x;
	}
	// on both sides of the int64 fast conversion (|units| < 9e18)
	EXPECT_EQ(to_grid_units(8.999999999999998e18, 1), static_cast<__int128>(8999999999999997952LL));
	EXPECT_EQ(to_grid_units(-9.0e18, 1), -static_cast<__int128>(9000000000000000000LL));
	EXPECT_EQ(to_grid_units(9.3e18, 1), static_cast<__int128>(9300000000000000000ULL));
	EXPECT_EQ(to_grid_units(-std::ldexp(1.0, 70), 0.5), -(static_cast<__int128>(1) << 71));
	EXPECT_EQ(error_kind([] { to_grid_units(std::ldexp(1.0, 100), 1); }), ErrorKind::DataException);
	EXPECT_EQ(error_kind([] { to_grid_units(kNaN, 1); }), ErrorKind::DataException);
	EXPECT_EQ(error_kind([] { to_grid_units(kInfinity, 1); }), ErrorKind::DataException);
	EXPECT_EQ(error_kind([] { to_grid_units(1, std::ldexp(1.0, -1074)); }), ErrorKind::DataException);
}

TEST(LinearQuery, PlanGridAndScale)
{
	SubUniverse count;
	count.domains = {Domain::range(0, 3, 1)};
	count.metrics = {ColumnMetric::none()};
	std::vector<double> ones(4, 1);

	// Integer weights: grid 1 while the scale stays <= 2^40, then a power of two above 1.
	LinearNoisePlan p = plan_linear_query(count, ones, 1);
	EXPECT_EQ(p.grid, 1.0);
	EXPECT_TRUE(p.integer_weights);
	std::vector<double> thousands(4, 1000);
	p = plan_linear_query(count, thousands, 1e-10);
	EXPECT_EQ(p.grid, 8.0); // 1e13 in [2^43, 2^44)
	EXPECT_EQ(p.scale, 1000 / 1e-10);
	EXPECT_GE(p.scale / p.grid, std::ldexp(1.0, 40));
	EXPECT_LT(p.scale / p.grid, std::ldexp(1.0, 41));

	// Real weights: scale/grid in [2^40, 2^41), sensitivity recomputed on the rounded weights.
	SubUniverse line;
	line.domains = {Domain::range(0, 10, 1), Domain::enumerated({"a", "b"})};
	line.metrics = {ColumnMetric::absolute(1), ColumnMetric::per_value({0.5, 3})};
	line.presence = kInfinity;
	std::mt19937 gen(5);
	std::uniform_real_distribution<double> u(-3, 3);
	for (int rep = 0; rep < 50; rep++) {
		std::vector<double> q(line.size());
		for (double &x : q)
			x = u(gen);
		const double eps = std::ldexp(1.0, static_cast<int>(gen() % 20) - 10) * 1.3;
		LinearNoisePlan plan = plan_linear_query(line, q, eps);
		EXPECT_FALSE(plan.integer_weights);
		const double t = generalized_sensitivity(line, q) / eps;
		EXPECT_GE(t / plan.grid, std::ldexp(1.0, 40));
		EXPECT_LT(t / plan.grid, std::ldexp(1.0, 41));
		EXPECT_EQ(std::ilogb(plan.grid), std::ilogb(t) - 40);
		std::vector<double> qg(q.size());
		for (std::size_t i = 0; i < q.size(); i++)
			qg[i] = static_cast<double>(to_grid_units(q[i], plan.grid)) * plan.grid;
		EXPECT_EQ(plan.sensitivity, generalized_sensitivity(line, qg));
		EXPECT_EQ(plan.scale, plan.sensitivity / eps);
		EXPECT_NEAR(plan.scale, t, t * 1e-6);
	}
}

TEST(LinearQuery, PlanErrors)
{
	SubUniverse count;
	std::vector<double> one = {1};
	for (double eps : {0.0, -1.0, kNaN, kInfinity})
		EXPECT_EQ(error_kind([&] { plan_linear_query(count, one, eps); }), ErrorKind::InvalidParameter);
	EXPECT_EQ(error_kind([&] { plan_linear_query(count, one, 1e-16); }), ErrorKind::ProgramLimit);
	EXPECT_NO_THROW(plan_linear_query(count, one, 2e-15));
	// A denormal budget makes the ratio infinite: refused, never answered with infinite noise.
	SubUniverse tiny;
	tiny.domains = {Domain::enumerated({"a", "b"})};
	tiny.metrics = {ColumnMetric::per_value({4.9e-324, 1})};
	tiny.presence = kInfinity;
	EXPECT_EQ(error_kind([&] { plan_linear_query(tiny, {0, 1}, 1); }), ErrorKind::ProgramLimit);
	std::vector<double> bad = {kNaN};
	EXPECT_EQ(error_kind([&] { plan_linear_query(count, bad, 1); }), ErrorKind::DataException);
}

TEST(LinearQuery, ExactAnswersWhenScaleIsZero)
{
	SubUniverse bounded;
	bounded.domains = {Domain::range(0.25, 3, 0.25)};
	bounded.metrics = {ColumnMetric::discrete(1)};
	bounded.presence = kInfinity;
	LinearNoisePlan p = plan_linear_query(bounded, std::vector<double>(bounded.size(), 3), 1);
	EXPECT_EQ(p.scale, 0.0);
	EXPECT_EQ(p.grid, 1.0);
	SeededRandom rng(1);
	GridSum g;
	for (int i = 0; i < 5; i++)
		g.add(3, p.grid);
	EXPECT_EQ(g.release(rng, p), 15.0);
	EXPECT_EQ(g.rows, 5);

	// Constant real weight: the grid represents it exactly.
	p = plan_linear_query(bounded, std::vector<double>(bounded.size(), 0.1), 1);
	EXPECT_EQ(p.scale, 0.0);
	GridSum tenth;
	for (int i = 0; i < 10; i++)
		tenth.add(0.1, p.grid);
	EXPECT_EQ(tenth.release(rng, p), 1.0);

	// An unprotected column under the bounded model: SUM is released exactly.
	bounded.metrics = {ColumnMetric::none()};
	std::vector<double> q = values_of_first_column(bounded);
	p = plan_linear_query(bounded, q, 1);
	EXPECT_EQ(p.scale, 0.0);
	GridSum s;
	for (double w : {0.25, 0.5, 2.75, 3.0})
		s.add(w, p.grid);
	EXPECT_EQ(s.release(rng, p), 6.5);
}

TEST(LinearQuery, RepeatedRowsEqualSingleRows)
{
	// add_repeated(w, grid, c) is c calls of add(w, grid): the one-pass final step (executor/one_pass.cpp)
	for (double grid : {1.0, 0.001, 0.25, 3.0}) {
		for (double w : {0.0, 1.0, -2.5, 0.1, 0.0005, 0.0015, 12345.678}) {
			for (std::int64_t c : {0, 1, 7, 1000}) {
				GridSum one, many;
				for (std::int64_t i = 0; i < c; ++i)
					one.add(w, grid);
				many.add_repeated(w, grid, c);
				EXPECT_TRUE(one.units == many.units) << grid << " " << w << " " << c;
				EXPECT_EQ(one.rows, many.rows);
			}
		}
	}
	GridSum big;
	EXPECT_THROW(big.add_repeated(1e25, 1.0, std::int64_t(1) << 62), CoreError);
	EXPECT_THROW(big.add_repeated(1.0, 1.0, -1), CoreError);
}

TEST(LinearQuery, HugeWeightsBesideSmallNoise)
{
	// Weights of 1e30 on an unprotected column next to a count protected at scale 1: the grid
	// is coarsened just enough that no weight overflows the grid-unit range.
	SubUniverse sub;
	sub.domains = {Domain::enumerated({"big", "small"}), Domain::enumerated({"no", "yes"})};
	sub.metrics = {ColumnMetric::none(), ColumnMetric::discrete(1)};
	sub.presence = kInfinity;
	std::vector<double> q = {1e30, 1e30, 0, 1};
	LinearNoisePlan p = plan_linear_query(sub, q, 1);
	EXPECT_GT(p.scale, 0.0);
	std::vector<double> qg(q.size());
	for (std::size_t i = 0; i < q.size(); i++)
		qg[i] = static_cast<double>(to_grid_units(q[i], p.grid)) * p.grid;
	EXPECT_EQ(p.sensitivity, generalized_sensitivity(sub, qg));
	EXPECT_LT(1e30 / p.grid, std::ldexp(1.0, 100));
}

TEST(LinearQuery, GridSumMergeAndOverflow)
{
	std::mt19937 gen(3);
	std::uniform_real_distribution<double> u(-1000, 1000);
	const double grid = std::ldexp(1.0, -30);
	std::vector<double> w(3000);
	for (double &x : w)
		x = u(gen);
	GridSum serial, a, b, c;
	for (std::size_t i = 0; i < w.size(); i++) {
		serial.add(w[i], grid);
		(i % 3 == 0 ? a : i % 3 == 1 ? b : c).add(w[i], grid);
	}
	GridSum left = a, right = b;
	left.merge(b);
	left.merge(c); // (a + b) + c
	right.merge(c);
	GridSum right_total = a;
	right_total.merge(right); // a + (b + c)
	EXPECT_TRUE(left.units == serial.units && right_total.units == serial.units);
	EXPECT_EQ(left.rows, 3000);
	EXPECT_EQ(right_total.rows, 3000);

	GridSum full;
	full.units = ~(static_cast<unsigned __int128>(1) << 127); // INT128_MAX
	EXPECT_EQ(error_kind([&] { full.add(1, 1); }), ErrorKind::DataException);
	EXPECT_EQ(full.rows, 0); // a failed add leaves the state unchanged
	GridSum one;
	one.add(1, 1);
	EXPECT_EQ(error_kind([&] { full.merge(one); }), ErrorKind::DataException);
	GridSum low;
	low.units = -static_cast<__int128>(~(static_cast<unsigned __int128>(1) << 127)) - 1; // INT128_MIN
	EXPECT_EQ(error_kind([&] { low.add(-1, 1); }), ErrorKind::DataException);
}

TEST(LinearQuery, NoisyReleaseIsOnTheGrid)
{
	SubUniverse count;
	count.domains = {Domain::range(0, 3, 1)};
	count.metrics = {ColumnMetric::none()};
	LinearNoisePlan p = plan_linear_query(count, std::vector<double>(4, 1), 1);
	GridSum g;
	for (int i = 0; i < 100; i++)
		g.add(1, p.grid);
	SeededRandom rng(2024);
	double sum = 0, abs_sum = 0;
	const int draws = 4000;
	for (int i = 0; i < draws; i++) {
		double r = g.release(rng, p);
		EXPECT_EQ(r, std::round(r)); // integer weights, grid 1: integer answers
		sum += r - 100;
		abs_sum += std::fabs(r - 100);
	}
	EXPECT_NEAR(sum / draws, 0.0, 0.1);
	EXPECT_NEAR(abs_sum / draws, 0.851, 0.08); // E|Z| of the discrete Laplace with t = 1
}
