-- (epsilon, delta) noise families for the linear aggregates: dxpriv.noise, the table's per-query
-- delta, the delta budget, the ledger's accounting, explain, and bounded truncated noise.
-- No noisy value is printed: answers are compared with the true ones through bounds.
CREATE TABLE fam (region text, amount int);
INSERT INTO fam SELECT (ARRAY['n','s','e'])[1 + i % 3], i % 50 FROM generate_series(1, 3000) AS i;
SELECT dx.protect_table('fam', 2.0);
SELECT dx.set_column('fam', 'region', '{"values": ["n", "s", "e"]}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_column('fam', 'amount', '{"min": 0, "max": 49}', '{"type": "absolute", "scale": 5}');
SELECT dx.grant_budget(current_user::regrole, 'fam', 100);
SET dxpriv.cache_lifetime = 0;
SET dxpriv.test_seed = 7;

-- the GUC: unknown values are refused by PostgreSQL itself
SET dxpriv.noise = 'cauchy';
SHOW dxpriv.noise;

-- a table without a delta refuses (epsilon, delta) noise, with a hint; nothing is charged
SET dxpriv.noise = 'gaussian';
SELECT dx.count(*) FROM fam;
SELECT count(*) AS ledger_rows FROM dx.ledger WHERE relid = 'fam'::regclass;
-- the exponential mechanism is pure epsilon: unaffected by dxpriv.noise
SELECT dx.mode(region, 10) IS NOT NULL AS mode_answered FROM fam;

-- the owner allows delta = 1e-6 per query and grants a delta budget of 3e-6
SELECT dx.set_delta('fam', 1e-6);
SELECT dx.grant_budget(current_user::regrole, 'fam', 100, delta => 3e-6);

-- explain: family, delta, and the zCDP-calibrated deviation. COUNT with presence 2 at epsilon 0.5:
-- the worst pair is a record and ⊥ at distance 2, i.e. sensitivity 1 at epsilon' = 1, delta 1e-6:
-- sigma = 1/sqrt(2 rho), rho = 0.024356 (cdp_delta(rho, 1) = 1e-6) -> 4.5309; the analytic
-- Gaussian of the continuous law would need 4.2247.
SELECT cell, noise, query_delta, noise_bound IS NULL AS unbounded,
       round(noise_scale::numeric, 4) AS sigma, noise_scale >= 4.2247 AS above_analytic,
       ci95_half_width BETWEEN 1.5 * noise_scale AND 2.5 * noise_scale AS gaussian_ci,
       improvement_factor IS NULL AS no_laplace_comparison
FROM dx.explain('SELECT dx.count(1, 0.5) FROM fam');

-- a Gaussian count: charged epsilon and delta, recorded as discrete_gaussian
SELECT noise_scale AS sigma FROM dx.explain('SELECT dx.count(1, 0.5) FROM fam') \gset
SELECT abs(dx.count(1, 0.5) - 3000) <= 6 * :sigma AS close FROM fam;
SELECT mechanism, epsilon, delta, scales = ARRAY[:sigma]::float8[] AS scales_match_explain
FROM dx.ledger WHERE relid = 'fam'::regclass ORDER BY id DESC LIMIT 1;
SELECT delta_spent, round(delta_remaining::numeric, 12) AS delta_remaining FROM dx.budgets WHERE "table" = 'fam'::regclass;

-- several aggregates and GROUP BY: one release, delta spent once per statement
SELECT region, dx.count(*) IS NOT NULL AS answered, dx.avg(amount) BETWEEN 0 AND 49 AS avg_in_domain
FROM fam GROUP BY region ORDER BY region;
SELECT mechanism, epsilon, delta, array_length(scales, 1) AS cells FROM dx.ledger WHERE relid = 'fam'::regclass ORDER BY id DESC LIMIT 1;
SELECT delta_spent, round(delta_remaining::numeric, 12) AS delta_remaining FROM dx.budgets WHERE "table" = 'fam'::regclass;

-- the third delta query uses up the delta budget; the fourth is refused with 53000 and a hint
SELECT dx.count(*) > 0 AS third_answered FROM fam;
SELECT dx.count(*) > 0 AS fourth_answered FROM fam;
SELECT count(*) AS gaussian_ledger_rows, sum(delta) AS delta_total FROM dx.ledger
WHERE relid = 'fam'::regclass AND mechanism = 'discrete_gaussian';
-- pure epsilon still works and spends no delta
SET dxpriv.noise = 'laplace';
SELECT dx.count(*) > 0 AS laplace_answered FROM fam;
SELECT mechanism, delta FROM dx.ledger WHERE relid = 'fam'::regclass ORDER BY id DESC LIMIT 1;

-- truncated Laplace: the noise never exceeds the bound explain reports
SELECT dx.grant_budget(current_user::regrole, 'fam', 1000, delta => 1e-3);
SET dxpriv.noise = 'truncated_laplace';
SELECT noise, noise_bound > 0 AS bounded, ci95_half_width <= noise_bound AS ci_within_bound, query_delta
FROM dx.explain('SELECT dx.sum(amount, 0.2) FROM fam WHERE region = ''n''');
SELECT noise_bound AS bound FROM dx.explain('SELECT dx.sum(amount, 0.2) FROM fam WHERE region = ''n''') \gset
SELECT sum(amount) AS truth FROM fam WHERE region = 'n' \gset
CREATE TEMP TABLE tl (v float8);
DO $$ DECLARE v float8; BEGIN
  FOR i IN 1..200 LOOP
    SET LOCAL dxpriv.test_seed = -1;
    SELECT dx.sum(amount, 0.2) INTO v FROM fam WHERE region = 'n';
    INSERT INTO tl VALUES (v);
  END LOOP;
END $$;
SELECT count(*) AS releases, max(abs(v - :truth)) <= :bound AS within_bound,
       count(DISTINCT v) > 50 AS noisy FROM tl;
SELECT mechanism, count(*), round(sum(delta)::numeric, 12) AS delta_spent FROM dx.ledger
WHERE relid = 'fam'::regclass AND mechanism LIKE 'truncated%' GROUP BY mechanism;

-- parallel plans: partial states carry the family; same seed, same answer as the serial plan
SET dxpriv.noise = 'gaussian';
SET dxpriv.test_seed = 11;
SET max_parallel_workers_per_gather = 0;
SELECT dx.sum(amount) AS serial FROM fam \gset
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT dx.sum(amount) FROM fam;
SET dxpriv.test_seed = 11;
SELECT dx.sum(amount) = :serial AS parallel_equals_serial FROM fam;
SET force_parallel_mode = regress;
SET dxpriv.test_seed = 11;
SELECT dx.sum(amount) = :serial AS forced_parallel_equals_serial FROM fam;
RESET force_parallel_mode;
RESET max_parallel_workers_per_gather;

-- a statement whose linear cells are exact (public row count) spends no delta, and its ledger row
-- names only the noisy mechanism
CREATE TABLE fam_public (region text);
INSERT INTO fam_public SELECT (ARRAY['n','s'])[1 + i % 2] FROM generate_series(1, 100) AS i;
SELECT dx.protect_table('fam_public', 'Infinity', 1e-6);
SELECT dx.set_column('fam_public', 'region', '{"values": ["n", "s"]}', '{"type": "discrete", "weight": 1}');
SELECT dx.grant_budget(current_user::regrole, 'fam_public', 10, delta => 1e-3);
SELECT dx.count(*) AS public_count FROM fam_public;
SELECT mechanism, delta FROM dx.ledger WHERE relid = 'fam_public'::regclass ORDER BY id DESC LIMIT 1;
SELECT dx.mode(region, 1) IS NOT NULL AS mode_answered, dx.count(*) AS public_count FROM fam_public;
SELECT mechanism, epsilon, delta FROM dx.ledger WHERE relid = 'fam_public'::regclass ORDER BY id DESC LIMIT 1;

-- bad delta settings by the owner
SELECT dx.set_delta('fam', 0.5);
SELECT dx.set_delta('fam', 'NaN');
RESET dxpriv.noise;
RESET dxpriv.test_seed;
RESET dxpriv.cache_lifetime;
