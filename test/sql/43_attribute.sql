-- Attribute privacy (issue 15, MECHANISMS.md §6): a DBA-declared policy hiding the mean of a
-- protected attribute; dx.attr_avg / dx.attr_sum with APGM noise charged to the separate
-- attribute-privacy budget; dx.explain_attribute; the Wasserstein calibration; bad input.
SET dxpriv.test_seed = 15;
-- err(q): the SQLSTATE, message and hint of q's error (00_setup)

-- 1000 employees: salary (in thousands, inside its declared domain), a 0/1 gender column (the
-- protected attribute), an age and a text note.
CREATE TABLE staff (id int PRIMARY KEY, salary float8, female int, age int, note text);
INSERT INTO staff SELECT i, 40 + (i * 37) % 60 + 5 * (i % 2), i % 2, 20 + (i * 13) % 45, 'n' || i
FROM generate_series(1, 1000) AS i;
SELECT dx.protect_table('staff', 'Infinity');
SELECT dx.set_column('staff', 'salary', '{"min": 0, "max": 200, "step": 1}', '{"type": "absolute", "scale": 10}');
SELECT dx.set_column('staff', 'age', '{"min": 18, "max": 70}', '{"type": "absolute", "scale": 5}');

-- Model: per-record covariance of (salary, female, age): Var salary 400, Var female 0.25,
-- Cov 5 (correlation 0.5); age nearly independent of female. The mean of female (the share of
-- women) is hidden within any two values 0.2 apart.
SELECT dx.protect_attribute('staff', 'female', 0.2,
	'{"family": "gaussian", "attributes": ["salary", "female", "age"],
	  "covariance": [[400, 5, 10], [5, 0.25, 0.01], [10, 0.01, 150]]}', epsilon => 0.5, delta => 1e-5);
SELECT attribute, diameter, attributes, covariances, epsilon, delta, calibration, record_privacy
FROM dx.attribute_policies;

-- What a release adds, before any budget exists (explain spends nothing). salary: Delta =
-- |5| / 0.25 * 0.2 = 4, credited variance (400 - 25 / 0.25) / 1000 = 0.3, analytic sigma(4, 0.5,
-- 1e-5) = 4 * 7.031827 -> sd sqrt(28.1273^2 - 0.3); d_X part: scale 10 / (0.1 * 1000).
SET dxpriv.epsilon = 0.1;
SELECT component, protects, diameter, epsilon, delta, round(sensitivity::numeric, 9) AS sensitivity,
	round(data_variance::numeric, 9) AS data_variance, round(noise_sd::numeric, 6) AS noise_sd, binding,
	round(ci95_half_width::numeric, 6) AS ci95, budget
FROM dx.explain_attribute('staff', 'salary');
SELECT round(sqrt((4 * 7.0318266755824914)^2 - 0.3)::numeric, 6) AS expected_sd;
-- age is weakly correlated with female: Delta = 0.01/0.25*0.2 = 0.008, sigma(0.008) = 0.0563 <
-- sqrt(credited variance 0.1499996) -> no attribute noise (sd 0)
SELECT component, round(sensitivity::numeric, 9) AS sensitivity, round(data_variance::numeric, 9) AS data_variance,
	noise_sd, binding FROM dx.explain_attribute('staff', 'age') WHERE budget = 'attribute';
SELECT component, round(sensitivity::numeric, 6) AS sensitivity, round(noise_sd::numeric, 6) AS noise_sd
FROM dx.explain_attribute('staff', 'salary', 'sum') WHERE budget = 'attribute';
-- the same through dx.explain, in its shape
SELECT cell, aggregate, kind, component, epsilon, round(noise_scale::numeric, 6) AS noise_scale,
	round(ci95_half_width::numeric, 6) AS ci95, noise, query_epsilon, remaining_budget, query_delta
FROM dx.explain('SELECT dx.attr_avg(''staff'', ''salary''), dx.attr_sum(''staff'', ''age'')');
SELECT err($$SELECT * FROM dx.explain('SELECT dx.attr_avg(''staff'', ''salary'') + 1')$$);

-- No attribute budget yet: refused, nothing charged.
SELECT err($$SELECT dx.attr_avg('staff', 'salary')$$);
SELECT dx.grant_attribute_budget(current_user::regrole, 'staff', 1.2, 1e-4);
-- the d_X component needs the d_X budget too
SELECT err($$SELECT dx.attr_avg('staff', 'salary')$$);
SELECT dx.grant_budget(current_user::regrole, 'staff', 1.0);
SELECT granted, spent, attr_granted, attr_spent, attr_remaining, attr_delta_granted, attr_delta_spent
FROM dx.budgets WHERE "table" = 'staff'::regclass;

