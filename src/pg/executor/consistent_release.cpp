// Consistent grouping-set releases and the dxpriv.postprocess setting (consistent_release.h).
#include "pg/executor/consistent_release.h"

#include "pg/executor/noise_source.h"
#include "pg/guard.h"

#include "core/consistent_projection.h"

extern "C" {
#include "utils/guc.h"
}

#include <cmath>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace dxpriv::pg {

bool guc_postprocess = true;

namespace {

constexpr size_t kMaxRegistered = 64; // statements' aggregates kept (a projection holds atoms^2 doubles)

// One aggregate component over all the sets.
struct Component {
	ConsistentSystem system;
	std::vector<LinearNoisePlan> plans;
	std::unique_ptr<ConsistentProjection> projection; // built at the first release
	// this execution: decided, projected, and the cells' noise in grid units
	bool decided = false, projected = false;
	std::vector<double> noise;
};
struct Entry {
	std::vector<int64> charge_ids;
	std::vector<size_t> offset; // per set, its first cell
	std::vector<int> groups;
	std::vector<std::optional<Component>> components;
};
std::deque<std::shared_ptr<Entry>> registered;
std::unordered_map<int64, std::pair<std::shared_ptr<Entry>, size_t>> by_charge; // (entry, set)
// charge ids whose entry was dropped after some of its cells were released projected in the
// current execution: their remaining cells are refused (never released raw next to projected
// ones, which would be a second noisy look at the same cells) until the statement is charged again
std::unordered_set<int64> lost;

// Whether an execution of e has released projected cells.
bool
in_flight(const Entry &e)
{
	for (const auto &c : e.components)
		if (c && c->decided && c->projected)
			return true;
	return false;
}

// Variance of a cell's noise in grid units (the weights of the projection).
double
grid_variance(const LinearNoisePlan &p)
{
	const double t = p.scale / p.grid;
	return p.family == NoiseFamily::Gaussian ? t * t : 2 * t * t;
}

bool
same_plan(const LinearNoisePlan &a, const LinearNoisePlan &b)
{
	return a.grid == b.grid && a.scale == b.scale && a.family == b.family && a.bound == b.bound;
}

} // namespace

// See consistent_release.h.
void
install_postprocess()
{
	DefineCustomBoolVariable(
	    "dxpriv.postprocess", "Free post-processing of released answers.",
	    "On: counts and sums of non-negative weights are clamped at 0, an average whose count's 95% interval "
	    "reaches 0 (or whose interval is wider than its range) is NULL, and GROUPING SETS/ROLLUP/CUBE releases are "
	    "projected onto consistent totals. dx.last_release() says what was done. Costs no budget.",
	    &guc_postprocess, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
}

// See consistent_release.h.
void
consistent_register(const ConsistentCells &cells)
{
	const bool given = !cells.systems.empty();
	if (cells.charge_ids.size() < 2 || cells.groups.size() != cells.charge_ids.size() ||
	    static_cast<int>(given ? cells.systems.size() : cells.q.size()) != cells.components ||
	    static_cast<int>(cells.plans.size()) != cells.components)
		return;
	for (int64 id : cells.charge_ids)
		if (id == 0)
			return;
	auto e = std::make_shared<Entry>();
	e->charge_ids = cells.charge_ids;
	e->groups = cells.groups;
	size_t total = 0;
	for (int g : cells.groups) {
		e->offset.push_back(total);
		total += static_cast<size_t>(g);
	}
	bool any = false;
	for (int c = 0; c < cells.components; ++c) {
		const auto &plans = cells.plans[c];
		std::optional<Component> comp;
		bool ok = plans.size() == total && (given || cells.q[c].size() == total) && total > 0;
		for (size_t k = 0; ok && k < total; ++k)
			ok = plans[k].grid == plans[0].grid && plans[k].scale > 0 &&
			     (plans[k].family == NoiseFamily::Laplace || plans[k].family == NoiseFamily::Gaussian);
		if (ok) {
			comp.emplace();
			if (given) {
				ok = cells.systems[c] && cells.systems[c]->cells == total;
				if (ok)
					comp->system = *cells.systems[c];
			} else {
				ok = consistent_system_from_weights(cells.q[c], comp->system);
			}
			comp->plans = plans;
		}
		if (!ok)
			comp.reset();
		any = any || comp.has_value();
		e->components.push_back(std::move(comp));
	}
	if (!any)
		return;
	while (registered.size() >= kMaxRegistered) {
		const bool flying = in_flight(*registered.front());
		for (int64 id : registered.front()->charge_ids) {
			by_charge.erase(id);
			if (flying)
				lost.insert(id);
		}
		registered.pop_front();
	}
	registered.push_back(e);
	for (size_t s = 0; s < e->charge_ids.size(); ++s)
		by_charge[e->charge_ids[s]] = {e, s};
}

// See consistent_release.h.
void
consistent_charged(const std::vector<int64> &charge_ids)
{
	for (int64 id : charge_ids) {
		lost.erase(id);
		auto it = by_charge.find(id);
		if (it == by_charge.end())
			continue;
		for (auto &comp : it->second.first->components)
			if (comp) {
				comp->decided = comp->projected = false;
				comp->noise.clear();
			}
	}
}

// See consistent_release.h.
bool
consistent_noise(int64 charge_id, int group, int component, const LinearNoisePlan &plan, double &noise_units,
                 double &projected_variance)
{
	if (lost.count(charge_id))
		fail(ERRCODE_PROGRAM_LIMIT_EXCEEDED, "dxpriv lost the state of a consistent release during its execution",
		     "Too many GROUPING SETS statements were analysed while it ran; run it again (it was charged).");
	auto it = by_charge.find(charge_id);
	if (it == by_charge.end())
		return false;
	Entry &e = *it->second.first;
	const size_t set = it->second.second;
	if (component < 0 || static_cast<size_t>(component) >= e.components.size() || !e.components[component])
		return false;
	Component &comp = *e.components[component];
	if (group < 0 || group >= e.groups[set])
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv consistent release received an invalid group");
	const size_t k = e.offset[set] + static_cast<size_t>(group);
	if (!same_plan(plan, comp.plans[k]))
		fail(ERRCODE_INTERNAL_ERROR, "dxpriv consistent release does not match the charged noise plan");
	if (!comp.decided) { // once per execution, for every cell of the component
		comp.decided = true;
		comp.projected = false;
		if (!guc_postprocess)
			return false;
		if (!comp.projection) {
			std::vector<double> var;
			for (const LinearNoisePlan &p : comp.plans)
				var.push_back(grid_variance(p));
			comp.projection = std::make_unique<ConsistentProjection>(comp.system, var);
		}
		if (!comp.projection->usable())
			return false;
		std::vector<double> z;
		z.reserve(comp.plans.size());
		for (const LinearNoisePlan &p : comp.plans) // each cell's noise from its own plan, in grid units
			z.push_back(GridSum{}.release(backend_random(), p) / p.grid);
		comp.noise = consistent_noise_units(*comp.projection, z);
		comp.projected = true;
	}
	if (!comp.projected)
		return false;
	noise_units = comp.noise[k];
	projected_variance = comp.projection->projected_variances()[k] * plan.grid * plan.grid;
	return true;
}

// See consistent_release.h.
void
consistent_end_transaction()
{
	lost.clear();
	for (auto &e : registered)
		for (auto &comp : e->components)
			if (comp) {
				comp->decided = comp->projected = false;
				comp->noise.clear();
				comp->projection.reset(); // rebuilt at the next execution (bounded memory)
			}
}

} // namespace dxpriv::pg
