// Dispersion statistics from noisy linear sums, their delta-method error bars and post-processing (dispersion.h).
#include "core/dispersion.h"

#include "core/error.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dxpriv {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A value with its gradient with respect to the six parts (forward-mode differentiation).
struct Dual {
	double v = 0;
	DispersionParts d{};
};

Dual
constant(double v)
{
	Dual r;
	r.v = v;
	return r;
}

Dual
variable(double v, int p)
{
	Dual r;
	r.v = v;
	r.d[p] = 1;
	return r;
}

Dual
operator+(const Dual &a, const Dual &b)
{
	Dual r;
	r.v = a.v + b.v;
	for (int p = 0; p < kParts; ++p)
		r.d[p] = a.d[p] + b.d[p];
	return r;
}

Dual
operator-(const Dual &a, const Dual &b)
{
	Dual r;
	r.v = a.v - b.v;
	for (int p = 0; p < kParts; ++p)
		r.d[p] = a.d[p] - b.d[p];
	return r;
}

Dual
operator*(const Dual &a, const Dual &b)
{
	Dual r;
	r.v = a.v * b.v;
	for (int p = 0; p < kParts; ++p)
		r.d[p] = a.d[p] * b.v + a.v * b.d[p];
	return r;
}

Dual
operator/(const Dual &a, const Dual &b)
{
	Dual r;
	r.v = a.v / b.v;
	for (int p = 0; p < kParts; ++p)
		r.d[p] = (a.d[p] * b.v - a.v * b.d[p]) / (b.v * b.v);
	return r;
}

Dual
sqrt(const Dual &a)
{
	Dual r;
	r.v = std::sqrt(a.v);
	for (int p = 0; p < kParts; ++p)
		r.d[p] = a.d[p] / (2 * r.v);
	return r;
}

Dual
nan_dual()
{
	Dual r;
	r.v = kNaN;
	r.d.fill(kNaN);
	return r;
}

// The statistic as a differentiable function of the parts.
Dual
evaluate(Dispersion k, const DispersionParts &parts, double cx, double cy)
{
	const Dual n = variable(parts[kPartN], kPartN), sx = variable(parts[kPartSx], kPartSx),
	           sy = variable(parts[kPartSy], kPartSy), sxx = variable(parts[kPartSxx], kPartSxx),
	           syy = variable(parts[kPartSyy], kPartSyy), sxy = variable(parts[kPartSxy], kPartSxy);
	const bool sample = k == Dispersion::StddevSamp || k == Dispersion::VarSamp || k == Dispersion::CovarSamp;
	if (!(n.v > (sample ? 1 : 0)))
		return nan_dual();
	const Dual one = constant(1);
	const Dual vx = sxx - sx * sx / n; // Σ (x - x̄)²
	const Dual vy = syy - sy * sy / n;
	const Dual cxy = sxy - sx * sy / n; // Σ (x - x̄)(y - ȳ)
	const Dual denominator = sample ? n - one : n;
	switch (k) {
	case Dispersion::VarSamp:
	case Dispersion::VarPop:
		return vx / denominator;
	case Dispersion::StddevSamp:
	case Dispersion::StddevPop: {
		const Dual var = vx / denominator;
		return var.v >= 0 ? sqrt(var) : nan_dual();
	}
	case Dispersion::CovarSamp:
	case Dispersion::CovarPop:
		return cxy / denominator;
	case Dispersion::Corr:
		return vx.v > 0 && vy.v > 0 ? cxy / sqrt(vx * vy) : nan_dual();
	case Dispersion::RegrSlope:
		return vx.v > 0 ? cxy / vx : nan_dual();
	case Dispersion::RegrIntercept:
		return vx.v > 0 ? constant(cy) + sy / n - cxy / vx * (constant(cx) + sx / n) : nan_dual();
	case Dispersion::RegrCount:
		return n;
	case Dispersion::RegrAvgX:
		return constant(cx) + sx / n;
	case Dispersion::RegrAvgY:
		return constant(cy) + sy / n;
	case Dispersion::RegrSxx:
		return vx;
	case Dispersion::RegrSyy:
		return vy;
	case Dispersion::RegrSxy:
		return cxy;
	case Dispersion::RegrR2:
		if (!(vx.v > 0))
			return nan_dual();
		if (vy.v == 0)
			return constant(1);
		return vy.v > 0 ? cxy * cxy / (vx * vy) : nan_dual();
	}
	return nan_dual();
}