-- Releases: reproducible under the test seed; the noise has the explained size.
SET dxpriv.test_seed = 15;
SELECT round(dx.attr_avg('staff', 'salary')::numeric, 6) AS attr_avg_salary;
SET dxpriv.test_seed = 15;
SELECT round(dx.attr_avg('staff', 'salary')::numeric, 6) AS same_again;
SELECT round(avg(salary)::numeric, 6) AS exact_avg FROM staff;
SELECT granted, round(spent::numeric, 6) AS spent, attr_granted, attr_spent, round(attr_remaining::numeric, 9) AS attr_remaining,
	attr_delta_spent FROM dx.budgets WHERE "table" = 'staff'::regclass;
SELECT budget, mechanism, epsilon, delta, array_length(scales, 1) AS n_scales, query
FROM dx.ledger WHERE relid = 'staff'::regclass ORDER BY id;

-- Attribute budget 1.2 at 0.5 per release: the third release is refused (0.2 remains), nothing more is spent.
SELECT err($$SELECT dx.attr_sum('staff', 'age')$$);
SELECT err($$SELECT dx.attr_avg('staff', 'salary')$$);
SELECT attr_spent, round(attr_remaining::numeric, 9) AS attr_remaining FROM dx.budgets WHERE "table" = 'staff'::regclass;

