// Delta-method interval of a released average, and the projection of cells onto the columns they use.
#include "core/release_interval.h"

#include <boost/math/distributions/normal.hpp>

#include <algorithm>
#include <cmath>

#include "core/accuracy.h"
#include "core/error.h"

namespace dxpriv {

namespace {

// P(|X| > x) for X = L1 + L2, independent continuous Laplace variables of scales b1, b2 > 0.
double
two_laplace_tail(double b1, double b2, double x)
{
	if (b1 < b2)
		std::swap(b1, b2);
	if (b1 - b2 <= 1e-6 * b1) { // equal scales (the general formula cancels)
		const double b = 0.5 * (b1 + b2);
		return 2 * std::exp(-x / b) * (2 + x / b) / 4;
	}
	const double p = (b1 * b1 * std::exp(-x / b1) - b2 * b2 * std::exp(-x / b2)) / (2 * (b1 * b1 - b2 * b2));
	return 2 * p;
}

// Smallest x with two_laplace_tail(b1, b2, x) <= miss (bisection; the tail decreases in x).
double
two_laplace_half_width(double b1, double b2, double miss)
{
	double lo = 0, hi = (b1 + b2) * (std::log(2 / miss) + 2);
	while (two_laplace_tail(b1, b2, hi) > miss)
		hi *= 2;
	for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
		const double mid = 0.5 * (lo + hi);
		(two_laplace_tail(b1, b2, mid) > miss ? lo : hi) = mid;
	}
	return hi;
}

// The noise law of plan scaled by c >= 0 (same family; scale, grid and bound times c).
LinearNoisePlan
scaled(const LinearNoisePlan &plan, double c)
{
	LinearNoisePlan p = plan;
	p.scale *= c;
	p.grid *= c;
	p.bound *= c;
	return p;
}

} // namespace

// See release_interval.h.
double
average_half_width(const LinearNoisePlan &sum, const LinearNoisePlan &count, double average, double count_answer,
                   double confidence)
{
	if (!(confidence > 0 && confidence < 1))
		throw CoreError(ErrorKind::InvalidParameter, "confidence must lie strictly between 0 and 1");
	if (!std::isfinite(average) || !std::isfinite(count_answer) || !std::isfinite(sum.scale) ||
	    !std::isfinite(count.scale) || !(sum.scale >= 0) || !(count.scale >= 0))
		throw CoreError(ErrorKind::InvalidParameter, "the parts of an average must be finite");
	const double c = std::fabs(average);
	const double denominator = std::max(count_answer, 1.0);
	const bool sum_noisy = sum.scale > 0, count_noisy = count.scale > 0 && c > 0;
	if (!sum_noisy && !count_noisy)
		return 0;
	if (!count_noisy)
		return confidence_half_width(sum, confidence) / denominator;
	if (!sum_noisy)
		return confidence_half_width(scaled(count, c), confidence) / denominator;
	const double miss = 1 - confidence;
	double w = 0;
	switch (sum.family) {
	case NoiseFamily::Gaussian: {
		const double sd = std::hypot(sum.scale, c * count.scale);
		w = boost::math::quantile(boost::math::complement(boost::math::normal_distribution<double>(0, sd), miss / 2));
		break;
	}
	case NoiseFamily::TruncatedLaplace:
		w = std::min(two_laplace_half_width(sum.scale, c * count.scale, miss), sum.bound + c * count.bound);
		break;
	case NoiseFamily::Laplace:
		w = two_laplace_half_width(sum.scale, c * count.scale, miss);
		break;
	}
	return w / denominator;
}

// See release_interval.h.
ProjectedCells
project_to_relevant_columns(const SubUniverse &sub, const std::vector<std::vector<double>> &q)
{
	const std::size_t n = sub.size();
	const std::size_t dims = sub.domains.size();
	for (const std::vector<double> &cell : q)
		if (cell.size() != n)
			throw CoreError(ErrorKind::Internal, "cell weights do not match the sub-universe");
	std::vector<std::size_t> stride(dims, 1);
	for (std::size_t c = dims; c-- > 1;)
		stride[c - 1] = stride[c] * sub.domains[c].size();
	std::vector<char> relevant(dims, 0);
	for (std::size_t c = 0; c < dims; ++c) {
		const std::size_t k = sub.domains[c].size();
		for (std::size_t u = 0; u < n && !relevant[c]; ++u) {
			const std::size_t base = u - ((u / stride[c]) % k) * stride[c]; // same point, column c at 0
			for (const std::vector<double> &cell : q)
				if (cell[u] != cell[base]) {
					relevant[c] = 1;
					break;
				}
		}
	}
	ProjectedCells out;
	out.sub.presence = sub.presence;
	for (std::size_t c = 0; c < dims; ++c)
		if (relevant[c]) {
			out.kept.push_back(c);
			out.sub.domains.push_back(sub.domains[c]);
			out.sub.metrics.push_back(sub.metrics[c]);
		}
	if (out.kept.size() == dims) { // every column matters: the cells as they are
		out.q = q;
		return out;
	}
	out.q.assign(q.size(), {});
	for (std::size_t u = 0; u < n; ++u) {
		bool at_zero = true; // every dropped column at its first point
		for (std::size_t c = 0; c < dims && at_zero; ++c)
			at_zero = relevant[c] || (u / stride[c]) % sub.domains[c].size() == 0;
		if (!at_zero)
			continue;
		for (std::size_t k = 0; k < q.size(); ++k)
			out.q[k].push_back(q[k][u]);
	}
	return out;
}

} // namespace dxpriv
