// Table policies: declared columns, groups and privacy units; declarations validated, policies loaded.
#pragma once

extern "C" {
#include "postgres.h"
#include "access/attnum.h"
#include "utils/jsonb.h"
}

#include <string>
#include <vector>

#include "core/domain.h"
#include "core/metric.h"

namespace dxpriv::pg {

// One declared column: where it is, how its values are mapped and how far apart they are.
// A declared column, or a group of numeric columns sharing one vector metric (location): the
// group's domain is a set of points, coordinate m of a point being the value of member m.
struct ColumnPolicy {
	struct Member {
		std::string name;
		AttrNumber attnum = 0;
		Oid type = InvalidOid;
		int32 typmod = -1;
		Oid collation = InvalidOid;
	};
	std::string name;                // column name, or "(a, b)" for a group
	AttrNumber attnum = 0;           // first member's attribute number
	Oid type = InvalidOid;           // first member's type (single columns)
	int32 typmod = -1;
	Oid collation = InvalidOid;
	std::vector<Member> members;     // one entry for a single column
	Domain domain = Domain::enumerated({"_"});
	ColumnMetric metric = ColumnMetric::none();
	// open domain ({"open": true}, metadata/open_column.h): values are never enumerated; the
	// smallest distance between two distinct values (+inf for metric "none") is all the analysis
	// uses, and domain/metric above stay unused
	bool open = false;
	double open_distance = 0;

	bool is_group() const { return members.size() > 1; }
	const Member *member(AttrNumber att) const;
	int member_index(AttrNumber att) const;
};

// The privacy unit of a table (dx.set_privacy_unit): the record is the unit's bounded row set.
struct UnitPolicy {
	std::string column;        // the unit column (never a declared column)
	AttrNumber attnum = 0;     // 0: the table has no privacy unit
	Oid type = InvalidOid;
	int max_rows = 0;          // k >= 1
	int max_groups = 0;        // G, 0 when not declared (then k)
	int max_rows_per_group = 0; // kg, 0 when not declared (then k)
	std::string key_hex;       // the row-ranking key, 32 hex digits (never shown to anyone)
	bool present() const { return attnum != 0; }
};

struct TablePolicy {
	Oid relid = InvalidOid;
	UnitPolicy unit;
	double presence = 1.0;
	double delta = 0;  // per-query delta allowed for (epsilon, delta) noise; 0 = pure epsilon only
	std::vector<ColumnPolicy> columns;
	std::vector<ColumnPolicy> open_columns; // open domains: never in `columns`, so never analysed as declared
	const ColumnPolicy *find(AttrNumber attnum) const;
	const ColumnPolicy *find_open(AttrNumber attnum) const;
};

// Parses and validates a column declaration for a column of the given type. Throws UserError
// with errcode and hint on any problem.
ColumnPolicy parse_column_policy(Oid type, int32 typmod, Jsonb *domain, Jsonb *metric);
// Parses a column group declaration (points or grid domain, vector metric) for members of the
// given types. Throws UserError with errcode and hint on any problem.
ColumnPolicy parse_group_policy(const std::vector<Oid> &types, Jsonb *domain, Jsonb *metric);
// Set while dx.set_column validates a declaration: closing an explicit matrix raises a NOTICE.
extern bool notice_matrix_closure;
// Loads the policy of relid; returns false when the table is not protected.
bool load_table_policy(Oid relid, TablePolicy &out);
// "schema"."table" of relid, quoted where needed, for messages and generated SQL (calls PostgreSQL:
// run it in a pg_call from code that may throw C++ exceptions). Throws UserError (42P01) when relid
// names no relation.
std::string qualified_relation_name(Oid relid);
// The owner of relid (the role dxpriv's own statements read a protected table as), InvalidOid when
// the relation does not exist (calls PostgreSQL: run it in a pg_call).
Oid relation_owner(Oid relid);
} // namespace dxpriv::pg
