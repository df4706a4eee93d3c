-- Unit profiles (executor/unit_profile.cpp) and their foundation, the contents version.
--
-- Part 1: the contents version counts a writing transaction once (its dx.contents_changes row is
-- inserted ON CONFLICT DO NOTHING), so INSERT; SELECT; INSERT; SELECT in ONE transaction read the
-- same version twice and the second SELECT replayed the first one's answer (stale, free). The
-- version now also holds the transaction's xid and the snapshot's command id once it wrote.
CREATE TABLE uc_fresh (g int, v int);
INSERT INTO uc_fresh SELECT i % 2, i % 50 FROM generate_series(1, 400) AS i;
SELECT dx.protect_table('uc_fresh');
SELECT dx.set_column('uc_fresh', 'v', '{"min": 0, "max": 49}', '{"type": "absolute", "scale": 5}');
CREATE ROLE dx_regress_up LOGIN;
SELECT dx.add_analyst('dx_regress_up');
SELECT dx.grant_budget('dx_regress_up', 'uc_fresh', 100);
CREATE TEMP TABLE uc_spent (step text, spent numeric);
GRANT ALL ON uc_spent TO dx_regress_up;
CREATE FUNCTION pg_temp.uc_note(step text) RETURNS void LANGUAGE sql AS
$$ INSERT INTO uc_spent SELECT step, round(spent::numeric, 6) FROM dx.budgets WHERE "table" = 'uc_fresh'::regclass $$;
SET dxpriv.epsilon = 0.5;
BEGIN;
INSERT INTO uc_fresh VALUES (1, 1);
SET LOCAL ROLE dx_regress_up;
SELECT pg_temp.uc_note('in a transaction, before');
SELECT sum(v) IS NOT NULL AS answered FROM uc_fresh;
SELECT sum(v) IS NOT NULL AS answered FROM uc_fresh; -- no command between: replayed (one charge)
SELECT pg_temp.uc_note('after its first write, the same statement twice: charged once');
RESET ROLE;
INSERT INTO uc_fresh VALUES (1, 2);
SET LOCAL ROLE dx_regress_up;
SELECT sum(v) IS NOT NULL AS answered FROM uc_fresh;
SELECT pg_temp.uc_note('after a second write of the same transaction: charged');
RESET ROLE;
SAVEPOINT s1;
DELETE FROM uc_fresh WHERE v = 2;
SET LOCAL ROLE dx_regress_up;
SELECT sum(v) IS NOT NULL AS answered FROM uc_fresh;
-- (a note here would be rolled back with the savepoint)
RESET ROLE;
ROLLBACK TO SAVEPOINT s1;
SET LOCAL ROLE dx_regress_up;
SELECT sum(v) IS NOT NULL AS answered FROM uc_fresh; -- the same command id as inside the savepoint
SELECT pg_temp.uc_note('in a savepoint after a write, then after ROLLBACK TO SAVEPOINT (same command id): two releases');
RESET ROLE;
COMMIT;
SET ROLE dx_regress_up;
SELECT sum(v) IS NOT NULL AS answered FROM uc_fresh;
SELECT pg_temp.uc_note('after commit: charged (another version)');
SELECT sum(v) IS NOT NULL AS answered FROM uc_fresh;
SELECT pg_temp.uc_note('again: replayed');
RESET ROLE;
-- what each step cost, in units of one release (0: replayed); any command of a writing
-- transaction (the notes' INSERT too) gives a new version: conservative
SELECT step, round((spent - lag(spent) OVER (ORDER BY ord)) / 0.5, 3) AS releases
FROM (SELECT step, spent, row_number() OVER () AS ord FROM uc_spent) s ORDER BY ord;

-- Part 2: unit profiles. The bounded row source of a local table with a privacy unit is the table's
-- rows WHERE dx._unit_keep(profile, unit, tableoid, ctid): light units keep every row, heavy units
-- their rows of rank at most their threshold (the k-th smallest rank). Under the test seed the
-- profile's rank key is the key dx._unit_rank draws, so the kept rows are those of the hash pass and
-- every statement gives identical answers, noiseless and noisy.
SET client_min_messages = notice;
CREATE FUNCTION pg_temp.same_profile(q text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE n bigint; BEGIN
	PERFORM pg_catalog.set_config('client_min_messages', 'warning', true);
	PERFORM pg_catalog.set_config('enable_hashagg', 'off', true);
	DROP TABLE IF EXISTS pg_temp.uc_on, pg_temp.uc_off;
	PERFORM dx.clear_cache(NULL);
	PERFORM pg_catalog.set_config('dxpriv.unit_profiles', 'on', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', '6666', true);
	EXECUTE 'CREATE TEMP TABLE uc_on AS ' || q;
	PERFORM dx.clear_cache(NULL);
	PERFORM pg_catalog.set_config('dxpriv.unit_profiles', 'off', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', '6666', true);
	EXECUTE 'CREATE TEMP TABLE uc_off AS ' || q;
	PERFORM pg_catalog.set_config('dxpriv.unit_profiles', 'on', true);
	SELECT count(*) INTO n FROM ((SELECT * FROM uc_on EXCEPT ALL SELECT * FROM uc_off)
	                              UNION ALL (SELECT * FROM uc_off EXCEPT ALL SELECT * FROM uc_on)) d;
	RETURN n = 0 AND (SELECT count(*) FROM uc_on) > 0;
END $$;
CREATE FUNCTION pg_temp.uc_plan(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text; o text := ''; BEGIN
	FOR r IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q LOOP o := o || r || E'\n'; END LOOP;
	RETURN o; END $$;
CREATE FUNCTION pg_temp.has(p text, s text) RETURNS int LANGUAGE sql AS
$$ SELECT (length(p) - length(replace(p, s, ''))) / length(s) $$;

-- person p has 1 + (p * p) % 17 visits (1..17): with k = 3, 4 and 5 visits are heavy by 1 and 2
CREATE TABLE uc_visits (person int, ward text, age int, cost numeric);
INSERT INTO uc_visits
SELECT CASE WHEN p = 7 THEN NULL ELSE p END,
       CASE WHEN (p + i) % 11 = 0 THEN NULL ELSE (ARRAY['a','b','c'])[1 + (p + i) % 3] END,
       CASE WHEN (p * i) % 13 = 0 THEN NULL ELSE 20 + (p * 7 + i) % 60 END, ((p * 31 + i * 17) % 1001) / 10.0
FROM generate_series(1, 400) p, generate_series(1, 1 + (p * p) % 17) i;
SELECT dx.protect_table('uc_visits', 'Infinity');
SELECT dx.set_column('uc_visits', 'ward', '{"values":["a","b","c"]}', '{"type":"none"}');
SELECT dx.set_column('uc_visits', 'age', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.set_column('uc_visits', 'cost', '{"min":0,"max":100,"step":0.1}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'uc_visits', 1e6);
SELECT dx.set_privacy_unit('uc_visits', 'person', 3);
SET dxpriv.test_seed = 6666;
-- the plan: a qual on the scan, the profile an InitPlan; no hash pass (the one sort: the folded
-- statement's grouping of its one row per group, test 70); the plan holds the
-- profile's identity only (table, ONLY or tree, unit attribute, k), never a unit hash or threshold
SELECT pg_temp.has(p, 'dx._unit_keep($') AS keep_quals, pg_temp.has(p, 'InitPlan') AS initplans,
       pg_temp.has(p, '_unit_bound(') AS hash_passes, pg_temp.has(p, 'Sort Key') AS sorts
FROM pg_temp.uc_plan('SELECT ward, dx.count(*), dx.sum(cost) FROM uc_visits GROUP BY ward') p;
SELECT regexp_replace(l, '[0-9]{4,}', 'N', 'g') AS profile_lines
FROM regexp_split_to_table(pg_temp.uc_plan('SELECT dx.count(*) FROM uc_visits'), E'\n') l WHERE l ~ '_unit_';
-- grouped: the statement is then rewritten as for a table without a unit (a qual on the table's
-- branch; GROUP BY declared columns is folded into one pass, no key in the scan: test 70)
SELECT pg_temp.has(p, 'dx._unit_keep($') AS keep_quals, pg_temp.has(p, 'dx_k0') > 0 AS keys_in_scan
FROM pg_temp.uc_plan('SELECT ward, dx.count(*) FROM uc_visits GROUP BY ward') p;
-- count_units alone: the profile's rows, one row per unit (unitdistinct, regress 71)
SELECT pg_temp.has(p, '_unit_keep(') AS keep_quals, pg_temp.has(p, '_unit_bound(') AS hash_passes
FROM pg_temp.uc_plan('SELECT dx.count_units(person) FROM uc_visits') p;
-- the bounded count is the number of rows the rule keeps: sum over units of min(rows, 3)
SELECT sum(least(3, 1 + (p * p) % 17)) AS expected_rows FROM generate_series(1, 400) p \gset
SELECT dx.count(*) = :expected_rows AS bounded_count FROM uc_visits;
-- noiseless, statement by statement, serial
SELECT q, pg_temp.same_profile(q) AS same FROM (VALUES
	('SELECT dx.count(*) AS n FROM uc_visits'),
	('SELECT dx.count(*) AS n, dx.sum(age) AS s, dx.avg(cost) AS a FROM uc_visits'),
	('SELECT dx.sum(cost) AS s FROM uc_visits WHERE age >= 40'),
	('SELECT dx.count(*) FILTER (WHERE ward = ''a'') AS n, dx.sum(age) FILTER (WHERE cost < 50) AS s FROM uc_visits'),
	('SELECT ward, dx.count(*) AS n, dx.avg(age) AS a FROM uc_visits GROUP BY ward'),
	('SELECT ward, age / 20 AS band, dx.count(*) AS n, dx.sum(cost) AS s FROM uc_visits GROUP BY ward, age / 20'),
	('SELECT dx.count_units(person) AS u, dx.count(*) AS n FROM uc_visits'),
	('SELECT dx.count(*) AS n FROM uc_visits WHERE age > 1000')
) t(q);
-- parallel (forced): workers evaluate the qual with the leader's profile
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT pg_temp.has(p, 'Gather') > 0 AS parallel, pg_temp.has(p, 'dx._unit_keep($') AS keep_quals
FROM pg_temp.uc_plan('SELECT dx.count(*), dx.sum(age) FROM uc_visits') p;
SELECT q, pg_temp.same_profile(q) AS same FROM (VALUES
	('SELECT dx.count(*) AS n, dx.sum(age) AS s FROM uc_visits'),
	('SELECT ward, dx.count(*) AS n, dx.avg(cost) AS a FROM uc_visits WHERE age < 60 GROUP BY ward')
) t(q);
SET force_parallel_mode = on;
SELECT pg_temp.same_profile('SELECT dx.count(*) AS n, dx.sum(cost) AS s FROM uc_visits') AS forced_parallel;
RESET force_parallel_mode;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
-- units of exactly k and k + 1 rows; k = 1 and k = 12
SELECT dx.set_privacy_unit('uc_visits', 'person', 1);
SELECT pg_temp.same_profile('SELECT ward, dx.count(*) AS n, dx.sum(age) AS s FROM uc_visits GROUP BY ward') AS k1;
SELECT dx.set_privacy_unit('uc_visits', 'person', 12);
SELECT pg_temp.same_profile('SELECT dx.count(*) AS n, dx.sum(cost) AS s FROM uc_visits') AS k12;
SELECT dx.set_privacy_unit('uc_visits', 'person', 3);

-- text and numeric units (1.0 and 1.00 are one unit), an inherited and a partitioned table
CREATE TABLE uc_num (who numeric NOT NULL, age int);
INSERT INTO uc_num SELECT (p % 50)::numeric + CASE WHEN i % 2 = 0 THEN 0.00 ELSE 0.0 END, (p * 7 + i) % 100
FROM generate_series(1, 50) p, generate_series(1, 9) i;
SELECT dx.protect_table('uc_num', 'Infinity');
SELECT dx.set_column('uc_num', 'age', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'uc_num', 1e6);
SELECT dx.set_privacy_unit('uc_num', 'who', 2);
SELECT dx.count(*) AS kept_rows FROM uc_num;
SELECT pg_temp.same_profile('SELECT dx.count(*) AS n, dx.sum(age) AS s FROM uc_num') AS numeric_unit;
CREATE TABLE uc_text (who text, age int);
INSERT INTO uc_text SELECT CASE WHEN p = 1 THEN NULL ELSE 'u' || p END, (p * 7 + i) % 100
FROM generate_series(1, 60) p, generate_series(1, p % 7 + 1) i;
SELECT dx.protect_table('uc_text', 'Infinity');
SELECT dx.set_column('uc_text', 'age', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'uc_text', 1e6);
SELECT dx.set_privacy_unit('uc_text', 'who', 3);
SELECT pg_temp.same_profile('SELECT dx.count(*) AS n, dx.sum(age) AS s FROM uc_text') AS text_unit;
CREATE TABLE uc_part (person int, age int) PARTITION BY RANGE (age);
CREATE TABLE uc_part_1 PARTITION OF uc_part FOR VALUES FROM (0) TO (50);
CREATE TABLE uc_part_2 (age int, person int); -- columns in another order
ALTER TABLE uc_part ATTACH PARTITION uc_part_2 FOR VALUES FROM (50) TO (101);
INSERT INTO uc_part SELECT p, (p * 13 + i * 29) % 100 FROM generate_series(1, 200) p, generate_series(1, p % 9 + 1) i;
SELECT dx.protect_table('uc_part', 'Infinity');
SELECT dx.set_column('uc_part', 'age', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'uc_part', 1e6);
SELECT dx.set_privacy_unit('uc_part', 'person', 4);
SELECT pg_temp.has(p, 'dx._unit_keep($') AS keep_quals FROM pg_temp.uc_plan('SELECT dx.count(*) FROM uc_part') p;
SELECT pg_temp.same_profile('SELECT dx.count(*) AS n, dx.sum(age) AS s FROM uc_part WHERE age > 30') AS partitioned;
CREATE TABLE uc_parent (person int, age int);
CREATE TABLE uc_child () INHERITS (uc_parent);
INSERT INTO uc_parent SELECT p, p % 100 FROM generate_series(1, 100) p, generate_series(1, 3) i;
INSERT INTO uc_child SELECT p, (p * 3) % 100 FROM generate_series(1, 150) p, generate_series(1, 4) i;
SELECT dx.protect_table('uc_parent', 'Infinity');
SELECT dx.set_column('uc_parent', 'age', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'uc_parent', 1e6);
SELECT dx.set_privacy_unit('uc_parent', 'person', 5);
SELECT pg_temp.same_profile('SELECT dx.count(*) AS n, dx.sum(age) AS s FROM uc_parent') AS inherited,
       pg_temp.same_profile('SELECT dx.count(*) AS n, dx.sum(age) AS s FROM ONLY uc_parent') AS only_parent;

-- freshness: after a write the next statement builds a new profile (the kept count follows the
-- rows); each answer is compared with the rule (the counts themselves depend on the table's OID,
-- part of each row's rank) written with window functions over dx._unit_rank
-- (the same key under the seed), evaluated by the superuser on the rows the statement sees
CREATE FUNCTION pg_temp.uc_ref() RETURNS bigint LANGUAGE sql AS $$
	SELECT count(*) FROM (SELECT ward, row_number() OVER (PARTITION BY person ORDER BY dx._unit_rank(v.tableoid, v.ctid)) AS r
	                      FROM uc_visits v) s WHERE r <= 3 AND coalesce(ward, 'a') = 'a' $$; -- (NULL is mapped into the domain: 'a')
SELECT dx.count(*) = pg_temp.uc_ref() AS before_write FROM uc_visits WHERE ward = 'a';
INSERT INTO uc_visits SELECT 1, 'a', 30, 1 FROM generate_series(1, 20);
SELECT dx.count(*) = pg_temp.uc_ref() AS after_write FROM uc_visits WHERE ward = 'a';
BEGIN;
INSERT INTO uc_visits SELECT 2000, 'a', 30, 1 FROM generate_series(1, 2);
SELECT dx.count(*) = pg_temp.uc_ref() AS in_transaction_1 FROM uc_visits WHERE ward = 'a';
INSERT INTO uc_visits SELECT 2000, 'a', 30, 1 FROM generate_series(1, 2);
SELECT dx.count(*) = pg_temp.uc_ref() AS in_transaction_2 FROM uc_visits WHERE ward = 'a';
SAVEPOINT s;
DELETE FROM uc_visits WHERE person = 2000;
SELECT dx.count(*) = pg_temp.uc_ref() AS in_savepoint FROM uc_visits WHERE ward = 'a';
ROLLBACK TO SAVEPOINT s;
SELECT dx.count(*) = pg_temp.uc_ref() AS after_savepoint FROM uc_visits WHERE ward = 'a';
ROLLBACK;
SELECT dx.count(*) = pg_temp.uc_ref() AS after_rollback FROM uc_visits WHERE ward = 'a';
UPDATE uc_visits SET age = age WHERE person % 5 = 0; -- rows move (new ctids, new ranks)
SELECT dx.count(*) = pg_temp.uc_ref() AS after_update FROM uc_visits WHERE ward = 'a';
VACUUM FULL uc_visits;
SELECT dx.count(*) = pg_temp.uc_ref() AS after_vacuum_full FROM uc_visits WHERE ward = 'a';
CREATE TEMP TABLE uc_copy AS SELECT * FROM uc_visits;
TRUNCATE uc_visits;
SELECT dx.count(*) AS after_truncate FROM uc_visits WHERE ward = 'a';
INSERT INTO uc_visits SELECT * FROM uc_copy;
SELECT dx.count(*) = pg_temp.uc_ref() AS after_reload FROM uc_visits WHERE ward = 'a';
-- the trigger disabled: no profile at planning (the hash pass), the same answer
ALTER TABLE uc_visits DISABLE TRIGGER ALL;
SELECT pg_temp.has(p, '_unit_keep(') AS keep_quals, pg_temp.has(p, '_unit_bound(') AS hash_passes
FROM pg_temp.uc_plan('SELECT dx.count(*) FROM uc_visits') p;
SELECT dx.count(*) = pg_temp.uc_ref() AS trigger_disabled FROM uc_visits WHERE ward = 'a';
ALTER TABLE uc_visits ENABLE TRIGGER ALL;
SELECT format('ALTER TABLE uc_visits ENABLE ALWAYS TRIGGER %I', tgname) AS enable_always
FROM pg_trigger WHERE tgrelid = 'uc_visits'::regclass AND tgname LIKE 'dx\_contents\_%' \gset
:enable_always;
SELECT pg_temp.has(p, '_unit_keep(') AS keep_quals_again FROM pg_temp.uc_plan('SELECT dx.count(*) FROM uc_visits') p;

-- the functions by hand: dx._unit_profile is refused outside a statement charged on the table,
-- dx._unit_keep refuses a profile dx._unit_profile did not hand out
CREATE ROLE dx_regress_up2;
SET ROLE dx_regress_up2;
SELECT err(format($$SELECT dx._unit_profile(%s, true, 1::int2, 3, 12345)$$, 'uc_visits'::regclass::oid));
SELECT err('SELECT dx._unit_keep(''\x00''::bytea, 1, 0::oid, ''(0,1)''::tid)');
RESET ROLE;
DROP ROLE dx_regress_up2;
SELECT err('SELECT dx._unit_keep(''\x66727075000000000000000000000000000000000000000000000000000000000000000000000000''::bytea, 1, 0::oid, ''(0,1)''::tid)');

-- noisy answers (presence 1, a metric): the same draws on both paths
SELECT dx.set_privacy_unit('uc_visits', 'person', 3);
SELECT dx.protect_table('uc_visits', 1.0);
SELECT dx.set_column('uc_visits', 'age', '{"min":0,"max":100}', '{"type":"absolute","scale":10}');
SELECT q, pg_temp.same_profile(q) AS same FROM (VALUES
	('SELECT dx.count(*) AS n, dx.sum(age) AS s FROM uc_visits'),
	('SELECT ward, dx.count(*) AS n, dx.avg(age) AS a FROM uc_visits GROUP BY ward')
) t(q);
