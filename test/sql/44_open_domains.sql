-- Open GROUP BY keys (issue 26): declaring open columns, private partition selection, refusals,
-- dx.explain. Noisy values are never printed; the selection runs under the test seed.
CREATE TABLE visits_open (city text, ward text, cost int, note text);
-- 'big1'..'big5': 400 rows each; 'solo': one row; 'pair': two rows
INSERT INTO visits_open SELECT 'big' || (1 + i % 5), (ARRAY['A','B'])[1 + i % 2], i % 100, 'n' FROM generate_series(1, 2000) AS i;
INSERT INTO visits_open VALUES ('solo', 'A', 50, 'n'), ('pair', 'A', 10, 'n'), ('pair', 'B', 20, 'n'), (NULL, 'A', 5, 'n');
SELECT dx.protect_table('visits_open', 1.0);
SELECT dx.set_column('visits_open', 'ward', '{"values": ["A", "B"]}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_column('visits_open', 'cost', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 10}');

-- declaring open columns: accepted spellings and bad inputs (errcode, lowercase message, hint)
SELECT dx.set_column('visits_open', 'city', '{"open": true}', '{"type": "discrete", "weight": 1}');
SELECT column_name, domain, metric FROM dx.protected_columns WHERE relid = 'visits_open'::regclass AND column_name = 'city';
SELECT err($$SELECT dx.set_column('visits_open', 'city', '{"open": false}', '{"type": "discrete"}')$$);
SELECT err($$SELECT dx.set_column('visits_open', 'city', '{"open": true, "values": ["a"]}', '{"type": "discrete"}')$$);
SELECT err($$SELECT dx.set_column('visits_open', 'city', '{"open": true}', '{"type": "absolute", "scale": 1}')$$);
SELECT err($$SELECT dx.set_column('visits_open', 'city', '{"open": true}', '{"type": "discrete", "weight": 0}')$$);
SELECT err($$SELECT dx.set_column('visits_open', 'city', '{"open": true}', '{"type": "per_value", "weights": {"x": 0.5}}')$$);
SELECT err($$SELECT dx.set_column('visits_open', 'city', '{"open": true}', '{"type": "none", "weight": 1}')$$);
SELECT err($$SELECT dx.set_column('visits_open', 'cost', '{"open": true}', '{"type": "discrete"}')$$) AS int_ok;
SELECT dx.set_column('visits_open', 'cost', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 10}');
CREATE TABLE float_open (x float8);
SELECT dx.protect_table('float_open');
SELECT err($$SELECT dx.set_column('float_open', 'x', '{"open": true}', '{"type": "discrete"}')$$);
-- per_value: the smallest weight is used for every pair
SELECT err($$SELECT dx.set_column('visits_open', 'note', '{"open": true}', '{"type": "per_value", "weights": {"x": 0.5}, "default": 2}')$$);
SELECT dx.unset_column('visits_open', 'note');

SELECT dx.grant_budget(current_user::regrole, 'visits_open', 100);
SET dxpriv.cache_lifetime = 0;
SET dxpriv.test_seed = 11;
SET dxpriv.epsilon = 1.0;

-- no per-query delta: refused with a hint, nothing charged
SELECT err($$SELECT city, dx.count(*) FROM visits_open GROUP BY city$$);
SELECT count(*) AS ledger_rows FROM dx.ledger WHERE relid = 'visits_open'::regclass;
SELECT dx.set_delta('visits_open', 1e-6);
SELECT dx.grant_budget(current_user::regrole, 'visits_open', 100, delta => 1e-4);

