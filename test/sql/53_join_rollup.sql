-- GROUPING SETS, ROLLUP and CUBE over a join with public tables (issue 24): the join is taken once
-- for every grouping set, the sets' cells are allocated together and charged once, and their
-- released totals are consistent (dxpriv.postprocess). A point of a join falls in several groups
-- of one set (a protected row joins several public rows), so the atoms of the projection are the
-- groups of the finest set.
CREATE TABLE jr (a int, r text, v int);
INSERT INTO jr SELECT i % 7, CASE WHEN i % 3 = 0 THEN 'n' WHEN i % 3 = 1 THEN 's' ELSE 'e' END, i % 5
FROM generate_series(1, 300) AS i;
CREATE TABLE jr_regions (r text, zone text, pop int);
INSERT INTO jr_regions VALUES ('n', 'cold', 10), ('s', 'warm', 20), ('e', 'warm', 30);
CREATE TABLE jr_tags (a int, tag text);                  -- several rows per key: a row joins 1 to 3 tags
INSERT INTO jr_tags VALUES (0, 'x'), (1, 'x'), (1, 'y'), (2, 'x'), (2, 'y'), (2, 'z'), (3, 'z'), (9, 'w');
SELECT dx.set_public('jr_regions');
SELECT dx.set_public('jr_tags');

