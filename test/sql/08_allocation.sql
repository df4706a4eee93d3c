-- Budget allocation between output cells, dx.explain, and agreement with the ledger.
CREATE TABLE visits (age int, sex text, ward text);
INSERT INTO visits SELECT 20 + (i * 7) % 60, (ARRAY['M','F'])[1 + i % 2], (ARRAY['a','b','c'])[1 + i % 3]
FROM generate_series(1, 600) AS i;
SELECT dx.protect_table('visits', 1);
SELECT dx.set_column('visits', 'age', '{"min": 0, "max": 100, "step": 10}', '{"type": "absolute", "scale": 20}');
SELECT dx.set_column('visits', 'sex', '{"values": ["M", "F"]}', '{"type": "discrete", "weight": 2}');
SELECT dx.set_column('visits', 'ward', '{"values": ["a", "b", "c"]}', '{"type": "per_value", "weights": {"a": 1, "b": 3, "c": 3}}');
SELECT dx.grant_budget(current_user::regrole, 'visits', 100);
SET dxpriv.epsilon = 1;

-- explain reports every cell and spends nothing; under the default (relative) allocation the
-- epsilon column is what each cell effectively received (s_k / b_k)
SHOW dxpriv.allocation;
SELECT cell, aggregate, kind, group_key, component, round(epsilon::numeric, 6) AS epsilon, round(noise_scale::numeric, 6) AS scale,
	round(ci95_half_width::numeric, 6) AS ci95, query_epsilon, remaining_budget, allocation
FROM dx.explain('SELECT ward, dx.count(*), dx.avg(age) FROM visits GROUP BY ward') ORDER BY 1, 3, 4;
SELECT count(*) AS ledger_rows FROM dx.ledger WHERE relid = 'visits'::regclass;
-- running the query records exactly the scales explain announced
CREATE TEMP TABLE announced AS
	SELECT array_agg(noise_scale ORDER BY cell) AS scales
	FROM dx.explain('SELECT ward, dx.count(*), dx.avg(age) FROM visits GROUP BY ward') WHERE cell IS NOT NULL;
SELECT ward, dx.count(*) IS NOT NULL AS c, dx.avg(age) IS NOT NULL AS a FROM visits GROUP BY ward ORDER BY ward;
SELECT (SELECT scales FROM dx.ledger ORDER BY id DESC LIMIT 1) = (SELECT scales FROM announced) AS explain_matches_ledger;
SELECT epsilon, remaining FROM dx.ledger l, dx.budgets b WHERE l.relid = 'visits'::regclass AND b."table" = l.relid
ORDER BY l.id DESC LIMIT 1;

-- the strategies, per cell: min_total_variance is never worse (sum of squared scales) than the
-- three heuristics; relative is never noisier than equal_split in any cell
CREATE TEMP TABLE strat (name text, cell int, scale float8, eps float8);
CREATE FUNCTION pg_temp.record_strategy(label text) RETURNS void LANGUAGE sql AS $$
	INSERT INTO strat SELECT label, cell, noise_scale, epsilon
	FROM dx.explain('SELECT sex, dx.count(*), dx.sum(age), dx.avg(age) FROM visits WHERE ward = ''a'' GROUP BY sex') WHERE cell IS NOT NULL $$;
SET dxpriv.allocation = 'equal_split';
SELECT pg_temp.record_strategy('equal_split');
SET dxpriv.allocation = 'equal_scale';
SELECT pg_temp.record_strategy('equal_scale');
SET dxpriv.allocation = 'algorithm3';
SELECT pg_temp.record_strategy('algorithm3');
SET dxpriv.allocation = 'min_total_variance';
SELECT pg_temp.record_strategy('min_total_variance');
RESET dxpriv.allocation;
SELECT pg_temp.record_strategy('relative');
CREATE TEMP VIEW strat_sum AS SELECT name, sum(scale ^ 2) AS sum_sq FROM strat GROUP BY name;
SELECT bool_and((SELECT sum_sq FROM strat_sum WHERE name = 'min_total_variance') <= sum_sq * (1 + 1e-9)) AS min_total_variance_never_worse
FROM strat_sum WHERE name <> 'relative';
SELECT (SELECT sum_sq FROM strat_sum WHERE name = 'algorithm3') <= (SELECT sum_sq FROM strat_sum WHERE name = 'equal_scale') * (1 + 1e-9) AS alg3_not_worse_than_equal_scale;
SELECT bool_and(r.scale <= e.scale * (1 + 1e-9)) AS relative_never_noisier_than_equal_split,
	count(*) FILTER (WHERE r.scale < 0.99 * e.scale) AS cells_less_noisy
