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
