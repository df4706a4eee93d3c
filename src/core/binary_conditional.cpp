// Wasserstein sensitivity of the binary conditional model (see binary_conditional.h).
#include "core/binary_conditional.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/wasserstein.h"

namespace dxpriv {

namespace {

[[noreturn]] void
invalid_conditional(const std::string &message, const std::string &hint)
{
	throw CoreError(ErrorKind::InvalidParameter, message, hint);
}

void
check_range(double lo, double hi, const char *name)
{
	if (!(lo >= 0 && lo <= hi && hi <= 1))
		invalid_conditional(std::string("the range of ") + name + " must satisfy 0 <= low <= high <= 1",
		        "Declare probabilities as [low, high] within [0, 1].");
}

} // namespace

// See binary_conditional.h.
void
validate_binary_conditional(const BinaryConditionalModel &model)
{
	check_range(model.p1_lo, model.p1_hi, "p1");
	check_range(model.p2_lo, model.p2_hi, "p2");
	if (!(model.step > 0) || !std::isfinite(model.step))
		invalid_conditional("the grid step must be positive and finite", "Use for example 0.01.");
	for (double width : {model.p1_hi - model.p1_lo, model.p2_hi - model.p2_lo})
		if (width / model.step + 1 > kMaxBinaryGridPoints)
			invalid_conditional("the grid has too many points", "Use a coarser step: at most 1001 points per range.");
}

// See binary_conditional.h.
std::vector<double>
grid_points(double lo, double hi, double step)
{
	std::vector<double> out;
	for (int64_t k = 0;; ++k) {
		const double x = lo + static_cast<double>(k) * step;
		if (x >= hi - 1e-12)
			break;
		out.push_back(x);
	}
	out.push_back(hi);
	return out;
}

// See binary_conditional.h.
int64_t
secret_window(double diameter, int64_t records)
{
	if (!(diameter >= 0) || !std::isfinite(diameter) || records < 1)
		invalid_conditional("the secret diameter must be finite and non-negative and the table non-empty",
		        "The diameter bounds how far apart two hidden values of the protected mean are.");
	const double w = std::floor(diameter * static_cast<double>(records) + 1e-9);
	return w >= static_cast<double>(records) ? records : static_cast<int64_t>(w);
}

// See binary_conditional.h.
double
binary_conditional_work(const BinaryConditionalModel &model, int64_t records, int64_t window)
{
	validate_binary_conditional(model);
	const double points = static_cast<double>(grid_points(model.p1_lo, model.p1_hi, model.step).size()) *
	                      static_cast<double>(grid_points(model.p2_lo, model.p2_hi, model.step).size());
	const double n = static_cast<double>(records);
	return points * (n + 1) * (n * n / 4 + static_cast<double>(window) * (n + 1));
}

// See binary_conditional.h. For each grid model the n + 1 conditional laws are computed once and
// every pair (a, b) with 0 < b - a <= window compared (W_inf is symmetric).
double
binary_conditional_sensitivity(const BinaryConditionalModel &model, int64_t records, int64_t window)
{
	validate_binary_conditional(model);
	if (records < 1 || records > 100000)
		invalid_conditional("the number of records must lie in [1, 100000]", "The model describes tables of n records.");
	if (window < 0 || window > records)
		invalid_conditional("the secret window must lie in [0, n]", "Pairs of protected counts at most the window apart.");
	const int n = static_cast<int>(records);
	double w = 0;
	for (double p1 : grid_points(model.p1_lo, model.p1_hi, model.step))
		for (double p2 : grid_points(model.p2_lo, model.p2_hi, model.step)) {
			std::vector<IntegerPmf> laws;
			laws.reserve(static_cast<size_t>(n) + 1);
			for (int a = 0; a <= n; ++a)
				laws.push_back(convolve(binomial_pmf(a, p1), binomial_pmf(n - a, p2)));
			for (int a = 0; a <= n; ++a)
				for (int b = a + 1; b <= n && b - a <= window; ++b)
					w = std::max(w, winf_integer(laws[static_cast<size_t>(a)], laws[static_cast<size_t>(b)]));
		}
	return w;
}

} // namespace dxpriv
