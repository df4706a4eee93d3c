// The per-statement budget of pair-search work (work_budget.h).
#include "core/work_budget.h"

#include <limits>

namespace dxpriv {

namespace {
thread_local WorkBudgetScope *current_budget = nullptr;
} // namespace

// See work_budget.h.
WorkBudgetScope::WorkBudgetScope(double limit) : limit_(limit), previous_(current_budget)
{
	current_budget = this;
}

// See work_budget.h.
WorkBudgetScope::~WorkBudgetScope()
{
	current_budget = previous_;
}

// See work_budget.h.
double
work_budget_charge(double units)
{
	if (!current_budget)
		return std::numeric_limits<double>::infinity();
	current_budget->spent_ += units;
	return current_budget->limit_ - current_budget->spent_;
}

// See work_budget.h.
double
work_budget_spent()
{
	return current_budget ? current_budget->spent_ : 0.0;
}

// See work_budget.h.
double
work_budget_limit(double fallback)
{
	return current_budget ? current_budget->limit_ : fallback;
}

} // namespace dxpriv
