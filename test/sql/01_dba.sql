-- DBA interface: protecting, declaring columns, budgets, and every error path.
\set VERBOSITY default

SELECT dx.protect_table('people');
SELECT relid, presence FROM dx.protected_tables;

-- column declarations
SELECT dx.set_column('people', 'age', '{"min": 0, "max": 120}', '{"type": "absolute", "scale": 10}');
SELECT dx.set_column('people', 'sex', '{"values": ["M", "F"]}', '{"type": "discrete", "weight": 2}');
SELECT dx.set_column('people', 'native', '{"values": ["Y", "N"]}', '{"type": "per_value", "weights": {"Y": 1, "N": 2}}');
SELECT dx.set_column('people', 'income', '{"min": 0, "max": 10000, "step": 10}', '{"type": "none"}');
SELECT dx.set_column('people', 'visit', '{"min": "2024-01-01", "max": "2024-12-31", "step": 7}', '{"type": "absolute", "scale": 14}');
SELECT column_name, domain, metric FROM dx.protected_columns ORDER BY column_name;
-- re-declaring replaces
SELECT dx.set_column('people', 'sex', '{"values": ["M", "F"]}', '{"type": "discrete", "weight": 2}');
SELECT count(*) FROM dx.protected_columns;

-- budgets
SELECT dx.grant_budget('postgres', 'people', 5);
SELECT dx.grant_budget('dx_regress_analyst', 'people', 0.25);
SELECT role, "table", granted, spent, remaining FROM dx.budgets ORDER BY role::text;

-- errors: tables
SELECT dx.protect_table('people', 0);
SELECT dx.protect_table('people', -1);
SELECT dx.protect_table('people', 'NaN');
SELECT dx.protect_table(NULL);
SELECT dx.protect_table('no_such_table');
CREATE VIEW people_view AS SELECT id FROM people;
SELECT dx.protect_table('people_view');
SELECT dx.unprotect_table('people_view');

