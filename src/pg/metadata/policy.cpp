// Table policies: column declarations validated (JSON), policies loaded from dx's catalog.
#include "pg/metadata/policy.h"

#include "pg/metadata/policy_domain.h"
#include "pg/metadata/policy_json.h"
#include "pg/metadata/policy_metric.h"
#include "pg/metadata/open_column.h"
#include "pg/metadata/catalog.h"
#include "pg/metadata/extension_objects.h"
#include "pg/guard.h"

extern "C" {
#include "utils/guc.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/float.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "catalog/namespace.h"
#include "utils/regproc.h"
#include "nodes/makefuncs.h"
#include "access/htup_details.h"
#include "catalog/catalog.h"
#include "catalog/pg_class.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/json.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"
}

#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

namespace dxpriv::pg {

// Set while dx.set_column validates a declaration: closing an explicit matrix then raises a NOTICE.
bool notice_matrix_closure = false;

// See policy.h.
ColumnPolicy
parse_column_policy(Oid type, int32 typmod, Jsonb *domain_json, Jsonb *metric_json)
{
	if (is_open_domain(domain_json))
		return parse_open_column(type, typmod, domain_json, metric_json);
	ColumnPolicy col;
	col.type = type;
	col.typmod = typmod;
	require_object_with_keys(domain_json, "domain", {"values", "min", "max", "step"}, kDomainHint);
	JsonbValue v;
	if (get_key(domain_json, "values", v)) {
		if (get_key(domain_json, "min", v) || get_key(domain_json, "max", v))
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "domain has both \"values\" and \"min\"/\"max\"", kDomainHint);
		col.domain = parse_enum_domain(type, domain_json);
	} else {
		if (!is_range_type(type))
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "range domains need a numeric or date column",
			     "Declare the values of this column as {\"values\": [...]}.");
		col.domain = parse_range_domain(type, domain_json);
	}
	col.metric = parse_metric(col.domain, metric_json);
	col.metric.validate(col.domain);
	return col;
}

// See policy.h.
const ColumnPolicy *
TablePolicy::find(AttrNumber attnum) const
{
	for (const ColumnPolicy &c : columns)
		if (c.member(attnum))
			return &c;
	return nullptr;
}

// See policy.h.
const ColumnPolicy *
TablePolicy::find_open(AttrNumber attnum) const
{
	for (const ColumnPolicy &c : open_columns)
		if (c.attnum == attnum)
			return &c;
	return nullptr;
}

// See policy.h.
const ColumnPolicy::Member *
ColumnPolicy::member(AttrNumber att) const
{
	int i = member_index(att);
	return i < 0 ? nullptr : &members[i];
}

// See policy.h.
int
ColumnPolicy::member_index(AttrNumber att) const
{
	for (size_t i = 0; i < members.size(); ++i)
		if (members[i].attnum == att)
			return static_cast<int>(i);
	return -1;
}

// See policy.h.
ColumnPolicy
parse_group_policy(const std::vector<Oid> &types, Jsonb *domain_json, Jsonb *metric_json)
{
	for (Oid t : types)
		if (t != INT2OID && t != INT4OID && t != INT8OID && t != FLOAT4OID && t != FLOAT8OID && t != NUMERICOID)
			fail(ERRCODE_INVALID_PARAMETER_VALUE, "every column of a group must be numeric",
			     "Group numeric columns such as longitude and latitude.");
	if (types.size() < 2 || types.size() > kMaxPointDims)
		fail(ERRCODE_INVALID_PARAMETER_VALUE, "a column group needs 2 to 8 columns",
		     "Declare a single column with dx.set_column.");
	ColumnPolicy col;
	col.domain = parse_points_domain(types.size(), domain_json);
	col.metric = parse_metric(col.domain, metric_json);
	col.metric.validate(col.domain);
	for (size_t m = 0; m < types.size(); ++m)
		if (types[m] == INT2OID || types[m] == INT4OID || types[m] == INT8OID)
			for (size_t i = 0; i < col.domain.size(); ++i)
				if (col.domain.coordinate(i, m) != std::floor(col.domain.coordinate(i, m)))
					fail(ERRCODE_INVALID_PARAMETER_VALUE, "an integer column of the group has a non-integer coordinate",
					     "Use whole-number coordinates for integer columns.");
	return col;
}

