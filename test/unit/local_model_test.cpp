// Unit tests of the local model (MECHANISMS.md §4): the exact test vectors of §4.8, channel
// properties (stochastic rows, d-privacy and LDP ratio bounds), the structured channel products,
// IBU (exact recovery, fixed point, monotone likelihood), Kantorovich, calibration, validation.
#include "core/local_model.h"

#include <gtest/gtest.h>

#include <Eigen/Dense>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/error.h"
#include "core/random.h"

namespace dxpriv {
namespace {

using Matrix = std::vector<std::vector<double>>;

const double kLn2 = std::log(2.0);

Eigen::MatrixXd to_eigen(const Matrix &m)
{
	Eigen::MatrixXd out(m.size(), m.size());
	for (std::size_t i = 0; i < m.size(); ++i)
		for (std::size_t j = 0; j < m.size(); ++j)
			out(i, j) = m[i][j];
	return out;
}

// q = pi C with the dense matrix.
std::vector<double> expected_reports(const std::vector<double> &pi, const LocalChannel &c)
{
	const Matrix m = c.dense();
	std::vector<double> q(pi.size(), 0.0);
	for (std::size_t x = 0; x < pi.size(); ++x)
		for (std::size_t y = 0; y < pi.size(); ++y)
			q[y] += pi[x] * m[x][y];
	return q;
}

// Binomial(n, p) probabilities on {0..n}.
std::vector<double> binomial(int n, double p)
{
	std::vector<double> out(n + 1);
	for (int i = 0; i <= n; ++i)
		out[i] = std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) + i * std::log(p) +
		                  (n - i) * std::log1p(-p));
	return out;
}

double max_abs_diff(const std::vector<double> &a, const std::vector<double> &b)
{
	double d = 0.0;
	for (std::size_t i = 0; i < a.size(); ++i)
		d = std::max(d, std::fabs(a[i] - b[i]));
	return d;
}

template <class F>
void expect_core_error(F &&f, ErrorKind kind)
{
	try {
		f();
		ADD_FAILURE() << "expected a CoreError";
	} catch (const CoreError &e) {
		EXPECT_EQ(e.kind(), kind) << e.what();
		const std::string msg = e.what();
		ASSERT_FALSE(msg.empty());
		EXPECT_TRUE(std::islower(static_cast<unsigned char>(msg[0]))) << msg;
		EXPECT_NE(msg.back(), '.') << msg;
	}
}

// ---- §4.8 test vectors ----------------------------------------------------------------------

TEST(LocalModelVectors, TruncatedGeometricN3Ln2)
{
	const LocalChannel tg = LocalChannel::truncated_geometric(4, kLn2);
	const double expected[4][4] = {{8, 2, 1, 1}, {4, 4, 2, 2}, {2, 2, 4, 4}, {1, 1, 2, 8}};
	const Matrix m = tg.dense();
	for (int x = 0; x < 4; ++x)
		for (int y = 0; y < 4; ++y)
			EXPECT_NEAR(12.0 * m[x][y], expected[x][y], 1e-13) << x << "," << y;
}

TEST(LocalModelVectors, TruncatedGeometricInverseN3Ln2)
{
	const double expected[4][4] = {{2, -1, 0, 0}, {-2, 5, -2, 0}, {0, -2, 5, -2}, {0, 0, -1, 2}};
	const Matrix closed = truncated_geometric_inverse(4, kLn2);
	const Eigen::MatrixXd numeric = to_eigen(LocalChannel::truncated_geometric(4, kLn2).dense()).inverse();
	for (int x = 0; x < 4; ++x)
		for (int y = 0; y < 4; ++y) {
			EXPECT_NEAR(closed[x][y], expected[x][y], 1e-13) << x << "," << y;
			EXPECT_NEAR(numeric(x, y), expected[x][y], 1e-12) << x << "," << y;
		}
}

TEST(LocalModelVectors, DPrivacyBoundIsTight)
{
	const Matrix m = LocalChannel::truncated_geometric(4, kLn2).dense();
	double worst = 0.0;
	for (int x = 0; x < 4; ++x)
		for (int x2 = 0; x2 < 4; ++x2)
			for (int y = 0; y < 4; ++y)
				worst = std::max(worst, m[x][y] / (m[x2][y] * std::exp(kLn2 * std::abs(x - x2))));
	EXPECT_NEAR(worst, 1.0, 1e-13);
}

