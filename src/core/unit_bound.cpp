// Unit-level calibration: contribution bounds, the unit-presence ratio and plan_unit_linear.
#include "core/unit_bound.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "core/error.h"

namespace dxpriv {

namespace {

// Rejects a bound value outside 1..kMaxUnitRows.
void
check_bound_value(std::size_t v, const char *what)
{
	if (v < 1 || v > kMaxUnitRows)
		throw CoreError(ErrorKind::InvalidParameter, std::string(what) + " must be between 1 and 100000",
		                "Declare how many rows (or groups) one unit may contribute to a query, e.g. 10.");
}

} // namespace

// See unit_bound.h.
ContributionBound
ContributionBound::for_query(std::size_t k, std::size_t g, std::size_t kg, bool grouped)
{
	check_bound_value(k, "max_rows_per_unit");
	if (g > kMaxUnitRows || kg > kMaxUnitRows)
		check_bound_value(std::max(g, kg), "a per-group contribution bound");
	ContributionBound b;
	b.max_rows = k;
	b.max_groups = grouped ? k : 1; // G and kg: validated above, not applied (unit_bound.h)
	b.max_rows_per_group = k;
	b.validate();
	return b;
}

// See unit_bound.h.
void
ContributionBound::validate() const
{
	check_bound_value(max_rows, "max_rows_per_unit");
	check_bound_value(max_groups, "max_groups_per_unit");
	check_bound_value(max_rows_per_group, "max_rows_per_unit_per_group");
}

// See unit_bound.h.
std::size_t
ContributionBound::rows_in_one_group() const
{
	return std::min(max_rows, max_rows_per_group);
}

// See unit_bound.h.
double
unit_presence_ratio(const std::vector<std::vector<double>> &q, const UnitCells &cells, const ContributionBound &bound,
                    const std::vector<double> &scales, double presence, double epsilon,
                    const std::vector<std::size_t> *cells_of)
{
	const std::size_t m = q.size();
	if (cells.group.size() != m || cells.distinct.size() != m || scales.size() != m)
		throw CoreError(ErrorKind::Internal, "unit cells do not match the query's cells");
	bound.validate();
	if (std::isinf(presence))
		return 0; // no presence edge: the unit's presence is public
	std::vector<std::size_t> all;
	if (!cells_of) {
		all.resize(m);
		for (std::size_t k = 0; k < m; k++)
			all[k] = k;
		cells_of = &all;
	}
	std::size_t groups = 0;
	for (std::size_t k : *cells_of)
		groups = std::max(groups, cells.group.at(k) + 1);
	if (groups == 0)
		return 0;
	// R_g = max_u sum over row cells of |q_k(u)|/b_k; U_g = sum over distinct cells of max_u |q_k(u)|/b_k
	std::vector<double> row_part(groups, 0.0), unit_part(groups, 0.0);
	const std::size_t n = q.empty() ? 0 : q[0].size();
	std::vector<std::vector<std::size_t>> row_cells(groups);
	for (std::size_t k : *cells_of) {
		if (q[k].size() != n)
			throw CoreError(ErrorKind::Internal, "unit cells have weights of different lengths");
		double peak = 0;
		for (double w : q[k])
			peak = std::max(peak, std::fabs(w));
		if (peak == 0)
			continue;
		if (!(scales[k] > 0))
			return kInfinity;
		if (cells.distinct[k])
			unit_part[cells.group[k]] += peak / scales[k];
		else
			row_cells[cells.group[k]].push_back(k);
	}
	for (std::size_t g = 0; g < groups; g++) {
		if (row_cells[g].empty())
			continue;
		for (std::size_t u = 0; u < n; u++) {
			double s = 0;
			for (std::size_t k : row_cells[g])
				s += std::fabs(q[k][u]) / scales[k];
			row_part[g] = std::max(row_part[g], s);
		}
	}
	std::vector<double> by_row = row_part, by_total(groups);
	for (std::size_t g = 0; g < groups; g++)
		by_total[g] = row_part[g] + unit_part[g];
	std::sort(by_row.begin(), by_row.end(), std::greater<double>());
	std::sort(by_total.begin(), by_total.end(), std::greater<double>());
	const std::size_t k = bound.max_rows, kg = bound.rows_in_one_group();
	const std::size_t s_max = std::min({bound.max_groups, k, groups});
	std::vector<double> row_prefix(groups + 1, 0.0); // row_prefix[i]: sum of the i largest R_g
	for (std::size_t g = 0; g < groups; g++)
		row_prefix[g + 1] = row_prefix[g] + by_row[g];
	double best = 0, base = 0;
	for (std::size_t s = 1; s <= s_max; s++) {
		base += by_total[s - 1];
		// the k - s rows left after one row per group, at most kg - 1 more in each of the s groups
		// weighing most (sorted descending: the first `full` get kg - 1, the next the remainder)
		double fill = 0;
		if (kg > 1) {
			const std::size_t rest = k - s;
			const std::size_t full = std::min(s, rest / (kg - 1));
			fill = static_cast<double>(kg - 1) * row_prefix[full];
			if (full < s)
				fill += static_cast<double>(rest - full * (kg - 1)) * by_row[full];
		}
		best = std::max(best, base + fill);
	}
	return best / (epsilon * presence);
}

// See unit_bound.h.
std::vector<std::size_t>
unit_kept_rows(const std::vector<std::uint64_t> &ranks, const ContributionBound &bound)
{
	bound.validate();
	if (bound.max_rows_per_group < bound.max_rows || (bound.max_groups < bound.max_rows && bound.max_groups > 1))
		throw CoreError(ErrorKind::Internal, "the bounding rule keeps rows by rank only (no group limits)");
	std::vector<std::size_t> order(ranks.size());
	for (std::size_t r = 0; r < order.size(); r++)
		order[r] = r;
	std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return ranks[a] < ranks[b]; });
	if (order.size() > bound.max_rows)
		order.resize(bound.max_rows);
	return order;
}

