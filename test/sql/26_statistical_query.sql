-- Statistical-query variant (issue 14, MECHANISMS.md §3.13): dx.explain reports, next to the plain
-- d_X Laplace cell of a k-way marginal count on a table with a public row count, the optimal
-- product surrogate (noise scale and 95% bound in rows, and the ratio of root-mean-square error
-- bounds). Nothing is charged.
CREATE TABLE sq_src (age int, sex text);
INSERT INTO sq_src SELECT (i * 7) % 21, CASE WHEN i % 3 = 0 THEN 'M' ELSE 'F' END FROM generate_series(1, 20) i;
SELECT dx.protect_table('sq_src', 'Infinity');
SELECT dx.set_column('sq_src', 'age', '{"min": 0, "max": 20}', '{"type": "absolute", "scale": 5}');
SELECT dx.set_column('sq_src', 'sex', '{"values": ["F", "M"]}', '{"type": "discrete", "weight": 1}');
SELECT dx.grant_budget(current_user::regrole, 'sq_src', 1);
SET dxpriv.epsilon = 0.1;
-- a 2-way marginal cell: the plain cell (scale 1 / (0.1 * 0.2) = 50 rows) and the surrogate
SELECT cell, kind, component, epsilon, round(noise_scale::numeric, 3) AS scale, round(ci95_half_width::numeric, 3) AS ci95,
	round(improvement_factor::numeric, 3) AS factor
FROM dx.explain('SELECT dx.count(*) FROM sq_src WHERE age = 10 AND sex = ''F''');
-- a 1-way marginal (constant on the left)
SELECT cell, component, round(noise_scale::numeric, 3) AS scale
FROM dx.explain('SELECT dx.count(*) FROM sq_src WHERE ''M'' = sex');
-- not a marginal cell: no second row
SELECT count(*) FROM dx.explain('SELECT dx.count(*) FROM sq_src WHERE age > 10');
SELECT count(*) FROM dx.explain('SELECT dx.count(*) FROM sq_src WHERE age = 10 OR sex = ''M''');
SELECT count(*) FROM dx.explain('SELECT dx.count(*), dx.count(*) FILTER (WHERE sex = ''F'') FROM sq_src WHERE age = 3');
-- row count not public (presence 1): no second row
SELECT dx.protect_table('sq_src', 1.0);
SELECT count(*) FROM dx.explain('SELECT dx.count(*) FROM sq_src WHERE age = 10 AND sex = ''F''');
SELECT spent FROM dx.budgets WHERE "table" = 'sq_src'::regclass;
RESET dxpriv.epsilon;
