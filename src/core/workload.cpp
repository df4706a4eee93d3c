// Workloads of linear queries over a finite universe: k-way marginals and explicit weights.
#include "core/workload.h"

#include <cmath>
#include <numeric>

#include "core/error.h"

namespace dxpriv {

namespace {

constexpr double kWorkloadTwo53 = 9007199254740992.0;

void
check_caps(std::size_t queries, std::size_t entries)
{
	if (queries > kMaxWorkloadQueries || entries > kMaxWorkloadEntries)
		throw CoreError(ErrorKind::ProgramLimit,
		                "workload has " + std::to_string(queries) + " queries with " + std::to_string(entries) +
		                    " coefficients, over the limit of " + std::to_string(kMaxWorkloadQueries) + " queries and " +
		                    std::to_string(kMaxWorkloadEntries) + " coefficients",
		                "Use lower-order marginals, fewer columns or coarser domains.");
}

// Calls fn(subset) for every k-subset of {0..c-1} in lexicographic order.
template <class Fn>
void
for_each_subset(std::size_t c, std::size_t k, Fn fn)
{
	std::vector<std::size_t> s(k);
	std::iota(s.begin(), s.end(), 0);
	while (true) {
		fn(s);
		std::size_t i = k;
		while (i > 0 && s[i - 1] == c - k + i - 1)
			--i;
		if (i == 0)
			return;
		++s[i - 1];
		for (std::size_t j = i; j < k; ++j)
			s[j] = s[j - 1] + 1;
	}
}

} // namespace

// See workload.h.
std::vector<double>
Workload::dense(std::size_t k) const
{
	std::vector<double> q(universe, 0.0);
	const WorkloadQuery &wq = queries.at(k);
	for (std::size_t e = 0; e < wq.index.size(); ++e)
		q[wq.index[e]] = static_cast<double>(wq.units[e]) * grid;
	return q;
}

// See workload.h.
__int128
Workload::exact_units(std::size_t k, const std::vector<std::int64_t> &counts) const
{
	const WorkloadQuery &wq = queries.at(k);
	__int128 total = 0;
	for (std::size_t e = 0; e < wq.index.size(); ++e) {
		__int128 term;
		if (__builtin_mul_overflow(static_cast<__int128>(wq.units[e]), static_cast<__int128>(counts.at(wq.index[e])), &term) ||
		    __builtin_add_overflow(total, term, &total))
			throw CoreError(ErrorKind::DataException, "workload answer overflows",
			                "Use smaller weights in the workload.");
	}
	return total;
}

// See workload.h.
double
Workload::answer(std::size_t k, const std::vector<double> &hist) const
{
	const WorkloadQuery &wq = queries.at(k);
	double total = 0;
	for (std::size_t e = 0; e < wq.index.size(); ++e)
		total += static_cast<double>(wq.units[e]) * hist[wq.index[e]];
	return total * grid;
}

// See workload.h.
std::size_t
Workload::entries() const
{
	std::size_t n = 0;
	for (const WorkloadQuery &q : queries)
		n += q.index.size();
	return n;
}

// See workload.h.
Workload
marginal_workload(const SubUniverse &sub, const std::vector<std::string> &column_names, int k)
{
	const std::size_t c = sub.domains.size();
	if (k < 1 || static_cast<std::size_t>(k) > c || column_names.size() != c)
		throw CoreError(ErrorKind::InvalidParameter,
		                "marginal order must be between 1 and the number of columns (" + std::to_string(c) + ")",
		                "Use 'marginals:2' for all two-way marginals of the chosen columns.");
	Workload w;
	w.universe = sub.size();
	// count the queries first (product of the subset's domain sizes, summed over subsets)
	std::size_t nq = 0;
	for_each_subset(c, static_cast<std::size_t>(k), [&](const std::vector<std::size_t> &s) {
		std::size_t cells = 1;
		for (std::size_t col : s)
			cells *= sub.domains[col].size();
		nq += cells;
		check_caps(nq, 0);
	});
	std::size_t nsubsets = 0;
	for_each_subset(c, static_cast<std::size_t>(k), [&](const std::vector<std::size_t> &) { ++nsubsets; });
	check_caps(nq, nsubsets * w.universe);

	std::vector<std::size_t> stride(c, 1);
	for (std::size_t i = c; i-- > 1;)
		stride[i - 1] = stride[i] * sub.domains[i].size();
	for_each_subset(c, static_cast<std::size_t>(k), [&](const std::vector<std::size_t> &s) {
		std::size_t cells = 1;
		for (std::size_t col : s)
			cells *= sub.domains[col].size();
		const std::size_t base = w.queries.size();
		w.queries.resize(base + cells);
		// labels: cell index -> values of the subset's columns (last column fastest)
		for (std::size_t cell = 0; cell < cells; ++cell) {
			std::string label;
			std::size_t rest = cell;
			std::vector<std::size_t> vals(s.size());
			for (std::size_t j = s.size(); j-- > 0;) {
				vals[j] = rest % sub.domains[s[j]].size();
				rest /= sub.domains[s[j]].size();
			}
			for (std::size_t j = 0; j < s.size(); ++j)
				label += (j ? ", " : "") + column_names[s[j]] + "=" + sub.domains[s[j]].label(vals[j]);
			w.queries[base + cell].label = std::move(label);
		}
		for (std::size_t u = 0; u < w.universe; ++u) {
			std::size_t cell = 0;
			for (std::size_t col : s)
				cell = cell * sub.domains[col].size() + (u / stride[col]) % sub.domains[col].size();
			WorkloadQuery &q = w.queries[base + cell];
			q.index.push_back(static_cast<std::uint32_t>(u));
			q.units.push_back(1);
		}
	});
	return w;
}

// See workload.h.
Workload
weight_workload(const SubUniverse &sub, const std::vector<std::vector<double>> &weights)
{
	Workload w;
	w.universe = sub.size();
	if (weights.empty())
		throw CoreError(ErrorKind::InvalidParameter, "workload has no queries",
		                "Give at least one weight vector, one weight per universe point.");
	check_caps(weights.size(), 0);
	bool integer = true;
	for (const auto &q : weights) {
		if (q.size() != w.universe)
			throw CoreError(ErrorKind::InvalidParameter,
			                "weight vector has " + std::to_string(q.size()) + " entries but the universe has " +
			                    std::to_string(w.universe) + " points",
			                "Give one weight per universe point, in row-major order (last column fastest).");
		for (double v : q) {
			if (!std::isfinite(v) || std::fabs(v) > 1e12)
				throw CoreError(ErrorKind::InvalidParameter, "workload weights must be finite and at most 1e12 in absolute value",
				                "Rescale the weight vectors.");
			integer = integer && std::floor(v) == v && std::fabs(v) <= kWorkloadTwo53;
		}
	}
	w.grid = integer ? 1.0 : std::ldexp(1.0, -kWorkloadGridBits);
	std::size_t entries = 0;
	for (std::size_t k = 0; k < weights.size(); ++k) {
		WorkloadQuery q;
		for (std::size_t u = 0; u < w.universe; ++u) {
			const auto units = static_cast<std::int64_t>(std::llround(weights[k][u] / w.grid));
			if (units != 0) {
				q.index.push_back(static_cast<std::uint32_t>(u));
				q.units.push_back(units);
			}
		}
		entries += q.index.size();
		check_caps(weights.size(), entries);
		q.label = "q" + std::to_string(k + 1);
		w.queries.push_back(std::move(q));
	}
	return w;
}

// See workload.h.
std::vector<double>
workload_sensitivities(const SubUniverse &sub, const Workload &w)
{
	std::vector<double> s;
	s.reserve(w.queries.size());
	for (std::size_t k = 0; k < w.queries.size(); ++k)
		s.push_back(generalized_sensitivity(sub, w.dense(k)));
	return s;
}

} // namespace dxpriv