-- Noiseless check: no record privacy and a weakly correlated column: the exact mean is released
-- (APGM credits the data's own variance) and only the attribute budget is spent.
SELECT dx.protect_attribute('staff', 'female', 0.2,
	'{"family": "gaussian", "attributes": ["salary", "female", "age"],
	  "covariance": [[400, 5, 10], [5, 0.25, 0.01], [10, 0.01, 150]]}', epsilon => 0.5, record_privacy => false);
SELECT dx.grant_attribute_budget(current_user::regrole, 'staff', 10, 1e-3);
SELECT dx.attr_avg('staff', 'age') = (SELECT avg(age) FROM staff) AS exact_mean_released,
	dx.attr_sum('staff', 'age') = (SELECT sum(age) FROM staff) AS exact_sum_released;
-- the aggregate spelling is the same release (rewritten into the call; the statement reads no table)
SELECT dx.attr_avg(age) AS attr_avg_age, dx.attr_sum(age) AS attr_sum_age FROM staff \gset
SELECT :attr_avg_age = avg(age) AS aggregate_spelling, :attr_sum_age = sum(age) AS aggregate_sum FROM staff;
SELECT kind, component, noise_scale FROM dx.explain('SELECT dx.attr_avg(age) FROM staff');
SELECT q, err(q) FROM (VALUES
	($$SELECT dx.attr_avg(age) FROM staff WHERE female = 1$$),
	($$SELECT dx.attr_avg(age + 1) FROM staff$$),
	($$SELECT dx.attr_avg(age) FROM staff GROUP BY female$$),
	($$SELECT dx.attr_avg(age), dx.count(*) FROM staff$$),
	($$SELECT dx.attr_avg(age) * 2 FROM staff$$),
	($$SELECT dx.attr_avg(age) FILTER (WHERE female = 1) FROM staff$$),
	($$SELECT dx.attr_avg(s.age) FROM staff s JOIN people p ON p.id = s.id$$),
	($$SELECT (SELECT dx.attr_avg(age) FROM staff)$$),
	($$SELECT dx.attr_avg(age) FROM staff LIMIT 1$$),
	($$CREATE VIEW attr_view AS SELECT dx.attr_avg(age) FROM staff$$)
) AS t(q);
SELECT count(*) FILTER (WHERE budget = 'attribute') AS attribute_rows, count(*) FILTER (WHERE budget = 'd_x') AS dx_rows
FROM dx.ledger WHERE relid = 'staff'::regclass;
-- a family of models: sensitivity from the most correlated, credit from the least variable
SELECT dx.protect_attribute('staff', 'female', 0.2,
	'{"family": "gaussian", "attributes": ["salary", "female"],
	  "covariances": [[[400, 5], [5, 0.25]], [[100, 4], [4, 0.25]], [[900, 2], [2, 0.25]]]}', record_privacy => false);
SELECT round(sensitivity::numeric, 9) AS sensitivity, round(data_variance::numeric, 9) AS data_variance
FROM dx.explain_attribute('staff', 'salary');

-- Bad declarations.
SELECT q, err(q) FROM (VALUES
	($$SELECT dx.protect_attribute('staff', 'female', 0.2, '[1]')$$),
	($$SELECT dx.protect_attribute('staff', 'female', 0.2, '{"family": "beta", "attributes": ["female"], "covariance": [[1]]}')$$),
	($$SELECT dx.protect_attribute('staff', 'female', 0.2, '{"family": "gaussian", "attributes": ["female"], "covariance": [[1]], "mean": [0]}')$$),
	($$SELECT dx.protect_attribute('staff', 'female', 0.2, '{"family": "gaussian", "attributes": [], "covariance": [[1]]}')$$),
	($$SELECT dx.protect_attribute('staff', 'female', 0.2, '{"family": "gaussian", "attributes": ["female"]}')$$),
	($$SELECT dx.protect_attribute('staff', 'female', 0.2, '{"family": "gaussian", "attributes": ["female"], "covariance": [["a"]]}')$$),
	($$SELECT dx.protect_attribute('staff', 'female', 0.2, '{"family": "gaussian", "attributes": ["female", "salary"], "covariance": [[1, 2]]}')$$),
	($$SELECT dx.protect_attribute('staff', 'female', 0.2, '{"family": "gaussian", "attributes": ["female", "salary"], "covariance": [[1, 2], [2, 1]]}')$$),
	($$SELECT dx.protect_attribute('staff', 'female', 0.2, '{"family": "gaussian", "attributes": ["female", "salary"], "covariance": [[1, 0.2], [0.3, 1]]}')$$),
	($$SELECT dx.protect_attribute('staff', 'female', 0.2, '{"family": "gaussian", "attributes": ["female", "nope"], "covariance": [[1, 0], [0, 1]]}')$$),
	($$SELECT dx.protect_attribute('staff', 'female', 0.2, '{"family": "gaussian", "attributes": ["female", "note"], "covariance": [[1, 0], [0, 1]]}')$$),
	($$SELECT dx.protect_attribute('staff', 'female', 0.2, '{"family": "gaussian", "attributes": ["female", "female"], "covariance": [[1, 0], [0, 1]]}')$$),
	($$SELECT dx.protect_attribute('staff', 'age', 0.2, '{"family": "gaussian", "attributes": ["female"], "covariance": [[1]]}')$$),
	($$SELECT dx.protect_attribute('staff', 'female', -1, '{"family": "gaussian", "attributes": ["female"], "covariance": [[1]]}')$$),
	($$SELECT dx.protect_attribute('staff', 'female', 0.2, '{"family": "gaussian", "attributes": ["female"], "covariance": [[1]]}', epsilon => 0)$$),
	($$SELECT dx.protect_attribute('staff', 'female', 0.2, '{"family": "gaussian", "attributes": ["female"], "covariance": [[1]]}', delta => 0)$$),
	($$SELECT dx.protect_attribute('staff', 'female', 0.2, '{"family": "gaussian", "attributes": ["female"], "covariance": [[1]]}', epsilon => 2, calibration => 'classical')$$),
	($$SELECT dx.protect_attribute('staff', 'female', 0.2, '{"family": "gaussian", "attributes": ["female"], "covariance": [[1]]}', calibration => 'magic')$$),
	($$SELECT dx.protect_attribute('people', 'age', 0.2, '{"family": "gaussian", "attributes": ["age"], "covariance": [[1]]}')$$),
	($$SELECT dx.grant_attribute_budget(current_user::regrole, 'staff', 0)$$),
	($$SELECT dx.grant_attribute_budget(current_user::regrole, 'staff', 1, 2)$$),
	($$SELECT dx.unprotect_attribute('staff', 'age')$$)
) AS t(q);

-- Bad releases: undeclared column, column outside the model, table without a policy, a table
-- whose row count is not public, bad explain kind.
SELECT dx.set_column('staff', 'female', '{"min": 0, "max": 1}', '{"type": "absolute", "scale": 1}');
SELECT q, err(q) FROM (VALUES
	($$SELECT dx.attr_avg('staff', 'note')$$),
	($$SELECT dx.attr_avg('staff', 'id')$$),
	($$SELECT dx.attr_avg('staff', 'age')$$),
	($$SELECT dx.attr_avg('people', 'age')$$),
	($$SELECT dx.explain_attribute('staff', 'salary', 'median')$$)
) AS t(q);
-- the protected attribute itself can be released (sigma = c d / epsilon for its own mean)
SELECT round(noise_sd::numeric, 6) AS own_mean_sd, round((analytic_sd)::numeric, 6) AS expected
FROM dx.explain_attribute('staff', 'female'),
	LATERAL (SELECT 0.2 * 7.0318266755824914 AS analytic_sd) e WHERE budget = 'attribute';
-- a table that later loses its public row count is refused at release time
SELECT dx.protect_table('staff', 1.0);
SELECT err($$SELECT dx.attr_avg('staff', 'salary')$$);
SELECT dx.protect_table('staff', 'Infinity');
SELECT dx.unprotect_attribute('staff');
SELECT err($$SELECT dx.attr_avg('staff', 'salary')$$);

-- Wasserstein calibration (§6.7): Example 2's worst pair (Table 1) needs W = 1; bad input.
SELECT dx.wasserstein_scale('[[[0.0256, 0.1536, 0.3456, 0.3456, 0.1296], [0.1296, 0.3456, 0.3456, 0.1536, 0.0256]]]', 0.5) AS scale;
SELECT dx.wasserstein_scale('[[[1, 0, 0, 0, 0], [0, 0, 0, 0, 1]]]', 1.0) AS group_dp_scale;
SELECT q, err(q) FROM (VALUES
	($$SELECT dx.wasserstein_scale('[[[0.5, 0.6], [1]]]', 1)$$),
	($$SELECT dx.wasserstein_scale('[[[1]]]', 1)$$),
	($$SELECT dx.wasserstein_scale('{"a": 1}', 1)$$),
	($$SELECT dx.wasserstein_scale('[[[1], [1]]]', 0)$$)
) AS t(q);
RESET dxpriv.epsilon;
RESET dxpriv.test_seed;

-- Markov quilt mechanism (§6.6), Example 1 (Figure 1): income is sensitive; the quilt {gender}
-- (declared max-influence 0.3 < epsilon 1) separates it from height and weight. A count of tall
-- students (A = {height}) needs no noise; a count over height and SAT (A ∩ N = {sat}) would need
-- n / (1 - 0.3) by the quilt, more than the trivial n / 1, which Algorithm 3 keeps.
SELECT sensitive_attribute, scale, quilt, nearby, influence
FROM dx.markov_quilt_scale('{"attributes": ["sat", "height", "weight", "gender", "income"],
	"edges": [["income", "sat"], ["gender", "sat"], ["gender", "height"], ["gender", "weight"], ["height", "weight"]]}',
	'{income}', '{height}', '{"income": {"gender": 0.3}}', 500, 1.0);
