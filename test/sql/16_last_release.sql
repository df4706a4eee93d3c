-- dx.last_release(): the error bars of what the session just received, free of charge; the
-- NOTICE of dxpriv.show_error_bars; the plain-DP baseline that ignores vacuous columns; arguments
-- that are NULL at every declared value; limits refused before evaluation.
CREATE TABLE rel_t (cat text, v int, native text, zip int);
INSERT INTO rel_t SELECT (ARRAY['a','b','c'])[1 + i % 3], i % 100, CASE WHEN i % 4 = 0 THEN 'N' ELSE 'Y' END, i % 900
FROM generate_series(1, 3000) AS i;
SELECT dx.protect_table('rel_t', 1.0);
SELECT dx.set_column('rel_t', 'cat', '{"values": ["a", "b", "c"]}', '{"type": "discrete", "weight": 2}');
SELECT dx.set_column('rel_t', 'v', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 10}');
SELECT dx.set_column('rel_t', 'native', '{"values": ["Y", "N"]}', '{"type": "discrete", "weight": 0.5}');
CREATE ROLE dx_regress_rel LOGIN;
SELECT dx.add_analyst('dx_regress_rel');
SELECT dx.grant_budget('dx_regress_rel', 'rel_t', 50);
SELECT dx.grant_budget(current_user::regrole, 'rel_t', 50);
SET dxpriv.cache_lifetime = 0;
SET dxpriv.allocation = equal_split;
SET dxpriv.test_seed = 16;

-- nothing released yet in this session: no row
SELECT count(*) AS rows_before_any_release FROM dx.last_release();

-- an analyst's plain SQL, then the error bars in the same connection
SET ROLE dx_regress_rel;
SELECT count(*) AS n, avg(v) AS mean_v FROM rel_t WHERE cat = 'a';
SELECT cell, aggregate, kind, expression, group_key, component, answer, noise, noise_scale, ci95_half_width,
       ci95_low, ci95_high, interval_method, epsilon, delta, reused
FROM dx.last_release();
-- reading it costs nothing
SELECT round(spent::numeric, 6) AS spent FROM dx.budgets WHERE "table" = 'rel_t'::regclass;
SELECT count(*) AS rows_again FROM dx.last_release();
SELECT round(spent::numeric, 6) AS spent_unchanged FROM dx.budgets WHERE "table" = 'rel_t'::regclass;
-- the cells' half-widths are dx.explain's; the interval is answer ± half-width
SELECT r.ci95_half_width = e.ci95_half_width AS same_as_explain, r.noise_scale = e.noise_scale AS same_scale
FROM dx.last_release() r
JOIN dx.explain($$SELECT count(*) AS n, avg(v) AS mean_v FROM rel_t WHERE cat = 'a'$$) e ON e.cell = r.cell;
SELECT bool_and(ci95_low = answer - ci95_half_width AND ci95_high = answer + ci95_half_width) AS symmetric
FROM dx.last_release();

-- GROUP BY: one row per released group, labelled
SELECT cat, sum(v) AS total FROM rel_t GROUP BY cat ORDER BY cat;
SELECT cell, kind, expression, group_key, answer, noise_scale, ci95_half_width FROM dx.last_release();

-- explicit aggregates, linear weights, an explicit epsilon
SELECT dx.linear(CASE WHEN v > 50 THEN 2 ELSE 0 END, 0.2) AS weighted FROM rel_t;
SELECT kind, expression, answer, epsilon, noise_scale FROM dx.last_release();

-- the error bars as a NOTICE after each release (one per statement)
SET dxpriv.show_error_bars = on;
SELECT count(*) AS n FROM rel_t WHERE v < 10;
SELECT cat, count(*) AS n FROM rel_t GROUP BY cat ORDER BY cat;
SET dxpriv.show_error_bars = off;
SELECT count(*) AS n FROM rel_t WHERE v < 20;

-- a cursor: its releases happen at FETCH, and the log then shows them (not the statement in between)
BEGIN;
DECLARE c CURSOR FOR SELECT cat, avg(v) AS mean_v FROM rel_t GROUP BY cat ORDER BY cat;
SELECT count(*) AS n FROM rel_t;
SELECT kind, expression, group_key, component FROM dx.last_release();
FETCH 1 FROM c;
SELECT kind, expression, group_key, component FROM dx.last_release();
CLOSE c;
COMMIT;

