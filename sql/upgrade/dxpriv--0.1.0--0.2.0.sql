-- dxpriv 0.1.0 -> 0.2.0 (ALTER EXTENSION dxpriv UPDATE TO '0.2.0'): brings a 0.1.0 catalog to what
-- CREATE EXTENSION dxpriv VERSION '0.2.0' creates, without touching the rows of dx's tables (the
-- ledger, budgets, policies, declared columns, privacy units and their keys, releases, analysts).
-- No table of dx changes shape between 0.1.0 and 0.2.0 (sql/00_catalog.sql is unchanged).
--
-- HOW TO KEEP THIS FILE IN STEP WITH sql/ (until 0.2.0 is tagged):
--   1. This file covers sql/ as of main 19905dc: `git diff 19905dc HEAD -- sql/` lists what it does
--      not cover yet (`git diff v0.1.0 HEAD -- sql/`: everything since the release). On failure,
--      scripts/test-upgrade.sh prints the difference between an upgraded and a fresh catalog
--      (- fresh, + upgraded): each hunk names the object to add, replace or drop here.
--   2. A changed function body with the same signature and result: copy the new CREATE FUNCTION
--      here as CREATE OR REPLACE FUNCTION (keeps its grants; re-run its REVOKE/COMMENT if changed).
--      A changed result type or OUT columns (dx.last_release): DROP FUNCTION, CREATE, then repeat
--      its COMMENT and GRANT/REVOKE. A changed argument list is a new function: DROP the old one.
--   3. A new object: copy its CREATE and its COMMENT/GRANT/REVOKE lines (sql/90_privileges.sql
--      holds most REVOKEs). A whole new file of sql/ goes in whole (47_citus_setup, 95_ddl_events).
--   4. A removed object: DROP it (a removed C function must be dropped: the new dxpriv.so no
--      longer has its symbol).
--   5. A changed view with the same columns: CREATE OR REPLACE VIEW (keeps grants); otherwise DROP
--      VIEW + CREATE VIEW + its GRANT/COMMENT.
--   6. A catalog table change: ALTER TABLE ... ADD COLUMN ... DEFAULT / ADD CONSTRAINT ... NOT VALID
--      then VALIDATE; never DROP/CREATE a table of dx (its rows are the ledger and policies); a new
--      table of dx that holds configuration needs pg_extension_config_dump like in sql/. ADD COLUMN
--      puts the column last: add it last in sql/'s CREATE TABLE too (the test compares the order).
--   7. `make install && make test-upgrade`: it upgrades a 0.1.0 database holding policies, budgets,
--      ledger rows, a privacy unit and a release, and fails on any difference between the upgraded
--      catalog and a fresh 0.2.0 install (pg_dump --binary-upgrade of the extension's members, ACLs
--      and comments included), or on any changed row of dx's tables.

\echo Use "ALTER EXTENSION dxpriv UPDATE TO '0.2.0'" to load this file. \quit

-- sql/10_dba.sql: revoking also from PUBLIC and from members of analyst roles; temporary tables
-- refused; Citus grants refused on protection; rows of dropped tables removable; contents versions
-- (answer-cache freshness: a statement trigger on every protected table).
-- Takes every privilege on rel away from PUBLIC, from the analyst roles and from every role that
-- is a member of one (they reach it only through dxpriv; Citus copies a table's grants onto its
-- shards). Roles that no longer exist are skipped.
CREATE OR REPLACE FUNCTION dx._revoke_from_analysts(rel regclass) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	r name;
BEGIN
	EXECUTE format('REVOKE ALL ON TABLE %s FROM PUBLIC', rel);
	IF to_regclass('dx.analysts') IS NULL THEN
		RETURN;
	END IF;
	FOR r IN EXECUTE 'SELECT DISTINCT g.rolname FROM pg_catalog.pg_roles g, dx.analysts a, pg_catalog.pg_roles ar '
	                 'WHERE ar.oid = a.role AND pg_catalog.pg_has_role(g.oid, a.role, ''MEMBER'') AND NOT g.rolsuper '
	                 'AND g.oid <> (SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = $1) ORDER BY 1' USING rel LOOP
		EXECUTE format('REVOKE ALL ON TABLE %s FROM %I', rel, r);
	END LOOP;
END $$;

-- Contents versions (answer-cache freshness, README "Answer reuse"): one row per transaction that
-- wrote to a protected table's tree (n: how many such transactions the row stands for). The answer
-- cache keys a release on sum(n) as seen by the statement's snapshot.
CREATE TABLE dx.contents_changes (
	relid oid NOT NULL,
	xid xid8 NOT NULL,
	n bigint NOT NULL DEFAULT 1,
	CONSTRAINT contents_changes_pkey PRIMARY KEY (relid, xid)
);
REVOKE ALL ON TABLE dx.contents_changes FROM PUBLIC;

-- Statement-level trigger of every member of a protected tree: notes that this transaction wrote.
CREATE FUNCTION dx._note_contents_change() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	INSERT INTO dx.contents_changes (relid, xid) VALUES (TG_ARGV[0]::oid, pg_current_xact_id())
	ON CONFLICT ON CONSTRAINT contents_changes_pkey DO NOTHING;
	RETURN NULL;
END $$;
REVOKE EXECUTE ON FUNCTION dx._note_contents_change() FROM PUBLIC;

-- Installs (drop: removes) the contents-version trigger dx_contents_<rel> on every member of rel's
-- inheritance tree. Not on Citus (triggers block create_distributed_table): without the trigger a
-- release is never replayed from the answer cache.
CREATE FUNCTION dx._contents_triggers(rel regclass, drop bool) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	m oid;
	tg text := 'dx_contents_' || rel::oid::text;
BEGIN
	IF NOT drop AND EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
		RETURN;
	END IF;
	FOR m IN WITH RECURSIVE tree(relid) AS (
			SELECT rel::oid UNION SELECT i.inhrelid FROM pg_inherits i JOIN tree t ON i.inhparent = t.relid)
		SELECT relid FROM tree LOOP
		IF drop THEN
			IF EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = m AND tgname = tg) THEN
				EXECUTE format('DROP TRIGGER %I ON %s', tg, m::regclass);
			END IF;
		ELSIF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = m AND tgname = tg) THEN
			BEGIN -- a member that cannot carry it (e.g. a foreign partition) leaves the table uncached
				EXECUTE format('CREATE TRIGGER %I AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON %s '
				               'FOR EACH STATEMENT EXECUTE FUNCTION dx._note_contents_change(%s)', tg, m::regclass, rel::oid);
				EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER %I', m::regclass, tg);
			EXCEPTION WHEN feature_not_supported OR wrong_object_type THEN
				NULL;
			END;
		END IF;
	END LOOP;
END $$;
REVOKE EXECUTE ON FUNCTION dx._contents_triggers(regclass, bool) FROM PUBLIC;

-- Protects a table: its rows are only released through d_X-private aggregates. delta is the
-- per-query delta the owner allows for (epsilon, delta) noise (0: pure epsilon only). Protecting a
-- protected table again sets its presence distance and delta (declared columns and budgets stay).
CREATE OR REPLACE FUNCTION dx.protect_table(rel regclass, presence float8 DEFAULT 1.0, delta float8 DEFAULT 0)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	PERFORM dx._check_owner(rel);
	IF presence IS NULL OR presence = 'NaN'::float8 OR presence <= 0 THEN
		RAISE EXCEPTION 'presence distance must be positive, got %', presence USING ERRCODE = '22023',
			HINT = 'Use 1.0 for standard add/remove-one-row privacy, or ''Infinity'' when the row count is public.';
	END IF;
	PERFORM dx._check_table_delta(delta);
	IF (SELECT relkind FROM pg_class WHERE oid = rel) NOT IN ('r', 'p') THEN
		RAISE EXCEPTION '"%" is not a table', rel USING ERRCODE = '42809',
			HINT = 'Only ordinary and partitioned tables can be protected.';
	END IF;
	IF (SELECT relpersistence FROM pg_class WHERE oid = rel) = 't' THEN
		RAISE EXCEPTION 'temporary table % cannot be protected', rel USING ERRCODE = '0A000',
			HINT = 'A temporary table disappears with its session, without DDL that dxpriv''s catalog could follow; protect a permanent table.';
	END IF;
	IF to_regclass('dx.public_tables') IS NOT NULL AND EXISTS (SELECT 1 FROM dx.public_tables WHERE relid = rel) THEN
		RAISE EXCEPTION 'table "%" is public and cannot be protected', rel USING ERRCODE = '22023',
			HINT = 'Call dx.set_public(table, false) first.';
	END IF;
	PERFORM dx._refuse_citus_grants(rel); -- 47_citus_setup.sql
	INSERT INTO dx.protected_tables (relid, presence, delta) VALUES (rel, presence, delta)
	ON CONFLICT ON CONSTRAINT protected_tables_pkey DO UPDATE SET presence = excluded.presence, delta = excluded.delta;
	PERFORM dx._revoke_from_analysts(rel);
	PERFORM dx._contents_triggers(rel, false);
	PERFORM dx._invalidate(rel);
	PERFORM dx._invalidate('dx.protected_tables'::regclass);
END $$;

-- Removes a table's policy, declared columns and budgets (the ledger is kept). The rows of a
-- table that no longer exists (left by a version without the DDL triggers) are removed by anyone:
-- they protect nothing.
CREATE OR REPLACE FUNCTION dx.unprotect_table(rel regclass)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	IF rel IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pg_class WHERE oid = rel) THEN
		DELETE FROM dx.protected_tables WHERE relid = rel;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'table % does not exist and is not protected', rel::oid USING ERRCODE = '42P01',
				HINT = 'See dx.protected_tables for the protected tables.';
		END IF;
		PERFORM dx._invalidate('dx.protected_tables'::regclass);
		RETURN;
	END IF;
	PERFORM dx._check_owner(rel);
	DELETE FROM dx.protected_tables WHERE relid = rel;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'table "%" is not protected', rel USING ERRCODE = '22023',
			HINT = 'See dx.protected_tables for the protected tables.';
	END IF;
	PERFORM dx._contents_triggers(rel, true);
	PERFORM dx._invalidate(rel);
	PERFORM dx._invalidate('dx.protected_tables'::regclass);
