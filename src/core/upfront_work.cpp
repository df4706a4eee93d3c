// The up-front work of a statement over a points column under the pair tree (upfront_work.h).
#include "core/upfront_work.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.h"
#include "core/metric.h"
#include "core/pair_tree_cost.h"
#include "core/work_budget.h"

namespace dxpriv {

// See upfront_work.h.
UpFrontWork
upfront_work(const SubUniverse &sub, std::size_t expressions, std::size_t cells)
{
	UpFrontWork w;
	if (sub.domains.size() != 1 || cells == 0 || cells > 16 || !sub.metrics[0].pair_tree_applies(sub.domains[0]))
		return w;
	w.applies = true;
	w.points = static_cast<double>(sub.domains[0].size());
	w.evaluation = w.points * static_cast<double>(expressions) * kEvaluationUnits;
	w.setup = pair_tree_setup_work(sub.domains[0].size(), sub.domains[0].dims(), 1);
	return w;
}

// See upfront_work.h.
void
charge_upfront_work(const UpFrontWork &w, std::size_t expressions)
{
	if (!w.applies)
		return;
	const double limit = work_budget_limit(std::numeric_limits<double>::infinity());
	if (!std::isfinite(limit))
		return;
	const double spent = work_budget_spent();
	if (w.evaluation > limit - spent) {
		char msg[520], hint[400];
		std::snprintf(msg, sizeof msg,
		              "computing the sensitivity of this query needs more than %.3g units of work: before any "
		              "pair search, evaluating its %zu expressions at the %.0f points of its column takes %.3g%s, "
		              "and building a pair tree at least %.3g more",
		              limit, expressions, w.points, w.evaluation,
		              spent > 0 ? " after the statement's earlier work" : "", w.setup);
		std::snprintf(hint, sizeof hint,
		              "Declare fewer points or a coarser domain, ask for fewer aggregates or FILTERed cells per "
		              "query (dx.explain shows the plan of a query that is accepted), or ask a superuser to raise "
		              "dxpriv.analysis_work_limit (now %.3g; the work is counted before any row is read).",
		              limit);
		throw CoreError(ErrorKind::ProgramLimit, msg, hint);
	}
	work_budget_charge(w.evaluation);
}

} // namespace dxpriv
