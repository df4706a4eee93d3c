-- Window functions next to a release's aggregates (issue 24): post-processing of the released rows,
-- charged exactly like the release alone; windows that would see stored rows are refused.
CREATE TABLE bw (id int, age int, sex text, city text);
INSERT INTO bw SELECT i, 20 + (i * 7) % 60, (ARRAY['M','F'])[1 + i % 2], (ARRAY['a','b','c','d'])[1 + (i * i) % 4]
FROM generate_series(1, 800) AS i;
SELECT dx.protect_table('bw', 1);
SELECT dx.set_column('bw', 'age', '{"min": 0, "max": 100, "step": 1}', '{"type": "absolute", "scale": 1}');
SELECT dx.set_column('bw', 'sex', '{"values": ["M", "F"]}', '{"type": "discrete", "weight": 2}');
SELECT dx.set_column('bw', 'city', '{"values": ["a", "b", "c", "d"]}', '{"type": "discrete", "weight": 1}');
CREATE ROLE bw_analyst;
SELECT dx.add_analyst('bw_analyst');
SELECT dx.grant_budget('bw_analyst', 'bw', 100);
SET dxpriv.cache_lifetime = 0;
SET ROLE bw_analyst;
CREATE TEMP TABLE w0 AS SELECT coalesce(sum(epsilon), 0) AS e, count(*) AS n FROM dx.my_ledger;

-- 1. share of total: one release (4 cells at the session epsilon), the window over its answers
SELECT count(*) AS rows, abs(sum(share) - 1) < 1e-9 AS shares_add_up,
       bool_and(abs(share * total - n) < 1e-6) AS share_of_released, sum(n) AS released_total
FROM (SELECT city, count(*) AS n, sum(count(*)) OVER () AS total, count(*) * 1.0 / sum(count(*)) OVER () AS share
      FROM bw GROUP BY city) s \gset
SELECT :rows AS rows, :'shares_add_up' AS shares_add_up, :'share_of_released' AS share_of_released;
SELECT count(*) - (SELECT n FROM w0) AS charges, round((sum(epsilon) - (SELECT e FROM w0))::numeric, 6) AS spent
FROM dx.my_ledger;
-- the window's input is the release: dx.last_release() lists its 4 cells, which sum to the total
SELECT count(*) AS cells, sum(answer) = :released_total AS same_answers FROM dx.last_release();

-- 2. cumulative sums, rank over the released value, PARTITION BY a GROUP BY key, LIMIT after the window
SELECT bool_and(cum = sum_before) AS cumulative
FROM (SELECT cum, sum(n) OVER (ORDER BY city) AS sum_before
      FROM (SELECT city, count(*) AS n, sum(count(*)) OVER (ORDER BY city) AS cum FROM bw GROUP BY city) s) t;
SELECT bool_and(r = 1 + (SELECT count(*) FROM unnest(ns) AS x WHERE x > n)) AS ranks_of_released
FROM (SELECT n, r, array_agg(n) OVER () AS ns
      FROM (SELECT city, count(*) AS n, rank() OVER (ORDER BY count(*) DESC) AS r FROM bw GROUP BY city) s) t;
SELECT count(*) AS rows, count(DISTINCT sex) AS partitions
FROM (SELECT sex, city, sum(age), row_number() OVER (PARTITION BY sex ORDER BY sum(age) DESC) AS rn
      FROM bw GROUP BY sex, city) s WHERE rn <= 2;
SELECT count(*) AS limited FROM (SELECT city, count(*) FROM bw GROUP BY city
                                 ORDER BY sum(count(*)) OVER (ORDER BY city) DESC LIMIT 2) s;
-- no GROUP BY, HAVING kept in the release, a WITH, and a parameter of a prepared statement
SELECT n = total AS one_row FROM (SELECT count(*) AS n, sum(count(*)) OVER () AS total FROM bw) s;
SELECT count(*) <= 4 AS having_kept FROM (SELECT city, count(*), sum(count(*)) OVER () FROM bw GROUP BY city
                                          HAVING count(*) > -1000000) s;