-- errors: columns
SELECT dx.set_column('people', 'nope', '{"values": ["a"]}', '{"type": "discrete"}');
SELECT dx.set_column('people_view', 'id', '{"min": 0, "max": 9}', '{"type": "discrete"}');
SELECT dx.set_column('people', 'age', NULL, '{"type": "discrete"}');
SELECT dx.set_column('people', 'age', '[1, 2]', '{"type": "discrete"}');
SELECT dx.set_column('people', 'age', '{"min": 0, "max": 120, "stp": 1}', '{"type": "discrete"}');
SELECT dx.set_column('people', 'age', '{"min": 10, "max": 0}', '{"type": "discrete"}');
SELECT dx.set_column('people', 'age', '{"min": 0, "max": 10, "step": 0}', '{"type": "discrete"}');
SELECT dx.set_column('people', 'age', '{"min": 0, "max": 10, "step": 0.5}', '{"type": "discrete"}');
SELECT dx.set_column('people', 'age', '{"min": 0, "max": 1e12}', '{"type": "discrete"}');
SELECT dx.set_column('people', 'age', '{"min": 0}', '{"type": "discrete"}');
SELECT dx.set_column('people', 'age', '{"min": "a", "max": 3}', '{"type": "discrete"}');
SELECT dx.set_column('people', 'age', '{"values": [1, 2], "min": 0}', '{"type": "discrete"}');
SELECT dx.set_column('people', 'age', '{"values": []}', '{"type": "discrete"}');
SELECT dx.set_column('people', 'age', '{"values": [1, 1]}', '{"type": "discrete"}');
SELECT dx.set_column('people', 'age', '{"values": ["one"]}', '{"type": "discrete"}');
SELECT dx.set_column('people', 'sex', '{"min": 0, "max": 1}', '{"type": "discrete"}');
SELECT dx.set_column('people', 'visit', '{"min": "2024-13-01", "max": "2024-12-31"}', '{"type": "discrete"}');
SELECT dx.set_column('people', 'visit', '{"min": "2024-01-01", "max": "2024-12-31", "step": 0.5}', '{"type": "discrete"}');
SELECT dx.set_column('people', 'visit', '{"min": "infinity", "max": "2024-12-31"}', '{"type": "discrete"}');
-- errors: metrics
SELECT dx.set_column('people', 'sex', '{"values": ["M", "F"]}', '{"weight": 2}');
SELECT dx.set_column('people', 'sex', '{"values": ["M", "F"]}', '{"type": "euclid"}');
SELECT dx.set_column('people', 'sex', '{"values": ["M", "F"]}', '{"type": "discrete", "weight": -2}');
SELECT dx.set_column('people', 'sex', '{"values": ["M", "F"]}', '{"type": "discrete", "weight": 0}');
SELECT dx.set_column('people', 'sex', '{"values": ["M", "F"]}', '{"type": "discrete", "weight": "x"}');
SELECT dx.set_column('people', 'sex', '{"values": ["M", "F"]}', '{"type": "discrete", "wieght": 1}');
SELECT dx.set_column('people', 'age', '{"min": 0, "max": 120}', '{"type": "absolute"}');
SELECT dx.set_column('people', 'age', '{"min": 0, "max": 120}', '{"type": "absolute", "scale": 0}');
SELECT dx.set_column('people', 'age', '{"min": 0, "max": 120}', '{"type": "absolute", "scale": "inf"}');
SELECT dx.set_column('people', 'age', '{"min": 0, "max": 120}', '{"type": "per_value", "weights": {"1": 1}}');
SELECT dx.set_column('people', 'native', '{"values": ["Y", "N"]}', '{"type": "per_value", "weights": {"Y": 1}}');
SELECT dx.set_column('people', 'native', '{"values": ["Y", "N"]}', '{"type": "per_value", "weights": {"Q": 1}, "default": 2}');
SELECT dx.set_column('people', 'native', '{"values": ["Y", "N"]}', '{"type": "per_value", "weights": {"Y": -1}, "default": 2}');
SELECT dx.set_column('people', 'native', '{"values": ["Y", "N"]}', '{"type": "per_value", "weights": [1, 2]}');
-- a failed declaration changed nothing
SELECT column_name, metric FROM dx.protected_columns ORDER BY column_name;

-- errors: budgets
SELECT dx.grant_budget('postgres', 'people', 0);
SELECT dx.grant_budget('postgres', 'people', -1);
SELECT dx.grant_budget('postgres', 'people', 'Infinity');
SELECT dx.grant_budget('postgres', 'people', 'NaN');
SELECT dx.grant_budget(NULL, 'people', 1);
SELECT dx.grant_budget('no_such_role', 'people', 1);
SELECT dx.grant_budget('postgres', 'people_view', 1);
SELECT dx.revoke_budget('dx_regress_other', 'people');

-- only the owner may change a policy
SET ROLE dx_regress_other;
SELECT dx.protect_table('people');
SELECT dx.set_column('people', 'age', '{"min": 0, "max": 120}', '{"type": "discrete"}');
SELECT dx.grant_budget('dx_regress_other', 'people', 100);
RESET ROLE;

-- unset and re-set a column
SELECT dx.unset_column('people', 'income');
SELECT dx.unset_column('people', 'income');
SELECT dx.set_column('people', 'income', '{"min": 0, "max": 10000, "step": 10}', '{"type": "none"}');

