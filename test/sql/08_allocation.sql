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

-- explain reports every cell and spends nothing
SELECT cell, aggregate, kind, group_key, component, epsilon, round(noise_scale::numeric, 6) AS scale,
	round(ci95_half_width::numeric, 6) AS ci95, query_epsilon, remaining_budget, allocation
FROM dx.explain('SELECT ward, dx.count(*), dx.avg(age) FROM visits GROUP BY ward') ORDER BY 1, 3, 4;
SELECT count(*) AS ledger_rows FROM dx.ledger WHERE relid = 'visits'::regclass;
-- running the query records exactly the scales explain announced
CREATE TEMP TABLE announced AS
	SELECT array_agg(noise_scale ORDER BY cell) AS scales
	FROM dx.explain('SELECT ward, dx.count(*), dx.avg(age) FROM visits GROUP BY ward');
SELECT ward, dx.count(*) IS NOT NULL AS c, dx.avg(age) IS NOT NULL AS a FROM visits GROUP BY ward ORDER BY ward;
SELECT (SELECT scales FROM dx.ledger ORDER BY id DESC LIMIT 1) = (SELECT scales FROM announced) AS explain_matches_ledger;
SELECT epsilon, remaining FROM dx.ledger l, dx.budgets b WHERE l.relid = 'visits'::regclass AND b."table" = l.relid
ORDER BY l.id DESC LIMIT 1;

-- the strategies: optimal is never worse (sum of squared scales) than the three heuristics
CREATE TEMP TABLE strat (name text, sum_sq float8);
SET dxpriv.allocation = 'equal_split';
INSERT INTO strat SELECT 'equal_split', sum(noise_scale ^ 2) FROM dx.explain('SELECT sex, dx.count(*), dx.sum(age) FROM visits WHERE ward = ''a'' GROUP BY sex');
SET dxpriv.allocation = 'equal_scale';
INSERT INTO strat SELECT 'equal_scale', sum(noise_scale ^ 2) FROM dx.explain('SELECT sex, dx.count(*), dx.sum(age) FROM visits WHERE ward = ''a'' GROUP BY sex');
SET dxpriv.allocation = 'algorithm3';
INSERT INTO strat SELECT 'algorithm3', sum(noise_scale ^ 2) FROM dx.explain('SELECT sex, dx.count(*), dx.sum(age) FROM visits WHERE ward = ''a'' GROUP BY sex');
RESET dxpriv.allocation;
INSERT INTO strat SELECT 'optimal', sum(noise_scale ^ 2) FROM dx.explain('SELECT sex, dx.count(*), dx.sum(age) FROM visits WHERE ward = ''a'' GROUP BY sex');
SELECT bool_and((SELECT sum_sq FROM strat WHERE name = 'optimal') <= sum_sq * (1 + 1e-9)) AS optimal_never_worse FROM strat;
SELECT (SELECT sum_sq FROM strat WHERE name = 'algorithm3') <= (SELECT sum_sq FROM strat WHERE name = 'equal_scale') * (1 + 1e-9) AS alg3_not_worse_than_equal_scale;
SET dxpriv.allocation = 'nonsense';

-- a single cell: every strategy gives the single-query scale S/epsilon
SELECT round(noise_scale::numeric, 9), round(improvement_factor::numeric, 6) FROM dx.explain('SELECT dx.count(*) FROM visits WHERE age > 50');

-- bad input
SELECT * FROM dx.explain('SELECT 1; SELECT 2');
SELECT * FROM dx.explain('DELETE FROM visits');
SELECT * FROM dx.explain('SELECT count(*) FROM visits');
SELECT * FROM dx.explain('SELECT dx.count(*) FROM visits GROUP BY nope');
SELECT * FROM dx.explain(NULL);