WITH w AS (SELECT city, count(*) AS n, lag(count(*)) OVER (ORDER BY city) AS prev FROM bw GROUP BY city)
SELECT count(*) AS with_rows, count(prev) AS with_lags FROM w;
PREPARE wp(int) AS SELECT count(*) AS rows, abs(sum(share) - 1) < 1e-9 AS shares_add_up
FROM (SELECT city, count(*) * 1.0 / sum(count(*)) OVER () AS share FROM bw WHERE age > $1 GROUP BY city) s;
EXECUTE wp(30);
EXECUTE wp(50);
DEALLOCATE wp;
-- what it costs before running: dx.explain sees the release under the window
SELECT count(*) AS explained_cells FROM dx.explain('SELECT city, count(*), sum(count(*)) OVER () FROM bw GROUP BY city');
SELECT count(*) - (SELECT n FROM w0) AS charges_total FROM dx.my_ledger;

-- 3. attacks: a window that would see stored rows is refused, and charges nothing
CREATE TEMP TABLE w1 AS SELECT count(*) AS n FROM dx.my_ledger;
-- a window over a column outside the aggregates
SELECT city, count(*), sum(age) OVER () FROM bw GROUP BY city;
SELECT city, count(*), first_value(age) OVER (ORDER BY count(*)) FROM bw GROUP BY city;
-- PARTITION BY an undeclared column (PostgreSQL wants it grouped; dxpriv refuses the group)
SELECT city, count(*), count(*) OVER (PARTITION BY id) FROM bw GROUP BY city;
SELECT city, id, count(*), sum(count(*)) OVER (PARTITION BY id) FROM bw GROUP BY city, id;
-- a window inside the aggregate's argument, and a window without an aggregate
SELECT city, sum(rank() OVER ()) FROM bw GROUP BY city;
SELECT age, count(*) OVER () FROM bw;
SELECT city, count(*) OVER (PARTITION BY id) FROM bw GROUP BY city, id;
-- a window FILTER on a stored column, a frame bound that is a subquery over the table
SELECT city, count(*) FILTER (WHERE age > 30) OVER () FROM bw GROUP BY city;
SELECT city, count(*), sum(count(*)) OVER (ORDER BY city ROWS BETWEEN (SELECT count(*) FROM bw) PRECEDING AND CURRENT ROW)
FROM bw GROUP BY city;
SELECT count(*) - (SELECT n FROM w1) AS charges_of_refused FROM dx.my_ledger;
RESET ROLE;

