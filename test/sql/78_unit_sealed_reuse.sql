-- The leader's dx._unit_keep reuses the plain bytes of the profile its own dx._unit_profile just
-- sealed (executor/unit_profile.cpp, remember_sealed) instead of decrypting and MAC-checking them
-- again, but only for a value equal to that seal byte for byte: a value differing in one byte is
-- refused, a value of an earlier statement still fails the snapshot check, and parallel workers
-- (which always open the value) keep the same rows. Kept rows compared with the rule (each unit's k
-- rows of smallest dx._unit_rank) under one test seed.
SET client_min_messages = warning;
SET dxpriv.test_seed = 7878;
CREATE TABLE sr_visits (person int, v int);
INSERT INTO sr_visits SELECT p, i FROM generate_series(1, 400) p, generate_series(1, 1 + p % 7) i;
SELECT dx.protect_table('sr_visits', 'Infinity');
SELECT dx.set_column('sr_visits', 'v', '{"min":0,"max":20}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'sr_visits', 1e6);
SELECT dx.set_privacy_unit('sr_visits', 'person', 3);
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'no error'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;

-- the rule's count: sum over units of min(rows, 3)
SELECT sum(least(1 + p % 7, 3)) AS rule FROM generate_series(1, 400) p;
-- the profile sealed in this statement and used unchanged (the reuse), serial
SELECT count(*) AS kept FROM sr_visits
WHERE dx._unit_keep((SELECT dx._unit_profile('sr_visits'::regclass, true, 1::int2, 3, 0)), person, tableoid, ctid);
-- the same rows as the rule, row by row
SELECT count(*) AS differ FROM (
  (SELECT ctid FROM sr_visits WHERE dx._unit_keep((SELECT dx._unit_profile('sr_visits'::regclass, true, 1::int2, 3, 0)), person, tableoid, ctid)
   EXCEPT SELECT t FROM (SELECT ctid AS t, row_number() OVER (PARTITION BY person ORDER BY dx._unit_rank(tableoid, ctid)) AS r FROM sr_visits) s WHERE r <= 3)
  UNION ALL
  (SELECT t FROM (SELECT ctid AS t, row_number() OVER (PARTITION BY person ORDER BY dx._unit_rank(tableoid, ctid)) AS r FROM sr_visits) s WHERE r <= 3
   EXCEPT SELECT ctid FROM sr_visits WHERE dx._unit_keep((SELECT dx._unit_profile('sr_visits'::regclass, true, 1::int2, 3, 0)), person, tableoid, ctid))) x;
-- one byte changed (the last byte of the ciphertext, and a byte of the MAC): refused although the
-- backend just sealed the value it was made from
SELECT pg_temp.err($q$WITH p AS MATERIALIZED (SELECT dx._unit_profile('sr_visits'::regclass, true, 1::int2, 3, 0) AS b)
  SELECT count(*) FROM sr_visits, p WHERE dx._unit_keep(set_byte(p.b, length(p.b) - 1, (get_byte(p.b, length(p.b) - 1) + 1) % 256), person, tableoid, ctid)$q$) AS last_byte;
SELECT pg_temp.err($q$WITH p AS MATERIALIZED (SELECT dx._unit_profile('sr_visits'::regclass, true, 1::int2, 3, 0) AS b)
  SELECT count(*) FROM sr_visits, p WHERE dx._unit_keep(set_byte(p.b, 12, (get_byte(p.b, 12) + 1) % 256), person, tableoid, ctid)$q$) AS mac_byte;
-- the unchanged value through the same CTE: accepted, the rule's count
SELECT pg_temp.err($q$WITH p AS MATERIALIZED (SELECT dx._unit_profile('sr_visits'::regclass, true, 1::int2, 3, 0) AS b)
  SELECT count(*) FROM sr_visits, p WHERE dx._unit_keep(p.b, person, tableoid, ctid)$q$) AS unchanged;
-- the last seal kept from one statement and used in the next (the remembered seal, no seal in
-- between): still checked against the snapshot
CREATE TEMP TABLE old_profile AS SELECT dx._unit_profile('sr_visits'::regclass, true, 1::int2, 3, 0) AS b;
SELECT pg_temp.err($q$SELECT count(*) FROM sr_visits s, old_profile p WHERE dx._unit_keep(p.b, s.person, s.tableoid, s.ctid)$q$) AS earlier_statement;
-- parallel workers open the value themselves: the same count
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET force_parallel_mode = on;
SELECT count(*) AS kept_parallel FROM sr_visits
WHERE dx._unit_keep((SELECT dx._unit_profile('sr_visits'::regclass, true, 1::int2, 3, 0)), person, tableoid, ctid);
RESET force_parallel_mode;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- A table without inheritance children: the keep qual passes the table's OID for tableoid (no system
-- column per row); dx._unit_keep refuses (55000) a constant OID once the table has a child, so a
-- child attached after planning never has its rows ranked as the parent's.
CREATE TABLE sr_par (person int, age int);
INSERT INTO sr_par SELECT p, p % 100 FROM generate_series(1, 100) p, generate_series(1, 1 + p % 6) i;
SELECT dx.protect_table('sr_par', 'Infinity');
SELECT dx.set_column('sr_par', 'age', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'sr_par', 1e6);
SELECT dx.set_privacy_unit('sr_par', 'person', 3);
CREATE FUNCTION pg_temp.keep_line(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text; BEGIN
	FOR r IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q LOOP
		IF r ~ '_unit_keep\(' THEN RETURN regexp_replace(trim(r), '''[0-9]+''::oid', '''N''::oid'); END IF;
	END LOOP; RETURN NULL; END $$;
CREATE FUNCTION pg_temp.value_or_err(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE n text; BEGIN EXECUTE q INTO n; RETURN n; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;
SELECT pg_temp.keep_line('SELECT dx.count(*) FROM sr_par') AS no_child_plan;
-- the rule's count (each unit min(rows, 3)) and the statement's, also prepared
SELECT sum(least(1 + p % 6, 3)) AS rule FROM generate_series(1, 100) p;
SELECT dx.count(*) AS no_child FROM sr_par;
PREPARE sr_cnt AS SELECT dx.count(*) FROM sr_par;
SELECT pg_temp.value_or_err('EXECUTE sr_cnt') AS prepared_no_child;
-- a child with 4 rows of every unit attached between PREPARE and EXECUTE: each unit keeps 3 rows over
-- both tables (300), or the statement is refused; never more
CREATE TABLE sr_kid (person int, age int);
INSERT INTO sr_kid SELECT p, p % 100 FROM generate_series(1, 100) p, generate_series(1, 4) i;
ALTER TABLE sr_kid INHERIT sr_par;
SELECT pg_temp.value_or_err('EXECUTE sr_cnt') AS prepared_after_inherit;
SELECT dx.count(*) AS with_child FROM sr_par;
-- (the child has no contents-version trigger: these statements take the hash pass, no keep qual)
SELECT coalesce(pg_temp.keep_line('SELECT dx.count(*) FROM sr_par'), 'no keep qual') AS with_child_plan;
SELECT dx.count(*) AS only_parent FROM ONLY sr_par;
SELECT coalesce(pg_temp.keep_line('SELECT dx.count(*) FROM ONLY sr_par'), 'no keep qual') AS only_plan;
-- the plan of a statement planned before the child came (simulated: the constant OID written by
-- hand, the superuser may call both functions): refused at execution
SELECT pg_temp.value_or_err($q$SELECT count(*) FROM sr_par WHERE dx._unit_keep((SELECT dx._unit_profile('sr_par'::regclass, true, 1::int2, 3, 0)), person, 'sr_par'::regclass::oid, ctid)$q$) AS planned_before_child;
-- ONLY the parent with its OID: accepted (its rows are the parent's only)
SELECT pg_temp.value_or_err($q$SELECT count(*) FROM ONLY sr_par WHERE dx._unit_keep((SELECT dx._unit_profile('sr_par'::regclass, false, 1::int2, 3, 0)), person, 'sr_par'::regclass::oid, ctid)$q$) AS only_constant;
-- another table's OID: refused
SELECT pg_temp.value_or_err($q$SELECT count(*) FROM ONLY sr_par WHERE dx._unit_keep((SELECT dx._unit_profile('sr_par'::regclass, false, 1::int2, 3, 0)), person, 'sr_kid'::regclass::oid, ctid)$q$) AS other_oid;