// See unit_bound.h.
std::vector<char>
unit_first_counted(const std::vector<std::size_t> &kept, const std::vector<std::size_t> &group,
                   const std::vector<char> &counted)
{
	if (group.size() != counted.size())
		throw CoreError(ErrorKind::Internal, "unit rows have groups and counted flags of different lengths");
	std::vector<char> flag(kept.size(), 0);
	std::vector<std::size_t> seen;
	for (std::size_t i = 0; i < kept.size(); i++) {
		const std::size_t r = kept[i];
		if (r >= group.size())
			throw CoreError(ErrorKind::Internal, "a kept row is out of range");
		if (!counted[r] || std::find(seen.begin(), seen.end(), group[r]) != seen.end())
			continue;
		seen.push_back(group[r]);
		flag[i] = 1;
	}
	return flag;
}

// See unit_bound.h.
std::vector<std::vector<double>>
rounded_weights(const std::vector<std::vector<double>> &q, const MultiLinearPlan &plan)
{
	if (plan.cells.size() != q.size())
		throw CoreError(ErrorKind::Internal, "plan and weights have different cells");
	std::vector<std::vector<double>> out(q.size());
	for (std::size_t k = 0; k < q.size(); k++) {
		const double grid = plan.cells[k].grid;
		out[k].reserve(q[k].size());
		for (double w : q[k])
			out[k].push_back(static_cast<double>(to_grid_units(w, grid)) * grid);
	}
	return out;
}

// See unit_bound.h.
MultiLinearPlan
plan_unit_linear(const SubUniverse &sub, const std::vector<std::vector<double>> &q, double epsilon,
                 const AllocationRequest &request, const UnitCells &cells, const ContributionBound &bound,
                 UnitCalibration *info)
{
	bound.validate();
	const std::size_t m = q.size();
	if (cells.group.size() != m || cells.distinct.size() != m)
		throw CoreError(ErrorKind::Internal, "unit cells do not match the query's cells");
	bool sums_rows = false;
	for (std::size_t k = 0; k < m; k++)
		sums_rows = sums_rows || !cells.distinct[k];
	const std::size_t n1 = sums_rows ? bound.rows_in_one_group() : 1;
	SubUniverse surrogate = sub;
	surrogate.presence = sub.presence / static_cast<double>(n1);

	// the cells of every budget block (one block: all cells)
	const bool blocked = !request.block_epsilon.empty();
	std::vector<std::vector<std::size_t>> block_cells(blocked ? request.block_epsilon.size() : 1);
	for (std::size_t k = 0; k < m; k++)
		block_cells[blocked ? request.block_of.at(k) : 0].push_back(k);
	auto worst_ratio = [&](const MultiLinearPlan &plan) {
		const std::vector<std::vector<double>> r = rounded_weights(q, plan);
		std::vector<double> scales(m);
		for (std::size_t k = 0; k < m; k++)
			scales[k] = plan.cells[k].scale;
		double worst = 0;
		for (std::size_t b = 0; b < block_cells.size(); b++) {
			const double eps_b = blocked ? request.block_epsilon[b] : epsilon;
			worst = std::max(worst, unit_presence_ratio(r, cells, bound, scales, sub.presence, eps_b, &block_cells[b]));
		}
		return worst;
	};

	double factor = 1;
	MultiLinearPlan plan;
	for (int round = 0;; round++) {
		AllocationRequest scaled = request;
		for (double &e : scaled.block_epsilon)
			e /= factor;
		plan = plan_multi_linear(surrogate, q, epsilon / factor, scaled);
		const double ratio = worst_ratio(plan);
		if (ratio <= 1 + 1e-12)
			break;
		if (round == 8 || std::isinf(ratio))
			throw CoreError(ErrorKind::Internal, "the unit-level calibration did not converge");
		factor *= ratio * (1 + 1e-12);
	}
	if (worst_ratio(plan) > 1 + 1e-9)
		throw CoreError(ErrorKind::Internal, "allocation violates the unit-level privacy condition");
	for (std::size_t k = 0; k < m; k++) {
		const double eps_k = blocked ? request.block_epsilon[request.block_of[k]] : epsilon;
		plan.cells[k].sensitivity = plan.cells[k].scale * eps_k;
	}
	if (info) {
		info->surrogate_rows = n1;
		info->factor = factor;
	}
	return plan;
}

} // namespace dxpriv
