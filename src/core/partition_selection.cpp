// Private partition selection: the optimal mechanism and thresholded discrete Laplace.
#include "core/partition_selection.h"

#include "core/error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <tuple>

namespace dxpriv {

namespace {

constexpr std::uint64_t kMaxTable = 10'000'000;

// Rounding reserve of the optimal table: each step of the recurrence is evaluated in double
// (absolute error below 2^-51 on values in [0, 1]) and floored to a multiple of 2^-64; running the
// recurrence with delta - reserve keeps both (eps, delta) inequalities true for the probabilities
// the sampler actually uses (proof in doc/mechanisms.md, "Open domains").
double
reserve_for(double epsilon)
{
	return (std::exp(epsilon) + 1.0) * std::ldexp(1.0, -50);
}

void
check_budget(double epsilon, double delta)
{
	if (!(epsilon > 0) || !std::isfinite(epsilon) || epsilon > 50)
		throw CoreError(ErrorKind::InvalidParameter, "partition selection epsilon must be in (0, 50]",
		                "Use a positive, finite epsilon.");
	if (!(delta > 0) || !(delta < 1))
		throw CoreError(ErrorKind::InvalidParameter, "partition selection delta must be in (0, 1)",
		                "Set a per-query delta with dx.set_delta.");
}

} // namespace

const char *
selection_mechanism_name(SelectionMechanism m)
{
	return m == SelectionMechanism::Optimal ? "optimal" : "laplace";
}

PartitionBudget
partition_budget(double eps_sel, double delta, double presence, double cross_distance, std::uint64_t k)
{
	check_budget(eps_sel, delta);
	if (k == 0)
		throw CoreError(ErrorKind::InvalidParameter, "a record must contribute to at least one partition");
	if (!(presence > 0) || !(cross_distance > 0))
		throw CoreError(ErrorKind::InvalidParameter, "distances must be positive");
	const bool cross = std::isfinite(cross_distance);
	if (!std::isfinite(presence) && !cross)
		throw CoreError(ErrorKind::InvalidParameter,
		                "an open column needs a finite presence distance or a finite distance between its values",
		                "With presence 'Infinity' declare the open column's metric with a finite weight.");
	PartitionBudget b;
	const double kd = static_cast<double>(k);
	b.sensitivity = std::max(std::isfinite(presence) ? kd / presence : 0.0, cross ? 2.0 / cross_distance : 0.0);
	b.epsilon = eps_sel / b.sensitivity;
	// a changed record leaves its partitions and enters others: a neighbouring pair at a finite
	// distance (<= 2 p0 through bottom, or cross_distance), so 2k partitions move even when the
	// open metric is infinite
	b.max_changed = 2 * k;
	b.delta = delta / static_cast<double>(b.max_changed);
	return b;
}

double
optimal_keep_probability_reference(double epsilon, double delta, std::uint64_t n)
{
	double p = 0;
	const double up = std::exp(epsilon), down = std::exp(-epsilon);
	for (std::uint64_t i = 1; i <= n && p < 1; ++i)
		p = std::min({up * p + delta, 1.0 - down * (1.0 - p - delta), 1.0});
	return p;
}

double
partition_count_sensitivity(const SubUniverse &sub, const std::vector<double> &counted,
                            const std::vector<std::size_t> &group_of_point)
{
	const std::size_t n = sub.size();
	if (counted.size() != n || group_of_point.size() != n)
		throw CoreError(ErrorKind::InvalidParameter, "partition counts do not match the sub-universe");
	double s = 0;
	for (std::size_t u = 0; u < n; ++u) // presence edges: one partition changes by counted[u]
		s = std::max(s, std::fabs(counted[u]) / sub.presence);
	// strides of the row-major flat index (last column fastest)
	const std::size_t k = sub.domains.size();
	std::vector<std::size_t> stride(k, 1);
	for (std::size_t c = k; c-- > 1;)
		stride[c - 1] = stride[c] * sub.domains[c].size();
	double work = 0;
	for (std::size_t c = 0; c < k; ++c) {
		const std::size_t size_c = sub.domains[c].size();
		const std::size_t lines = n / size_c;
		std::vector<std::tuple<std::size_t, std::size_t, double>> edges;
		sub.metrics[c].for_each_edge(sub.domains[c], [&](std::size_t i, std::size_t j, double d) {
			if (std::isfinite(d))
				edges.emplace_back(i, j, d);
		});
		work += static_cast<double>(edges.size()) * static_cast<double>(lines);
		if (work > 5e7)
			throw CoreError(ErrorKind::ProgramLimit, "the partition counts have too many edges to bound",
			                "Group by fewer or coarser declared columns beside the open key.");
		for (std::size_t line = 0; line < lines; ++line) {
			// the flat index of (line with coordinate c = 0): split line into the coordinates before
			// and after c
			const std::size_t before = line / stride[c], after = line % stride[c];
			const std::size_t base = before * stride[c] * size_c + after;
			for (const auto &[i, j, d] : edges) {
				const std::size_t u = base + i * stride[c], v = base + j * stride[c];
				const double delta = group_of_point[u] == group_of_point[v] ? std::fabs(counted[u] - counted[v])
				                                                             : std::fabs(counted[u]) + std::fabs(counted[v]);
				s = std::max(s, delta / d);
			}
		}
	}
	return s;
}

PartitionSelector::PartitionSelector(SelectionMechanism mechanism, double epsilon, double delta)
    : mechanism_(mechanism), epsilon_(epsilon), delta_(delta)
{
	check_budget(epsilon, delta);
	const double reserve = reserve_for(epsilon);
	if (!(delta > 2 * reserve))
		throw CoreError(ErrorKind::InvalidParameter, "partition selection delta is too small",
		                "Use a per-partition delta above 1e-12 (a larger dx.set_delta, or fewer partitions per unit).");
	if (mechanism == SelectionMechanism::Optimal) {
		// pi(n) by the recurrence, with delta less the reserve, each value floored to 2^-64 and
		// kept non-decreasing; the table ends at the first n kept with certainty
		const double d = delta - reserve;
		const double up = std::exp(epsilon), down = std::exp(-epsilon);
		double p = 0;
		keep_below_.push_back(0); // n = 0: never kept
		for (;;) {
			if (keep_below_.size() > kMaxTable)
				throw CoreError(ErrorKind::ProgramLimit, "partition selection needs too many steps",
				                "Use a larger epsilon or delta for the selection.");
			const double next = std::min({up * p + d, 1.0 - down * (1.0 - p - d), 1.0});
			if (next >= 1.0) {
				certain_ = keep_below_.size();
				break;
			}
			p = std::max(p, next);
			// p < 1 in double, so p * 2^64 <= 2^64 - 2^11 fits
			std::uint64_t t = static_cast<std::uint64_t>(std::ldexp(p, 64));
			t = std::max(t, keep_below_.back());
			keep_below_.push_back(t);
		}
	} else {
		scale_ = rational_at_least(1.0 / epsilon); // rounding the scale up only lowers the epsilon
		const long double t = static_cast<long double>(scale_.num) / static_cast<long double>(scale_.den);
		const long double q = std::exp(-1.0L / t);
		// P(1 + Z >= tau) = q^(tau-1) / (1 + q) for tau >= 2; the smallest tau within delta, with a
		// relative margin for the long double evaluation
		const long double target = static_cast<long double>(delta) * (1.0L - 1e-9L);
		long double k = std::ceil(std::log(target * (1.0L + q)) / std::log(q));
		if (!(k >= 1))
			k = 1;
		if (k > 4e18L)
			throw CoreError(ErrorKind::ProgramLimit, "partition selection threshold is out of range");
		tau_ = static_cast<std::int64_t>(k) + 1;
		while (tau_ > 2 && std::pow(q, static_cast<long double>(tau_ - 2)) / (1.0L + q) <= target)
			--tau_;
		while (std::pow(q, static_cast<long double>(tau_ - 1)) / (1.0L + q) > target)
			++tau_;
	}
}

long double
PartitionSelector::keep_probability(std::uint64_t n) const
{
	if (n == 0)
		return 0;
	if (mechanism_ == SelectionMechanism::Optimal) {
		if (n >= certain_)
			return 1;
		return std::ldexp(static_cast<long double>(keep_below_[n]), -64);
	}
	const long double t = static_cast<long double>(scale_.num) / static_cast<long double>(scale_.den);
	const long double q = std::exp(-1.0L / t);
	// keep when Z >= tau - n
	const long double k = static_cast<long double>(tau_) - static_cast<long double>(n);
	if (k >= 1)
		return std::pow(q, k) / (1.0L + q);
	return 1.0L - std::pow(q, 1.0L - k) / (1.0L + q);
}

bool
PartitionSelector::keep(RandomSource &rng, std::uint64_t n) const
{
	if (n == 0)
		return false; // a partition nobody contributes to is never a candidate
	if (mechanism_ == SelectionMechanism::Optimal) {
		if (n >= certain_)
			return true;
		// Uniform draws: one 64-bit word of the statement's random source (the backend's CSPRNG,
		// or the superuser-only test seed), compared as an integer with the table's floor(pi * 2^64)
		// so that P(keep) is exactly keep_below_[n] / 2^64 <= pi(n). A floating-point uniform
		// (53 bits, or a `u <= p` test that keeps at u = 0) would keep with a probability that is
		// not the one the proof bounds.
		return rng.next_u64() < keep_below_[n];
	}
	// the exact discrete Laplace sampler of samplers.h (integer arithmetic only)
	const __int128 noisy = static_cast<__int128>(n) + discrete_laplace(rng, scale_);
	return noisy >= static_cast<__int128>(tau_);
}

std::uint64_t
PartitionSelector::threshold() const
{
	return mechanism_ == SelectionMechanism::Optimal ? certain_ : static_cast<std::uint64_t>(tau_);
}

double
PartitionSelector::laplace_scale() const
{
	return mechanism_ == SelectionMechanism::Laplace
	           ? static_cast<double>(scale_.num) / static_cast<double>(scale_.den)
	           : 0.0;
}

std::string
PartitionSelector::describe() const
{
	std::ostringstream os;
	os.precision(6);
	if (mechanism_ == SelectionMechanism::Optimal)
		os << "optimal(epsilon=" << epsilon_ << ", delta=" << delta_ << ", kept surely from " << certain_
		   << " contributors)";
	else
		os << "laplace(scale=" << laplace_scale() << ", threshold=" << tau_ << ")";
	return os.str();
}

} // namespace dxpriv