-- the release: the five big cities are kept (400 rows, far above the threshold), the city of one
-- row is not (probability at most delta); counts are noisy
SELECT city, abs(dx.count(*) - 400) < 30 AS count_close, dx.avg(cost) BETWEEN 0 AND 99 AS avg_in_range
FROM visits_open GROUP BY city ORDER BY city;
SELECT mechanism, epsilon, delta, array_length(scales, 1) AS cells FROM dx.ledger WHERE relid = 'visits_open'::regclass ORDER BY id DESC LIMIT 1;
SELECT delta_spent FROM dx.budgets WHERE "table" = 'visits_open'::regclass;
-- declared group columns beside the open key: selection per combination (200 rows each)
SELECT city, ward, abs(dx.count(*) - 200) < 30 AS count_close FROM visits_open GROUP BY city, ward ORDER BY 1, 2;
-- an expression over declared columns (a bucket, like a time bucket) beside the open key: a row
-- moving from cost 49 to 50 (distance 0.1) moves two partitions, so S = 20 and each partition gets
-- epsilon 0.05: partitions of 200 rows are now rarely kept (a coarser metric keeps more)
SELECT city, cost / 50 AS half, abs(dx.count(*) - 200) < 30 AS count_close FROM visits_open GROUP BY cost / 50, city ORDER BY 1, 2;
SELECT component FROM dx.explain('SELECT city, cost / 50, dx.count(*) FROM visits_open GROUP BY cost / 50, city') WHERE kind = 'selection';
-- WHERE on declared columns: the selection counts the rows the WHERE keeps: 200 rows per big city
-- below 50 (kept), 8 at 98 or more (the optimal mechanism keeps 8 contributors with probability
-- about 2e-5 here)
-- (noise scale 10: a row crosses cost < 50 at distance 0.1)
SELECT city, abs(dx.count(*) - 200) < 100 AS count_close FROM visits_open WHERE cost < 50 GROUP BY city ORDER BY city;
SELECT city, dx.count(*) IS NOT NULL AS answered FROM visits_open WHERE cost >= 98 GROUP BY city ORDER BY city;
-- the key needs not be selected; ORDER BY and LIMIT post-process the released rows
SELECT dx.count(*) > 300 AS big FROM visits_open GROUP BY city;
SELECT city, dx.sum(cost) IS NOT NULL AS summed FROM visits_open GROUP BY city ORDER BY city DESC LIMIT 2;

-- dx.explain: the selection row, its epsilon and the statement's delta
SELECT kind, group_key, component, epsilon, query_epsilon, query_delta
FROM dx.explain('SELECT city, dx.count(*) FROM visits_open GROUP BY city');
-- a row crossing the WHERE boundary (cost 49 -> 50, distance 0.1) moves a partition's count by 1:
-- the selection's sensitivity is 10 there, so each partition gets epsilon 0.1
SELECT component FROM dx.explain('SELECT city, dx.count(*) FROM visits_open WHERE cost < 50 GROUP BY city') WHERE kind = 'selection';
-- a declared key beside the open key: moving between wards (distance 1) moves two partitions
SELECT component FROM dx.explain('SELECT city, ward, dx.count(*) FROM visits_open GROUP BY city, ward') WHERE kind = 'selection';
SET dxpriv.partition_selection = 'laplace';
SELECT kind, component FROM dx.explain('SELECT city, dx.count(*) FROM visits_open GROUP BY city') WHERE kind = 'selection';
RESET dxpriv.partition_selection;

-- the open metric enters the selection: 'none' leaves only presence (epsilon 1 per partition; a
-- changed key still moves two partitions at distance 2, so delta / 2); per_value uses its smallest
-- weight (0.25: S = 8)
CREATE TABLE metric_open (k text, v int);
INSERT INTO metric_open SELECT 'k' || (i % 3), i % 10 FROM generate_series(1, 300) AS i;
SELECT dx.protect_table('metric_open', 1.0);
SELECT dx.set_column('metric_open', 'v', '{"min": 0, "max": 9}', '{"type": "discrete"}');
SELECT dx.set_delta('metric_open', 1e-6);
SELECT dx.grant_budget(current_user::regrole, 'metric_open', 100, delta => 1e-3);
SELECT dx.set_column('metric_open', 'k', '{"open": true}', '{"type": "none"}');
SELECT component FROM dx.explain('SELECT k, dx.count(*) FROM metric_open GROUP BY k') WHERE kind = 'selection';
SELECT dx.set_column('metric_open', 'k', '{"open": true}', '{"type": "per_value", "weights": {"k1": 0.25}, "default": 1}');
SELECT component FROM dx.explain('SELECT k, dx.count(*) FROM metric_open GROUP BY k') WHERE kind = 'selection';
-- a privacy unit (52_open_keys_more has more): distinct units per partition, at most k = 5
-- partitions per unit: epsilon 1 / max(S = 8, 5 / 0.125), delta 1e-6 / 10
ALTER TABLE metric_open ADD COLUMN person int;
SELECT dx.set_privacy_unit('metric_open', 'person', 5);
SELECT component FROM dx.explain('SELECT k, dx.count(*) FROM metric_open GROUP BY k') WHERE kind = 'selection';