struct Named {
	Dispersion kind;
	const char *name;
};
constexpr Named kNames[] = {
    {Dispersion::StddevSamp, "stddev_samp"},   {Dispersion::StddevPop, "stddev_pop"},
    {Dispersion::VarSamp, "var_samp"},         {Dispersion::VarPop, "var_pop"},
    {Dispersion::CovarSamp, "covar_samp"},     {Dispersion::CovarPop, "covar_pop"},
    {Dispersion::Corr, "corr"},                {Dispersion::RegrSlope, "regr_slope"},
    {Dispersion::RegrIntercept, "regr_intercept"}, {Dispersion::RegrCount, "regr_count"},
    {Dispersion::RegrAvgX, "regr_avgx"},       {Dispersion::RegrAvgY, "regr_avgy"},
    {Dispersion::RegrSxx, "regr_sxx"},         {Dispersion::RegrSyy, "regr_syy"},
    {Dispersion::RegrSxy, "regr_sxy"},         {Dispersion::RegrR2, "regr_r2"},
};

} // namespace

// See dispersion.h.
const char *
dispersion_name(Dispersion k)
{
	for (const Named &n : kNames)
		if (n.kind == k)
			return n.name;
	return "?";
}

// See dispersion.h.
bool
dispersion_from_name(const std::string &name, Dispersion &k)
{
	if (name == "stddev" || name == "variance") {
		k = name == "stddev" ? Dispersion::StddevSamp : Dispersion::VarSamp;
		return true;
	}
	for (const Named &n : kNames)
		if (name == n.name) {
			k = n.kind;
			return true;
		}
	return false;
}

// See dispersion.h.
bool
dispersion_two_columns(Dispersion k)
{
	return !(k == Dispersion::StddevSamp || k == Dispersion::StddevPop || k == Dispersion::VarSamp ||
	         k == Dispersion::VarPop);
}

// See dispersion.h.
bool
dispersion_needs(Dispersion k, int p)
{
	switch (k) {
	case Dispersion::StddevSamp:
	case Dispersion::StddevPop:
	case Dispersion::VarSamp:
	case Dispersion::VarPop:
	case Dispersion::RegrSxx:
		return p == kPartN || p == kPartSx || p == kPartSxx;
	case Dispersion::RegrSyy:
		return p == kPartN || p == kPartSy || p == kPartSyy;
	case Dispersion::CovarSamp:
	case Dispersion::CovarPop:
	case Dispersion::RegrSxy:
		return p == kPartN || p == kPartSx || p == kPartSy || p == kPartSxy;
	case Dispersion::Corr:
	case Dispersion::RegrR2:
		return true;
	case Dispersion::RegrSlope:
	case Dispersion::RegrIntercept:
		return p != kPartSyy;
	case Dispersion::RegrCount:
		return p == kPartN;
	case Dispersion::RegrAvgX:
		return p == kPartN || p == kPartSx;
	case Dispersion::RegrAvgY:
		return p == kPartN || p == kPartSy;
	}
	return true;
}

// See dispersion.h.
double
dispersion_value(Dispersion k, const DispersionParts &parts, double cx, double cy)
{
	return evaluate(k, parts, cx, cy).v;
}

// See dispersion.h.
DispersionParts
dispersion_gradient(Dispersion k, const DispersionParts &parts, double cx, double cy)
{
	DispersionParts g = evaluate(k, parts, cx, cy).d;
	for (int p = 0; p < kParts; ++p)
		if (!dispersion_needs(k, p))
			g[p] = 0;
	return g;
}

// See dispersion.h.
double
dispersion_half_width(Dispersion k, const DispersionParts &parts, const DispersionParts &variances,
                      const DispersionParts &kurtosis, double cx, double cy, double confidence)
{
	if (!(confidence > 0 && confidence < 1))
		throw CoreError(ErrorKind::InvalidParameter, "confidence must be in (0, 1)");
	for (int p = 0; p < kParts; ++p)
		if (dispersion_needs(k, p) && (!(variances[p] >= 0 && std::isfinite(variances[p])) ||
		                               !(kurtosis[p] >= 0 && std::isfinite(kurtosis[p]))))
			throw CoreError(ErrorKind::InvalidParameter, "noise variances and kurtoses must be finite and non-negative");
	const Dual f = evaluate(k, parts, cx, cy);
	if (std::isnan(f.v))
		return kNaN;
	double var = 0, fourth = 0;
	for (int p = 0; p < kParts; ++p)
		if (dispersion_needs(k, p)) {
			const double v = f.d[p] * f.d[p] * variances[p];
			var += v;
			fourth += kurtosis[p] * v * v;
		}
	// two-sided normal quantile: z = sqrt(2) erfinv(confidence), by Newton on erf
	double z = 1.959963984540054;
	if (confidence != 0.95) {
		z = 1;
		for (int i = 0; i < 100; ++i) {
			const double e = std::erf(z / std::sqrt(2.0)) - confidence;
			z -= e / (0.7978845608028654 /* sqrt(2 / pi) */ * std::exp(-z * z / 2));
		}
	}
	const double excess = var > 0 ? fourth / (var * var) : 0;
	return (z + (z * z * z - 3 * z) * excess / 24) * std::sqrt(var);
}

