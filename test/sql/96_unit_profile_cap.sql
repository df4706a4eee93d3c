-- The unit profile's size capped (harden): dxpriv.unit_profile_max_size bounds the profile a
-- statement builds and holds (16 bytes per entry of a table of twice its heavy units, rounded up to
-- a power of two). A statement whose table could give a larger profile (its size in blocks ×
-- MaxHeapTuplesPerPage rows, k + 1 of them per heavy unit) bounds its units per statement instead
-- (dxpriv.unit_bounding: the same kept rows under the test seed, the same charge); a plan made under
-- a larger setting (a prepared statement) is refused with 54000 before its charge (the ledger
-- unchanged); a build past the setting (dx._unit_profile called directly, as a shard's build on a
-- Citus worker would) fails with 54000, never an allocation beyond it.
\set SHOW_CONTEXT never
CREATE TABLE upc_t (person int, v int);
INSERT INTO upc_t SELECT p, (p * 7 + i) % 10 FROM generate_series(1, 3000) p, generate_series(1, 3) i;
INSERT INTO upc_t SELECT p, p % 10 FROM generate_series(3001, 4000) p;
ANALYZE upc_t;
SELECT dx.protect_table('upc_t', 'Infinity');
SELECT dx.set_column('upc_t', 'v', '{"min":0,"max":9}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'upc_t', 1e6);
SELECT dx.set_privacy_unit('upc_t', 'person', 2);
SET dxpriv.test_seed = 9595;
SET dxpriv.cache_lifetime = 0;
SHOW dxpriv.unit_profile_max_size;
-- whether a statement's plan bounds units by a profile (dx._unit_keep over dx._unit_profile)
CREATE FUNCTION upc_uses_profile(q text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
	l text;
	found boolean := false;
BEGIN
	FOR l IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q LOOP
		found := found OR l LIKE '%dx._unit_profile(%';
	END LOOP;
	RETURN found;
END $$;
-- bad settings
SELECT err($$SET dxpriv.unit_profile_max_size = '32kB'$$);
CREATE ROLE dx_upc_user;
SET ROLE dx_upc_user;
SELECT err($$SET dxpriv.unit_profile_max_size = '1MB'$$);
RESET ROLE;
DROP ROLE dx_upc_user;
-- under the setting: the profile (3000 heavy units: 8192 entries, 128 kB)
SELECT upc_uses_profile('SELECT dx.count(*), dx.sum(v) FROM upc_t') AS profile;
SELECT dx.count(*) AS kept, dx.sum(v) AS s FROM upc_t \gset profile_
-- the rule's answer: each person's 2 rows of smallest rank (dx._unit_rank under the test seed; the
-- kept rows depend on the table's OID, so only equalities are shown)
CREATE VIEW upc_rule AS SELECT v FROM (SELECT v, row_number() OVER (PARTITION BY person ORDER BY dx._unit_rank(tableoid, ctid)) AS r
	FROM upc_t) x WHERE r <= 2;
SELECT count(*) AS rule_kept, sum(v) AS rule_s FROM upc_rule \gset
SELECT :profile_kept AS kept, :profile_s = :rule_s AND :profile_kept = :rule_kept AS rule;
-- over the setting (64 kB): no profile is built, the units are bounded per statement; the same
-- kept rows and answers
SET dxpriv.unit_profile_max_size = '64kB';
SELECT upc_uses_profile('SELECT dx.count(*), dx.sum(v) FROM upc_t') AS profile;
SELECT dx.count(*) AS kept, dx.sum(v) AS s FROM upc_t \gset statement_
SELECT :statement_kept AS kept, :statement_kept = :profile_kept AND :statement_s = :profile_s AS same;
-- grouped, and count_units: bounded per statement too, answered
SELECT upc_uses_profile('SELECT v, dx.count(*) FROM upc_t GROUP BY v') AS grouped_profile,
       upc_uses_profile('SELECT dx.count_units(person) FROM upc_t') AS count_units_profile;
SELECT count(*) AS groups, count(*) FILTER (WHERE g.c IS DISTINCT FROM r.c) AS differ
FROM (SELECT v, dx.count(*) AS c FROM upc_t GROUP BY v) g LEFT JOIN (SELECT v, count(*) AS c FROM upc_rule GROUP BY v) r USING (v);
SELECT dx.count_units(person) AS units FROM upc_t;
-- a prepared statement planned under a larger setting: refused before its charge
SET dxpriv.unit_profile_max_size = '1MB';
PREPARE upc_p AS SELECT dx.count(*) FROM upc_t;
EXECUTE upc_p;
SELECT upc_uses_profile('EXECUTE upc_p') AS profile;
SELECT count(*) AS ledger_rows FROM dx.ledger \gset before_
SET dxpriv.unit_profile_max_size = '64kB';
SELECT err('EXECUTE upc_p');
SELECT count(*) - :before_ledger_rows AS new_ledger_rows FROM dx.ledger;
-- prepared again: bounded per statement, answered and charged
DEALLOCATE upc_p;
PREPARE upc_p AS SELECT dx.count(*) FROM upc_t;
SELECT upc_uses_profile('EXECUTE upc_p') AS profile;
EXECUTE upc_p;
SELECT count(*) - :before_ledger_rows AS new_ledger_rows FROM dx.ledger;
DEALLOCATE upc_p;
-- the table grows past the setting after the plan was made (20,000 more heavy units; the prepared
-- plan is kept): refused before its charge (the ledger unchanged), no profile built; prepared again,
-- bounded per statement, answered and charged once
SET dxpriv.unit_profile_max_size = '512kB';
PREPARE upc_p AS SELECT dx.count(*) FROM upc_t;
SELECT upc_uses_profile('EXECUTE upc_p') AS profile;
EXECUTE upc_p;
INSERT INTO upc_t SELECT p, p % 10 FROM generate_series(10001, 30000) p, generate_series(1, 3) i;
SELECT count(*) AS ledger_rows FROM dx.ledger \gset before_
SELECT upc_uses_profile('EXECUTE upc_p') AS profile;
SELECT err('EXECUTE upc_p');
SELECT count(*) - :before_ledger_rows AS new_ledger_rows FROM dx.ledger;
DEALLOCATE upc_p;
PREPARE upc_p AS SELECT dx.count(*) FROM upc_t;
SELECT upc_uses_profile('EXECUTE upc_p') AS profile;
EXECUTE upc_p;
SELECT count(*) - :before_ledger_rows AS new_ledger_rows FROM dx.ledger;
DEALLOCATE upc_p;
-- a build past the setting (a direct call by a superuser, 20,000 heavy units: 65536 entries, 1 MB): 54000, never an allocation beyond it
SELECT err(format('SELECT length(dx._unit_profile(%s::oid, true, 1::int2, 2, 0))', 'upc_t'::regclass::oid));
RESET dxpriv.unit_profile_max_size;
SELECT length(dx._unit_profile('upc_t'::regclass::oid, true, 1::int2, 2, 0)) > 256 * 1024 AS built_over_256kB;
RESET dxpriv.cache_lifetime;
RESET dxpriv.test_seed;
