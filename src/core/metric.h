// Column metrics "per unit of epsilon": how distinguishable two values of one column may be.
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

#include "core/domain.h"

namespace dxpriv {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

enum class MetricKind {
	Discrete, // d(a,b) = w * 1[a != b]
	Absolute, // d(a,b) = |ordinal(a) - ordinal(b)| / scale   (numeric, ordinal enum, dates)
	PerValue, // d(a,b) = 1[a != b] * min(w(a), w(b), 2 * min_c w(c))  (MECHANISMS.md §3.12(c))
	None      // d(a,b) = +inf for a != b: only the presence edge protects this column
};

// A metric on the points of one Domain. Immutable once built.
class ColumnMetric {
public:
	// weight > 0 (may be +inf). Throws CoreError(InvalidParameter) otherwise.
	static ColumnMetric discrete(double weight);
	// scale > 0 and finite.
	static ColumnMetric absolute(double scale);
	// One budget per domain point (same order as the domain), each > 0 (may be +inf).
	static ColumnMetric per_value(std::vector<double> weights);
	static ColumnMetric none();

	MetricKind kind() const noexcept { return kind_; }
	// Distance between points i and j of dom (0 when i == j). Requires per_value weights to
	// have dom.size() entries (checked by validate()).
	double distance(const Domain &dom, std::size_t i, std::size_t j) const;
	// Throws CoreError(InvalidParameter) when the metric cannot be used on dom (e.g. Absolute on
	// a non-ordered domain is allowed — enum ordinals — but per_value size must match).
	void validate(const Domain &dom) const;

	// Exact max over pairs i != j of |q[i*stride] - q[j*stride]| / distance(i, j) for the
	// dom.size() values q[0], q[stride], ...; 0 when all values are equal. Uses adjacent pairs
	// for Absolute (path metric on a line), max-min for Discrete, all pairs for PerValue.
	double line_sensitivity(const Domain &dom, const double *q, std::size_t stride) const;

private:
	MetricKind kind_ = MetricKind::None;
	double param_ = kInfinity;      // weight (Discrete) or scale (Absolute)
	std::vector<double> weights_;   // PerValue
	double closure_cap_ = kInfinity; // PerValue: 2 * min weight
};

} // namespace dxpriv