TEST(LocalModelVectors, KrrK4Ln2)
{
	const Matrix m = LocalChannel::krr(4, kLn2).dense();
	for (int x = 0; x < 4; ++x)
		for (int y = 0; y < 4; ++y)
			EXPECT_NEAR(m[x][y], x == y ? 0.4 : 0.2, 1e-15) << x << "," << y;
}

TEST(LocalModelVectors, IbuRecoversPriorFromExactReports)
{
	const std::vector<double> pi = {0.1, 0.2, 0.3, 0.4};
	const LocalChannel tg = LocalChannel::truncated_geometric(4, kLn2);
	IbuOptions options;
	options.iterations = 2000;
	const IbuResult r = iterative_bayesian_update(expected_reports(pi, tg), tg, options);
	for (int x = 0; x < 4; ++x)
		EXPECT_NEAR(r.theta[x], pi[x], 1e-9) << x;
}

TEST(LocalModelVectors, Kantorovich)
{
	EXPECT_DOUBLE_EQ(kantorovich({1, 0, 0, 0}, {0, 0, 0, 1}), 3.0);
	EXPECT_DOUBLE_EQ(kantorovich({.5, .5, 0, 0}, {0, 0, .5, .5}), 2.0);
}

// ---- Channel properties ---------------------------------------------------------------------

class ChannelGrid : public ::testing::TestWithParam<std::tuple<int, double>> {};

TEST_P(ChannelGrid, RowsAreDistributions)
{
	const auto [k, eps] = GetParam();
	for (const LocalChannel &c : {LocalChannel::truncated_geometric(k, eps), LocalChannel::krr(k, eps)}) {
		const Matrix m = c.dense();
		for (int x = 0; x < k; ++x) {
			double total = 0.0;
			for (int y = 0; y < k; ++y) {
				EXPECT_GE(m[x][y], 0.0);
				total += m[x][y];
			}
			EXPECT_NEAR(total, 1.0, 1e-13) << local_mechanism_name(c.mechanism()) << " row " << x;
		}
	}
}

// The d_X guarantee of TG: C[x][y] <= exp(eps |x - x'|) C[x'][y] for every y, x, x' (§4.2, Prop. 1).
TEST_P(ChannelGrid, GeometricIsDPrivate)
{
	const auto [k, eps] = GetParam();
	const Matrix m = LocalChannel::truncated_geometric(k, eps).dense();
	double worst = 0.0;
	for (int x = 0; x < k; ++x)
		for (int x2 = 0; x2 < k; ++x2)
			for (int y = 0; y < k; ++y) {
				const double ratio = m[x][y] / (m[x2][y] * std::exp(eps * std::abs(x - x2)));
				EXPECT_LE(ratio, 1.0 + 1e-12) << x << "," << x2 << "," << y;
				worst = std::max(worst, ratio);
			}
	EXPECT_NEAR(worst, 1.0, 1e-12); // the bound is attained (adjacent values)
}

// k-RR is epsilon-LDP, with the bound attained for every pair x != x' (§4.3).
TEST_P(ChannelGrid, KrrIsLocallyPrivate)
{
	const auto [k, eps] = GetParam();
	const Matrix m = LocalChannel::krr(k, eps).dense();
	for (int x = 0; x < k; ++x)
		for (int x2 = 0; x2 < k; ++x2) {
			double worst = 0.0;
			for (int y = 0; y < k; ++y)
				worst = std::max(worst, m[x][y] / m[x2][y]);
			EXPECT_LE(worst, std::exp(eps) * (1.0 + 1e-12));
			if (x != x2) {
				EXPECT_NEAR(worst / std::exp(eps), 1.0, 1e-12);
			}
		}
}

// The O(k) products agree with the dense matrix.
TEST_P(ChannelGrid, StructuredProductsMatchDense)
{
	const auto [k, eps] = GetParam();
	SeededRandom rng(7);
	std::vector<double> v(k);
	for (double &x : v)
		x = static_cast<double>(rng.uniform_below(std::uint64_t{1000})) / 1000.0;
	for (const LocalChannel &c : {LocalChannel::truncated_geometric(k, eps), LocalChannel::krr(k, eps)}) {
		const Matrix m = c.dense();
		std::vector<double> fwd, back;
		c.push_forward(v, fwd);
		c.pull_back(v, back);
		for (int i = 0; i < k; ++i) {
			double f = 0.0, b = 0.0;
			for (int j = 0; j < k; ++j) {
				f += v[j] * m[j][i];
				b += m[i][j] * v[j];
			}
			EXPECT_NEAR(fwd[i], f, 1e-13) << local_mechanism_name(c.mechanism()) << " push " << i;
			EXPECT_NEAR(back[i], b, 1e-13) << local_mechanism_name(c.mechanism()) << " pull " << i;
		}
	}
}

