-- Answer reuse: an identical query returns the stored noisy answers without spending again.
CREATE TABLE dash (region text, amount int);
INSERT INTO dash SELECT (ARRAY['n','s'])[1 + i % 2], i % 100 FROM generate_series(1, 500) AS i;
SELECT dx.protect_table('dash');
SELECT dx.set_column('dash', 'region', '{"values": ["n", "s"]}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_column('dash', 'amount', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 10}');
CREATE ROLE dx_regress_dash LOGIN;
SELECT dx.add_analyst('dx_regress_dash');
SELECT dx.grant_budget('dx_regress_dash', 'dash', 10);
SET ROLE dx_regress_dash;
SET dxpriv.epsilon = 0.5;
SELECT region, count(*) AS n, sum(amount) AS total FROM dash GROUP BY region ORDER BY region \gset first_
-- the same query again (different spacing and keyword case): same answers, nothing spent
select   region, COUNT(*) as n, SUM(amount) as total from dash group by region order by region \gset again_
SELECT :first_n = :again_n AS same_count, :'first_total' = :'again_total' AS same_sum;
SELECT spent FROM dx.budgets;
-- the release is the aggregates, not their presentation: other output names, a table alias,
-- another ORDER BY and a LIMIT replay the same answers (nothing spent), and so does a wrapper
SELECT d.region AS r, count(*) AS how_many, sum(amount) AS s FROM dash d GROUP BY d.region ORDER BY how_many DESC LIMIT 1 \gset third_
SELECT sum(w.n) + sum(w.total) IS NOT NULL AS wrapped FROM (SELECT region, count(*) AS n, sum(amount) AS total FROM dash GROUP BY region) w;
SELECT spent FROM dx.budgets;
-- averaging is pointless: thirty repetitions give one answer and cost once
CREATE TEMP TABLE answers (v bigint);
DO $$ DECLARE v bigint; BEGIN FOR i IN 1..30 LOOP SELECT count(*) INTO v FROM dash WHERE amount > 50; INSERT INTO answers VALUES (v); END LOOP; END $$;
SELECT count(DISTINCT v) AS distinct_answers, count(*) AS runs FROM answers;
SELECT round(spent::numeric, 6) AS spent FROM dx.budgets;
-- a different epsilon is a different query
SELECT region, count(*) > -1000 AS answered FROM dash GROUP BY region ORDER BY region;
SET dxpriv.epsilon = 0.25;
SELECT region, count(*) > -1000 AS answered FROM dash GROUP BY region ORDER BY region;
SELECT round(spent::numeric, 6) AS spent FROM dx.budgets;
RESET ROLE;
-- the DBA can drop stored answers; the next identical query is charged again
SELECT dx.clear_cache('dash') > 0 AS dropped;
SET ROLE dx_regress_dash;
SET dxpriv.epsilon = 0.25;
SELECT region, count(*) > -1000 AS answered FROM dash GROUP BY region ORDER BY region;
SELECT round(spent::numeric, 6) AS spent FROM dx.budgets;
-- dx.explain reports the caller's own remaining budget
SELECT DISTINCT round(remaining_budget::numeric, 6) = (SELECT round(remaining::numeric, 6) FROM dx.budgets) AS own_budget
FROM dx.explain('SELECT region, count(*) FROM dash GROUP BY region');
-- the cache is per role: nobody else gets these answers for free
RESET ROLE;
SELECT count(*) AS ledger_rows FROM dx.ledger WHERE relid = 'dash'::regclass;
-- only superusers clear everything, only owners clear a table
SET ROLE dx_regress_dash;
SELECT dx.clear_cache();
SELECT dx.clear_cache('dash');
SET dxpriv.cache_lifetime = 0;
RESET ROLE;
