-- Execution by lookup: rows are mapped to their sub-universe point by dxpriv's index functions and
-- weighed from the per-point table built at analysis. Noiseless (presence 'Infinity', metric none),
-- so every answer below is exact and compared with a native reference of the same rule.
CREATE TABLE lk (a int, s text, x float8, y float8, n numeric);
INSERT INTO lk SELECT i % 7, CASE WHEN i % 3 = 0 THEN 'p' WHEN i % 3 = 1 THEN 'q' ELSE 'zz' END,
                      (i % 5) * 1.1, (i % 4) * 0.9, (i % 11) * 2.5
FROM generate_series(1, 300) AS i;
INSERT INTO lk VALUES (NULL, NULL, NULL, NULL, NULL), (99, 'p', 100, -100, 1e6);
SELECT dx.protect_table('lk', 'Infinity');
SELECT dx.set_column('lk', 'a', '{"min": 0, "max": 6}', '{"type": "none"}');
SELECT dx.set_column('lk', 's', '{"values": ["p", "q"]}', '{"type": "none"}');
SELECT dx.set_column('lk', 'n', '{"min": 0, "max": 25, "step": 2.5}', '{"type": "none"}');
SELECT dx.set_column_group('lk', '{x,y}', '{"points": [[0, 0], [2.2, 0.9], [4.4, 2.7]]}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'lk', 1000);
-- the clamping rule as SQL, for the native references
CREATE VIEW lk_clamped AS
SELECT least(greatest(coalesce(a, 0), 0), 6) AS a,
       CASE WHEN s IN ('p', 'q') THEN s ELSE 'p' END AS s,
       least(greatest(round(coalesce(n, 0) / 2.5) * 2.5, 0), 25) AS n,
       (SELECT p FROM (VALUES (0, 0.0, 0.0), (1, 2.2, 0.9), (2, 4.4, 2.7)) AS pts(p, px, py)
        ORDER BY (coalesce(x, 'NaN') - px) ^ 2 + (coalesce(y, 'NaN') - py) ^ 2, p LIMIT 1) AS point
FROM lk;

-- WHERE, FILTER and arguments over several columns at once (one point index, one table each)
SELECT dx.count(*) FILTER (WHERE s = 'q') AS q_rows, dx.sum(a * n) AS a_n, dx.avg(n) AS avg_n
FROM lk WHERE a BETWEEN 1 AND 5 AND n <> 5;
SELECT count(*) FILTER (WHERE s = 'q') AS q_rows, sum(a * n) AS a_n, avg(n) AS avg_n
FROM lk_clamped WHERE a BETWEEN 1 AND 5 AND n <> 5;
-- GROUP BY with a WHERE on another column: empty groups still come back
SELECT s, dx.count(*), dx.sum(n) FROM lk WHERE a = 6 AND n > 100 GROUP BY s ORDER BY s;
SELECT s, dx.count(*), dx.sum(a) FROM lk WHERE n >= 20 GROUP BY s ORDER BY s;
SELECT s, count(*), sum(a) FROM lk_clamped WHERE n >= 20 GROUP BY s ORDER BY s;
-- a column group: rows weighed at their nearest declared point
SELECT dx.count(*) FILTER (WHERE x > 1) AS far, dx.sum(x + y) AS total FROM lk;
SELECT count(*) FILTER (WHERE point > 0) AS far,
       sum(CASE point WHEN 0 THEN 0 WHEN 1 THEN 3.1 ELSE 7.1 END) AS total FROM lk_clamped;
-- the plan evaluates no expression of the query on rows: no Filter, only index and lookup calls
EXPLAIN (COSTS OFF) SELECT dx.count(*) FROM lk WHERE a > 2;

-- settings changed between analysis and execution change nothing: a cursor is analysed at DECLARE
-- (extra_float_digits = -15: no domain point prints as '2.5', so the analysed answer is 0)
SELECT count(*) AS native FROM lk_clamped WHERE n = 2.5;
BEGIN;
SET LOCAL extra_float_digits = -15;
DECLARE c CURSOR FOR SELECT dx.count(*) FROM lk WHERE (n::float8)::text = '2.5';
SET LOCAL extra_float_digits = 1;
FETCH ALL FROM c;
COMMIT;
-- the same through PREPARE / EXECUTE
SET extra_float_digits = -15;
PREPARE p AS SELECT dx.count(*) FROM lk WHERE (n::float8)::text = '2.5';
SET extra_float_digits = 1;
EXECUTE p;
DEALLOCATE p;
-- and analysed at the current settings, the count is the clamped native one
SELECT dx.count(*) FROM lk WHERE (n::float8)::text = '2.5';
RESET extra_float_digits;

-- an expression evaluated at analysis sees domain points only: a NOTICE per point, not per row
CREATE FUNCTION lk_peek(int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE
AS $$ BEGIN RAISE NOTICE 'point %', $1; RETURN $1 > 4; END $$;
SELECT dx.count(*) FROM lk WHERE lk_peek(a);
DROP FUNCTION lk_peek(int);

-- the lookup functions refuse forged tables, layouts and indexes outside the table
-- (a valid table: magic P, version 1, width 1, 2 points, no value, codes 0 0)
SELECT dx._weigh('\x5001010002000000000000000000'::bytea, 'e', 'q'::text, '{p,q}'::text[]) IS NULL AS no_contribution;
SELECT dx._weigh('\x00'::bytea, 'e', 'q'::text, '{p,q}'::text[]);
SELECT dx._weigh('\x500101000200000000000000000001'::bytea, 'e', 'q'::text, '{p,q}'::text[]);
SELECT dx._weigh('\x50010100010000000000000000'::bytea, 'e', 'q'::text, '{p,q}'::text[]);
SELECT dx._weigh('\x5001010002000000000000000000'::bytea, 'x', 'q'::text, '{p,q}'::text[]);
SELECT dx._weigh('\x5001010002000000000000000000'::bytea, 'ee', 'q'::text, '{p,q}'::text[]);
SELECT dx._weigh('\x5001010002000000000000000000'::bytea, 'e', 'q'::text, NULL::text[]);
SELECT dx._weigh_int('\x5001010002000000000000000000'::bytea, 'r', 7, 0::float8, 1::float8, 1::float8) IS NULL AS no_candidate;
SELECT dx._weigh_int('\x5001010002000000000000000000'::bytea, 'p', '{0,0,1,1}'::float8[], 2, 1::float8, 1::float8) IS NULL AS no_candidate;

-- enumerated date labels are read under fixed settings (DateStyle ISO, MDY; TimeZone UTC), so a
-- DateStyle changed between DECLARE and FETCH cannot move rows to other points
CREATE TABLE dd (d date);
INSERT INTO dd VALUES ('2024-01-02'), ('2024-01-02'), ('2024-01-02'), ('2024-02-01');
SELECT dx.protect_table('dd', 'Infinity');
SELECT dx.set_column('dd', 'd', '{"values": ["01/02/2024", "02/01/2024"]}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'dd', 100);
BEGIN;
SET LOCAL DateStyle = 'ISO, MDY';
DECLARE c_dates CURSOR FOR SELECT dx.count(*) FROM dd WHERE d = '2024-01-02';
SET LOCAL DateStyle = 'ISO, DMY';
FETCH ALL FROM c_dates;
COMMIT;
SET DateStyle = 'SQL, DMY';
SELECT d, dx.count(*) FROM dd GROUP BY d ORDER BY d;
RESET DateStyle;
-- dx._group_key refuses group indexes outside its values and multi-dimensional arrays
SELECT dx._group_key(1, ARRAY['a', 'b']);
SELECT dx._group_key(2, ARRAY['a', 'b']);
SELECT dx._group_key(-1, ARRAY['a', 'b']);
SELECT dx._group_key(0, ARRAY[[1, 2], [3, 4]]);
