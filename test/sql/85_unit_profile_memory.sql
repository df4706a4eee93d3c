-- The unit profile build in bounded memory (profilemem): dxpriv.unit_profile_build_memory bounds the
-- build's work arrays; a table whose rows do not fit is read in several passes over ranges of unit
-- hashes, each unit keeping only its k + 1 smallest ranks (core/unit_rank_compact.h). The profile is
-- the one of a single pass: the rows dx._unit_keep keeps are the rule's (each unit's k rows of
-- smallest dx._unit_rank under the test seed), under a tiny setting (many passes) as under a large
-- one (one pass), for int and text units, the NULL unit, an inheritance tree; the build's DEBUG1 line
-- (superusers only) tells its passes and whether its memory stayed within the setting
-- (MemoryContextMemAllocated of its context at its peak); bad settings are refused (22023; 42501 for
-- an analyst), and a setting too small for k fails with 54000 and a hint, never a crash.
\set SHOW_CONTEXT never
CREATE FUNCTION pg_temp.state_of(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE s text; m text; d text; h text;
BEGIN
	EXECUTE sql;
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
	RETURN s || ': ' || m || coalesce(' (detail: ' || nullif(d, '') || ')', '') || ' (hint: ' || coalesce(nullif(h, ''), 'none') || ')';
END $$;
-- the rows dx._unit_keep keeps under the table's profile, built now (an empty write first: a new
-- contents version, so no cached profile; the build's DEBUG1 line shown), against the rule, both
-- directions; n: rows kept
CREATE FUNCTION pg_temp.same_kept(tab regclass, unit text, k int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE att int2; d bigint; n bigint; BEGIN
	SELECT attnum INTO att FROM pg_attribute WHERE attrelid = tab AND attname = unit;
	EXECUTE format('UPDATE %s SET %I = %I WHERE false', tab, unit, unit);
	DROP TABLE IF EXISTS pg_temp.kp, pg_temp.rf;
	PERFORM pg_catalog.set_config('client_min_messages', 'debug1', false);
	EXECUTE format('CREATE TEMP TABLE kp AS SELECT tableoid AS o, ctid AS t FROM %s WHERE dx._unit_keep((SELECT dx._unit_profile(%s::oid, true, %s::int2, %s, 0)), %I, tableoid, ctid)',
	               tab, tab::oid, att, k, unit);
	PERFORM pg_catalog.set_config('client_min_messages', 'notice', false);
	EXECUTE format('CREATE TEMP TABLE rf AS SELECT o, t FROM (SELECT tableoid AS o, ctid AS t, row_number() OVER (PARTITION BY %I ORDER BY dx._unit_rank(tableoid, ctid)) AS r FROM %s) s WHERE r <= %s',
	               unit, tab, k);
	SELECT count(*) INTO d FROM ((SELECT o, t FROM kp EXCEPT SELECT o, t FROM rf) UNION ALL (SELECT o, t FROM rf EXCEPT SELECT o, t FROM kp)) x;
	SELECT count(*) INTO n FROM kp;
	RETURN CASE WHEN d = 0 THEN 'same ' || n || ' rows' ELSE d || ' rows differ' END;
END $$;
SET dxpriv.test_seed = 8585;
SHOW dxpriv.unit_profile_build_memory;

-- int units: 6 heavy units of 40 to 2000 rows, 6000 light units of 1 to 4 rows (k = 3: those of 4
-- rows are heavy by one), and the NULL unit of 3000 rows (its own array, compacted to k + 1 ranks)
CREATE TABLE pm_int (person int, v int);
INSERT INTO pm_int SELECT p, i % 20 FROM generate_series(1, 6) p, generate_series(1, CASE WHEN p = 6 THEN 2000 ELSE 40 * p END) i;
INSERT INTO pm_int SELECT p, (p + i) % 20 FROM generate_series(7, 6006) p, generate_series(1, 1 + p % 4) i;
INSERT INTO pm_int SELECT NULL, i % 20 FROM generate_series(1, 3000) i;
SELECT dx.protect_table('pm_int', 'Infinity');
SELECT dx.set_column('pm_int', 'v', '{"min":0,"max":20}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'pm_int', 1e6);
SELECT dx.set_privacy_unit('pm_int', 'person', 3);
SELECT count(*) AS rows FROM pm_int;
SET client_min_messages = warning;
SET dxpriv.unit_profile_build_memory = '1GB';
SELECT pg_temp.same_kept('pm_int', 'person', 3) AS int_one_pass;
SET dxpriv.unit_profile_build_memory = '64kB';
SELECT pg_temp.same_kept('pm_int', 'person', 3) AS int_many_passes;
SET dxpriv.unit_profile_build_memory = '200kB';
SELECT pg_temp.same_kept('pm_int', 'person', 3) AS int_some_passes;
SET dxpriv.unit_profile_build_memory = '64kB';
SELECT pg_temp.same_kept('pm_int', 'person', 1) AS int_k1;
SELECT pg_temp.same_kept('pm_int', 'person', 40) AS int_k40;
-- the bounded count (light units all their rows, every other unit 3) from a dx statement under the
-- tiny setting, and the noiseless answers equal under both settings and with profiles off
SELECT sum(least(3, n)) AS expected FROM (SELECT count(*) AS n FROM pm_int GROUP BY person) c \gset
-- (the sums themselves depend on the table's OID, part of each row's rank)
SELECT dx.count(*) = :expected AS bounded_count, dx.sum(v) AS s_tiny FROM pm_int \gset
UPDATE pm_int SET v = v WHERE false;
SET dxpriv.unit_profile_build_memory = '1GB';
SELECT dx.count(*) = :expected AS bounded_count_large, dx.sum(v) AS s_large FROM pm_int \gset
SET dxpriv.unit_profiles = off;
SELECT dx.count(*) = :expected AS bounded_count_off, dx.sum(v) AS s_off FROM pm_int \gset
RESET dxpriv.unit_profiles;
SELECT :'bounded_count' AND :'bounded_count_large' AND :'bounded_count_off' AS bounded_counts,
       :s_tiny = :s_large AND :s_large = :s_off AS same_sums;

-- text units of a partitioned table (the tree's members in one profile), under a tiny setting
CREATE TABLE pm_text (who text, age int) PARTITION BY RANGE (age);
CREATE TABLE pm_text_1 PARTITION OF pm_text FOR VALUES FROM (0) TO (50);
CREATE TABLE pm_text_2 (age int, who text); -- columns in another order
ALTER TABLE pm_text ATTACH PARTITION pm_text_2 FOR VALUES FROM (50) TO (101);
INSERT INTO pm_text SELECT CASE WHEN p % 500 = 0 THEN NULL ELSE 'u' || p END, (p * 13 + i * 29) % 100
FROM generate_series(1, 5000) p, generate_series(1, p % 5 + 1) i;
SELECT dx.protect_table('pm_text', 'Infinity');
SELECT dx.set_column('pm_text', 'age', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'pm_text', 1e6);
SELECT dx.set_privacy_unit('pm_text', 'who', 2);
SET dxpriv.unit_profile_build_memory = '1GB';
SELECT pg_temp.same_kept('pm_text', 'who', 2) AS text_one_pass;
SET dxpriv.unit_profile_build_memory = '64kB';
SELECT pg_temp.same_kept('pm_text', 'who', 2) AS text_many_passes;

-- bad settings: below the least (64kB), not a size; an analyst may not set it
SELECT pg_temp.state_of('SET dxpriv.unit_profile_build_memory = ''32kB''');
SELECT pg_temp.state_of('SET dxpriv.unit_profile_build_memory = ''-1''');
SELECT pg_temp.state_of('SET dxpriv.unit_profile_build_memory = ''lots''');
CREATE ROLE dx_regress_pm LOGIN;
SELECT dx.add_analyst('dx_regress_pm');
SELECT dx.grant_budget('dx_regress_pm', 'pm_int', 1e6);
GRANT SELECT ON pm_int TO dx_regress_pm;
UPDATE pm_int SET v = v WHERE false; -- (a new version: her statement builds the profile)
SET ROLE dx_regress_pm;
SELECT pg_temp.state_of('SET dxpriv.unit_profile_build_memory = ''1GB''');
SHOW dxpriv.unit_profile_build_memory;
-- the analyst's statement builds under the superuser's tiny setting: the same bounded count. The
-- build's DEBUG lines (passes, rows: the table's size) are sent to superusers only, and an analyst
-- may not ask for debug messages on a protected table anyway
SELECT dx.count(*) = :expected AS analyst_bounded_count FROM pm_int;
SET client_min_messages = debug1;
SELECT pg_temp.state_of('SELECT dx.count(*) FROM pm_int');
RESET client_min_messages;
RESET ROLE;

-- a setting too small for k: the build holds k + 1 ranks of a unit twice over (k = 2000: 142 kB);
-- 54000 with its hint, for the superuser and the analyst alike, before any row is read; the next
-- statement is served
UPDATE pm_int SET v = v WHERE false;
SELECT dx.set_privacy_unit('pm_int', 'person', 2000);
SELECT pg_temp.state_of('SELECT dx.count(*) FROM pm_int');
SET ROLE dx_regress_pm;
SELECT pg_temp.state_of('SELECT dx.count(*) FROM pm_int');
RESET ROLE;
SET dxpriv.unit_profile_build_memory = '142kB';
SELECT pg_temp.same_kept('pm_int', 'person', 2000) AS k2000_at_least;
SELECT dx.count(*) AS k2000_count FROM pm_int;

RESET dxpriv.unit_profile_build_memory;
RESET dxpriv.test_seed;
REVOKE SELECT ON pm_int FROM dx_regress_pm;
SELECT dx.remove_analyst('dx_regress_pm');
DROP ROLE dx_regress_pm;
SELECT dx.unprotect_table('pm_int');
SELECT dx.unprotect_table('pm_text');
DROP TABLE pm_int, pm_text;