// The tridiagonal closed form is the inverse for every size.
TEST_P(ChannelGrid, GeometricInverseClosedForm)
{
	const auto [k, eps] = GetParam();
	const Eigen::MatrixXd product =
	    to_eigen(LocalChannel::truncated_geometric(k, eps).dense()) * to_eigen(truncated_geometric_inverse(k, eps));
	const double scale = std::pow(1.0 / -std::expm1(-eps), 2);
	EXPECT_LE((product - Eigen::MatrixXd::Identity(k, k)).cwiseAbs().maxCoeff(), 1e-12 * scale);
}

INSTANTIATE_TEST_SUITE_P(Sizes, ChannelGrid,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4, 7, 21, 50),
                                            ::testing::Values(0.05, 0.5, std::log(2.0), 1.0, 3.0, 8.0)));

TEST(LocalChannel, ExtremeEpsilons)
{
	// Very large epsilon: both channels are the identity (no overflow of e^eps).
	for (double eps : {800.0, std::numeric_limits<double>::infinity()}) {
		for (const LocalChannel &c : {LocalChannel::truncated_geometric(5, eps), LocalChannel::krr(5, eps)}) {
			const Matrix m = c.dense();
			for (int x = 0; x < 5; ++x)
				for (int y = 0; y < 5; ++y)
					EXPECT_EQ(m[x][y], x == y ? 1.0 : 0.0);
		}
	}
	// Tiny epsilon: nearly uniform for k-RR, rows still sum to 1 for TG.
	const Matrix krr = LocalChannel::krr(5, 1e-12).dense();
	EXPECT_NEAR(krr[0][0], 0.2, 1e-12);
	const Matrix tg = LocalChannel::truncated_geometric(5, 1e-12).dense();
	double total = 0.0;
	for (double v : tg[2])
		total += v;
	EXPECT_NEAR(total, 1.0, 1e-12);
}

// ---- IBU ------------------------------------------------------------------------------------

TEST(Ibu, RecoversBinomialThroughGeometric)
{
	const std::vector<double> pi = binomial(20, 0.3);
	const LocalChannel tg = LocalChannel::truncated_geometric(21, 0.5);
	IbuOptions options;
	options.iterations = 200000; // EM is slow on the near-zero binomial tails (3e-11 at 20)
	const IbuResult r = iterative_bayesian_update(expected_reports(pi, tg), tg, options);
	EXPECT_LE(max_abs_diff(r.theta, pi), 1e-7);
	EXPECT_LE(kantorovich(r.theta, pi), 1e-5);
}

TEST(Ibu, RecoversFourPointThroughKrr)
{
	std::vector<double> pi(10, 0.0);
	pi[1] = 0.4;
	pi[4] = 0.3;
	pi[6] = 0.2;
	pi[9] = 0.1;
	const LocalChannel krr = LocalChannel::krr(10, 2.0);
	IbuOptions options;
	options.iterations = 200000;
	options.tolerance = 1e-15;
	const IbuResult r = iterative_bayesian_update(expected_reports(pi, krr), krr, options);
	EXPECT_LE(max_abs_diff(r.theta, pi), 1e-4);
	EXPECT_LE(kantorovich(r.theta, pi), 1e-3);
}

TEST(Ibu, TrueDistributionIsAFixedPoint)
{
	const std::vector<double> pi = {0.05, 0.15, 0.4, 0.25, 0.1, 0.05};
	for (const LocalChannel &c : {LocalChannel::truncated_geometric(6, 0.7), LocalChannel::krr(6, 0.7)}) {
		IbuOptions options;
		options.iterations = 10;
		options.initial = pi;
		const IbuResult r = iterative_bayesian_update(expected_reports(pi, c), c, options);
		EXPECT_LE(max_abs_diff(r.theta, pi), 1e-14) << local_mechanism_name(c.mechanism());
	}
}