END $$;

-- Declares (public = true) or undeclares a table public.
CREATE OR REPLACE FUNCTION dx.set_public(rel regclass, public bool DEFAULT true)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	PERFORM dx._check_owner(rel);
	IF public IS NULL THEN
		RAISE EXCEPTION 'public must be true or false' USING ERRCODE = '22004';
	END IF;
	IF NOT public THEN
		DELETE FROM dx.public_tables WHERE relid = rel;
		PERFORM dx._invalidate('dx.public_tables'::regclass);
		RETURN;
	END IF;
	IF (SELECT relkind FROM pg_class WHERE oid = rel) NOT IN ('r', 'p') THEN
		RAISE EXCEPTION '"%" is not a table', rel USING ERRCODE = '42809',
			HINT = 'Only ordinary and partitioned tables can be public; copy the rows of a view into a table.';
	END IF;
	IF (SELECT relpersistence FROM pg_class WHERE oid = rel) = 't' THEN
		RAISE EXCEPTION 'temporary table % cannot be public', rel USING ERRCODE = '0A000',
			HINT = 'A temporary table disappears with its session, without DDL that dxpriv''s catalog could follow; use a permanent table.';
	END IF;
	IF EXISTS (WITH RECURSIVE up(r) AS (SELECT rel::oid UNION
	                 SELECT i.inhparent FROM pg_inherits i JOIN up ON i.inhrelid = up.r),
	               down(r) AS (SELECT rel::oid UNION
	                 SELECT i.inhrelid FROM pg_inherits i JOIN down ON i.inhparent = down.r)
	           SELECT 1 FROM dx.protected_tables p WHERE p.relid::oid IN (SELECT r FROM up UNION SELECT r FROM down)) THEN
		RAISE EXCEPTION 'table "%" is protected (or shares rows with a protected table) and cannot be public', rel
			USING ERRCODE = '22023', HINT = 'A table is either protected or public.';
	END IF;
	INSERT INTO dx.public_tables (relid) VALUES (rel) ON CONFLICT (relid) DO NOTHING;
	PERFORM dx._invalidate('dx.public_tables'::regclass);
END $$;

-- The protected tables of 0.1.0 get the contents-version trigger dx.protect_table now installs
-- (without it their answers are never reused from the cache). Rows left by 0.1.0 for tables dropped
-- since (0.1.0 had no DDL triggers) are kept and skipped: they protect nothing.
SELECT dx._contents_triggers(p.relid, false) FROM dx.protected_tables p
WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = p.relid::oid);

-- sql/20_aggregates.sql: dx.last_release() gains the columns release_epsilon and postprocessing (a new result type:
-- dropped and created again).
DROP FUNCTION dx.last_release();
CREATE FUNCTION dx.last_release()
RETURNS TABLE (cell int, aggregate int, kind text, expression text, group_key text, component text,
               answer float8, noise text, noise_scale float8, ci95_half_width float8, ci95_low float8,
               ci95_high float8, interval_method text, epsilon float8, delta float8, reused boolean,
               release_epsilon float8, postprocessing text)
LANGUAGE c STRICT VOLATILE PARALLEL RESTRICTED AS 'MODULE_PATHNAME', 'dx_last_release';
COMMENT ON FUNCTION dx.last_release() IS 'answers released by the session''s last statement with dx aggregates, with noise family, scale and 95% interval (exact law of each cell; delta method for an average; projected for consistent totals) and the free post-processing applied; free';

-- sql/22_privacy_units.sql: rows ranked under a per-execution key (dx._unit_rank replaces the C
-- function dx._unit_hash, whose symbol the 0.2.0 library no longer has). The stored table keys
-- are kept.
DROP FUNCTION dx._unit_hash(bytea, "any");
COMMENT ON TABLE dx.privacy_units IS 'privacy unit column, contribution bounds and key of protected tables (superusers only)';

-- The rank of a row within its unit: SipHash-2-4 (src/core/siphash.h) of the row's (tableoid, ctid)
-- under a key drawn for each execution of the statement (the kernel CSPRNG; under the superuser-only
-- dxpriv.test_seed, a key derived from the seed). Independent of the row's values, so which rows the
-- bound keeps never depends on them (README "Stable contribution bounding"). Placed by the analyzer
-- in the statements it rewrites; it reads no table. VOLATILE: evaluated once per row, in the level
-- that reads the table.
CREATE FUNCTION dx._unit_rank(tableoid oid, ctid tid) RETURNS bigint
LANGUAGE c VOLATILE STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_unit_rank';
COMMENT ON FUNCTION dx._unit_rank(oid, tid) IS 'internal: per-execution keyed SipHash-2-4 of a row''s physical identity (row ranking of privacy units)';

-- Declares (or changes) the privacy unit of a protected table: neighbouring tables then differ in
-- all the rows of one unit, and each unit contributes at most max_rows_per_unit rows to a query.
-- max_groups_per_unit and max_rows_per_unit_per_group (NULL: max_rows_per_unit) are validated and
-- recorded but not applied (README "Stable contribution bounding"). The unit column cannot be a
-- declared column. The key is kept when the unit is declared again.
CREATE OR REPLACE FUNCTION dx.set_privacy_unit(rel regclass, column_name name, max_rows_per_unit integer,
	max_groups_per_unit integer DEFAULT NULL, max_rows_per_unit_per_group integer DEFAULT NULL)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	PERFORM dx._check_owner(rel);
	PERFORM dx._check_protected(rel);
	IF column_name IS NULL OR NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = rel
			AND a.attname = set_privacy_unit.column_name AND a.attnum > 0 AND NOT a.attisdropped) THEN
		RAISE EXCEPTION 'column "%" of table "%" does not exist', set_privacy_unit.column_name, rel
			USING ERRCODE = '42703', HINT = 'Name the column that identifies a person, e.g. user_id.';
	END IF;
	IF EXISTS (SELECT 1 FROM dx.protected_columns c WHERE c.relid = rel AND c.column_name = set_privacy_unit.column_name)
	   OR EXISTS (SELECT 1 FROM dx.protected_column_groups g WHERE g.relid = rel AND set_privacy_unit.column_name = ANY (g.columns)) THEN
		RAISE EXCEPTION 'column "%" is declared and cannot be the privacy unit', set_privacy_unit.column_name
			USING ERRCODE = '22023',
			HINT = 'Remove its declaration with dx.unset_column first: analysts must never group by or filter on the unit.';
	END IF;
	IF max_rows_per_unit IS NULL OR max_rows_per_unit < 1 OR max_rows_per_unit > 100000
	   OR max_groups_per_unit < 1 OR max_groups_per_unit > 100000
	   OR max_rows_per_unit_per_group < 1 OR max_rows_per_unit_per_group > 100000 THEN
		RAISE EXCEPTION 'contribution bounds must be between 1 and 100000, got %, %, %', max_rows_per_unit,
			max_groups_per_unit, max_rows_per_unit_per_group USING ERRCODE = '22023',
			HINT = 'Give the most rows one unit may contribute, e.g. dx.set_privacy_unit(''visits'', ''person_id'', 10); '
			       'the noise of every answer grows with it.';
	END IF;
	PERFORM dx._refuse_distributed_unit(rel); -- 47_citus_setup.sql
	INSERT INTO dx.privacy_units AS u (relid, unit_column, max_rows_per_unit, max_groups_per_unit,
		max_rows_per_unit_per_group, hash_key)
	VALUES (rel, set_privacy_unit.column_name, max_rows_per_unit, max_groups_per_unit, max_rows_per_unit_per_group,
		dx._unit_key())
	ON CONFLICT ON CONSTRAINT privacy_units_pkey DO UPDATE SET unit_column = excluded.unit_column,
		max_rows_per_unit = excluded.max_rows_per_unit, max_groups_per_unit = excluded.max_groups_per_unit,
		max_rows_per_unit_per_group = excluded.max_rows_per_unit_per_group;
	PERFORM dx._invalidate(rel);
END $$;
COMMENT ON FUNCTION dx.set_privacy_unit(regclass, name, integer, integer, integer) IS 'declares the privacy unit column of a protected table and its contribution bounds';

-- sql/40_analysts.sql: dx.add_analyst revokes from the analyst's member roles too;
-- dx.analyst_stat_user_tables reads the counters through a C function; dx.my_ledger numbers the
-- reader's own rows.
-- through queries dxpriv validated. Superuser only.
CREATE OR REPLACE FUNCTION dx.add_analyst(role regrole)
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

DROP VIEW dx.analyst_stat_user_tables;

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

-- What an analyst may see about her own use (issue 12): her ledger rows and the policies of the
-- tables she may query. Rows of the current role and of the roles it belongs to (pg_has_role
-- USAGE), as dx.budgets; security-barrier views, so a leaky function in the reader's WHERE only
-- ever sees those rows. id numbers the reader's rows (1, 2, ... in ledger order): the ledger's own
-- ids come from one sequence for every role, and their gaps would count other analysts' charges.
CREATE OR REPLACE VIEW dx.my_ledger WITH (security_barrier) AS
	SELECT pg_catalog.row_number() OVER (ORDER BY l.id) AS id, l.at, l.role, l.relid AS "table", l.mechanism, l.epsilon, l.delta, l.scales, l.period_start,
	       CASE WHEN l.session_role::oid = (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = session_user)
	            THEN l.query END AS query,
	       l.budget
	FROM dx.ledger l
	WHERE pg_catalog.pg_has_role(l.role, 'USAGE');
COMMENT ON VIEW dx.my_ledger IS 'the ledger rows charged to the current role and the roles it belongs to (query text only for statements of the current session user), with the budget they were paid from';

-- sql/90_privileges.sql
REVOKE EXECUTE ON FUNCTION dx._stats_hidden(oid) FROM PUBLIC;

