// Column metrics: construction, validation, distances and exact per-line sensitivity.
#include "core/metric.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "core/error.h"

namespace dxpriv {

namespace {

// True for a valid budget weight: strictly positive, possibly +inf, never NaN.
bool
valid_weight(double w)
{
	return w > 0; // false for NaN
}

// Distance between adjacent points i and i+1 under an absolute metric of the given scale.
double
absolute_step(const Domain &dom, std::size_t i, double scale)
{
	return std::fabs(dom.ordinal(i + 1) - dom.ordinal(i)) / scale;
}

} // namespace

// Discrete metric: every pair of distinct values is `weight` apart.
ColumnMetric
ColumnMetric::discrete(double weight)
{
	if (!valid_weight(weight))
		throw CoreError(ErrorKind::InvalidParameter, "discrete metric weight must be positive",
		                "Give a positive number, or infinity to protect the column only through presence.");
	ColumnMetric m;
	m.kind_ = MetricKind::Discrete;
	m.param_ = weight;
	return m;
}

// Absolute-difference metric |ordinal(a) - ordinal(b)| / scale.
ColumnMetric
ColumnMetric::absolute(double scale)
{
	if (!std::isfinite(scale) || !(scale > 0))
		throw CoreError(ErrorKind::InvalidParameter, "absolute metric scale must be positive and finite",
		                "Give the distance, in column units, that one unit of epsilon protects.");
	ColumnMetric m;
	m.kind_ = MetricKind::Absolute;
	m.param_ = scale;
	return m;
}

// Per-value budgets combined by the closed min rule of MECHANISMS.md §3.12(c).
ColumnMetric
ColumnMetric::per_value(std::vector<double> weights)
{
	if (weights.empty())
		throw CoreError(ErrorKind::InvalidParameter, "per-value metric has no weights",
		                "Give one budget per domain value.");
	for (double w : weights)
		if (!valid_weight(w))
			throw CoreError(ErrorKind::InvalidParameter, "per-value metric weight must be positive",
			                "Give every domain value a positive budget, or infinity.");
	ColumnMetric m;
	m.kind_ = MetricKind::PerValue;
	m.closure_cap_ = 2 * *std::min_element(weights.begin(), weights.end());
	m.weights_ = std::move(weights);
	return m;
}

// Metric that never protects a value change (only the presence edge protects the column).
ColumnMetric
ColumnMetric::none()
{
	return ColumnMetric();
}

// Distance between points i and j of dom.
double
ColumnMetric::distance(const Domain &dom, std::size_t i, std::size_t j) const
{
	if (i >= dom.size() || j >= dom.size())
		throw CoreError(ErrorKind::Internal, "metric point index out of range");
	if (i == j)
		return 0;
	switch (kind_) {
	case MetricKind::Discrete:
		return param_;
	case MetricKind::Absolute:
		return std::fabs(dom.ordinal(i) - dom.ordinal(j)) / param_;
	case MetricKind::PerValue:
		if (weights_.size() != dom.size())
			throw CoreError(ErrorKind::Internal, "per-value metric used on a domain of another size");
		return std::min({weights_[i], weights_[j], closure_cap_});
	case MetricKind::None:
		return kInfinity;
	}
	throw CoreError(ErrorKind::Internal, "unknown metric kind");
}

// Checks that the metric can be used on dom.
void
ColumnMetric::validate(const Domain &dom) const
{
	if (kind_ == MetricKind::PerValue && weights_.size() != dom.size())
		throw CoreError(ErrorKind::InvalidParameter,
		                "per-value metric has " + std::to_string(weights_.size()) + " weights but the domain has " +
		                    std::to_string(dom.size()) + " values",
		                "Give exactly one budget per domain value, in domain order.");
	if (kind_ == MetricKind::Absolute && dom.size() > 1 && !(absolute_step(dom, 0, param_) > 0))
		throw CoreError(ErrorKind::InvalidParameter, "absolute metric scale is too large for the domain step",
		                "Use a smaller scale or a coarser domain step.");
}

// Exact max over pairs of |q_i - q_j| / d(i, j) along one line of the sub-universe.
double
ColumnMetric::line_sensitivity(const Domain &dom, const double *q, std::size_t stride) const
{
	const std::size_t k = dom.size();
	if (k < 2 || kind_ == MetricKind::None)
		return 0;
	double s = 0;
	switch (kind_) {
	case MetricKind::Discrete: {
		double lo = q[0], hi = q[0];
		for (std::size_t i = 1; i < k; i++) {
			lo = std::min(lo, q[i * stride]);
			hi = std::max(hi, q[i * stride]);
		}
		return hi > lo ? (hi - lo) / param_ : 0;
	}
	case MetricKind::Absolute:
		// A path metric on a line: the maximum ratio is attained on adjacent points.
		for (std::size_t i = 0; i + 1 < k; i++) {
			const double diff = std::fabs(q[(i + 1) * stride] - q[i * stride]);
			if (diff > 0)
				s = std::max(s, diff / absolute_step(dom, i, param_));
		}
		return s;
	case MetricKind::PerValue: {
		if (weights_.size() != k)
			throw CoreError(ErrorKind::Internal, "per-value metric used on a domain of another size");
		// d(i,j) = min(w'_i, w'_j) with w' = min(w, cap). Visit points by decreasing w': every point
		// already visited is at distance w'_i from point i, so a running max/min of q is enough.
		std::vector<std::size_t> order(k);
		std::iota(order.begin(), order.end(), std::size_t{0});
		std::sort(order.begin(), order.end(),
		          [this](std::size_t a, std::size_t b) { return weights_[a] > weights_[b]; });
		double lo = q[order[0] * stride], hi = lo;
		for (std::size_t i : order) {
			const double qi = q[i * stride];
			lo = std::min(lo, qi);
			hi = std::max(hi, qi);
			const double diff = std::max(hi - qi, qi - lo);
			if (diff > 0)
				s = std::max(s, diff / std::min(weights_[i], closure_cap_));
		}
		return s;
	}
	case MetricKind::None:
		break;
	}
	return s;
}

} // namespace dxpriv
