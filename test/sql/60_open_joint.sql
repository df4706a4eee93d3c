-- Open GROUP BY keys, joint releases (issue 26): dx.count_units beside an open key on a table with a
-- privacy unit (a unit counts once in each of its at most k' partitions, calibrated as a count of
-- its k' rows), and ROLLUP / CUBE / GROUPING SETS with an open key as ONE release (one allocation
-- over every cell of every set, each open set's selection at epsilon/m and delta/m, one ledger row).
-- "Noiseless" checks give the aggregates an explicit epsilon of 1e5 (noise below 1e-3, rounded
-- away) and the selection dxpriv.epsilon = 20 (keys of 100 or more contributors are then kept
-- surely, a key of one contributor at most with probability delta_p); other noisy values are never
-- printed; the selection runs under the test seed.

-- 1. count_units beside an open key -------------------------------------------------------------
CREATE TABLE cu_open (person int, city text, ward text, fare int);
-- persons 1..300, three trips each: two in city c(1 + p % 3), one in c(1 + (p + 1) % 3), so each
-- city has 200 persons and 300 trips; 'hermit': ONE person with 50 trips; person 2000 spreads one
-- trip over each of 60 cities of its own ('spread1'..'spread60')
INSERT INTO cu_open SELECT p, 'c' || (1 + (p + t / 3) % 3), (ARRAY['A','B'])[1 + (p + t) % 2], (p * 7 + t) % 50
FROM generate_series(1, 300) AS p, generate_series(1, 3) AS t;
INSERT INTO cu_open SELECT 1000, 'hermit', 'A', t % 50 FROM generate_series(1, 50) AS t;
INSERT INTO cu_open SELECT 2000, 'spread' || i, 'B', 5 FROM generate_series(1, 60) AS i;
SELECT dx.protect_table('cu_open', 1.0);
SELECT dx.set_column('cu_open', 'ward', '{"values": ["A", "B"]}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_column('cu_open', 'fare', '{"min": 0, "max": 49}', '{"type": "absolute", "scale": 10}');
SELECT dx.set_column('cu_open', 'city', '{"open": true}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_delta('cu_open', 1e-6);
SELECT dx.set_privacy_unit('cu_open', 'person', 3);
SELECT dx.grant_budget(current_user::regrole, 'cu_open', 1e9, delta => 1);
SET dxpriv.cache_lifetime = 0;
SET dxpriv.test_seed = 60;
SET dxpriv.epsilon = 4.0;

-- dx.explain: count_units is calibrated as a count of the unit's k' = 3 rows at p0' = 0.5 (a unit
-- adds 1 to at most 3 partitions): noise_scale x epsilon = 3 / 0.5 = 6 for both aggregates; the
-- selection row (distinct units, at most 3 partitions per unit) and the statement's delta
SELECT kind, component, round((noise_scale * epsilon)::numeric, 6) AS scale_times_eps, query_epsilon, query_delta
FROM dx.explain('SELECT city, dx.count(*), dx.count_units(person) FROM cu_open GROUP BY city') ORDER BY aggregate;
SELECT kind, component FROM dx.explain('SELECT city, ward, dx.count_units(person) FROM cu_open WHERE fare < 40 GROUP BY city, ward');

-- noiseless: the released cities' distinct persons and trips equal PostgreSQL's; the hermit's city
-- and the spreader's 60 cities (one person each) are not released
SET dxpriv.epsilon = 20;
SELECT d.city, d.u, d.n, d.u = p.u AND d.n = p.n AS same_as_native
FROM (SELECT city, round(dx.count_units(person, 1e5)) AS u, round(dx.count(fare, 1e5)) AS n FROM cu_open GROUP BY city) AS d
JOIN (SELECT city, count(DISTINCT person) AS u, count(*) AS n FROM cu_open GROUP BY city) AS p USING (city)
ORDER BY 1;
SELECT count(*) AS released FROM (SELECT city, dx.count_units(person, 1e5) FROM cu_open GROUP BY city) AS s;
-- a declared key beside the open one and WHERE: distinct persons per (city, ward) among the trips
-- WHERE keeps, as PostgreSQL counts them (count(DISTINCT person) is the same aggregate: below)
SELECT d.city, d.ward, d.u, d.u = p.u AS same_as_native
FROM (SELECT city, ward, round(dx.count_units(person, 1e5)) AS u FROM cu_open WHERE fare < 40 GROUP BY city, ward) AS d
JOIN (SELECT city, ward, count(DISTINCT person) AS u FROM cu_open WHERE fare < 40 GROUP BY city, ward) AS p
USING (city, ward) ORDER BY 1, 2;
-- max_groups_per_unit G = 1: each person keeps one trip (one partition): it is counted once in all,
-- and a city's distinct persons equal its trips
SELECT dx.set_privacy_unit('cu_open', 'person', 3, 1);
SELECT sum(u) AS persons_counted, bool_and(u = n) AS one_trip_each
FROM (SELECT city, round(dx.count_units(person, 1e5)) AS u, round(dx.count(fare, 1e5)) AS n FROM cu_open GROUP BY city) AS s;
SELECT kind, round((noise_scale * epsilon)::numeric, 6) AS scale_times_eps
FROM dx.explain('SELECT city, dx.count_units(person, 1) FROM cu_open GROUP BY city') ORDER BY aggregate;
SELECT dx.set_privacy_unit('cu_open', 'person', 3);
-- one ledger row per statement: the aggregates' epsilon and the selection's, the table's delta
SET dxpriv.epsilon = 2.0;
SELECT city FROM (SELECT city, dx.count_units(person) AS u FROM cu_open GROUP BY city) AS s ORDER BY city;
SELECT mechanism, epsilon, delta FROM dx.ledger WHERE relid = 'cu_open'::regclass ORDER BY id DESC LIMIT 1;
-- seeded: HAVING on the noisy distinct count runs on released partitions only
SELECT city FROM cu_open GROUP BY city HAVING dx.count_units(person) > 100 ORDER BY city;
SELECT city, count(DISTINCT person) > 100 AS many FROM cu_open GROUP BY city ORDER BY city;

-- 2. ROLLUP / CUBE / GROUPING SETS with an open key: one release -----------------------------------
CREATE TABLE ro_open (city text, ward text, fare int);
-- 'c1'..'c4': 200 rows each, 100 per ward; 'solo': one row; 'duo': two rows; NULL: one row
INSERT INTO ro_open SELECT 'c' || (1 + i % 4), (ARRAY['A','B'])[1 + (i / 4) % 2], i % 50 FROM generate_series(1, 800) AS i;
INSERT INTO ro_open VALUES ('solo', 'A', 7), ('duo', 'A', 3), ('duo', 'B', 4), (NULL, 'B', 5);
SELECT dx.protect_table('ro_open', 1.0);
SELECT dx.set_column('ro_open', 'ward', '{"values": ["A", "B"]}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_column('ro_open', 'fare', '{"min": 0, "max": 49}', '{"type": "absolute", "scale": 10}');
SELECT dx.set_column('ro_open', 'city', '{"open": true}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_delta('ro_open', 1e-6);
SELECT dx.grant_budget(current_user::regrole, 'ro_open', 1e9, delta => 1);

-- noiseless: every released row equals PostgreSQL's; the grand total counts every row (also the
-- unreleased keys'); 'solo' is released by no set
SET dxpriv.epsilon = 20;
CREATE TEMP TABLE ro_pg AS SELECT city, ward, GROUPING(city, ward) AS g, count(*) AS n, sum(fare) AS s
FROM ro_open GROUP BY CUBE (city, ward);
SELECT d.g, d.city, d.ward, d.n, d.s, d.n = p.n AND d.s = p.s AS same_as_native
FROM (SELECT city, ward, GROUPING(city, ward) AS g, round(dx.count(fare, 1e5)) AS n, round(dx.sum(fare, 1e5)) AS s
      FROM ro_open GROUP BY ROLLUP (city, ward)) AS d
JOIN ro_pg AS p ON p.g = d.g AND p.city IS NOT DISTINCT FROM d.city AND p.ward IS NOT DISTINCT FROM d.ward
ORDER BY 1, 2, 3;
SELECT d.g, d.city, d.ward, d.n = p.n AS same_as_native
FROM (SELECT city, ward, GROUPING(city, ward) AS g, round(dx.count(fare, 1e5)) AS n FROM ro_open GROUP BY CUBE (city, ward)) AS d
JOIN ro_pg AS p ON p.g = d.g AND p.city IS NOT DISTINCT FROM d.city AND p.ward IS NOT DISTINCT FROM d.ward
ORDER BY 1, 2, 3;
SELECT count(*) AS solo_rows FROM (SELECT city, dx.count(fare, 1e5) FROM ro_open GROUP BY CUBE (city, ward)) AS s WHERE city = 'solo';

-- one ledger row: the aggregates' epsilon once for every set, the selections' epsilon once, the
-- table's delta once (per set it was 3 x 2 and 2 deltas for ROLLUP (city, ward))
SET dxpriv.epsilon = 2.0;
SELECT count(*) AS ledger_before FROM dx.ledger WHERE relid = 'ro_open'::regclass \gset
SELECT city, ward, GROUPING(city, ward) AS g FROM ro_open GROUP BY ROLLUP (city, ward) HAVING dx.count(*) > 0 ORDER BY g, 1, 2;
SELECT count(*) - :ledger_before AS ledger_rows FROM dx.ledger WHERE relid = 'ro_open'::regclass;
SELECT mechanism, epsilon, delta FROM dx.ledger WHERE relid = 'ro_open'::regclass ORDER BY id DESC LIMIT 1;
SELECT city, GROUPING(city) AS g FROM ro_open GROUP BY CUBE (city, ward) HAVING dx.avg(fare) > -100 ORDER BY g, 1;
SELECT mechanism, epsilon, delta FROM dx.ledger WHERE relid = 'ro_open'::regclass ORDER BY id DESC LIMIT 1;

-- dx.explain: one statement (epsilon 2 + 2, delta 1e-6); each set with the open key its selection
-- at epsilon 2 / m and delta 1e-6 / (2 m) per partition (m = 2 for CUBE); every set's cells
SELECT kind, group_key, component, epsilon, query_epsilon, query_delta
FROM dx.explain('SELECT city, ward, dx.count(*) FROM ro_open GROUP BY CUBE (city, ward)') ORDER BY kind, group_key NULLS FIRST;
SELECT kind, group_key, component, epsilon, query_epsilon, query_delta
FROM dx.explain('SELECT city, dx.count(*) FROM ro_open GROUP BY ROLLUP (city)') ORDER BY kind, group_key NULLS FIRST;
SET dxpriv.partition_selection = 'laplace';
SELECT kind, component, query_delta
FROM dx.explain('SELECT city, dx.count(*) FROM ro_open GROUP BY ROLLUP (city)') WHERE kind = 'selection';
RESET dxpriv.partition_selection;

-- dx.last_release(): each set's rows under its own labels, the withheld keys nowhere
SELECT city, g, n > 0 AS counted FROM (SELECT city, GROUPING(city) AS g, dx.count(*) AS n FROM ro_open GROUP BY ROLLUP (city)) AS s ORDER BY g, 1;
SELECT group_key, aggregate, kind, component, cell FROM dx.last_release() ORDER BY group_key NULLS FIRST, aggregate;
SELECT city, ward, GROUPING(city, ward) AS g FROM ro_open GROUP BY CUBE (city, ward) HAVING dx.avg(fare) > -100 ORDER BY 3, 1, 2;
SELECT group_key, component, cell FROM dx.last_release() WHERE component <> 'avg' ORDER BY cell, group_key;
SELECT count(*) AS withheld_rows FROM dx.last_release() WHERE group_key ~ '(solo|NULL)';

-- GROUPING() and HAVING: evaluated per set, on released partitions only
SELECT city, ward, GROUPING(city) AS gc, GROUPING(ward) AS gw FROM ro_open
GROUP BY GROUPING SETS ((city), (ward)) HAVING GROUPING(city) = 1 OR dx.count(*) > 50 ORDER BY 3, 4, 1, 2;

-- answer cache: the same role repeats the statement: the same rows, nothing charged
SET dxpriv.cache_lifetime = 3600;
SELECT string_agg(coalesce(city, '-') || ':' || n::text, ',' ORDER BY city NULLS FIRST) AS rows
FROM (SELECT city, dx.count(*) AS n FROM ro_open GROUP BY ROLLUP (city)) AS r \gset first_
SELECT count(*) AS ledger_before FROM dx.ledger WHERE relid = 'ro_open'::regclass \gset
SELECT string_agg(coalesce(city, '-') || ':' || n::text, ',' ORDER BY city NULLS FIRST) AS rows
FROM (SELECT city, dx.count(*) AS n FROM ro_open GROUP BY ROLLUP (city)) AS r \gset again_
SELECT :'again_rows' = :'first_rows' AS same_rows,
       (SELECT count(*) FROM dx.ledger WHERE relid = 'ro_open'::regclass) = :ledger_before AS free;
SET dxpriv.cache_lifetime = 0;

-- bound parameters: the statement is analysed with its values at each execution, as one release
SELECT max(id) AS id_before FROM dx.ledger \gset
PREPARE ro_prep(int) AS SELECT city, GROUPING(city) AS g FROM ro_open WHERE fare < $1 GROUP BY ROLLUP (city)
HAVING dx.count(*) > 0 ORDER BY g, 1;
EXECUTE ro_prep(40);
EXECUTE ro_prep(30);
SELECT count(*) AS ledger_rows, min(epsilon) AS min_epsilon, max(epsilon) AS max_epsilon, max(delta) AS delta
FROM dx.ledger WHERE relid = 'ro_open'::regclass AND id > :id_before;
DEALLOCATE ro_prep;
SELECT city FROM (SELECT city, dx.count(*) AS n FROM ro_open GROUP BY ROLLUP (city)) AS s
WHERE n > (SELECT 0) ORDER BY city NULLS FIRST;

-- refused, nothing charged: the open key outside a bare key, the exponential mechanism, Gaussian
-- noise, a table without a delta
SELECT count(*) AS ledger_before FROM dx.ledger WHERE relid = 'ro_open'::regclass \gset
SELECT err($$SELECT city, dx.count(*) FROM ro_open GROUP BY ROLLUP (city) HAVING city = 'solo'$$);
SELECT err($$SELECT city, dx.count(*) FROM ro_open WHERE city = 'solo' GROUP BY ROLLUP (city)$$);
SELECT err($$SELECT city, GROUPING(city), dx.count(*) FROM ro_open GROUP BY ROLLUP (city) HAVING GROUPING(city) = 0 AND max(city) = 'solo'$$);
SELECT err($$SELECT city, dx.median(fare) FROM ro_open GROUP BY ROLLUP (city)$$);
SET dxpriv.noise = 'gaussian';
SELECT err($$SELECT city, dx.count(*) FROM ro_open GROUP BY ROLLUP (city)$$);
RESET dxpriv.noise;
SELECT count(*) - :ledger_before AS new_charges FROM dx.ledger WHERE relid = 'ro_open'::regclass;
CREATE TABLE ro_nodelta (city text, fare int);
SELECT dx.protect_table('ro_nodelta', 1.0);
SELECT dx.set_column('ro_nodelta', 'city', '{"open": true}', '{"type": "discrete", "weight": 1}');
SELECT dx.grant_budget(current_user::regrole, 'ro_nodelta', 10);
SELECT err($$SELECT city, dx.count(*) FROM ro_nodelta GROUP BY ROLLUP (city)$$);

-- a table with a privacy unit keeps the per-set release (each set bounds its units itself):
-- charged 2 + 2 for the set (city), 2 for the total
SELECT kind, epsilon, query_epsilon, query_delta
FROM dx.explain('SELECT city, dx.count(*) FROM cu_open GROUP BY ROLLUP (city)') ORDER BY kind, group_key NULLS FIRST;

-- bound parameters with dx.count_units (its unit column, undeclared, is checked with the values;
-- it was refused with 42501 at PREPARE before): noiseless, the released cities' distinct persons
-- equal PostgreSQL's, one ledger row per execution
SET dxpriv.epsilon = 20;
SELECT max(id) AS id_before FROM dx.ledger \gset
PREPARE cu_prep(int) AS SELECT city, round(dx.count_units(person, 1e5)) AS u FROM cu_open WHERE fare < $1 GROUP BY city;
EXECUTE cu_prep(40);
SELECT city, count(DISTINCT person) AS u FROM cu_open WHERE fare < 40 GROUP BY city HAVING count(DISTINCT person) > 1 ORDER BY city;
EXECUTE cu_prep(20);
SELECT city, count(DISTINCT person) AS u FROM cu_open WHERE fare < 20 GROUP BY city HAVING count(DISTINCT person) > 1 ORDER BY city;
PREPARE cu_having(int) AS SELECT city FROM cu_open WHERE fare < $1 GROUP BY city HAVING dx.count_units(person, 1e5) > 100 ORDER BY city;
EXECUTE cu_having(40);
EXECUTE cu_having(5);
SELECT count(*) AS ledger_rows FROM dx.ledger WHERE relid = 'cu_open'::regclass AND id > :id_before;
DEALLOCATE cu_prep;
DEALLOCATE cu_having;
