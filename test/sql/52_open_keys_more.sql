-- Open GROUP BY keys, second part (issue 26): privacy units. Each unit keeps its min(k, G) rows of
-- smallest rank, so it holds at most k' = min(k, G) partitions; the selection counts distinct units
-- per partition at epsilon eps_sel / max(S, k'/p0') and delta / (2 k'). Noisy values are never
-- printed; the selection runs under the test seed.
CREATE TABLE trips_open (person int, city text, ward text, fare int);
-- 'town1'..'town4': 150 persons each, 3 trips per person; 'hermit': ONE person with 300 trips (a
-- row count would release it for sure); 'duo': two persons; person 5000 spreads over 100 cities
-- of its own ('spread1'..'spread100'), one trip each
INSERT INTO trips_open SELECT p, 'town' || (1 + p % 4), (ARRAY['A','B'])[1 + t % 2], (p * 7 + t) % 50
FROM generate_series(1, 600) AS p, generate_series(1, 3) AS t;
INSERT INTO trips_open SELECT 1000, 'hermit', 'A', t % 50 FROM generate_series(1, 300) AS t;
INSERT INTO trips_open SELECT 1000 + p, 'duo', 'B', 10 FROM generate_series(1, 2) AS p;
INSERT INTO trips_open SELECT 5000, 'spread' || i, 'A', 20 FROM generate_series(1, 100) AS i;
SELECT dx.protect_table('trips_open', 1.0);
SELECT dx.set_column('trips_open', 'ward', '{"values": ["A", "B"]}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_column('trips_open', 'fare', '{"min": 0, "max": 49}', '{"type": "absolute", "scale": 10}');
SELECT dx.set_column('trips_open', 'city', '{"open": true}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_delta('trips_open', 1e-6);
SELECT dx.set_privacy_unit('trips_open', 'person', 3);
SELECT dx.grant_budget(current_user::regrole, 'trips_open', 1000, delta => 1e-3);
SET dxpriv.cache_lifetime = 0;
SET dxpriv.test_seed = 52;
SET dxpriv.epsilon = 4.0;

-- dx.explain: p0' = min(1, 1/2) = 0.5; a unit of 3 kept rows holds at most 3 partitions, so the
-- selection's sensitivity is max(S = 2, 3 / 0.5 = 6): epsilon 4/6 per partition, delta 1e-6/6
SELECT kind, group_key, component, epsilon, query_epsilon, query_delta
FROM dx.explain('SELECT city, dx.count(*) FROM trips_open GROUP BY city') ORDER BY kind;
-- the count's noise is the unit's: 3 rows per unit at presence 0.5
SELECT kind, noise_scale, unit_bound FROM dx.explain('SELECT city, dx.count(*) FROM trips_open GROUP BY city') WHERE kind <> 'selection';

-- the release: the towns (150 persons) are kept; 'hermit' (one person, 300 rows), 'duo' and the
-- spreader's 100 cities (one person each) are not
SELECT city, abs(dx.count(*) - 450) < 60 AS count_close, dx.avg(fare) BETWEEN 0 AND 49 AS avg_in_range
FROM trips_open GROUP BY city ORDER BY city;
SELECT mechanism, epsilon, delta FROM dx.ledger WHERE relid = 'trips_open'::regclass ORDER BY id DESC LIMIT 1;
-- declared keys and WHERE beside the open key: distinct units per (city, ward) among rows kept by WHERE
SELECT city, ward FROM trips_open WHERE fare < 40 GROUP BY city, ward HAVING dx.count(*) > 0 ORDER BY 1, 2;
SELECT component FROM dx.explain('SELECT city, ward, dx.count(*) FROM trips_open WHERE fare < 40 GROUP BY city, ward')
WHERE kind = 'selection';

-- max_groups_per_unit G = 1: a unit keeps its one row of smallest rank (one partition): epsilon
-- 4 / max(2, 1/0.5) = 2 per partition, delta 1e-6/2; the count's scale is one row's
SELECT dx.set_privacy_unit('trips_open', 'person', 3, 1);
SELECT component FROM dx.explain('SELECT city, dx.count(*) FROM trips_open GROUP BY city') WHERE kind = 'selection';
SELECT noise_scale, unit_bound FROM dx.explain('SELECT city, dx.count(*) FROM trips_open GROUP BY city') WHERE kind <> 'selection';
-- each person now counts one trip: about 150 per town, not 450
SELECT city, abs(dx.count(*) - 150) < 20 AS one_trip_each FROM trips_open GROUP BY city ORDER BY city;
SELECT dx.set_privacy_unit('trips_open', 'person', 3);

-- (counting units per partition, dx.count_units beside the open key: 60_open_joint)
-- plans show the unit's hash and the column, never a key value
CREATE FUNCTION explain_text52(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r record; t text := '';
BEGIN
	FOR r IN EXECUTE 'EXPLAIN (VERBOSE) ' || q LOOP t := t || r."QUERY PLAN" || E'\n'; END LOOP;
	RETURN t;
END $$;
SELECT explain_text52('SELECT city, dx.count(*) FROM trips_open GROUP BY city') !~ '(town|hermit|duo|spread)' AS no_values;

-- wrappers: a release in FROM or WITH, post-processed by ORDER BY, LIMIT, WHERE and aggregates over
-- its released rows (one charge: the release)
SELECT count(*) AS ledger_before FROM dx.ledger WHERE relid = 'trips_open'::regclass \gset
SELECT city FROM (SELECT city, dx.count(*) AS n FROM trips_open GROUP BY city) AS s ORDER BY n DESC, city LIMIT 2;
WITH r AS (SELECT city, ward, dx.count(*) AS n FROM trips_open GROUP BY city, ward)
SELECT ward, count(*) AS cities FROM r GROUP BY ward ORDER BY ward;
SELECT count(*) AS released FROM (SELECT city, dx.count(*) FROM trips_open GROUP BY city) AS s;
SELECT city FROM (SELECT city, dx.sum(fare) AS total FROM trips_open GROUP BY city) AS s WHERE city > 'town2' ORDER BY city;
SELECT count(*) - :ledger_before AS charges FROM dx.ledger WHERE relid = 'trips_open'::regclass;
-- a wrapper's condition runs on released rows only: 1 / (length(city) - 6) fails on the key
-- 'hermit' alone (held by one person, not released), so it does not fail here; without the fence
-- (OFFSET 0) the planner would push it into the release's WHERE, over every row
SELECT city FROM (SELECT city, dx.count(*) FROM trips_open GROUP BY city) AS s
WHERE 1 / (length(city) - 6) <> 0 ORDER BY city;
-- UNION ALL of a release and other rows post-processes the released rows
SELECT city FROM (SELECT city, dx.count(*) FROM trips_open GROUP BY city UNION ALL SELECT 'x', 1) AS u ORDER BY 1;
-- ROLLUP and GROUPING SETS with an open key: each grouping set is a release of its own (the sets
-- with the open key select their partitions, the others are ordinary cells: the total counts every
-- row, held keys or not, with its own noise); the statement is charged every set's epsilon and,
-- per set with the open key, the table's delta: (city, ward) 4 + 4, (city) 4 + 4, () 4 = 20, 2e-6
SELECT count(*) AS ledger_before FROM dx.ledger WHERE relid = 'trips_open'::regclass \gset
SELECT city, ward, GROUPING(city, ward) AS g, dx.count(*) > 0 AS answered
FROM trips_open GROUP BY GROUPING SETS ((city, ward), (city), ()) ORDER BY g, city, ward;
SELECT epsilon, delta FROM dx.ledger WHERE relid = 'trips_open'::regclass ORDER BY id DESC LIMIT 1;
SELECT count(*) - :ledger_before AS ledger_rows FROM dx.ledger WHERE relid = 'trips_open'::regclass;
SELECT city FROM (SELECT city, dx.sum(fare) AS s FROM trips_open GROUP BY ROLLUP (city)) AS r
WHERE 1 / (length(coalesce(city, 'total')) - 6) <> 0 ORDER BY city NULLS FIRST;
SELECT kind, group_key, epsilon, query_epsilon, query_delta FROM dx.explain('SELECT city, dx.count(*) FROM trips_open GROUP BY ROLLUP (city)')
ORDER BY kind, group_key;
-- two sets with the open key: two selections, two deltas
SELECT DISTINCT query_epsilon, query_delta
FROM dx.explain('SELECT city, ward, dx.count(*) FROM trips_open GROUP BY GROUPING SETS ((city, ward), (city), ())');

-- time buckets of an open date column: each bucket is a partition (a record lies in one bucket;
-- a changed date moves it between two, at distance >= w, like a changed key)
CREATE TABLE signups (person int, opened date, plan text);
-- 600 persons over January to March 2026; person 7000 opened in 1999 (a bucket of one person);
-- person 7001's date is beyond the timestamp range (date_trunc on it would fail: dxpriv's guarded
-- bucket puts it with the NULL keys instead)
INSERT INTO signups SELECT p, DATE '2026-01-01' + (p % 90), (ARRAY['free','paid'])[1 + p % 2]
FROM generate_series(1, 600) AS p, generate_series(1, 2) AS t;
INSERT INTO signups VALUES (7000, '1999-05-05', 'paid'), (7001, '300000-01-01', 'free');
SELECT err($$SELECT date_trunc('month', DATE '300000-01-01')$$) AS unguarded;
SELECT dx.protect_table('signups', 1.0);
SELECT dx.set_column('signups', 'plan', '{"values": ["free", "paid"]}', '{"type": "discrete"}');
SELECT dx.set_column('signups', 'opened', '{"open": true}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_delta('signups', 1e-6);
SELECT dx.set_privacy_unit('signups', 'person', 2);
SELECT dx.grant_budget(current_user::regrole, 'signups', 1000, delta => 1e-3);
SELECT date_trunc('month', opened)::date AS month, abs(dx.count(*) - 400) < 60 AS count_close
FROM signups GROUP BY 1 ORDER BY 1;
SELECT date_trunc('quarter', opened)::date AS quarter, plan, dx.count(*) > 0 AS answered
FROM signups GROUP BY 1, plan ORDER BY 1, 2;
-- an expression over the bucket is one over the key (refused); a wrapper post-processes it
SELECT err($$SELECT to_char(date_trunc('week', opened), 'YYYY-MM-DD'), dx.count(*) FROM signups GROUP BY date_trunc('week', opened)$$);
SELECT to_char(w, 'YYYY-MM-DD') AS week FROM (SELECT date_trunc('week', opened) AS w, dx.count(*) AS n
FROM signups GROUP BY 1) AS s WHERE n > 0 ORDER BY 1 LIMIT 3;
SELECT dx.count(*) > 0 AS answered FROM signups GROUP BY date_trunc('month', opened);
SELECT component FROM dx.explain($$SELECT date_trunc('month', opened), dx.count(*) FROM signups GROUP BY 1$$)
WHERE kind = 'selection';
-- plans show the guard and the bucket, never a value (a date literal: the plan's numeric parameters
-- may contain any digits)
SELECT explain_text52($$SELECT date_trunc('month', opened), dx.count(*) FROM signups GROUP BY 1$$) !~ '(1999-|300000-)'
AS no_values;
-- anything else over the open date is refused (42501), as for a bare key
SELECT err($$SELECT date_trunc('fortnight', opened), dx.count(*) FROM signups GROUP BY 1$$);
SELECT err($$SELECT date_trunc('month', opened) + interval '1 day', dx.count(*) FROM signups GROUP BY 1$$);
SELECT err($$SELECT extract(month FROM opened), dx.count(*) FROM signups GROUP BY 1$$);
SELECT err($$SELECT date_trunc('month', opened), dx.count(*) FROM signups GROUP BY 1 HAVING date_trunc('month', opened) > '2026-01-01'$$);
SELECT date_trunc('quarter', opened)::date AS quarter, plan, dx.count(*) > 0 AS answered
FROM signups GROUP BY ROLLUP (1, plan) ORDER BY 1 NULLS LAST, 2 NULLS LAST;

-- an analyst: plain aggregates, the same selection
CREATE ROLE dx_regress_open52;
SELECT dx.add_analyst('dx_regress_open52');
SELECT dx.grant_budget('dx_regress_open52', 'trips_open', 50, delta => 1e-4);
GRANT USAGE ON SCHEMA public TO dx_regress_open52;
SET ROLE dx_regress_open52;
SET dxpriv.epsilon = 4.0;
SELECT city, count(*) > 300 AS big FROM trips_open GROUP BY city ORDER BY city;
SELECT city FROM (SELECT city, count(*) AS n FROM trips_open GROUP BY city) AS s WHERE n > 300 ORDER BY n DESC LIMIT 1 OFFSET 5;
WITH r AS (SELECT city, avg(fare) AS a FROM trips_open GROUP BY city) SELECT count(*) FROM r WHERE a IS NOT NULL;
SELECT city FROM (SELECT city, count(*) FROM trips_open GROUP BY city) AS s
WHERE 1 / (length(city) - 6) <> 0 ORDER BY city;
-- bound parameters: the wrapped release is analysed at each execution
PREPARE open_w(int) AS SELECT city FROM (SELECT city, count(*) AS n FROM trips_open WHERE fare >= $1 GROUP BY city) AS s
WHERE n > 0 ORDER BY city;
EXECUTE open_w(0);
RESET ROLE;
