// Sizes as analysts see them (psql \dt+, \di+, \l+, \db+): dx.analyst_relation_size and the other
// dx.analyst_*_size functions (sql/40_analysts.sql), which the analyst guard puts in place of the
// built-in size functions in analysts' statements (substitute_catalog_views). They answer like the
// built-ins, called as the caller (pg_database_size keeps its CONNECT check), except NULL where the
// size would describe protected rows: a relation whose storage holds them (dx._holds_protected_rows),
// the current database when it holds a protected table, a tablespace holding such storage
// (dx._protected_rows_in). Written in C so that their bodies name no built-in size function: a SQL
// body would itself be analysed as the analyst's and substituted again.
#include "pg/analyst/catalog_sizes.h"

#include "pg/guard.h"

extern "C" {
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "commands/dbcommands.h"
#include "commands/tablespace.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
}

#include <cstring>
#include <string>

using namespace dxpriv::pg;

namespace dxpriv::pg {

// See analyst_guard.h.
bool
dx_helper(const char *helper, Oid arg, bool arg_null)
{
	bool out = true;
	pg_call([&] {
		Oid argtype = OIDOID;
		Oid fn = LookupFuncName(list_make2(makeString(pstrdup("dx")), makeString(pstrdup(helper))), 1, &argtype, false);
		LOCAL_FCINFO(call, 1);
		FmgrInfo flinfo;
		fmgr_info(fn, &flinfo);
		InitFunctionCallInfoData(*call, &flinfo, 1, InvalidOid, nullptr, nullptr);
		call->args[0].value = ObjectIdGetDatum(arg);
		call->args[0].isnull = arg_null;
		Datum r = FunctionCallInvoke(call);
		out = call->isnull || DatumGetBool(r); // unknown: treat as protected
	});
	return out;
}

} // namespace dxpriv::pg

// dx.analyst_relation_size(regclass [, text]), dx.analyst_table_size(regclass),
// dx.analyst_total_relation_size(regclass), dx.analyst_indexes_size(regclass),
// dx.analyst_database_size(name | oid), dx.analyst_tablespace_size(name | oid): STRICT, bigint.
DX_FUNCTION(dx_analyst_size)
{
	std::string self;
	Oid argtype = InvalidOid;
	pg_call([&] {
		const char *n = get_func_name(fcinfo->flinfo->fn_oid);
		self = n ? n : "";
		Oid *argtypes = nullptr;
		int nargs = 0;
		get_func_signature(fcinfo->flinfo->fn_oid, &argtypes, &nargs);
		argtype = nargs > 0 ? argtypes[0] : InvalidOid;
	});
	Datum result = 0;
	bool null_result = false;
	if (self == "analyst_database_size") {
		Oid db = InvalidOid;
		pg_call([&] { db = argtype == NAMEOID ? get_database_oid(NameStr(*PG_GETARG_NAME(0)), false) : PG_GETARG_OID(0); });
		if (db == MyDatabaseId && dx_helper("_protected_rows_in", InvalidOid, true))
			null_result = true;
		else
			pg_call([&] { result = OidFunctionCall1(F_PG_DATABASE_SIZE_OID, ObjectIdGetDatum(db)); });
	} else if (self == "analyst_tablespace_size") {
		Oid spc = InvalidOid;
		pg_call([&] {
			spc = argtype == NAMEOID ? get_tablespace_oid(NameStr(*PG_GETARG_NAME(0)), false) : PG_GETARG_OID(0);
		});
		if (dx_helper("_protected_rows_in", spc, false))
			null_result = true;
		else
			pg_call([&] { result = OidFunctionCall1(F_PG_TABLESPACE_SIZE_OID, ObjectIdGetDatum(spc)); });
	} else {
		const Oid rel = PG_GETARG_OID(0);
		if (dx_helper("_holds_protected_rows", rel, false))
			null_result = true;
		else
			pg_call([&] {
				if (self == "analyst_relation_size" && PG_NARGS() == 2)
					result = OidFunctionCall2(F_PG_RELATION_SIZE_REGCLASS_TEXT, ObjectIdGetDatum(rel), PG_GETARG_DATUM(1));
				else if (self == "analyst_relation_size")
					result = OidFunctionCall1(F_PG_RELATION_SIZE_REGCLASS, ObjectIdGetDatum(rel));
				else if (self == "analyst_table_size")
					result = OidFunctionCall1(F_PG_TABLE_SIZE, ObjectIdGetDatum(rel));
				else if (self == "analyst_total_relation_size")
					result = OidFunctionCall1(F_PG_TOTAL_RELATION_SIZE, ObjectIdGetDatum(rel));
				else if (self == "analyst_indexes_size")
					result = OidFunctionCall1(F_PG_INDEXES_SIZE, ObjectIdGetDatum(rel));
				else
					elog(ERROR, "dx_analyst_size called as %s", self.c_str());
			});
	}
	if (null_result)
		PG_RETURN_NULL();
	return result;
}
