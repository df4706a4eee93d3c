// Units of work of the pair tree's operations and construction (pair_tree_cost.h).
#include "core/pair_tree_cost.h"

#include <algorithm>
#include <cmath>

namespace dxpriv {

namespace {

// Arithmetic operations per unit: a pair of 2-d points rated for one cell (its distance, one
// change, one product, the comparison) is one unit.
constexpr double kOpsPerUnit = 25;

// Operations of one direction bound (pair_tree.cpp, direction_bound) in `d` dimensions.
double
direction_ops(double d, PairNorm norm)
{
	const double base = 6 * d;
	switch (norm) {
	case PairNorm::L2:
		return base + 3 * d + 1.5 * d * (d - 1) / 2; // Lagrange's cross terms (vectorised)
	case PairNorm::L1:
		return d <= 3 ? base + std::pow(3.0, d) * 3 * d : base; // the vertices of the orthant pieces
	case PairNorm::LInf:
		break;
	}
	return base;
}

} // namespace

// See pair_tree_cost.h.
PairTreeCosts
pair_tree_costs(std::size_t dims, std::size_t cells, std::size_t varying, std::size_t rows, PairNorm norm)
{
	const double d = static_cast<double>(dims), k = static_cast<double>(cells), v = static_cast<double>(varying),
	             r = static_cast<double>(rows);
	const double dir = direction_ops(d, norm);
	const double residual = 8 * d;
	const double cell_bound = 6 + 2 * (dir + residual);
	PairTreeCosts c;
	c.rate = (3 * d + 15 + 2 * k + 2 * r * k + 1) / kOpsPerUnit;
	c.bound = (6 * d + 4 + v * cell_bound + 2 * r * v) / kOpsPerUnit;
	c.self = (4 + v * 8 + 2 * r * v) / kOpsPerUnit;
	c.joint = (2 * v * (residual + 4 * d) + 2 * r * v) / kOpsPerUnit;
	c.direction = (dir + v * 3 * d) / kOpsPerUnit;
	return c;
}

// See pair_tree_cost.h.
double
pair_tree_setup_work(std::size_t points, std::size_t dims, std::size_t cells)
{
	if (points < 2)
		return 0;
	const double n = static_cast<double>(points), d = static_cast<double>(dims), k = static_cast<double>(cells);
	// levels of a tree of leaves of 8 points: every point is in one node per level
	const double levels = std::ceil(std::log2(std::max(n / 8, 1.0))) + 1;
	// box, split, one fit per cell (measured: work_calibration_test)
	const double per_point_level = 90 + 2 * d + k * (1.2 * (2 * d * d + 7 * d + 8) + 4);
	return (n * levels * per_point_level + n * (d + k)) / kOpsPerUnit;
}

} // namespace dxpriv
