-- Noise scales recorded in the ledger: d_X-private calibration against hand-computed values.
CREATE FUNCTION last_scales() RETURNS float8[] LANGUAGE sql AS
	'SELECT scales FROM dx.ledger ORDER BY id DESC LIMIT 1';

-- people: presence 1, age absolute/10, sex discrete 2, native per_value {Y:1, N:2}
SET dxpriv.epsilon = 0.5;
SELECT dx.count(*) IS NOT NULL FROM people;
SELECT last_scales() AS count_star;                  -- presence edge: 1 / 0.5
SELECT dx.count(*) IS NOT NULL FROM people WHERE age > 30;
SELECT last_scales() AS age_threshold;               -- neighbours 30/31 at distance 0.1: 10 / 0.5
SELECT dx.count(*) IS NOT NULL FROM people WHERE sex = 'M';
SELECT last_scales() AS sex_m;                       -- presence edge dominates: 1 / 0.5
SELECT dx.sum(income, 0.25) IS NOT NULL FROM people;
SELECT last_scales() AS income_sum;                  -- max |income| = 10000 over presence 1, eps 0.25
SELECT dx.sum(age) IS NOT NULL FROM people;
SELECT last_scales() AS age_sum;                     -- presence 120, absolute 10 per year: 120 / 0.5
SELECT mechanism, epsilon FROM dx.ledger ORDER BY id DESC LIMIT 1;

-- Example 1 (MECHANISMS.md §3.12(b)), bounded model, epsilon = 1, eps'' = 2
CREATE TABLE ex1 (gender text, native text, age text);
INSERT INTO ex1 SELECT (ARRAY['M','F'])[1 + i % 2], (ARRAY['Y','N'])[1 + (i / 2) % 2], (ARRAY['A','B'])[1 + (i / 4) % 2]
FROM generate_series(0, 199) AS i;
SELECT dx.protect_table('ex1', 'Infinity');
SELECT dx.set_column('ex1', 'gender', '{"values": ["M", "F"]}', '{"type": "discrete", "weight": 2}');
SELECT dx.set_column('ex1', 'native', '{"values": ["Y", "N"]}', '{"type": "per_value", "weights": {"Y": 1, "N": 2}}');
SELECT dx.set_column('ex1', 'age', '{"values": ["A", "B"]}', '{"type": "discrete", "weight": 2}');
SELECT dx.grant_budget(current_user::regrole, 'ex1', 10);
SET dxpriv.epsilon = 1;
SELECT dx.count(*) IS NOT NULL FROM ex1 WHERE native = 'Y';
SELECT last_scales() AS native_y;                    -- 1/epsilon
SELECT dx.count(*) IS NOT NULL FROM ex1 WHERE gender = 'M' AND native = 'Y' AND age = 'A';
SELECT last_scales() AS cell_mya;                    -- 1/epsilon
SELECT dx.count(*) IS NOT NULL FROM ex1 WHERE gender = 'M';
SELECT last_scales() AS gender_m;                    -- 1/eps'' = 0.5
SELECT dx.count(*) IS NOT NULL FROM ex1 WHERE gender = 'M' AND age = 'A';
SELECT last_scales() AS adult_males;                 -- 1/eps'' = 0.5
SELECT dx.count(*) FROM ex1;                          -- bounded model: the row count is public
SELECT last_scales() AS count_star;

-- standard DP: presence 1, no column metric -> textbook Laplace
CREATE TABLE std (x int);
INSERT INTO std SELECT i % 9 - 5 FROM generate_series(1, 50) AS i;
SELECT dx.protect_table('std', 1);
SELECT dx.set_column('std', 'x', '{"min": -5, "max": 3}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'std', 10);
-- count(*) at an explicit epsilon: count a never-null constant
SELECT dx.count(1, 0.5) IS NOT NULL FROM std;
SELECT last_scales() AS count_star_scale;            -- 1 / 0.5
SELECT dx.count(x, 0.5) IS NOT NULL FROM std;
SELECT last_scales() AS count_scale;                 -- 1 / 0.5
SELECT dx.sum(x, 0.5) IS NOT NULL FROM std;
SELECT last_scales() AS sum_scale;                   -- max(|-5|, |3|) / 0.5

-- noisy answers stay near the truth (deterministic with the superuser-only test seed)
SET dxpriv.test_seed = 7;
SELECT abs(dx.count(*) - 1000) < 30 * 2 AS count_close FROM people;
SELECT sum(x) AS true_sum FROM std \gset
SELECT abs(dx.sum(x, 1) - :true_sum) < 30 * 5 AS sum_close FROM std;
-- the same seed gives the same answer; a different seed a different one
SET dxpriv.test_seed = 11;
SELECT dx.sum(x, 1) AS a FROM std \gset
SET dxpriv.test_seed = 11;
SELECT dx.sum(x, 1) = :a AS same_seed_same_answer FROM std;
SET dxpriv.test_seed = 12;
SELECT dx.sum(x, 1) <> :a AS other_seed_other_answer FROM std;
RESET dxpriv.test_seed;
-- the seed is superuser-only
SET ROLE dx_regress_other;
SET dxpriv.test_seed = 1;
RESET ROLE;
