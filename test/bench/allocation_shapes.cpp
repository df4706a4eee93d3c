// Evidence for issue 11: the 95% half-width of every cell of six query shapes (avg; count + sum;
// GROUP BY avg with 2 and 50 groups; count + sum + avg; 10 mixed cells) under the relative
// default, equal_split and the old optimum (min_total_variance), all at the same query epsilon,
// on the declared domains (test/unit/allocation_shapes.h; the allocation is
// data-independent). Writes allocation_shapes.csv and prints a table.
// Target dxpriv_allocation_shapes (not part of ctest).
//
// Usage: dxpriv_allocation_shapes [--out-dir DIR] [--epsilon EPS]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../unit/allocation_shapes.h"
#include "core/accuracy.h"
#include "core/allocation.h"
#include "core/error.h"

using namespace dxpriv;

int
main(int argc, char **argv)
{
	std::string out_dir = "test/bench/results";
	double epsilon = 0.1;
	for (int i = 1; i + 1 < argc; i += 2) {
		const std::string a = argv[i];
		if (a == "--out-dir")
			out_dir = argv[i + 1];
		else if (a == "--epsilon")
			epsilon = std::atof(argv[i + 1]);
		else {
			std::fprintf(stderr, "unknown option %s\n", a.c_str());
			return 2;
		}
	}
	const std::string path = out_dir + "/allocation_shapes.csv";
	FILE *out = std::fopen(path.c_str(), "w");
	if (!out) {
		std::perror(path.c_str());
		return 1;
	}
	std::fprintf(out, "shape,cell,label,epsilon,hw95_relative,hw95_equal_split,hw95_min_total_variance,"
	                  "scale_relative,scale_equal_split,scale_min_total_variance,epsilon_share_relative\n");
	int worse = 0;
	try {
		for (const auto &shape : testing::allocation_shapes(50)) {
			AllocationRequest rel, eq, old;
			rel.strategy = AllocationStrategy::Relative;
			rel.estimates = shape.estimates;
			eq.strategy = AllocationStrategy::EqualSplit;
			old.strategy = AllocationStrategy::MinTotalVariance;
			const MultiLinearPlan p_rel = plan_multi_linear(shape.sub, shape.q, epsilon, rel);
			const MultiLinearPlan p_eq = plan_multi_linear(shape.sub, shape.q, epsilon, eq);
			const MultiLinearPlan p_old = plan_multi_linear(shape.sub, shape.q, epsilon, old);
			std::printf("\n%s (%zu cells, epsilon %g)\n", shape.name.c_str(), shape.q.size(), epsilon);
			std::printf("  %-38s %14s %14s %14s\n", "cell", "relative", "equal_split", "min_total_var");
			for (std::size_t k = 0; k < shape.q.size(); k++) {
				const double h_rel = confidence_half_width(p_rel.cells[k]);
				const double h_eq = confidence_half_width(p_eq.cells[k]);
				const double h_old = confidence_half_width(p_old.cells[k]);
				worse += h_rel > h_eq * (1 + 1e-9);
				std::fprintf(out, "%s,%zu,\"%s\",%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n", shape.name.c_str(),
				             k + 1, shape.labels[k].c_str(), epsilon, h_rel, h_eq, h_old, p_rel.cells[k].scale,
				             p_eq.cells[k].scale, p_old.cells[k].scale, p_rel.epsilon_share[k]);
				// The 50-group shape prints its first two groups only (all are in the CSV).
				if (shape.q.size() <= 10 || k < 4)
					std::printf("  %-38s %14.6g %14.6g %14.6g\n", shape.labels[k].c_str(), h_rel, h_eq, h_old);
				else if (k == 4)
					std::printf("  ... (%zu more cells in the CSV)\n", shape.q.size() - 4);
			}
		}
	} catch (const CoreError &e) {
		std::fprintf(stderr, "error: %s\n", e.what());
		std::fclose(out);
		return 1;
	}
	std::fclose(out);
	std::printf("\ncells noisier than under equal_split: %d\nwrote %s\n", worse, path.c_str());
	return worse == 0 ? 0 : 1;
}
