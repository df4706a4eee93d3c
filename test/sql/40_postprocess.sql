-- Free post-processing (dxpriv.postprocess, on by default): counts and sums of non-negative
-- weights clamped at 0, averages withheld (NULL) when their count's 95% interval reaches 0, and
-- GROUPING SETS/ROLLUP/CUBE releases projected onto consistent totals by variance-weighted least
-- squares. None of it changes what is charged; dx.last_release() says what was done.
CREATE TABLE pp (age int, sex text, ward text, delta int);
INSERT INTO pp SELECT 20 + (i * 7) % 60, (ARRAY['M','F'])[1 + i % 2], (ARRAY['a','b','c'])[1 + i % 3], (i % 21) - 10
FROM generate_series(1, 600) AS i;
SELECT dx.protect_table('pp', 1);
SELECT dx.set_column('pp', 'age', '{"min": 0, "max": 100, "step": 1}', '{"type": "absolute", "scale": 1}');
SELECT dx.set_column('pp', 'sex', '{"values": ["M", "F"]}', '{"type": "discrete", "weight": 2}');
SELECT dx.set_column('pp', 'ward', '{"values": ["a", "b", "c"]}', '{"type": "discrete", "weight": 3}');
SELECT dx.set_column('pp', 'delta', '{"min": -10, "max": 10, "step": 1}', '{"type": "absolute", "scale": 1}');
SELECT dx.grant_budget(current_user::regrole, 'pp', 1000);
SET dxpriv.cache_lifetime = 0;
SET dxpriv.test_seed = 40;
SHOW dxpriv.postprocess;

-- 1. Counts: 101 groups of age, 41 of them empty (ages 0..19 and 80..100), at epsilon 0.5.
CREATE TEMP TABLE counts AS SELECT age, dx.count(1, 0.5) AS n FROM pp GROUP BY age;
SELECT count(*) AS groups, bool_and(n >= 0) AS no_negative_count FROM counts;
-- what the log says: every clamped answer is 0 and named; the raw scale is unchanged
SELECT count(*) FILTER (WHERE postprocessing = 'clamped at 0') > 0 AS some_clamped,
	bool_and(answer = 0) FILTER (WHERE postprocessing = 'clamped at 0') AS clamped_are_zero,
	count(DISTINCT noise_scale) AS scales, bool_and(interval_method = 'exact') AS exact_intervals
FROM dx.last_release();
-- opting out: the same statement shows negative counts, and costs the same
SET dxpriv.postprocess = off;
CREATE TEMP TABLE raw_counts AS SELECT age, dx.count(1, 0.5) AS n FROM pp GROUP BY age;
SELECT bool_or(n < 0) AS raw_has_negative FROM raw_counts;
SELECT count(*) FILTER (WHERE postprocessing IS NOT NULL) AS annotated FROM dx.last_release();
RESET dxpriv.postprocess;
SELECT count(DISTINCT epsilon) AS one_price, min(array_length(scales, 1)) AS cells
FROM (SELECT epsilon, scales FROM dx.ledger WHERE relid = 'pp'::regclass ORDER BY id DESC LIMIT 2) l;

-- 2. Sums: a column with negative values is never clamped (its weight can be negative), a
-- non-negative one is.
CREATE TEMP TABLE sums AS SELECT age, dx.sum(delta, 0.5) AS d, dx.sum(age, 0.5) AS a FROM pp GROUP BY age;
SELECT bool_or(d < 0) AS signed_sum_keeps_negatives, bool_and(a >= 0) AS nonnegative_sum_clamped FROM sums;

-- 3. Averages: a group of 0 rows at epsilon 0.2 has a count whose interval reaches 0: NULL, named.
CREATE TEMP TABLE avgs AS SELECT age, dx.avg(delta, 0.2) AS m FROM pp WHERE age < 25 OR age > 75 GROUP BY age;
SELECT count(*) AS groups, count(*) FILTER (WHERE m IS NULL) > 0 AS some_withheld FROM avgs;
SELECT bool_and(answer IS NULL) AS withheld_answer_is_null,
	bool_and(postprocessing LIKE 'null: %') AS named