-- sql/47_citus_setup.sql (new in 0.2.0, whole)
-- dx.check_citus_setup(): what an operator runs on a Citus coordinator to see that the set-up dxpriv
-- relies on holds (README, "Citus: operator checklist"). One row per check; ok is false when the
-- check failed and NULL when it does not apply. Run as a superuser (it reads pg_hba_file_rules on
-- the workers through run_command_on_workers). Nothing here names a Citus object statically.
-- Called by dx.set_privacy_unit: a unit is bounded on the workers when the table is distributed by
-- the unit column, through an intermediate result otherwise (planner/unit_source.h); append- and
-- range-distributed tables (which dxpriv does not split) are refused when the unit is declared.
CREATE FUNCTION dx._refuse_distributed_unit(rel regclass)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	method text;
BEGIN
	IF to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
		RETURN;
	END IF;
	EXECUTE 'SELECT p.partmethod::text FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid = $1'
		INTO method USING rel;
	IF method IN ('a', 'r') THEN
		RAISE EXCEPTION 'table % is an append- or range-distributed Citus table and cannot have a privacy unit', rel
			USING ERRCODE = '0A000',
			HINT = 'Privacy units are supported on hash-distributed tables (best distributed by the unit column), '
			       'reference tables and single-shard tables.';
	END IF;
END $$;
REVOKE ALL ON FUNCTION dx._refuse_distributed_unit(regclass) FROM PUBLIC;

-- Called by dx.add_analyst on a Citus coordinator: the analyst becomes a member of the NOLOGIN group
-- role dx_analysts (created here and on every worker, with the membership), so
-- that one pg_hba.conf block on every worker rejects every analyst, present and future:
--   host all +dx_analysts 0.0.0.0/0 reject
--   host all +dx_analysts ::/0 reject
-- (at the top of the file). The group holds no privilege. A NOTICE repeats the block.
CREATE FUNCTION dx._citus_analyst_group(analyst regrole)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	propagation text;
BEGIN
	IF to_regclass('pg_catalog.pg_dist_node') IS NULL THEN
		RETURN;
	END IF;
	-- here without Citus's propagation (a propagated CREATE ROLE would hold the workers' catalog
	-- until this transaction ends, and the statement below, on its own connections, would wait for
	-- it), then the same on every worker by hand: Citus propagates the membership only of roles it
	-- distributed (a worker without the analyst's role has nothing to reject)
	propagation := pg_catalog.current_setting('citus.enable_ddl_propagation', true);
	PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'off', true);
	IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'dx_analysts') THEN
		CREATE ROLE dx_analysts NOLOGIN;
	END IF;
	IF NOT pg_catalog.pg_has_role(analyst, 'dx_analysts', 'MEMBER') THEN
		EXECUTE format('GRANT dx_analysts TO %s', analyst);
	END IF;
	PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', coalesce(propagation, 'on'), true);
	EXECUTE format('SELECT pg_catalog.array_agg(success) FROM pg_catalog.run_command_on_workers(%L)',
		format($c$DO $d$ BEGIN PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'off', true);
		IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'dx_analysts') THEN
			CREATE ROLE dx_analysts NOLOGIN; END IF;
		IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = %L)
		   AND NOT pg_catalog.pg_has_role(%L, 'dx_analysts', 'MEMBER') THEN GRANT dx_analysts TO %I; END IF;
		END $d$ $c$, analyst::text, analyst::text, analyst::text));
	RAISE NOTICE 'analyst % is a member of role dx_analysts, which every Citus worker must reject', analyst
		USING HINT = 'Once per worker, at the top of its pg_hba.conf, then SELECT pg_reload_conf() there: '
		             '"host all +dx_analysts 0.0.0.0/0 reject" and "host all +dx_analysts ::/0 reject" '
		             '(dx.check_citus_setup() checks it).';
END $$;
REVOKE ALL ON FUNCTION dx._citus_analyst_group(regrole) FROM PUBLIC;

-- Called by dx.protect_table: a Citus table whose privileges (table or column) reach PUBLIC or a role
-- an analyst has the privileges of is refused, because Citus copies those grants onto every shard,
-- where an analyst who reaches a worker reads raw rows. (A grant made after protection is refused by
-- the GRANT guard; one made before create_distributed_table of a protected local table is reported
-- by dx.check_citus_setup.)
CREATE FUNCTION dx._refuse_citus_grants(rel regclass)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	distributed boolean;
	grantees text;
BEGIN
	IF to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
		RETURN;
	END IF;
	EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid = $1)'
		INTO distributed USING rel;
	IF NOT distributed THEN
		RETURN;
	END IF;
	SELECT string_agg(DISTINCT coalesce(r.rolname, 'PUBLIC'), ', ') INTO grantees
	FROM (SELECT (aclexplode(c.relacl)).grantee FROM pg_class c WHERE c.oid = rel
	      UNION ALL
	      SELECT (aclexplode(a.attacl)).grantee FROM pg_attribute a WHERE a.attrelid = rel AND a.attacl IS NOT NULL) g
	LEFT JOIN pg_roles r ON r.oid = g.grantee
	WHERE g.grantee = 0
	   OR (to_regclass('dx.analysts') IS NOT NULL
	       AND EXISTS (SELECT 1 FROM dx.analysts an WHERE pg_has_role(an.role, g.grantee, 'USAGE')));
	IF grantees IS NOT NULL THEN
		RAISE EXCEPTION 'distributed table % has privileges granted to %, which Citus copies onto its shards', rel, grantees
			USING ERRCODE = '42501',
			HINT = format('REVOKE them first (e.g. REVOKE ALL ON %s FROM PUBLIC), then protect the table; analysts '
			              'query it through dxpriv without any privilege.', rel);
	END IF;
END $$;
REVOKE ALL ON FUNCTION dx._refuse_citus_grants(regclass) FROM PUBLIC;

CREATE FUNCTION dx.check_citus_setup(OUT check_name text, OUT ok boolean, OUT detail text)
RETURNS SETOF record LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	a regrole;
	r record;
	bad text;
	libs text := current_setting('shared_preload_libraries');
BEGIN
	IF NOT dx._caller_is_superuser() THEN
		RAISE EXCEPTION 'only a superuser can check the Citus set-up' USING ERRCODE = '42501',
			HINT = 'Run dx.check_citus_setup() as a superuser on the coordinator.';
	END IF;
	IF to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
		check_name := 'citus installed'; ok := NULL; detail := 'Citus is not installed in this database.';
		RETURN NEXT;
		RETURN;
	END IF;

	check_name := 'citus loaded before dxpriv';
	ok := position('citus' IN libs) > 0 AND position('citus' IN libs) < position('dxpriv' IN libs);
	detail := 'shared_preload_libraries = ' || quote_literal(libs);
	RETURN NEXT;

	-- dxpriv on every worker (its per-point tables are stored there)
	check_name := 'dxpriv installed on every worker';
	bad := NULL;
	FOR r IN EXECUTE 'SELECT nodename, nodeport, success, result FROM pg_catalog.run_command_on_workers('
	                 '$c$SELECT count(*) FROM pg_catalog.pg_extension WHERE extname = ''dxpriv''$c$)' LOOP
		IF NOT r.success OR r.result <> '1' THEN
			bad := concat_ws(', ', bad, format('%s:%s (%s)', r.nodename, r.nodeport, r.result));
		END IF;
	END LOOP;
	ok := bad IS NULL; detail := coalesce('missing or unreachable: ' || bad, 'every worker answered');
	RETURN NEXT;

	-- analysts cannot log in on a worker: their role is absent or NOLOGIN there, or pg_hba.conf has a
	-- reject line naming them before any other line that names them or "all" (database and address
	-- columns are not compared: a reject line limited to some databases or addresses counts)
	FOR a IN SELECT role FROM dx.analysts ORDER BY role::text LOOP
		check_name := format('workers reject logins of analyst %s', a);
		bad := NULL;
		FOR r IN EXECUTE format('SELECT nodename, nodeport, success, result FROM pg_catalog.run_command_on_workers(%L)',
			format($c$SELECT CASE WHEN NOT coalesce((SELECT rolcanlogin FROM pg_catalog.pg_roles WHERE rolname = %1$L), false)
			           THEN 'nologin'
			           WHEN (SELECT min(line_number) FROM pg_catalog.pg_hba_file_rules
			                 WHERE auth_method = 'reject' AND (%1$L = ANY (user_name) OR ('+dx_analysts' = ANY (user_name)
			                       AND pg_catalog.pg_has_role(%1$L, 'dx_analysts', 'MEMBER'))))
			                < coalesce((SELECT min(line_number) FROM pg_catalog.pg_hba_file_rules
			                            WHERE auth_method <> 'reject' AND (user_name && ARRAY['all', %1$L])), 2147483647)
			           THEN 'rejected' ELSE 'accepted' END$c$, a::text)) LOOP
			IF NOT r.success OR r.result NOT IN ('nologin', 'rejected') THEN
				bad := concat_ws(', ', bad, format('%s:%s (%s)', r.nodename, r.nodeport, r.result));
			END IF;
		END LOOP;
		ok := bad IS NULL;
		detail := coalesce('may log in on ' || bad || ': add "host all +dx_analysts 0.0.0.0/0 reject" (and ::/0) '
		                   'at the top of the worker''s pg_hba.conf, or ALTER ROLE ... NOLOGIN on the worker',
		                   'no worker accepts the role');
		RETURN NEXT;
	END LOOP;

	-- no privilege on a protected table for PUBLIC or an analyst (Citus copies grants onto shards)
	check_name := 'no grants on protected tables to PUBLIC or analysts';
	bad := NULL;
	FOR r IN SELECT t.relid::regclass AS rel, coalesce(g.rolname, 'PUBLIC') AS grantee, acl.privilege_type
	         FROM dx.protected_tables t JOIN pg_class c ON c.oid = t.relid,
	              LATERAL aclexplode(c.relacl) acl LEFT JOIN pg_roles g ON g.oid = acl.grantee
	         WHERE acl.grantee = 0 OR EXISTS (SELECT 1 FROM dx.analysts an WHERE pg_has_role(an.role, acl.grantee, 'USAGE'))
	         ORDER BY 1, 2, 3 LOOP
		bad := concat_ws(', ', bad, format('%s on %s to %s', r.privilege_type, r.rel, r.grantee));
	END LOOP;
	ok := bad IS NULL; detail := coalesce(bad || ': REVOKE them (dx.add_analyst revokes an analyst''s)', 'none');
	RETURN NEXT;

	-- the settings Citus replays on the workers: dxpriv refuses analysts' distributed statements after a
	-- propagated SET LOCAL, so 'local' as the server default only makes such statements fail
	check_name := 'citus.propagate_set_commands is none by default';
	SELECT s.reset_val INTO bad FROM pg_settings s WHERE s.name = 'citus.propagate_set_commands';
	ok := bad = 'none'; detail := 'default: ' || coalesce(bad, '?');
	RETURN NEXT;

	-- no schema on a worker's default search_path is writable by PUBLIC or an analyst: the statements
	-- dxpriv sends run there as the table owner
	check_name := 'worker search_path holds no schema analysts can write';
	bad := NULL;
	FOR r IN EXECUTE format('SELECT nodename, nodeport, success, result FROM pg_catalog.run_command_on_workers(%L)',
		format($c$SELECT coalesce(pg_catalog.string_agg(n.nspname, ' '), '') FROM pg_catalog.pg_namespace n
		          WHERE n.nspname = ANY (pg_catalog.current_schemas(false)) AND n.nspname <> 'pg_catalog'
		            AND (pg_catalog.has_schema_privilege('public', n.oid, 'CREATE')
		                 OR EXISTS (SELECT 1 FROM pg_catalog.pg_roles r WHERE r.rolname = ANY (%L::text[])
		                            AND (r.oid = n.nspowner OR pg_catalog.has_schema_privilege(r.oid, n.oid, 'CREATE'))))$c$,
		       (SELECT coalesce(array_agg(role::text), '{}') FROM dx.analysts))) LOOP
		IF NOT r.success OR r.result <> '' THEN
			bad := concat_ws(', ', bad, format('%s:%s (%s)', r.nodename, r.nodeport, r.result));
		END IF;
	END LOOP;
	ok := bad IS NULL; detail := coalesce('writable: ' || bad, 'none');
	RETURN NEXT;
