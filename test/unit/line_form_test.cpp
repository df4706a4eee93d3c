// The closed forms of line_form.h against the per-point reference on the same cells made dense:
// constraint sets entry for entry, sensitivities, plans (scales, sensitivities, grids, epsilon
// shares, the final constraint set), the plain-DP baseline and the per-point tables, bit for bit
// and error for error, on hundreds of random one-column policies (integer ranges with steps 1-7,
// absolute metrics from 1e-300 to 1e300, discrete, none; finite and infinite presence) and
// piecewise-affine queries (counts, sums, averages with WHERE and FILTER ranges, slopes, constants,
// negative weights, zero crossings), and on 200,001- and 10^6-point lines.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/allocation.h"
#include "core/allocation_internal.h"
#include "core/domain.h"
#include "core/error.h"
#include "core/line_form.h"
#include "core/metric.h"
#include "core/point_table.h"
#include "core/sensitivity.h"

namespace dxpriv {
namespace {

using Matrix = std::vector<std::vector<double>>;

std::string
error_of(const CoreError &e)
{
	return std::to_string(static_cast<int>(e.kind())) + e.what();
}

void
expect_same_set(const ConstraintSet &a, const ConstraintSet &b)
{
	EXPECT_EQ(a.cells, b.cells);
	EXPECT_EQ(a.value_start, b.value_start);
	EXPECT_EQ(a.values, b.values);
	EXPECT_EQ(a.index_start, b.index_start);
	EXPECT_EQ(a.indexes, b.indexes);
}

// Everything line_form computes against the per-point functions; returns true when the plan came
// from the closed forms (false: it declined, or the reference failed).
bool
expect_same(const SubUniverse &sub, const LineCells &cells, double epsilon, const AllocationRequest &request)
{
	EXPECT_TRUE(line_cells_exact(sub, cells));
	const Matrix q = cells.dense(sub.domains[0]);
	const MetricKind kind = sub.metrics[0].kind();
	// constraint rows (absolute and none metrics)
	if (kind != MetricKind::Discrete || sub.domains[0].size() < 2) {
		std::string e_ref, e_line;
		ConstraintSet ref, line;
		try {
			ref = build_constraints(sub, q);
		} catch (const CoreError &e) {
			e_ref = error_of(e);
		}
		try {
			line = build_constraints_line(sub, cells);
		} catch (const CoreError &e) {
			e_line = error_of(e);
		}
		EXPECT_EQ(e_ref, e_line);
		if (e_ref.empty() && e_line.empty())
			expect_same_set(ref, line);
	}
	// sensitivities
	for (std::size_t k = 0; k < cells.cells; k++) {
		std::string e_ref, e_line;
		double ref = -1, line = -2;
		try {
			ref = generalized_sensitivity(sub, q[k]);
		} catch (const CoreError &e) {
			e_ref = error_of(e);
		}
		try {
			line = line_sensitivity(sub, cells, k);
		} catch (const CoreError &e) {
			e_line = error_of(e);
		}
		EXPECT_EQ(e_ref, e_line);
		if (e_ref.empty())
			EXPECT_EQ(ref, line) << "cell " << k;
	}
	// plain-DP baseline
	{
		std::string e_ref, e_line;
		double ref = -1;
		std::optional<double> line;
		bool ref_exact = false, line_exact = true;
		try {
			ref = plain_dp_scale(sub, q, epsilon, &ref_exact);
		} catch (const CoreError &e) {
			e_ref = error_of(e);
		}
		try {
			line = plain_dp_scale_line(sub, cells, epsilon, &line_exact);
		} catch (const CoreError &e) {
			e_line = error_of(e);
		}
		if (line || !e_line.empty()) {
			EXPECT_EQ(e_ref, e_line);
			if (e_ref.empty() && line) {
				EXPECT_EQ(ref, *line);
				EXPECT_EQ(ref_exact, line_exact);
			}
		}
	}
	// the plan
	std::string e_ref, e_line;
	MultiLinearPlan ref;
	ConstraintSet ref_set, line_set;
	std::optional<MultiLinearPlan> line;
	try {
		ref = plan_multi_linear(sub, q, epsilon, request, &ref_set);
	} catch (const CoreError &e) {
		e_ref = error_of(e);
	}
	try {
		line = plan_multi_linear_line(sub, cells, epsilon, request, &line_set);
	} catch (const CoreError &e) {
		e_line = error_of(e);
	}
	if (!line && e_line.empty()) { // declined: a scale above 2^40 or a discrete metric with 2+ cells
		if (e_ref.empty()) {
			bool big = kind == MetricKind::Discrete && cells.cells >= 2;
			for (const LinearNoisePlan &c : ref.cells)
				big = big || c.grid != 1;
			EXPECT_TRUE(big) << "declined a plan the closed forms cover";
		}
		return false;
	}
	EXPECT_EQ(e_ref, e_line);
	if (!e_ref.empty() || !line)
		return false;
	EXPECT_EQ(ref.strategy, line->strategy);
	EXPECT_EQ(ref.epsilon_share, line->epsilon_share);
	EXPECT_EQ(ref.cells.size(), line->cells.size());
	for (std::size_t k = 0; k < ref.cells.size() && k < line->cells.size(); k++) {
		EXPECT_EQ(ref.cells[k].scale, line->cells[k].scale) << "cell " << k;
		EXPECT_EQ(ref.cells[k].sensitivity, line->cells[k].sensitivity) << "cell " << k;
		EXPECT_EQ(ref.cells[k].grid, line->cells[k].grid) << "cell " << k;
		EXPECT_EQ(ref.cells[k].integer_weights, line->cells[k].integer_weights) << "cell " << k;
		EXPECT_EQ(ref.cells[k].bound, line->cells[k].bound) << "cell " << k;
	}
	expect_same_set(ref_set, line_set);
	return true;
}

// A random integer line: lower end, step 1-7, 2..max_size points, a metric.
SubUniverse
random_line(std::mt19937_64 &rng, int max_size)
{
	std::uniform_int_distribution<int> size(2, max_size), shape(0, 9), lo(-60, 60), steps(0, 4);
	std::uniform_real_distribution<double> scale(0.3, 30), presence(0.2, 5);
	static const double kSteps[] = {1, 1, 2, 3, 7};
	SubUniverse sub;
	const double step = kSteps[steps(rng)];
	const double l = lo(rng) * step;
	const int k = size(rng);
	sub.domains.push_back(Domain::range(l, l + (k - 1) * step, step));
	switch (shape(rng)) {
	case 0: sub.metrics.push_back(ColumnMetric::discrete(scale(rng))); break;
	case 1: sub.metrics.push_back(ColumnMetric::none()); break;
	case 2: sub.metrics.push_back(ColumnMetric::absolute(k % 3 ? 1e-300 : 1e300)); break;
	case 3: sub.metrics.push_back(ColumnMetric::absolute(std::max(1.0, std::round(scale(rng))))); break;
	default: sub.metrics.push_back(ColumnMetric::absolute(scale(rng))); break;
	}
	sub.presence = shape(rng) < 2 ? kInfinity : presence(rng);
	return sub;
}

// Random pieces and cells: the shapes a WHERE/FILTER range and count/sum/avg make (0, 1, x), and
// constants, slopes and zero crossings.
LineCells
random_cells(std::mt19937_64 &rng, const Domain &dom, std::size_t m)
{
	const std::size_t n = dom.size();
	std::uniform_int_distribution<std::size_t> cuts(0, 5), pos(1, n - 1);
	std::uniform_int_distribution<int> shape(0, 9), small(-4, 4), big(-500, 500);
	LineCells c;
	c.cells = m;
	std::vector<std::size_t> starts{0};
	const std::size_t count = n > 1 ? cuts(rng) : 0;
	for (std::size_t i = 0; i < count; i++)
		starts.push_back(pos(rng));
	std::sort(starts.begin(), starts.end());
	starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
	starts.push_back(n);
	c.start = starts;
	for (std::size_t p = 0; p + 1 < starts.size(); p++)
		for (std::size_t k = 0; k < m; k++) {
			double a = 0, b = 0;
			switch (shape(rng)) {
			case 0: case 1: break;               // filtered out
			case 2: case 3: a = 1; break;        // a count
			case 4: case 5: b = 1; break;        // a sum of the column
			case 6: a = small(rng); break;       // a constant weight
			case 7: b = small(rng); break;       // a slope through 0
			default: a = big(rng); b = small(rng); break; // affine, maybe crossing 0
			}
			c.a.push_back(a);
			c.b.push_back(b);
		}
	return c;
}

AllocationRequest
random_request(std::mt19937_64 &rng, std::size_t m, double epsilon)
{
	std::uniform_int_distribution<int> pick(0, 6);
	AllocationRequest r;
	static const AllocationStrategy kStrategies[] = {
	    AllocationStrategy::Relative, AllocationStrategy::Relative, AllocationStrategy::EqualSplit,
	    AllocationStrategy::EqualScale, AllocationStrategy::BudgetDistribution, AllocationStrategy::MinTotalVariance,
	    AllocationStrategy::Relative};
	r.strategy = kStrategies[pick(rng)];
	if (m >= 2 && pick(rng) < 3) // an average: its sum and count as one estimate
		r.estimates.push_back(Estimate{{0, 1}, {1.0, 2500.0}});
	const std::size_t first_block = r.estimates.empty() ? 1 : 2; // an estimate lies within one block
	if (m > first_block && pick(rng) < 2) { // two budget blocks
		r.block_of.assign(m, 1);
		for (std::size_t k = 0; k < first_block; k++)
			r.block_of[k] = 0;
		r.block_epsilon = {epsilon * 0.25, epsilon * 0.75};
	}
	return r;
}

TEST(LineForm, RandomPoliciesEqualThePerPointPath)
{
	std::mt19937_64 rng(20261128);
	std::uniform_int_distribution<std::size_t> cells(1, 4);
	std::uniform_real_distribution<double> eps(0.05, 3);
	int planned = 0;
	for (int trial = 0; trial < 600; trial++) {
		SCOPED_TRACE("trial " + std::to_string(trial));
		const SubUniverse sub = random_line(rng, trial % 10 == 0 ? 3000 : 60);
		const std::size_t m = trial % 50 == 0 ? 16 : cells(rng);
		const LineCells c = random_cells(rng, sub.domains[0], m);
		const double epsilon = eps(rng);
		planned += expect_same(sub, c, epsilon, random_request(rng, m, epsilon));
	}
	EXPECT_GT(planned, 300); // most plans come from the closed forms
}

// The prefilter switched off (dxpriv.exhaustive_analysis lists every presence row): still equal.
TEST(LineForm, WithoutThePresencePrefilter)
{
	std::mt19937_64 rng(7);
	for (int trial = 0; trial < 60; trial++) {
		SCOPED_TRACE("trial " + std::to_string(trial));
		const SubUniverse sub = random_line(rng, 40);
		const LineCells c = random_cells(rng, sub.domains[0], 2);
		detail::set_presence_prefilter(false);
		expect_same(sub, c, 0.5, AllocationRequest{});
		detail::set_presence_prefilter(true);
	}
}

// The shapes of the benchmarks: avg(income) over 200,001 and 10^6 points (absolute, presence 1),
// and count(*) WHERE id = 5 over 10^6 ids (none and discrete metrics).
TEST(LineForm, LargeDomains)
{
	for (double hi : {200000.0, 999999.0}) {
		SubUniverse sub;
		sub.domains.push_back(Domain::range(0, hi, 1));
		sub.metrics.push_back(ColumnMetric::absolute(1000));
		LineCells avg;
		avg.cells = 2;
		avg.start = {0, sub.domains[0].size()};
		avg.a = {0, 1};
		avg.b = {1, 0};
		AllocationRequest r;
		r.estimates.push_back(Estimate{{0, 1}, {1.0, (hi / 2) * (hi / 2)}});
		EXPECT_TRUE(expect_same(sub, avg, 0.1, r));
		// a WHERE range and a FILTER: sum(income) FILTER (WHERE income < 20000), count(*) WHERE income >= 100
		LineCells ranged;
		ranged.cells = 2;
		ranged.start = {0, 100, 20000, sub.domains[0].size()};
		ranged.a = {0, 0, 0, 1, 0, 1};
		ranged.b = {0, 0, 1, 0, 0, 0};
		EXPECT_TRUE(expect_same(sub, ranged, 0.1, AllocationRequest{}));
	}
	for (int metric = 0; metric < 2; metric++) {
		SubUniverse sub;
		sub.domains.push_back(Domain::range(1, 1000000, 1));
		sub.metrics.push_back(metric ? ColumnMetric::discrete(1) : ColumnMetric::none());
		LineCells eq;
		eq.cells = 1;
		eq.start = {0, 4, 5, 1000000};
		eq.a = {0, 1, 0};
		eq.b = {0, 0, 0};
		EXPECT_TRUE(expect_same(sub, eq, 0.1, AllocationRequest{}));
	}
}

// What line_cells_exact refuses: the closed forms would not be exact there.
TEST(LineForm, ExactnessConditions)
{
	SubUniverse sub;
	sub.domains.push_back(Domain::range(0, 10, 0.5));
	sub.metrics.push_back(ColumnMetric::absolute(1));
	LineCells c;
	c.cells = 1;
	c.start = {0, sub.domains[0].size()};
	c.a = {0};
	c.b = {1};
	EXPECT_FALSE(line_cells_exact(sub, c)); // step 0.5
	sub.domains[0] = Domain::range(0, 10, 1);
	c.start = {0, 11};
	EXPECT_TRUE(line_cells_exact(sub, c));
	c.b = {0.5};
	EXPECT_FALSE(line_cells_exact(sub, c)); // a fractional slope
	c.b = {1e15};
	EXPECT_FALSE(line_cells_exact(sub, c)); // weights beyond 2^48
	c.b = {1};
	c.start = {0, 5, 5, 11};
	c.a = {0, 0, 0};
	c.b = {1, 1, 1};
	EXPECT_FALSE(line_cells_exact(sub, c)); // an empty piece
	c.start = {0, 11};
	c.a = {0};
	c.b = {1};
	sub.metrics[0] = ColumnMetric::lp(2, 1);
	EXPECT_FALSE(line_cells_exact(sub, c)); // another metric
	sub.metrics[0] = ColumnMetric::absolute(1);
	sub.domains.push_back(Domain::range(0, 3, 1));
	sub.metrics.push_back(ColumnMetric::absolute(1));
	EXPECT_FALSE(line_cells_exact(sub, c)); // two columns
	EXPECT_THROW(build_constraints_line(sub, c), CoreError);
}

// The pieces layout gives, at every point, the per-point table's value (and nothing where it has none).
TEST(LineForm, PiecesTableEqualsThePerPointTable)
{
	std::mt19937_64 rng(99);
	std::uniform_int_distribution<int> coin(0, 3), small(-5, 5);
	for (int trial = 0; trial < 300; trial++) {
		SCOPED_TRACE("trial " + std::to_string(trial));
		const SubUniverse sub = random_line(rng, trial % 7 == 0 ? 5000 : 80);
		const Domain &dom = sub.domains[0];
		const LineCells shape = random_cells(rng, dom, 1);
		LineTable t;
		t.start = shape.start;
		for (std::size_t p = 0; p + 1 < t.start.size(); p++) {
			t.present.push_back(coin(rng) != 0);
			t.a.push_back(coin(rng) == 0 ? small(rng) : 0);
			t.b.push_back(coin(rng) < 2 ? 1 : coin(rng) == 0 ? small(rng) : 0);
		}
		ASSERT_TRUE(line_table_exact(dom, t));
		const std::vector<std::optional<double>> ref = t.dense(dom);
		const std::string bytes = encode_line_table(dom, t);
		const std::string dense_bytes = encode_point_table(ref, {dom.size()});
		const PointTableView view(reinterpret_cast<const unsigned char *>(bytes.data()), bytes.size());
		const PointTableView dense_view(reinterpret_cast<const unsigned char *>(dense_bytes.data()), dense_bytes.size());
		ASSERT_EQ(view.size(), dom.size());
		for (std::size_t u = 0; u < dom.size(); u++) {
			double v = -7, w = -7;
			const bool has = view.lookup(u, v), dense_has = dense_view.lookup(u, w);
			ASSERT_EQ(has, ref[u].has_value()) << "point " << u;
			ASSERT_EQ(has, dense_has) << "point " << u;
			if (has) {
				ASSERT_EQ(v, *ref[u]) << "point " << u;
				ASSERT_EQ(v, w) << "point " << u;
			}
		}
		EXPECT_EQ(view.every_point_contributes(), dense_view.every_point_contributes());
		double v1 = 0, v2 = 0;
		bool e1 = false, e2 = false;
		const bool u1 = view.uniform(v1, e1), u2 = dense_view.uniform(v2, e2);
		EXPECT_EQ(u1, u2);
		if (u1 && u2) {
			EXPECT_EQ(v1, v2);
			EXPECT_EQ(e1, e2);
		}
	}
}

// Forged pieces tables are refused by the view.
TEST(LineForm, MalformedPiecesTables)
{
	const std::string good = encode_point_table_pieces(10, {PointTablePiece{0, true, 1, 2}, PointTablePiece{4, false, 0, 0}});
	EXPECT_NO_THROW(PointTableView(reinterpret_cast<const unsigned char *>(good.data()), good.size()));
	std::string bad = good;
	bad[12 + 24] = 0; // the second piece starts at 0 again
	EXPECT_THROW(PointTableView(reinterpret_cast<const unsigned char *>(bad.data()), bad.size()), CoreError);
	bad = good;
	bad[12 + 4] = 2; // a presence flag other than 0 or 1
	EXPECT_THROW(PointTableView(reinterpret_cast<const unsigned char *>(bad.data()), bad.size()), CoreError);
	bad = good.substr(0, good.size() - 1);
	EXPECT_THROW(PointTableView(reinterpret_cast<const unsigned char *>(bad.data()), bad.size()), CoreError);
	bad = good;
	const double inf = std::numeric_limits<double>::infinity();
	std::memcpy(&bad[12 + 8], &inf, 8);
	EXPECT_THROW(PointTableView(reinterpret_cast<const unsigned char *>(bad.data()), bad.size()), CoreError);
	EXPECT_THROW(encode_point_table_pieces(10, {PointTablePiece{1, true, 0, 1}}), CoreError);
}


// Grouped statements (issue 23, not closed-form yet): the per-point reference's rows for cells
// grouped by a second column, which a grouped closed form must reproduce. Each group g owns the
// cells 3g..3g+2 (count, sum, count of an avg) of the line column; the group column's metric
// gives the edges between groups: none (no row touches two groups, and every group's rows are the
// first group's rows shifted, in the same order), discrete (one row per pair of groups and line
// point: G(G-1)/2 x L rows, each the two presence rows over the weight) or absolute (adjacent
// groups only: (G-1) x L rows). The cross-group rows are what the dashboard's grouped tiles pay
// for (doc/performance.md, "Grouped statements").
TEST(LineFormGrouped, ReferenceRowsBetweenGroups)
{
	for (const std::size_t groups : {3u, 7u}) {        // 9 cells (direct rows, prefilter) and 21
		for (const int kind : {0, 1, 2}) {              // group metric: none, discrete(2), absolute(1)
			SCOPED_TRACE("groups " + std::to_string(groups) + " kind " + std::to_string(kind));
			SubUniverse sub;
			const std::size_t line = 21;
			sub.domains = {Domain::range(0, 20, 1), Domain::range(0, static_cast<double>(groups) - 1, 1)};
			sub.metrics = {ColumnMetric::absolute(3),
			               kind == 0 ? ColumnMetric::none()
			                         : kind == 1 ? ColumnMetric::discrete(2) : ColumnMetric::absolute(1)};
			const std::size_t n = sub.size();
			Matrix q(3 * groups, std::vector<double>(n, 0.0));
			for (std::size_t u = 0; u < n; u++) { // row-major: the group column varies fastest
				const std::size_t v = u / groups, g = u % groups;
				q[3 * g][u] = 1;
				q[3 * g + 1][u] = static_cast<double>(v);
				q[3 * g + 2][u] = 1;
			}
			const ConstraintSet c = build_constraints(sub, q);
			std::size_t cross = 0;
			std::vector<std::vector<std::vector<double>>> per_group(groups); // rows touching one group
			for (std::size_t i = 0; i < c.count(); i++) {
				std::vector<std::size_t> touched;
				c.for_each(i, [&](std::size_t k, double a) {
					if (a != 0 && (touched.empty() || touched.back() != k / 3))
						touched.push_back(k / 3);
				});
				if (touched.size() == 2) {
					cross++;
					const double w = kind == 1 ? 2.0 : 1.0;
					const std::vector<double> r = c.row(i);
					for (std::size_t k = 0; k < r.size(); k++) {
						const std::size_t g = k / 3;
						if (g != touched[0] && g != touched[1])
							EXPECT_EQ(r[k], 0.0);
						else if (kind == 1) // same line point on both sides: |q_k(u) - 0| / w
							EXPECT_EQ(r[k], k % 3 == 1 ? r[3 * touched[0] + 1] : 1.0 / w);
					}
					if (kind == 2)
						EXPECT_EQ(touched[1], touched[0] + 1);
				} else {
					ASSERT_EQ(touched.size(), 1u);
					const std::vector<double> r = c.row(i);
					per_group[touched[0]].emplace_back(r.begin() + 3 * touched[0], r.begin() + 3 * touched[0] + 3);
				}
			}
			const std::size_t pairs = kind == 0 ? 0 : kind == 1 ? groups * (groups - 1) / 2 : groups - 1;
			EXPECT_EQ(cross, pairs * line);
			for (std::size_t g = 1; g < groups; g++)
				EXPECT_EQ(per_group[g], per_group[0]);
		}
	}
}

} // namespace
} // namespace dxpriv
