-- The one-pass transition's int4 path in a dense histogram (issue 23, executor/one_pass.cpp
-- "Int4Dense"): an ungrouped statement over one int4 column of step 1 counts each row at its point
-- at once (value - lo, clamped; NULL at the first point), with no buffer. A dense histogram keeps
-- 16 bits per point and a carry table for the rest: here 140,000 rows, 131,100 of them at one
-- point (two carries of 65,536) and 7,000 at another, serially and in parallel (each worker's state
-- carries on its own, the leader adds the partial states), against the native clamped sum and
-- count and against the previous plan (dxpriv.one_pass = off) under one seed. A column of more
-- points than Int4Dense serves (j over 0..20000: 20,001 points > 8,192) keeps the buffered Int4 path.
SET dxpriv.cache_lifetime = 0;
CREATE TABLE oid4 (i int);
INSERT INTO oid4 SELECT 7 FROM generate_series(1, 131100);
INSERT INTO oid4 SELECT -3 FROM generate_series(1, 7000);
INSERT INTO oid4 SELECT CASE g % 5 WHEN 0 THEN NULL WHEN 1 THEN -2147483648 WHEN 2 THEN 2147483647
                                  WHEN 3 THEN 40 ELSE g % 37 - 5 END
FROM generate_series(1, 1900) g;
ALTER TABLE oid4 ADD COLUMN j int;
UPDATE oid4 SET j = CASE WHEN i IS NULL THEN NULL ELSE (abs(i::bigint) * 7919 + 13) % 23000 - 1000 END;
ANALYZE oid4;
SELECT dx.protect_table('oid4', 'Infinity'); -- noiseless
SELECT dx.set_column('oid4', 'j', '{"min": 0, "max": 20000}', '{"type": "none"}');
SELECT dx.set_column('oid4', 'i', '{"min": -5, "max": 30}', '{"type": "none"}'),
       dx.grant_budget(current_user::regrole, 'oid4'::regclass, 1e9);
CREATE TABLE oid4_noisy AS SELECT * FROM oid4;
ANALYZE oid4_noisy;
SELECT dx.protect_table('oid4_noisy', 1.0);
SELECT dx.set_column('oid4_noisy', 'j', '{"min": 0, "max": 20000}', '{"type": "none"}');
SELECT dx.set_column('oid4_noisy', 'i', '{"min": -5, "max": 30}', '{"type": "none"}'),
       dx.grant_budget(current_user::regrole, 'oid4_noisy'::regclass, 1e9);
-- (public.one_pass_matches, 00_setup: the noiseless answer with one pass on and off against the
-- native reference; NULL is the first point, -5)
CREATE FUNCTION pg_temp.seeded_both_ways(q text, seed int DEFAULT 1031) RETURNS text LANGUAGE plpgsql AS $$
DECLARE a text; b text; BEGIN
	PERFORM pg_catalog.set_config('dxpriv.one_pass', 'on', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', seed::text, true);
	EXECUTE 'SELECT row(t.*)::text FROM (' || q || ') t' INTO a;
	PERFORM pg_catalog.set_config('dxpriv.one_pass', 'off', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', seed::text, true);
	EXECUTE 'SELECT row(t.*)::text FROM (' || q || ') t' INTO b;
	PERFORM pg_catalog.set_config('dxpriv.one_pass', 'on', true);
	RETURN CASE WHEN a = b THEN 'equal' ELSE 'DIFFERENT' END;
END $$;

SET max_parallel_workers_per_gather = 0;
-- the plan: the one-pass aggregate over the one int column, dense ('d|')
SELECT public.plan_has('SELECT dx.sum(i) FROM oid4', '%dx._onepass_sum(''d|q-5:30:1;''::text, i)%') AS dense_int_layout;
SELECT public.one_pass_matches('SELECT dx.sum(i) FROM oid4',
                         'SELECT sum(least(greatest(coalesce(i, -5), -5), 30)) FROM oid4') AS serial_sum,
       public.one_pass_matches('SELECT dx.avg(i) * 140000 FROM oid4',
                         'SELECT sum(least(greatest(coalesce(i, -5), -5), 30)) FROM oid4') AS serial_avg;
-- (380 NULLs among them, at -5: the native reference's coalesce)
SELECT public.one_pass_matches('SELECT dx.sum(j) FROM oid4',
                         'SELECT sum(least(greatest(coalesce(j, 0), 0), 20000)) FROM oid4') AS serial_sum_buffered;
SELECT pg_temp.seeded_both_ways('SELECT dx.sum(i) AS s, dx.avg(i) AS m FROM oid4_noisy') AS serial_noisy,
       pg_temp.seeded_both_ways('SELECT dx.sum(j) AS s, dx.avg(j) AS m FROM oid4_noisy') AS serial_noisy_buffered;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT public.plan_has('SELECT dx.sum(i) FROM oid4', '%Gather%') AS parallel;
SELECT public.one_pass_matches('SELECT dx.sum(i) FROM oid4',
                         'SELECT sum(least(greatest(coalesce(i, -5), -5), 30)) FROM oid4') AS parallel_sum,
       public.one_pass_matches('SELECT dx.sum(j) FROM oid4',
                         'SELECT sum(least(greatest(coalesce(j, 0), 0), 20000)) FROM oid4') AS parallel_sum_buffered;
SELECT pg_temp.seeded_both_ways('SELECT dx.sum(i) AS s, dx.avg(i) AS m FROM oid4_noisy') AS parallel_noisy,
       pg_temp.seeded_both_ways('SELECT dx.sum(j) AS s, dx.avg(j) AS m FROM oid4_noisy') AS parallel_noisy_buffered;
SET parallel_leader_participation = off;
SELECT public.one_pass_matches('SELECT dx.sum(i) FROM oid4',
                         'SELECT sum(least(greatest(coalesce(i, -5), -5), 30)) FROM oid4') AS without_leader_sum;
RESET parallel_leader_participation;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
DROP TABLE oid4, oid4_noisy;
