-- Budgets: charging, exhaustion, missing budgets, revocation, prepared statements.
-- every statement here must be charged: switch answer reuse off (tested in 12_cache)
SET dxpriv.cache_lifetime = 0;
CREATE TABLE small (a int);
INSERT INTO small SELECT i % 5 FROM generate_series(1, 20) AS i;
SELECT dx.protect_table('small');
SELECT dx.set_column('small', 'a', '{"min": 0, "max": 4}', '{"type": "discrete", "weight": 1}');
GRANT SELECT ON small TO dx_regress_analyst, dx_regress_other;

-- no budget at all
SET ROLE dx_regress_other;
SELECT dx.count(*) FROM small;
RESET ROLE;

-- a budget of 0.25 admits two queries at 0.1 and refuses the third (and answers nothing)
SELECT dx.grant_budget('dx_regress_analyst', 'small', 0.25);
SET ROLE dx_regress_analyst;
SET dxpriv.epsilon = 0.1;
SELECT dx.count(*) IS NOT NULL AS answered FROM small;
SELECT dx.count(*) IS NOT NULL AS answered FROM small WHERE a > 2;
SELECT dx.count(*) IS NOT NULL AS answered FROM small;
-- a smaller epsilon still fits
SELECT dx.count(1, 0.05) IS NOT NULL AS answered FROM small;
SELECT dx.count(a, 0.05) IS NOT NULL AS answered FROM small;
SELECT role, "table", granted, round(spent::numeric, 6) AS spent, round(remaining::numeric, 6) AS remaining
FROM dx.budgets WHERE "table" = 'small'::regclass;
-- several aggregates are charged together, all or nothing
SELECT dx.count(a, 0.04), dx.count(1, 0.04) FROM small;
RESET ROLE;
SELECT count(*) AS ledger_rows, round(sum(epsilon)::numeric, 6) AS charged FROM dx.ledger
WHERE relid = 'small'::regclass AND role = 'dx_regress_analyst'::regrole;

-- revoking stops spending but keeps what was spent
SELECT dx.revoke_budget('dx_regress_analyst', 'small');
SELECT granted = spent AS frozen FROM dx.budgets WHERE role = 'dx_regress_analyst'::regrole AND "table" = 'small'::regclass;
SET ROLE dx_regress_analyst;
SELECT dx.count(a, 0.001) FROM small;
RESET ROLE;

-- every execution of a prepared statement is charged
SELECT dx.grant_budget(current_user::regrole, 'small', 1);
PREPARE q AS SELECT dx.count(*) IS NOT NULL FROM small WHERE a = 1;
EXECUTE q;
EXECUTE q;
EXECUTE q;
SELECT round(spent::numeric, 6) AS spent FROM dx.budgets WHERE role = current_user::regrole AND "table" = 'small'::regclass;
-- EXPLAIN without ANALYZE spends nothing
EXPLAIN (COSTS OFF) SELECT dx.count(*) FROM small WHERE a = 1;
SELECT round(spent::numeric, 6) AS spent FROM dx.budgets WHERE role = current_user::regrole AND "table" = 'small'::regclass;
-- a policy change re-analyses cached plans: the prepared statement now sees the new metric
SELECT scales FROM dx.ledger ORDER BY id DESC LIMIT 1;
SELECT dx.set_column('small', 'a', '{"min": 0, "max": 4}', '{"type": "discrete", "weight": 0.5}');
EXECUTE q;
SELECT scales FROM dx.ledger ORDER BY id DESC LIMIT 1;
DEALLOCATE q;

-- charges are committed by the ledger worker, outside the caller's transaction: neither ROLLBACK
-- nor ROLLBACK TO SAVEPOINT refunds them, and the ledger keeps their rows
BEGIN;
SELECT dx.count(*) IS NOT NULL AS answered FROM small WHERE a = 2;
ROLLBACK;
BEGIN;
SAVEPOINT s;
SELECT dx.count(*) IS NOT NULL AS answered FROM small WHERE a = 3;
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT round(spent::numeric, 6) AS spent FROM dx.budgets WHERE role = current_user::regrole AND "table" = 'small'::regclass;
SELECT count(*) AS ledger_rows FROM dx.ledger WHERE relid = 'small'::regclass AND role = current_user::regrole;

-- a per-query cap refuses larger queries before anything is charged
SELECT dx.set_query_cap('small', 0.2);
SELECT dx.count(a, 0.3) FROM small;
SELECT dx.count(a, 0.15), dx.count(1, 0.15) FROM small;
SELECT dx.count(a, 0.2) IS NOT NULL AS answered FROM small;
SELECT round(spent::numeric, 6) AS spent, per_query_cap FROM dx.budgets
WHERE role = current_user::regrole AND "table" = 'small'::regclass;
SELECT dx.set_query_cap('small', 0);
SET ROLE dx_regress_analyst;
SELECT dx.set_query_cap('small', 5);
RESET ROLE;
SELECT dx.set_query_cap('small', NULL);

-- refresh periods: a new refresh interval starts a period now and keeps what was spent
SELECT dx.grant_budget(current_user::regrole, 'small', 1, '1 day');
SELECT granted, round(spent::numeric, 6) AS spent, refresh, period_end - period_start AS period
FROM dx.budgets WHERE role = current_user::regrole AND "table" = 'small'::regclass;
SELECT dx.grant_budget(current_user::regrole, 'small', 1, '0 seconds');
SELECT dx.grant_budget(current_user::regrole, 'small', 1, '-1 day');
-- revoking also stops the refresh
SELECT dx.revoke_budget(current_user::regrole, 'small');
SELECT granted = spent AS frozen, refresh IS NULL AS no_refresh FROM dx.budgets
WHERE role = current_user::regrole AND "table" = 'small'::regclass;

-- the ledger is not writable by analysts
SET ROLE dx_regress_analyst;
DELETE FROM dx.ledger;
UPDATE dx.budget_grants SET spent = 0;
RESET ROLE;
-- nor by its owner: it is append-only
DELETE FROM dx.ledger;
UPDATE dx.ledger SET epsilon = 0;
TRUNCATE dx.ledger;
