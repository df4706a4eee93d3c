// The work a statement's analysis does before its first pair search, over one l1/l2/linf points
// column under the pair tree: evaluating its expressions at every point. Known from the sizes
// alone, it is charged to the statement's work budget (work_budget.h), or refused, before it is
// done; each pair tree then charges its own construction before building (pair_tree_cost.h), with
// the cells that vary, known only after the evaluation.
#pragma once

#include <cstddef>

#include "core/sensitivity.h"

namespace dxpriv {

// Units of one expression evaluated at one point of the universe (the SQL side's evaluation; about
// the CPU of that many pairs rated, pair_tree_cost.h).
constexpr double kEvaluationUnits = 4;

struct UpFrontWork {
	bool applies = false;   // one points column of 2+ dimensions under the pair tree, 1 to 16 cells
	double points = 0;      // sub.size()
	double evaluation = 0;  // expressions x points x kEvaluationUnits
	double setup = 0;       // pair_tree_setup_work of a tree of one cell: the least any tree costs
};

// The up-front work of a statement with `expressions` expressions evaluated per point and `cells`
// output cells over sub (applies false, and nothing counted, when the pair tree will not search it).
UpFrontWork upfront_work(const SubUniverse &sub, std::size_t expressions, std::size_t cells);

// When applies: refuses (CoreError(ProgramLimit), with the expressions, the points, the units and
// the limit) if the evaluation does not fit in what is left of the current budget (work_budget.h;
// without one, nothing), else charges it. Call before evaluating. The estimate is a lower bound of
// the statement's work (the evaluation always runs), so a statement it refuses would have been
// refused later; the trees' construction is checked by each tree, with its real cells.
void charge_upfront_work(const UpFrontWork &w, std::size_t expressions);

} // namespace dxpriv
