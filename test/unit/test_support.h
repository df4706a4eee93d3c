// Brute-force references and statistical checks shared by several unit tests (header-only).
#pragma once

#include <gtest/gtest.h>

#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/quadrature/gauss.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/domain.h"
#include "core/error.h"
#include "core/metric.h"
#include "core/sensitivity.h"

namespace dxpriv {
namespace testing {

using Matrix = std::vector<std::vector<double>>;

// Width of the acceptance band of the statistical checks, in standard errors.
constexpr double kSigmas = 5.0;
// Significance level of the chi-square goodness-of-fit tests.
constexpr double kChiSquarePValue = 1e-6;

// Runs f and returns the kind of the CoreError it throws (fails the test when nothing is thrown).
template <typename F>
ErrorKind
error_kind(F f)
{
	try {
		f();
	} catch (const CoreError &e) {
		return e.kind();
	}
	ADD_FAILURE() << "no CoreError thrown";
	return ErrorKind::Internal;
}

// Like error_kind, and also checks the message/hint contract (hint set, lowercase, no final period).
template <typename F>
ErrorKind
contract_error_kind(F f)
{
	try {
		f();
	} catch (const CoreError &e) {
		EXPECT_FALSE(e.hint().empty());
		std::string msg = e.what();
		EXPECT_FALSE(msg.empty());
		EXPECT_NE(msg.back(), '.');
		EXPECT_FALSE(std::isupper(static_cast<unsigned char>(msg[0])));
		return e.kind();
	}
	ADD_FAILURE() << "no CoreError thrown";
	return ErrorKind::Internal;
}

// Runs fn and checks that it throws CoreError of the given kind with a lowercase message and no
// final period.
template <typename Fn>
void expect_core_error(ErrorKind kind, Fn &&fn)
{
	try {
		fn();
		ADD_FAILURE() << "expected CoreError, nothing was thrown";
	} catch (const CoreError &e) {
		EXPECT_EQ(static_cast<int>(kind), static_cast<int>(e.kind())) << e.what();
		const std::string message = e.what();
		ASSERT_FALSE(message.empty());
		EXPECT_FALSE(message[0] >= 'A' && message[0] <= 'Z') << message;
		EXPECT_NE('.', message.back()) << message;
	}
}

// Composite 20-point Gauss–Legendre integral of fn over [a, b] split at the cuts, `panels` per piece.
template <typename Fn>
double integrate_gauss20(Fn fn, double a, double b, std::vector<double> cuts, int panels)
{
	cuts.push_back(a);
	cuts.push_back(b);
	std::sort(cuts.begin(), cuts.end());
	double total = 0;
	for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
		const double lo = std::max(a, cuts[i]), hi = std::min(b, cuts[i + 1]);
		if (!(hi > lo))
			continue;
		const double width = (hi - lo) / panels;
		for (int j = 0; j < panels; ++j) {
			const double p_lo = lo + j * width;
			const double p_hi = j + 1 == panels ? hi : p_lo + width;
			total += boost::math::quadrature::gauss<double, 20>::integrate(fn, p_lo, p_hi);
		}
	}
	return total;
}

// Rounds to two decimals, as the paper prints.
inline long two_decimals(double x)
{
	return std::lround(x * 100.0);
}

// Floyd-Warshall closure of a square matrix.
inline Matrix
closure(Matrix d)
{
	const std::size_t k = d.size();
	for (std::size_t m = 0; m < k; m++)
		for (std::size_t i = 0; i < k; i++)
			for (std::size_t j = 0; j < k; j++)
				d[i][j] = std::min(d[i][j], d[i][m] + d[m][j]);
	return d;
}

// Reference record metric over all pairs plus the ⊥ node (index n): one-column distances summed,
// presence edges, closed with Floyd-Warshall (the definition, independent of the edge shortcuts).
inline Matrix
record_metric(const SubUniverse &sub)
{
	const std::size_t n = sub.size();
	Matrix d(n + 1, std::vector<double>(n + 1, 0));
	for (std::size_t u = 0; u < n; u++) {
		auto iu = sub.unflatten(u);
		for (std::size_t v = 0; v < n; v++) {
			auto iv = sub.unflatten(v);
			double s = 0;
			for (std::size_t c = 0; c < iu.size(); c++)
				s += sub.metrics[c].distance(sub.domains[c], iu[c], iv[c]);
			d[u][v] = s;
		}
		d[u][n] = d[n][u] = sub.presence;
	}
	return closure(d);
}

// Reference: max over all pairs of |q_i - q_j| / d(i, j) computed from distance().
inline double
brute_line(const ColumnMetric &m, const Domain &dom, const double *q, std::size_t stride)
{
	double s = 0;
	for (std::size_t i = 0; i < dom.size(); i++)
		for (std::size_t j = i + 1; j < dom.size(); j++) {
			double diff = std::fabs(q[i * stride] - q[j * stride]);
			if (diff > 0)
				s = std::max(s, diff / m.distance(dom, i, j));
		}
	return s;
}

// A few sub-universes covering every existing metric kind, finite and infinite presence.
inline std::vector<SubUniverse>
sample_sub_universes()
{
	std::vector<SubUniverse> subs;
	{
		SubUniverse s;
		s.domains = {Domain::enumerated({"a", "b", "c"}), Domain::range(0, 4, 1)};
		s.metrics = {ColumnMetric::discrete(0.7), ColumnMetric::absolute(2)};
		s.presence = 1.5;
		subs.push_back(s);
	}
	{
		SubUniverse s;
		s.domains = {Domain::enumerated({"x", "y", "z", "w"}), Domain::range(0, 1, 0.5)};
		s.metrics = {ColumnMetric::per_value({0.5, 2, kInfinity, 1}), ColumnMetric::none()};
		s.presence = kInfinity;
		subs.push_back(s);
	}
	{
		SubUniverse s;
		s.domains = {Domain::range(-2, 3, 0.5)};
		s.metrics = {ColumnMetric::absolute(0.25)};
		s.presence = 4;
		subs.push_back(s);
	}
	{
		SubUniverse s;
		s.domains = {Domain::enumerated({"p", "q"}), Domain::enumerated({"r", "s", "t"}), Domain::range(1, 3, 1)};
		s.metrics = {ColumnMetric::discrete(2), ColumnMetric::per_value({1, 3, 0.5}), ColumnMetric::absolute(1)};
		s.presence = 0.8;
		subs.push_back(s);
	}
	return subs;
}


// Calls fn(x', d) for every neighbour x' of x: one row moved u -> v (d(u, v)), added at u or
// removed from u (d(u, ⊥)); distances from the closed record metric (⊥ is index N).
template <class Fn>
inline
void
for_each_neighbour(const std::vector<std::int64_t> &x, const Matrix &d, Fn fn)
{
	const std::size_t n = x.size();
	for (std::size_t u = 0; u < n; ++u) {
		std::vector<std::int64_t> y = x;
		y[u] += 1;
		fn(y, d[u][n]);
		if (x[u] == 0)
			continue;
		y = x;
		y[u] -= 1;
		fn(y, d[u][n]);
		for (std::size_t v = 0; v < n; ++v) {
			if (v == u)
				continue;
			y = x;
			y[u] -= 1;
			y[v] += 1;
			fn(y, d[u][v]);
		}
	}
}

// Checks that a count of successes in n trials is within 5 sigma of the binomial mean n*p.
inline void expect_binomial(std::uint64_t count, std::uint64_t n, double p, const std::string &what)
{
	const double mean = static_cast<double>(n) * p;
	const double sd = std::sqrt(static_cast<double>(n) * p * (1.0 - p));
	EXPECT_LE(std::fabs(static_cast<double>(count) - mean), kSigmas * sd)
	    << what << ": count " << count << " of " << n << ", expected p " << p;
}

// Checks an estimate against its exact expectation with the given standard error.
inline void expect_near_sigma(double estimate, double expected, double standard_error, const std::string &what)
{
	EXPECT_LE(std::fabs(estimate - expected), kSigmas * standard_error)
	    << what << ": estimate " << estimate << ", expected " << expected << ", standard error " << standard_error;
}

// The chi-square critical value at p = kChiSquarePValue for df degrees of freedom.
inline double chi_square_threshold(std::size_t df)
{
	const boost::math::chi_squared_distribution<double> law(static_cast<double>(df));
	return boost::math::quantile(boost::math::complement(law, kChiSquarePValue));
}

// Normalises weights w[z + bound] (z in [-bound, bound]) by total in long double: appends P(Z = z) to
// pmf and stores the exact moments E[Z^2] and E[Z^4].
inline void normalise_pmf(const std::vector<long double> &w, long double total, std::int64_t bound,
                          std::vector<double> &pmf, double &second, double &fourth)
{
	long double m2 = 0, m4 = 0;
	for (std::int64_t z = -bound; z <= bound; ++z) {
		const long double p = w[static_cast<std::size_t>(z + bound)] / total;
		const long double x = static_cast<long double>(z);
		pmf.push_back(static_cast<double>(p));
		m2 += p * x * x;
		m4 += p * x * x * x * x;
	}
	second = static_cast<double>(m2);
	fourth = static_cast<double>(m4);
}

// Pearson chi-square of per-value counts against the aligned exact pmf, single values merged left to
// right until each bin expects min_expected samples (a short remainder joins the last bin).
inline void expect_pooled_chi_square(const std::vector<double> &pmf, const std::vector<double> &counts, double n,
                                     double min_expected, std::size_t min_bins)
{
	std::vector<double> probs, observed;
	double open_p = 0, open_o = 0;
	for (std::size_t i = 0; i < pmf.size(); ++i) {
		open_p += pmf[i];
		open_o += counts[i];
		if (open_p * n >= min_expected) {
			probs.push_back(open_p);
			observed.push_back(open_o);
			open_p = open_o = 0;
		}
	}
	probs.back() += open_p;
	observed.back() += open_o;
	ASSERT_GE(probs.size(), min_bins);
	double stat = 0;
	for (std::size_t i = 0; i < probs.size(); ++i)
		stat += (observed[i] - n * probs[i]) * (observed[i] - n * probs[i]) / (n * probs[i]);
	EXPECT_LT(stat, chi_square_threshold(probs.size() - 1)) << probs.size() - 1 << " df";
}

// Euclidean metric of n random points of the unit square, times `scale`.
inline Matrix
random_plane_metric(std::mt19937_64 &rng, std::size_t n, double scale)
{
	std::uniform_real_distribution<double> u(0, 1);
	std::vector<std::pair<double, double>> pts(n);
	for (auto &p : pts)
		p = {u(rng), u(rng)};
	Matrix d(n, std::vector<double>(n));
	for (std::size_t i = 0; i < n; i++)
		for (std::size_t j = 0; j < n; j++)
			d[i][j] = scale * std::hypot(pts[i].first - pts[j].first, pts[i].second - pts[j].second);
	return d;
}

} // namespace testing
} // namespace dxpriv
