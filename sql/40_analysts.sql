-- Analysts: roles that may query protected tables only through dxpriv.

CREATE TABLE dx.analysts (
	role regrole PRIMARY KEY,
	added_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE dx.analysts IS 'roles restricted to d_X-private access to protected tables';
SELECT pg_catalog.pg_extension_config_dump('dx.analysts', '');
REVOKE ALL ON dx.analysts FROM PUBLIC;

-- Whether the calling role (after SET ROLE, outside SECURITY DEFINER functions) is a superuser.
CREATE FUNCTION dx._caller_is_superuser() RETURNS boolean
LANGUAGE c STABLE AS 'MODULE_PATHNAME', 'dx_caller_is_superuser';

-- Marks a role as an analyst: it loses every privilege on protected tables and may reach them only
-- through queries dxpriv validated. Superuser only.
CREATE FUNCTION dx.add_analyst(role regrole)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	t regclass;
BEGIN
	IF NOT dx._caller_is_superuser() THEN
		RAISE EXCEPTION 'only a superuser can add analysts' USING ERRCODE = '42501',
			HINT = 'Ask a superuser to run dx.add_analyst.';
	END IF;
	IF role IS NULL THEN
		RAISE EXCEPTION 'role must not be null' USING ERRCODE = '22004', HINT = 'Pass a role name such as ''analyst''.';
	END IF;
	IF (SELECT rolsuper FROM pg_roles WHERE oid = role) THEN
		RAISE EXCEPTION 'a superuser cannot be an analyst' USING ERRCODE = '22023',
			HINT = 'Superusers bypass every restriction; create an ordinary role for analysts.';
	END IF;
	INSERT INTO dx.analysts (role) VALUES (role) ON CONFLICT ON CONSTRAINT analysts_pkey DO NOTHING;
	PERFORM dx._invalidate('dx.analysts'::regclass);
	FOR t IN SELECT relid FROM dx.protected_tables LOOP
		EXECUTE format('REVOKE ALL ON TABLE %s FROM %I', t, role::text);
	END LOOP;
END $$;

-- Removes a role from the analysts (privileges are not granted back).
CREATE FUNCTION dx.remove_analyst(role regrole)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	IF NOT dx._caller_is_superuser() THEN
		RAISE EXCEPTION 'only a superuser can remove analysts' USING ERRCODE = '42501',
			HINT = 'Ask a superuser to run dx.remove_analyst.';
	END IF;
	DELETE FROM dx.analysts a WHERE a.role = remove_analyst.role;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'role "%" is not an analyst', role USING ERRCODE = '22023',
			HINT = 'See dx.analysts for the analyst roles.';
	END IF;
	PERFORM dx._invalidate('dx.analysts'::regclass);
END $$;

-- True when the current role is (or inherits from) an analyst role.
CREATE FUNCTION dx.is_analyst() RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS
$$ SELECT EXISTS (SELECT 1 FROM dx.analysts a WHERE pg_has_role(current_user, a.role, 'USAGE')) $$;
REVOKE ALL ON FUNCTION dx.is_analyst() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dx.is_analyst() TO PUBLIC;

-- Catalog visibility for analysts: declared columns of protected tables appear in
-- information_schema like columns the role could read (dxpriv substitutes these views for
-- information_schema.columns/tables in analysts' queries). Names and types only; no data.
CREATE FUNCTION dx._analyst_can_see(rel oid, col name) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS
$$ SELECT EXISTS (SELECT 1 FROM dx.protected_columns c WHERE c.relid = rel AND c.column_name = col)
       OR EXISTS (SELECT 1 FROM dx.protected_column_groups g WHERE g.relid = rel AND col = ANY (g.columns)) $$;
CREATE FUNCTION dx._analyst_can_see(rel oid) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS
$$ SELECT EXISTS (SELECT 1 FROM dx.protected_tables t WHERE t.relid = rel) $$;

DO $$
DECLARE
	cols text := pg_get_viewdef('information_schema.columns'::regclass);
	tabs text := pg_get_viewdef('information_schema.tables'::regclass);
	col_check text := 'has_column_privilege(c.oid, a.attnum, ''SELECT, INSERT, UPDATE, REFERENCES''::text)';
	tab_check text := 'has_any_column_privilege(c.oid, ''SELECT, INSERT, UPDATE, REFERENCES''::text)';
BEGIN
	IF position(col_check IN cols) = 0 OR position(tab_check IN tabs) = 0 THEN
		RAISE EXCEPTION 'dxpriv cannot derive its information_schema views on this server version';
	END IF;
	EXECUTE 'CREATE VIEW dx.analyst_columns AS '
		|| replace(cols, col_check, '(' || col_check || ' OR dx._analyst_can_see(c.oid, a.attname))');
	EXECUTE 'CREATE VIEW dx.analyst_tables AS '
		|| replace(tabs, tab_check, '(' || tab_check || ' OR dx._analyst_can_see(c.oid))');
END $$;
-- pg_stat_user_tables as analysts see it: protected tables are listed, their counters are NULL
-- (BI tools such as Metabase join it for row-count estimates).
DO $$
DECLARE
	cols text;
BEGIN
	SELECT string_agg(CASE WHEN attname IN ('relid', 'schemaname', 'relname') THEN quote_ident(attname)
	                       ELSE format('CASE WHEN dx._analyst_can_see(s.relid) THEN NULL ELSE s.%1$I END AS %1$I', attname) END,
	                  ', ' ORDER BY attnum)
	INTO cols FROM pg_attribute WHERE attrelid = 'pg_catalog.pg_stat_user_tables'::regclass AND attnum > 0;
	EXECUTE 'CREATE VIEW dx.analyst_stat_user_tables AS SELECT ' || cols || ' FROM pg_catalog.pg_stat_user_tables s';
END $$;
GRANT SELECT ON dx.analyst_columns, dx.analyst_tables, dx.analyst_stat_user_tables TO PUBLIC;
COMMENT ON VIEW dx.analyst_columns IS 'information_schema.columns as analysts see it (declared columns of protected tables included)';
COMMENT ON VIEW dx.analyst_tables IS 'information_schema.tables as analysts see it (protected tables included)';

-- Drops the stored answers that identical queries would reuse (of one table, or all).
CREATE FUNCTION dx._clear_cache(rel regclass) RETURNS int
LANGUAGE c AS 'MODULE_PATHNAME', 'dx_clear_cache';
REVOKE ALL ON FUNCTION dx._clear_cache(regclass) FROM PUBLIC;
CREATE FUNCTION dx.clear_cache(rel regclass DEFAULT NULL)
RETURNS int LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	IF rel IS NULL THEN
		IF NOT dx._caller_is_superuser() THEN
			RAISE EXCEPTION 'only a superuser can clear every cached answer' USING ERRCODE = '42501',
				HINT = 'Table owners can clear their own table: dx.clear_cache(''schema.table'').';
		END IF;
	ELSE
		PERFORM dx._check_owner(rel);
	END IF;
	RETURN dx._clear_cache(rel);
END $$;
COMMENT ON FUNCTION dx.clear_cache(regclass) IS 'drops stored noisy answers so that the next identical query is answered (and charged) afresh';