-- 1. Noiseless (presence 'Infinity', metric none): every answer equals PostgreSQL's own.
SELECT dx.protect_table('jr', 'Infinity');
SELECT dx.set_column('jr', 'a', '{"min": 0, "max": 6}', '{"type": "none"}');
SELECT dx.set_column('jr', 'r', '{"values": ["n", "s", "e"]}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'jr', 1000);
SET dxpriv.cache_lifetime = 0;
CREATE TEMP TABLE dx_roll AS SELECT d.zone, j.r, GROUPING(d.zone, j.r) AS g, dx.count(*) AS n, dx.sum(d.pop) AS s,
	dx.avg(j.a) AS m FROM jr j JOIN jr_regions d ON d.r = j.r GROUP BY ROLLUP (d.zone, j.r);
CREATE TEMP TABLE pg_roll AS SELECT d.zone, j.r, GROUPING(d.zone, j.r) AS g, count(*) AS n, sum(d.pop) AS s,
	avg(j.a) AS m FROM jr j JOIN jr_regions d ON d.r = j.r GROUP BY ROLLUP (d.zone, j.r);
SELECT x.zone, x.r, x.g, x.n, x.s, round(x.m::numeric, 9) AS m,
	x.n = y.n AND x.s = y.s AND abs(x.m - y.m) < 1e-9 AS same_as_native
FROM dx_roll x JOIN pg_roll y ON x.g = y.g AND x.zone IS NOT DISTINCT FROM y.zone AND x.r IS NOT DISTINCT FROM y.r
ORDER BY x.g, 1, 2;
-- one ledger row for the whole statement (three aggregates: four cells per group, 6 groups)
SELECT count(*) AS ledger_rows, min(array_length(scales, 1)) AS cells FROM dx.ledger WHERE relid = 'jr'::regclass;
-- dx.last_release: every answer of every set, labelled by its own keys (6 groups x 3 aggregates)
SELECT aggregate, group_key, component, answer FROM dx.last_release() WHERE component IN ('value', 'avg')
ORDER BY aggregate, cell NULLS FIRST, group_key;
-- a protected row joins several public rows: CUBE over the tags counts the pairs, like PostgreSQL
SELECT t.tag, j.r, dx.count(*) AS n FROM jr j JOIN jr_tags t ON t.a = j.a GROUP BY CUBE (t.tag, j.r) ORDER BY 1, 2;
SELECT t.tag, j.r, count(*) AS n FROM jr j JOIN jr_tags t ON t.a = j.a GROUP BY CUBE (t.tag, j.r) ORDER BY 1, 2;
-- a LEFT JOIN keeps the rows without a tag in the NULL group of every set
SELECT t.tag, GROUPING(t.tag) AS g, dx.count(*) AS n FROM jr j LEFT JOIN jr_tags t ON t.a = j.a AND t.tag <> 'z'
GROUP BY GROUPING SETS ((t.tag), ()) ORDER BY g, 1;
SELECT t.tag, GROUPING(t.tag) AS g, count(*) AS n FROM jr j LEFT JOIN jr_tags t ON t.a = j.a AND t.tag <> 'z'
GROUP BY GROUPING SETS ((t.tag), ()) ORDER BY g, 1;
-- a bound parameter: analysed with its value when planned, still one release
PREPARE jr_p(int) AS SELECT d.zone, dx.count(*) AS n FROM jr j JOIN jr_regions d ON d.r = j.r WHERE j.a >= $1
GROUP BY ROLLUP (d.zone) ORDER BY 1;
EXECUTE jr_p(3);
SELECT d.zone, count(*) AS n FROM jr j JOIN jr_regions d ON d.r = j.r WHERE j.a >= 3 GROUP BY ROLLUP (d.zone) ORDER BY 1;
SELECT count(*) AS ledger_rows FROM dx.ledger WHERE relid = 'jr'::regclass;
DEALLOCATE jr_p;

-- dbplyr's inner_join before summarise: the join sits in a plain subquery, pulled up first
SELECT zone, dx.count(*) AS n, round(dx.avg(a)::numeric, 9) AS m FROM (SELECT jr.*, zone FROM jr INNER JOIN jr_regions
ON (jr.r = jr_regions.r)) q01 GROUP BY zone ORDER BY zone;
SELECT zone, count(*) AS n, round(avg(a)::numeric, 9) AS m FROM jr INNER JOIN jr_regions ON (jr.r = jr_regions.r)
GROUP BY zone ORDER BY zone;
SELECT zone, dx.count(*) AS n FROM (SELECT jr.*, zone FROM jr INNER JOIN jr_regions ON (jr.r = jr_regions.r)) q01
GROUP BY ROLLUP (zone) ORDER BY zone;

-- an analyst's stddev/corr over the join (linear parts over the joined pairs), plain, in dbplyr's
-- subquery, grouped with ROLLUP and with a bound parameter: PostgreSQL's answers (noiseless)
CREATE ROLE jr_analyst;
GRANT SELECT ON jr_regions, jr_tags TO jr_analyst;
SELECT dx.add_analyst('jr_analyst');
SELECT dx.grant_budget('jr_analyst', 'jr', 1000);
CREATE TEMP TABLE native_sd AS SELECT d.zone, stddev(j.a) AS sd, corr(d.pop, j.a) AS r FROM jr j
JOIN jr_regions d ON d.r = j.r GROUP BY ROLLUP (d.zone);
GRANT SELECT ON native_sd TO jr_analyst;
SET ROLE jr_analyst;
SELECT x.zone, abs(x.sd - n.sd) < 1e-9 AS same_sd, abs(x.r - n.r) < 1e-9 AS same_corr
FROM (SELECT d.zone, stddev(j.a) AS sd, corr(d.pop, j.a) AS r FROM jr j JOIN jr_regions d ON d.r = j.r
      GROUP BY ROLLUP (d.zone)) x
JOIN native_sd n ON n.zone IS NOT DISTINCT FROM x.zone ORDER BY 1;
SELECT zone, round(STDDEV_SAMP(a)::numeric, 9) AS sd FROM (SELECT jr.*, zone FROM jr INNER JOIN jr_regions
ON (jr.r = jr_regions.r)) q01 GROUP BY zone ORDER BY zone;
PREPARE jr_sd(int) AS SELECT round(stddev(j.a)::numeric, 9) AS sd, round(corr(d.pop, j.a)::numeric, 9) AS r
FROM jr j JOIN jr_regions d ON d.r = j.r WHERE j.a >= $1;
EXECUTE jr_sd(0);
SELECT kind, expression FROM dx.last_release() WHERE kind <> 'part' ORDER BY aggregate;
DEALLOCATE jr_sd;
RESET ROLE;
SELECT round(sd::numeric, 9) AS sd, round(r::numeric, 9) AS r FROM native_sd WHERE zone IS NULL;

-- 2. With noise (seeded): one charge at the statement's epsilon with the scales dx.explain
-- announces, and totals that add up.
CREATE TABLE jn (age int, sex text, city text);
INSERT INTO jn SELECT 20 + (i * 7) % 60, (ARRAY['M','F'])[1 + i % 2], (ARRAY['a','b','c','d'])[1 + i % 4]
FROM generate_series(1, 800) AS i;
SELECT dx.protect_table('jn', 1);
SELECT dx.set_column('jn', 'age', '{"min": 0, "max": 100, "step": 1}', '{"type": "absolute", "scale": 1}');
SELECT dx.set_column('jn', 'sex', '{"values": ["M", "F"]}', '{"type": "discrete", "weight": 2}');
SELECT dx.set_column('jn', 'city', '{"values": ["a", "b", "c", "d"]}', '{"type": "discrete", "weight": 1}');
SELECT dx.grant_budget(current_user::regrole, 'jn', 1000);
CREATE TABLE jn_zones (city text, zone text);
INSERT INTO jn_zones VALUES ('a', 'n'), ('b', 'n'), ('c', 's'), ('d', 's');
CREATE TABLE jn_tags (city text, tag text);                -- city a joins two tags, d none
INSERT INTO jn_tags VALUES ('a', 'x'), ('a', 'y'), ('b', 'x'), ('c', 'z');
SELECT dx.set_public('jn_zones');
SELECT dx.set_public('jn_tags');
SET dxpriv.test_seed = 53;
CREATE TEMP TABLE announced AS SELECT array_agg(noise_scale ORDER BY cell) AS scales, max(query_epsilon) AS eps
FROM dx.explain('SELECT z.zone, j.sex, GROUPING(z.zone, j.sex) AS g, dx.count(1, 0.5) AS n FROM jn j JOIN jn_zones z ON z.city = j.city GROUP BY ROLLUP (z.zone, j.sex)')
WHERE cell IS NOT NULL;
CREATE TEMP TABLE r1 AS SELECT z.zone, j.sex, GROUPING(z.zone, j.sex) AS g, dx.count(1, 0.5) AS n
FROM jn j JOIN jn_zones z ON z.city = j.city GROUP BY ROLLUP (z.zone, j.sex);
SELECT * FROM r1 ORDER BY g, 1, 2;
SELECT (SELECT n FROM r1 WHERE g = 3) = (SELECT sum(n) FROM r1 WHERE g = 1) AS total_is_sum_of_zones,
	bool_and((SELECT n FROM r1 p WHERE p.g = 1 AND p.zone = c.zone) =
	         (SELECT sum(n) FROM r1 q WHERE q.g = 0 AND q.zone = c.zone)) AS zones_are_sums_of_cells
FROM r1 c WHERE c.g = 1;
SELECT epsilon = (SELECT eps FROM announced) AS charged_as_announced, scales = (SELECT scales FROM announced) AS scales_as_announced,
	array_length(scales, 1) AS cells
FROM dx.ledger WHERE relid = 'jn'::regclass ORDER BY id DESC LIMIT 1;
SELECT count(*) AS ledger_rows FROM dx.ledger WHERE relid = 'jn'::regclass;
-- every answer is in dx.last_release, projected: its variance after projection below the raw one
SELECT count(*) AS answers, bool_and(postprocessing = 'consistent totals') AS all_consistent,
	bool_and(interval_method = 'projected') AS projected_intervals,
	bool_and(ci95_half_width < noise_scale * ln(20) * (1 + 1e-9)) AS narrower_than_raw
FROM dx.last_release();
-- fan-out: a row of city a is in two tag groups; CUBE (tag, sex) is still consistent
CREATE TEMP TABLE c1 AS SELECT t.tag, j.sex, GROUPING(t.tag, j.sex) AS g, dx.count(1, 0.5) AS n, dx.sum(j.age, 0.5) AS s
FROM jn j JOIN jn_tags t ON t.city = j.city GROUP BY CUBE (t.tag, j.sex);
SELECT g, count(*) AS groups, sum(n) AS n, sum(s) AS s FROM c1 GROUP BY g ORDER BY g;
SELECT count(DISTINCT n) = 1 AND count(DISTINCT s) = 1 AS every_set_adds_up
FROM (SELECT g, sum(n) AS n, sum(s) AS s FROM c1 GROUP BY g) t;
SELECT count(*) AS answers, count(*) FILTER (WHERE postprocessing = 'consistent totals') AS consistent FROM dx.last_release();
-- the charge follows the fan-out: a row of city a adds to two cells of the tag set, so the cells
-- of a join are noisier than those of the same ROLLUP without it
SELECT (SELECT min(noise_scale) FROM dx.explain('SELECT t.tag, dx.count(1, 0.5) FROM jn j JOIN jn_tags t ON t.city = j.city GROUP BY ROLLUP (t.tag)'))
	> (SELECT min(noise_scale) FROM dx.explain('SELECT city, dx.count(1, 0.5) FROM jn GROUP BY ROLLUP (city)')) AS fanout_costs_more;
-- GROUPING SETS without their product (no finest set): one charge, released raw
CREATE TEMP TABLE m1 AS SELECT t.tag, j.sex, dx.count(1, 0.5) AS n FROM jn j JOIN jn_tags t ON t.city = j.city
GROUP BY GROUPING SETS ((t.tag), (j.sex));
SELECT count(*) AS answers, count(*) FILTER (WHERE postprocessing IS NOT NULL) AS postprocessed FROM dx.last_release();
-- opting out: the same ROLLUP released raw costs the same
SET dxpriv.postprocess = off;
CREATE TEMP TABLE r0 AS SELECT z.zone, j.sex, GROUPING(z.zone, j.sex) AS g, dx.count(1, 0.5) AS n
FROM jn j JOIN jn_zones z ON z.city = j.city GROUP BY ROLLUP (z.zone, j.sex);
SELECT count(*) FILTER (WHERE postprocessing IS NOT NULL) AS annotated FROM dx.last_release();
RESET dxpriv.postprocess;
SELECT count(DISTINCT epsilon) AS one_price FROM (SELECT epsilon FROM dx.ledger WHERE relid = 'jn'::regclass ORDER BY id DESC LIMIT 2) l;

-- 3. Errors
SELECT z.zone, dx.count(*) FROM jn j FULL JOIN jn_zones z ON z.city = j.city GROUP BY ROLLUP (z.zone);
SELECT z.zone, dx.count(*) FROM jn j JOIN jr k ON k.r = j.city JOIN jn_zones z ON z.city = j.city GROUP BY ROLLUP (z.zone);
-- a public column outside the keys and aggregates
SELECT z.zone, dx.count(*) FROM jn j JOIN jn_zones z ON z.city = j.city GROUP BY ROLLUP (z.zone) HAVING z.zone = 'n' OR min(z.city) = 'a';
SELECT z.zone, dx.median(j.age) FROM jn j JOIN jn_zones z ON z.city = j.city GROUP BY ROLLUP (z.zone);
CREATE TABLE jn_secret (city text, zone text);                -- not declared public
SELECT z.zone, dx.count(*) FROM jn j JOIN jn_secret z ON z.city = j.city GROUP BY ROLLUP (z.zone);
-- an undeclared protected column: refused when prepared (aggregate argument) or executed (key),
-- before any row is read
ALTER TABLE jn ADD COLUMN note text;
PREPARE jn_bad(int) AS SELECT z.zone, dx.count(j.note) FROM jn j JOIN jn_zones z ON z.city = j.city WHERE j.age > $1
GROUP BY ROLLUP (z.zone);
PREPARE jn_bad2(int) AS SELECT z.zone, dx.count(*) FROM jn j JOIN jn_zones z ON z.city = j.city WHERE j.age > $1
GROUP BY ROLLUP (z.zone, j.note);
EXECUTE jn_bad2(3);
-- nothing above was charged
SELECT count(*) AS ledger_rows FROM dx.ledger WHERE relid = 'jn'::regclass;
