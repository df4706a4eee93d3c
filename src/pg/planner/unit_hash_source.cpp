// Privacy units: the SQL of the sort-free bounding, dx._unit_bound and dx._unit_rows (unit_hash_source.h).
#include "pg/planner/unit_hash_source.h"

#include "pg/guard.h"

extern "C" {
#include "catalog/pg_type.h"
#include "utils/builtins.h"
}

namespace dxpriv::pg {

// See unit_hash_source.h.
std::string
hash_bounded_sql(const std::string &level0, const UnitSource &spec)
{
	const TablePolicy &policy = *spec.policy;
	const bool grouped = spec.keys != nullptr;
	const bool flags = !spec.distinct_weights.empty();
	// the payload of a kept row: its columns, its group (for the flags) and its count_units weights
	std::string agg = "dx._unit_bound(" + std::to_string(spec.bound.max_rows) + ", dx_h, dx_u";
	int next = 0;
	std::string rows;
	auto emit = [&](int kind, int col, int gcol, Oid type, const std::string &name) {
		const char *t = pg_value([&] { return format_type_be_qualified(type); });
		rows += std::string(rows.empty() ? "" : ", ") + "dx._unit_rows(dx_s, " + std::to_string(kind) + ", " +
		        std::to_string(col) + ", " + std::to_string(gcol) + ", NULL::" + t + ") AS " + name;
	};
	for (size_t i = 0; i < spec.columns.size(); ++i) {
		const ColumnPolicy::Member *mem = policy.find(spec.columns[i])->member(spec.columns[i]);
		agg += ", dx_c" + std::to_string(i);
		emit(0, next++, -1, mem->type, "dx_c" + std::to_string(i));
	}
	int gcol = -1;
	if (grouped && flags) {
		agg += ", dx_g";
		gcol = next++;
	}
	for (size_t j = 0; j < spec.distinct_weights.size(); ++j) {
		agg += ", dx_w" + std::to_string(j);
		emit(1, next++, gcol, BOOLOID, "dx_d" + std::to_string(j));
	}
	if (rows.empty()) // no column: one true per kept row
		emit(2, 0, -1, BOOLOID, "dx_k");
	agg += ")";
	return "SELECT " + rows + " FROM (SELECT " + agg + " AS dx_s FROM (" + level0 + ") AS dx_l0) AS dx_b";
}

} // namespace dxpriv::pg