-- a prepared statement: each EXECUTE is a new release
PREPARE p AS SELECT count(*) AS n FROM rel_t WHERE native = 'N';
EXECUTE p;
SELECT kind, answer FROM dx.last_release();
EXECUTE p;
SELECT kind, answer FROM dx.last_release();
DEALLOCATE p;

-- a statement that is refused before its charge leaves the previous release in place
SELECT count(*) AS n FROM rel_t WHERE v > 1000 OR cat = 'b';
SELECT sum(v) FROM rel_t WHERE undeclared_column = 1;
SELECT kind, answer FROM dx.last_release();
-- a statement charged and then failing shows what it released before the error (here: the count)
SELECT count(*) / 0 AS boom FROM rel_t;
SELECT kind, expression, count(*) AS released FROM dx.last_release() GROUP BY kind, expression;
RESET ROLE;

-- answers replayed from the answer cache are marked reused
SET dxpriv.cache_lifetime = '1h';
SELECT dx.count(*) AS n FROM rel_t WHERE cat = 'c' \gset first_
SELECT reused FROM dx.last_release();
SELECT dx.count(*) AS n FROM rel_t WHERE cat = 'c' \gset second_
SELECT reused, answer = :first_n AS same_answer FROM dx.last_release();
SET dxpriv.cache_lifetime = 0;

-- an exact answer (scale 0) has a zero-width interval
CREATE TABLE rel_exact (g text);
INSERT INTO rel_exact SELECT 'x' FROM generate_series(1, 40);
SELECT dx.protect_table('rel_exact', 'Infinity');
SELECT dx.set_column('rel_exact', 'g', '{"values": ["x", "y"]}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'rel_exact', 5);
SELECT dx.count(*) AS n FROM rel_exact;
SELECT answer, noise_scale, ci95_half_width, ci95_low, ci95_high FROM dx.last_release();

-- bad inputs
SELECT * FROM dx.last_release(1);
-- an analyst cannot use it to read a protected table row by row
SET ROLE dx_regress_rel;
SELECT dx.last_release() FROM rel_t;
SELECT count(*) AS n, (SELECT count(*) FROM dx.last_release()) AS released FROM rel_t;
RESET ROLE;
-- an argument NULL at every declared value is refused before anything is charged
SELECT round(spent::numeric, 6) AS spent_before FROM dx.budgets WHERE "table" = 'rel_t'::regclass AND role = current_user::regrole;
SELECT dx.linear(NULL::float8) FROM rel_t;
SELECT dx.sum(CASE WHEN cat = 'zzz' THEN v END) FROM rel_t;
SELECT dx.count(CASE WHEN v > 500 THEN 1 END) FROM rel_t;
SELECT dx.avg(NULL::int) FROM rel_t;
SELECT round(spent::numeric, 6) AS spent_after FROM dx.budgets WHERE "table" = 'rel_t'::regclass AND role = current_user::regrole;
-- NULL at some points only is fine (counted as nothing there)
SELECT dx.sum(CASE WHEN cat = 'a' THEN v END) IS NOT NULL AS answered FROM rel_t;

-- the plain-DP baseline depends on what the query computes, not on the columns it mentions
SELECT improvement_factor, plain_dp_scale FROM dx.explain($$SELECT dx.count(*) FROM rel_t WHERE cat = 'a'$$);
SELECT improvement_factor, plain_dp_scale
FROM dx.explain($$SELECT dx.count(*) FROM rel_t WHERE cat = 'a' AND native IN ('Y', 'N')$$);
-- a column that matters still counts
SELECT improvement_factor, plain_dp_scale FROM dx.explain($$SELECT dx.count(*) FROM rel_t WHERE cat = 'a' AND native = 'Y'$$);

-- limits: a query whose privacy constraints exceed the work cap is refused before evaluation,
-- with the numbers (900 discrete values: 404,550 edges per line)
SELECT dx.set_column('rel_t', 'zip', '{"min": 0, "max": 899}', '{"type": "discrete", "weight": 1}');
SELECT dx.count(*), dx.sum(v) FROM rel_t WHERE zip < 450 AND cat = 'a';
SELECT cat, dx.sum(v) FILTER (WHERE zip < 10), dx.count(*) FROM rel_t GROUP BY cat;

RESET dxpriv.test_seed;
RESET dxpriv.allocation;
RESET dxpriv.cache_lifetime;