FROM dx.last_release() WHERE component = 'avg' AND postprocessing IS NOT NULL;
-- its parts are still reported (they were released, and paid for)
SELECT count(*) FILTER (WHERE component = 'count') = count(*) FILTER (WHERE component = 'avg') AS parts_listed
FROM dx.last_release();
-- a large group keeps its average
SELECT dx.avg(delta, 1) IS NOT NULL AS large_group_answered FROM pp;

-- 4. ROLLUP: the released totals equal the sums of their parts exactly.
CREATE TEMP TABLE r1 AS SELECT sex, ward, GROUPING(sex, ward) AS g, dx.count(1, 0.5) AS n FROM pp GROUP BY ROLLUP (sex, ward);
SELECT count(*) AS rows,
	(SELECT n FROM r1 WHERE g = 3) = (SELECT sum(n) FROM r1 WHERE g = 1) AS total_is_sum_of_sexes,
	(SELECT bool_and(t.n = (SELECT sum(n) FROM r1 p WHERE p.g = 0 AND p.sex = t.sex)) FROM r1 t WHERE t.g = 1) AS sex_is_sum_of_wards
FROM r1;
-- one charge, the statement's epsilon once, the scales dx.explain announces
SELECT epsilon, array_length(scales, 1) AS cells,
	scales = (SELECT array_agg(noise_scale ORDER BY cell) FROM dx.explain('SELECT sex, ward, GROUPING(sex, ward) AS g, dx.count(1, 0.5) AS n FROM pp GROUP BY ROLLUP (sex, ward)') WHERE cell IS NOT NULL) AS scales_as_explained
FROM dx.ledger ORDER BY id DESC LIMIT 1;
-- the log: every cell projected, each interval no wider than the raw cell's
SELECT count(*) AS cells, bool_and(postprocessing = 'consistent totals') AS all_consistent,
	bool_and(interval_method = 'projected') AS projected_intervals,
	bool_and(l.ci95_half_width <= e.ci95_half_width) AS never_wider,
	bool_and(l.ci95_half_width < e.ci95_half_width) FILTER (WHERE l.group_key = '()') AS total_narrower
FROM dx.last_release() l
JOIN dx.explain('SELECT sex, ward, GROUPING(sex, ward) AS g, dx.count(1, 0.5) AS n FROM pp GROUP BY ROLLUP (sex, ward)') e USING (cell);
-- opting out: the same ROLLUP released raw is not consistent (its total has its own noise)
SET dxpriv.postprocess = off;
CREATE TEMP TABLE r0 AS SELECT sex, ward, GROUPING(sex, ward) AS g, dx.count(1, 0.5) AS n FROM pp GROUP BY ROLLUP (sex, ward);
SELECT (SELECT n FROM r0 WHERE g = 3) = (SELECT sum(n) FROM r0 WHERE g = 0) AS raw_total_is_sum FROM r0 LIMIT 1;
RESET dxpriv.postprocess;

