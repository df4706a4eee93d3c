-- The catalog follows DDL (README "DDL on protected tables"): event triggers keep dx's rows
-- consistent with the tables they describe. Created by CREATE EXTENSION, which runs as a superuser
-- (dxpriv.control: superuser = true); event triggers need one.
-- Tables and schemas are referenced by oid (regclass), so RENAME TABLE, SET SCHEMA and ALTER
-- SCHEMA RENAME need nothing; columns are referenced by name and followed below.

-- rel and, when recurse, every table that inherits from it (ALTER TABLE without ONLY recurses).
-- When rel is a composite type's relation (ALTER TYPE ... CASCADE), the typed tables of that type
-- (CREATE TABLE ... OF type) and, when recurse, the tables inheriting from them: ALTER TYPE renames,
-- retypes and drops their columns (redteam2: a typed table's unit column was renamed unfollowed).
CREATE FUNCTION dx._ddl_family(rel oid, recurse boolean) RETURNS SETOF oid
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
	WITH RECURSIVE down(r) AS (
		SELECT rel
		UNION
		SELECT c.oid FROM pg_catalog.pg_class t JOIN pg_catalog.pg_class c ON c.reloftype OPERATOR(pg_catalog.=) t.reltype
		WHERE t.oid OPERATOR(pg_catalog.=) rel AND t.relkind OPERATOR(pg_catalog.=) 'c'
		UNION
		SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN down ON i.inhparent = down.r WHERE recurse)
	SELECT r FROM down
$$;

-- Whether col is referenced by a declaration of protected table rel: a declared column, a member of
-- a column group, the privacy unit, or an attribute of an attribute-privacy model.
CREATE FUNCTION dx._ddl_declares(rel oid, col name) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT EXISTS (SELECT 1 FROM dx.protected_columns c WHERE c.relid = rel AND c.column_name = col)
	    OR EXISTS (SELECT 1 FROM dx.protected_column_groups g WHERE g.relid = rel AND col = ANY (g.columns))
	    OR EXISTS (SELECT 1 FROM dx.privacy_units u WHERE u.relid = rel AND u.unit_column = col)
	    OR EXISTS (SELECT 1 FROM dx.attribute_policies a WHERE a.relid = rel AND (a.attribute = col OR col = ANY (a.attributes)))
$$;

-- Called by the ddl_command_start trigger before ALTER TABLE ... RENAME COLUMN old_name TO
-- new_name runs (the updates roll back with the statement if it fails): declared columns, column
-- groups, the privacy unit and median sessions follow the new name. A column of an attribute-privacy model is
-- refused (0A000): its name is part of the declared model.
CREATE FUNCTION dx._ddl_rename_column(rel regclass, old_name name, new_name name, recurse boolean) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	t regclass;
BEGIN
	FOR t IN SELECT f::regclass FROM dx._ddl_family(rel, recurse) f
	         WHERE EXISTS (SELECT 1 FROM dx.protected_tables p WHERE p.relid = f) LOOP
		IF NOT dx._ddl_declares(t, old_name) THEN
			CONTINUE;
		END IF;
		PERFORM dx._check_owner(t);
		IF EXISTS (SELECT 1 FROM dx.attribute_policies a WHERE a.relid = t
		           AND (a.attribute = old_name OR old_name = ANY (a.attributes))) THEN
			RAISE EXCEPTION 'column "%" of table % belongs to an attribute-privacy model and cannot be renamed', old_name, t
				USING ERRCODE = '0A000',
				HINT = 'Remove the model with dx.unprotect_attribute, rename the column, then declare the model again.';
		END IF;
		UPDATE dx.protected_columns c SET column_name = new_name WHERE c.relid = t AND c.column_name = old_name;
		UPDATE dx.protected_column_groups g SET columns = array_replace(g.columns, old_name, new_name)
		WHERE g.relid = t AND old_name = ANY (g.columns);
		UPDATE dx.privacy_units u SET unit_column = new_name WHERE u.relid = t AND u.unit_column = old_name;
		UPDATE dx.median_sessions s SET columns = array_replace(s.columns, old_name, new_name)
		WHERE s.source = t AND old_name = ANY (s.columns);
		PERFORM dx._invalidate(t);
	END LOOP;
END $$;

-- Called by the ddl_command_start trigger before ALTER TABLE ... ALTER COLUMN col TYPE: refused
-- (0A000) when col is declared on a protected table: its domain and metric were validated for
-- the current type.
CREATE FUNCTION dx._ddl_check_column_type(rel regclass, col name, recurse boolean) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	t regclass;
BEGIN
	FOR t IN SELECT f::regclass FROM dx._ddl_family(rel, recurse) f
	         WHERE EXISTS (SELECT 1 FROM dx.protected_tables p WHERE p.relid = f) LOOP
		IF dx._ddl_declares(t, col) THEN
			PERFORM dx._check_owner(t);
			RAISE EXCEPTION 'column "%" of protected table % is declared: its type cannot be changed', col, t
				USING ERRCODE = '0A000',
				HINT = 'The declaration (domain, metric, privacy unit or attribute model) was validated for the current type: '
				       'remove it (dx.unset_column, dx.unset_column_group, dx.unset_privacy_unit or dx.unprotect_attribute), '
				       'change the type, then declare the column again.';
		END IF;
	END LOOP;
END $$;

-- ddl_command_start of ALTER TABLE and ALTER TYPE (a composite type's RENAME ATTRIBUTE and ALTER
-- ATTRIBUTE TYPE reach its typed tables): reads the parse tree (C) and calls the two functions above.
CREATE FUNCTION dx._on_ddl_start() RETURNS event_trigger
LANGUAGE c AS 'MODULE_PATHNAME', 'dx_on_ddl_start';

-- sql_drop: a dropped table loses its policy, declarations, budgets, unit and attribute policies
-- (its ledger rows and releases stay: they are history); open median sessions over it are
-- aborted; a dropped public table stops being public. A dropped declared column loses its
-- declaration (a column group containing it is removed); dropping the privacy unit column or a
-- column of an attribute-privacy model is refused (0A000): the table would be left protected by less
-- than its owner declared.
CREATE FUNCTION dx._on_sql_drop() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	o record;
	col name;
BEGIN
	FOR o IN SELECT d.objid, d.objsubid, d.address_names FROM pg_catalog.pg_event_trigger_dropped_objects() d
	         WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.object_type IN ('table', 'table column') LOOP
		IF o.objsubid = 0 THEN
			DELETE FROM dx.protected_tables p WHERE p.relid = o.objid::regclass;
			IF FOUND THEN
				PERFORM dx._invalidate('dx.protected_tables'::regclass);
			END IF;
			DELETE FROM dx.public_tables p WHERE p.relid = o.objid::regclass;
			IF FOUND THEN
				PERFORM dx._invalidate('dx.public_tables'::regclass);
			END IF;
			UPDATE dx.median_sessions s SET status = 'aborted' WHERE s.source = o.objid::regclass AND s.status = 'open';
			CONTINUE;
		END IF;
		IF NOT EXISTS (SELECT 1 FROM dx.protected_tables p WHERE p.relid = o.objid::regclass) THEN
			CONTINUE;
		END IF;
		col := o.address_names[pg_catalog.array_upper(o.address_names, 1)];
		IF EXISTS (SELECT 1 FROM dx.privacy_units u WHERE u.relid = o.objid::regclass AND u.unit_column = col) THEN
			RAISE EXCEPTION 'column "%" is the privacy unit of protected table % and cannot be dropped', col, o.objid::regclass
				USING ERRCODE = '0A000', HINT = 'Remove the unit first with dx.unset_privacy_unit.';
		END IF;
		IF EXISTS (SELECT 1 FROM dx.attribute_policies a WHERE a.relid = o.objid::regclass
		           AND (a.attribute = col OR col = ANY (a.attributes))) THEN
			RAISE EXCEPTION 'column "%" belongs to an attribute-privacy model of protected table % and cannot be dropped', col,
				o.objid::regclass USING ERRCODE = '0A000', HINT = 'Remove the model first with dx.unprotect_attribute.';
		END IF;
		DELETE FROM dx.protected_columns c WHERE c.relid = o.objid::regclass AND c.column_name = col;
		DELETE FROM dx.protected_column_groups g WHERE g.relid = o.objid::regclass AND col = ANY (g.columns);
		PERFORM dx._invalidate(o.objid::regclass);
	END LOOP;
END $$;

REVOKE EXECUTE ON FUNCTION dx._ddl_family(oid, boolean) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._ddl_declares(oid, name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._ddl_rename_column(regclass, name, name, boolean) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._ddl_check_column_type(regclass, name, boolean) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._on_ddl_start() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._on_sql_drop() FROM PUBLIC;

CREATE EVENT TRIGGER dx_ddl_start ON ddl_command_start WHEN TAG IN ('ALTER TABLE', 'ALTER TYPE')
	EXECUTE FUNCTION dx._on_ddl_start();
CREATE EVENT TRIGGER dx_sql_drop ON sql_drop EXECUTE FUNCTION dx._on_sql_drop();

-- After ALTER or DROP SUBSCRIPTION in this database, every protected table and every member of its
-- tree gets a new contents version. While a subscription writes into a table it has no version
-- (its apply worker fires no statement trigger: contents_version.cpp), but a unit profile or an
-- answer cached before the subscription was created would be served again once it is dropped or
-- the table leaves its publication, after rows it replicated without a version change (a unit made
-- heavy by them would keep every row). Subscription DDL is rare: all tables are renewed, not only the
-- subscription's (which ddl_command_start cannot name).
CREATE FUNCTION dx._on_subscription_change() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	INSERT INTO dx.contents_changes (relid, xid)
	WITH RECURSIVE tree(relid) AS (
		SELECT p.relid::oid FROM dx.protected_tables p
		UNION
		SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN tree t ON i.inhparent OPERATOR(pg_catalog.=) t.relid)
	SELECT t.relid, pg_catalog.pg_current_xact_id() FROM tree t
	ON CONFLICT ON CONSTRAINT contents_changes_pkey DO NOTHING;
END $$;
REVOKE EXECUTE ON FUNCTION dx._on_subscription_change() FROM PUBLIC;
CREATE EVENT TRIGGER dx_subscription_change ON ddl_command_start WHEN TAG IN ('ALTER SUBSCRIPTION', 'DROP SUBSCRIPTION')
	EXECUTE FUNCTION dx._on_subscription_change();

-- Every dx event trigger fires ALWAYS: one left at the default (ENABLE, origin only) is skipped when
-- session_replication_role = replica (replication and restore tools set it), so a RENAME COLUMN of a
-- unit column went unfollowed (a later rename of another column to the old name made it the unit),
-- the unit column could be dropped, a dropped table left its policy row and subscription DDL renewed
-- no contents version (redteam2; regress 86). The contents-version triggers are ENABLE ALWAYS too.
ALTER EVENT TRIGGER dx_ddl_start ENABLE ALWAYS;
ALTER EVENT TRIGGER dx_sql_drop ENABLE ALWAYS;
ALTER EVENT TRIGGER dx_subscription_change ENABLE ALWAYS;

-- (ddlhold) A DDL that changes a protected tree's shape (its members, its ancestors, their contents
-- triggers: ALTER TABLE ... ENABLE/DISABLE TRIGGER, ATTACH/DETACH PARTITION, INHERIT, CREATE
-- TRIGGER) counts as a write of every protected table whose tree holds the altered table, in the
-- DDL's own transaction. Its commit becomes visible to other sessions' snapshots before its
-- invalidation messages are sent (PostgreSQL's CommitTransaction), and several of these commands
-- take no lock that stops a reader: in between, a session kept the tree's old shape
-- (ledger/contents_version.cpp, TreeShape) under a snapshot that already saw the rows the DDL
-- transaction wrote without a record (a trigger disabled, rows written, the trigger enabled again),
-- and computed the old contents version over the new rows. With this row the version moves exactly
-- when the commit becomes visible (regress 90). CREATE TABLE ... INHERITS takes only
-- ShareUpdateExclusiveLock on the parent (DefineRelation), so a child created and filled in one
-- transaction (it has no contents trigger yet) has the same window; CREATE FOREIGN TABLE and ALTER
-- FOREIGN TABLE change a tree the same ways, and CREATE SCHEMA ... CREATE TABLE / CREATE TRIGGER
-- runs them under its own tag (review3, regress 92).
CREATE FUNCTION dx._on_tree_change() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	INSERT INTO dx.contents_changes (relid, xid)
	WITH RECURSIVE changed(r) AS (
		SELECT CASE WHEN c.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_trigger'::pg_catalog.regclass
		            THEN (SELECT t.tgrelid FROM pg_catalog.pg_trigger t WHERE t.oid OPERATOR(pg_catalog.=) c.objid)
		            ELSE c.objid END
		FROM pg_catalog.pg_event_trigger_ddl_commands() c
		WHERE c.classid OPERATOR(pg_catalog.=) ANY (ARRAY['pg_catalog.pg_class'::pg_catalog.regclass,
		                                                  'pg_catalog.pg_trigger'::pg_catalog.regclass]::pg_catalog.oid[])),
	down(r) AS (
		SELECT r FROM changed
		UNION
		SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN down d ON i.inhparent OPERATOR(pg_catalog.=) d.r),
	up(r) AS (
		SELECT r FROM changed
		UNION
		SELECT i.inhparent FROM pg_catalog.pg_inherits i JOIN up u ON i.inhrelid OPERATOR(pg_catalog.=) u.r)
	SELECT p.relid::oid, pg_catalog.pg_current_xact_id() FROM dx.protected_tables p
	WHERE p.relid::oid OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT r FROM down UNION SELECT r FROM up))
	ON CONFLICT ON CONSTRAINT contents_changes_pkey DO NOTHING;
END $$;
REVOKE EXECUTE ON FUNCTION dx._on_tree_change() FROM PUBLIC;
CREATE EVENT TRIGGER dx_tree_change ON ddl_command_end
	WHEN TAG IN ('ALTER TABLE', 'CREATE TRIGGER', 'CREATE TABLE', 'CREATE FOREIGN TABLE', 'ALTER FOREIGN TABLE',
	             'CREATE SCHEMA')
	EXECUTE FUNCTION dx._on_tree_change();
ALTER EVENT TRIGGER dx_tree_change ENABLE ALWAYS;
