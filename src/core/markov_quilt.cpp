// Attribute-private Markov quilt mechanism: moral graph, quilt search, Algorithm 3, max-influence.
#include "core/markov_quilt.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.h"

namespace dxpriv {

namespace {

[[noreturn]] void
invalid_quilt(const std::string &message, const std::string &hint = "")
{
	throw CoreError(ErrorKind::InvalidParameter, message, hint);
}

// Adjacency bit masks of the moral graph: edges without direction, plus an edge between every two
// parents of a common child.
std::vector<unsigned> moral_graph(const AttributeNetwork &net)
{
	const int m = static_cast<int>(net.names.size());
	std::vector<unsigned> adj(m, 0);
	std::vector<std::vector<int>> parents(m);
	for (auto [p, c] : net.edges) {
		adj[p] |= 1u << c;
		adj[c] |= 1u << p;
		parents[c].push_back(p);
	}
	for (const auto &ps : parents)
		for (int a : ps)
			for (int b : ps)
				if (a != b)
					adj[a] |= 1u << b;
	return adj;
}

// The connected component of `start` in the graph restricted to `allowed` (bit masks).
unsigned component(const std::vector<unsigned> &adj, int start, unsigned allowed)
{
	unsigned seen = 1u << start, frontier = seen;
	while (frontier) {
		unsigned next = 0;
		for (int v = 0; v < static_cast<int>(adj.size()); ++v)
			if (frontier & (1u << v))
				next |= adj[v] & allowed & ~seen;
		seen |= next;
		frontier = next;
	}
	return seen;
}

std::vector<int> members(unsigned mask, int m)
{
	std::vector<int> out;
	for (int v = 0; v < m; ++v)
		if (mask & (1u << v))
			out.push_back(v);
	return out;
}

double checked_sensitivity(const ColumnSensitivity &f, const std::vector<int> &columns)
{
	if (columns.empty())
		return 0;
	const double s = f(columns);
	if (!(s >= 0) || !std::isfinite(s))
		invalid_quilt("column sensitivity must be finite and non-negative", "It bounds how much the answer moves.");
	return s;
}

} // namespace

// See markov_quilt.h.
void
validate_network(const AttributeNetwork &net)
{
	const int m = static_cast<int>(net.names.size());
	if (m < 1 || m > kMaxQuiltAttributes)
		invalid_quilt("a Bayesian network must have between 1 and 20 attributes", "Quilts are searched over all subsets of attributes.");
	std::set<std::string> names;
	for (const std::string &n : net.names)
		if (n.empty() || !names.insert(n).second)
			invalid_quilt("attribute names of a Bayesian network must be distinct and non-empty", "Name each attribute once.");
	for (auto [p, c] : net.edges)
		if (p < 0 || p >= m || c < 0 || c >= m || p == c)
			invalid_quilt("an edge of a Bayesian network must join two different declared attributes",
			        "Write edges as [parent, child] with declared names.");
	// Kahn's algorithm: every attribute is removed once its parents are, unless there is a cycle
	std::vector<int> indegree(m, 0);
	for (auto e : net.edges)
		indegree[e.second]++;
	std::vector<int> ready;
	for (int v = 0; v < m; ++v)
		if (indegree[v] == 0)
			ready.push_back(v);
	int removed = 0;
	while (!ready.empty()) {
		int v = ready.back();
		ready.pop_back();
		removed++;
		for (auto e : net.edges)
			if (e.first == v && --indegree[e.second] == 0)
				ready.push_back(e.second);
	}
	if (removed != m)
		invalid_quilt("a Bayesian network must be acyclic", "Edges go from a parent attribute to a child attribute.");
}

// See markov_quilt.h.
MarkovQuiltPlan
plan_markov_quilt(const AttributeNetwork &net, const std::vector<int> &sensitive, const std::vector<int> &queried,
                  const QuiltInfluences &influences, const ColumnSensitivity &sensitivity, double epsilon)
{
	validate_network(net);
	if (!(epsilon > 0) || !std::isfinite(epsilon))
		invalid_quilt("epsilon must be positive and finite", "Use a value such as 1.0.");
	const int m = static_cast<int>(net.names.size());
	if (sensitive.empty())
		invalid_quilt("the Markov quilt mechanism needs at least one sensitive attribute", "Name the attributes to protect.");
	unsigned queried_mask = 0;
	for (int a : queried) {
		if (a < 0 || a >= m)
			invalid_quilt("a queried attribute is not in the network", "Name attributes of the declared network.");
		queried_mask |= 1u << a;
	}
	for (const auto &[i, quilts] : influences)
		for (const auto &[q, e] : quilts)
			if (!(e >= 0) || !std::isfinite(e))
				invalid_quilt("a declared max-influence must be finite and non-negative",
				        "e_Theta(X_Q | X_i) is a maximum of log-ratios of probabilities: 0 or more.");
	const std::vector<unsigned> adj = moral_graph(net);
	const unsigned all = m == 32 ? ~0u : (1u << m) - 1;
	MarkovQuiltPlan plan;
	for (int i : sensitive) {
		if (i < 0 || i >= m)
			invalid_quilt("a sensitive attribute is not in the network", "Name attributes of the declared network.");
		QuiltChoice best;
		best.attribute = i;
		best.scale = checked_sensitivity(sensitivity, members(queried_mask, m)) / epsilon; // trivial quilt
		best.nearby = members(all, m);
		const auto declared = influences.find(i);
		for (unsigned q = 0; q <= all; ++q) {
			if (q & (1u << i))
				continue;
			double e = 0;
			std::vector<int> quilt = members(q, m);
			if (q != 0) {
				if (declared == influences.end())
					continue;
				auto it = declared->second.find(quilt);
				if (it == declared->second.end())
					continue;
				e = it->second;
			}
			if (!(e < epsilon))
				continue;
			const unsigned nearby = component(adj, i, all & ~q);
			const double b = checked_sensitivity(sensitivity, members(queried_mask & nearby, m)) / (epsilon - e);
			if (b < best.scale) {
				best.scale = b;
				best.quilt = quilt;
				best.nearby = members(nearby, m);
				best.influence = e;
			}
		}
		if (best.scale > plan.scale) {
			plan.scale = best.scale;
			plan.binding = static_cast<int>(plan.choices.size());
		}
		plan.choices.push_back(best);
	}
	return plan;
}

// See markov_quilt.h.
int
network_attribute(const AttributeNetwork &net, const std::string &name)
{
	for (size_t i = 0; i < net.names.size(); ++i)
		if (net.names[i] == name)
			return static_cast<int>(i);
	invalid_quilt("\"" + name + "\" is not an attribute of the network", "Use the names listed in the network's \"attributes\".");
}

// See markov_quilt.h.
std::vector<int>
parse_quilt(const AttributeNetwork &net, const std::string &key, int sensitive)
{
	std::vector<int> out;
	size_t pos = 0;
	while (pos <= key.size()) {
		size_t end = key.find(',', pos);
		if (end == std::string::npos)
			end = key.size();
		std::string name = key.substr(pos, end - pos);
		name.erase(0, name.find_first_not_of(' '));
		name.erase(name.find_last_not_of(' ') + 1);
		const int a = network_attribute(net, name);
		if (a == sensitive)
			invalid_quilt("a quilt of \"" + name + "\" must not contain it",
			        "A Markov quilt separates the sensitive attribute from the rest: list other attributes.");
		if (std::find(out.begin(), out.end(), a) != out.end())
			invalid_quilt("quilt \"" + key + "\" lists \"" + name + "\" twice", "Name each member once.");
		out.push_back(a);
		pos = end + 1;
	}
	std::sort(out.begin(), out.end());
	return out;
}

// See markov_quilt.h.
ColumnSensitivity
single_column_sensitivity(int column, double lo, double hi, double records, bool sum)
{
	if (!std::isfinite(lo) || !std::isfinite(hi) || !(lo <= hi))
		invalid_quilt("a column range must be finite with low <= high", "Declare the column's domain with dx.set_column.");
	if (!(records >= 1) || !std::isfinite(records))
		invalid_quilt("the number of records must be finite and at least 1", "The model describes tables of n >= 1 records.");
	const double moved = (hi - lo) * (sum ? records : 1.0);
	return [column, moved](const std::vector<int> &columns) {
		return std::find(columns.begin(), columns.end(), column) != columns.end() ? moved : 0.0;
	};
}

// See markov_quilt.h.
double
max_influence(const std::vector<std::vector<double>> &table)
{
	if (table.size() < 2 || table.front().empty())
		invalid_quilt("a max-influence table needs at least two values of the sensitive parameter");
	for (const auto &row : table) {
		if (row.size() != table.front().size())
			invalid_quilt("every row of a max-influence table must have the same length");
		for (double x : row)
			if (!(x >= 0) || !std::isfinite(x))
				invalid_quilt("probabilities must be finite and non-negative");
	}
	double e = 0;
	for (const auto &a : table)
		for (const auto &b : table)
			for (size_t k = 0; k < a.size(); ++k) {
				if (a[k] == 0)
					continue;
				if (b[k] == 0)
					return INFINITY;
				e = std::max(e, std::log(a[k] / b[k]));
			}
	return e;
}

// See markov_quilt.h.
ColumnSensitivity
count_sensitivity(const std::vector<int> &queried, double records)
{
	if (!(records >= 1) || !std::isfinite(records))
		invalid_quilt("the number of records must be finite and at least 1", "The model describes tables of n >= 1 records.");
	return [queried, records](const std::vector<int> &columns) {
		for (int c : columns)
			if (std::find(queried.begin(), queried.end(), c) != queried.end())
				return records;
		return 0.0;
	};
}

} // namespace dxpriv
