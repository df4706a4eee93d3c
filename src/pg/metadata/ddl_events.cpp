// dx._on_ddl_start: the ddl_command_start event trigger of ALTER TABLE and ALTER TYPE (sql/95_ddl_events.sql).
// It only reads the parse tree: RENAME COLUMN and ALTER COLUMN TYPE name a column that the
// catalog functions dx._ddl_rename_column / dx._ddl_check_column_type (plpgsql, SECURITY DEFINER,
// fixed search_path) follow or refuse, in the statement's transaction (rolled back with it). A
// composite type's RENAME ATTRIBUTE and ALTER ATTRIBUTE TYPE (... CASCADE) do the same to the
// columns of its typed tables: the functions get the type's relation, whose family (dx._ddl_family)
// is those tables.
#include "pg/guard.h"

extern "C" {
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "fmgr.h"
#include "nodes/makefuncs.h"
#include "nodes/parsenodes.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
}

namespace {

// Calls dx.<name>(regclass, name, name, bool) or dx.<name>(regclass, name, bool) when b is null.
void
call_catalog_function(const char *name, Oid relid, const char *a, const char *b, bool recurse)
{
	Oid args3[] = {REGCLASSOID, NAMEOID, BOOLOID};
	Oid args4[] = {REGCLASSOID, NAMEOID, NAMEOID, BOOLOID};
	List *fname = list_make2(makeString(pstrdup("dx")), makeString(pstrdup(name)));
	const Oid fn = b ? LookupFuncName(fname, 4, args4, false) : LookupFuncName(fname, 3, args3, false);
	Datum an = DirectFunctionCall1(namein, CStringGetDatum(a));
	if (b)
		OidFunctionCall4(fn, ObjectIdGetDatum(relid), an, DirectFunctionCall1(namein, CStringGetDatum(b)),
		                 BoolGetDatum(recurse));
	else
		OidFunctionCall3(fn, ObjectIdGetDatum(relid), an, BoolGetDatum(recurse));
}

// The table an ALTER TABLE names, or InvalidOid (missing: the command reports it itself).
Oid
altered_table(RangeVar *rv)
{
	return rv ? RangeVarGetRelid(rv, NoLock, true) : InvalidOid;
}

} // namespace

DX_FUNCTION(dx_on_ddl_start)
{
	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		dxpriv::pg::fail(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED, "dx._on_ddl_start is an event trigger function");
	dxpriv::pg::pg_call([&] {
		Node *tree = ((EventTriggerData *) fcinfo->context)->parsetree;
		if (IsA(tree, RenameStmt)) {
			RenameStmt *s = (RenameStmt *) tree;
			const bool attribute = s->renameType == OBJECT_ATTRIBUTE; // (ALTER TYPE ... RENAME ATTRIBUTE)
			if ((s->renameType != OBJECT_COLUMN && !attribute) || !s->relation || !s->subname || !s->newname)
				return;
			const Oid relid = altered_table(s->relation);
			if (OidIsValid(relid))
				call_catalog_function("_ddl_rename_column", relid, s->subname, s->newname,
				                      attribute || s->relation->inh); // (ALTER TYPE reaches the typed tables' children)
		} else if (IsA(tree, AlterTableStmt)) {
			AlterTableStmt *s = (AlterTableStmt *) tree;
			Oid relid = InvalidOid;
			ListCell *lc;
			foreach (lc, s->cmds) {
				AlterTableCmd *cmd = (AlterTableCmd *) lfirst(lc);
				if (cmd->subtype != AT_AlterColumnType || !cmd->name)
					continue;
				if (!OidIsValid(relid))
					relid = altered_table(s->relation);
				if (OidIsValid(relid))
					call_catalog_function("_ddl_check_column_type", relid, cmd->name, nullptr,
					                      s->objtype == OBJECT_TYPE || s->relation->inh);
			}
		}
	});
	PG_RETURN_VOID();
}
