// Statistical audit of private partition selection (issue 26): empirical keep rates of the samplers
// (core/partition_selection.h) drawn from the production CSPRNG, against their exact probabilities.
// Writes CSV to stdout: mechanism,epsilon,delta,n,draws,kept,empirical,exact,binomial_sd.
// Usage: dxpriv_partition_audit [epsilon delta draws_for_n1]
#include "core/partition_selection.h"
#include "core/random.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace dxpriv;

int
main(int argc, char **argv)
{
	const double eps = argc > 1 ? std::atof(argv[1]) : 0.5;
	const double delta = argc > 2 ? std::atof(argv[2]) : 1e-5;
	const double draws1 = argc > 3 ? std::atof(argv[3]) : 1e8;
	SystemRandom rng;
	std::printf("mechanism,epsilon,delta,n,draws,kept,empirical,exact,binomial_sd\n");
	for (auto m : {SelectionMechanism::Optimal, SelectionMechanism::Laplace}) {
		PartitionSelector s(m, eps, delta);
		const std::uint64_t last = s.threshold() + 8;
		for (std::uint64_t n = 1; n <= last; ++n) {
			const double p = static_cast<double>(s.keep_probability(n));
			// enough draws for ~2000 expected keeps (at most draws1; the Laplace sampler is slower)
			double want = std::min(draws1 / (m == SelectionMechanism::Laplace ? 10 : 1), std::max(2e4, 2000 / p));
			const std::uint64_t draws = static_cast<std::uint64_t>(want);
			std::uint64_t kept = 0;
			for (std::uint64_t i = 0; i < draws; ++i)
				kept += s.keep(rng, n) ? 1 : 0;
			const double sd = std::sqrt(draws * p * (1 - p));
			std::printf("%s,%g,%g,%llu,%llu,%llu,%.9g,%.9g,%.6g\n", selection_mechanism_name(m), eps, delta,
			            static_cast<unsigned long long>(n), static_cast<unsigned long long>(draws),
			            static_cast<unsigned long long>(kept), static_cast<double>(kept) / draws, p, sd);
			if (n > 12 && p == 1.0)
				break;
		}
	}
	return 0;
}
