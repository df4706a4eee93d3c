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
	r name;
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
	-- rows of tables that no longer exist (left before the DDL triggers existed) protect nothing
	DELETE FROM dx.protected_tables p WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = p.relid);
	IF FOUND THEN
		PERFORM dx._invalidate('dx.protected_tables'::regclass);
	END IF;
	-- this role and its members lose every privilege on protected tables (grants the owner makes to
	-- analysts afterwards, e.g. for BI tools, are the owner's explicit choice: README "Analysts")
	FOR t, r IN SELECT p.relid, g.rolname FROM dx.protected_tables p, pg_roles g
	            WHERE pg_has_role(g.oid, role, 'MEMBER') AND NOT g.rolsuper
	              AND g.oid <> (SELECT c.relowner FROM pg_class c WHERE c.oid = p.relid) ORDER BY 1, 2 LOOP
		EXECUTE format('REVOKE ALL ON TABLE %s FROM %I', t, r);
	END LOOP;
	PERFORM dx._citus_analyst_group(role); -- on Citus: the group every worker's pg_hba.conf rejects
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
GRANT SELECT ON dx.analyst_columns, dx.analyst_tables TO PUBLIC;
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

-- Sizes for analysts (psql \dt+, \di+, \l+, \db+). A relation's size grows with its rows, so the size
-- of a relation whose storage holds protected rows is a side channel: dxpriv substitutes these
-- functions for pg_relation_size, pg_table_size, pg_total_relation_size, pg_indexes_size,
-- pg_database_size and pg_tablespace_size in analysts' statements. They answer like the built-ins,
-- except NULL for a protected table, a partition or inheritance child of one, their indexes and
-- TOAST tables; NULL for the current database when it holds a protected table; NULL for a
-- tablespace holding the storage of one.

-- The Citus table whose shard rel is (pg_dist_shard; the shard's name ends in _<shardid> and it
-- lives in the table's schema), or NULL (not a shard, or no Citus). Shards sit on the coordinator
-- when it holds shards (citus_set_node_property(..., 'shouldhaveshards', true)) or local tables.
CREATE FUNCTION dx._citus_logical_relation(rel oid) RETURNS oid
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	sid bigint;
	logical oid;
BEGIN
	IF pg_catalog.to_regclass('pg_catalog.pg_dist_shard') IS NULL THEN
		RETURN NULL;
	END IF;
	SELECT substring(c.relname FROM '_([0-9]+)$')::bigint INTO sid FROM pg_catalog.pg_class c WHERE c.oid = rel;
	IF sid IS NULL THEN
		RETURN NULL;
	END IF;
	EXECUTE 'SELECT s.logicalrelid::oid FROM pg_catalog.pg_dist_shard s
	         JOIN pg_catalog.pg_class l ON l.oid = s.logicalrelid
	         JOIN pg_catalog.pg_class c ON c.oid = $1
	         WHERE s.shardid = $2 AND c.relnamespace = l.relnamespace'
		INTO logical USING rel, sid;
	RETURN logical;
END $$;
REVOKE ALL ON FUNCTION dx._citus_logical_relation(oid) FROM PUBLIC;

-- True when rel's storage holds rows of a protected table: rel is protected or descends from a
-- protected table (pg_inherits), or is an index or TOAST table (or TOAST index) of such a table.
-- A Citus shard of such a table (dx._citus_logical_relation) holds its rows too.
CREATE FUNCTION dx._holds_protected_rows(rel oid) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
WITH RECURSIVE base(relid) AS (
	SELECT rel
	UNION SELECT i.indrelid FROM pg_catalog.pg_index i WHERE i.indexrelid = rel
	UNION SELECT c.oid FROM pg_catalog.pg_class c WHERE c.reltoastrelid = rel
	UNION SELECT c.oid FROM pg_catalog.pg_class c JOIN pg_catalog.pg_index i ON i.indrelid = c.reltoastrelid
	      WHERE i.indexrelid = rel
), shards(relid) AS (
	SELECT relid FROM base
	UNION ALL SELECT dx._citus_logical_relation(b.relid) FROM base b
), up(relid) AS (
	SELECT relid FROM shards WHERE relid IS NOT NULL
	UNION SELECT h.inhparent FROM pg_catalog.pg_inherits h JOIN up ON h.inhrelid = up.relid
)
SELECT EXISTS (SELECT 1 FROM up JOIN dx.protected_tables p ON p.relid::oid = up.relid) $$;

-- True when tablespace spc holds the storage of a protected table (or of its descendants, indexes,
-- TOAST tables); spc NULL: when the database holds any protected table.
CREATE FUNCTION dx._protected_rows_in(spc oid) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
WITH RECURSIVE t(relid) AS (
	SELECT p.relid::oid FROM dx.protected_tables p
	UNION SELECT h.inhrelid FROM pg_catalog.pg_inherits h JOIN t ON h.inhparent = t.relid
), s(relid) AS (
	SELECT relid FROM t
	UNION SELECT i.indexrelid FROM pg_catalog.pg_index i JOIN t ON i.indrelid = t.relid
	UNION SELECT c.reltoastrelid FROM pg_catalog.pg_class c JOIN t ON c.oid = t.relid WHERE c.reltoastrelid <> 0
	UNION SELECT i.indexrelid FROM pg_catalog.pg_class c JOIN t ON c.oid = t.relid
	      JOIN pg_catalog.pg_index i ON i.indrelid = c.reltoastrelid
)
SELECT CASE WHEN spc IS NULL THEN EXISTS (SELECT 1 FROM dx.protected_tables)
       ELSE EXISTS (SELECT 1 FROM s JOIN pg_catalog.pg_class c ON c.oid = s.relid
                    WHERE c.reltablespace = spc
                       OR (c.reltablespace = 0 AND spc = (SELECT d.dattablespace FROM pg_catalog.pg_database d
                                                          WHERE d.datname = pg_catalog.current_database())))
       END $$;

-- True when the statistics counters of rel (pg_stat_user_tables) are data analysts may not see:
-- rel holds protected rows (dx._holds_protected_rows: a protected table, a partition or child of
-- one, their indexes and TOAST), or rel is one of dxpriv's own tables (the ledger's insert count is
-- other analysts' activity; the answer cache, the catalog).
CREATE FUNCTION dx._stats_hidden(rel oid) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
SELECT dx._holds_protected_rows(rel)
    OR EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = rel
               AND c.relnamespace = (SELECT n.oid FROM pg_catalog.pg_namespace n WHERE n.nspname = 'dx'))
    OR EXISTS (SELECT 1 FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid
               WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objid = rel AND d.deptype = 'e'
                 AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND e.extname = 'dxpriv') $$;

-- pg_stat_user_tables as analysts see it: every user table is listed; the counters of protected
-- tables (with their partitions and children) and of dxpriv's own tables are NULL (BI tools such
-- as Metabase join it for row-count estimates). The counters are read by dxpriv's own statement
-- inside dx._analyst_stat_user_tables (src/pg/analyst/stat_tables.cpp), so no pg_stat_get_* call
-- is ever part of an analyst's plan.
CREATE FUNCTION dx._analyst_stat_user_tables() RETURNS SETOF pg_catalog.pg_stat_user_tables
LANGUAGE c STABLE AS 'MODULE_PATHNAME', 'dx_analyst_stat_user_tables';
CREATE VIEW dx.analyst_stat_user_tables AS SELECT * FROM dx._analyst_stat_user_tables();
GRANT SELECT ON dx.analyst_stat_user_tables TO PUBLIC;