END $$;
REVOKE ALL ON FUNCTION dx.check_citus_setup() FROM PUBLIC;

-- sql/95_ddl_events.sql (new in 0.2.0, whole)
-- The catalog follows DDL (README "DDL on protected tables"): event triggers keep dx's rows
-- consistent with the tables they describe. Created by CREATE EXTENSION, which runs as a superuser
-- (dxpriv.control: superuser = true); event triggers need one.
-- Tables and schemas are referenced by oid (regclass), so RENAME TABLE, SET SCHEMA and ALTER
-- SCHEMA RENAME need nothing; columns are referenced by name and followed below.

-- rel and, when recurse, every table that inherits from it (ALTER TABLE without ONLY recurses).
CREATE FUNCTION dx._ddl_family(rel oid, recurse boolean) RETURNS SETOF oid
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
	WITH RECURSIVE down(r) AS (
		SELECT rel
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

-- ddl_command_start of ALTER TABLE: reads the parse tree (C) and calls the two functions above.
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

CREATE EVENT TRIGGER dx_ddl_start ON ddl_command_start WHEN TAG IN ('ALTER TABLE')
	EXECUTE FUNCTION dx._on_ddl_start();
CREATE EVENT TRIGGER dx_sql_drop ON sql_drop EXECUTE FUNCTION dx._on_sql_drop();

-- Policy version (analysis memo, src/pg/planner/analysis_memo.h): every write to a table of the policy is
-- noted in dx.contents_changes under relid 0 (no table has it), so a statement's snapshot sees a new
-- policy version after any committed change of a declaration, an analyst or a public table.
DO $$
DECLARE
	t text;
BEGIN
	FOREACH t IN ARRAY ARRAY['protected_tables', 'protected_columns', 'protected_column_groups', 'public_tables',
	                         'privacy_units', 'analysts', 'attribute_policies'] LOOP
		EXECUTE format('CREATE TRIGGER dx_contents_0 AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON dx.%I '
		               'FOR EACH STATEMENT EXECUTE FUNCTION dx._note_contents_change(0)', t);
		EXECUTE format('ALTER TABLE dx.%I ENABLE ALWAYS TRIGGER dx_contents_0', t);
	END LOOP;
END $$;

-- How many statements this backend answered from the analysis memo (tests; superuser only).
CREATE FUNCTION dx._analysis_memo_hits() RETURNS bigint LANGUAGE c STRICT VOLATILE AS 'MODULE_PATHNAME', 'dx_analysis_memo_hits';
REVOKE EXECUTE ON FUNCTION dx._analysis_memo_hits() FROM PUBLIC;

-- sql/40_analysts.sql: dx.analyst_pg_class (issue 24).
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

-- sql/60_releases.sql: the group release (issue 25): dx.release_synthetic and dx.release_synthetic_error.
-- Group release (issue 25): each round selects a query group (a marginal table, a block of
-- disjoint predicates, or a block given by `groups`: one group number per workload query) with the
-- d_X exponential mechanism, by expected improvement (AIM), and measures all its cells at once with
-- the allocation of direct answers; the histogram is fitted to every measurement. rounds NULL: the
-- documented rule (every group measured once, jointly, when selection cannot pay). Charges epsilon
-- once to the caller's budget on source before reading it; a cancelled release stays charged.
CREATE FUNCTION dx.release_synthetic(source regclass, columns text[], workload text, epsilon float8, target name,
                                     rounds int DEFAULT NULL, groups int[] DEFAULT NULL)
RETURNS regclass LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'dx_release_synthetic';
CREATE FUNCTION dx.release_synthetic(source regclass, columns text[], workload float8[], epsilon float8, target name,
                                     rounds int DEFAULT NULL, groups int[] DEFAULT NULL)
RETURNS regclass LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'dx_release_synthetic';
CREATE FUNCTION dx.release_synthetic(source regclass, columns text[], workload text[], epsilon float8, target name,
                                     rounds int DEFAULT NULL, groups int[] DEFAULT NULL)
RETURNS regclass LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'dx_release_synthetic';
COMMENT ON FUNCTION dx.release_synthetic(regclass, text[], text, float8, name, int, int[]) IS 'd_X-private synthetic histogram that measures whole marginal tables per round (AIM-style selection), written to a new table; charges epsilon once';
COMMENT ON FUNCTION dx.release_synthetic(regclass, text[], float8[], float8, name, int, int[]) IS 'd_X-private synthetic histogram that measures whole groups of weight vectors per round, written to a new table; charges epsilon once';
COMMENT ON FUNCTION dx.release_synthetic(regclass, text[], text[], float8, name, int, int[]) IS 'd_X-private synthetic histogram that measures whole groups of WHERE predicates per round, written to a new table; charges epsilon once';

-- The expected error of dx.release_synthetic per workload query before spending anything: the
-- Laplace scale, RMSE and 95% half-width of its measurement in the release, and the same for
-- direct answers (one GROUP BY statement per group at epsilon / groups; dx.last_release's numbers).
-- Reads no row and charges nothing.
CREATE FUNCTION dx.release_synthetic_error(source regclass, columns text[], workload text, epsilon float8,
                                           rounds int DEFAULT NULL, groups int[] DEFAULT NULL)
RETURNS TABLE (query int, label text, grp int, group_count int, release_rounds int, joint boolean, noise_scale float8, rmse float8,
               ci95_half_width float8, direct_noise_scale float8, direct_rmse float8, direct_ci95_half_width float8)
LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'dx_release_synthetic_error';
CREATE FUNCTION dx.release_synthetic_error(source regclass, columns text[], workload float8[], epsilon float8,
                                           rounds int DEFAULT NULL, groups int[] DEFAULT NULL)
RETURNS TABLE (query int, label text, grp int, group_count int, release_rounds int, joint boolean, noise_scale float8, rmse float8,
               ci95_half_width float8, direct_noise_scale float8, direct_rmse float8, direct_ci95_half_width float8)
LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'dx_release_synthetic_error';
CREATE FUNCTION dx.release_synthetic_error(source regclass, columns text[], workload text[], epsilon float8,
                                           rounds int DEFAULT NULL, groups int[] DEFAULT NULL)
RETURNS TABLE (query int, label text, grp int, group_count int, release_rounds int, joint boolean, noise_scale float8, rmse float8,
               ci95_half_width float8, direct_noise_scale float8, direct_rmse float8, direct_ci95_half_width float8)
LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'dx_release_synthetic_error';
COMMENT ON FUNCTION dx.release_synthetic_error(regclass, text[], text, float8, int, int[]) IS 'expected noise of dx.release_synthetic and of direct answers per workload query (K-way marginals); free';
COMMENT ON FUNCTION dx.release_synthetic_error(regclass, text[], float8[], float8, int, int[]) IS 'expected noise of dx.release_synthetic and of direct answers per workload query (weight vectors); free';
COMMENT ON FUNCTION dx.release_synthetic_error(regclass, text[], text[], float8, int, int[]) IS 'expected noise of dx.release_synthetic and of direct answers per workload query (WHERE predicates); free';

-- sql/60_releases.sql: dx.top_k (issue 24), the exponential mechanism's top-k under d_X.
CREATE FUNCTION dx.top_k(source regclass, column_name text, k int, epsilon float8, condition text DEFAULT NULL,
                         condition_columns text[] DEFAULT NULL)
RETURNS TABLE (rank int, value text) LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'dx_top_k';
COMMENT ON FUNCTION dx.top_k(regclass, text, int, float8, text, text[]) IS 'd_X-private top-k most frequent declared values of a column (exponential mechanism, one-shot top-k); charges epsilon once';
-- issue 26: private partition selection for open GROUP BY keys (sql/27_open_domains.sql)
-- Private partition selection for GROUP BY keys of open domains (src/pg/executor/partition_select.cpp,
-- src/pg/planner/open_keys.h): placed by the analyzer in HAVING, never written by analysts.
CREATE FUNCTION dx._partition_select_transfn(internal, float8, int4, float8[], float8[]) RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_partition_select_transfn';
CREATE FUNCTION dx._partition_select_combinefn(internal, internal) RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_partition_select_combinefn';
CREATE FUNCTION dx._partition_select_serialize(internal) RETURNS bytea
LANGUAGE c STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_partition_select_serialize';
CREATE FUNCTION dx._partition_select_deserialize(bytea, internal) RETURNS internal
LANGUAGE c STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_partition_select_deserialize';
CREATE FUNCTION dx._partition_select_finalfn(internal) RETURNS boolean
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_partition_select_finalfn';
CREATE AGGREGATE dx._partition_select(float8, int4, float8[], float8[]) (
	SFUNC = dx._partition_select_transfn, STYPE = internal, SSPACE = 64,
	FINALFUNC = dx._partition_select_finalfn,
	COMBINEFUNC = dx._partition_select_combinefn, SERIALFUNC = dx._partition_select_serialize,
	DESERIALFUNC = dx._partition_select_deserialize, PARALLEL = SAFE);
COMMENT ON AGGREGATE dx._partition_select(float8, int4, float8[], float8[]) IS 'internal: placed by the dxpriv analyzer only (private partition selection of an open GROUP BY key)';
-- the aggregate stays executable by PUBLIC (analysts' rewritten statements call it); its support
-- functions are checked against the aggregate's owner
REVOKE EXECUTE ON FUNCTION dx._partition_select_transfn(internal, float8, int4, float8[], float8[]) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._partition_select_combinefn(internal, internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._partition_select_serialize(internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._partition_select_deserialize(bytea, internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._partition_select_finalfn(internal) FROM PUBLIC;
-- Analysts' stddev, variance, covar, corr and regr_* (src/pg/analyst/dispersion_spelling.h): each is
-- computed from linear parts (count and centred sums of x, y, x², y², xy), released with the
-- statement's other linear aggregates. dx._noisy_part releases one part as {answer, noise
-- variance, charge id (two 32-bit halves), group, weight lo, weight hi, noise kurtosis};
-- dx._dispersion computes
-- the statistic from its parts with a delta-method error bar (dx.last_release).
CREATE FUNCTION dx._linear_part_finalfn(internal) RETURNS float8[]
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_linear_part_finalfn';
COMMENT ON FUNCTION dx._linear_part_finalfn(internal) IS 'noisy sum with its noise variance and identity, for dx._dispersion';
CREATE AGGREGATE dx._noisy_part(float8, int4, float8[]) (
	SFUNC = dx._linear_transfn, STYPE = internal,
	FINALFUNC = dx._linear_part_finalfn, FINALFUNC_MODIFY = READ_WRITE,
	COMBINEFUNC = dx._linear_combinefn, SERIALFUNC = dx._linear_serialize,
	DESERIALFUNC = dx._linear_deserialize, PARALLEL = SAFE);
COMMENT ON AGGREGATE dx._noisy_part(float8, int4, float8[]) IS 'internal: placed by the dxpriv analyzer only (a part of stddev, variance, covar, corr, regr_*)';
CREATE FUNCTION dx._dispersion(kind int4, label text, cx float8, cy float8, n float8[], sx float8[], sy float8[],
                               sxx float8[], syy float8[], sxy float8[]) RETURNS float8
LANGUAGE c VOLATILE PARALLEL RESTRICTED AS 'MODULE_PATHNAME', 'dx_dispersion';
COMMENT ON FUNCTION dx._dispersion(int4, text, float8, float8, float8[], float8[], float8[], float8[], float8[], float8[]) IS 'internal: placed by the dxpriv analyzer only (stddev, variance, covar, corr, regr_* from released parts)';
REVOKE EXECUTE ON FUNCTION dx._linear_part_finalfn(internal) FROM PUBLIC;

-- dx.count_distinct(col): the number of declared values of a column that have a counted row,
-- with discrete Laplace noise of scale S/epsilon, S the d_X sensitivity of dx.mode over the same
-- column, WHERE, FILTER and GROUP BY (src/core/exponential_mechanism.h, count_distinct). Analysts'
-- COUNT(DISTINCT col) of a declared column is spelled this way. Markers like dx.count.
CREATE AGGREGATE dx.count_distinct("any") (SFUNC = dx._marker_transfn, STYPE = internal,
	FINALFUNC = dx._marker_count_finalfn, PARALLEL = SAFE);
CREATE AGGREGATE dx.count_distinct("any", float8) (SFUNC = dx._marker_transfn, STYPE = internal,
	FINALFUNC = dx._marker_count_finalfn, PARALLEL = SAFE);
COMMENT ON AGGREGATE dx.count_distinct("any") IS 'd_X-private number of distinct declared values of a column present in the rows, at the session epsilon';
COMMENT ON AGGREGATE dx.count_distinct("any", float8) IS 'd_X-private number of distinct declared values of a column present in the rows, at the given epsilon';
-- One pass over the rows (issue 23): the shared transition of a statement's linear aggregates.
-- One pass over the rows (src/pg/executor/one_pass.cpp, planner/one_pass.h): the linear aggregates
-- of a statement share one transition, which maps the row to its point once (the layout's columns
-- and domain constants, as dx._weigh) and counts it in a histogram of its output group; each
-- aggregate's final function weighs the histogram with its own per-point table. Arguments:
-- layout, dense histogram, output group, "row is real" flag, then the columns' values and domain
-- constants (equal for every aggregate of the statement); the analyzer adds each aggregate's
-- parameters, table and shape as direct arguments (they reach the final function).
CREATE FUNCTION dx._onepass_transfn(internal, text, bool, int4, bool, VARIADIC "any") RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_onepass_transfn';
CREATE FUNCTION dx._onepass_combinefn(internal, internal) RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_onepass_combinefn';
CREATE FUNCTION dx._onepass_serialize(internal) RETURNS bytea
LANGUAGE c STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_onepass_serialize';
CREATE FUNCTION dx._onepass_deserialize(bytea, internal) RETURNS internal
LANGUAGE c STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_onepass_deserialize';
CREATE FUNCTION dx._onepass_count_finalfn(internal) RETURNS bigint
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_onepass_count_finalfn';
CREATE FUNCTION dx._onepass_sum_finalfn(internal) RETURNS float8
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_onepass_sum_finalfn';
CREATE FUNCTION dx._onepass_avg_finalfn(internal) RETURNS float8
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_onepass_avg_finalfn';
COMMENT ON FUNCTION dx._onepass_transfn(internal, text, bool, int4, bool, "any") IS 'counts one row at its point in its group''s histogram';
COMMENT ON FUNCTION dx._onepass_combinefn(internal, internal) IS 'adds two histograms of one group';
COMMENT ON FUNCTION dx._onepass_serialize(internal) IS 'self-describing serialisation of a histogram';
COMMENT ON FUNCTION dx._onepass_deserialize(bytea, internal) IS 'inverse of dx._onepass_serialize';
COMMENT ON FUNCTION dx._onepass_count_finalfn(internal) IS 'noisy count weighed from the histogram, rounded to an integer';
COMMENT ON FUNCTION dx._onepass_sum_finalfn(internal) IS 'noisy sum weighed from the histogram';
COMMENT ON FUNCTION dx._onepass_avg_finalfn(internal) IS 'noisy sum over noisy count weighed from the histogram, clamped';
CREATE AGGREGATE dx._onepass_count(text, bool, int4, bool, VARIADIC "any") (
	SFUNC = dx._onepass_transfn, STYPE = internal, SSPACE = 384,
	FINALFUNC = dx._onepass_count_finalfn, FINALFUNC_MODIFY = SHAREABLE,
	COMBINEFUNC = dx._onepass_combinefn, SERIALFUNC = dx._onepass_serialize,
	DESERIALFUNC = dx._onepass_deserialize, PARALLEL = SAFE);
CREATE AGGREGATE dx._onepass_sum(text, bool, int4, bool, VARIADIC "any") (
	SFUNC = dx._onepass_transfn, STYPE = internal, SSPACE = 384,
	FINALFUNC = dx._onepass_sum_finalfn, FINALFUNC_MODIFY = SHAREABLE,
	COMBINEFUNC = dx._onepass_combinefn, SERIALFUNC = dx._onepass_serialize,
	DESERIALFUNC = dx._onepass_deserialize, PARALLEL = SAFE);
CREATE AGGREGATE dx._onepass_avg(text, bool, int4, bool, VARIADIC "any") (
	SFUNC = dx._onepass_transfn, STYPE = internal, SSPACE = 384,
	FINALFUNC = dx._onepass_avg_finalfn, FINALFUNC_MODIFY = SHAREABLE,
	COMBINEFUNC = dx._onepass_combinefn, SERIALFUNC = dx._onepass_serialize,
	DESERIALFUNC = dx._onepass_deserialize, PARALLEL = SAFE);
COMMENT ON AGGREGATE dx._onepass_count(text, bool, int4, bool, "any") IS 'internal: placed by the dxpriv analyzer only (one pass over the rows)';
COMMENT ON AGGREGATE dx._onepass_sum(text, bool, int4, bool, "any") IS 'internal: placed by the dxpriv analyzer only (one pass over the rows)';
COMMENT ON AGGREGATE dx._onepass_avg(text, bool, int4, bool, "any") IS 'internal: placed by the dxpriv analyzer only (one pass over the rows)';
REVOKE EXECUTE ON FUNCTION dx._onepass_transfn(internal, text, bool, int4, bool, "any") FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._onepass_combinefn(internal, internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._onepass_serialize(internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._onepass_deserialize(bytea, internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._onepass_count_finalfn(internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._onepass_sum_finalfn(internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._onepass_avg_finalfn(internal) FROM PUBLIC;

-- unitspeed (issue 23): privacy-unit bounding without a sort (sql/22_privacy_units.sql)
-- Privacy units without a sort (src/pg/executor/unit_bound.cpp, planner/unit_source.h): one hash
-- pass keeps each unit's max_rows rows of smallest dx._unit_rank (combinable: parallel workers
-- bound their rows and the leader merges), and dx._unit_rows emits the kept rows' columns. Placed by
-- the analyzer in the statements it rewrites (analysts' statements call them with their own
-- privileges); the support functions are revoked. Arguments: max_rows, the row's rank, then the
-- unit value and the columns kept rows carry.
CREATE FUNCTION dx._unit_bound_transfn(internal, int4, int8, VARIADIC "any") RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_unit_bound_transfn';
CREATE FUNCTION dx._unit_bound_combinefn(internal, internal) RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_unit_bound_combinefn';
CREATE FUNCTION dx._unit_bound_serialize(internal) RETURNS bytea
LANGUAGE c STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_unit_bound_serialize';
CREATE FUNCTION dx._unit_bound_deserialize(bytea, internal) RETURNS internal
LANGUAGE c STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_unit_bound_deserialize';
CREATE FUNCTION dx._unit_bound_finalfn(internal) RETURNS int8
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_unit_bound_finalfn';
CREATE AGGREGATE dx._unit_bound(int4, int8, VARIADIC "any") (
	SFUNC = dx._unit_bound_transfn, STYPE = internal,
	FINALFUNC = dx._unit_bound_finalfn, FINALFUNC_MODIFY = READ_WRITE,
	COMBINEFUNC = dx._unit_bound_combinefn, SERIALFUNC = dx._unit_bound_serialize,
	DESERIALFUNC = dx._unit_bound_deserialize, PARALLEL = SAFE);
-- The kept rows of the statement's dx._unit_bound (by its random handle, valid only while the
-- statement runs): one value per kept row (kind 0: a column; 1: a count_units flag; 2: true).
CREATE FUNCTION dx._unit_rows(int8, int4, int4, int4, anyelement) RETURNS SETOF anyelement
LANGUAGE c PARALLEL RESTRICTED ROWS 1000 AS 'MODULE_PATHNAME', 'dx_unit_rows';
COMMENT ON AGGREGATE dx._unit_bound(int4, int8, "any") IS 'internal: placed by the dxpriv analyzer only (privacy-unit bounding by hash)';
COMMENT ON FUNCTION dx._unit_rows(int8, int4, int4, int4, anyelement) IS 'internal: the rows kept by dx._unit_bound in the same statement';
REVOKE EXECUTE ON FUNCTION dx._unit_bound_transfn(internal, int4, int8, "any") FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._unit_bound_combinefn(internal, internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._unit_bound_serialize(internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._unit_bound_deserialize(bytea, internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._unit_bound_finalfn(internal) FROM PUBLIC;

-- openrelease (issue 26): dx.last_release() of releases grouped by an open key
-- dx.last_release() for releases grouped by an open key (src/pg/executor/release_log.cpp,
-- planner/open_release_log.h): placed in the release's HAVING after dx._partition_select; it
-- labels the answers of a partition the selection kept and drops those of one it withheld. It stays
-- executable by PUBLIC (analysts' rewritten statements call it); called by hand it labels nothing.
CREATE FUNCTION dx._open_cells(boolean, text[], text[]) RETURNS boolean
LANGUAGE c VOLATILE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_open_cells';
COMMENT ON FUNCTION dx._open_cells(boolean, text[], text[]) IS 'internal: placed by the dxpriv analyzer only (dx.last_release of a release grouped by an open key)';

-- citusdisp: dispersion statistics on Citus distributed tables
-- A part of stddev, variance, covar, corr or regr_* (dx._noisy_part's float8[]), read by dx._dispersion.
CREATE FUNCTION dx._release_part(dx._linear_partial, float8[], int4) RETURNS float8[]
LANGUAGE c VOLATILE PARALLEL RESTRICTED AS 'MODULE_PATHNAME', 'dx_release_part';
COMMENT ON FUNCTION dx._release_part(dx._linear_partial, float8[], int4) IS 'internal: placed by the dxpriv analyzer only (a part of stddev, variance, covar, corr, regr_* on a distributed table)';

-- citusopen (issue 26): open GROUP BY keys on Citus distributed tables
-- Open GROUP BY keys on distributed tables (src/pg/planner/distributed_open.h): the workers count each
-- candidate partition's contributors (rows, or distinct units) with PostgreSQL's own count, and the
-- coordinator keeps a partition when the private partition selection draws it, once, in the backend
-- that charged the statement (src/pg/executor/partition_keep.cpp). Refuses a statement it was not
-- charged for (a worker, or a call written by hand).
CREATE FUNCTION dx._release_selection(int8, float8[], float8[]) RETURNS boolean
LANGUAGE c VOLATILE PARALLEL RESTRICTED AS 'MODULE_PATHNAME', 'dx_release_selection';
COMMENT ON FUNCTION dx._release_selection(int8, float8[], float8[]) IS 'internal: placed by the dxpriv analyzer only (private partition selection of an open GROUP BY key on a distributed table)';

-- keyfuse (issue 23): a GROUP BY key computed in the row source in one call per row
-- dx._group_key(dx._weigh_int(table, layout, <columns>), values) in one call (planner/group_key_source.h).
CREATE FUNCTION dx._group_key_int(bytea, text, anyarray, VARIADIC "any") RETURNS anyelement
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_group_key_int';
COMMENT ON FUNCTION dx._group_key_int(bytea, text, anyarray, "any") IS 'output value of a GROUP BY key for a row''s group: dx._group_key(dx._weigh_int(table, layout, columns), values) in one call';

-- unitpoint (issue 23): the planner's row estimate of dx._unit_rows (planner/unit_rows_support.cpp)
CREATE FUNCTION dx._unit_rows_support(internal) RETURNS internal
LANGUAGE c STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_unit_rows_support';
COMMENT ON FUNCTION dx._unit_rows_support(internal) IS 'internal: the planner''s row estimate of dx._unit_rows (the table''s rows)';
ALTER FUNCTION dx._unit_rows(int8, int4, int4, int4, anyelement) SUPPORT dx._unit_rows_support;
REVOKE EXECUTE ON FUNCTION dx._unit_rows_support(internal) FROM PUBLIC;

-- groupfold (issue 23): GROUP BY over declared columns folded into one ungrouped pass
-- GROUP BY folded into one pass (planner/group_fold.h, executor/group_fold.cpp): a grouped
-- statement whose keys are declared columns counts every row once in ONE histogram over the
-- sub-universe with the key columns (dx._fold_state, ungrouped: no hash lookup per row), then
-- dx._fold_slices cuts it into one state per declared group (empty ones included), and each
-- aggregate releases its group's answer from that state through the one-pass final functions.
CREATE AGGREGATE dx._fold_state(text, bool, int4, bool, VARIADIC "any") (
	SFUNC = dx._onepass_transfn, STYPE = internal, SSPACE = 384,
	FINALFUNC = dx._onepass_serialize,
	COMBINEFUNC = dx._onepass_combinefn, SERIALFUNC = dx._onepass_serialize,
	DESERIALFUNC = dx._onepass_deserialize, PARALLEL = SAFE);
COMMENT ON AGGREGATE dx._fold_state(text, bool, int4, bool, "any") IS 'internal: placed by the dxpriv analyzer only (a grouped statement''s histogram over the sub-universe with its key columns)';
CREATE FUNCTION dx._fold_slices(bytea, int8[]) RETURNS SETOF bytea
LANGUAGE c IMMUTABLE PARALLEL SAFE ROWS 10 AS 'MODULE_PATHNAME', 'dx_fold_slices';
COMMENT ON FUNCTION dx._fold_slices(bytea, int8[]) IS 'internal: placed by the dxpriv analyzer only (one one-pass state per declared group, in group order, cut from dx._fold_state)';
CREATE FUNCTION dx._fold_transfn(internal, bytea) RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_fold_transfn';
COMMENT ON FUNCTION dx._fold_transfn(internal, bytea) IS 'the one-pass state of a group from its slice (one slice per group)';
CREATE AGGREGATE dx._fold_count(bytea) (
	SFUNC = dx._fold_transfn, STYPE = internal, SSPACE = 384,
	FINALFUNC = dx._onepass_count_finalfn, FINALFUNC_MODIFY = SHAREABLE, PARALLEL = SAFE);
CREATE AGGREGATE dx._fold_sum(bytea) (
	SFUNC = dx._fold_transfn, STYPE = internal, SSPACE = 384,
	FINALFUNC = dx._onepass_sum_finalfn, FINALFUNC_MODIFY = SHAREABLE, PARALLEL = SAFE);
CREATE AGGREGATE dx._fold_avg(bytea) (
	SFUNC = dx._fold_transfn, STYPE = internal, SSPACE = 384,
	FINALFUNC = dx._onepass_avg_finalfn, FINALFUNC_MODIFY = SHAREABLE, PARALLEL = SAFE);
COMMENT ON AGGREGATE dx._fold_count(bytea) IS 'internal: placed by the dxpriv analyzer only (a folded GROUP BY; its parameters, table and shape are direct arguments)';
COMMENT ON AGGREGATE dx._fold_sum(bytea) IS 'internal: placed by the dxpriv analyzer only (a folded GROUP BY; its parameters, table and shape are direct arguments)';
COMMENT ON AGGREGATE dx._fold_avg(bytea) IS 'internal: placed by the dxpriv analyzer only (a folded GROUP BY; its parameters, table and shape are direct arguments)';
REVOKE EXECUTE ON FUNCTION dx._fold_transfn(internal, bytea) FROM PUBLIC;

-- rowargs (issue 23): the one-pass transition's constant arguments in its layout text. The output
-- group, the "row is real" flag and the dense histogram were arguments of every row (three of them
-- constant in an ungrouped statement); the layout is now '<flags>|<columns>' ('d' dense, 'g' the
-- group and 'p' the present flag follow as arguments), so per row only what varies is an argument.
DROP AGGREGATE dx._onepass_count(text, bool, int4, bool, "any");
DROP AGGREGATE dx._onepass_sum(text, bool, int4, bool, "any");
DROP AGGREGATE dx._onepass_avg(text, bool, int4, bool, "any");
DROP AGGREGATE dx._fold_state(text, bool, int4, bool, "any");
DROP FUNCTION dx._onepass_transfn(internal, text, bool, int4, bool, "any");
CREATE FUNCTION dx._onepass_transfn(internal, text, VARIADIC "any") RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_onepass_transfn';
COMMENT ON FUNCTION dx._onepass_transfn(internal, text, "any") IS 'counts one row at its point in its group''s histogram';
CREATE AGGREGATE dx._onepass_count(text, VARIADIC "any") (
	SFUNC = dx._onepass_transfn, STYPE = internal, SSPACE = 384,
	FINALFUNC = dx._onepass_count_finalfn, FINALFUNC_MODIFY = SHAREABLE,
	COMBINEFUNC = dx._onepass_combinefn, SERIALFUNC = dx._onepass_serialize,
	DESERIALFUNC = dx._onepass_deserialize, PARALLEL = SAFE);
CREATE AGGREGATE dx._onepass_sum(text, VARIADIC "any") (
	SFUNC = dx._onepass_transfn, STYPE = internal, SSPACE = 384,
	FINALFUNC = dx._onepass_sum_finalfn, FINALFUNC_MODIFY = SHAREABLE,
	COMBINEFUNC = dx._onepass_combinefn, SERIALFUNC = dx._onepass_serialize,
	DESERIALFUNC = dx._onepass_deserialize, PARALLEL = SAFE);
CREATE AGGREGATE dx._onepass_avg(text, VARIADIC "any") (
	SFUNC = dx._onepass_transfn, STYPE = internal, SSPACE = 384,
	FINALFUNC = dx._onepass_avg_finalfn, FINALFUNC_MODIFY = SHAREABLE,
	COMBINEFUNC = dx._onepass_combinefn, SERIALFUNC = dx._onepass_serialize,
	DESERIALFUNC = dx._onepass_deserialize, PARALLEL = SAFE);
COMMENT ON AGGREGATE dx._onepass_count(text, "any") IS 'internal: placed by the dxpriv analyzer only (one pass over the rows)';
COMMENT ON AGGREGATE dx._onepass_sum(text, "any") IS 'internal: placed by the dxpriv analyzer only (one pass over the rows)';
COMMENT ON AGGREGATE dx._onepass_avg(text, "any") IS 'internal: placed by the dxpriv analyzer only (one pass over the rows)';
CREATE AGGREGATE dx._fold_state(text, VARIADIC "any") (
	SFUNC = dx._onepass_transfn, STYPE = internal, SSPACE = 384,
	FINALFUNC = dx._onepass_serialize,
	COMBINEFUNC = dx._onepass_combinefn, SERIALFUNC = dx._onepass_serialize,
	DESERIALFUNC = dx._onepass_deserialize, PARALLEL = SAFE);
COMMENT ON AGGREGATE dx._fold_state(text, "any") IS 'internal: placed by the dxpriv analyzer only (a grouped statement''s histogram over the sub-universe with its key columns)';
REVOKE EXECUTE ON FUNCTION dx._onepass_transfn(internal, text, "any") FROM PUBLIC;

-- citusgb2: the workers' per-row weight in grid units in one call (Citus native sums)
CREATE FUNCTION dx._weigh_units(bytea, text, float8, VARIADIC "any") RETURNS int8
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_weigh_units';
COMMENT ON FUNCTION dx._weigh_units(bytea, text, float8, "any") IS 'internal: dx._units(dx._weigh(table, layout, ...), grid) in one call (the workers'' native sums)';
CREATE FUNCTION dx._weigh_units_cached(bytea, text, float8, VARIADIC "any") RETURNS int8
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_weigh_units_cached';
COMMENT ON FUNCTION dx._weigh_units_cached(bytea, text, float8, "any") IS 'internal: dx._weigh_units with its table read from dx._point_table_cache by its SHA-256 (distributed releases)';
-- unitcache (issue 23): unit profiles, the row-local privacy-unit bounding (sql/22_privacy_units.sql)
-- Unit profiles (src/pg/executor/unit_profile.h, dxpriv.unit_profiles): the bounded row source of a
-- local table is SELECT cols FROM t WHERE dx._unit_keep((SELECT dx._unit_profile(...)), unit,
-- tableoid, ctid), a row-local predicate. dx._unit_profile (an InitPlan, leader only) returns the
-- profile of the table version under the statement's snapshot (cached in shared memory, or built);
-- it refuses a caller without the backend's token (placed by the planner) or not inside a statement
-- charged on the table, and seals the profile (encrypted, MACed: it tells which units are heavy).
-- dx._unit_keep accepts only profiles dx._unit_profile sealed for its snapshot.
CREATE FUNCTION dx._unit_profile(oid, bool, int2, int4, int8) RETURNS bytea
LANGUAGE c VOLATILE STRICT PARALLEL RESTRICTED AS 'MODULE_PATHNAME', 'dx_unit_profile';
COMMENT ON FUNCTION dx._unit_profile(oid, bool, int2, int4, int8) IS 'internal: the unit profile of a table version (placed by the dxpriv analyzer only)';
CREATE FUNCTION dx._unit_keep(bytea, anyelement, oid, tid) RETURNS bool
LANGUAGE c VOLATILE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_unit_keep';
COMMENT ON FUNCTION dx._unit_keep(bytea, anyelement, oid, tid) IS 'internal: whether a row is among its unit''s kept rows, by a unit profile';

-- unitmixed2 (issue 23): count_units beside other aggregates in one scan (src/pg/executor/unit_count_set.cpp).
-- dx._noisy_count_units(weight, group, params, unit) reads the unit profile's kept rows and counts the
-- distinct units (by their 64-bit unit hash; a NULL unit is one unit) of the rows whose weight is not
-- NULL, in a tuplesort bounded by work_mem; it releases that count as dx._noisy_count does.
CREATE FUNCTION dx._count_units_transfn(internal, float8, int4, float8[], anyelement) RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_count_units_transfn';
CREATE FUNCTION dx._count_units_combinefn(internal, internal) RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_count_units_combinefn';
CREATE FUNCTION dx._count_units_serialize(internal) RETURNS bytea
LANGUAGE c STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_count_units_serialize';
CREATE FUNCTION dx._count_units_deserialize(bytea, internal) RETURNS internal
LANGUAGE c STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_count_units_deserialize';
CREATE FUNCTION dx._count_units_finalfn(internal, float8, int4, float8[], anyelement) RETURNS bigint
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_count_units_finalfn';
COMMENT ON FUNCTION dx._count_units_transfn(internal, float8, int4, float8[], anyelement) IS 'internal: puts the unit hash of a row whose weight is not NULL';
COMMENT ON FUNCTION dx._count_units_combinefn(internal, internal) IS 'internal: the union of two partial sets of unit hashes';
COMMENT ON FUNCTION dx._count_units_serialize(internal) IS 'internal: a partial set of unit hashes, sorted';
COMMENT ON FUNCTION dx._count_units_deserialize(bytea, internal) IS 'internal: inverse of dx._count_units_serialize';
COMMENT ON FUNCTION dx._count_units_finalfn(internal, float8, int4, float8[], anyelement) IS 'internal: the noisy number of distinct units counted';
CREATE AGGREGATE dx._noisy_count_units(float8, int4, float8[], anyelement) (
	SFUNC = dx._count_units_transfn, STYPE = internal,
	FINALFUNC = dx._count_units_finalfn, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_WRITE,
	COMBINEFUNC = dx._count_units_combinefn, SERIALFUNC = dx._count_units_serialize,
	DESERIALFUNC = dx._count_units_deserialize, PARALLEL = SAFE);
COMMENT ON AGGREGATE dx._noisy_count_units(float8, int4, float8[], anyelement) IS 'internal: placed by the dxpriv analyzer only (count_units beside other aggregates, over a unit profile''s kept rows)';
REVOKE EXECUTE ON FUNCTION dx._count_units_transfn(internal, float8, int4, float8[], anyelement) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._count_units_combinefn(internal, internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._count_units_serialize(internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._count_units_deserialize(bytea, internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._count_units_finalfn(internal, float8, int4, float8[], anyelement) FROM PUBLIC;
-- citusunit (issue 23): a Citus table distributed by its unit column is bounded per shard on the
-- workers: each shard's task query reads SELECT ... FROM shard WHERE dx._unit_keep_shard(unit,
-- tableoid, ctid, k, 'unit column'), whose worker backend finds (shared memory, by the shard's OID
-- and contents version) or builds (the sealed scan) the unit profile of that shard. Refused unless
-- the session user and the current user may both SELECT the relation (the table owner on a worker).
CREATE FUNCTION dx._unit_keep_shard(anyelement, oid, tid, int4, text) RETURNS bool
LANGUAGE c VOLATILE PARALLEL RESTRICTED AS 'MODULE_PATHNAME', 'dx_unit_keep_shard';
COMMENT ON FUNCTION dx._unit_keep_shard(anyelement, oid, tid, int4, text) IS 'internal: whether a row of a shard is among its unit''s kept rows, by the shard''s unit profile (placed by the dxpriv analyzer only)';
-- citusunit: the contents-version trigger dx_contents_<shard OID> on one shard of a Citus table, run
-- on its worker (a shard is a plain table there), so that the per-shard unit profiles of a table
-- distributed by its unit column (executor/unit_profile.cpp, dx._unit_keep_shard) are cached per
-- shard version instead of built by every statement. dx.version_shards (a DBA's call on the
-- coordinator, in a statement of its own: the triggers are created through other connections, which
-- wait for the locks of the calling transaction, hence the lock timeout) runs it on every placement
-- of rel's shards and returns how many have the trigger; a placement without it (a failure, a shard
-- moved or split since) has no version, so its profile is built per statement (correct, slower).
CREATE FUNCTION dx._contents_trigger_on_shard(rel regclass) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET lock_timeout = '5s' AS $$
DECLARE
	tg text := 'dx_contents_' || rel::oid::text;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = rel AND tgname = tg) THEN
		EXECUTE format('CREATE TRIGGER %I AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON %s '
		               'FOR EACH STATEMENT EXECUTE FUNCTION dx._note_contents_change(%s)', tg, rel, rel::oid);
		EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER %I', rel, tg);
	END IF;
END $$;
REVOKE EXECUTE ON FUNCTION dx._contents_trigger_on_shard(regclass) FROM PUBLIC;
CREATE FUNCTION dx.version_shards(rel regclass) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	done integer;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
		RAISE EXCEPTION 'dx.version_shards needs Citus' USING ERRCODE = '0A000',
			HINT = 'Local tables get their contents-version trigger from dx.protect_table.';
	END IF;
	IF NOT EXISTS (SELECT 1 FROM dx.protected_tables p WHERE p.relid = rel) THEN
		RAISE EXCEPTION 'table % is not protected', rel USING ERRCODE = '42P01',
			HINT = 'Protect it first with dx.protect_table.';
	END IF;
	EXECUTE 'SELECT count(*) FILTER (WHERE r.success)::integer FROM pg_catalog.run_command_on_placements($1, $2) r'
	INTO done USING rel, 'SELECT dx._contents_trigger_on_shard(%L)';
	RETURN done;
END $$;
REVOKE EXECUTE ON FUNCTION dx.version_shards(regclass) FROM PUBLIC;
COMMENT ON FUNCTION dx.version_shards(regclass) IS 'installs the contents-version trigger on every shard placement of a protected Citus table (per-shard unit profiles are then cached per shard version); returns the placements that have it';

-- lead (session 15): subscription DDL renews every protected table's contents version

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

-- redteam2 (session 16): dx's event triggers fire under session_replication_role = replica too

-- Every dx event trigger fires ALWAYS: one left at the default (ENABLE, origin only) is skipped when
-- session_replication_role = replica (replication and restore tools set it), so a RENAME COLUMN of a
-- unit column went unfollowed (a later rename of another column to the old name made it the unit),
-- the unit column could be dropped, a dropped table left its policy row and subscription DDL renewed
-- no contents version (redteam2; regress 86). The contents-version triggers are ENABLE ALWAYS too.
ALTER EVENT TRIGGER dx_ddl_start ENABLE ALWAYS;
ALTER EVENT TRIGGER dx_sql_drop ENABLE ALWAYS;
ALTER EVENT TRIGGER dx_subscription_change ENABLE ALWAYS;

-- redteam2 (session 16): ALTER TYPE ... CASCADE renames, retypes and drops the columns of typed tables

-- rel and, when recurse, every table that inherits from it (ALTER TABLE without ONLY recurses).
-- When rel is a composite type's relation (ALTER TYPE ... CASCADE), the typed tables of that type
-- (CREATE TABLE ... OF type) and, when recurse, the tables inheriting from them: ALTER TYPE renames,
-- retypes and drops their columns (redteam2: a typed table's unit column was renamed unfollowed).
CREATE OR REPLACE FUNCTION dx._ddl_family(rel oid, recurse boolean) RETURNS SETOF oid
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
DROP EVENT TRIGGER dx_ddl_start;
CREATE EVENT TRIGGER dx_ddl_start ON ddl_command_start WHEN TAG IN ('ALTER TABLE', 'ALTER TYPE')
	EXECUTE FUNCTION dx._on_ddl_start();
ALTER EVENT TRIGGER dx_ddl_start ENABLE ALWAYS;

-- lead, redteam2 and review1 (session 16): dx.contents_changes merged (contents versions unchanged), by the
-- trigger and by the DBA (mergers lock the rows they merge); a write through a parent renews the version
-- of its protected partitions and children

-- Merges the rows of dx.contents_changes (of one relid, or of every relid when rel is NULL) whose
-- transactions had all ended before this call's snapshot into one row per relid: n the sum of
-- theirs, xid the largest of theirs (an ended transaction: it never writes again). Every snapshot
-- sees the same sum before and after: one that sees the merge sees every merged row's transaction
-- (they ended before the merge began), one that does not sees the rows as they were (MVCC), so no
-- contents version changes and no cached answer or unit profile is lost; the rows of running
-- transactions (the caller's own among them) stay as they are. Mergers never wait for each other:
-- each locks the rows it merges (FOR UPDATE SKIP LOCKED) and skips those another one holds, so
-- concurrent mergers merge disjoint rows (review1: an advisory lock, which any role may take and
-- keep, let an analyst stop every merge of a table). Returns how many rows it removed.
-- Without it the table grows by a row per writing transaction and the version scan of every
-- cacheable statement grows with it (doc/dba-guide.md "Fresh after writes").
CREATE FUNCTION dx.compact_contents_changes(rel oid DEFAULT NULL) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	horizon xid8 := pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot());
	target oid;
	merged bigint;
	total bigint;
	newest xid8;
	removed bigint := 0;
BEGIN
	-- (under repeatable read or serializable a second merger would fail on the rows the first deleted)
	IF pg_catalog.current_setting('transaction_isolation') OPERATOR(pg_catalog.<>) 'read committed' THEN
		RAISE EXCEPTION 'dx.compact_contents_changes needs the read committed isolation level'
			USING ERRCODE = '25000', HINT = 'Call it outside an explicit transaction, or in one that is read committed.';
	END IF;
	FOR target IN SELECT DISTINCT c.relid FROM dx.contents_changes c
	              WHERE rel IS NULL OR c.relid OPERATOR(pg_catalog.=) rel LOOP
		-- (the merged row's key is the largest xid of the rows this merger locked and deleted: never
		-- one of another merger's, whose rows are disjoint from these)
		WITH old AS (
			DELETE FROM dx.contents_changes c
			WHERE c.ctid OPERATOR(pg_catalog.=) ANY (ARRAY(
				SELECT l.ctid FROM dx.contents_changes l
				WHERE l.relid OPERATOR(pg_catalog.=) target AND l.xid OPERATOR(pg_catalog.<) horizon
				FOR UPDATE SKIP LOCKED))
			RETURNING c.xid, c.n)
		SELECT pg_catalog.count(*), pg_catalog.sum(o.n), pg_catalog.max(o.xid)
		INTO merged, total, newest FROM old o;
		IF merged > 0 THEN
			INSERT INTO dx.contents_changes (relid, xid, n) VALUES (target, newest, total);
			removed := removed OPERATOR(pg_catalog.+) merged OPERATOR(pg_catalog.-) 1;
		END IF;
	END LOOP;
	RETURN removed;
END $$;
REVOKE EXECUTE ON FUNCTION dx.compact_contents_changes(oid) FROM PUBLIC;
COMMENT ON FUNCTION dx.compact_contents_changes(oid) IS 'merges the rows of dx.contents_changes of ended transactions into one row per table (contents versions unchanged); returns how many rows it removed';

-- Statement-level trigger of every member of a protected tree: notes that this transaction wrote.
-- One read committed writing transaction in 64 (at random) also merges the ended ones' rows of that
-- relid, so the rows of a table stay about 64 plus its running writers, whatever its write rate
-- (not under repeatable read or serializable: the merge must never make a writer's transaction fail).
CREATE OR REPLACE FUNCTION dx._note_contents_change() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	noted bigint;
BEGIN
	INSERT INTO dx.contents_changes (relid, xid) VALUES (TG_ARGV[0]::oid, pg_current_xact_id())
	ON CONFLICT ON CONSTRAINT contents_changes_pkey DO NOTHING;
	GET DIAGNOSTICS noted = ROW_COUNT;
	IF EXISTS (SELECT 1 FROM pg_catalog.pg_inherits i WHERE i.inhparent OPERATOR(pg_catalog.=) TG_RELID) THEN
		INSERT INTO dx.contents_changes (relid, xid)
		WITH RECURSIVE down(r) AS (
			SELECT i.inhrelid FROM pg_catalog.pg_inherits i WHERE i.inhparent OPERATOR(pg_catalog.=) TG_RELID
			UNION
			SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN down ON i.inhparent OPERATOR(pg_catalog.=) down.r)
		SELECT p.relid::oid, pg_current_xact_id() FROM dx.protected_tables p JOIN down
		ON p.relid::oid OPERATOR(pg_catalog.=) down.r
		ON CONFLICT ON CONSTRAINT contents_changes_pkey DO NOTHING;
	END IF;
	IF noted > 0 AND pg_catalog.random() < 1.0 / 64
	   AND pg_catalog.current_setting('transaction_isolation') OPERATOR(pg_catalog.=) 'read committed' THEN
		PERFORM dx.compact_contents_changes();
	END IF;
	RETURN NULL;
END $$;
REVOKE EXECUTE ON FUNCTION dx._note_contents_change() FROM PUBLIC;

-- (sharedmemo) How many statements this backend answered from the shared analysis memo (tests;
-- superuser only).
CREATE FUNCTION dx._shared_memo_hits() RETURNS bigint LANGUAGE c STRICT VOLATILE AS 'MODULE_PATHNAME', 'dx_shared_memo_hits';
REVOKE EXECUTE ON FUNCTION dx._shared_memo_hits() FROM PUBLIC;

-- (ddlhold) The ledger's append-only triggers fire also under session_replication_role = replica
-- (they were ENABLE, "origin" only: a superuser in replica mode could update, delete or truncate
-- the durable record of what was spent). Every other dxpriv trigger (contents versions, event
-- triggers) is ENABLE ALWAYS already.
ALTER TABLE dx.ledger ENABLE ALWAYS TRIGGER ledger_append_only;
ALTER TABLE dx.ledger ENABLE ALWAYS TRIGGER ledger_no_truncate;

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

-- citusone (session 18): the workers' grouped sums of a GROUP BY on a Citus table as one Citus stage
-- inside the coordinator's local statement (sql/50_distributed.sql).
CREATE FUNCTION dx._grouped_partials(task text, params float8[], shipments bytea[]) RETURNS SETOF record
LANGUAGE c VOLATILE PARALLEL UNSAFE ROWS 100 AS 'MODULE_PATHNAME', 'dx_grouped_partials';
COMMENT ON FUNCTION dx._grouped_partials(text, float8[], bytea[]) IS 'internal: placed by the dxpriv analyzer only (the grouped sums of a distributed table as one Citus stage)';