SELECT sensitive_attribute, scale, quilt FROM dx.markov_quilt_scale('{"attributes": ["sat", "height", "weight", "gender", "income"],
	"edges": [["income", "sat"], ["gender", "sat"], ["gender", "height"], ["gender", "weight"], ["height", "weight"]]}',
	'{income}', '{height,sat}', '{"income": {"gender": 0.3}}', 500, 1.0);
SELECT q, err(q) FROM (VALUES
	($$SELECT * FROM dx.markov_quilt_scale('{"attributes": ["a", "b"], "edges": [["a", "b"], ["b", "a"]]}', '{a}', '{b}', '{}', 10, 1)$$),
	($$SELECT * FROM dx.markov_quilt_scale('{"attributes": ["a", "b"]}', '{c}', '{b}', '{}', 10, 1)$$),
	($$SELECT * FROM dx.markov_quilt_scale('{"attributes": ["a", "b"]}', '{a}', '{b}', '{"a": {"b": -1}}', 10, 1)$$),
	($$SELECT * FROM dx.markov_quilt_scale('{"attributes": ["a", "b"]}', '{a}', '{b}', '{"a": {"b": "x"}}', 10, 1)$$),
	($$SELECT * FROM dx.markov_quilt_scale('[1]', '{a}', '{b}', '{}', 10, 1)$$),
	($$SELECT * FROM dx.markov_quilt_scale('{"attributes": ["a", "b"]}', '{a}', '{b}', '{}', 10, 0)$$)
) AS t(q);

-- Table releases under a declared Bayesian network (§6.6, APMQM, Algorithm 3): Example 1 as a
-- table of 500 students. income is sensitive; income and gender influence SAT, gender influences
-- height and weight, height influences weight. Declared max-influences: the quilt {gender} 0.3, the
-- quilt {gender, sat} computed from a declared parameter table (Definition 8: the largest log-ratio
-- of its rows, ln(0.5/0.4) = 0.2231). Pure epsilon; no record privacy, so exact answers are checkable.
SET dxpriv.test_seed = 15;
CREATE TABLE students (id int PRIMARY KEY, sat int, height int, weight int, gender int, income int);
INSERT INTO students SELECT i, 400 + (i * 37) % 1200, 150 + (i * 13) % 50, 50 + (i * 7) % 50, i % 2, (i * 11) % 10
FROM generate_series(1, 500) AS i;
SELECT dx.protect_table('students', 'Infinity');
SELECT dx.set_column('students', 'sat', '{"min": 200, "max": 1600}', '{"type": "absolute", "scale": 100}');
SELECT dx.set_column('students', 'height', '{"min": 140, "max": 210}', '{"type": "absolute", "scale": 5}');
SELECT dx.set_column('students', 'weight', '{"min": 40, "max": 120}', '{"type": "absolute", "scale": 5}');
SELECT dx.set_column('students', 'income', '{"min": 0, "max": 10}', '{"type": "absolute", "scale": 1}');
SELECT dx.protect_attribute('students', 'income', 0.2,
	'{"family": "bayesian_network", "attributes": ["sat", "height", "weight", "gender", "income"],
	  "edges": [["income", "sat"], ["gender", "sat"], ["gender", "height"], ["gender", "weight"], ["height", "weight"]],
	  "influences": {"gender": 0.3, "gender, sat": [[0.5, 0.5], [0.4, 0.6]]}}', epsilon => 1.0, record_privacy => false);