-- pg_class as analysts see it when they read its size estimates (issue 24: DuckDB's postgres attach
-- reads relpages and reltuples while loading its catalog): the analyzer swaps pg_catalog.pg_class for
-- this view in such a query (src/pg/analyst/pg_class_sizes.cpp); every relation's relpages and
-- relallvisible are 0 and its reltuples -1 (never analysed), so no row-count estimate of a
-- protected table, its indexes or its partitions reaches an analyst.
CREATE VIEW dx.analyst_pg_class AS
	SELECT c.oid, c.relname, c.relnamespace, c.reltype, c.reloftype, c.relowner, c.relam,
	       c.relfilenode, c.reltablespace, 0::int4 AS relpages, -1::float4 AS reltuples,
	       0::int4 AS relallvisible, c.reltoastrelid, c.relhasindex, c.relisshared, c.relpersistence,
	       c.relkind, c.relnatts, c.relchecks, c.relhasrules, c.relhastriggers, c.relhassubclass,
	       c.relrowsecurity, c.relforcerowsecurity, c.relispopulated, c.relreplident,
	       c.relispartition, c.relrewrite, c.relfrozenxid, c.relminmxid, c.relacl, c.reloptions,
	       c.relpartbound
	FROM pg_catalog.pg_class c;
GRANT SELECT ON dx.analyst_pg_class TO PUBLIC;
COMMENT ON VIEW dx.analyst_pg_class IS 'pg_class with unknown size estimates (relpages 0, reltuples -1, relallvisible 0): what analysts read when they select those columns';