// See policy.h.
bool
load_table_policy(Oid relid, TablePolicy &out)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext)
		return false;
	InternalSpi spi(ext->schema_owner);
	if (spi.exec("SELECT presence, delta FROM dx.protected_tables WHERE relid = $1", {{OIDOID, ObjectIdGetDatum(relid)}},
	             true) == 0)
		return false;
	out.relid = relid;
	out.presence = DatumGetFloat8(spi.value(0, 0));
	out.delta = DatumGetFloat8(spi.value(0, 1));
	uint64 n = spi.exec("SELECT c.column_name, c.domain, c.metric, a.attnum, a.atttypid, a.atttypmod, a.attcollation "
	                    "FROM dx.protected_columns c JOIN pg_catalog.pg_attribute a "
	                    "ON a.attrelid = c.relid AND a.attname = c.column_name AND NOT a.attisdropped "
	                    "WHERE c.relid = $1 ORDER BY a.attnum",
	                    {{OIDOID, ObjectIdGetDatum(relid)}}, true);
	for (uint64 r = 0; r < n; ++r) {
		Jsonb *domain = nullptr, *metric = nullptr;
		pg_call([&] {
			domain = DatumGetJsonbP(spi.value(r, 1));
			metric = DatumGetJsonbP(spi.value(r, 2));
		});
		ColumnPolicy col = parse_column_policy(DatumGetObjectId(spi.value(r, 4)), DatumGetInt32(spi.value(r, 5)),
		                                       domain, metric);
		col.name = spi.text(r, 0);
		col.attnum = DatumGetInt16(spi.value(r, 3));
		col.collation = DatumGetObjectId(spi.value(r, 6));
		col.members.push_back(ColumnPolicy::Member{col.name, col.attnum, col.type, col.typmod, col.collation});
		(col.open ? out.open_columns : out.columns).push_back(std::move(col));
	}
	// column groups: members in declaration order
	n = spi.exec("SELECT g.domain, g.metric, array_to_string(g.columns, ','), "
	             "(SELECT array_agg(a.attnum ORDER BY u.ord) FROM unnest(g.columns) WITH ORDINALITY u(name, ord) "
	             " JOIN pg_catalog.pg_attribute a ON a.attrelid = g.relid AND a.attname = u.name AND NOT a.attisdropped)::int2[]::text "
	             "FROM dx.protected_column_groups g WHERE g.relid = $1",
	             {{OIDOID, ObjectIdGetDatum(relid)}}, true);
	for (uint64 r = 0; r < n; ++r) {
		Jsonb *domain = nullptr, *metric = nullptr;
		pg_call([&] {
			domain = DatumGetJsonbP(spi.value(r, 0));
			metric = DatumGetJsonbP(spi.value(r, 1));
		});
		std::string names = spi.text(r, 2), attnums = spi.text(r, 3);
		std::vector<ColumnPolicy::Member> members;
		size_t pos = 0;
		std::string nums = attnums.size() > 2 ? attnums.substr(1, attnums.size() - 2) : "";
		while (pos <= names.size()) {
			size_t comma = names.find(',', pos);
			std::string name = names.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
			members.push_back(ColumnPolicy::Member{name, 0, InvalidOid, -1, InvalidOid});
			if (comma == std::string::npos)
				break;
			pos = comma + 1;
		}
		size_t m = 0, p2 = 0;
		while (m < members.size() && p2 < nums.size()) {
			size_t comma = nums.find(',', p2);
			members[m++].attnum = static_cast<AttrNumber>(std::stoi(nums.substr(p2, comma == std::string::npos ? std::string::npos : comma - p2)));
			if (comma == std::string::npos)
				break;
			p2 = comma + 1;
		}
		std::vector<Oid> types;
		for (ColumnPolicy::Member &mem : members) {
			pg_call([&] { get_atttypetypmodcoll(relid, mem.attnum, &mem.type, &mem.typmod, &mem.collation); });
			types.push_back(mem.type);
		}
		ColumnPolicy col = parse_group_policy(types, domain, metric);
		col.members = members;
		col.name = "(" + names + ")";
		col.attnum = members[0].attnum;
		col.type = members[0].type;
		col.typmod = members[0].typmod;
		col.collation = members[0].collation;
		out.columns.push_back(std::move(col));
	}
	// the privacy unit (README "Privacy units"), read as the extension owner: its key stays inside
	// the statements dxpriv writes
	n = spi.exec("SELECT u.unit_column, a.attnum, a.atttypid, u.max_rows_per_unit, "
	             "coalesce(u.max_groups_per_unit, 0), coalesce(u.max_rows_per_unit_per_group, 0), "
	             "pg_catalog.encode(u.hash_key, 'hex') "
	             "FROM dx.privacy_units u LEFT JOIN pg_catalog.pg_attribute a "
	             "ON a.attrelid = u.relid AND a.attname = u.unit_column AND NOT a.attisdropped WHERE u.relid = $1",
	             {{OIDOID, ObjectIdGetDatum(relid)}}, true);
	if (n > 0 && spi.is_null(0, 1)) // fail closed: never fall back to one row per record
		fail(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
		     "the privacy unit column \"" + spi.text(0, 0) + "\" of a protected table no longer exists",
		     "The table owner can declare the unit again with dx.set_privacy_unit (after a rename) or remove it "
		     "with dx.unset_privacy_unit.");
	if (n > 0) {
		out.unit.column = spi.text(0, 0);
		out.unit.attnum = DatumGetInt16(spi.value(0, 1));
		out.unit.type = DatumGetObjectId(spi.value(0, 2));
		out.unit.max_rows = DatumGetInt32(spi.value(0, 3));
		out.unit.max_groups = DatumGetInt32(spi.value(0, 4));
		out.unit.max_rows_per_group = DatumGetInt32(spi.value(0, 5));
		out.unit.key_hex = spi.text(0, 6);
	}
	return true;
}

// See policy.h.
Oid
relation_owner(Oid relid)
{
	HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	const Oid owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

// See policy.h.
std::string
qualified_relation_name(Oid relid)
{
	// a relation that does not exist (regclass 0, a dropped table's oid) has no name: refused, not
	// dereferenced (quote_identifier(NULL) crashed the backend, e.g. dx.top_k(0::regclass, ...))
	const char *name = get_rel_name(relid);
	if (name == nullptr)
		fail(ERRCODE_UNDEFINED_TABLE, "relation with oid " + std::to_string(relid) + " does not exist",
		     "Pass an existing table, e.g. 'public.people'::regclass.");
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)), name);
}

} // namespace dxpriv::pg
