// Experiment: how much noise each family adds to typical query shapes at the same (epsilon, delta),
// computed from the calibrations (no sampling). Writes CSV to stdout:
//   shape, cells, epsilon, delta, family, max_scale, ci95_half_width (largest over the cells),
//   expected_abs (largest over the cells), bound (truncated_laplace), ratio_ci95_to_laplace
// Shapes (standard-DP metric, presence 1 unless stated): a count; a sum over 0..100; k aggregates
// that one record changes together (k sums of the same column, as a dashboard tile of k measures);
// GROUP BY with g groups (counts; a record moves between two groups); a d_X count on a line metric.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/accuracy.h"
#include "core/approximate_dp.h"

using namespace dxpriv;

namespace {

struct Shape {
	std::string name;
	SubUniverse sub;
	std::vector<std::vector<double>> q;
};

Shape
count_shape()
{
	Shape s{"count", {}, {}};
	s.sub.domains = {Domain::range(0, 9, 1)};
	s.sub.metrics = {ColumnMetric::none()};
	s.sub.presence = 1;
	s.q = {std::vector<double>(10, 1.0)};
	return s;
}

Shape
sum_shape()
{
	Shape s{"sum_0_100", {}, {}};
	s.sub.domains = {Domain::range(0, 100, 1)};
	s.sub.metrics = {ColumnMetric::none()};
	s.sub.presence = 1;
	s.q = {std::vector<double>(101)};
	for (int i = 0; i <= 100; i++)
		s.q[0][i] = i;
	return s;
}

// k measures of the same record (e.g. k sums over 0..10): one record moves every cell.
Shape
measures_shape(int k)
{
	Shape s{"measures_" + std::to_string(k), {}, {}};
	s.sub.domains = {Domain::range(0, 10, 1)};
	s.sub.metrics = {ColumnMetric::none()};
	s.sub.presence = 1;
	for (int j = 0; j < k; j++) {
		std::vector<double> w(11);
		for (int i = 0; i <= 10; i++)
			w[i] = i;
		s.q.push_back(w);
	}
	return s;
}

Shape
grouped_shape(int g)
{
	std::vector<std::string> labels;
	for (int i = 0; i < g; i++)
		labels.push_back("g" + std::to_string(i));
	Shape s{"group_by_" + std::to_string(g), {}, {}};
	s.sub.domains = {Domain::enumerated(labels)};
	s.sub.metrics = {ColumnMetric::discrete(1)};
	s.sub.presence = 1;
	s.q.assign(g, std::vector<double>(g, 0.0));
	for (int i = 0; i < g; i++)
		s.q[i][i] = 1;
	return s;
}

// d_X: a count of ages >= 40 over 18..90 with adjacent ages 0.1 apart, presence 1.
Shape
dx_count_shape()
{
	Shape s{"dx_count_age_ge_40", {}, {}};
	s.sub.domains = {Domain::range(18, 90, 1)};
	s.sub.metrics = {ColumnMetric::absolute(10)};
	s.sub.presence = 1;
	s.q = {std::vector<double>(73)};
	for (int a = 18; a <= 90; a++)
		s.q[0][a - 18] = a >= 40 ? 1 : 0;
	return s;
}

// E|noise| of the family's law at the plan's scale (continuous approximations are fine here:
// the report compares families; ci95 is exact).
double
expected_abs(const LinearNoisePlan &p)
{
	if (p.scale == 0)
		return 0;
	switch (p.family) {
	case NoiseFamily::Gaussian:
		return p.scale * std::sqrt(2.0 / M_PI);
	case NoiseFamily::TruncatedLaplace: {
		const double b = p.scale, T = p.bound;
		return b * (1 - std::exp(-T / b) * (1 + T / b)) / (1 - std::exp(-T / b));
	}
	case NoiseFamily::Laplace:
		break;
	}
	return p.scale;
}

} // namespace

int
main()
{
	std::vector<Shape> shapes{count_shape(), sum_shape(), dx_count_shape(), grouped_shape(10), grouped_shape(50)};
	for (int k : {2, 5, 10, 20, 50})
		shapes.push_back(measures_shape(k));
	std::printf("shape,cells,epsilon,delta,family,max_scale,ci95_half_width,expected_abs,bound,ratio_ci95_to_laplace\n");
	for (const Shape &s : shapes)
		for (double eps : {0.1, 1.0})
			for (double delta : {1e-6, 1e-9}) {
				double laplace_ci = 0;
				for (NoiseFamily f : {NoiseFamily::Laplace, NoiseFamily::Gaussian, NoiseFamily::TruncatedLaplace}) {
					const MultiLinearPlan plan =
					    plan_multi_linear_noise(s.sub, s.q, eps, delta, f, AllocationStrategy::MinTotalVariance);
					double scale = 0, ci = 0, ea = 0, bound = 0;
					for (const LinearNoisePlan &c : plan.cells) {
						scale = std::max(scale, c.scale);
						ci = std::max(ci, confidence_half_width(c));
						ea = std::max(ea, expected_abs(c));
						bound = std::max(bound, c.bound);
					}
					if (f == NoiseFamily::Laplace)
						laplace_ci = ci;
					std::printf("%s,%zu,%g,%g,%s,%.6g,%.6g,%.6g,%.6g,%.4f\n", s.name.c_str(), s.q.size(), eps, delta,
					            noise_family_name(f), scale, ci, ea, bound, laplace_ci > 0 ? ci / laplace_ci : 0.0);
				}
			}
	return 0;
}