CREATE FUNCTION dx.analyst_relation_size(regclass) RETURNS bigint
LANGUAGE c VOLATILE STRICT AS 'MODULE_PATHNAME', 'dx_analyst_size';
CREATE FUNCTION dx.analyst_relation_size(regclass, text) RETURNS bigint
LANGUAGE c VOLATILE STRICT AS 'MODULE_PATHNAME', 'dx_analyst_size';
CREATE FUNCTION dx.analyst_table_size(regclass) RETURNS bigint
LANGUAGE c VOLATILE STRICT AS 'MODULE_PATHNAME', 'dx_analyst_size';
CREATE FUNCTION dx.analyst_total_relation_size(regclass) RETURNS bigint
LANGUAGE c VOLATILE STRICT AS 'MODULE_PATHNAME', 'dx_analyst_size';
CREATE FUNCTION dx.analyst_indexes_size(regclass) RETURNS bigint
LANGUAGE c VOLATILE STRICT AS 'MODULE_PATHNAME', 'dx_analyst_size';
CREATE FUNCTION dx.analyst_database_size(name) RETURNS bigint
LANGUAGE c VOLATILE STRICT AS 'MODULE_PATHNAME', 'dx_analyst_size';
CREATE FUNCTION dx.analyst_database_size(oid) RETURNS bigint
LANGUAGE c VOLATILE STRICT AS 'MODULE_PATHNAME', 'dx_analyst_size';
CREATE FUNCTION dx.analyst_tablespace_size(name) RETURNS bigint
LANGUAGE c VOLATILE STRICT AS 'MODULE_PATHNAME', 'dx_analyst_size';
CREATE FUNCTION dx.analyst_tablespace_size(oid) RETURNS bigint
LANGUAGE c VOLATILE STRICT AS 'MODULE_PATHNAME', 'dx_analyst_size';
COMMENT ON FUNCTION dx.analyst_table_size(regclass) IS 'pg_table_size as analysts see it: NULL for relations holding protected rows';
COMMENT ON FUNCTION dx.analyst_database_size(name) IS 'pg_database_size as analysts see it: NULL for the current database when it holds protected tables';

-- What an analyst may see about her own use (issue 12): her ledger rows and the policies of the
-- tables she may query. Rows of the current role and of the roles it belongs to (pg_has_role
-- USAGE), as dx.budgets; security-barrier views, so a leaky function in the reader's WHERE only
-- ever sees those rows. id numbers the reader's rows (1, 2, ... in ledger order): the ledger's own
-- ids come from one sequence for every role, and their gaps would count other analysts' charges.
CREATE VIEW dx.my_ledger WITH (security_barrier) AS
	SELECT pg_catalog.row_number() OVER (ORDER BY l.id) AS id, l.at, l.role, l.relid AS "table", l.mechanism, l.epsilon, l.delta, l.scales, l.period_start,
	       CASE WHEN l.session_role::oid = (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = session_user)
	            THEN l.query END AS query,
	       l.budget
	FROM dx.ledger l
	WHERE pg_catalog.pg_has_role(l.role, 'USAGE');
COMMENT ON VIEW dx.my_ledger IS 'the ledger rows charged to the current role and the roles it belongs to (query text only for statements of the current session user), with the budget they were paid from';

CREATE VIEW dx.my_columns WITH (security_barrier) AS
	SELECT g.relid AS "table", d.column_name, d.columns, d.domain, d.metric, p.presence,
	       g.role AS budget_role, b.granted, b.spent, b.remaining, b.refresh, b.period_end,
	       p.per_query_cap, p.delta AS per_query_delta, b.delta_remaining
	FROM dx.budget_grants g
	JOIN dx.protected_tables p ON p.relid = g.relid
	CROSS JOIN LATERAL (
		SELECT c.column_name, ARRAY[c.column_name] AS columns, c.domain, c.metric
		FROM dx.protected_columns c WHERE c.relid = g.relid
		UNION ALL
		SELECT NULL::name, cg.columns, cg.domain, cg.metric
		FROM dx.protected_column_groups cg WHERE cg.relid = g.relid
	) d
	CROSS JOIN LATERAL (
		SELECT g.granted, CASE WHEN g.period_end <= now() THEN 0::float8 ELSE g.spent END AS spent,
		       greatest(g.granted - CASE WHEN g.period_end <= now() THEN 0::float8 ELSE g.spent END, 0) AS remaining,
		       g.refresh,
		       CASE WHEN g.period_end <= now() THEN (dx._period(g.refresh_anchor, g.refresh, now())).period_end
		            ELSE g.period_end END AS period_end,
		       greatest(g.delta_granted - CASE WHEN g.period_end <= now() THEN 0::float8 ELSE g.delta_spent END, 0)
		           AS delta_remaining
	) b
	WHERE pg_catalog.pg_has_role(g.role, 'USAGE');
COMMENT ON VIEW dx.my_columns IS 'declared domains and metrics of the protected tables the current role (or a role it belongs to) holds a budget on, with that budget';
GRANT SELECT ON dx.my_ledger, dx.my_columns TO PUBLIC;
