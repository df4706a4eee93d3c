-- What a statement is charged pays for the noise of what it releases, whatever the planner drops
-- (issue 21, class 2): the cells of one release are allocated together, so the statement is
-- charged the whole allocation even when the planner removes some of its aggregates (an unused
-- output of a subquery, CASE WHEN false THEN <aggregate>). Noiseless checks: for every shape, the
-- ledger's epsilon equals the allocation dx.explain reports, and every released scale satisfies
-- scale x charged epsilon / sensitivity >= 1, where the sensitivity of a released cell is that of
-- the same cell asked alone (dx.explain: its one-cell scale x its epsilon).
SET client_min_messages = warning;
SET dxpriv.cache_lifetime = 0;
CREATE TABLE cc (id int, age int, sex text, ward text, person int);
INSERT INTO cc SELECT i, (i * 7) % 90, CASE WHEN i % 3 = 0 THEN 'M' ELSE 'F' END,
       (ARRAY['a','b','c'])[1 + i % 3], i % 400
FROM generate_series(1, 1200) AS i;
-- age 29 -> 30 is d = 0.2 (scale 5)
SELECT dx.protect_table('cc', 1.0);
SELECT dx.set_column('cc', 'age', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 5}');
SELECT dx.set_column('cc', 'sex', '{"values": ["F", "M"]}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_column('cc', 'ward', '{"values": ["a", "b", "c"]}', '{"type": "discrete", "weight": 1}');
SELECT dx.grant_budget(current_user::regrole, 'cc', 1000);
-- the same data with a privacy unit (one person, up to 3 rows)
CREATE TABLE cc_units AS SELECT * FROM cc;
SELECT dx.protect_table('cc_units', 1.0);
SELECT dx.set_column('cc_units', 'age', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 5}');
SELECT dx.set_column('cc_units', 'sex', '{"values": ["F", "M"]}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_privacy_unit('cc_units', 'person', 3);
SELECT dx.grant_budget(current_user::regrole, 'cc_units', 1000);
-- a public table to join with
CREATE TABLE cc_wards (ward text, zone text);
INSERT INTO cc_wards VALUES ('a', 'north'), ('b', 'south'), ('c', 'south');
SELECT dx.set_public('cc_wards');

-- cc_check(statement, singles): after `statement` ran, its ledger row (the last) against
-- dx.explain(statement) and the released cells' own sensitivities (singles[i]: cell i asked alone)
CREATE FUNCTION cc_check(statement text, singles text[])
RETURNS TABLE (charged float8, allocated float8, charged_is_allocation boolean, released_cells int, private boolean)
LANGUAGE plpgsql AS $$
DECLARE
	l record;
	sens float8;
	ok boolean := true;
BEGIN
	SELECT epsilon, scales INTO l FROM dx.ledger ORDER BY id DESC LIMIT 1;
	FOR i IN 1 .. array_length(singles, 1) LOOP
		SELECT max(e.noise_scale * e.query_epsilon) INTO sens FROM dx.explain(singles[i]) e;
		ok := ok AND l.scales[i] * l.epsilon / sens >= 1 - 1e-9;
	END LOOP;
	RETURN QUERY SELECT round(l.epsilon::numeric, 6)::float8,
	                    (SELECT round(max(e.query_epsilon)::numeric, 6)::float8 FROM dx.explain(statement) e),
	                    abs(l.epsilon - (SELECT max(e.query_epsilon) FROM dx.explain(statement) e)) < 1e-9,
	                    array_length(l.scales, 1), ok;
END $$;

SET dxpriv.epsilon = 0.1234;
-- 1. the issue's wrapper: the planner removes the unused output b
SELECT a IS NOT NULL AS answered FROM (SELECT dx.count(*) FILTER (WHERE age < 30) a,
                                              dx.count(*) FILTER (WHERE age >= 60) b FROM cc) t;
SELECT mechanism FROM dx.ledger ORDER BY id DESC LIMIT 1;
-- dx.last_release: the aggregate's epsilon and the release's, which was charged
SELECT cell, epsilon, release_epsilon, noise_scale = (SELECT scales[1] FROM dx.ledger ORDER BY id DESC LIMIT 1) AS ledger_scale
FROM dx.last_release();
SELECT * FROM cc_check($$SELECT a FROM (SELECT dx.count(*) FILTER (WHERE age < 30) a, dx.count(*) FILTER (WHERE age >= 60) b FROM cc) t$$,
                       ARRAY[$$SELECT dx.count(*) FROM cc WHERE age < 30$$]);
-- the same aggregates read both: the same charge, no suffix
SELECT a IS NOT NULL AND b IS NOT NULL AS answered FROM (SELECT dx.count(*) FILTER (WHERE age < 30) a,
                                                                dx.count(*) FILTER (WHERE age >= 60) b FROM cc) t;
SELECT round(epsilon::numeric, 6) AS epsilon, array_length(scales, 1) AS cells, mechanism FROM dx.ledger ORDER BY id DESC LIMIT 1;

-- 2. ten FILTERs, one read
SELECT a0 IS NOT NULL AS answered FROM (SELECT dx.count(*) FILTER (WHERE age < 30) a0,
	dx.count(*) FILTER (WHERE age >= 30) a1, dx.count(*) FILTER (WHERE age >= 35) a2,
	dx.count(*) FILTER (WHERE age >= 40) a3, dx.count(*) FILTER (WHERE age >= 45) a4,
	dx.count(*) FILTER (WHERE age >= 50) a5, dx.count(*) FILTER (WHERE age >= 55) a6,
	dx.count(*) FILTER (WHERE age >= 60) a7, dx.count(*) FILTER (WHERE age >= 65) a8,
	dx.count(*) FILTER (WHERE age >= 70) a9 FROM cc) t;
SELECT mechanism FROM dx.ledger ORDER BY id DESC LIMIT 1;
SELECT * FROM cc_check($$SELECT a0 FROM (SELECT dx.count(*) FILTER (WHERE age < 30) a0,
	dx.count(*) FILTER (WHERE age >= 30) a1, dx.count(*) FILTER (WHERE age >= 35) a2,
	dx.count(*) FILTER (WHERE age >= 40) a3, dx.count(*) FILTER (WHERE age >= 45) a4,
	dx.count(*) FILTER (WHERE age >= 50) a5, dx.count(*) FILTER (WHERE age >= 55) a6,
	dx.count(*) FILTER (WHERE age >= 60) a7, dx.count(*) FILTER (WHERE age >= 65) a8,
	dx.count(*) FILTER (WHERE age >= 70) a9 FROM cc) t$$,
                       ARRAY[$$SELECT dx.count(*) FROM cc WHERE age < 30$$]);
-- aggregates that cost nothing (never true on the declared domain) and one read: the allocation
-- moves their share to the read cell (a small scale: the issue's exact answers with 40 of them),
-- so the statement pays for all
SELECT a IS NOT NULL AS answered FROM (SELECT dx.count(*) FILTER (WHERE age < 30) a,
	dx.count(*) FILTER (WHERE age > 100) z1, dx.count(*) FILTER (WHERE age > 101) z2,
	dx.count(*) FILTER (WHERE age > 102) z3, dx.count(*) FILTER (WHERE age > 103) z4 FROM cc) t;
SELECT * FROM cc_check($$SELECT a FROM (SELECT dx.count(*) FILTER (WHERE age < 30) a,
	dx.count(*) FILTER (WHERE age > 100) z1, dx.count(*) FILTER (WHERE age > 101) z2,
	dx.count(*) FILTER (WHERE age > 102) z3, dx.count(*) FILTER (WHERE age > 103) z4 FROM cc) t$$,
                       ARRAY[$$SELECT dx.count(*) FROM cc WHERE age < 30$$]);

-- 3. CASE WHEN false THEN <aggregate>: folded away by the planner
SELECT a IS NOT NULL AS answered, b IS NULL AS b_removed
FROM (SELECT dx.count(*) FILTER (WHERE age < 30) a, CASE WHEN false THEN dx.count(*) FILTER (WHERE age >= 60) END b FROM cc) t;
SELECT * FROM cc_check($$SELECT dx.count(*) FILTER (WHERE age < 30) a, CASE WHEN false THEN dx.count(*) FILTER (WHERE age >= 60) END b FROM cc$$,
                       ARRAY[$$SELECT dx.count(*) FROM cc WHERE age < 30$$]);
SELECT dx.count(*) FILTER (WHERE age < 30) IS NOT NULL AS answered,
       CASE WHEN false THEN dx.count(*) FILTER (WHERE age >= 60) END AS removed FROM cc;
SELECT * FROM cc_check($$SELECT dx.count(*) FILTER (WHERE age < 30) a, CASE WHEN false THEN dx.count(*) FILTER (WHERE age >= 60) END b FROM cc$$,
                       ARRAY[$$SELECT dx.count(*) FROM cc WHERE age < 30$$]);

-- 4. GROUP BY: the released groups of the kept aggregate
SELECT sex, a IS NOT NULL AS answered FROM (SELECT sex, dx.count(*) FILTER (WHERE age < 30) a,
                                                   dx.count(*) FILTER (WHERE age >= 60) b FROM cc GROUP BY sex) t ORDER BY sex;
SELECT mechanism FROM dx.ledger ORDER BY id DESC LIMIT 1;
SELECT * FROM cc_check($$SELECT sex, a FROM (SELECT sex, dx.count(*) FILTER (WHERE age < 30) a, dx.count(*) FILTER (WHERE age >= 60) b FROM cc GROUP BY sex) t$$,
                       ARRAY[$$SELECT dx.count(*) FROM cc WHERE age < 30 AND sex = 'F'$$,
                             $$SELECT dx.count(*) FROM cc WHERE age < 30 AND sex = 'M'$$]);

-- 5. a table with a privacy unit
SELECT a IS NOT NULL AS answered FROM (SELECT dx.count(*) FILTER (WHERE age < 30) a,
                                              dx.count(*) FILTER (WHERE age >= 60) b FROM cc_units) t;
SELECT mechanism FROM dx.ledger ORDER BY id DESC LIMIT 1;
SELECT * FROM cc_check($$SELECT a FROM (SELECT dx.count(*) FILTER (WHERE age < 30) a, dx.count(*) FILTER (WHERE age >= 60) b FROM cc_units) t$$,
                       ARRAY[$$SELECT dx.count(*) FROM cc_units WHERE age < 30$$]);

-- 6. a join with a public table
SELECT a IS NOT NULL AS answered FROM (SELECT dx.count(*) FILTER (WHERE age < 30) a,
	dx.count(*) FILTER (WHERE w.zone = 'north') b FROM cc JOIN cc_wards w ON w.ward = cc.ward) t;
SELECT * FROM cc_check($$SELECT a FROM (SELECT dx.count(*) FILTER (WHERE age < 30) a, dx.count(*) FILTER (WHERE w.zone = 'north') b FROM cc JOIN cc_wards w ON w.ward = cc.ward) t$$,
                       ARRAY[$$SELECT dx.count(*) FROM cc JOIN cc_wards w ON w.ward = cc.ward WHERE age < 30$$]);

-- 7. the min_total_variance allocation
SET dxpriv.allocation = min_total_variance;
SELECT a IS NOT NULL AS answered FROM (SELECT dx.count(*) FILTER (WHERE age < 30) a,
                                              dx.sum(age) FILTER (WHERE age >= 60) b FROM cc) t;
SELECT * FROM cc_check($$SELECT a FROM (SELECT dx.count(*) FILTER (WHERE age < 30) a, dx.sum(age) FILTER (WHERE age >= 60) b FROM cc) t$$,
                       ARRAY[$$SELECT dx.count(*) FROM cc WHERE age < 30$$]);
RESET dxpriv.allocation;

-- 8. an exponential-mechanism aggregate removed: its epsilon is part of the statement's allocation
SELECT a IS NOT NULL AS answered FROM (SELECT dx.count(*) FILTER (WHERE age < 30) a, dx.median(age) m FROM cc) t;
SELECT * FROM cc_check($$SELECT a FROM (SELECT dx.count(*) FILTER (WHERE age < 30) a, dx.median(age) m FROM cc) t$$,
                       ARRAY[$$SELECT dx.count(*) FROM cc WHERE age < 30$$]);

-- 9. two releases in one wrapper: each allocation is charged in full, once
SELECT x.a IS NOT NULL AND y.c IS NOT NULL AS answered
FROM (SELECT dx.count(*) FILTER (WHERE age < 30) a, dx.count(*) FILTER (WHERE age >= 60) b FROM cc) x,
     (SELECT dx.sum(age) c FROM cc WHERE sex = 'F') y;
SELECT round(epsilon::numeric, 6) AS epsilon, array_length(scales, 1) AS cells, mechanism FROM dx.ledger ORDER BY id DESC LIMIT 1;
-- dx.last_release lists both releases, each with its ledger cell's scale
SELECT count(*) AS released, count(DISTINCT kind) AS kinds,
       bool_and(noise_scale = (SELECT scales[cell] FROM dx.ledger ORDER BY id DESC LIMIT 1)) AS scales_are_the_ledgers
FROM dx.last_release();

-- 9b. bound parameters (analysed per execution) and a cursor: the same whole allocation (answers
-- kept out of the output with \gset)
PREPARE cc_p(int) AS SELECT a FROM (SELECT dx.count(*) FILTER (WHERE age < $1) a, dx.count(*) FILTER (WHERE age >= 60) b FROM cc) t;
EXECUTE cc_p(30) \gset
EXECUTE cc_p(40) \gset
BEGIN;
DECLARE cc_c CURSOR FOR SELECT a FROM (SELECT dx.count(*) FILTER (WHERE age < 30) a, dx.count(*) FILTER (WHERE age >= 60) b FROM cc) t;
FETCH 1 FROM cc_c \gset
COMMIT;
SELECT count(*) AS statements, min(round(epsilon::numeric, 6)) AS least, max(round(epsilon::numeric, 6)) AS most
FROM dx.ledger WHERE id > (SELECT max(id) FROM dx.ledger) - 3;
DEALLOCATE cc_p;

-- 10. the per-query cap applies to the whole allocation: 0.2468 > 0.2 is refused, nothing charged
SELECT dx.set_query_cap('cc', 0.2);
SELECT count(*) AS ledger_rows_before FROM dx.ledger \gset
SELECT a FROM (SELECT dx.count(*) FILTER (WHERE age < 30) a, dx.count(*) FILTER (WHERE age >= 60) b FROM cc) t;
SELECT a FROM (SELECT dx.count(*) FILTER (WHERE age < 30) a, CASE WHEN false THEN dx.count(*) FILTER (WHERE age >= 60) END b FROM cc) t;
SELECT count(*) - :ledger_rows_before AS charged_after_refusals FROM dx.ledger;
SELECT dx.count(*) FILTER (WHERE age < 30) IS NOT NULL AS one_aggregate_within_the_cap FROM cc;
SELECT dx.set_query_cap('cc', NULL);

-- 11. an analyst's plain SQL (the issue's text)
CREATE ROLE dx_regress_cc;
SELECT dx.add_analyst('dx_regress_cc');
SELECT dx.grant_budget('dx_regress_cc', 'cc', 10);
GRANT SELECT ON cc TO dx_regress_cc;
SET ROLE dx_regress_cc;
SELECT a IS NOT NULL AS answered FROM (SELECT count(*) FILTER (WHERE age < 30) a, count(*) FILTER (WHERE age >= 60) b FROM cc) t;
RESET ROLE;
SELECT round(epsilon::numeric, 6) AS epsilon, mechanism FROM dx.ledger ORDER BY id DESC LIMIT 1;
SELECT round(spent::numeric, 6) AS analyst_spent FROM dx.budget_grants WHERE role = 'dx_regress_cc'::regrole;

-- 12. parallel plans: the leader releases what it charged. A plan that would run a noisy
-- aggregate's final function in a worker (the whole plan under a single-copy Gather, whole
-- aggregates under a Parallel Append) is planned again without that, so the leader releases,
-- logs and caches every answer (and a worker finds the leader's charges if one still does):
-- answered, charged once each, listed by dx.last_release
SET force_parallel_mode = on;
SET parallel_leader_participation = off;
SELECT count(*) AS ledger_rows_before FROM dx.ledger \gset
EXPLAIN (COSTS OFF) SELECT dx.count(*) FROM cc WHERE age < 30;
SELECT count(*) AS cube_rows, bool_and(n IS NOT NULL) AS answered
FROM (SELECT sex, ward, dx.count(*) n FROM cc GROUP BY CUBE (sex, ward)) t;
SELECT count(*) AS listed FROM dx.last_release();
SELECT dx.count(*) FILTER (WHERE age < 30) IS NOT NULL AS answered FROM cc;
SELECT count(*) AS listed FROM dx.last_release();
SELECT a IS NOT NULL AS answered FROM (SELECT dx.count(*) FILTER (WHERE age < 30) a, dx.count(*) FILTER (WHERE age >= 60) b FROM cc) t;
-- two releases that would be a Parallel Append of whole aggregates
RESET force_parallel_mode;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
EXPLAIN (COSTS OFF) SELECT dx.count(*) FROM cc UNION ALL SELECT dx.count(*) FROM cc WHERE age < 30;
SELECT n IS NOT NULL AS answered FROM (SELECT dx.count(*) n FROM cc UNION ALL SELECT dx.count(*) FROM cc WHERE age < 30) u;
SELECT count(*) AS listed FROM dx.last_release();
-- the settings are the session's again
SHOW enable_parallel_append;
SELECT round(epsilon::numeric, 6) AS epsilon, array_length(scales, 1) AS cells FROM dx.ledger ORDER BY id DESC LIMIT 1;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
SELECT count(*) - :ledger_rows_before AS charged_statements FROM dx.ledger;
-- nothing is left for a later statement's workers
SHOW dxpriv.charged_releases;
RESET parallel_leader_participation;
RESET force_parallel_mode;
-- the list is the leader's to set
SET ROLE dx_regress_cc;
SET dxpriv.charged_releases = '1';
RESET ROLE;
