// Work estimates of the noise calibration (see work_estimate.h).
#include "core/work_estimate.h"

#include <cmath>

#include "core/allocation.h"

namespace dxpriv {

namespace {

constexpr double kEdgeCost = 32; // build_constraints' fixed work per edge, before its cells

// Edges of the sufficient edge set of one column metric, counting no further than limit.
double
work_column_edges(const ColumnMetric &metric, const Domain &dom, double limit)
{
	const std::size_t k = dom.size();
	if (k < 2 || metric.kind() == MetricKind::None)
		return 0;
	const double pairs = 0.5 * static_cast<double>(k) * static_cast<double>(k - 1);
	switch (metric.kind()) {
	case MetricKind::Absolute:
		return static_cast<double>(k - 1);
	case MetricKind::Discrete:
		return std::isfinite(metric.distance(dom, 0, 1)) ? pairs : 0;
	case MetricKind::PerValue:
		return pairs;
	case MetricKind::L1:
	case MetricKind::L2:
	case MetricKind::LInf: // all pairs of points in 2+ dimensions (finite scale): the real count
		if (dom.kind() == DomainKind::Points && dom.dims() >= 2)
			return pairs;
		break;
	case MetricKind::Theta2:
		return std::isfinite(metric.distance(dom, 0, 1)) ? pairs : 0;
	default:
		break;
	}
	struct Stop {};
	double count = 0;
	try {
		metric.for_each_edge(dom, [&count, limit](std::size_t, std::size_t, double) {
			if (++count > limit)
				throw Stop{};
		});
	} catch (const Stop &) {
	}
	return count;
}

} // namespace

// See work_estimate.h.
WorkEstimate
calibration_work(const SubUniverse &sub, std::size_t m)
{
	WorkEstimate e;
	const std::size_t n = sub.size();
	if (m == 0)
		return e;
	for (std::size_t c = 0; c < sub.domains.size(); ++c)
		sub.metrics[c].validate(sub.domains[c]);
	if (m == 1) {
		e.cap = kMaxSensitivityWork;
		for (std::size_t c = 0; c < sub.domains.size(); ++c)
			e.edges += static_cast<double>(n / sub.domains[c].size()) * sub.metrics[c].sensitivity_line_cost(sub.domains[c]);
		e.work = e.edges;
		return e;
	}
	e.cap = kMaxConstraintWork;
	e.edges = std::isfinite(sub.presence) ? static_cast<double>(n) : 0.0;
	if (sub.domains.size() == 1 && m <= 16 && sub.metrics[0].pair_tree_applies(sub.domains[0])) {
		// all pairs of an l_p points column: the pair tree finds the binding pair rows (PairPlanner:
		// one search per varying cell and per generation round), at least about k log2 k
		const double k = static_cast<double>(n);
		e.edges += k * std::log2(k);
		e.work = e.edges * kEdgeCost;
		return e;
	}
	for (std::size_t c = 0; c < sub.domains.size(); ++c) {
		const double lines = static_cast<double>(n / sub.domains[c].size());
		const double limit = std::ceil(2 * kMaxConstraintWork / kEdgeCost / lines) + 1; // enough to exceed the cap
		e.edges += work_column_edges(sub.metrics[c], sub.domains[c], limit) * lines;
	}
	e.work = e.edges * kEdgeCost;
	return e;
}

} // namespace dxpriv
