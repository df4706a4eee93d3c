// Attribute-Private Gaussian Mechanism, APGM (MECHANISMS.md §6.3–6.5; Zhang, Ohrimenko, Cummings,
// Algorithms 1–2): hides a distribution parameter of a table (the mean of a protected column), not
// one record.
//
// Why the data's own variance is credited: the released F(X) is itself random given the secret
// (records are i.i.d. draws of a declared model theta), so F(X) | secret ~ N(mu_a, Var) and the
// mechanism only needs Var + sigma^2 to reach the variance a Gaussian mechanism of sensitivity
// Delta needs. Weakly correlated queries may therefore need no noise at all.
//
// Multivariate Gaussian instantiation (§6.4, generalised to a linear function of the attributes):
// records x ~ N(mu, V) on R^m (V per theta in Theta), F = (1/n) sum_r w·x_r (avg) or sum_r w·x_r
// (sum), secret = the mean of column i lies in a set of diameter d_i. With u = V w:
//   avg: Delta_i = |u_i| / V_ii * d_i,      Var(F | mean_i) = (w'Vw - u_i^2 / V_ii) / n
//   sum: Delta_i = n |u_i| / V_ii * d_i,    Var(F | mean_i) = n (w'Vw - u_i^2 / V_ii)
// w = e_j gives §6.4's formulas. Delta_i is maximised and the variance minimised over Theta.
#pragma once

#include <Eigen/Dense>

#include <cstddef>
#include <vector>

#include "core/random.h"

namespace dxpriv {

// How the noise is calibrated from (Delta, epsilon, delta):
//   Classical: sigma = sqrt(2 ln(1.25/delta)) Delta / epsilon (the seed's Algorithm 1; epsilon < 1),
//   Analytic: the analytic Gaussian sigma (§2.2; §6.3's [DERIVED] proposal: exact, any epsilon, never
//   larger than Classical).
enum class ApgmCalibration { Analytic = 0, Classical = 1 };

// The calibrated sigma for one (Delta > 0, epsilon, delta). CoreError(InvalidParameter) as
// analytic_gaussian_sigma / classical_gaussian_sigma.
double apgm_calibrated_sigma(double sensitivity, double epsilon, double delta, ApgmCalibration calibration);

// One protected attribute's share of Algorithm 1.
struct ApgmTerm {
	int attribute = -1;                    // index of the protected attribute (-1: caller's own term)
	double sensitivity = 0;                // Delta_i F (max over Theta and secret pairs)
	double min_conditional_variance = 0;   // min over Theta of Var(F | g_i), >= 0
	double calibrated_sigma = 0;           // apgm_calibrated_sigma(Delta_i F) (0 when Delta_i F = 0)
	double variance_needed = 0;            // calibrated_sigma^2 - min_conditional_variance (may be < 0)
};

// Outcome of Algorithm 1: the noise variance and how each protected attribute asked for it.
struct ApgmPlan {
	double sigma2 = 0; // variance of the added Gaussian noise (0: the exact answer is private)
	double sigma = 0;  // sqrt(sigma2)
	int binding = -1;  // index into terms of the attribute that set sigma2 (-1 when sigma2 == 0)
	double epsilon = 0, delta = 0;
	ApgmCalibration calibration = ApgmCalibration::Analytic;
	std::vector<ApgmTerm> terms;
};

// Algorithm 1 / Algorithm 2 (§6.5) from per-attribute sensitivities and conditional variances
// (terms' attribute, sensitivity and min_conditional_variance set by the caller; the rest is
// filled in): sigma2 = max(0, max_i [sigma_cal(Delta_i)^2 - min Var_i]). Sensitivities and
// variances must be finite and >= 0, epsilon > 0 finite, delta in (0, 1), at least one term;
// CoreError(InvalidParameter) otherwise.
ApgmPlan plan_apgm(std::vector<ApgmTerm> terms, double epsilon, double delta, ApgmCalibration calibration);

// The secret of dataset attribute privacy on a Gaussian model: the mean of column `attribute`
// lies in a set of diameter `diameter` (finite, >= 0).
struct MeanSecret {
	int attribute = 0;
	double diameter = 0;
};

// The released function: F = (1/n) sum_r w·x_r (avg) or sum_r w·x_r (sum), over n = records >= 1.
struct LinearAttributeQuery {
	Eigen::VectorXd weights;
	bool sum = false;
	double records = 1;
};

// Checks a declared per-record covariance: square, finite, symmetric (to 1e-9 relative) and
// positive semi-definite (smallest eigenvalue >= -1e-10 times the largest magnitude).
// CoreError(InvalidParameter) with a hint otherwise.
void validate_covariance(const Eigen::MatrixXd &v);

// Delta_i F and Var(F | mean_i) of `query` under one covariance (§6.4 generalised, see above).
// Requires V_ii > 0 (CoreError(InvalidParameter): a protected column without variance).
void gaussian_attribute_moments(const Eigen::MatrixXd &v, const MeanSecret &secret, const LinearAttributeQuery &query,
                                double &sensitivity, double &conditional_variance);

// APGM on the multivariate Gaussian family Theta = {N(mu, V) : V in covariances} (means do not
// matter): validates every covariance, the secrets (attribute in range, diameter finite >= 0) and
// the query (weights of the covariances' dimension, finite, records >= 1 finite), then plans with
// Delta_i maximised and the conditional variance minimised over Theta. CoreError(InvalidParameter).
ApgmPlan plan_apgm_gaussian(const std::vector<Eigen::MatrixXd> &covariances, const std::vector<MeanSecret> &secrets,
                            const LinearAttributeQuery &query, double epsilon, double delta,
                            ApgmCalibration calibration);

// Theorem 2: the answer is within alpha = sigma * Phi^{-1}(1 - beta/2) of F(X) with probability
// 1 - beta (0 when sigma == 0). beta in (0, 1); CoreError(InvalidParameter) otherwise.
double apgm_accuracy(double sigma2, double beta);

// Theorem 3 (§6.5): the guarantee of Algorithm 2 when every conditional law is within lambda_eta
// (eta-approximate max-divergence, both directions) of its Gaussian approximation:
// (epsilon + 2 lambda_eta, e^{lambda_eta} delta + eta). lambda_eta >= 0 and eta in [0, 1) finite.
struct PufferfishGuarantee {
	double epsilon = 0, delta = 0;
};
PufferfishGuarantee apgm_non_gaussian_guarantee(double epsilon, double delta, double lambda_eta, double eta);

// The released value: exact when sigma == 0; otherwise exact rounded to a power-of-two grid g with
// sigma / g in [2^10, 2^11) plus g * N_Z(0, s^2), s >= sigma / g (gaussian_on_grid), so the output
// lies on the grid and its low-order bits reveal nothing of F(X). exact finite, sigma >= 0 finite.
double apgm_release(RandomSource &rng, double exact, double sigma);

} // namespace dxpriv