// EM property: the log-likelihood never decreases along the iterations.
TEST(Ibu, LikelihoodIsMonotone)
{
	const std::vector<std::uint64_t> counts = {3, 10, 40, 25, 0, 7, 15};
	for (const LocalChannel &c : {LocalChannel::truncated_geometric(7, 0.4), LocalChannel::krr(7, 1.0)}) {
		double previous = -std::numeric_limits<double>::infinity();
		for (int t = 1; t <= 60; ++t) {
			IbuOptions options;
			options.iterations = t;
			const IbuResult r = iterative_bayesian_update(counts, c, options);
			EXPECT_GE(r.log_likelihood, previous - 1e-13) << t;
			previous = r.log_likelihood;
			double total = 0.0;
			for (double v : r.theta) {
				EXPECT_GE(v, 0.0);
				total += v;
			}
			EXPECT_NEAR(total, 1.0, 1e-12);
		}
	}
}

// Proposition 3: when q C^-1 is a distribution, it is the limit.
TEST(Ibu, LimitIsQTimesInverseWhenNonNegative)
{
	const std::vector<std::uint64_t> counts = {20, 30, 30, 20};
	const LocalChannel tg = LocalChannel::truncated_geometric(4, 1.5);
	const Matrix inv = truncated_geometric_inverse(4, 1.5);
	std::vector<double> direct(4, 0.0);
	for (int y = 0; y < 4; ++y)
		for (int x = 0; x < 4; ++x)
			direct[x] += counts[y] / 100.0 * inv[y][x];
	for (double v : direct)
		ASSERT_GE(v, 0.0);
	IbuOptions options;
	options.iterations = 5000;
	const IbuResult r = iterative_bayesian_update(counts, tg, options);
	EXPECT_LE(max_abs_diff(r.theta, direct), 1e-9);
}

TEST(Ibu, ToleranceStopsEarlyAndCountsAreScaleFree)
{
	const std::vector<std::uint64_t> counts = {5, 9, 30, 9, 5};
	const LocalChannel tg = LocalChannel::truncated_geometric(5, 1.0);
	IbuOptions options;
	options.iterations = 100000;
	options.tolerance = 1e-10;
	const IbuResult r = iterative_bayesian_update(counts, tg, options);
	EXPECT_TRUE(r.converged);
	EXPECT_LT(r.iterations, 100000);
	// The same proportions in larger counts give the same estimate.
	const IbuResult r10 = iterative_bayesian_update(std::vector<std::uint64_t>{50, 90, 300, 90, 50}, tg, options);
	EXPECT_LE(max_abs_diff(r.theta, r10.theta), 1e-14);
	// Progress callback runs every progress_every iterations.
	int calls = 0;
	IbuOptions counted;
	counted.iterations = 100;
	counted.progress_every = 10;
	counted.progress = [&] { ++calls; };
	iterative_bayesian_update(counts, tg, counted);
	EXPECT_EQ(calls, 10);
}

TEST(Ibu, RejectsBadInput)
{
	const LocalChannel tg = LocalChannel::truncated_geometric(3, 1.0);
	expect_core_error([&] { iterative_bayesian_update(std::vector<std::uint64_t>{0, 0, 0}, tg); },
	                  ErrorKind::InvalidParameter);
	expect_core_error([&] { iterative_bayesian_update(std::vector<std::uint64_t>{1, 2}, tg); },
	                  ErrorKind::InvalidParameter);
	IbuOptions zero;
	zero.iterations = 0;
	expect_core_error([&] { iterative_bayesian_update(std::vector<std::uint64_t>{1, 2, 3}, tg, zero); },
	                  ErrorKind::InvalidParameter);
	expect_core_error([&] { iterative_bayesian_update(std::vector<double>{0.5, 0.6, 0.1}, tg); },
	                  ErrorKind::InvalidParameter);
	const LocalChannel big = LocalChannel::krr(kMaxIbuDomain + 1, 1.0);
	expect_core_error(
	    [&] { iterative_bayesian_update(std::vector<std::uint64_t>(kMaxIbuDomain + 1, 1), big); },
	    ErrorKind::ProgramLimit);
	// A throwing progress callback propagates (cancellation).
	IbuOptions cancel;
	cancel.progress_every = 1;
	cancel.progress = [] { throw CoreError(ErrorKind::Internal, "cancelled"); };
	expect_core_error([&] { iterative_bayesian_update(std::vector<std::uint64_t>{1, 2, 3}, tg, cancel); },
	                  ErrorKind::Internal);
}

// ---- Kantorovich ----------------------------------------------------------------------------