SELECT attribute, family, attributes, edges, quilts, round(influences[2]::numeric, 9) AS computed_influence, epsilon, delta
FROM dx.attribute_policies WHERE relid = 'students'::regclass;
-- height and weight lie outside N = {income, sat} of the quilt {gender}: no attribute noise; sat is
-- in the quilt {gender, sat} (influence 0.2231 < 1), whose N = {income}: no noise either; income
-- itself is always nearby: trivial bound (10 - 0) / 1 for the mean, 500 * 10 for the sum.
SELECT c AS col, component, protects, epsilon, delta, sensitivity, data_variance, round(noise_sd::numeric, 6) AS noise_sd,
	binding, noise, scale, quilt
FROM unnest(ARRAY['height', 'weight', 'sat', 'income']) AS c, LATERAL dx.explain_attribute('students', c);
SELECT component, sensitivity, scale, quilt FROM dx.explain_attribute('students', 'income', 'sum');
SELECT cell, kind, component, epsilon, noise_scale, noise, query_epsilon, query_delta
FROM dx.explain('SELECT dx.attr_avg(''students'', ''income'')');
SELECT err($$SELECT dx.attr_avg('students', 'height')$$);
SELECT dx.grant_attribute_budget(current_user::regrole, 'students', 5, 1e-4);
SELECT dx.attr_avg('students', 'height') = (SELECT avg(height) FROM students) AS exact_height,
	dx.attr_sum('students', 'sat') = (SELECT sum(sat) FROM students) AS exact_sat_sum;
SET dxpriv.test_seed = 15;
SELECT round(dx.attr_avg('students', 'income')::numeric, 6) AS attr_avg_income, avg(income) AS exact FROM students;
SELECT budget, mechanism, epsilon, delta, scales, query FROM dx.ledger WHERE relid = 'students'::regclass ORDER BY id;
SELECT attr_spent, attr_delta_spent, attr_remaining FROM dx.budgets WHERE "table" = 'students'::regclass;
-- budget 5 at 1 per release: two more, then refused with nothing spent
SELECT dx.attr_avg('students', 'weight') = (SELECT avg(weight) FROM students) AS exact_weight;
SELECT dx.attr_avg(weight) AS aggregate_spelling FROM students \gset
SELECT :aggregate_spelling = avg(weight) AS exact_weight_again FROM students;
SELECT err($$SELECT dx.attr_avg('students', 'weight')$$);
SELECT attr_spent FROM dx.budgets WHERE "table" = 'students'::regclass;
SELECT dx.grant_attribute_budget(current_user::regrole, 'students', 100, 1e-3);

-- dx.attr_count: Example 1's counts as SQL. "taller than 168 cm" (A = {height}) lies outside
-- N = {income, sat} of the quilt {gender}: exact. "Taller than 168 cm with SAT > 1300" (A = {height,
-- sat}) lies outside N = {income} of the declared quilt {gender, sat} (influence 0.2231 < 1): exact
-- too. A count on income itself (always nearby): Delta F = n = 500, the trivial Lap(500 / 1).
-- NULL (every row): the public row count, exact. The condition runs on declared points only.
SELECT cell, kind, component, epsilon, noise_scale, noise
FROM dx.explain('SELECT dx.attr_count(''students'', ''height > 168'')');
SELECT cell, component, noise_scale FROM dx.explain('SELECT dx.attr_count(''students'', ''income > 5'')');
SELECT cell, component, noise_scale FROM dx.explain('SELECT dx.attr_count(''students'', ''height > 168 AND sat > 1300'')');
SELECT dx.attr_count('students', 'height > 168') = (SELECT count(*) FROM students WHERE height > 168) AS exact_tall,
	dx.attr_count('students') = 500 AS exact_all,
	dx.attr_count('students', 'weight BETWEEN 60 AND 80 OR height < 150') =
		(SELECT count(*) FROM students WHERE weight BETWEEN 60 AND 80 OR height < 150) AS exact_or;
SELECT dx.attr_count('students', 'height > 168 AND sat > 1300') =
	(SELECT count(*) FROM students WHERE height > 168 AND sat > 1300) AS exact_tall_sat;
SET dxpriv.test_seed = 16;
SELECT round(dx.attr_count('students', 'income > 5')::numeric, 6) AS noisy_income_count,
	(SELECT count(*) FROM students WHERE income > 5) AS exact;
