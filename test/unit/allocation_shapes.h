// The query shapes of issue 11's allocation evidence (header-only; used by allocation_relative_test
// and test/bench/allocation_shapes.cpp): cells over the declared domains, income
// 0..200000 step 100 with absolute metric scale 10000, a discrete sex F/M (or a 50-value region)
// at distance 1, presence 1. Allocation is data-independent, so no table is needed.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/allocation.h"
#include "core/domain.h"
#include "core/metric.h"
#include "core/sensitivity.h"

namespace dxpriv {
namespace testing {

// One query shape: its cells' weights over the sub-universe, a label per cell, and the
// estimates an analyzer would declare (every avg's (sum, count) with weights {1, mu^2}).
struct QueryShape {
	std::string name;
	SubUniverse sub;
	std::vector<std::vector<double>> q;
	std::vector<std::string> labels;
	std::vector<Estimate> estimates;
};

// Builds the shapes; `groups_big` is the number of groups of the large GROUP BY (50 in the issue).
inline std::vector<QueryShape>
allocation_shapes(std::size_t groups_big = 50)
{
	const Domain income = Domain::range(0, 200000, 100);
	const ColumnMetric income_metric = ColumnMetric::absolute(10000);
	const double mu = 100000; // centre of the avg's weight range over the domain, (0 + 200000) / 2
	std::vector<QueryShape> shapes;

	// Income alone (one column): the cells are functions of the income value.
	auto income_only = [&](const std::string &name) {
		QueryShape s;
		s.name = name;
		s.sub.domains = {income};
		s.sub.metrics = {income_metric};
		s.sub.presence = 1;
		return s;
	};
	const std::size_t n_income = income.size();
	std::vector<double> ones(n_income, 1.0), values(n_income);
	for (std::size_t u = 0; u < n_income; u++)
		values[u] = 100.0 * static_cast<double>(u);
	auto add_avg = [mu](QueryShape &s, std::vector<double> sum_cell, std::vector<double> count_cell,
	                    const std::string &label) {
		const std::size_t k = s.q.size();
		s.q.push_back(std::move(sum_cell));
		s.q.push_back(std::move(count_cell));
		s.labels.push_back(label + ".sum");
		s.labels.push_back(label + ".count");
		s.estimates.push_back(Estimate{{k, k + 1}, {1.0, mu * mu}});
	};

	{ // SELECT avg(income)
		QueryShape s = income_only("avg");
		add_avg(s, values, ones, "avg(income)");
		shapes.push_back(s);
	}
	{ // SELECT count(*), sum(income)
		QueryShape s = income_only("count+sum");
		s.q = {ones, values};
		s.labels = {"count(*)", "sum(income)"};
		shapes.push_back(s);
	}
	// GROUP BY a discrete column of g values: cells (group, sum) and (group, count).
	auto group_avg = [&](const std::string &name, const std::vector<std::string> &keys, const std::string &col) {
		QueryShape s;
		s.name = name;
		s.sub.domains = {Domain::enumerated(keys), income};
		s.sub.metrics = {ColumnMetric::discrete(1), income_metric};
		s.sub.presence = 1;
		const std::size_t n = s.sub.size();
		for (std::size_t g = 0; g < keys.size(); g++) {
			std::vector<double> sum_cell(n, 0.0), count_cell(n, 0.0);
			for (std::size_t i = 0; i < n_income; i++) {
				sum_cell[g * n_income + i] = values[i];
				count_cell[g * n_income + i] = 1;
			}
			add_avg(s, sum_cell, count_cell, col + "=" + keys[g] + " avg(income)");
		}
		return s;
	};
	shapes.push_back(group_avg("group_by_sex_avg", {"F", "M"}, "sex"));
	{
		std::vector<std::string> keys;
		for (std::size_t g = 0; g < groups_big; g++)
			keys.push_back("r" + std::to_string(g));
		shapes.push_back(group_avg("group_by_" + std::to_string(groups_big) + "_avg", keys, "region"));
	}
	{ // SELECT count(*), sum(income), avg(income)
		QueryShape s = income_only("count+sum+avg");
		s.q = {ones, values};
		s.labels = {"count(*)", "sum(income)"};
		add_avg(s, values, ones, "avg(income)");
		shapes.push_back(s);
	}
	{ // ten mixed cells over (sex, income)
		QueryShape s;
		s.name = "10_mixed";
		s.sub.domains = {Domain::enumerated({"F", "M"}), income};
		s.sub.metrics = {ColumnMetric::discrete(1), income_metric};
		s.sub.presence = 1;
		const std::size_t n = s.sub.size();
		auto cell = [&](auto weight) { // weight(is_female, income value)
			std::vector<double> w(n);
			for (std::size_t u = 0; u < n; u++)
				w[u] = weight(u < n_income, 100.0 * static_cast<double>(u % n_income));
			return w;
		};
		auto push = [&](std::vector<double> w, const std::string &label) {
			s.q.push_back(std::move(w));
			s.labels.push_back(label);
		};
		push(cell([](bool, double) { return 1.0; }), "count(*)");
		push(cell([](bool, double v) { return v; }), "sum(income)");
		add_avg(s, cell([](bool, double v) { return v; }), cell([](bool, double) { return 1.0; }), "avg(income)");
		push(cell([](bool, double v) { return v > 100000 ? 1.0 : 0.0; }), "count(*) FILTER (income > 100000)");
		push(cell([](bool f, double v) { return f ? v : 0.0; }), "sum(income) FILTER (sex = 'F')");
		push(cell([](bool f, double) { return f ? 0.0 : 1.0; }), "count(*) FILTER (sex = 'M')");
		push(cell([](bool, double v) { return v / 1000; }), "linear(income / 1000)");
		add_avg(s, cell([](bool f, double v) { return f ? v : 0.0; }), cell([](bool f, double) { return f ? 1.0 : 0.0; }),
		        "avg(income) FILTER (sex = 'F')");
		shapes.push_back(s);
	}
	return shapes;
}

} // namespace testing
} // namespace dxpriv
