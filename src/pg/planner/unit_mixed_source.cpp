// Privacy units: the SQL of count_units mixed with other aggregates through the unit profile (unit_mixed_source.h).
#include "pg/planner/unit_mixed_source.h"

#include "pg/planner/unit_profile_source.h"

namespace dxpriv::pg {

// See unit_mixed_source.h.
bool
unit_mixed_applies(Query *q, const UnitSource &spec)
{
	if (spec.distinct_weights.empty() || !spec.flag_columns.empty() || spec.distributed || q->groupingSets != NIL)
		return false;
	if (spec.keys == nullptr && spec.group_index != nullptr)
		return false;
	UnitSource rows = spec; // the rows' bounding, without count_units
	rows.distinct_weights.clear();
	return profile_bounding_applies(rows);
}

// See unit_mixed_source.h.
std::string
unit_mixed_sql(const std::string &level0, const UnitSource &spec)
{
	std::string out = "SELECT ";
	for (size_t i = 0; i < spec.columns.size(); ++i)
		out += "dx_c" + std::to_string(i) + ", ";
	for (size_t j = 0; j < spec.distinct_weights.size(); ++j) {
		const std::string w = "dx_w" + std::to_string(j);
		// the first row of the partition, in the window's order, whose weight is set
		out += "(" + w + " IS NOT NULL AND pg_catalog.count(" + w + ") OVER dx_win = 1) AS dx_d" + std::to_string(j) + ", ";
	}
	out.resize(out.size() - 2);
	return out + " FROM (" + level0 + ") AS dx_l0 WINDOW dx_win AS (PARTITION BY " +
	       (spec.keys != nullptr ? "dx_u, dx_g" : "dx_u") + " ROWS UNBOUNDED PRECEDING)";
}

} // namespace dxpriv::pg
