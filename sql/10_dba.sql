-- DBA interface: protecting tables, declaring columns, granting budgets.

-- Validates a domain/metric pair for a column type; raises a descriptive error when invalid.
-- Returns the metric to store: a metric that names a table ("table") comes back with the table's
-- rows in its place, read now as the calling role (README: "Tables a declaration may read").
CREATE FUNCTION dx._validate_column(column_type regtype, domain jsonb, metric jsonb)
RETURNS jsonb LANGUAGE c STRICT VOLATILE AS 'MODULE_PATHNAME', 'dx_validate_column';
REVOKE EXECUTE ON FUNCTION dx._validate_column(regtype, jsonb, jsonb) FROM PUBLIC;

-- Forces cached plans that read rel to be re-analysed (policy changed).
CREATE FUNCTION dx._invalidate(rel regclass)
RETURNS void LANGUAGE c STRICT VOLATILE AS 'MODULE_PATHNAME', 'dx_invalidate';

-- Raises unless the calling role (outside any SECURITY DEFINER function) owns rel or is superuser.
CREATE FUNCTION dx._check_owner(rel regclass) RETURNS void
LANGUAGE c STABLE AS 'MODULE_PATHNAME', 'dx_check_owner';

-- Raises 22023 unless rel is a protected table (dx.protect_table was called).
CREATE FUNCTION dx._check_protected(rel regclass) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	IF NOT EXISTS (SELECT 1 FROM dx.protected_tables p WHERE p.relid = rel) THEN
		RAISE EXCEPTION 'table "%" is not protected', rel USING ERRCODE = '22023',
			HINT = 'Call dx.protect_table first.';
	END IF;
END $$;

-- Raises unless delta is a valid per-query delta of a table: 0 <= delta <= 0.001 (0: pure epsilon).
CREATE FUNCTION dx._check_table_delta(delta float8) RETURNS void
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	IF delta IS NULL OR delta = 'NaN'::float8 OR delta < 0 OR delta > 0.001 THEN
		RAISE EXCEPTION 'delta must be between 0 and 0.001, got %', delta USING ERRCODE = '22023',
			HINT = 'Delta is the probability, per query, that the epsilon guarantee fails: keep it far below '
			       '1/(number of rows), for example 1e-6 to 1e-9. 0 allows pure-epsilon noise only.';
	END IF;
END $$;

