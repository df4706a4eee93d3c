// The work a statement's analysis does before its first pair search, over one l1/l2/linf points
// column under the pair tree: evaluating its expressions at every point and building the first
// tree (its fits). Known from the sizes alone, it is checked against the statement's work budget
// (work_budget.h) before any of it is done.
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
	double setup = 0;       // pair_tree_setup_work of the first tree (the cells' weights)
	double total() const { return evaluation + setup; }
};

// The up-front work of a statement with `expressions` expressions evaluated per point and `cells`
// output cells over sub (applies false, and nothing counted, when the pair tree will not search it).
UpFrontWork upfront_work(const SubUniverse &sub, std::size_t expressions, std::size_t cells);

// When applies: refuses (CoreError(ProgramLimit), with the points, cells, expressions, the units
// and the limit) if the evaluation plus the first tree's construction do not fit in what is left
// of the current budget (work_budget.h; without one, nothing), else charges the evaluation (the
// tree charges its construction when it is built). Call before evaluating.
void charge_upfront_work(const UpFrontWork &w, std::size_t expressions, std::size_t cells);

} // namespace dxpriv
