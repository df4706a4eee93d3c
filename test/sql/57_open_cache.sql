-- The answer cache of releases grouped by an open key (issue 26): a repeat by the role that was
-- charged returns exactly the rows it was given (the kept keys and their values), free; the
-- selection is never drawn again. Another role, a changed table, a changed setting or policy: a
-- fresh release, charged. Noisy values are compared, never printed; the selection runs under the
-- test seed.
CREATE TABLE shops_oc (city text, price int);
-- 'c1'..'c4': 300 rows each; 'lonely': one row; 'twin': two rows
INSERT INTO shops_oc SELECT 'c' || (1 + i % 4), i % 50 FROM generate_series(1, 1200) AS i;
INSERT INTO shops_oc VALUES ('lonely', 7), ('twin', 3), ('twin', 4);
SELECT dx.protect_table('shops_oc', 1.0);
SELECT dx.set_column('shops_oc', 'price', '{"min": 0, "max": 49}', '{"type": "absolute", "scale": 10}');
SELECT dx.set_column('shops_oc', 'city', '{"open": true}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_delta('shops_oc', 1e-6);
CREATE ROLE dx_regress_oc57a;
CREATE ROLE dx_regress_oc57b;
SELECT dx.add_analyst('dx_regress_oc57a');
SELECT dx.add_analyst('dx_regress_oc57b');
SELECT dx.grant_budget('dx_regress_oc57a', 'shops_oc', 100, delta => 1e-3);
SELECT dx.grant_budget('dx_regress_oc57b', 'shops_oc', 100, delta => 1e-3);
GRANT USAGE ON SCHEMA public TO dx_regress_oc57a, dx_regress_oc57b;
SET dxpriv.cache_lifetime = 3600;
SET dxpriv.test_seed = 57;
SET dxpriv.epsilon = 2.0;
SET ROLE dx_regress_oc57a;

-- a release, in one statement (a wrapper joins its rows: keys and noisy values) and what it spent
SELECT string_agg(city || ':' || n::text || ':' || s::text, ',' ORDER BY city) AS rows
FROM (SELECT city, dx.count(*) AS n, dx.sum(price) AS s FROM shops_oc GROUP BY city) r \gset first_
SELECT round(spent::numeric, 6) AS spent_a FROM dx.budgets WHERE "table" = 'shops_oc'::regclass \gset
SELECT :'first_rows' ~ 'c1:' AS released_c1, :'first_rows' !~ '(lonely|twin)' AS no_withheld_key, :spent_a > 0 AS charged;
-- the same statement again: the same rows, nothing spent
SELECT string_agg(city || ':' || n::text || ':' || s::text, ',' ORDER BY city) AS rows
FROM (SELECT city, dx.count(*) AS n, dx.sum(price) AS s FROM shops_oc GROUP BY city) r \gset again_
SELECT :'again_rows' = :'first_rows' AS same_rows,
       (SELECT round(spent::numeric, 6) FROM dx.budgets WHERE "table" = 'shops_oc'::regclass) = :spent_a AS free;
-- (dx.last_release() of a replay lists no cell: nothing was drawn)
SELECT count(*) AS replay_cells FROM dx.last_release();
-- the whole result, repeated five times: always the same rows, never a new key, never a charge
CREATE TEMP TABLE oc_rep (i int, rows text, spent numeric);
DO $$
DECLARE r text; i int;
BEGIN
  FOR i IN 1..5 LOOP
    EXECUTE 'SELECT string_agg(city || '':'' || n::text || '':'' || s::text, '','' ORDER BY city) FROM (SELECT city, dx.count(*) AS n, dx.sum(price) AS s FROM shops_oc GROUP BY city) r' INTO r;
    INSERT INTO oc_rep SELECT i, r, round(spent::numeric, 6) FROM dx.budgets WHERE "table" = 'shops_oc'::regclass;
  END LOOP;
END $$;
SELECT count(DISTINCT rows) AS distinct_results, count(DISTINCT spent) AS distinct_spent,
       bool_and(rows !~ '(lonely|twin)') AS no_withheld_key FROM oc_rep WHERE i > 1;
SELECT (SELECT spent FROM oc_rep WHERE i = 2) = (SELECT spent FROM oc_rep WHERE i = 5) AS repeats_free;

-- another role: a fresh release, charged to it (the first role's entry is not its own)
RESET ROLE;
SET ROLE dx_regress_oc57b;
SELECT string_agg(city || ':' || n::text || ':' || s::text, ',' ORDER BY city) AS rows
FROM (SELECT city, dx.count(*) AS n, dx.sum(price) AS s FROM shops_oc GROUP BY city) r \gset b_
SELECT round(spent::numeric, 6) > 0 AS b_charged FROM dx.budgets WHERE "table" = 'shops_oc'::regclass;
SELECT count(*) > 0 AS logged, bool_and(NOT reused) AS not_reused FROM dx.last_release();
SELECT :'b_rows' <> :'first_rows' AS fresh_noise, :'b_rows' !~ '(lonely|twin)' AS no_withheld_key;
RESET ROLE;

-- a changed table: a fresh release, charged
INSERT INTO shops_oc VALUES ('c1', 1);
SET ROLE dx_regress_oc57a;
SELECT string_agg(city || ':' || n::text || ':' || s::text, ',' ORDER BY city) AS rows
FROM (SELECT city, dx.count(*) AS n, dx.sum(price) AS s FROM shops_oc GROUP BY city) r \gset x_
SELECT round(spent::numeric, 6) > :spent_a AS changed_table_charged, :'x_rows' <> :'first_rows' AS new_rows
FROM dx.budgets WHERE "table" = 'shops_oc'::regclass;
SELECT :'x_rows' AS x_first \gset
SELECT round(spent::numeric, 6) AS spent_a FROM dx.budgets WHERE "table" = 'shops_oc'::regclass \gset
-- repeated: free again
SELECT string_agg(city || ':' || n::text || ':' || s::text, ',' ORDER BY city) AS rows
FROM (SELECT city, dx.count(*) AS n, dx.sum(price) AS s FROM shops_oc GROUP BY city) r \gset x_
SELECT round(spent::numeric, 6) = :spent_a AS repeat_free, :'x_rows' = :'x_first' AS same_rows
FROM dx.budgets WHERE "table" = 'shops_oc'::regclass;

-- a changed setting (the selection mechanism, epsilon): a fresh release, charged
RESET ROLE;
SET dxpriv.partition_selection = 'laplace';
SET ROLE dx_regress_oc57a;
SELECT string_agg(city || ':' || n::text || ':' || s::text, ',' ORDER BY city) AS rows
FROM (SELECT city, dx.count(*) AS n, dx.sum(price) AS s FROM shops_oc GROUP BY city) r \gset x_
SELECT round(spent::numeric, 6) > :spent_a AS selection_setting_charged FROM dx.budgets WHERE "table" = 'shops_oc'::regclass;
SELECT round(spent::numeric, 6) AS spent_a FROM dx.budgets WHERE "table" = 'shops_oc'::regclass \gset
RESET ROLE;
RESET dxpriv.partition_selection;
SET dxpriv.epsilon = 1.5;
SET ROLE dx_regress_oc57a;
SELECT string_agg(city || ':' || n::text || ':' || s::text, ',' ORDER BY city) AS rows
FROM (SELECT city, dx.count(*) AS n, dx.sum(price) AS s FROM shops_oc GROUP BY city) r \gset x_
SELECT round(spent::numeric, 6) > :spent_a AS epsilon_setting_charged FROM dx.budgets WHERE "table" = 'shops_oc'::regclass;
SELECT round(spent::numeric, 6) AS spent_a FROM dx.budgets WHERE "table" = 'shops_oc'::regclass \gset
-- a changed policy (the table's delta): a fresh release, charged
RESET ROLE;
SELECT dx.set_delta('shops_oc', 2e-6);
SET ROLE dx_regress_oc57a;
SELECT string_agg(city || ':' || n::text || ':' || s::text, ',' ORDER BY city) AS rows
FROM (SELECT city, dx.count(*) AS n, dx.sum(price) AS s FROM shops_oc GROUP BY city) r \gset x_
SELECT round(spent::numeric, 6) > :spent_a AS policy_charged FROM dx.budgets WHERE "table" = 'shops_oc'::regclass;
SELECT round(spent::numeric, 6) AS spent_a FROM dx.budgets WHERE "table" = 'shops_oc'::regclass \gset

-- another ORDER BY or a LIMIT is another statement (its rows differ): charged, never a cut replay
SELECT string_agg(city || ':' || n::text || ':' || s::text, ',' ORDER BY city) AS rows
FROM (SELECT city, dx.count(*) AS n, dx.sum(price) AS s FROM shops_oc GROUP BY city ORDER BY city LIMIT 1) r \gset x_
SELECT round(spent::numeric, 6) > :spent_a AS limit_charged FROM dx.budgets WHERE "table" = 'shops_oc'::regclass;

-- a prepared statement without parameters replays like its text; with a bound parameter it is
-- never stored (each execution is charged: the parameter is not part of the key)
PREPARE oc_plain AS SELECT string_agg(city || ':' || n::text, ',' ORDER BY city) AS rows
FROM (SELECT city, dx.count(*) AS n FROM shops_oc GROUP BY city) r;
EXECUTE oc_plain \gset p1_
SELECT round(spent::numeric, 6) AS spent_a FROM dx.budgets WHERE "table" = 'shops_oc'::regclass \gset
EXECUTE oc_plain \gset p2_
SELECT :'p1_rows' = :'p2_rows' AS same_rows, round(spent::numeric, 6) = :spent_a AS free
FROM dx.budgets WHERE "table" = 'shops_oc'::regclass;
PREPARE oc_param(int) AS SELECT string_agg(city || ':' || n::text, ',' ORDER BY city) AS rows
FROM (SELECT city, dx.count(*) AS n FROM shops_oc WHERE price > $1 GROUP BY city) r;
EXECUTE oc_param(10) \gset
SELECT round(spent::numeric, 6) AS spent_a FROM dx.budgets WHERE "table" = 'shops_oc'::regclass \gset
EXECUTE oc_param(10) \gset
SELECT round(spent::numeric, 6) > :spent_a AS parameter_charged FROM dx.budgets WHERE "table" = 'shops_oc'::regclass;
-- a scrollable cursor is not stored: opening it again is charged
BEGIN;
DECLARE oc_cur SCROLL CURSOR FOR SELECT city, dx.count(*) AS n FROM shops_oc GROUP BY city ORDER BY city;
MOVE FORWARD ALL IN oc_cur;
MOVE BACKWARD 1 IN oc_cur;
COMMIT;
SELECT round(spent::numeric, 6) AS spent_a FROM dx.budgets WHERE "table" = 'shops_oc'::regclass \gset
BEGIN;
DECLARE oc_cur SCROLL CURSOR FOR SELECT city, dx.count(*) AS n FROM shops_oc GROUP BY city ORDER BY city;
COMMIT;
SELECT round(spent::numeric, 6) > :spent_a AS cursor_charged FROM dx.budgets WHERE "table" = 'shops_oc'::regclass;

-- dx.clear_cache(): the next repeat is charged
RESET ROLE;
SELECT dx.clear_cache('shops_oc') > 0 AS dropped;
SET ROLE dx_regress_oc57a;
SELECT round(spent::numeric, 6) AS spent_a FROM dx.budgets WHERE "table" = 'shops_oc'::regclass \gset
SELECT string_agg(city || ':' || n::text || ':' || s::text, ',' ORDER BY city) AS rows
FROM (SELECT city, dx.count(*) AS n, dx.sum(price) AS s FROM shops_oc GROUP BY city ORDER BY city LIMIT 1) r \gset x_
SELECT round(spent::numeric, 6) > :spent_a AS cleared_charged FROM dx.budgets WHERE "table" = 'shops_oc'::regclass;
RESET ROLE;
