// Privacy units: the grouped release over a unit table bounded by a profile's keep qual (unit_group_profile.h).
#include "pg/planner/unit_group_profile.h"

#include "pg/planner/unit_profile_source.h"

namespace dxpriv::pg {

// See unit_group_profile.h.
bool
unit_profile_grouped(const analysis::ReleaseAnalysis &a, bool distributed)
{
	if (!a.policy.unit.present() || !a.keys.grouped() || a.open || a.public_keys || distributed)
		return false;
	for (const analysis::AggSpec &s : a.specs)
		if (s.kind == analysis::AggKind::CountUnits)
			return false; // (its first-row flags need each unit's kept rows together: the hash pass)
	UnitSource spec;
	spec.policy = &a.policy;
	spec.distributed = distributed;
	return profile_bounding_applies(spec);
}

} // namespace dxpriv::pg