SELECT mechanism, epsilon, scales, query FROM dx.ledger WHERE relid = 'students'::regclass ORDER BY id DESC LIMIT 5;
-- refused before any charge: columns outside the network or undeclared, subqueries, volatile
-- functions, injected statements, an empty condition
SELECT attr_spent AS spent_before FROM dx.budgets WHERE "table" = 'students'::regclass \gset
SELECT q, err(q) FROM (VALUES
	($$SELECT dx.attr_count('students', 'id > 3')$$),
	($$SELECT dx.attr_count('students', 'gender = 1')$$),
	($$SELECT dx.attr_count('students', 'sat IN (SELECT sat FROM students WHERE id = 1)')$$),
	($$SELECT dx.attr_count('students', 'random() < sat')$$),
	($$SELECT dx.attr_count('students', 'true) FROM students WHERE (id = 1')$$),
	($$SELECT dx.attr_count('students', 'true; DELETE FROM students')$$),
	($$SELECT dx.attr_count('students', '')$$),
	($$SELECT dx.attr_count(NULL, 'sat > 1')$$),
	($$SELECT dx.attr_count('students', 'pg_catalog.pg_sleep(1) IS NULL')$$),
	($$SELECT dx.attr_count('pg_class', 'relpages > 1')$$),
	($$SELECT dx.attr_count('students', repeat('NOT ', 1100) || 'sat > 1')$$)
) AS t(q);
SELECT attr_spent = :spent_before AS nothing_spent FROM dx.budgets WHERE "table" = 'students'::regclass;
-- 900 levels of nesting (an even number of NOT: the same condition) are analysed; 1100 are refused above
SELECT noise_scale FROM dx.explain(format('SELECT dx.attr_count(%L, %L)', 'students', repeat('NOT ', 900) || 'height > 168'));
-- The table is read by a deparsed lookup: the session's extra_float_digits (-15: one significant
-- digit) must not print its domain constants 140, 210 as 1e+02, 2e+02, which mapped the rows on
-- another domain (wrong counts, and a free error oracle "some row is taller than 170" in explain).
SET extra_float_digits = -15;
SELECT cell, component, noise_scale FROM dx.explain('SELECT dx.attr_count(''students'', ''height > 168'')');
SELECT dx.attr_count('students', 'height > 168') = (SELECT count(*) FROM students WHERE height > 168) AS exact_tall_short_floats;
RESET extra_float_digits;

-- Mixed families on one table: a gaussian policy on gender beside the network's income. A release
-- satisfies both: the APGM Gaussian and the Markov quilt Laplace are added (independent noises:
-- post-processing for each guarantee) and the release spends epsilon 1.0 + 0.5, delta 1e-5.
SELECT dx.protect_attribute('students', 'gender', 0.2,
	'{"family": "gaussian", "attributes": ["height", "gender", "income"], "covariance": [[100, 1, 0], [1, 0.25, 0], [0, 0, 8]]}',
	epsilon => 0.5, record_privacy => false);
SELECT component, protects, epsilon, delta, round(sensitivity::numeric, 6) AS sensitivity, round(noise_sd::numeric, 6) AS noise_sd,
	binding, noise, round(scale::numeric, 6) AS scale FROM dx.explain_attribute('students', 'height');
SELECT err($$SELECT dx.attr_avg('students', 'sat')$$);  -- sat is not in the gaussian model
SELECT err($$SELECT dx.attr_count('students', 'height > 168')$$);  -- a gaussian policy models means only
SET dxpriv.test_seed = 15;
SELECT round(dx.attr_avg('students', 'height')::numeric, 6) AS mixed_height, round(dx.attr_avg('students', 'income')::numeric, 6) AS mixed_income;
SELECT mechanism, epsilon, delta, array_length(scales, 1) AS n_scales FROM dx.ledger
WHERE relid = 'students'::regclass ORDER BY id DESC LIMIT 2;

-- §6.5: a gaussian policy whose data are only approximately Gaussian (declared lambda 0.1 within
-- eta 1e-6): every release spends (0.5 + 2 * 0.1, e^0.1 * 1e-5 + 1e-6) = (0.7, 1.2051709e-5).
SELECT dx.protect_attribute('students', 'gender', 0.2,
	'{"family": "gaussian", "attributes": ["height", "gender", "income"], "covariance": [[100, 1, 0], [1, 0.25, 0], [0, 0, 8]],
	  "approximation": {"lambda": 0.1, "eta": 1e-6}}', epsilon => 0.5, record_privacy => false);
SELECT approximation_lambda, approximation_eta FROM dx.attribute_policies WHERE relid = 'students'::regclass AND attribute = 'gender';
SELECT component, protects, round(epsilon::numeric, 9) AS epsilon, round(delta::numeric, 12) AS delta FROM dx.explain_attribute('students', 'height');
SELECT round(query_epsilon::numeric, 9) AS query_epsilon, round(query_delta::numeric, 12) AS query_delta
FROM dx.explain('SELECT dx.attr_avg(''students'', ''height'')') LIMIT 1;
SELECT dx.attr_avg('students', 'height') IS NOT NULL AS released;
SELECT mechanism, round(epsilon::numeric, 9) AS epsilon, round(delta::numeric, 12) AS delta FROM dx.ledger
WHERE relid = 'students'::regclass ORDER BY id DESC LIMIT 1;
SELECT dx.unprotect_attribute('students', 'gender');