-- (epsilon, delta): the per-query delta of a table and the delta budgets of roles
CREATE TABLE delta_t (v int);
CREATE TABLE delta_plain (v int);
SELECT dx.protect_table('delta_t', delta => 1e-6);
SELECT relid, presence, delta FROM dx.protected_tables WHERE relid = 'delta_t'::regclass;
SELECT dx.set_delta('delta_t', 1e-9);
SELECT delta FROM dx.protected_tables WHERE relid = 'delta_t'::regclass;
SELECT dx.set_delta('delta_t', 0.001);
SELECT delta FROM dx.protected_tables WHERE relid = 'delta_t'::regclass;
SELECT dx.set_delta('delta_t', 0);
SELECT delta FROM dx.protected_tables WHERE relid = 'delta_t'::regclass;
-- protecting again sets presence and delta (delta defaults to 0); columns stay
SELECT dx.set_column('delta_t', 'v', '{"min": 0, "max": 9}', '{"type": "discrete"}');
SELECT dx.protect_table('delta_t', 2.0, 1e-7);
SELECT presence, delta FROM dx.protected_tables WHERE relid = 'delta_t'::regclass;
SELECT dx.protect_table('delta_t');
SELECT presence, delta FROM dx.protected_tables WHERE relid = 'delta_t'::regclass;
SELECT count(*) AS declared FROM dx.protected_columns WHERE relid = 'delta_t'::regclass;

-- delta budgets; dx.budgets appends delta_granted, delta_spent, delta_remaining, per_query_delta
SELECT dx.set_delta('delta_t', 1e-6);
SELECT dx.grant_budget('dx_regress_analyst', 'delta_t', 1.0, delta => 1e-5);
SELECT dx.grant_budget('postgres', 'delta_t', 2.0);
SELECT role, "table", granted, spent, remaining, delta_granted, delta_spent, delta_remaining, per_query_delta
FROM dx.budgets WHERE "table" = 'delta_t'::regclass ORDER BY role::text;
SELECT attnum, attname, format_type(atttypid, atttypmod) FROM pg_attribute
WHERE attrelid = 'dx.budgets'::regclass AND attnum > 0 ORDER BY attnum;
SELECT a.attrelid::regclass AS catalog, attname, format_type(atttypid, atttypmod), attnotnull,
       pg_get_expr(d.adbin, d.adrelid) AS default
FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attrelid IN ('dx.ledger'::regclass, 'dx.budget_grants'::regclass, 'dx.protected_tables'::regclass)
  AND a.attname LIKE '%delta%' ORDER BY a.attrelid::regclass::text, a.attnum;
-- the whole delta range of a grant, positionally after refresh
SELECT dx.grant_budget('dx_regress_analyst', 'delta_t', 1.0, NULL, 1);
SELECT dx.grant_budget('dx_regress_analyst', 'delta_t', 1.0, NULL, 0);
SELECT delta_granted FROM dx.budgets WHERE role = 'dx_regress_analyst'::regrole AND "table" = 'delta_t'::regclass;
SELECT dx.grant_budget('dx_regress_analyst', 'delta_t', 1.0, delta => 1e-5);

