// pg_stat_user_tables as analysts see it: dx._analyst_stat_user_tables() behind the view
// dx.analyst_stat_user_tables, which the analyst guard puts in place of pg_stat_user_tables in
// analysts' statements (substitute_catalog_views). Every user table is listed; the counters are
// NULL for a relation dx._stats_hidden names (protected rows, dxpriv's own tables). The
// pg_stat_get_* calls run in dxpriv's own statement (InternalSpi, as the extension owner), so an
// analyst's plan never holds one: the executor refuses them there without exception.
#include "pg/guard.h"
#include "pg/metadata/catalog.h"
#include "pg/metadata/extension_objects.h"

extern "C" {
#include "access/tupdesc.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"
}

#include <cstring>
#include <string>

using namespace dxpriv::pg;

// dx._analyst_stat_user_tables() RETURNS SETOF pg_catalog.pg_stat_user_tables.
DX_FUNCTION(dx_analyst_stat_user_tables)
{
	const ExtensionObjects *ext = extension_objects();
	if (!ext)
		fail(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, "dxpriv is not installed in this database",
		     "Run CREATE EXTENSION dxpriv.");
	// the statement's columns: those of the result type, in order, counters blanked
	std::string sql;
	pg_call([&] {
		InitMaterializedSRF(fcinfo, 0);
		TupleDesc desc = ((ReturnSetInfo *) fcinfo->resultinfo)->setDesc;
		for (int i = 0; i < desc->natts; ++i) {
			const char *name = NameStr(TupleDescAttr(desc, i)->attname);
			const std::string col = quote_identifier(name);
			sql += sql.empty() ? "SELECT " : ", ";
			if (strcmp(name, "relid") == 0 || strcmp(name, "schemaname") == 0 || strcmp(name, "relname") == 0)
				sql += "s." + col;
			else
				sql += "CASE WHEN dx._stats_hidden(s.relid) THEN NULL ELSE s." + col + " END";
		}
		sql += " FROM pg_catalog.pg_stat_user_tables s";
	});
	InternalSpi spi(ext->schema_owner);
	const uint64 n = spi.exec_dynamic(sql.c_str());
	pg_call([&] {
		ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
		for (uint64 r = 0; r < n; ++r)
			tuplestore_puttuple(rsinfo->setResult, SPI_tuptable->vals[r]);
	});
	return (Datum) 0;
}