-- Wasserstein mechanism releases (§6.7) on the seed's Example 2: 4 records, passed (released) and
-- female (protected) both 0/1, p1 = P(passed | female), p2 = P(passed | male) within declared
-- ranges; diameter 1 hides the share of women entirely (all pairs of counts 0..4). W = 1, 2, 4 for
-- [0.4, 0.6]^2, [0.3, 0.7]^2, [0, 1]^2; sum scale W / epsilon, mean W / (4 epsilon).
CREATE TABLE exam (id int PRIMARY KEY, passed int, female int, score int);
INSERT INTO exam VALUES (1, 1, 1, 50), (2, 0, 1, 70), (3, 1, 0, 65), (4, 1, 0, 90);
SELECT dx.protect_table('exam', 'Infinity');
SELECT dx.set_column('exam', 'passed', '{"min": 0, "max": 1, "step": 1}', '{"type": "absolute", "scale": 1}');
SELECT dx.set_column('exam', 'female', '{"min": 0, "max": 1, "step": 1}', '{"type": "absolute", "scale": 1}');
SELECT dx.set_column('exam', 'score', '{"min": 0, "max": 100}', '{"type": "absolute", "scale": 10}');
SELECT dx.grant_attribute_budget(current_user::regrole, 'exam', 10, 1e-4);
CREATE FUNCTION pg_temp.wasserstein_rows(r text) RETURNS TABLE (kind text, component text, protects text,
	epsilon float8, delta float8, sensitivity float8, scale float8, noise_sd numeric)
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM dx.protect_attribute('exam', 'female', 1.0,
		format('{"family": "binary_conditional", "released": "passed", "p1": %s, "p2": %s, "grid": 0.1}', r, r)::jsonb,
		epsilon => 0.5, record_privacy => false);
	RETURN QUERY SELECT k, e.component, e.protects, e.epsilon, e.delta, e.sensitivity, e.scale, round(e.noise_sd::numeric, 6)
	FROM unnest(ARRAY['sum', 'avg']) AS k, LATERAL dx.explain_attribute('exam', 'passed', k) AS e;
END $$;
SELECT * FROM pg_temp.wasserstein_rows('[0.4, 0.6]');
SELECT * FROM pg_temp.wasserstein_rows('[0.3, 0.7]');
SELECT * FROM pg_temp.wasserstein_rows('[0, 1]');
-- a smaller secret (diameter 0.5: counts at most 2 apart) on [0, 1]^2: W = 2; the protected column itself: W = window
SELECT dx.protect_attribute('exam', 'female', 0.5,
	'{"family": "binary_conditional", "released": "passed", "p1": [0, 1], "p2": [0, 1], "grid": 0.25}', epsilon => 0.5, record_privacy => false);
SELECT component, protects, sensitivity, scale FROM dx.explain_attribute('exam', 'passed', 'sum');
SELECT component, protects, sensitivity, scale FROM dx.explain_attribute('exam', 'female', 'sum');
SELECT err($$SELECT dx.attr_avg('exam', 'score')$$);
SET dxpriv.test_seed = 15;
SELECT dx.attr_sum('exam', 'passed') AS attr_sum_passed;
SELECT budget, mechanism, epsilon, delta, scales FROM dx.ledger WHERE relid = 'exam'::regclass ORDER BY id;
-- a model too large to compute exactly is refused (54000) before anything is charged
CREATE TABLE big01 (id int PRIMARY KEY, passed int, female int);
INSERT INTO big01 SELECT i, i % 2, (i / 2) % 2 FROM generate_series(1, 2000) AS i;
SELECT dx.protect_table('big01', 'Infinity');
SELECT dx.set_column('big01', 'passed', '{"min": 0, "max": 1, "step": 1}', '{"type": "absolute", "scale": 1}');
SELECT dx.protect_attribute('big01', 'female', 0.1,
	'{"family": "binary_conditional", "released": "passed", "p1": [0.4, 0.6], "p2": [0.4, 0.6], "grid": 0.01}', record_privacy => false);
SELECT dx.grant_attribute_budget(current_user::regrole, 'big01', 10, 1e-4);
SELECT err($$SELECT dx.attr_sum('big01', 'passed')$$);
SELECT count(*) AS charged FROM dx.ledger WHERE relid = 'big01'::regclass;
-- a released column declared with a wider domain than 0/1 is refused
SELECT dx.set_column('exam', 'passed', '{"min": 0, "max": 2, "step": 1}', '{"type": "absolute", "scale": 1}');
SELECT err($$SELECT dx.attr_sum('exam', 'passed')$$);
RESET dxpriv.test_seed;

