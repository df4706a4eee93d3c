// Column metrics: construction, validation, distances and exact per-line sensitivity.
#include "core/metric.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <mutex>
#include <numeric>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>

#include <Eigen/Core>

#include "core/error.h"
#include "core/progress.h"
#include "core/point_set.h"
#include "core/sensitivity.h"

namespace dxpriv {

// Closed k x k table of a Matrix metric, row-major.
struct MatrixMetricData {
	std::size_t k = 0;
	std::vector<double> d;
};

// Graph metric: adjacency (CSR, each vertex's neighbours by increasing weight) and the
// deduplicated edges, each carrying the shortest-path distance between its endpoints.
struct GraphMetricData {
	std::size_t k = 0;
	std::vector<std::size_t> offset; // k + 1 entries
	std::vector<std::uint32_t> nbr;
	std::vector<double> w;
	std::vector<GraphEdge> edges; // a < b, weight = shortest-path distance (<= declared weight)
};

// Shortest-path rows (Graph distances, Theta1 hop counts) computed on demand. Theta1 rows depend
// on the domain, identified by its kind, size, grid and point set.
struct MetricRowCache {
	std::mutex mu;
	bool keyed = false;
	DomainKind kind = DomainKind::Enumerated;
	std::size_t size = 0;
	double lo = 0, step = 0;
	std::shared_ptr<const PointSet> points;
	std::unordered_map<std::size_t, std::vector<double>> rows;
	std::size_t cells = 0;
};

namespace {

// Most row entries a MetricRowCache keeps (32 MB); beyond it the cache starts afresh.
constexpr std::size_t kMaxCachedCells = std::size_t{1} << 22;

// True for a valid budget weight: strictly positive, possibly +inf, never NaN.
bool
valid_weight(double w)
{
	return w > 0; // false for NaN
}

// Distance between adjacent points i and i+1 under an absolute metric of the given scale.
double
absolute_step(const Domain &dom, std::size_t i, double scale)
{
	return std::fabs(dom.ordinal(i + 1) - dom.ordinal(i)) / scale;
}

// True for the kinds whose points are ordered on a line by their ordinals (increasing in index).
bool
one_dimensional(DomainKind kind)
{
	return kind != DomainKind::Points;
}

// True for the l_p location kinds.
bool
is_lp(MetricKind kind)
{
	return kind == MetricKind::L1 || kind == MetricKind::L2 || kind == MetricKind::LInf;
}

// Copies the line q[0], q[stride], ... into a contiguous vector.
std::vector<double>
gather(const double *q, std::size_t stride, std::size_t k)
{
	std::vector<double> out(k);
	for (std::size_t i = 0; i < k; i++)
		out[i] = q[i * stride];
	return out;
}

// Ordinals of a one-dimensional domain, as a contiguous coordinate axis.
std::vector<double>
ordinals(const Domain &dom)
{
	std::vector<double> out(dom.size());
	for (std::size_t i = 0; i < out.size(); i++)
		out[i] = dom.ordinal(i);
	return out;
}

enum class Norm { L1, L2, L2Scaled, LInf };

// Max over pairs i < j of |q_i - q_j| / max(floor, ||x_i - x_j||) for k points given by D axes
// (ax[d][i] = coordinate d of point i). The norm is summed in dimension order, exactly as
// PointSet computes it, so every ratio uses the same distance as ColumnMetric::distance().
template <Norm N, int D>
double
pair_max(const double *const *ax, std::size_t k, const double *q, double floor)
{
	double s = 0;
	const double total = 0.5 * static_cast<double>(k) * static_cast<double>(k - 1);
	double done = 0, next = kProgressEvery;
	for (std::size_t i = 0; i + 1 < k; i++) {
		done += static_cast<double>(k - 1 - i);
		if (done >= next) { // a cancel may stop a long all-pairs scan here (nothing is half-built)
			report_progress("sensitivity over pairs of points", done, total);
			next = done + kProgressEvery;
		}
		double xi[D];
		for (int d = 0; d < D; d++)
			xi[d] = ax[d][i];
		const double qi = q[i];
		double si = 0;
		for (std::size_t j = i + 1; j < k; j++) {
			double dist = 0;
			if constexpr (N == Norm::L1) {
				for (int d = 0; d < D; d++)
					dist += std::fabs(xi[d] - ax[d][j]);
			} else if constexpr (N == Norm::L2) {
				for (int d = 0; d < D; d++) {
					const double t = xi[d] - ax[d][j];
					dist += t * t;
				}
				dist = std::sqrt(dist);
			} else if constexpr (N == Norm::LInf) {
				for (int d = 0; d < D; d++)
					dist = std::max(dist, std::fabs(xi[d] - ax[d][j]));
			} else {
				double m = 0;
				for (int d = 0; d < D; d++)
					m = std::max(m, std::fabs(xi[d] - ax[d][j]));
				double ss = 0;
				for (int d = 0; d < D; d++) {
					const double t = (xi[d] - ax[d][j]) / m;
					ss += t * t;
				}
				dist = m * std::sqrt(ss);
			}
			const double r = std::fabs(q[j] - qi) / std::max(floor, dist);
			si = r > si ? r : si;
		}
		s = std::max(s, si);
	}
	return s;
}

// Dispatches pair_max on the dimension (1..8).
template <Norm N>
double
pair_max_dims(std::size_t dims, const double *const *ax, std::size_t k, const double *q, double floor)
{
	switch (dims) {
	case 1: return pair_max<N, 1>(ax, k, q, floor);
	case 2: return pair_max<N, 2>(ax, k, q, floor);
	case 3: return pair_max<N, 3>(ax, k, q, floor);
	case 4: return pair_max<N, 4>(ax, k, q, floor);
	case 5: return pair_max<N, 5>(ax, k, q, floor);
	case 6: return pair_max<N, 6>(ax, k, q, floor);
	case 7: return pair_max<N, 7>(ax, k, q, floor);
	case 8: return pair_max<N, 8>(ax, k, q, floor);
	}
	throw CoreError(ErrorKind::Internal, "point dimension out of range");
}

// Max over pairs of |q_i - q_j| / max(floor, D_ij) with D the given norm of the domain's points
// (the absolute ordinal difference on one-dimensional kinds and 1-D points).
double
all_pairs_max(const Domain &dom, const PointSet *ps, Norm norm, const double *q, double floor)
{
	const std::size_t k = dom.size();
	if (!ps || ps->dims() == 1) {
		std::vector<double> axis = ps ? std::vector<double>(ps->axis(0), ps->axis(0) + k) : ordinals(dom);
		const double *ax[1] = {axis.data()};
		return pair_max<Norm::L1, 1>(ax, k, q, floor);
	}
	const double *ax[kMaxPointDims];
	for (std::size_t d = 0; d < ps->dims(); d++)
		ax[d] = ps->axis(d);
	if (norm == Norm::L2 && ps->robust_l2())
		norm = Norm::L2Scaled;
	switch (norm) {
	case Norm::L1: return pair_max_dims<Norm::L1>(ps->dims(), ax, k, q, floor);
	case Norm::L2: return pair_max_dims<Norm::L2>(ps->dims(), ax, k, q, floor);
	case Norm::L2Scaled: return pair_max_dims<Norm::L2Scaled>(ps->dims(), ax, k, q, floor);
	case Norm::LInf: return pair_max_dims<Norm::LInf>(ps->dims(), ax, k, q, floor);
	}
	throw CoreError(ErrorKind::Internal, "unknown norm");
}

// Norm of a location metric kind.
Norm
norm_of(MetricKind kind)
{
	return kind == MetricKind::L1 ? Norm::L1 : kind == MetricKind::L2 ? Norm::L2 : Norm::LInf;
}

// Unscaled distance between points i and j under a norm: the point norm on Points (|difference|
// in 1-D), the absolute ordinal difference on one-dimensional kinds.
double
raw_distance(const Domain &dom, const PointSet *ps, Norm norm, std::size_t i, std::size_t j)
{
	if (!ps)
		return std::fabs(dom.ordinal(i) - dom.ordinal(j));
	switch (norm) {
	case Norm::L1: return ps->l1(i, j);
	case Norm::LInf: return ps->linf(i, j);
	default: return ps->euclid(i, j);
	}
}

// Points of the domain in line order: the identity for one-dimensional kinds, sorted for 1-D points.
std::vector<std::uint32_t>
line_order(const Domain &dom, const PointSet *ps)
{
	if (ps)
		return ps->line_order();
	std::vector<std::uint32_t> order(dom.size());
	std::iota(order.begin(), order.end(), std::uint32_t{0});
	return order;
}

// Calls f(i, j) (i < j) for every pair with Euclidean distance (|ordinal difference| on 1-D
// kinds) at most tau: k-d tree radius search on Points, a sliding window on a line.
template <class F>
void
for_each_threshold_pair(const Domain &dom, const PointSet *ps, double tau, F &&f)
{
	const std::size_t k = dom.size();
	if (ps) {
		for (std::size_t i = 0; i < k; i++)
			ps->for_each_within(i, tau, [&](std::size_t j) {
				if (j > i)
					f(i, j);
			});
		return;
	}
	for (std::size_t i = 0; i < k; i++) {
		const double xi = dom.ordinal(i);
		for (std::size_t j = i + 1; j < k && dom.ordinal(j) - xi <= tau; j++)
			f(i, j);
	}
}

// Max over threshold pairs of |q_i - q_j| on a line: every window [t, r(t)] of points within tau
// of point t contains only threshold pairs, so the answer is the largest window range of q
// (sliding-window max and min, O(k)).
double
threshold_line_max(const std::vector<double> &x, const std::vector<double> &q, double tau)
{
	const std::size_t k = x.size();
	std::deque<std::size_t> mx, mn;
	double s = 0;
	std::size_t r = 0;
	for (std::size_t t = 0; t < k; t++) {
		while (r < k && x[r] - x[t] <= tau) {
			while (!mx.empty() && q[mx.back()] <= q[r])
				mx.pop_back();
			mx.push_back(r);
			while (!mn.empty() && q[mn.back()] >= q[r])
				mn.pop_back();
			mn.push_back(r);
			r++;
		}
		while (mx.front() < t)
			mx.pop_front();
		while (mn.front() < t)
			mn.pop_front();
		s = std::max(s, q[mx.front()] - q[mn.front()]);
	}
	return s;
}

// Dijkstra from src over the graph adjacency: full row when bound is +inf, otherwise only
// vertices within `bound` are settled (the others keep +inf). Neighbour lists are sorted by
// weight, so a vertex stops relaxing at the first edge leading beyond the bound. `touched`
// receives every vertex whose distance was set (for a cheap reset of a reused row).
void
dijkstra(const GraphMetricData &g, std::size_t src, double bound, std::vector<double> &dist,
         std::vector<std::uint32_t> &touched)
{
	using Item = std::pair<double, std::uint32_t>;
	std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
	dist[src] = 0;
	touched.push_back(static_cast<std::uint32_t>(src));
	heap.emplace(0.0, static_cast<std::uint32_t>(src));
	while (!heap.empty()) {
		const auto [du, u] = heap.top();
		heap.pop();
		if (du > dist[u])
			continue;
		for (std::size_t e = g.offset[u]; e < g.offset[u + 1]; e++) {
			const double nd = du + g.w[e];
			if (nd > bound)
				break;
			const std::uint32_t v = g.nbr[e];
			if (nd < dist[v]) {
				if (dist[v] == kInfinity)
					touched.push_back(v);
				dist[v] = nd;
				heap.emplace(nd, v);
			}
		}
	}
}

// One Floyd-Warshall row update row_i[j] = min(row_i[j], dim + row_m[j]) for distinct rows
// (Eigen's packet min: the loop is vectorised at -O2; no NaN can occur here).
void
relax_row(double *row_i, const double *row_m, double dim, std::size_t k)
{
	Eigen::Map<Eigen::ArrayXd> ri(row_i, static_cast<Eigen::Index>(k));
	Eigen::Map<const Eigen::ArrayXd> rm(row_m, static_cast<Eigen::Index>(k));
	ri = ri.min(rm + dim);
}

// Floyd-Warshall steps m in [m0, m1) restricted to the block rows [i0, i1) x columns [j0, j1).
void
fw_block(double *d, std::size_t k, std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1,
         std::size_t m0, std::size_t m1)
{
	for (std::size_t m = m0; m < m1; m++)
		for (std::size_t i = i0; i < i1; i++) {
			const double dim = d[i * k + m];
			if (i != m && dim != kInfinity) // row m itself cannot change through m
				relax_row(d + i * k + j0, d + m * k + j0, dim, j1 - j0);
		}
}

// Shortest-path closure of a symmetric k x k table in place: blocked Floyd-Warshall (diagonal
// block, then its row and column, then the rest, per round), which keeps the working set in cache.
void
floyd_warshall(double *d, std::size_t k)
{
	constexpr std::size_t B = 64;
	for (std::size_t k0 = 0; k0 < k; k0 += B) {
		const std::size_t k1 = std::min(k, k0 + B);
		fw_block(d, k, k0, k1, k0, k1, k0, k1);
		for (std::size_t j0 = 0; j0 < k; j0 += B)
			if (j0 != k0)
				fw_block(d, k, k0, k1, j0, std::min(k, j0 + B), k0, k1);
		for (std::size_t i0 = 0; i0 < k; i0 += B)
			if (i0 != k0)
				fw_block(d, k, i0, std::min(k, i0 + B), k0, k1, k0, k1);
		for (std::size_t i0 = 0; i0 < k; i0 += B)
			for (std::size_t j0 = 0; j0 < k; j0 += B)
				if (i0 != k0 && j0 != k0)
					fw_block(d, k, i0, std::min(k, i0 + B), j0, std::min(k, j0 + B), k0, k1);
	}
}

} // namespace

// Discrete metric: every pair of distinct values is `weight` apart.
ColumnMetric
ColumnMetric::discrete(double weight)
{
	if (!valid_weight(weight))
		throw CoreError(ErrorKind::InvalidParameter, "discrete metric weight must be positive",
		                "Give a positive number, or infinity to protect the column only through presence.");
	ColumnMetric m;
	m.kind_ = MetricKind::Discrete;
	m.param_ = weight;
	return m;
}

// Absolute-difference metric |ordinal(a) - ordinal(b)| / scale.
ColumnMetric
ColumnMetric::absolute(double scale)
{
	if (!std::isfinite(scale) || !(scale > 0))
		throw CoreError(ErrorKind::InvalidParameter, "absolute metric scale must be positive and finite",
		                "Give the distance, in column units, that one unit of epsilon protects.");
	ColumnMetric m;
	m.kind_ = MetricKind::Absolute;
	m.param_ = scale;
	return m;
}

// Per-value budgets combined by the closed min rule of MECHANISMS.md §3.12(c).
ColumnMetric
ColumnMetric::per_value(std::vector<double> weights)
{
	if (weights.empty())
		throw CoreError(ErrorKind::InvalidParameter, "per-value metric has no weights",
		                "Give one budget per domain value.");
	for (double w : weights)
		if (!valid_weight(w))
			throw CoreError(ErrorKind::InvalidParameter, "per-value metric weight must be positive",
			                "Give every domain value a positive budget, or infinity.");
	ColumnMetric m;
	m.kind_ = MetricKind::PerValue;
	m.closure_cap_ = 2 * *std::min_element(weights.begin(), weights.end());
	m.weights_ = std::move(weights);
	return m;
}

// Metric that never protects a value change (only the presence edge protects the column).
ColumnMetric
ColumnMetric::none()
{
	return ColumnMetric();
}

// Explicit table, validated and closed under the triangle inequality by Floyd-Warshall.
ColumnMetric
ColumnMetric::matrix(std::size_t k, std::vector<double> d, bool *closure_changed)
{
	if (k == 0)
		throw CoreError(ErrorKind::InvalidParameter, "matrix metric has no values",
		                "Give a square table with one row and one column per domain value.");
	if (k > kMaxMatrixMetricSize)
		throw CoreError(ErrorKind::ProgramLimit, "matrix metric has more than 4096 values",
		                "Use a graph metric, which stores only the edges, for larger domains.");
	if (d.size() != k * k)
		throw CoreError(ErrorKind::InvalidParameter,
		                "matrix metric has " + std::to_string(d.size()) + " entries but " + std::to_string(k) +
		                    " values need " + std::to_string(k * k),
		                "Give a square table with one row and one column per domain value.");
	for (std::size_t i = 0; i < k; i++)
		for (std::size_t j = 0; j < k; j++) {
			const double v = d[i * k + j];
			const std::string at = " at row " + std::to_string(i + 1) + ", column " + std::to_string(j + 1);
			if (i == j && v != 0)
				throw CoreError(ErrorKind::InvalidParameter, "matrix metric diagonal is not zero" + at,
				                "Every value is at distance 0 from itself.");
			if (i != j && !(v > 0))
				throw CoreError(ErrorKind::InvalidParameter, "matrix metric entry is not positive" + at,
				                "Give a positive distance, or infinity, for every pair of distinct values.");
			if (j > i && !(v == d[j * k + i]))
				throw CoreError(ErrorKind::InvalidParameter, "matrix metric is not symmetric" + at,
				                "Give the same distance for both orders of every pair of values.");
		}
	const std::vector<double> raw = d;
	floyd_warshall(d.data(), k);
	if (closure_changed)
		*closure_changed = d != raw;
	auto data = std::make_shared<MatrixMetricData>();
	data->k = k;
	data->d = std::move(d);
	ColumnMetric out;
	out.kind_ = MetricKind::Matrix;
	out.matrix_ = std::move(data);
	return out;
}

// Shortest-path metric of a weighted undirected graph; precomputes adjacency and edge distances.
ColumnMetric
ColumnMetric::graph(std::size_t k, const std::vector<GraphEdge> &edges)
{
	if (k == 0)
		throw CoreError(ErrorKind::InvalidParameter, "graph metric has no vertices",
		                "Give one vertex per domain value.");
	if (k > kMaxDomainSize)
		throw CoreError(ErrorKind::ProgramLimit, "graph metric has more than 1000000 vertices",
		                "Use a coarser domain.");
	if (edges.size() > kMaxGraphMetricEdges)
		throw CoreError(ErrorKind::ProgramLimit, "graph metric has more than 4000000 edges",
		                "Keep only the edges that define the distances, e.g. a spanning tree or hierarchy.");
	std::vector<GraphEdge> es;
	es.reserve(edges.size());
	for (const GraphEdge &e : edges) {
		if (e.a >= k || e.b >= k)
			throw CoreError(ErrorKind::InvalidParameter,
			                "graph metric edge joins vertex " + std::to_string(std::max(e.a, e.b)) +
			                    ", outside the " + std::to_string(k) + " domain values",
			                "Number vertices from 0 in domain order.");
		if (e.a == e.b)
			throw CoreError(ErrorKind::InvalidParameter, "graph metric edge joins a vertex to itself",
			                "Remove edges whose two ends are the same value.");
		if (!std::isfinite(e.weight) || !(e.weight > 0))
			throw CoreError(ErrorKind::InvalidParameter, "graph metric edge weight must be positive and finite",
			                "Leave out an edge instead of giving it an infinite weight.");
		es.push_back(GraphEdge{std::min(e.a, e.b), std::max(e.a, e.b), e.weight});
	}
	std::sort(es.begin(), es.end(), [](const GraphEdge &x, const GraphEdge &y) {
		return x.a != y.a ? x.a < y.a : x.b != y.b ? x.b < y.b : x.weight < y.weight;
	});
	es.erase(std::unique(es.begin(), es.end(),
	                     [](const GraphEdge &x, const GraphEdge &y) { return x.a == y.a && x.b == y.b; }),
	         es.end());

	auto g = std::make_shared<GraphMetricData>();
	g->k = k;
	g->offset.assign(k + 1, 0);
	for (const GraphEdge &e : es) {
		g->offset[e.a + 1]++;
		g->offset[e.b + 1]++;
	}
	for (std::size_t v = 0; v < k; v++)
		g->offset[v + 1] += g->offset[v];
	g->nbr.resize(2 * es.size());
	g->w.resize(2 * es.size());
	std::vector<std::size_t> fill(g->offset.begin(), g->offset.end() - 1);
	for (const GraphEdge &e : es) {
		g->nbr[fill[e.a]] = static_cast<std::uint32_t>(e.b);
		g->w[fill[e.a]++] = e.weight;
		g->nbr[fill[e.b]] = static_cast<std::uint32_t>(e.a);
		g->w[fill[e.b]++] = e.weight;
	}
	std::vector<std::pair<double, std::uint32_t>> tmp;
	for (std::size_t v = 0; v < k; v++) {
		tmp.clear();
		for (std::size_t e = g->offset[v]; e < g->offset[v + 1]; e++)
			tmp.emplace_back(g->w[e], g->nbr[e]);
		std::sort(tmp.begin(), tmp.end());
		for (std::size_t e = g->offset[v], t = 0; e < g->offset[v + 1]; e++, t++) {
			g->w[e] = tmp[t].first;
			g->nbr[e] = tmp[t].second;
		}
	}
	// Shortest-path distance of every edge: a Dijkstra from each edge's lower endpoint, bounded
	// by the heaviest edge leaving it (an optimal path never exceeds the edge's own weight).
	std::vector<double> dist(k, kInfinity);
	std::vector<std::uint32_t> touched;
	for (std::size_t first = 0; first < es.size();) {
		std::size_t last = first;
		double bound = 0;
		while (last < es.size() && es[last].a == es[first].a)
			bound = std::max(bound, es[last++].weight);
		dijkstra(*g, es[first].a, bound, dist, touched);
		for (std::size_t e = first; e < last; e++)
			es[e].weight = dist[es[e].b];
		for (std::uint32_t v : touched)
			dist[v] = kInfinity;
		touched.clear();
		first = last;
	}
	g->edges = std::move(es);
	ColumnMetric m;
	m.kind_ = MetricKind::Graph;
	m.graph_ = std::move(g);
	m.rows_ = std::make_shared<MetricRowCache>();
	return m;
}

// l_p location metric (p = 1, 2, or 0 for l_inf) divided by scale.
ColumnMetric
ColumnMetric::lp(int p, double scale)
{
	if (p != 0 && p != 1 && p != 2)
		throw CoreError(ErrorKind::InvalidParameter, "location metric norm must be l1, l2 or linf",
		                "Use p = 1, p = 2, or 0 for the maximum norm.");
	if (!std::isfinite(scale) || !(scale > 0))
		throw CoreError(ErrorKind::InvalidParameter, "location metric scale must be positive and finite",
		                "Give the distance, in coordinate units, that one unit of epsilon protects.");
	ColumnMetric m;
	m.kind_ = p == 1 ? MetricKind::L1 : p == 2 ? MetricKind::L2 : MetricKind::LInf;
	m.param_ = scale;
	return m;
}

// Rejects a bad Blowfish threshold or weight; `name` is the metric's name in the message.
static void
check_theta(const char *name, double tau, double weight)
{
	if (!std::isfinite(tau) || !(tau > 0))
		throw CoreError(ErrorKind::InvalidParameter, std::string(name) + " metric threshold must be positive and finite",
		                "Give the distance within which two values are secrets, in coordinate units.");
	if (!valid_weight(weight))
		throw CoreError(ErrorKind::InvalidParameter, std::string(name) + " metric weight must be positive",
		                "Give a positive number, or infinity.");
}

// Blowfish theta1: weight times the hop count in the threshold graph {D <= tau}.
ColumnMetric
ColumnMetric::theta1(double tau, double weight)
{
	check_theta("theta1", tau, weight);
	ColumnMetric m;
	m.kind_ = MetricKind::Theta1;
	m.param_ = weight;
	m.tau_ = tau;
	m.rows_ = std::make_shared<MetricRowCache>();
	return m;
}

// Blowfish theta2: weight * max(1, D / tau) between distinct values.
ColumnMetric
ColumnMetric::theta2(double tau, double weight)
{
	check_theta("theta2", tau, weight);
	ColumnMetric m;
	m.kind_ = MetricKind::Theta2;
	m.param_ = weight;
	m.tau_ = tau;
	return m;
}

// Shortest-path distance (Graph) or hop count (Theta1) from the row of min(i, j), which keeps
// the result exactly symmetric; rows are cached per domain.
double
ColumnMetric::path_distance(const Domain &dom, std::size_t i, std::size_t j) const
{
	const std::size_t src = std::min(i, j), dst = std::max(i, j);
	const std::size_t k = dom.size();
	std::lock_guard<std::mutex> lock(rows_->mu);
	MetricRowCache &c = *rows_;
	if (kind_ == MetricKind::Theta1 &&
	    !(c.keyed && c.kind == dom.kind_ && c.size == k && c.lo == dom.lo_ && c.step == dom.step_ &&
	      c.points == dom.points_)) {
		c.rows.clear();
		c.cells = 0;
		c.keyed = true;
		c.kind = dom.kind_;
		c.size = k;
		c.lo = dom.lo_;
		c.step = dom.step_;
		c.points = dom.points_;
	}
	auto it = c.rows.find(src);
	if (it != c.rows.end())
		return it->second[dst];
	if (c.cells + k > kMaxCachedCells) {
		c.rows.clear();
		c.cells = 0;
	}
	std::vector<double> row(k, kInfinity);
	if (kind_ == MetricKind::Graph) {
		std::vector<std::uint32_t> touched;
		dijkstra(*graph_, src, kInfinity, row, touched);
	} else {
		// Breadth-first search over the threshold graph.
		const PointSet *ps = dom.points_.get();
		std::vector<std::size_t> queue{src};
		row[src] = 0;
		for (std::size_t h = 0; h < queue.size(); h++) {
			const std::size_t u = queue[h];
			auto visit = [&](std::size_t v) {
				if (row[v] == kInfinity) {
					row[v] = row[u] + 1;
					queue.push_back(v);
				}
			};
			if (ps) {
				ps->for_each_within(u, tau_, visit);
			} else {
				const double xu = dom.ordinal(u);
				for (std::size_t v = u + 1; v < k && dom.ordinal(v) - xu <= tau_; v++)
					visit(v);
				for (std::size_t v = u; v-- > 0 && xu - dom.ordinal(v) <= tau_;)
					visit(v);
			}
		}
	}
	const double out = row[dst];
	c.cells += k;
	c.rows.emplace(src, std::move(row));
	return out;
}

// Distance between points i and j of dom.
double
ColumnMetric::distance(const Domain &dom, std::size_t i, std::size_t j) const
{
	if (i >= dom.size() || j >= dom.size())
		throw CoreError(ErrorKind::Internal, "metric point index out of range");
	if (i == j)
		return 0;
	switch (kind_) {
	case MetricKind::Discrete:
		return param_;
	case MetricKind::Absolute:
		return std::fabs(dom.ordinal(i) - dom.ordinal(j)) / param_;
	case MetricKind::PerValue:
		if (weights_.size() != dom.size())
			throw CoreError(ErrorKind::Internal, "per-value metric used on a domain of another size");
		return std::min({weights_[i], weights_[j], closure_cap_});
	case MetricKind::None:
		return kInfinity;
	case MetricKind::Matrix:
		if (matrix_->k != dom.size())
			throw CoreError(ErrorKind::Internal, "matrix metric used on a domain of another size");
		return matrix_->d[i * matrix_->k + j];
	case MetricKind::Graph:
		if (graph_->k != dom.size())
			throw CoreError(ErrorKind::Internal, "graph metric used on a domain of another size");
		return path_distance(dom, i, j);
	case MetricKind::L1:
	case MetricKind::L2:
	case MetricKind::LInf:
		return raw_distance(dom, dom.points_.get(), norm_of(kind_), i, j) / param_;
	case MetricKind::Theta1: {
		const double hops = path_distance(dom, i, j);
		return hops == kInfinity ? kInfinity : param_ * hops;
	}
	case MetricKind::Theta2:
		return param_ * std::max(1.0, raw_distance(dom, dom.points_.get(), Norm::L2, i, j) / tau_);
	}
	throw CoreError(ErrorKind::Internal, "unknown metric kind");
}

// Checks that the metric can be used on dom.
void
ColumnMetric::validate(const Domain &dom) const
{
	const std::size_t k = dom.size();
	const PointSet *ps = dom.points_.get();
	if (kind_ == MetricKind::PerValue && weights_.size() != k)
		throw CoreError(ErrorKind::InvalidParameter,
		                "per-value metric has " + std::to_string(weights_.size()) + " weights but the domain has " +
		                    std::to_string(k) + " values",
		                "Give exactly one budget per domain value, in domain order.");
	if (kind_ == MetricKind::Absolute && !one_dimensional(dom.kind()))
		throw CoreError(ErrorKind::InvalidParameter, "absolute metric needs a one-dimensional domain",
		                "Use an l1, l2 or linf metric on a domain of points.");
	if ((kind_ == MetricKind::Absolute || (is_lp(kind_) && !ps)) && k > 1 && !(absolute_step(dom, 0, param_) > 0))
		throw CoreError(ErrorKind::InvalidParameter,
		                std::string(kind_ == MetricKind::Absolute ? "absolute" : "location") +
		                    " metric scale is too large for the domain step",
		                "Use a smaller scale or a coarser domain step.");
	if (is_lp(kind_) && ps && !(0.5 * ps->min_gap() / param_ > 0))
		throw CoreError(ErrorKind::InvalidParameter, "location metric scale is too large for the distances between the points",
		                "Use a smaller scale, or points further apart.");
	if (kind_ == MetricKind::Matrix && matrix_->k != k)
		throw CoreError(ErrorKind::InvalidParameter,
		                "matrix metric has " + std::to_string(matrix_->k) + " values but the domain has " +
		                    std::to_string(k) + " values",
		                "Give one row and one column per domain value, in domain order.");
	if (kind_ == MetricKind::Graph && graph_->k != k)
		throw CoreError(ErrorKind::InvalidParameter,
		                "graph metric has " + std::to_string(graph_->k) + " vertices but the domain has " +
		                    std::to_string(k) + " values",
		                "Give one vertex per domain value, numbered from 0 in domain order.");
}

// Exact max over pairs of |q_i - q_j| / d(i, j) along one line of the sub-universe.
double
ColumnMetric::line_sensitivity(const Domain &dom, const double *q, std::size_t stride, double floor) const
{
	const std::size_t k = dom.size();
	if (k < 2 || kind_ == MetricKind::None)
		return 0;
	const PointSet *ps = dom.points_.get();
	double s = 0;
	switch (kind_) {
	case MetricKind::Discrete: {
		double lo = q[0], hi = q[0];
		for (std::size_t i = 1; i < k; i++) {
			lo = std::min(lo, q[i * stride]);
			hi = std::max(hi, q[i * stride]);
		}
		return hi > lo ? (hi - lo) / param_ : 0;
	}
	case MetricKind::Absolute:
		// A path metric on a line: the maximum ratio is attained on adjacent points.
		for (std::size_t i = 0; i + 1 < k; i++) {
			const double diff = std::fabs(q[(i + 1) * stride] - q[i * stride]);
			if (diff > 0)
				s = std::max(s, diff / absolute_step(dom, i, param_));
		}
		return s;
	case MetricKind::PerValue: {
		if (weights_.size() != k)
			throw CoreError(ErrorKind::Internal, "per-value metric used on a domain of another size");
		// d(i,j) = min(w'_i, w'_j) with w' = min(w, cap). Visit points by decreasing w': every point
		// already visited is at distance w'_i from point i, so a running max/min of q is enough.
		std::vector<std::size_t> order(k);
		std::iota(order.begin(), order.end(), std::size_t{0});
		std::sort(order.begin(), order.end(),
		          [this](std::size_t a, std::size_t b) { return weights_[a] > weights_[b]; });
		double lo = q[order[0] * stride], hi = lo;
		for (std::size_t i : order) {
			const double qi = q[i * stride];
			lo = std::min(lo, qi);
			hi = std::max(hi, qi);
			const double diff = std::max(hi - qi, qi - lo);
			if (diff > 0)
				s = std::max(s, diff / std::min(weights_[i], closure_cap_));
		}
		return s;
	}
	case MetricKind::None:
		break;
	case MetricKind::Matrix: {
		if (matrix_->k != k)
			throw CoreError(ErrorKind::Internal, "matrix metric used on a domain of another size");
		const std::vector<double> qc = gather(q, stride, k);
		const double *d = matrix_->d.data();
		for (std::size_t i = 0; i + 1 < k; i++) {
			double si = 0;
			for (std::size_t j = i + 1; j < k; j++) {
				const double r = std::fabs(qc[i] - qc[j]) / d[i * k + j];
				si = r > si ? r : si;
			}
			s = std::max(s, si);
		}
		return s;
	}
	case MetricKind::Graph:
		if (graph_->k != k)
			throw CoreError(ErrorKind::Internal, "graph metric used on a domain of another size");
		// A path metric: the maximum is attained on the graph's edges.
		for (const GraphEdge &e : graph_->edges)
			s = std::max(s, std::fabs(q[e.a * stride] - q[e.b * stride]) / e.weight);
		return s;
	case MetricKind::L1:
	case MetricKind::L2:
	case MetricKind::LInf: {
		if (!ps || ps->dims() == 1) {
			// On a line every l_p norm is |difference|: a path metric, adjacent points suffice.
			const std::vector<std::uint32_t> order = line_order(dom, ps);
			for (std::size_t t = 0; t + 1 < k; t++) {
				const std::size_t a = order[t], b = order[t + 1];
				const double diff = std::fabs(q[a * stride] - q[b * stride]);
				if (diff > 0)
					s = std::max(s, diff / (raw_distance(dom, ps, Norm::L1, a, b) / param_));
			}
			return s;
		}
		if (pair_tree_applies(dom)) { // the same maximum without rating every pair (pair_tree.h)
			// pairs below floor / scale (in |dq| / D; 1e-12 lower, so that the rounding of the product
			// by the scale never decides) cannot raise the caller's maximum
			const double raw_floor = std::max(floor, 0.0) / param_ * (1 - 1e-12);
			const PairMax best = pair_ratio_max(dom, q, stride, PairExpr::Raw, true, kMaxSensitivityWork, raw_floor);
			if (best.finite)
				return best.value * param_;
		}
		const std::vector<double> qc = gather(q, stride, k);
		return all_pairs_max(dom, ps, norm_of(kind_), qc.data(), 0) * param_;
	}
	case MetricKind::Theta1: {
		if (param_ == kInfinity)
			return 0;
		if (!ps || ps->dims() == 1) {
			const std::vector<std::uint32_t> order = line_order(dom, ps);
			std::vector<double> x(k), qs(k);
			for (std::size_t t = 0; t < k; t++) {
				x[t] = ps ? ps->coord(order[t], 0) : dom.ordinal(order[t]);
				qs[t] = q[order[t] * stride];
			}
			return threshold_line_max(x, qs, tau_) / param_;
		}
		const std::vector<double> qc = gather(q, stride, k);
		for_each_threshold_pair(dom, ps, tau_, [&](std::size_t i, std::size_t j) {
			s = std::max(s, std::fabs(qc[i] - qc[j]));
		});
		return s / param_;
	}
	case MetricKind::Theta2: {
		if (param_ == kInfinity)
			return 0;
		// d = weight * max(tau, D) / tau.
		const std::vector<double> qc = gather(q, stride, k);
		return all_pairs_max(dom, ps, Norm::L2, qc.data(), tau_) * (tau_ / param_);
	}
	}
	return s;
}

// Enumerates a sufficient edge set whose shortest-path closure is the metric.
void
ColumnMetric::for_each_edge(const Domain &dom,
                            const std::function<void(std::size_t i, std::size_t j, double d)> &fn) const
{
	const std::size_t k = dom.size();
	const PointSet *ps = dom.points_.get();
	auto all_pairs = [&]() {
		for (std::size_t i = 0; i + 1 < k; i++)
			for (std::size_t j = i + 1; j < k; j++) {
				const double d = distance(dom, i, j);
				if (d < kInfinity)
					fn(i, j, d);
			}
	};
	switch (kind_) {
	case MetricKind::None:
		return;
	case MetricKind::Discrete:
	case MetricKind::PerValue:
	case MetricKind::Matrix:
	case MetricKind::Theta2:
		all_pairs();
		return;
	case MetricKind::Absolute: { // distance(dom, i, i + 1), each ordinal computed once
		double here = k > 0 ? dom.ordinal(0) : 0;
		for (std::size_t i = 0; i + 1 < k; i++) {
			const double next = dom.ordinal(i + 1);
			fn(i, i + 1, std::fabs(here - next) / param_);
			here = next;
		}
		return;
	}
	case MetricKind::L1:
	case MetricKind::L2:
	case MetricKind::LInf: {
		if (ps && ps->dims() > 1) {
			all_pairs();
			return;
		}
		const std::vector<std::uint32_t> order = line_order(dom, ps);
		for (std::size_t t = 0; t + 1 < k; t++) {
			const std::size_t a = std::min(order[t], order[t + 1]), b = std::max(order[t], order[t + 1]);
			const double d = distance(dom, a, b);
			if (d < kInfinity)
				fn(a, b, d);
		}
		return;
	}
	case MetricKind::Graph:
		if (graph_->k != k)
			throw CoreError(ErrorKind::Internal, "graph metric used on a domain of another size");
		for (const GraphEdge &e : graph_->edges)
			fn(e.a, e.b, e.weight);
		return;
	case MetricKind::Theta1:
		if (param_ == kInfinity)
			return;
		for_each_threshold_pair(dom, ps, tau_, [&](std::size_t i, std::size_t j) { fn(i, j, param_); });
		return;
	}
	throw CoreError(ErrorKind::Internal, "unknown metric kind");
}

// Smallest edge distance (see metric.h).
double
ColumnMetric::min_edge_distance(const Domain &dom) const
{
	const std::size_t k = dom.size();
	const PointSet *ps = dom.points_.get();
	double best = kInfinity;
	if (is_lp(kind_) && ps && ps->dims() > 1) {
		// every l_p norm is at least the gap of one coordinate: |x_i - x_j| / scale <= distance(i, j)
		const double *x = ps->axis(0);
		std::vector<std::uint32_t> order(k);
		for (std::size_t i = 0; i < k; i++)
			order[i] = static_cast<std::uint32_t>(i);
		std::sort(order.begin(), order.end(), [x](std::uint32_t a, std::uint32_t b) { return x[a] < x[b]; });
		for (std::size_t s = 0; s + 1 < k; s++)
			for (std::size_t t = s + 1; t < k; t++) {
				if ((x[order[t]] - x[order[s]]) / param_ > best * (1 + 1e-9))
					break;
				const std::size_t i = std::min(order[s], order[t]), j = std::max(order[s], order[t]);
				best = std::min(best, distance(dom, i, j));
			}
		return best;
	}
	for_each_edge(dom, [&best](std::size_t, std::size_t, double d) { best = std::min(best, d); });
	return best;
}

// Approximate number of elementary steps of one line_sensitivity() call on dom.
double
ColumnMetric::line_cost(const Domain &dom) const
{
	const double k = static_cast<double>(dom.size());
	if (dom.size() < 2)
		return 1;
	const PointSet *ps = dom.points_.get();
	const double all_pairs = k * (k - 1) / 2;
	switch (kind_) {
	case MetricKind::None:
		return 1;
	case MetricKind::Discrete:
	case MetricKind::Absolute:
		return k;
	case MetricKind::PerValue:
		return k * std::log2(k);
	case MetricKind::Matrix:
	case MetricKind::Theta2:
		return all_pairs;
	case MetricKind::Graph:
		return static_cast<double>(graph_->edges.size()) + 1;
	case MetricKind::L1:
	case MetricKind::L2:
	case MetricKind::LInf:
		return ps && ps->dims() > 1 ? all_pairs : k * std::log2(k);
	case MetricKind::Theta1: {
		if (!ps || ps->dims() == 1)
			return k * std::log2(k);
		double pairs = 0;
		for_each_threshold_pair(dom, ps, tau_, [&pairs](std::size_t, std::size_t) { pairs += 1; });
		return k * std::log2(k) + 2 * pairs;
	}
	}
	return k;
}

// See metric.h.
double
ColumnMetric::sensitivity_line_cost(const Domain &dom) const
{
	if (!pair_tree_applies(dom))
		return line_cost(dom);
	const double k = static_cast<double>(dom.size());
	return k * std::log2(k);
}

// See metric.h.
bool
ColumnMetric::pair_tree_applies(const Domain &dom) const
{
	const PointSet *ps = dom.points_.get();
	return is_lp(kind_) && ps && ps->dims() > 1 && detail::pair_tree() && dom.size() >= detail::pair_tree_min_points();
}

// See metric.h.
PairMax
ColumnMetric::pair_ratio_max(const Domain &dom, const double *q, std::size_t stride, PairExpr expr, bool tree,
                             double work_cap, double floor) const
{
	const PointSet *ps = dom.points_.get();
	if (!is_lp(kind_) || !ps || ps->dims() < 2)
		throw CoreError(ErrorKind::Internal, "pair maximum asked for a metric that is not l_p on points");
	const PairNorm norm = kind_ == MetricKind::L1 ? PairNorm::L1 : kind_ == MetricKind::L2 ? PairNorm::L2 : PairNorm::LInf;
	return tree ? pair_tree_max(*ps, norm, param_, q, stride, expr, work_cap, floor)
	            : pair_scan_max(*ps, norm, param_, q, stride, expr);
}

// See metric.h.
std::unique_ptr<PairSearch>
ColumnMetric::pair_search(const Domain &dom, const double *w, std::size_t stride, std::size_t cells,
                          double work_cap) const
{
	const PointSet *ps = dom.points_.get();
	if (!pair_tree_applies(dom) || !PairSearch::applies(*ps, w, stride, cells))
		return nullptr;
	const PairNorm norm = kind_ == MetricKind::L1 ? PairNorm::L1 : kind_ == MetricKind::L2 ? PairNorm::L2 : PairNorm::LInf;
	return std::make_unique<PairSearch>(*ps, norm, param_, w, stride, cells, work_cap);
}

} // namespace dxpriv
