-- The integer-unit path of dx._unit_keep (unitkeep): for an int2/int4/int8/oid unit the decision is
-- made inline, the unit's hash (mix64 of its Datum) skipped while the Datum repeats, the unit of
-- hash 0 (the value 0) and NULL sent to the general path, and the verified profile recognised by
-- its address, header and MAC. The kept rows must be exactly those of the rule (each unit's k rows
-- of smallest dx._unit_rank), compared row by row (ctid) with the rule written with window
-- functions under one test seed, for rows of different units interleaved in every pattern (a
-- heavy unit's rows around a light unit's, around 0 and NULL, runs of one unit), heavy units 0 and
-- NULL, extreme int8 values, k = 1/2/3, tableoid as a column and as the planner's constant, and a
-- parallel plan.
SET client_min_messages = warning;
SET dxpriv.test_seed = 10201;

-- the kept rows (ctid) by dx._unit_keep under the profile (the superuser may call both functions)
-- against the rule, both directions; n: rows kept. constoid: tableoid passed as a constant.
CREATE FUNCTION pg_temp.same_kept(tab regclass, unit text, k int, constoid bool) RETURNS text LANGUAGE plpgsql AS $$
DECLARE att int2; d bigint; n bigint; BEGIN
	SELECT attnum INTO att FROM pg_attribute WHERE attrelid = tab AND attname = unit;
	DROP TABLE IF EXISTS pg_temp.kp, pg_temp.rf;
	EXECUTE format('CREATE TEMP TABLE kp AS SELECT ctid AS t FROM %s WHERE dx._unit_keep((SELECT dx._unit_profile(%s::oid, true, %s::int2, %s, 0)), %I, %s, ctid)',
	               tab, tab::oid, att, k, unit, CASE WHEN constoid THEN quote_literal(tab::oid) || '::oid' ELSE 'tableoid' END);
	EXECUTE format('CREATE TEMP TABLE rf AS SELECT t FROM (SELECT ctid AS t, row_number() OVER (PARTITION BY %I ORDER BY dx._unit_rank(tableoid, ctid)) AS r FROM %s) s WHERE r <= %s',
	               unit, tab, k);
	SELECT count(*) INTO d FROM ((SELECT t FROM kp EXCEPT SELECT t FROM rf) UNION ALL (SELECT t FROM rf EXCEPT SELECT t FROM kp)) x;
	SELECT count(*) INTO n FROM kp;
	RETURN CASE WHEN d = 0 THEN 'same ' || n || ' rows' ELSE d || ' rows differ' END;
END $$;

-- the unit sequence, in physical order: heavy units 1..6 (4 to 9 rows), 0 (8 rows) and NULL (7
-- rows), light units 1000.. (1 or 2 rows), in patterns A A B A, A 0 A, A NULL A, B A B, runs
CREATE TABLE uf_seq (pos int, u int8);
INSERT INTO uf_seq VALUES
 (1, 1), (2, 1), (3, 1000), (4, 1), (5, 1), (6, 0), (7, 1), (8, NULL), (9, 1), (10, 2),
 (11, 1001), (12, 2), (13, 1001), (14, 2), (15, 0), (16, 0), (17, 2), (18, NULL), (19, NULL), (20, 2),
 (21, 3), (22, 3), (23, 3), (24, 3), (25, 3), (26, 3), (27, 1002), (28, 4), (29, 1003), (30, 4),
 (31, 1004), (32, 4), (33, 1005), (34, 4), (35, 1005), (36, 4), (37, 0), (38, 0), (39, 0), (40, 0),
 (41, NULL), (42, 5), (43, NULL), (44, 5), (45, NULL), (46, 5), (47, 1006), (48, 5), (49, 6), (50, 5),
 (51, 6), (52, 1), (53, 6), (54, 2), (55, 6), (56, 5), (57, 6), (58, 6), (59, NULL), (60, 6),
 (61, 6), (62, 6), (63, 0), (64, 1007), (65, 1007), (66, 4), (67, 1);
-- each pattern 40 times over (a unit's rows then spread over many pages and offsets)
CREATE TABLE uf4 (person int, v int);
INSERT INTO uf4 SELECT CASE WHEN s.u >= 1000 THEN s.u + 10 * r ELSE s.u END, r FROM generate_series(0, 39) r, uf_seq s ORDER BY r, s.pos;
CREATE TABLE uf2 (person int2, v int);
INSERT INTO uf2 SELECT person, v FROM uf4 ORDER BY v, ctid;
-- int8: the extreme values and -1 in place of units 1, 2, 3, light units far apart
CREATE TABLE uf8 (person int8, v int);
INSERT INTO uf8 SELECT CASE person WHEN 1 THEN 9223372036854775807 WHEN 2 THEN -9223372036854775808 WHEN 3 THEN -1
                                   ELSE person * 1000003 END, v FROM uf4 ORDER BY v, ctid;
SELECT (SELECT count(DISTINCT person) FROM uf4) AS units, (SELECT count(*) FROM uf4) AS rows_,
       (SELECT count(*) FROM uf4 WHERE person = 0) AS unit0_rows, (SELECT count(*) FROM uf4 WHERE person IS NULL) AS null_rows;

SELECT pg_temp.same_kept('uf4', 'person', 3, false) AS int4_k3, pg_temp.same_kept('uf4', 'person', 3, true) AS int4_k3_const,
       pg_temp.same_kept('uf4', 'person', 1, true) AS int4_k1, pg_temp.same_kept('uf4', 'person', 2, true) AS int4_k2;
SELECT pg_temp.same_kept('uf2', 'person', 3, true) AS int2_k3, pg_temp.same_kept('uf2', 'person', 1, false) AS int2_k1;
SELECT pg_temp.same_kept('uf8', 'person', 3, true) AS int8_k3, pg_temp.same_kept('uf8', 'person', 2, false) AS int8_k2;

-- through dx.count (the planner's qual): every unit keeps min(rows, k); exact (presence Infinity)
SELECT dx.protect_table('uf4', 'Infinity');
SELECT dx.set_column('uf4', 'v', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'uf4', 1e6);
SELECT dx.set_privacy_unit('uf4', 'person', 3);
SELECT sum(least(3, n)) AS expected FROM (SELECT count(*) AS n FROM uf4 GROUP BY person) c \gset
SELECT dx.count(*) = :expected AS int4_count, :expected AS expected FROM uf4;
SELECT dx.protect_table('uf8', 'Infinity');
SELECT dx.set_column('uf8', 'v', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'uf8', 1e6);
SELECT dx.set_privacy_unit('uf8', 'person', 2);
SELECT sum(least(2, n)) AS expected FROM (SELECT count(*) AS n FROM uf8 GROUP BY person) c \gset
SELECT dx.count(*) = :expected AS int8_count, :expected AS expected FROM uf8;

-- parallel workers (each its own call site state) keep the same rows
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT sum(least(3, n)) AS expected FROM (SELECT count(*) AS n FROM uf4 GROUP BY person) c \gset
SELECT dx.count(*) = :expected AS parallel_int4_count FROM uf4;
SELECT pg_temp.same_kept('uf4', 'person', 3, true) AS parallel_int4_k3;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET dxpriv.test_seed;
DROP TABLE uf_seq, uf4, uf2, uf8;
