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