TEST(Kantorovich, Properties)
{
	const std::vector<double> p = {0.2, 0.3, 0.5}, q = {0.5, 0.5, 0.0};
	EXPECT_DOUBLE_EQ(kantorovich(p, p), 0.0);
	EXPECT_DOUBLE_EQ(kantorovich(p, q), kantorovich(q, p));
	// Hand computation: CDFs (0.2, 0.5) vs (0.5, 1.0): |0.3| + |0.5| = 0.8; spacing 2 doubles it.
	EXPECT_NEAR(kantorovich(p, q), 0.8, 1e-15);
	EXPECT_NEAR(kantorovich(p, q, 2.0), 1.6, 1e-15);
	EXPECT_DOUBLE_EQ(kantorovich({1.0}, {1.0}), 0.0);
	// Triangle inequality on a third point.
	const std::vector<double> r = {0.0, 0.1, 0.9};
	EXPECT_LE(kantorovich(p, r), kantorovich(p, q) + kantorovich(q, r) + 1e-15);
}

TEST(Kantorovich, RejectsBadInput)
{
	expect_core_error([] { kantorovich({0.5, 0.5}, {1.0}); }, ErrorKind::InvalidParameter);
	expect_core_error([] { kantorovich({}, {}); }, ErrorKind::InvalidParameter);
	expect_core_error([] { kantorovich({1.5, -0.5}, {0.5, 0.5}); }, ErrorKind::InvalidParameter);
	expect_core_error([] { kantorovich({0.5, 0.6}, {0.5, 0.5}); }, ErrorKind::InvalidParameter);
	expect_core_error([] { kantorovich({std::nan(""), 1.0}, {0.5, 0.5}); }, ErrorKind::InvalidParameter);
	expect_core_error([] { kantorovich({1.0}, {1.0}, 0.0); }, ErrorKind::InvalidParameter);
}

// ---- Calibration (§4.6) ---------------------------------------------------------------------

TEST(Calibration, GeometricWithinRadiusMatchesKrr)
{
	const double eps = 1.0;
	const int r = 4;
	const double geo = geometric_epsilon_for_radius(eps, r);
	EXPECT_DOUBLE_EQ(geo, 0.25);
	const Matrix m = LocalChannel::truncated_geometric(12, geo).dense();
	double beyond = 0.0;
	for (int x = 0; x < 12; ++x)
		for (int x2 = 0; x2 < 12; ++x2)
			for (int y = 0; y < 12; ++y) {
				const double ratio = m[x][y] / m[x2][y];
				if (std::abs(x - x2) <= r)
					EXPECT_LE(ratio, std::exp(eps) * (1.0 + 1e-12));
				else if (std::abs(x - x2) == r + 1)
					beyond = std::max(beyond, ratio);
			}
	EXPECT_GT(beyond, std::exp(eps)); // the radius is exactly r
	expect_core_error([] { geometric_epsilon_for_radius(1.0, 0.0); }, ErrorKind::InvalidParameter);
	expect_core_error([] { geometric_epsilon_for_radius(-1.0, 2.0); }, ErrorKind::InvalidParameter);
}

// ---- Samplers: parameters, ranges, validation -----------------------------------------------

TEST(LocalSamplers, SamplingEpsilonsRoundDown)
{
	for (double eps : {1e-6, 0.1, kLn2, 1.0, 3.7, 20.0, 63.9}) {
		const double g = geometric_sampling_epsilon(eps);
		EXPECT_LE(g, eps);
		EXPECT_GT(g, eps - std::ldexp(1.0, -20));
		EXPECT_EQ(std::ldexp(g, 20), std::floor(std::ldexp(g, 20))); // a multiple of 2^-20
		const double k = krr_sampling_epsilon(eps);
		EXPECT_LE(k, eps);
		EXPECT_GT(k, 0.0);
		EXPECT_GT(k, eps - std::ldexp(1.0, -19));
	}
	EXPECT_EQ(geometric_sampling_epsilon(1000.0), 64.0);
	EXPECT_LE(krr_sampling_epsilon(1000.0), 64.0);
	EXPECT_GT(krr_sampling_epsilon(1000.0), 63.99);
	EXPECT_EQ(sampling_epsilon(LocalMechanism::TruncatedGeometric, 0.5), 0.5);
}

