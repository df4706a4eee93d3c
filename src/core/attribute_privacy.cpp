// Attribute-Private Gaussian Mechanism: calibration (Algorithms 1–2), Gaussian instantiation, release.
#include "core/attribute_privacy.h"

#include <boost/math/distributions/normal.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "core/gaussian.h"

namespace dxpriv {

namespace {

[[noreturn]] void
invalid(const std::string &message, const std::string &hint = "")
{
	throw CoreError(ErrorKind::InvalidParameter, message, hint);
}

void
validate_privacy_parameters(double epsilon, double delta)
{
	if (!(epsilon > 0) || !std::isfinite(epsilon))
		invalid("epsilon must be positive and finite", "Use a value such as 0.5.");
	if (!(delta > 0 && delta < 1))
		invalid("delta must lie strictly between 0 and 1", "Use a small value such as 1e-5.");
}

} // namespace

// See attribute_privacy.h.
double
apgm_calibrated_sigma(double sensitivity, double epsilon, double delta, ApgmCalibration calibration)
{
	return calibration == ApgmCalibration::Classical ? classical_gaussian_sigma(sensitivity, epsilon, delta)
	                                                 : analytic_gaussian_sigma(sensitivity, epsilon, delta);
}

// See attribute_privacy.h.
ApgmPlan
plan_apgm(std::vector<ApgmTerm> terms, double epsilon, double delta, ApgmCalibration calibration)
{
	validate_privacy_parameters(epsilon, delta);
	if (calibration == ApgmCalibration::Classical && !(epsilon < 1))
		invalid("classical gaussian calibration requires epsilon below 1",
		        "Use the analytic calibration, which holds for every epsilon and never adds more noise.");
	if (terms.empty())
		invalid("attribute privacy needs at least one protected attribute",
		        "Declare a protected attribute (a secret) first.");
	ApgmPlan plan;
	plan.epsilon = epsilon;
	plan.delta = delta;
	plan.calibration = calibration;
	for (size_t k = 0; k < terms.size(); ++k) {
		ApgmTerm &t = terms[k];
		if (!(t.sensitivity >= 0) || !std::isfinite(t.sensitivity))
			invalid("attribute sensitivity must be finite and non-negative",
		        "It is the largest change of the expected answer between two secrets.");
		if (!(t.min_conditional_variance >= 0) || !std::isfinite(t.min_conditional_variance))
			invalid("conditional variance must be finite and non-negative",
		        "It is the variance of the answer given the secret.");
		t.calibrated_sigma = t.sensitivity > 0 ? apgm_calibrated_sigma(t.sensitivity, epsilon, delta, calibration) : 0;
		t.variance_needed = t.calibrated_sigma * t.calibrated_sigma - t.min_conditional_variance;
		if (t.variance_needed > plan.sigma2) {
			plan.sigma2 = t.variance_needed;
			plan.binding = static_cast<int>(k);
		}
	}
	plan.sigma = std::sqrt(plan.sigma2);
	plan.terms = std::move(terms);
	return plan;
}

// See attribute_privacy.h.
void
validate_covariance(const Eigen::MatrixXd &v)
{
	if (v.rows() == 0 || v.rows() != v.cols())
		invalid("covariance must be a non-empty square matrix",
		        "Give one row per attribute, each with one entry per attribute.");
	if (!v.allFinite())
		invalid("covariance entries must be finite numbers",
		        "Write every entry as a finite number.");
	const double scale = v.cwiseAbs().maxCoeff();
	for (Eigen::Index i = 0; i < v.rows(); ++i)
		for (Eigen::Index j = i + 1; j < v.cols(); ++j)
			if (std::abs(v(i, j) - v(j, i)) > 1e-9 * std::max(scale, 1e-300))
				invalid("covariance must be symmetric", "Entry (i, j) must equal entry (j, i).");
	if (scale == 0)
		return;
	Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(v, Eigen::EigenvaluesOnly);
	if (eig.info() != Eigen::Success)
		invalid("covariance eigenvalues could not be computed",
		        "Check the matrix for extreme magnitudes.");
	if (eig.eigenvalues().minCoeff() < -1e-10 * scale)
		invalid("covariance is not positive semi-definite",
		        "A covariance matrix has no negative eigenvalue; check the variances and correlations "
		        "(every correlation must lie in [-1, 1] and the matrix must be consistent).");
}

// See attribute_privacy.h.
void
gaussian_attribute_moments(const Eigen::MatrixXd &v, const MeanSecret &secret, const LinearAttributeQuery &query,
                           double &sensitivity, double &conditional_variance)
{
	const Eigen::Index i = secret.attribute;
	if (i < 0 || i >= v.rows())
		invalid("protected attribute index is out of range",
		        "The protected attribute must be one of the model's attributes.");
	const double vii = v(i, i);
	if (!(vii > 0))
		invalid("a protected attribute must have a positive variance in every declared model",
		        "A column without variance has a known mean: there is nothing to hide.");
	const Eigen::VectorXd u = v * query.weights;
	const double total = query.weights.dot(u);
	// Var(w·x | x_i) = w'Vw - u_i^2 / V_ii, >= 0 for PSD V; rounding may leave a tiny negative
	const double per_record = std::max(0.0, total - u(i) * u(i) / vii);
	const double n = query.records;
	sensitivity = std::abs(u(i)) / vii * secret.diameter * (query.sum ? n : 1.0);
	conditional_variance = query.sum ? n * per_record : per_record / n;
}

// See attribute_privacy.h.
ApgmPlan
plan_apgm_gaussian(const std::vector<Eigen::MatrixXd> &covariances, const std::vector<MeanSecret> &secrets,
                   const LinearAttributeQuery &query, double epsilon, double delta, ApgmCalibration calibration)
{
	if (covariances.empty())
		invalid("the data model must declare at least one covariance matrix",
		        "Give \"covariance\" or \"covariances\".");
	for (const Eigen::MatrixXd &v : covariances) {
		validate_covariance(v);
		if (v.rows() != covariances.front().rows())
			invalid("every declared covariance must have the same dimension",
		        "Give every matrix one row and column per attribute.");
	}
	const Eigen::Index m = covariances.front().rows();
	if (query.weights.size() != m)
		invalid("query weights must have one entry per attribute of the model",
		        "The query is a linear function of the model's attributes.");
	if (!query.weights.allFinite())
		invalid("query weights must be finite",
		        "Use finite weights.");
	if (!(query.records >= 1) || !std::isfinite(query.records))
		invalid("the number of records must be at least 1",
		        "The model describes tables of n >= 1 records.");
	if (secrets.empty())
		invalid("attribute privacy needs at least one protected attribute",
		        "Declare a protected attribute (a secret) first.");
	std::vector<ApgmTerm> terms;
	for (const MeanSecret &s : secrets) {
		if (s.attribute < 0 || s.attribute >= m)
			invalid("protected attribute index is out of range",
		        "The protected attribute must be one of the model's attributes.");
		if (!(s.diameter >= 0) || !std::isfinite(s.diameter))
			invalid("secret diameter must be finite and non-negative",
			        "The diameter is the largest difference between two values of the mean to be hidden.");
		ApgmTerm t;
		t.attribute = s.attribute;
		t.min_conditional_variance = INFINITY;
		for (const Eigen::MatrixXd &v : covariances) {
			double delta_f, var;
			gaussian_attribute_moments(v, s, query, delta_f, var);
			t.sensitivity = std::max(t.sensitivity, delta_f);
			t.min_conditional_variance = std::min(t.min_conditional_variance, var);
		}
		terms.push_back(t);
	}
	return plan_apgm(std::move(terms), epsilon, delta, calibration);
}

// See attribute_privacy.h.
double
apgm_accuracy(double sigma2, double beta)
{
	if (!(beta > 0 && beta < 1))
		invalid("beta must lie strictly between 0 and 1",
		        "Use for example 0.05 for 95% accuracy.");
	if (!(sigma2 >= 0) || !std::isfinite(sigma2))
		invalid("noise variance must be finite and non-negative",
		        "Pass the variance of a calibrated plan.");
	if (sigma2 == 0)
		return 0;
	const boost::math::normal_distribution<double> n;
	return std::sqrt(sigma2) * boost::math::quantile(n, 1 - beta / 2);
}

// See attribute_privacy.h.
PufferfishGuarantee
apgm_non_gaussian_guarantee(double epsilon, double delta, double lambda_eta, double eta)
{
	validate_privacy_parameters(epsilon, delta);
	if (!(lambda_eta >= 0) || !std::isfinite(lambda_eta))
		invalid("lambda_eta must be finite and non-negative",
		        "lambda_eta bounds the approximate max-divergence between each conditional law and its Gaussian "
		        "approximation.");
	if (!(eta >= 0 && eta < 1))
		invalid("eta must lie in [0, 1)",
		        "eta is the mass the approximate max-divergence may ignore.");
	return {epsilon + 2 * lambda_eta, std::exp(lambda_eta) * delta + eta};
}

// See attribute_privacy.h.
double
apgm_release(RandomSource &rng, double exact, double sigma)
{
	if (!std::isfinite(exact))
		throw CoreError(ErrorKind::DataException, "the exact answer is not a finite number");
	if (!(sigma >= 0) || !std::isfinite(sigma))
		invalid("noise standard deviation must be finite and non-negative",
		        "Pass the standard deviation of a calibrated plan.");
	if (sigma == 0)
		return exact;
	int e = 0;
	std::frexp(sigma, &e); // sigma in [2^(e-1), 2^e)
	const double grid = std::ldexp(1.0, e - 1 - 10);
	const double on_grid = std::abs(exact / grid) < 9007199254740992.0 ? std::round(exact / grid) * grid : exact;
	return on_grid + gaussian_on_grid(rng, sigma, grid);
}

} // namespace dxpriv