-- refusals: nothing but the bare key reads an open column
SELECT err($$SELECT city, dx.count(*) FROM visits_open WHERE city = 'solo' GROUP BY city$$);
SELECT err($$SELECT dx.count(*) FROM visits_open WHERE city = 'solo'$$);
SELECT err($$SELECT lower(city), dx.count(*) FROM visits_open GROUP BY lower(city)$$);
SELECT err($$SELECT city, dx.count(*) FROM visits_open GROUP BY city HAVING city <> 'big1'$$);
SELECT err($$SELECT city, dx.count(*), dx.sum(length(city)) FROM visits_open GROUP BY city$$);
SELECT err($$SELECT count(DISTINCT city) FROM visits_open$$);
SELECT err($$SELECT city || '!', dx.count(*) FROM visits_open GROUP BY city$$);
-- (releases in FROM and WITH are answered: 52_open_keys_more)
-- (ROLLUP and GROUPING SETS with an open key are answered, one release per set: 52_open_keys_more)
SELECT err($$SELECT v.city, dx.count(*) FROM visits_open v JOIN pg_class c ON c.relname = v.city GROUP BY v.city$$);
SELECT err($$SELECT city, dx.mode(ward) FROM visits_open GROUP BY city$$);
SET dxpriv.noise = 'gaussian';
SELECT err($$SELECT city, dx.count(*) FROM visits_open GROUP BY city$$);
RESET dxpriv.noise;

-- an analyst: plain aggregates are rewritten, the selection applies, refusals name no value
CREATE ROLE dx_regress_open;
SELECT dx.add_analyst('dx_regress_open');
SELECT dx.grant_budget('dx_regress_open', 'visits_open', 50, delta => 1e-4);
GRANT USAGE ON SCHEMA public TO dx_regress_open;
SET ROLE dx_regress_open;
SET dxpriv.epsilon = 1.0;
SELECT city, count(*) > 300 AS big, avg(cost) BETWEEN 0 AND 99 AS avg_in_range FROM visits_open GROUP BY city ORDER BY city;
SELECT err($$SELECT count(DISTINCT city) FROM visits_open$$);
SELECT err($$SELECT city FROM visits_open GROUP BY city$$);
SELECT err($$SELECT DISTINCT city FROM visits_open$$);
SELECT err($$SELECT city, count(*) FROM visits_open WHERE city IN ('solo', 'pair') GROUP BY city$$);
SELECT err($$SELECT city, count(*) FROM visits_open GROUP BY city HAVING count(*) > 0 AND min(city) > 'a'$$);
SELECT err($$SELECT max(city) FROM visits_open$$);
SELECT err($$SELECT city, count(*) FROM visits_open GROUP BY 1 ORDER BY city LIMIT 1$$) AS ordered_limit;
-- bound parameters (analysed when executed) and cursors: the same release
PREPARE open_p(int) AS SELECT city, count(*) > 100 AS big FROM visits_open WHERE cost >= $1 GROUP BY city;
EXECUTE open_p(0);
BEGIN;
DECLARE open_c CURSOR FOR SELECT city, count(*) > 100 AS big FROM visits_open GROUP BY city;
FETCH 2 FROM open_c;
COMMIT;
SELECT spent > 0 AS charged, delta_spent > 0 AS delta_charged FROM dx.budgets WHERE "table" = 'visits_open'::regclass;
-- dx.last_release lists the cells of the partitions the cursor's selection kept (all five, once
-- FETCH ran the aggregate; tests 56_open_release_log)
SELECT count(*) AS logged_cells FROM dx.last_release();
RESET ROLE;
-- the released rows come in the order of the keys whatever ORDER BY leaves open (a hash
-- aggregate's order would depend on the partitions it did not release); HAVING of the analyst is
-- evaluated only on kept partitions
SELECT city, ward FROM visits_open GROUP BY ward, city HAVING dx.count(*) > 0;
-- (the noisy count of 'solo' or 'pair' divided by 100 is 0: evaluated there, this would fail)
SELECT city FROM visits_open GROUP BY city HAVING 1 / (dx.count(*) / 100) > 0;
-- plans show the column, never a value
CREATE FUNCTION explain_text(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r record; t text := '';
BEGIN
	FOR r IN EXECUTE 'EXPLAIN (VERBOSE) ' || q LOOP t := t || r."QUERY PLAN" || E'\n'; END LOOP;
	RETURN t;
END $$;
SELECT explain_text('SELECT city, dx.count(*) FROM visits_open GROUP BY city') ~ 'Sort Key: visits_open.city' AS sorted,
       explain_text('SELECT city, dx.count(*) FROM visits_open GROUP BY city') !~ '(big|solo|pair)' AS no_values;
SELECT err($$SELECT DISTINCT city, dx.count(*) FROM visits_open GROUP BY city$$);