TEST(LocalSamplers, OutputsStayInDomain)
{
	SeededRandom rng(11);
	for (int i = 0; i < 2000; ++i) {
		const std::int64_t v = static_cast<std::int64_t>(rng.uniform_below(std::uint64_t{7})) - 3;
		const std::int64_t g = geometric_randomize(rng, v, -3, 3, 0.3);
		EXPECT_GE(g, -3);
		EXPECT_LE(g, 3);
		const std::int64_t k = krr_randomize(rng, v, -3, 3, 0.3);
		EXPECT_GE(k, -3);
		EXPECT_LE(k, 3);
	}
	// Extreme int64 bounds: no overflow in the clamping.
	const std::int64_t lo = std::numeric_limits<std::int64_t>::max() - 4;
	const std::int64_t hi = std::numeric_limits<std::int64_t>::max();
	for (int i = 0; i < 200; ++i) {
		EXPECT_GE(geometric_randomize(rng, hi, lo, hi, 0.01), lo);
		EXPECT_GE(krr_randomize(rng, lo, lo, hi, 0.01), lo);
	}
	// One value: always itself. Huge epsilon: (practically) always the true value.
	EXPECT_EQ(geometric_randomize(rng, 5, 5, 5, 1.0), 5);
	EXPECT_EQ(krr_randomize(rng, 5, 5, 5, 1.0), 5);
	for (int i = 0; i < 100; ++i) {
		EXPECT_EQ(geometric_randomize(rng, 2, 0, 9, 1e9), 2);
		EXPECT_EQ(krr_randomize(rng, 2, 0, 9, 1e9), 2);
	}
	EXPECT_EQ(local_randomize(LocalMechanism::KRandomizedResponse, rng, 4, 4, 4, 1.0), 4);
}

TEST(LocalSamplers, SeededStreamsAreReproducible)
{
	SeededRandom a(42), b(42);
	for (int i = 0; i < 100; ++i) {
		EXPECT_EQ(geometric_randomize(a, 10, 0, 20, 0.5), geometric_randomize(b, 10, 0, 20, 0.5));
		EXPECT_EQ(krr_randomize(a, 10, 0, 20, 0.5), krr_randomize(b, 10, 0, 20, 0.5));
	}
}

TEST(LocalSamplers, RejectBadInput)
{
	SeededRandom rng(1);
	const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
	for (auto randomize : {&geometric_randomize, &krr_randomize}) {
		expect_core_error([&] { randomize(rng, 0, 1, 0, 1.0); }, ErrorKind::InvalidParameter);  // lo > hi
		expect_core_error([&] { randomize(rng, 5, 0, 4, 1.0); }, ErrorKind::InvalidParameter);  // above
		expect_core_error([&] { randomize(rng, -1, 0, 4, 1.0); }, ErrorKind::InvalidParameter); // below
		expect_core_error([&] { randomize(rng, 0, 0, 4, 0.0); }, ErrorKind::InvalidParameter);
		expect_core_error([&] { randomize(rng, 0, 0, 4, -1.0); }, ErrorKind::InvalidParameter);
		expect_core_error([&] { randomize(rng, 0, 0, 4, nan); }, ErrorKind::InvalidParameter);
		expect_core_error([&] { randomize(rng, 0, 0, 4, inf); }, ErrorKind::InvalidParameter);
		expect_core_error([&] { randomize(rng, 0, 0, 4, 1e-7); }, ErrorKind::InvalidParameter);
		expect_core_error([&] { randomize(rng, 0, 0, 1000000, 1.0); }, ErrorKind::ProgramLimit);
		expect_core_error(
		    [&] {
			    randomize(rng, 0, std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max(),
			              1.0);
		    },
		    ErrorKind::ProgramLimit);
	}
	EXPECT_NO_THROW(krr_randomize(rng, 0, 0, 999999, 1.0)); // exactly 10^6 values
	expect_core_error([] { parse_local_mechanism("laplace"); }, ErrorKind::InvalidParameter);
	EXPECT_EQ(parse_local_mechanism("geometric"), LocalMechanism::TruncatedGeometric);
	EXPECT_EQ(parse_local_mechanism("krr"), LocalMechanism::KRandomizedResponse);
	expect_core_error([] { LocalChannel::krr(0, 1.0); }, ErrorKind::InvalidParameter);
	expect_core_error([] { LocalChannel::truncated_geometric(3, 0.0); }, ErrorKind::InvalidParameter);
	expect_core_error([] { LocalChannel::truncated_geometric(3, std::nan("")); }, ErrorKind::InvalidParameter);
}

} // namespace
} // namespace dxpriv