// See dispersion.h.
DispersionAnswer
dispersion_release(Dispersion k, const DispersionParts &parts, const DispersionParts &variances,
                   const DispersionParts &kurtosis, double cx, double cy,
                   double x_lo, double x_hi, double y_lo, double y_hi, double count_half_width, bool postprocess)
{
	DispersionAnswer a;
	a.value = dispersion_value(k, parts, cx, cy);
	a.half_width = dispersion_half_width(k, parts, variances, kurtosis, cx, cy);
	if (!postprocess)
		return a;
	const double n = parts[kPartN];
	if (!std::isfinite(n) || !(n > count_half_width)) {
		a.value = kNaN;
		a.half_width = kNaN;
		a.note = "null: the count's 95% interval reaches 0";
		return a;
	}
	const bool sample = k == Dispersion::StddevSamp || k == Dispersion::VarSamp || k == Dispersion::CovarSamp;
	const double inflate = sample && n > 1 ? n / (n - 1) : 1;
	const double rx = std::max(x_hi - x_lo, 0.0), ry = std::max(y_hi - y_lo, 0.0);
	auto clamp = [&a](double lo, double hi, const char *what) {
		if (a.value < lo || a.value > hi) {
			a.value = std::clamp(a.value, lo, hi);
			a.note = what;
		}
	};
	const DispersionParts &p = parts;
	const double vx = p[kPartSxx] - p[kPartSx] * p[kPartSx] / n, vy = p[kPartSyy] - p[kPartSy] * p[kPartSy] / n;
	switch (k) {
	case Dispersion::VarSamp:
	case Dispersion::VarPop:
	case Dispersion::StddevSamp:
	case Dispersion::StddevPop: {
		if (std::isnan(a.value) && n > (sample ? 1 : 0)) // the square root of a negative variance
			a.value = 0, a.note = "clamped to the possible range";
		const bool sd = k == Dispersion::StddevSamp || k == Dispersion::StddevPop;
		const double max_var = inflate * rx * rx / 4;
		clamp(0, sd ? std::sqrt(max_var) : max_var, "clamped to the possible range");
		break;
	}
	case Dispersion::RegrSxx:
		clamp(0, n * rx * rx / 4, "clamped to the possible range");
		break;
	case Dispersion::RegrSyy:
		clamp(0, n * ry * ry / 4, "clamped to the possible range");
		break;
	case Dispersion::CovarSamp:
	case Dispersion::CovarPop:
		clamp(-inflate * rx * ry / 4, inflate * rx * ry / 4, "clamped to the possible range");
		break;
	case Dispersion::RegrSxy:
		clamp(-n * rx * ry / 4, n * rx * ry / 4, "clamped to the possible range");
		break;
	case Dispersion::Corr:
	case Dispersion::RegrSlope:
	case Dispersion::RegrIntercept:
	case Dispersion::RegrR2:
		if (!(vx > 0) || ((k == Dispersion::Corr || k == Dispersion::RegrR2) && !(vy >= 0)) ||
		    (k == Dispersion::Corr && !(vy > 0))) {
			a.value = kNaN;
			a.half_width = kNaN;
			a.note = "null: a variance estimate is not positive";
			return a;
		}
		if (k == Dispersion::Corr)
			clamp(-1, 1, "clamped to [-1, 1]");
		if (k == Dispersion::RegrR2)
			clamp(0, 1, "clamped to [0, 1]");
		break;
	case Dispersion::RegrCount:
		a.value = std::max(std::nearbyint(a.value), 0.0);
		break;
	case Dispersion::RegrAvgX:
		clamp(x_lo, x_hi, "clamped to the value range");
		break;
	case Dispersion::RegrAvgY:
		clamp(y_lo, y_hi, "clamped to the value range");
		break;
	}
	return a;
}

} // namespace dxpriv
