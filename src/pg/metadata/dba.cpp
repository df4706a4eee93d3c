// SQL-callable helpers of the DBA interface: column validation and plan invalidation.
#include "pg/metadata/policy.h"
#include "pg/metadata/policy_domain.h"
#include "pg/metadata/declaration_source.h"
#include "pg/guard.h"
#include "pg/elevated/sealed_execution.h"

extern "C" {
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "catalog/pg_type.h"
}

using namespace dxpriv::pg;

// While alive, tables named by the declaration being validated are read and copied (see
// DeclarationCopy); the matrix-closure NOTICE is raised when notice is set.
struct Declaring {
	DeclarationCopy copy;
	explicit Declaring(bool notice)
	{
		declaration_copy = &copy;
		notice_matrix_closure = notice;
	}
	~Declaring()
	{
		declaration_copy = nullptr;
		notice_matrix_closure = false;
	}
	Declaring(const Declaring &) = delete;
	Declaring &operator=(const Declaring &) = delete;
};

// While alive, the current user is the calling role (CallerScope, sealed_execution.h): user code
// that validating a declaration can reach (a domain type's CHECK constraint, run by the type's input
// function on every declared value) runs with the caller's privileges, never with those of the
// extension owner that the DBA functions run as.
using AsCaller = CallerScope;

// j with key removed and {key: rows} added (rows: a JSON array), or j unchanged when rows is empty.
static Jsonb *
replace_key(Jsonb *j, const char *remove, const std::string &key, const std::string &rows)
{
	if (rows.empty())
		return j;
	Jsonb *out = nullptr;
	std::string text = "{\"" + key + "\": " + rows + "}";
	pg_call([&] {
		Datum without = DirectFunctionCall2(jsonb_delete, JsonbPGetDatum(j), CStringGetTextDatum(remove));
		Datum added = DirectFunctionCall1(jsonb_in, CStringGetDatum(text.c_str()));
		out = DatumGetJsonbP(DirectFunctionCall2(jsonb_concat, without, added));
	});
	return out;
}

// dx._validate_column(regtype, jsonb, jsonb) -> jsonb: raises unless the declaration is usable;
// returns the metric to store: as given, or with the rows of the table it names in place of
// "table" (read once, now, as the calling role).
DX_FUNCTION(dx_validate_column)
{
	Oid type = PG_GETARG_OID(0);
	Jsonb *domain = PG_GETARG_JSONB_P(1);
	Jsonb *metric = PG_GETARG_JSONB_P(2);
	Declaring declaring(true);
	ColumnPolicy col;
	{
		AsCaller as_caller;
		col = parse_column_policy(type, -1, domain, metric);
		if (!col.open) // an open domain has no points
			(void) domain_datums(col.domain, type, -1); // every point must be a valid value of the type
	}
	PG_RETURN_JSONB_P(replace_key(metric, "table", declaring.copy.metric_key, declaring.copy.metric_rows));
}

// dx._invalidate(regclass): cached plans over the table are re-analysed with the new policy.
DX_FUNCTION(dx_invalidate)
{
	Oid relid = PG_GETARG_OID(0);
	pg_call([&] { CacheInvalidateRelcacheByRelid(relid); });
	PG_RETURN_VOID();
}

// dx._check_owner(regclass): the DBA functions run as SECURITY DEFINER, so the caller is the
// outer user (the session's current role), not the function's current user.
DX_FUNCTION(dx_check_owner)
{
	if (PG_ARGISNULL(0))
		fail(ERRCODE_NULL_VALUE_NOT_ALLOWED, "table must not be null", "Pass a table name such as 'public.people'.");
	Oid relid = PG_GETARG_OID(0);
	Oid caller = GetOuterUserId();
	bool owner = false;
	char *name = nullptr;
	pg_call([&] {
		owner = pg_class_ownercheck(relid, caller);
		name = get_rel_name(relid);
	});
	if (!name)
		fail(ERRCODE_UNDEFINED_TABLE, "table does not exist", "Pass an existing table.");
	if (!owner)
		fail(ERRCODE_INSUFFICIENT_PRIVILEGE, std::string("must be owner of table ") + name,
		     "Only the owner of a table (or a superuser) can change its dxpriv policy.");
	PG_RETURN_VOID();
}

// dx._validate_group(regtype[], jsonb, jsonb) -> jsonb: raises unless the group declaration is
// usable; returns the domain to store: as given, or with the rows of the table it names in place
// of "points_table" (read once, now, as the calling role).
DX_FUNCTION(dx_validate_group)
{
	ArrayType *arr = PG_GETARG_ARRAYTYPE_P(0);
	Jsonb *domain = PG_GETARG_JSONB_P(1);
	Jsonb *metric = PG_GETARG_JSONB_P(2);
	std::vector<Oid> types;
	pg_call([&] {
		Datum *elems;
		bool *nulls;
		int n;
		deconstruct_array(arr, REGTYPEOID, sizeof(Oid), true, TYPALIGN_INT, &elems, &nulls, &n);
		for (int i = 0; i < n; ++i)
			types.push_back(DatumGetObjectId(elems[i]));
	});
	Declaring declaring(false);
	AsCaller as_caller;
	ColumnPolicy col = parse_group_policy(types, domain, metric);
	for (size_t m = 0; m < types.size(); ++m) {
		col.members.push_back(ColumnPolicy::Member{"", 0, types[m], -1, InvalidOid});
	}
	for (size_t m = 0; m < types.size(); ++m)
		(void) member_datums(col, m); // every coordinate must be a valid value of its column's type
	PG_RETURN_JSONB_P(replace_key(domain, "points_table", "points", declaring.copy.points_rows));
}

// dx._caller_is_superuser(): whether the calling role (outside SECURITY DEFINER functions, i.e.
// after SET ROLE) is a superuser.
DX_FUNCTION(dx_caller_is_superuser)
{
	bool super = false;
	pg_call([&] { super = superuser_arg(GetOuterUserId()); });
	PG_RETURN_BOOL(super);
}
