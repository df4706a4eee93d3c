// The attribute-privacy seed's headline comparison (MECHANISMS.md §6; Zhang, Ohrimenko, Cummings,
// Examples 2–3 and Section 4.3): how much noise attribute privacy needs with APGM, with the
// Wasserstein mechanism and with group differential privacy (every record of the protected
// attribute may change), on the same queries and models. Every number comes from src/core.
//
// Part A, Example 2 (4 records, binary X_1 released as F = sum X_1, binary X_2 protected through
// g = sum X_2, P(X_1 = 1 | X_2 = 1) = p1, P(X_1 = 1 | X_2 = 0) = p2): Theta = [1/2 - r, 1/2 + r]^2,
// W = sup over Theta (grid of step 0.01) and all secret pairs of W_inf; group DP needs
// sensitivity 4. The seed states W = 1, 2, 4 at r = 0.1, 0.2, 0.5 and 4 for group DP.
//
// Part B, Section 4.3 (records N(mu, V), V = [[1, rho], [rho, 1]], F = mean of column 2 over n = 100
// records, secret = mean of column 1 within a set of diameter d = 1, epsilon = 0.5, delta = 1e-5):
// APGM (classical calibration as in the seed, and the analytic one), the Wasserstein mechanism
// (F | secret is N(mu_a, Var) with a common variance, so W_inf = |mu_a - mu_b| = rho d) and group DP
// on values clamped to mu +- 3 (all n records change: sensitivity 6 for the mean). Standard
// deviations are exact; an empirical RMSE from 20000 draws of each release (the exact samplers)
// is written beside them.
//
// Writes attribute_example2.csv and attribute_gaussian.csv into --out-dir (default
// test/bench/results). Target dxpriv_attribute_experiments; plot with plot_attribute.py.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/attribute_privacy.h"
#include "core/random.h"
#include "core/wasserstein.h"

using namespace dxpriv;

namespace {

IntegerPmf example2(int a, double p1, double p2)
{
	return convolve(binomial_pmf(a, p1), binomial_pmf(4 - a, p2));
}

double example2_w(double r)
{
	std::vector<std::vector<IntegerPmf>> conditionals;
	const int steps = static_cast<int>(std::lround(2 * r / 0.01));
	for (int i = 0; i <= steps; ++i)
		for (int j = 0; j <= steps; ++j) {
			std::vector<IntegerPmf> model;
			for (int a = 0; a <= 4; ++a)
				model.push_back(example2(a, 0.5 - r + 0.01 * i, 0.5 - r + 0.01 * j));
			conditionals.push_back(model);
		}
	return wasserstein_sensitivity(conditionals);
}

template <class Draw>
double rmse(int n, Draw draw)
{
	double s = 0;
	for (int i = 0; i < n; ++i) {
		const double e = draw();
		s += e * e;
	}
	return std::sqrt(s / n);
}

} // namespace

int main(int argc, char **argv)
{
	std::string out = "test/bench/results";
	for (int i = 1; i + 1 < argc; ++i)
		if (std::strcmp(argv[i], "--out-dir") == 0)
			out = argv[i + 1];
	const double eps = 0.5;

	FILE *a = std::fopen((out + "/attribute_example2.csv").c_str(), "w");
	if (!a)
		return 1;
	std::fprintf(a, "r,theta_lo,theta_hi,w_ours,w_seed,group_dp_sensitivity,group_dp_seed,laplace_scale_w,"
	                "laplace_scale_group_dp,epsilon\n");
	for (int k = 0; k <= 10; ++k) {
		const double r = 0.05 * k;
		const double w = example2_w(r);
		const char *seed = k == 2 ? "1" : k == 4 ? "2" : k == 10 ? "4" : "";
		std::fprintf(a, "%.2f,%.2f,%.2f,%g,%s,4,4,%g,%g,%g\n", r, 0.5 - r, 0.5 + r, w, seed, w / eps, 4 / eps, eps);
		std::printf("Example 2  r=%.2f  Theta=[%.2f,%.2f]^2  W=%g (seed: %s)  group DP 4\n", r, 0.5 - r, 0.5 + r, w,
		            *seed ? seed : "-");
	}
	// Example 3 (distributional): phi_1 = 0.6 - 0.2 phi_2, F ~ Bin(4, phi_1), Phi^2 = [0.2, 0.8]
	std::vector<IntegerPmf> secrets;
	for (int s = 0; s <= 60; ++s)
		secrets.push_back(binomial_pmf(4, 0.6 - 0.2 * (0.2 + 0.01 * s)));
	const double w3 = wasserstein_sensitivity({secrets});
	std::fprintf(a, "example3,0.20,0.80,%g,1,4,4,%g,%g,%g\n", w3, w3 / eps, 4 / eps, eps);
	std::printf("Example 3  Phi2=[0.2,0.8]  W=%g (seed: 1)\n", w3);
	std::fclose(a);

	FILE *b = std::fopen((out + "/attribute_gaussian.csv").c_str(), "w");
	if (!b)
		return 1;
	std::fprintf(b, "rho,n,diameter,epsilon,delta,apgm_classical_sd,apgm_analytic_sd,wasserstein_sd,group_dp_sd,"
	                "apgm_analytic_rmse,wasserstein_rmse,group_dp_rmse\n");
	SeededRandom rng(15);
	const int draws = 20000;
	const double n = 100, d = 1, delta = 1e-5;
	std::vector<double> rhos = {0, 0.005, 0.01, 0.014, 0.015, 0.02};
	for (int k = 1; k <= 19; ++k)
		rhos.push_back(0.05 * k);
	for (const double rho : rhos) {
		Eigen::MatrixXd v(2, 2);
		v << 1, rho, rho, 1;
		LinearAttributeQuery q;
		q.weights = Eigen::Vector2d(0, 1);
		q.records = n;
		const ApgmPlan classical = plan_apgm_gaussian({v}, {{0, d}}, q, eps, delta, ApgmCalibration::Classical);
		const ApgmPlan analytic = plan_apgm_gaussian({v}, {{0, d}}, q, eps, delta, ApgmCalibration::Analytic);
		const double w = rho * d; // W_inf between N(mu_a, Var) and N(mu_b, Var)
		const double w_scale = wasserstein_scale(w, eps), g_scale = 6.0 / eps;
		const double e_apgm = rmse(draws, [&] { return apgm_release(rng, 0.0, analytic.sigma); });
		const double e_w = rmse(draws, [&] { return laplace_release(rng, 0.0, w_scale); });
		const double e_g = rmse(draws, [&] { return laplace_release(rng, 0.0, g_scale); });
		std::fprintf(b, "%.3f,%g,%g,%g,%g,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f\n", rho, n, d, eps, delta, classical.sigma,
		             analytic.sigma, std::sqrt(2.0) * w_scale, std::sqrt(2.0) * g_scale, e_apgm, e_w, e_g);
		std::printf("Gaussian rho=%.3f  APGM sd %.4f (classical %.4f)  Wasserstein sd %.4f  group DP sd %.4f\n", rho,
		            analytic.sigma, classical.sigma, std::sqrt(2.0) * w_scale, std::sqrt(2.0) * g_scale);
	}
	std::fclose(b);
	return 0;
}