-- 5. CUBE, sums of an integer column and averages: consistent too (an average's sum and count parts).
CREATE TEMP TABLE c1 AS SELECT sex, ward, GROUPING(sex, ward) AS g, dx.sum(delta, 0.5) AS s, dx.count(1, 0.5) AS n FROM pp GROUP BY CUBE (sex, ward);
SELECT (SELECT s FROM c1 WHERE g = 3) = (SELECT sum(s) FROM c1 WHERE g = 2) AND
	(SELECT s FROM c1 WHERE g = 3) = (SELECT sum(s) FROM c1 WHERE g = 1) AND
	(SELECT n FROM c1 WHERE g = 3) = (SELECT sum(n) FROM c1 WHERE g = 0) AS cube_consistent FROM c1 LIMIT 1;
SELECT sex, ward, dx.avg(age, 0.5) IS NOT NULL AS answered FROM pp GROUP BY ROLLUP (sex, ward) ORDER BY 1, 2;
SELECT (SELECT answer FROM dx.last_release() WHERE component = 'count' AND group_key = '()') =
	(SELECT sum(answer) FROM dx.last_release() WHERE component = 'count' AND group_key LIKE '%, %') AS avg_counts_consistent,
	(SELECT bool_and(interval_method = 'projected') FROM dx.last_release() WHERE component IN ('sum', 'count')) AS parts_projected;

-- 6. Not projected: two margins without their product (atoms not identifiable) are released raw.
CREATE TEMP TABLE m1 AS SELECT sex, ward, dx.count(1, 0.5) AS n FROM pp GROUP BY GROUPING SETS ((sex), (ward));
SELECT count(*) AS rows FROM m1;
SELECT count(*) AS cells, count(*) FILTER (WHERE postprocessing IS NOT NULL) AS annotated, bool_and(interval_method = 'exact') AS raw
FROM dx.last_release();

-- 7. Groups that cannot have rows: a WHERE that excludes a group at every declared point drops it
-- (decided at analysis from the domains and WHERE alone); fewer cells, the same epsilon.
CREATE TEMP TABLE w1 AS SELECT age, dx.count(1, 0.5) AS n FROM pp WHERE age BETWEEN 30 AND 36 GROUP BY age;
SELECT count(*) AS week_groups, min(age), max(age) FROM w1;
SELECT epsilon, array_length(scales, 1) AS cells FROM dx.ledger ORDER BY id DESC LIMIT 1;
-- it never depends on the rows: ages 0..9 hold no row, but WHERE keeps them, so they stay
SELECT count(*) AS empty_but_possible FROM (SELECT age, dx.count(1, 0.5) FROM pp WHERE age < 10 GROUP BY age) s;
-- a FILTER does not drop groups (another aggregate of the query may count them); opting out keeps all 101
SELECT count(*) AS with_filter FROM (SELECT age, dx.count(1, 0.5) FILTER (WHERE age < 10) FROM pp GROUP BY age) s;
SET dxpriv.postprocess = off;
SELECT count(*) AS raw_groups FROM (SELECT age, dx.count(1, 0.5) FROM pp WHERE age BETWEEN 30 AND 36 GROUP BY age) s;
RESET dxpriv.postprocess;
-- in a ROLLUP, the set without sex=M keeps its totals consistent
CREATE TEMP TABLE f1 AS SELECT sex, ward, GROUPING(sex, ward) AS g, dx.count(1, 0.5) AS n FROM pp WHERE sex = 'F' GROUP BY ROLLUP (sex, ward);
SELECT count(*) AS rows, (SELECT n FROM f1 WHERE g = 3) = (SELECT sum(n) FROM f1 WHERE g = 0) AS consistent,
	bool_and(sex = 'F' OR g = 3) AS only_f FROM f1;
-- dx.explain lists the same cells the release has
SELECT count(*) AS explained_cells FROM dx.explain('SELECT age, dx.count(1, 0.5) FROM pp WHERE age BETWEEN 30 AND 36 GROUP BY age') WHERE cell IS NOT NULL;

-- Attacks.
-- a) Turning post-processing off in the middle of the statement (set_config in a wrapper, evaluated
--    after the first cells were released) cannot make a cell be released twice with different
--    noise: the decision is taken once per execution, so the totals still add up.
CREATE TEMP TABLE r2 AS SELECT s.*, set_config('dxpriv.postprocess', 'off', true) AS flip
FROM (SELECT sex, ward, GROUPING(sex, ward) AS g, dx.count(1, 0.5) AS n FROM pp GROUP BY ROLLUP (sex, ward)) s;
SELECT (SELECT n FROM r2 WHERE g = 3) = (SELECT sum(n) FROM r2 WHERE g = 0) AS still_consistent FROM r2 LIMIT 1;
RESET dxpriv.postprocess;
-- b) A prepared ROLLUP executed twice is two releases, each charged and each consistent.
PREPARE roll AS SELECT sex, ward, GROUPING(sex, ward) AS g, dx.count(1, 0.5) AS n FROM pp GROUP BY ROLLUP (sex, ward);
CREATE TEMP TABLE before_ledger AS SELECT count(*) AS n FROM dx.ledger WHERE relid = 'pp'::regclass;
CREATE TEMP TABLE e1 AS EXECUTE roll;
CREATE TEMP TABLE e2 AS EXECUTE roll;
SELECT (SELECT count(*) FROM dx.ledger WHERE relid = 'pp'::regclass) - (SELECT n FROM before_ledger) AS charges,
	(SELECT n FROM e1 WHERE g = 3) = (SELECT sum(n) FROM e1 WHERE g = 0) AS first_consistent,
	(SELECT n FROM e2 WHERE g = 3) = (SELECT sum(n) FROM e2 WHERE g = 0) AS second_consistent;
