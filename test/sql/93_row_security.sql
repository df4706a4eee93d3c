-- Row-level security on a protected table (found by review6): an analyst's dx statement reads the
-- table as its owner, whom the table's policies exempt, so a policy that restricts the analyst to
-- some rows did not restrict its answers (a count over every row). Now an analyst's statement on a
-- protected table with row-level security on is refused before anything is charged, unless the
-- analyst has BYPASSRLS (answers may cover every row); partitions' own policies are not applied by
-- PostgreSQL to a read of their parent and do not refuse it; the owner's statements are unchanged.
-- Attack tests: the policy enabled after a statement was memoized / cached (same session, prepared
-- statement, PL/pgSQL), FORCE ROW LEVEL SECURITY, a partition read directly, grouped and joined
-- shapes, and the ledger unchanged by every refusal.
\set SHOW_CONTEXT never
CREATE TABLE rls_t (region text, v int);
INSERT INTO rls_t SELECT CASE WHEN i % 3 = 0 THEN 'north' ELSE 'south' END, i % 100 FROM generate_series(1, 3000) AS i;
SELECT dx.protect_table('rls_t', 'Infinity');
SELECT dx.set_column('rls_t', 'v', '{"min": 0, "max": 99}', '{"type": "none"}');
SELECT dx.set_column('rls_t', 'region', '{"values": ["north", "south"]}', '{"type": "none"}');
CREATE ROLE dx_regress_rls;
SELECT dx.add_analyst('dx_regress_rls');
SELECT dx.grant_budget('dx_regress_rls', 'rls_t', 1e6);
SELECT dx.grant_budget(current_user::regrole, 'rls_t', 1e6);
GRANT SELECT ON rls_t TO dx_regress_rls;
CREATE POLICY rls_north ON rls_t FOR SELECT TO dx_regress_rls USING (region = 'north');
CREATE FUNCTION rls_charges() RETURNS bigint LANGUAGE sql AS
$$ SELECT count(*) FROM dx.ledger WHERE role = 'dx_regress_rls'::regrole $$;
SET dxpriv.cache_lifetime = 0;
CREATE FUNCTION rls_fn() RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE r float8;
BEGIN SELECT dx.count(*) INTO r FROM rls_t; RETURN r; END $$;

-- without row-level security: exact answers over every row (infinite epsilon, metric none)
SET ROLE dx_regress_rls;
SELECT dx.count(*) AS all_rows FROM rls_t;
PREPARE rls_p AS SELECT dx.count(*) FROM rls_t;
EXECUTE rls_p;
SELECT rls_fn() AS in_plpgsql;
RESET ROLE;
SELECT rls_charges() AS charges_before;

-- 1. the policy on: every shape refused (memoized, prepared, PL/pgSQL, grouped), nothing charged
ALTER TABLE rls_t ENABLE ROW LEVEL SECURITY;
SET ROLE dx_regress_rls;
SELECT err('SELECT dx.count(*) FROM rls_t') AS memoized_count;
SELECT err('EXECUTE rls_p') AS prepared;
SELECT err('SELECT rls_fn()') AS plpgsql;
SELECT err($$SELECT region, dx.count(*), dx.sum(v) FROM rls_t GROUP BY region$$) AS grouped;
SELECT err($$SELECT dx.avg(v) FROM rls_t WHERE region = 'south'$$) AS filtered;
SELECT err('SELECT region FROM rls_t LIMIT 1') AS raw_read;
RESET ROLE;
SELECT rls_charges() AS charges_after_refusals;
-- the owner (exempt from the policy) is answered as before
SELECT dx.count(*) AS owner_count FROM rls_t;

-- 2. FORCE ROW LEVEL SECURITY: still refused
ALTER TABLE rls_t FORCE ROW LEVEL SECURITY;
SET ROLE dx_regress_rls;
SELECT err('SELECT dx.count(*) FROM rls_t') AS forced;
RESET ROLE;
ALTER TABLE rls_t NO FORCE ROW LEVEL SECURITY;

-- 3. an analyst with BYPASSRLS: answers may cover every row
ALTER ROLE dx_regress_rls BYPASSRLS;
SET ROLE dx_regress_rls;
SELECT dx.count(*) AS bypassrls_count FROM rls_t;
RESET ROLE;
ALTER ROLE dx_regress_rls NOBYPASSRLS;

-- 4. off again: answered again, by every shape
ALTER TABLE rls_t DISABLE ROW LEVEL SECURITY;
SET ROLE dx_regress_rls;
SELECT dx.count(*) AS disabled_count FROM rls_t;
EXECUTE rls_p;
SELECT rls_fn() AS in_plpgsql_again;
RESET ROLE;

-- 5. a partitioned protected table: the parent's flag decides a read of the parent (a partition's
-- policy does not apply to it); a partition is never read directly by an analyst
CREATE TABLE rls_pt (region text, v int) PARTITION BY LIST (region);
CREATE TABLE rls_pt_n PARTITION OF rls_pt FOR VALUES IN ('north');
CREATE TABLE rls_pt_s PARTITION OF rls_pt FOR VALUES IN ('south');
INSERT INTO rls_pt SELECT region, v FROM rls_t;
SELECT dx.protect_table('rls_pt', 'Infinity');
SELECT dx.set_column('rls_pt', 'v', '{"min": 0, "max": 99}', '{"type": "none"}');
SELECT dx.grant_budget('dx_regress_rls', 'rls_pt', 1e6);
GRANT SELECT ON rls_pt, rls_pt_n, rls_pt_s TO dx_regress_rls;
ALTER TABLE rls_pt_s ENABLE ROW LEVEL SECURITY;
SET ROLE dx_regress_rls;
SELECT dx.count(*) AS parent_with_partition_policy FROM rls_pt;
SELECT err('SELECT dx.count(*) FROM rls_pt_s') AS partition_with_policy;
RESET ROLE;
ALTER TABLE rls_pt ENABLE ROW LEVEL SECURITY;
SET ROLE dx_regress_rls;
SELECT err('SELECT dx.count(*) FROM rls_pt') AS parent_with_policy;
RESET ROLE;
SELECT rls_charges() AS charges_at_end;

DEALLOCATE rls_p;
DROP FUNCTION rls_fn(), rls_charges();
SELECT dx.unprotect_table('rls_pt');
SELECT dx.unprotect_table('rls_t');
DROP TABLE rls_pt, rls_t;
SELECT dx.remove_analyst('dx_regress_rls');
DROP ROLE dx_regress_rls;
