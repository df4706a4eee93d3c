// One budget of pair-search work (distance evaluations) per statement analysis, shared by every
// pair search of the statement, installed by the caller (the SQL side: dxpriv.analysis_work_limit).
#pragma once

namespace dxpriv {

// Installs a per-thread budget of `limit` units of work (point pairs rated plus node pairs
// bounded by the pair tree, pair_tree.h) for the lifetime of the scope; the previous budget is
// restored by the destructor. Every pair search run while it is installed charges its work to it
// and throws CoreError(ProgramLimit) with its numbers once the statement's total passes the limit
// (without a scope, each search has its own cap of kMaxConstraintWork, as before).
class WorkBudgetScope {
public:
	explicit WorkBudgetScope(double limit);
	~WorkBudgetScope();
	WorkBudgetScope(const WorkBudgetScope &) = delete;
	WorkBudgetScope &operator=(const WorkBudgetScope &) = delete;
	// The work charged to this budget so far.
	double spent() const { return spent_; }
	double limit() const { return limit_; }

private:
	friend double work_budget_charge(double units);
	friend double work_budget_spent();
	friend double work_budget_limit(double fallback);
	double limit_, spent_ = 0;
	WorkBudgetScope *previous_;
};

// Adds `units` to the current thread's budget (none installed: nothing) and returns what is left
// of it afterwards (negative: over the limit; +infinity without a budget). Never throws.
double work_budget_charge(double units);
// The work charged to the current budget (0 without one).
double work_budget_spent();
// The current budget's limit, or `fallback` without one.
double work_budget_limit(double fallback);

} // namespace dxpriv
