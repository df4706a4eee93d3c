// Generalized sensitivity of a per-row weight over the sub-universe of referenced columns.
#include "core/sensitivity.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace dxpriv {

namespace {

// Rejects a sub-universe whose parts do not fit together before any enumeration.
void
check_shape(const SubUniverse &sub)
{
	if (sub.domains.size() != sub.metrics.size())
		throw CoreError(ErrorKind::Internal, "sub-universe has a different number of domains and metrics");
}

} // namespace

// Number of points of the sub-universe, capped at kMaxSubUniverse.
std::size_t
SubUniverse::size() const
{
	check_shape(*this);
	std::size_t n = 1;
	for (const Domain &d : domains) {
		if (d.size() > kMaxSubUniverse / n)
			throw CoreError(ErrorKind::ProgramLimit,
			                "the referenced columns have more than 2000000 combinations of domain values",
			                "Declare coarser domain granularities or reference fewer protected columns.");
		n *= d.size();
	}
	return n;
}

// Flat row-major index -> per-column point indexes (last column varies fastest).
std::vector<std::size_t>
SubUniverse::unflatten(std::size_t flat) const
{
	if (flat >= size())
		throw CoreError(ErrorKind::Internal, "sub-universe index out of range");
	std::vector<std::size_t> idx(domains.size());
	for (std::size_t c = domains.size(); c-- > 0;) {
		idx[c] = flat % domains[c].size();
		flat /= domains[c].size();
	}
	return idx;
}

// Exact S(q): the max ratio over presence edges and one-column edges of the record path metric.
double
generalized_sensitivity(const SubUniverse &sub, const std::vector<double> &q)
{
	const std::size_t n = sub.size();
	if (q.size() != n)
		throw CoreError(ErrorKind::Internal, "query weight vector does not match the sub-universe size");
	if (!(sub.presence > 0))
		throw CoreError(ErrorKind::InvalidParameter, "presence distance must be positive",
		                "Give a positive number, or infinity for the bounded model (public row count).");
	double work = 0;
	for (std::size_t c = 0; c < sub.domains.size(); c++) {
		sub.metrics[c].validate(sub.domains[c]);
		work += static_cast<double>(n / sub.domains[c].size()) * sub.metrics[c].sensitivity_line_cost(sub.domains[c]);
	}
	if (work > kMaxSensitivityWork)
		throw CoreError(ErrorKind::ProgramLimit, "computing the sensitivity of this query needs more than 2e9 distance evaluations",
		                "Declare fewer points or coarser domains, or use a metric with few edges (absolute, graph, theta1).");

	double s = 0;
	for (double w : q) {
		if (!std::isfinite(w))
			throw CoreError(ErrorKind::DataException, "weight of the query is not finite for some domain value",
			                "Check the query expression for overflow or division by zero on the declared domains.");
		s = std::max(s, std::fabs(w) / sub.presence); // presence edge u -> ⊥, q(⊥) = 0
	}

	// Lines along column c: all points equal except column c, which moves by `stride` in q.
	std::size_t stride = n;
	for (std::size_t c = 0; c < sub.domains.size(); c++) {
		const std::size_t k = sub.domains[c].size();
		stride /= k;
		if (k < 2 || sub.metrics[c].kind() == MetricKind::None)
			continue;
		const std::size_t block = k * stride;
		for (std::size_t outer = 0; outer < n; outer += block)
			for (std::size_t r = 0; r < stride; r++)
				s = std::max(s, sub.metrics[c].line_sensitivity(sub.domains[c], q.data() + outer + r, stride, s));
	}
	return s;
}

} // namespace dxpriv