-- Bad declarations of the new families.
SELECT q, err(q) FROM (VALUES
	($$SELECT dx.protect_attribute('students', 'income', 0.2, '{"family": "bayesian_network", "attributes": ["sat", "income"], "edges": [["income", "sat"], ["sat", "income"]], "influences": {}}')$$),
	($$SELECT dx.protect_attribute('students', 'income', 0.2, '{"family": "bayesian_network", "attributes": ["sat", "income", "shoe"], "influences": {}}')$$),
	($$SELECT dx.protect_attribute('students', 'income', 0.2, '{"family": "bayesian_network", "attributes": ["sat", "income"], "edges": [["income", "gender"]], "influences": {}}')$$),
	($$SELECT dx.protect_attribute('students', 'income', 0.2, '{"family": "bayesian_network", "attributes": ["sat", "income"], "influences": {"income": 0.1}}')$$),
	($$SELECT dx.protect_attribute('students', 'income', 0.2, '{"family": "bayesian_network", "attributes": ["sat", "income"], "influences": {"sat": -0.1}}')$$),
	($$SELECT dx.protect_attribute('students', 'income', 0.2, '{"family": "bayesian_network", "attributes": ["sat", "income"], "influences": {"sat": [[0.5, 0.6], [0.5, 0.5]]}}')$$),
	($$SELECT dx.protect_attribute('students', 'income', 0.2, '{"family": "bayesian_network", "attributes": ["sat", "income"], "influences": {"sat": "high"}}')$$),
	($$SELECT dx.protect_attribute('students', 'income', 0.2, '{"family": "bayesian_network", "attributes": ["sat", "income"]}')$$),
	($$SELECT dx.protect_attribute('students', 'income', 0.2, '{"family": "bayesian_network", "attributes": ["sat", "income"], "influences": {}, "covariance": [[1]]}')$$),
	($$SELECT dx.protect_attribute('students', 'height', 0.2, '{"family": "bayesian_network", "attributes": ["sat", "income"], "influences": {}}')$$),
	($$SELECT dx.protect_attribute('students', 'income', 0.2, '{"family": "bayesian_network", "attributes": ["sat", "income"], "influences": {}}', delta => 1e-5)$$),
	($$SELECT dx.protect_attribute('students', 'income', 0.2, '{"family": "bayesian_network", "attributes": ["sat", "income"], "influences": {}}', epsilon => 0.5, calibration => 'classical')$$),
	($$SELECT dx.protect_attribute('exam', 'female', 1, '{"family": "binary_conditional", "released": "female", "p1": [0, 1], "p2": [0, 1], "grid": 0.1}')$$),
	($$SELECT dx.protect_attribute('exam', 'female', 1, '{"family": "binary_conditional", "released": "passed", "p1": [0.6, 0.4], "p2": [0, 1], "grid": 0.1}')$$),
	($$SELECT dx.protect_attribute('exam', 'female', 1, '{"family": "binary_conditional", "released": "passed", "p1": [0, 1], "p2": [0, 1], "grid": 0}')$$),
	($$SELECT dx.protect_attribute('exam', 'female', 1, '{"family": "binary_conditional", "released": "passed", "p1": [0, 1], "p2": [0, 1.5], "grid": 0.1}')$$),
	($$SELECT dx.protect_attribute('exam', 'female', 1, '{"family": "binary_conditional", "released": "passed", "p1": [0, 1], "grid": 0.1}')$$),
	($$SELECT dx.protect_attribute('exam', 'female', 1, '{"family": "binary_conditional", "released": "nope", "p1": [0, 1], "p2": [0, 1], "grid": 0.1}')$$),
	($$SELECT dx.protect_attribute('exam', 'female', 1, '{"family": "binary_conditional", "released": "passed", "p1": [0, 1], "p2": [0, 1], "grid": 0.1, "n": 4}')$$),
	($$SELECT dx.protect_attribute('exam', 'female', 1, '{"family": "gaussian", "attributes": ["female"], "covariance": [[1]], "approximation": {"lambda": -1, "eta": 0}}')$$),
	($$SELECT dx.protect_attribute('exam', 'female', 1, '{"family": "gaussian", "attributes": ["female"], "covariance": [[1]], "approximation": {"lambda": 0.1, "eta": 1}}')$$),
	($$SELECT dx.protect_attribute('exam', 'female', 1, '{"family": "gaussian", "attributes": ["female"], "covariance": [[1]], "approximation": {"lambda": 0.1}}')$$),
	($$SELECT dx.protect_attribute('exam', 'female', 1, '{"family": "gaussian", "attributes": ["female"], "covariance": [[1]], "approximation": {"lambda": 20, "eta": 0.5}}', delta => 1e-5)$$)
) AS t(q);
