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
