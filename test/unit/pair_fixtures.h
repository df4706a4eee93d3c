// Random point sets, weights and the switch guard shared by the pair tree and pair search tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#include "core/pair_tree.h"

namespace dxpriv {
namespace testing {

// Restores the defaults whatever the test does.
struct PairSwitchGuard {
	~PairSwitchGuard()
	{
		detail::set_pair_tree(true);
		detail::set_pair_tree_min_points(2048);
		detail::set_pair_generation(true);
	}
};

// n distinct random points of one shape: 0 uniform, 1 grid of spacing grid (ties), 2 clusters of near-duplicates,
// 3 rounded coordinates, 4 a few tight clusters far apart.
inline std::vector<double>
pair_test_points(std::mt19937_64 &rng, std::size_t n, std::size_t dims, int shape, double grid)
{
	std::uniform_real_distribution<double> u(-50, 50);
	std::vector<double> c;
	std::vector<std::vector<double>> seen;
	std::vector<std::vector<double>> centres(4, std::vector<double>(dims));
	for (auto &ce : centres)
		for (double &x : ce)
			x = u(rng);
	while (c.size() < n * dims) {
		std::vector<double> p(dims);
		const std::size_t which = rng() % 4;
		for (std::size_t d = 0; d < dims; d++) {
			double x = u(rng);
			if (shape == 1)
				x = std::round(x / grid);
			else if (shape == 2)
				x = std::round(x / 20) * 20 + 1e-6 * u(rng);
			else if (shape == 3)
				x = std::round(x * 1e4) / 1e4;
			else if (shape == 4)
				x = centres[which][d] + 0.01 * u(rng);
			p[d] = x;
		}
		bool dup = false;
		for (const auto &s : seen)
			dup = dup || s == p;
		if (dup)
			continue;
		seen.push_back(p);
		c.insert(c.end(), p.begin(), p.end());
	}
	return c;
}

// One weight over the points, of kind t.
inline std::vector<double>
pair_test_weight(std::mt19937_64 &rng, const std::vector<double> &c, std::size_t n, std::size_t dims, int t)
{
	std::uniform_real_distribution<double> u(-50, 50);
	const std::size_t axis = static_cast<std::size_t>(rng() % dims), other = (axis + 1) % dims;
	const double cut = u(rng), a = u(rng), b = u(rng);
	std::vector<double> q(n);
	for (std::size_t i = 0; i < n; i++) {
		const double x = c[i * dims + axis], y = c[i * dims + other];
		switch (t) {
		case 0: q[i] = x; break;                                              // linear (a coordinate)
		case 1: q[i] = a * x + b * y + 7; break;                              // affine
		case 2: q[i] = x > cut; break;                                        // indicator
		case 3: q[i] = u(rng); break;                                         // random
		case 4: q[i] = std::min(std::max(x, cut - 10), cut + 10); break;      // clamp
		case 5: q[i] = x * 1e12; break;                                       // huge
		case 6: q[i] = std::sqrt((x - cut) * (x - cut) + (y - a) * (y - a)); break; // cone
		case 7: q[i] = x > cut ? x : 0; break;                                // CASE
		default: q[i] = 3; break;                                             // constant
		}
	}
	return q;
}

} // namespace testing
} // namespace dxpriv
