// Exponential-mechanism top-k by peeling (top_k.h).
#include "core/top_k.h"

#include "core/error.h"

#include <string>

namespace dxpriv {

// See top_k.h.
EmBeta
top_k_round_beta(double epsilon, double sensitivity, std::size_t k)
{
	if (k == 0 || k > kMaxTopK)
		throw CoreError(ErrorKind::InvalidParameter, "k must be between 1 and " + std::to_string(kMaxTopK),
		                "Ask for the k most frequent values with a small positive k, e.g. 5");
	return em_beta(epsilon / static_cast<double>(k), sensitivity);
}

// See top_k.h.
std::vector<std::size_t>
top_k_sample(RandomSource &rng, const std::vector<__int128> &utilities, std::uint64_t utility_den, EmBeta beta,
             std::size_t k)
{
	if (k == 0 || k > utilities.size() || k > kMaxTopK)
		throw CoreError(ErrorKind::InvalidParameter,
		                "k must be between 1 and the number of candidates (" + std::to_string(utilities.size()) + ")",
		                "Ask for at most as many values as the column's domain declares");
	std::vector<std::size_t> remaining(utilities.size());
	for (std::size_t r = 0; r < remaining.size(); ++r)
		remaining[r] = r;
	std::vector<std::size_t> chosen;
	chosen.reserve(k);
	std::vector<__int128> u;
	for (std::size_t round = 0; round < k; ++round) {
		u.clear();
		for (std::size_t r : remaining)
			u.push_back(utilities[r]);
		const std::size_t pick = em_sample(rng, u, utility_den, beta);
		chosen.push_back(remaining[pick]);
		remaining.erase(remaining.begin() + static_cast<std::ptrdiff_t>(pick));
	}
	return chosen;
}

// See top_k.h.
long double
top_k_probability(const std::vector<__int128> &utilities, std::uint64_t utility_den, EmBeta beta,
                  const std::vector<std::size_t> &order)
{
	std::vector<char> taken(utilities.size(), 0);
	long double p = 1.0L;
	for (std::size_t c : order) {
		if (c >= utilities.size() || taken[c])
			throw CoreError(ErrorKind::InvalidParameter, "the order must list distinct candidates");
		std::vector<__int128> u;
		std::size_t at = 0;
		for (std::size_t r = 0; r < utilities.size(); ++r) {
			if (taken[r])
				continue;
			if (r == c)
				at = u.size();
			u.push_back(utilities[r]);
		}
		p *= em_probabilities(u, utility_den, beta)[at];
		taken[c] = 1;
	}
	return p;
}

} // namespace dxpriv