-- Takes every privilege on rel away from PUBLIC, from the analyst roles and from every role that
-- is a member of one (they reach it only through dxpriv; Citus copies a table's grants onto its
-- shards). Roles that no longer exist are skipped.
CREATE FUNCTION dx._revoke_from_analysts(rel regclass) RETURNS void
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
-- A statement on a parent (an INSERT routed to a partition, an UPDATE or DELETE through the parent)
-- fires the parent's statement triggers only, never its partitions' or children's: every protected
-- table below the trigger's table (a partition or child protected on its own) is noted too, or its
-- cached unit profile and answers would be served after rows it did not see (redteam2, regress 86).
-- One read committed writing transaction in 64 (at random) also merges the ended transactions' rows
-- of every table (a table noted through a parent fires no trigger of its own), so the rows of a
-- table stay about 64 plus its running writers, whatever its write rate (not under repeatable read
-- or serializable: the merge must never make a writer's transaction fail).
CREATE FUNCTION dx._note_contents_change() RETURNS trigger
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
CREATE FUNCTION dx.protect_table(rel regclass, presence float8 DEFAULT 1.0, delta float8 DEFAULT 0)
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
CREATE FUNCTION dx.unprotect_table(rel regclass)
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

-- Declares (or replaces) the domain and metric of one column of a protected table.
CREATE FUNCTION dx.set_column(rel regclass, column_name name, domain jsonb, metric jsonb)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	col_type regtype;
BEGIN
	PERFORM dx._check_owner(rel);
	PERFORM dx._check_protected(rel);
	SELECT a.atttypid::regtype INTO col_type FROM pg_attribute a
	WHERE a.attrelid = rel AND a.attname = set_column.column_name AND a.attnum > 0 AND NOT a.attisdropped;
	IF col_type IS NULL THEN
		RAISE EXCEPTION 'column "%" of table "%" does not exist', set_column.column_name, rel
			USING ERRCODE = '42703', HINT = 'Check the column name; names are case-sensitive when quoted.';
	END IF;
	IF domain IS NULL OR metric IS NULL THEN
		RAISE EXCEPTION 'domain and metric must not be null' USING ERRCODE = '22004',
			HINT = 'Pass for example ''{"min":0,"max":120}'' and ''{"type":"absolute","scale":10}''.';
	END IF;
	metric := dx._validate_column(col_type, domain, metric);
	IF to_regclass('dx.privacy_units') IS NOT NULL AND EXISTS (SELECT 1 FROM dx.privacy_units u
			WHERE u.relid = rel AND u.unit_column = set_column.column_name) THEN
		RAISE EXCEPTION 'column "%" is the privacy unit of table "%" and cannot be declared', set_column.column_name, rel
			USING ERRCODE = '22023',
			HINT = 'Analysts count units with dx.count_units(unit) or COUNT(DISTINCT unit); they never group by or filter on it.';
	END IF;
	INSERT INTO dx.protected_columns AS c (relid, column_name, domain, metric)
	VALUES (rel, set_column.column_name, domain, metric)
	ON CONFLICT ON CONSTRAINT protected_columns_pkey DO UPDATE SET domain = excluded.domain, metric = excluded.metric;
	PERFORM dx._invalidate(rel);
END $$;

-- Removes a column declaration: analysts can no longer reference the column.
CREATE FUNCTION dx.unset_column(rel regclass, column_name name)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	PERFORM dx._check_owner(rel);
	DELETE FROM dx.protected_columns c WHERE c.relid = rel AND c.column_name = unset_column.column_name;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'column "%" of table "%" is not declared', unset_column.column_name, rel
			USING ERRCODE = '22023', HINT = 'See dx.protected_columns for the declared columns.';
	END IF;
	PERFORM dx._invalidate(rel);
END $$;

-- The checks every budget grant makes: the caller owns rel, role is given, rel is protected and
-- epsilon is positive and finite (epsilon_hint: the hint of that last error).
CREATE FUNCTION dx._check_grant(role regrole, rel regclass, epsilon float8, epsilon_hint text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	PERFORM dx._check_owner(rel);
	IF role IS NULL THEN
		RAISE EXCEPTION 'role must not be null' USING ERRCODE = '22004', HINT = 'Pass a role name such as ''analyst''.';
	END IF;
	PERFORM dx._check_protected(rel);
	IF epsilon IS NULL OR epsilon = 'NaN'::float8 OR epsilon <= 0 OR epsilon = 'Infinity'::float8 THEN
		RAISE EXCEPTION 'budget epsilon must be positive and finite, got %', epsilon USING ERRCODE = '22023',
			HINT = epsilon_hint;
	END IF;
END $$;

-- Sets the epsilon a role may spend on a protected table, and the delta its (epsilon, delta) queries
-- may spend (0: pure-epsilon queries only): in total (refresh NULL), or per period of length
-- refresh (periods start now, at now + refresh, now + 2*refresh, ...). A grant replaces the whole
-- previous grant (epsilon, refresh and delta). What was spent is never refunded: re-granting keeps
-- the current period's spending of epsilon and delta; changing the refresh interval starts a new
-- first period now that carries the current period's spending over.
CREATE FUNCTION dx.grant_budget(role regrole, rel regclass, epsilon float8, refresh interval DEFAULT NULL,
	delta float8 DEFAULT 0)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	PERFORM dx._check_grant(role, rel, epsilon, 'Grant for example 1.0; every query spends its epsilon from this budget.');
	IF refresh IS NOT NULL AND (extract(epoch FROM refresh) < 1
		OR extract(year FROM refresh) < 0 OR extract(month FROM refresh) < 0 OR extract(day FROM refresh) < 0
		OR extract(hour FROM refresh) < 0 OR extract(minute FROM refresh) < 0 OR extract(second FROM refresh) < 0) THEN
		RAISE EXCEPTION 'refresh interval must be at least 1 second and have no negative part, got %', refresh
			USING ERRCODE = '22023', HINT = 'Use for example interval ''1 day'' or ''1 month''; NULL means no refresh.';
	END IF;
	IF delta IS NULL OR delta = 'NaN'::float8 OR delta < 0 OR delta > 1 THEN
		RAISE EXCEPTION 'budget delta must be between 0 and 1, got %', delta USING ERRCODE = '22023',
			HINT = 'Grant for example 1e-5: every (epsilon, delta) query spends the table''s per-query delta from '
			       'this budget. 0 allows pure-epsilon queries only.';
	END IF;
	INSERT INTO dx.budget_grants AS g (role, relid, granted, spent, delta_granted, delta_spent, refresh,
		refresh_anchor, period_start, period_end)
	VALUES (role, rel, epsilon, 0, delta, 0, grant_budget.refresh, now(), now(), now() + grant_budget.refresh)
	ON CONFLICT ON CONSTRAINT budget_grants_pkey DO UPDATE SET
		granted = excluded.granted,
		spent = CASE WHEN g.refresh IS NOT DISTINCT FROM excluded.refresh THEN g.spent
		             WHEN g.period_end <= now() THEN 0 ELSE g.spent END,
		delta_granted = excluded.delta_granted,
		delta_spent = CASE WHEN g.refresh IS NOT DISTINCT FROM excluded.refresh THEN g.delta_spent
		                   WHEN g.period_end <= now() THEN 0 ELSE g.delta_spent END,
		attr_spent = CASE WHEN g.refresh IS NOT DISTINCT FROM excluded.refresh THEN g.attr_spent
		                  WHEN g.period_end <= now() THEN 0 ELSE g.attr_spent END,
		attr_delta_spent = CASE WHEN g.refresh IS NOT DISTINCT FROM excluded.refresh THEN g.attr_delta_spent
		                        WHEN g.period_end <= now() THEN 0 ELSE g.attr_delta_spent END,
		refresh = excluded.refresh,
		refresh_anchor = CASE WHEN g.refresh IS NOT DISTINCT FROM excluded.refresh THEN g.refresh_anchor ELSE now() END,
		period_start = CASE WHEN g.refresh IS NOT DISTINCT FROM excluded.refresh THEN g.period_start ELSE now() END,
		period_end = CASE WHEN g.refresh IS NOT DISTINCT FROM excluded.refresh THEN g.period_end ELSE excluded.period_end END;
END $$;

-- Stops further spending by a role on a table: granted (and delta_granted, and the attribute-privacy
-- budget's attr_granted and attr_delta_granted) becomes what the current period has spent and the
-- budget no longer refreshes; what was spent stays recorded.
CREATE FUNCTION dx.revoke_budget(role regrole, rel regclass)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	PERFORM dx._check_owner(rel);
	UPDATE dx.budget_grants g SET
		granted = CASE WHEN g.period_end <= now() THEN 0 ELSE g.spent END,
		spent = CASE WHEN g.period_end <= now() THEN 0 ELSE g.spent END,
		delta_granted = CASE WHEN g.period_end <= now() THEN 0 ELSE least(g.delta_spent, 1) END,
		delta_spent = CASE WHEN g.period_end <= now() THEN 0 ELSE g.delta_spent END,
		attr_granted = CASE WHEN g.period_end <= now() THEN 0 ELSE g.attr_spent END,
		attr_spent = CASE WHEN g.period_end <= now() THEN 0 ELSE g.attr_spent END,
		attr_delta_granted = CASE WHEN g.period_end <= now() THEN 0 ELSE least(g.attr_delta_spent, 1) END,
		attr_delta_spent = CASE WHEN g.period_end <= now() THEN 0 ELSE g.attr_delta_spent END,
		period_start = CASE WHEN g.period_end <= now()
			THEN (dx._period(g.refresh_anchor, g.refresh, now())).period_start ELSE g.period_start END,
		refresh = NULL,
		period_end = NULL
	WHERE g.role = revoke_budget.role AND g.relid = rel;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'role "%" has no budget on table "%"', role, rel USING ERRCODE = '22023',
			HINT = 'See dx.budgets for the granted budgets.';
	END IF;
END $$;

-- Caps the epsilon one statement may spend on a table (summed over its aggregates), whoever runs
-- it; NULL removes the cap. A query above the cap fails before anything is charged.
CREATE FUNCTION dx.set_query_cap(rel regclass, epsilon float8)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	PERFORM dx._check_owner(rel);
	IF epsilon IS NOT NULL AND (epsilon = 'NaN'::float8 OR epsilon <= 0 OR epsilon = 'Infinity'::float8) THEN
		RAISE EXCEPTION 'per-query cap must be positive and finite, got %', epsilon USING ERRCODE = '22023',
			HINT = 'Use for example 0.5, or NULL to remove the cap.';
	END IF;
	UPDATE dx.protected_tables p SET per_query_cap = epsilon WHERE p.relid = rel;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'table "%" is not protected', rel USING ERRCODE = '22023',
			HINT = 'Call dx.protect_table first.';
	END IF;
END $$;

-- Sets the per-query delta of a protected table: the delta that one (epsilon, delta) query (Gaussian
-- or truncated Laplace noise) may use, charged to the delta budget of the role; 0 allows pure-epsilon
-- noise only. Cached plans over the table are analysed again.
CREATE FUNCTION dx.set_delta(rel regclass, delta float8)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	PERFORM dx._check_owner(rel);
	PERFORM dx._check_table_delta(delta);
	UPDATE dx.protected_tables p SET delta = set_delta.delta WHERE p.relid = rel;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'table "%" is not protected', rel USING ERRCODE = '22023',
			HINT = 'Call dx.protect_table first.';
	END IF;
	PERFORM dx._invalidate(rel);
END $$;

GRANT SELECT ON dx.budgets TO PUBLIC;

-- Column groups: several numeric columns (e.g. longitude, latitude) sharing one vector metric.
CREATE TABLE dx.protected_column_groups (
	relid regclass NOT NULL REFERENCES dx.protected_tables (relid) ON DELETE CASCADE,
	columns name[] NOT NULL,
	domain jsonb NOT NULL,
	metric jsonb NOT NULL,
	PRIMARY KEY (relid, columns)
);
COMMENT ON TABLE dx.protected_column_groups IS 'groups of numeric columns declared with a points domain and a vector metric';
SELECT pg_catalog.pg_extension_config_dump('dx.protected_column_groups', '');
REVOKE ALL ON dx.protected_column_groups FROM PUBLIC;

-- Validates a group declaration for columns of the given types; raises a descriptive error when
-- invalid. Returns the domain to store: a "points_table" comes back as the "points" it holds, read
-- now as the calling role.
CREATE FUNCTION dx._validate_group(column_types regtype[], domain jsonb, metric jsonb)
RETURNS jsonb LANGUAGE c STRICT VOLATILE AS 'MODULE_PATHNAME', 'dx_validate_group';
REVOKE EXECUTE ON FUNCTION dx._validate_group(regtype[], jsonb, jsonb) FROM PUBLIC;

-- Declares (or replaces) a group of numeric columns with a points/grid domain and an l1, l2, linf,
-- theta1 or theta2 metric. A column belongs to at most one declaration.
CREATE FUNCTION dx.set_column_group(rel regclass, columns name[], domain jsonb, metric jsonb)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	types regtype[];
	c name;
BEGIN
	PERFORM dx._check_owner(rel);
	PERFORM dx._check_protected(rel);
	IF columns IS NULL OR cardinality(columns) < 2 OR domain IS NULL OR metric IS NULL THEN
		RAISE EXCEPTION 'a column group needs at least two columns, a domain and a metric' USING ERRCODE = '22023',
			HINT = 'Example: dx.set_column_group(''t'', ''{lon,lat}'', ''{"grid": [{"min":0,"max":9},{"min":0,"max":9}]}'', ''{"type":"l2","scale":1}'').';
	END IF;
	IF (SELECT count(DISTINCT x) FROM unnest(columns) x) <> cardinality(columns) THEN
		RAISE EXCEPTION 'a column group lists a column twice' USING ERRCODE = '22023', HINT = 'List each column once.';
	END IF;
	FOREACH c IN ARRAY columns LOOP
		IF NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = rel AND a.attname = c AND a.attnum > 0 AND NOT a.attisdropped) THEN
			RAISE EXCEPTION 'column "%" of table "%" does not exist', c, rel USING ERRCODE = '42703',
				HINT = 'Check the column names; names are case-sensitive when quoted.';
		END IF;
		IF EXISTS (SELECT 1 FROM dx.protected_columns pc WHERE pc.relid = rel AND pc.column_name = c)
		   OR EXISTS (SELECT 1 FROM dx.protected_column_groups g WHERE g.relid = rel AND c = ANY (g.columns) AND g.columns <> set_column_group.columns) THEN
			RAISE EXCEPTION 'column "%" is already declared', c USING ERRCODE = '22023',
				HINT = 'Remove the other declaration first (dx.unset_column or dx.unset_column_group).';
		END IF;
	END LOOP;
	SELECT array_agg(a.atttypid::regtype ORDER BY u.ord) INTO types
	FROM unnest(columns) WITH ORDINALITY u(name, ord)
	JOIN pg_attribute a ON a.attrelid = rel AND a.attname = u.name;
	domain := dx._validate_group(types, domain, metric);
	INSERT INTO dx.protected_column_groups AS g (relid, columns, domain, metric)
	VALUES (rel, columns, domain, metric)
	ON CONFLICT ON CONSTRAINT protected_column_groups_pkey DO UPDATE SET domain = excluded.domain, metric = excluded.metric;
	PERFORM dx._invalidate(rel);
END $$;

-- Removes a column group declaration.
CREATE FUNCTION dx.unset_column_group(rel regclass, columns name[])
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	PERFORM dx._check_owner(rel);
	DELETE FROM dx.protected_column_groups g WHERE g.relid = rel AND g.columns = unset_column_group.columns;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'no column group % on table "%"', columns, rel USING ERRCODE = '22023',
			HINT = 'See dx.protected_column_groups for the declared groups.';
	END IF;
	PERFORM dx._invalidate(rel);
END $$;

-- Public tables (README "Joins with public tables"): tables whose rows the owner declares public,
-- so that a protected table may be joined with them in queries with dx aggregates. Their rows are
-- read at analysis with the caller's privileges; nothing is granted by being public.
CREATE TABLE dx.public_tables (
	relid regclass PRIMARY KEY,
	created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE dx.public_tables IS 'tables the owner declared public: they may be joined with a protected table';
SELECT pg_catalog.pg_extension_config_dump('dx.public_tables', '');

-- Declares (public = true) or undeclares a table public.
CREATE FUNCTION dx.set_public(rel regclass, public bool DEFAULT true)
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