DEALLOCATE roll;
-- c) A replay from the answer cache returns the projected answers, free.
SET dxpriv.cache_lifetime = 600;
CREATE TEMP TABLE k1 AS SELECT sex, ward, dx.count(1, 0.5) AS n FROM pp GROUP BY ROLLUP (sex, ward);
CREATE TEMP TABLE before_replay AS SELECT count(*) AS n FROM dx.ledger WHERE relid = 'pp'::regclass;
CREATE TEMP TABLE k2 AS SELECT sex, ward, dx.count(1, 0.5) AS n FROM pp GROUP BY ROLLUP (sex, ward);
SELECT (SELECT count(*) FROM dx.ledger WHERE relid = 'pp'::regclass) = (SELECT n FROM before_replay) AS replay_free,
	(SELECT array_agg(n ORDER BY sex, ward) FROM k1) = (SELECT array_agg(n ORDER BY sex, ward) FROM k2) AS same_answers,
	(SELECT bool_and(reused) FROM dx.last_release()) AS reused;
SET dxpriv.cache_lifetime = 0;
-- e) A cursor's consistent release keeps its one draw; if its state is dropped while it is open
--    (more than 64 other grouping-set statements analysed meanwhile), its remaining cells are
--    refused (it was charged), never released raw next to the projected ones.
BEGIN;
DECLARE cr CURSOR FOR SELECT sex, ward, GROUPING(sex, ward) AS g, dx.count(1, 0.5) AS n FROM pp GROUP BY ROLLUP (sex, ward);
MOVE 2 IN cr;
DO $$ BEGIN FOR i IN 1..70 LOOP
	EXECUTE format('SELECT count(*) FROM (SELECT sex, dx.count(1, %s) AS n FROM pp GROUP BY ROLLUP (sex)) s', 0.001 + i * 0.00001);
END LOOP; END $$;
MOVE ALL IN cr;
ROLLBACK;
-- and the next statement is answered as usual
CREATE TEMP TABLE r3 AS SELECT sex, ward, GROUPING(sex, ward) AS g, dx.count(1, 0.5) AS n FROM pp GROUP BY ROLLUP (sex, ward);
SELECT (SELECT n FROM r3 WHERE g = 3) = (SELECT sum(n) FROM r3 WHERE g = 0) AS consistent_again FROM r3 LIMIT 1;
-- d) An analyst sees the same post-processing and cannot use it to skip a charge: the ROLLUP of
--    plain count(*) is charged once, its totals add up, and the log belongs to the analyst.
CREATE ROLE pp_analyst;
SELECT dx.add_analyst('pp_analyst');
SELECT dx.grant_budget('pp_analyst', 'pp', 10);
SET ROLE pp_analyst;
SELECT DISTINCT sum(n) FILTER (WHERE g = 3) OVER () = sum(n) FILTER (WHERE g = 0) OVER () AS analyst_consistent
FROM (SELECT sex, ward, GROUPING(sex, ward) AS g, count(*) AS n FROM pp GROUP BY ROLLUP (sex, ward)) a1;
SELECT count(*) AS cells, bool_and(postprocessing = 'consistent totals') AS projected FROM dx.last_release();
RESET ROLE;
SELECT count(*) AS analyst_charges, sum(epsilon) AS spent FROM dx.ledger WHERE role = 'pp_analyst'::regrole;