-- 4. dx.top_k: the exponential mechanism's top-k under d_X (values only, charged once)
CREATE TABLE tk (grade text, age int, note text);
INSERT INTO tk SELECT g, 20 + i % 50, 'n' || i
FROM (VALUES ('p', 50), ('q', 40), ('r', 30), ('s', 20), ('t', 10)) AS v(g, n), generate_series(1, n) AS i;
SELECT dx.protect_table('tk', 1);
SELECT dx.set_column('tk', 'grade', '{"values": ["p", "q", "r", "s", "t", "u"]}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_column('tk', 'age', '{"min": 0, "max": 100, "step": 1}', '{"type": "absolute", "scale": 1}');
SELECT dx.grant_budget('bw_analyst', 'tk', 100000);
SET ROLE bw_analyst;
CREATE TEMP TABLE t0 AS SELECT coalesce(max(id), 0) AS id FROM dx.my_ledger;
-- a huge epsilon ranks the true top 3 (gaps of 10 rows at beta = 1e4 / 6 per round)
SELECT * FROM dx.top_k('tk', 'grade', 3, 10000);
-- charged once: the whole epsilon, one scale per round (2 S k / epsilon, S = 1: a row's presence or
-- grade change moves one count by 1 at distance 1)
SELECT epsilon, scales, mechanism FROM dx.my_ledger WHERE id > (SELECT id FROM t0) ORDER BY id;
-- a small epsilon: still k distinct declared values
SELECT count(*) AS k, count(DISTINCT value) AS distinct_values, bool_and(value IN ('p', 'q', 'r', 's', 't', 'u')) AS declared,
       array_agg(rank ORDER BY rank) AS ranks
FROM dx.top_k('tk', 'grade', 4, 0.01);
-- a condition over declared columns, evaluated on the declared points (ages 60..69: p 10 rows, q 1)
SELECT * FROM dx.top_k('tk', 'grade', 2, 10000, 'age >= 60', ARRAY['age']);
SELECT round(epsilon::numeric, 6) AS epsilon, scales FROM dx.my_ledger ORDER BY id DESC LIMIT 1;
-- refusals, nothing charged: an undeclared column (candidate or condition), a condition with a
-- subquery or a volatile function, a condition on a column not listed, k out of range, bad epsilon
CREATE TEMP TABLE t1 AS SELECT count(*) AS n FROM dx.my_ledger;
SELECT * FROM dx.top_k('tk', 'note', 2, 1.0);
SELECT * FROM dx.top_k('tk', 'grade', 2, 1.0, 'note = ''n1''', ARRAY['note']);
SELECT * FROM dx.top_k('tk', 'grade', 2, 1.0, 'grade IN (SELECT note FROM tk)');
SELECT * FROM dx.top_k('tk', 'grade', 2, 1.0, 'random() < 0.5');
SELECT * FROM dx.top_k('tk', 'grade', 2, 1.0, 'age > 30');
SELECT * FROM dx.top_k('tk', 'grade', 7, 1.0);
SELECT * FROM dx.top_k('tk', 'grade', 0, 1.0);
SELECT * FROM dx.top_k('tk', 'grade', 2, 'NaN');
SELECT * FROM dx.top_k('tk', 'grade', NULL, 1.0);
SELECT count(*) - (SELECT n FROM t1) AS charges_of_refused FROM dx.my_ledger;
RESET ROLE;

-- 5. What BI tools send
SET ROLE bw_analyst;
-- Tableau: SUM(1) ... HAVING (COUNT(1) > 0): both are count(*), one cell per group, charged once
CREATE TEMP TABLE t2 AS SELECT coalesce(sum(epsilon), 0) AS e, count(*) AS n FROM dx.my_ledger;
SELECT count(*) AS groups_kept FROM (SELECT "bw"."city" AS "city", SUM(1) AS "cnt:bw:ok" FROM "public"."bw" "bw"
                                     GROUP BY 1 HAVING (COUNT(1) > -1000000)) s;
SELECT count(*) AS cells, count(DISTINCT aggregate) AS aggregates, min(kind) AS kind, max(release_epsilon) AS release_epsilon
FROM dx.last_release();
SELECT count(*) - (SELECT n FROM t2) AS charges, round((sum(epsilon) - (SELECT e FROM t2))::numeric, 6) AS spent
FROM dx.my_ledger;
-- the HAVING reads the same noisy cell the select list shows: a group kept iff its answer is > 0
SELECT bool_and(n > 0) AS having_on_shown_value FROM (SELECT city, SUM(1) AS n FROM bw GROUP BY city HAVING COUNT(1) > 0) s;
-- count(<constant>) and sum(1) with a FILTER stay one filtered cell; sum(2) is a different query
SELECT count(1) FILTER (WHERE age > 30) = sum(1) FILTER (WHERE age > 30) AS same_answer FROM bw;
SELECT count(*) AS cells FROM dx.last_release();
SELECT sum(2) IS NOT NULL AS s2, count(*) IS NOT NULL AS c FROM bw;
SELECT count(*) AS cells FROM dx.last_release();
-- LIMIT $1 with a bound parameter (Superset, psycopg 3): post-processing of the release
PREPARE lp(int) AS SELECT count(*) AS rows FROM (SELECT city, count(*) FROM bw GROUP BY city ORDER BY 2 DESC LIMIT $1) s;
CREATE TEMP TABLE t3 AS SELECT count(*) AS n FROM dx.my_ledger;
EXECUTE lp(2);
EXECUTE lp(3);
SELECT count(*) - (SELECT n FROM t3) AS limit_param_charges FROM dx.my_ledger;
SELECT count(*) AS cells_released FROM dx.last_release();
DEALLOCATE lp;
RESET ROLE;

-- 6. Superset's series-limit join: the main release joined back to its top-N release. Both are
-- releases (charged in one ledger row: the outer one over every declared group, the top-N one);
-- the top-N's released keys filter the released rows (post-processing)
SET ROLE bw_analyst;
CREATE TEMP TABLE t4 AS SELECT coalesce(sum(epsilon), 0) AS e, count(*) AS n FROM dx.my_ledger;
SELECT count(*) AS rows, count(DISTINCT city) AS cities
FROM (SELECT sex AS sex, city AS city, count(*) AS count FROM bw
      JOIN (SELECT city AS city__, count(*) AS mme_inner__ FROM bw GROUP BY city ORDER BY mme_inner__ DESC LIMIT 2)
           AS series_limit ON city = city__
      GROUP BY sex, city ORDER BY count DESC LIMIT 100) s;
SELECT count(*) AS cells, count(*) FILTER (WHERE group_key LIKE 'sex=%') AS outer_cells,
       count(*) FILTER (WHERE group_key NOT LIKE 'sex=%') AS top_n_cells FROM dx.last_release();
SELECT count(*) - (SELECT n FROM t4) AS charges, round((sum(epsilon) - (SELECT e FROM t4))::numeric, 6) AS spent
FROM dx.my_ledger;
-- a comma join with the condition in WHERE and a filter on the protected table
SELECT count(*) <= 2 AS at_most_two_groups, count(a) >= 0 AS answered FROM (SELECT bw.sex, bw.city, avg(age) AS a FROM bw,
       (SELECT city AS c, count(*) AS n FROM bw WHERE age > 30 GROUP BY city ORDER BY n DESC LIMIT 1) s
       WHERE bw.city = s.c AND bw.age < 90 GROUP BY bw.sex, bw.city) t;
-- attacks: a join that is not on a released key, or reads the subquery's values or raw rows, stays refused
CREATE TEMP TABLE t5 AS SELECT count(*) AS n FROM dx.my_ledger;
SELECT sex, count(*) FROM bw JOIN (SELECT city AS c, count(*) AS n FROM bw GROUP BY city ORDER BY n DESC LIMIT 2) s
ON city = c GROUP BY sex;
SELECT sex, city, count(*) FROM bw JOIN (SELECT city AS c, count(*) AS n FROM bw GROUP BY city) s
ON city = c AND id = n GROUP BY sex, city;
SELECT sex, city, max(n), count(*) FROM bw JOIN (SELECT city AS c, count(*) AS n FROM bw GROUP BY city) s
ON city = c GROUP BY sex, city;
SELECT sex, city, count(*) FROM bw JOIN (SELECT city AS c FROM bw) s ON city = c GROUP BY sex, city;
SELECT sex, city, count(*) FROM bw LEFT JOIN (SELECT city AS c, count(*) n FROM bw GROUP BY city) s ON city = c
GROUP BY sex, city;
SELECT sex, city, count(*) FROM bw JOIN (SELECT city AS c, count(*) n FROM bw GROUP BY city) s ON city = c OR sex = 'M'
GROUP BY sex, city;
SELECT count(*) - (SELECT n FROM t5) AS charges_of_refused FROM dx.my_ledger;
RESET ROLE;

-- 7. A UNION ALL of a total and its parts is GROUPING SETS ((), (city)): one release, one
-- allocation at the session epsilon, and a total equal to the sum of its parts (dxpriv.postprocess)
SET ROLE bw_analyst;
CREATE TEMP TABLE t6 AS SELECT coalesce(sum(epsilon), 0) AS e, count(*) AS n FROM dx.my_ledger;
SELECT count(*) AS rows, sum(n) FILTER (WHERE city IS NULL) = sum(n) FILTER (WHERE city IS NOT NULL) AS total_is_sum
FROM (SELECT NULL::text AS city, count(*) AS n FROM bw UNION ALL SELECT city, count(*) FROM bw GROUP BY city) s;
SELECT count(*) - (SELECT n FROM t6) AS charges, round((sum(epsilon) - (SELECT e FROM t6))::numeric, 6) AS spent
FROM dx.my_ledger;
SELECT count(*) AS cells, min(postprocessing) AS postprocessing FROM dx.last_release();
-- three levels, an untyped NULL, a WHERE shared by every branch, ORDER BY on the union
WITH r AS (SELECT NULL AS city, NULL AS sex, count(*) AS n FROM bw WHERE age > 30
           UNION ALL SELECT city, NULL, count(*) FROM bw WHERE age > 30 GROUP BY city
           UNION ALL SELECT city, sex, count(*) FROM bw WHERE age > 30 GROUP BY city, sex ORDER BY 1, 2)
SELECT (SELECT count(*) FROM r) AS rows,
       bool_and(p.n = c.s) AS cities_are_sums,
       (SELECT sum(n) FROM r WHERE city IS NULL) = (SELECT sum(n) FROM r WHERE city IS NOT NULL AND sex IS NULL) AS total_is_sum
FROM r p JOIN (SELECT city, sum(n) AS s FROM r WHERE sex IS NOT NULL GROUP BY city) c ON c.city = p.city
WHERE p.sex IS NULL;
SELECT count(*) AS cells, count(DISTINCT postprocessing) AS one_postprocessing FROM dx.last_release();
-- not the same release: different WHERE clauses, or the same grouping twice, stay separate releases
CREATE TEMP TABLE t7 AS SELECT count(*) AS n FROM dx.my_ledger;
SELECT count(n) AS rows FROM (SELECT NULL::text AS city, count(*) AS n FROM bw WHERE age > 30
                              UNION ALL SELECT city, count(*) FROM bw GROUP BY city) s;
SELECT count(*) AS cells, count(*) FILTER (WHERE postprocessing = 'consistent totals') AS consistent FROM dx.last_release();
SELECT count(n) AS rows FROM (SELECT city, count(*) AS n FROM bw GROUP BY city
                              UNION ALL SELECT city, count(*) FROM bw GROUP BY city) s;
SELECT count(*) - (SELECT n FROM t7) AS charges_of_separate_releases FROM dx.my_ledger;
-- a branch without aggregates is a raw read: refused
SELECT * FROM (SELECT NULL::text AS city, count(*)::text AS n FROM bw UNION ALL SELECT city, sex FROM bw) s;
RESET ROLE;

-- 8. dxpriv.top_k = 'exponential': ORDER BY count(*) DESC LIMIT k over one GROUP BY column is
-- answered by dx.top_k at half the epsilon (the choice) and an independent count release at the
-- other half (the values, without selection bias). At epsilon 2000 both are exact here.
SET ROLE bw_analyst;
SET dxpriv.top_k = 'exponential';
SET dxpriv.epsilon = 2000;
CREATE TEMP TABLE t8 AS SELECT coalesce(max(id), 0) AS id FROM dx.my_ledger;
SELECT grade, count(*) FROM tk GROUP BY grade ORDER BY count(*) DESC LIMIT 3;
SELECT mechanism, epsilon, array_length(scales, 1) AS cells FROM dx.my_ledger WHERE id > (SELECT id FROM t8) ORDER BY mechanism;
-- with a WHERE on another declared column (ages 60..69: p 10 rows, q 1) and output names kept
SELECT grade AS g, count(*) AS n FROM tk WHERE age >= 60 GROUP BY grade ORDER BY 2 DESC LIMIT 2;
-- other shapes are left alone: two aggregates, ascending order
SELECT count(*) AS rows FROM (SELECT grade, count(*), avg(age) FROM tk GROUP BY grade ORDER BY count(*) DESC LIMIT 2) s;
SELECT count(*) AS rows FROM (SELECT grade, count(*) FROM tk GROUP BY grade ORDER BY count(*) LIMIT 2) s;
-- attacks: the rewrite keeps every check (an undeclared column in WHERE is refused, nothing charged)
CREATE TEMP TABLE t9 AS SELECT count(*) AS n FROM dx.my_ledger;
SELECT grade, count(*) FROM tk WHERE note = 'n1' GROUP BY grade ORDER BY count(*) DESC LIMIT 2;
SELECT grade, count(*) FROM tk WHERE grade IN (SELECT note FROM tk) GROUP BY grade ORDER BY count(*) DESC LIMIT 2;
SELECT count(*) - (SELECT n FROM t9) AS charges_of_refused FROM dx.my_ledger;
RESET dxpriv.epsilon;
RESET dxpriv.top_k;
RESET ROLE;

-- 9. Malloy's group_set pattern: CROSS JOIN generate_series(0, n, 1) AS group_set with
-- CASE WHEN group_set = k THEN ... END keys and aggregates is GROUPING SETS written by hand: one
-- release (group_set_series.h), charged once, the total equal to the sum of its parts
SET ROLE bw_analyst;
CREATE TEMP TABLE t10 AS SELECT coalesce(sum(epsilon), 0) AS e, count(*) AS n FROM dx.my_ledger;
SELECT group_set, "city__1" IS NOT NULL AS has_city, "total__0" IS NOT NULL AS has_total, "n__1" IS NOT NULL AS has_n
FROM (SELECT group_set, CASE WHEN group_set=1 THEN base."city" END AS "city__1",
             CASE WHEN group_set=0 THEN COUNT(1) END AS "total__0",
             CASE WHEN group_set=1 THEN COUNT(1) END AS "n__1"
      FROM bw AS base CROSS JOIN GENERATE_SERIES(0,1,1) AS group_set
      WHERE base.age > 30
      GROUP BY 1,2 ORDER BY 1,2) s;
SELECT count(*) - (SELECT n FROM t10) AS charges, round((sum(epsilon) - (SELECT e FROM t10))::numeric, 6) AS spent
FROM dx.my_ledger;
SELECT count(*) AS cells, min(postprocessing) AS postprocessing FROM dx.last_release();
WITH __stage0 AS (
  SELECT group_set, CASE WHEN group_set=1 THEN base."city" END AS "city__1",
         CASE WHEN group_set IN (0,1) THEN COUNT(1) END AS "n__01"
  FROM bw AS base CROSS JOIN GENERATE_SERIES(0,1,1) AS group_set
  GROUP BY 1,2)
SELECT sum("n__01") FILTER (WHERE group_set = 0) = sum("n__01") FILTER (WHERE group_set = 1) AS total_is_sum,
       count(*) AS rows
FROM __stage0;
-- three groupings (a total, by city, by city and sex), a key shared by two of them (IN), count and sum
CREATE TEMP TABLE t12 AS SELECT count(*) AS n FROM dx.my_ledger;
SELECT group_set, count(*) AS rows, count(c) AS with_city, count(s) AS with_sex, count(n) AS with_n,
       count(a) AS with_a, count(total) AS with_total
FROM (SELECT group_set, CASE WHEN group_set IN (1,2) THEN city END AS c, CASE WHEN group_set=2 THEN sex END AS s,
             CASE WHEN group_set=0 THEN count(*) END AS total,
             CASE WHEN group_set IN (1,2) THEN sum(age) END AS n, CASE WHEN group_set=1 THEN count(*) END AS a
      FROM bw CROSS JOIN generate_series(0, 2) AS group_set GROUP BY 1, 2, 3) s GROUP BY group_set ORDER BY 1;
SELECT count(*) - (SELECT n FROM t12) AS charges FROM dx.my_ledger;
-- not provably a GROUPING SETS release: refused as before, nothing charged
CREATE TEMP TABLE t11 AS SELECT count(*) AS n FROM dx.my_ledger;
SELECT CASE WHEN group_set=1 THEN bw.city END AS city, COUNT(1) AS n
FROM bw CROSS JOIN GENERATE_SERIES(0,1,1) AS group_set GROUP BY 1;
SELECT group_set, count(*) FROM bw CROSS JOIN generate_series(0, 3) AS group_set GROUP BY group_set;
SELECT group_set, CASE WHEN group_set=1 THEN city END AS c, count(*)
FROM bw CROSS JOIN generate_series(0, 2) AS group_set GROUP BY 1, 2;
SELECT group_set, CASE WHEN group_set=1 THEN city END AS c, count(*)
FROM bw CROSS JOIN generate_series(1, 2) AS group_set GROUP BY 1, 2;
SELECT group_set, CASE WHEN group_set=1 THEN city END AS c, count(*)
FROM bw CROSS JOIN generate_series(0, 1) AS group_set WHERE group_set = 1 OR age > 30 GROUP BY 1, 2;
SELECT group_set, CASE WHEN group_set=1 THEN city END AS c, sum(group_set)
FROM bw CROSS JOIN generate_series(0, 1) AS group_set GROUP BY 1, 2;
SELECT group_set, CASE WHEN group_set=1 THEN id END AS c, count(*)
FROM bw CROSS JOIN generate_series(0, 1) AS group_set GROUP BY 1, 2;
SELECT group_set, CASE WHEN group_set=1 THEN city ELSE sex END AS c, count(*)
FROM bw CROSS JOIN generate_series(0, 1) AS group_set GROUP BY 1, 2;
SELECT count(*) - (SELECT n FROM t11) AS charges_of_refused FROM dx.my_ledger;
RESET ROLE;