FROM strat r JOIN strat e USING (cell) WHERE r.name = 'relative' AND e.name = 'equal_split';
-- equal_split gives every one of the 8 cells 1/8 of the query's 3
SELECT DISTINCT round(eps::numeric, 9) AS equal_split_share FROM strat WHERE name = 'equal_split';
-- the old name still works and means min_total_variance
SET dxpriv.allocation = 'optimal';
SHOW dxpriv.allocation;
SELECT DISTINCT allocation FROM dx.explain('SELECT dx.count(*), dx.sum(age) FROM visits');
RESET dxpriv.allocation;
SET dxpriv.allocation = 'nonsense';

-- declared epsilons are honoured: each aggregate's cells get its own epsilon, whatever the strategy
SELECT kind, epsilon, noise_scale, query_epsilon, allocation
FROM dx.explain('SELECT dx.count(1, 0.9), dx.sum(age, 0.1) FROM visits') ORDER BY cell;
SET dxpriv.allocation = 'equal_split';
SELECT kind, epsilon, noise_scale FROM dx.explain('SELECT dx.count(1, 0.9), dx.sum(age, 0.1) FROM visits') ORDER BY cell;
-- without explicit epsilons the query's total (here 1 + 1) is shared by the strategy
SELECT kind, epsilon, noise_scale FROM dx.explain('SELECT dx.count(*), dx.sum(age) FROM visits') ORDER BY cell;
RESET dxpriv.allocation;
-- an explicit epsilon on one aggregate makes every aggregate its own block (the other at dxpriv.epsilon)
SELECT kind, group_key, round(epsilon::numeric, 6) AS epsilon, round(noise_scale::numeric, 6) AS scale
FROM dx.explain('SELECT sex, dx.count(1, 0.5), dx.sum(age) FROM visits GROUP BY sex') ORDER BY cell;
SELECT dx.count(1, 0.9) IS NOT NULL AS c, dx.sum(age, 0.1) IS NOT NULL AS s FROM visits;
SELECT epsilon, scales FROM dx.ledger ORDER BY id DESC LIMIT 1;

-- a single cell: every strategy gives the single-query scale S/epsilon
SELECT round(noise_scale::numeric, 9), round(improvement_factor::numeric, 6) FROM dx.explain('SELECT dx.count(*) FROM visits WHERE age > 50');

-- bad input
SELECT * FROM dx.explain('SELECT 1; SELECT 2');
SELECT * FROM dx.explain('DELETE FROM visits');
SELECT * FROM dx.explain('SELECT count(*) FROM visits');
SELECT * FROM dx.explain('SELECT dx.count(*) FROM visits GROUP BY nope');
SELECT * FROM dx.explain(NULL);

-- AVG is one answer and the default does not depend on units: the same ages stored in
-- hundredths (domain and metric scaled by 100) change the sum part's scale by exactly 100 and
-- nothing else
ALTER TABLE visits ADD COLUMN age_c int;
UPDATE visits SET age_c = age * 100;
SELECT dx.set_column('visits', 'age_c', '{"min": 0, "max": 10000, "step": 1000}', '{"type": "absolute", "scale": 2000}');
SELECT a.component, round(a.noise_scale::numeric, 6) AS years, round(c.noise_scale::numeric, 6) AS hundredths,
	round((c.noise_scale / a.noise_scale)::numeric, 9) AS ratio
FROM dx.explain('SELECT sex, dx.count(*), dx.avg(age) FROM visits GROUP BY sex') a
JOIN dx.explain('SELECT sex, dx.count(*), dx.avg(age_c) FROM visits GROUP BY sex') c USING (cell)
ORDER BY a.cell;