-- errors: delta of a table
SELECT dx.set_delta('delta_t', -1e-9);
SELECT dx.set_delta('delta_t', 0.0011);
SELECT dx.set_delta('delta_t', 'NaN');
SELECT dx.set_delta('delta_t', 'Infinity');
SELECT dx.set_delta('delta_t', '-Infinity');
SELECT dx.set_delta('delta_t', NULL);
SELECT dx.set_delta('delta_plain', 1e-6);
SELECT dx.set_delta('no_such_table', 1e-6);
SELECT dx.protect_table('delta_plain', 1.0, -1);
SELECT dx.protect_table('delta_plain', delta => 'NaN');
SELECT dx.protect_table('delta_plain', delta => 0.01);
SELECT dx.protect_table('delta_plain', delta => NULL);
SELECT dx.protect_table('delta_t', 1.0, 1);
-- errors: delta budgets
SELECT dx.grant_budget('postgres', 'delta_t', 1, NULL, -1e-9);
SELECT dx.grant_budget('postgres', 'delta_t', 1, delta => 1.5);
SELECT dx.grant_budget('postgres', 'delta_t', 1, delta => 'NaN');
SELECT dx.grant_budget('postgres', 'delta_t', 1, delta => 'Infinity');
SELECT dx.grant_budget('postgres', 'delta_t', 1, delta => NULL);
SELECT dx.grant_budget('postgres', 'delta_plain', 1, delta => 1e-6);
-- only the owner sets a delta or a delta budget
SET ROLE dx_regress_other;
SELECT dx.set_delta('delta_t', 1e-9);
SELECT dx.protect_table('delta_t', 1.0, 1e-9);
SELECT dx.grant_budget('dx_regress_other', 'delta_t', 1, delta => 1e-3);
RESET ROLE;
-- the catalog refuses invalid values written directly (terse: the failing rows hold timestamps)
\set VERBOSITY terse
UPDATE dx.protected_tables SET delta = 'NaN' WHERE relid = 'delta_t'::regclass;
UPDATE dx.protected_tables SET delta = 0.002 WHERE relid = 'delta_t'::regclass;
UPDATE dx.protected_tables SET delta = -1e-9 WHERE relid = 'delta_t'::regclass;
UPDATE dx.budget_grants SET delta_granted = 1.5 WHERE relid = 'delta_t'::regclass;
UPDATE dx.budget_grants SET delta_granted = 'NaN' WHERE relid = 'delta_t'::regclass;
UPDATE dx.budget_grants SET delta_spent = -1 WHERE relid = 'delta_t'::regclass;
UPDATE dx.budget_grants SET delta_spent = 'Infinity' WHERE relid = 'delta_t'::regclass;
UPDATE dx.budget_grants SET delta_spent = 'NaN' WHERE relid = 'delta_t'::regclass;
\set VERBOSITY default
-- failed calls changed nothing
SELECT count(*) AS protected FROM dx.protected_tables WHERE relid = 'delta_plain'::regclass;
SELECT presence, delta FROM dx.protected_tables WHERE relid = 'delta_t'::regclass;
SELECT role, granted, delta_granted FROM dx.budgets WHERE "table" = 'delta_t'::regclass ORDER BY role::text;

-- periods: delta_spent counts only in its period, like spent (the worker's spending simulated)
UPDATE dx.budget_grants SET spent = 0.5, delta_spent = 4e-6, refresh = '1 day',
	refresh_anchor = now() - interval '3 days', period_start = now() - interval '3 days',
	period_end = now() + interval '1 hour'
WHERE role = 'dx_regress_analyst'::regrole AND relid = 'delta_t'::regclass;
SELECT spent, remaining, delta_spent, round(delta_remaining::numeric, 12) AS delta_remaining FROM dx.budgets
WHERE role = 'dx_regress_analyst'::regrole AND "table" = 'delta_t'::regclass;
-- re-granting with the same refresh keeps the period's delta spending
SELECT dx.grant_budget('dx_regress_analyst', 'delta_t', 1.0, '1 day', 2e-5);
SELECT spent, delta_granted, delta_spent, round(delta_remaining::numeric, 12) AS delta_remaining FROM dx.budgets
WHERE role = 'dx_regress_analyst'::regrole AND "table" = 'delta_t'::regclass;
-- a period that has ended reads delta_spent = 0
UPDATE dx.budget_grants SET period_end = now() - interval '1 hour'
WHERE role = 'dx_regress_analyst'::regrole AND relid = 'delta_t'::regclass;
SELECT spent, remaining, delta_spent, delta_remaining, period_start > now() - interval '1 day' AS current_period
FROM dx.budgets WHERE role = 'dx_regress_analyst'::regrole AND "table" = 'delta_t'::regclass;
-- revoking freezes the delta budget at the current period's spending, like epsilon
UPDATE dx.budget_grants SET period_end = now() + interval '1 hour'
WHERE role = 'dx_regress_analyst'::regrole AND relid = 'delta_t'::regclass;
SELECT dx.revoke_budget('dx_regress_analyst', 'delta_t');
SELECT granted, spent, delta_granted, delta_spent, delta_remaining, refresh FROM dx.budgets
WHERE role = 'dx_regress_analyst'::regrole AND "table" = 'delta_t'::regclass;

SELECT dx.unprotect_table('delta_t');
DROP TABLE delta_t, delta_plain;
