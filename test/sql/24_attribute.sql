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
