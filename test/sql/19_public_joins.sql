-- Joins of one protected table with public tables (README "Joins with public tables"). Noiseless
-- (presence 'Infinity', metric none): every answer is exact and compared with a native reference
-- over the clamped rows.
CREATE TABLE pj (a int, r text, v int);
INSERT INTO pj SELECT i % 7, CASE WHEN i % 3 = 0 THEN 'n' WHEN i % 3 = 1 THEN 's' ELSE 'e' END, i % 5
FROM generate_series(1, 200) AS i;
SELECT dx.protect_table('pj', 'Infinity');
SELECT dx.set_column('pj', 'a', '{"min": 0, "max": 6}', '{"type": "none"}');
SELECT dx.set_column('pj', 'r', '{"values": ["n", "s", "e"]}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'pj', 1000);
-- public tables: regions (a dimension) and per-value weights (the paper's per-record weights)
CREATE TABLE pj_regions (r text, zone text, pop int);
INSERT INTO pj_regions VALUES ('n', 'cold', 10), ('s', 'warm', 20), ('e', 'warm', 30);
CREATE TABLE pj_weights (a int, weight float8);
INSERT INTO pj_weights SELECT i, i * 0.5 FROM generate_series(0, 6) AS i;
CREATE TABLE pj_multi (a int);                 -- several rows per key: a count counts the pairs
INSERT INTO pj_multi VALUES (1), (1), (2), (9);
CREATE TABLE pj_secret (r text);
INSERT INTO pj_secret VALUES ('n');

-- bad inputs of dx.set_public
SELECT dx.set_public('pj');                     -- protected: refused
SELECT dx.set_public('pj_regions', NULL);
CREATE VIEW pj_view AS SELECT * FROM pj_regions;
SELECT dx.set_public('pj_view');                -- a view: refused
SELECT dx.set_public('pj_regions');
SELECT dx.set_public('pj_weights');
SELECT dx.set_public('pj_multi');
SELECT dx.set_public('pj_regions');             -- again: no error
SELECT relid FROM dx.public_tables ORDER BY relid::text;
CREATE TABLE pj_pub (x int);
SELECT dx.set_public('pj_pub');
SELECT dx.protect_table('pj_pub');              -- public: refused
SELECT dx.set_public('pj_pub', false);
SELECT relid FROM dx.public_tables ORDER BY relid::text;

-- counts, sums and filters over public columns, compared with the native join
SELECT dx.count(*) FROM pj p JOIN pj_regions d ON d.r = p.r WHERE d.zone = 'warm';
SELECT count(*) FROM pj p JOIN pj_regions d ON d.r = p.r WHERE d.zone = 'warm';
SELECT dx.sum(d.pop) AS pop, dx.count(*) FILTER (WHERE d.zone = 'cold') AS cold, dx.avg(d.pop + p.a) AS avg
FROM pj p INNER JOIN pj_regions d ON d.r = p.r;
SELECT sum(d.pop) AS pop, count(*) FILTER (WHERE d.zone = 'cold') AS cold, avg(d.pop + p.a) AS avg
FROM pj p INNER JOIN pj_regions d ON d.r = p.r;
-- the per-record weight vector: SELECT dx.linear(w.weight) ... JOIN weights w ON w.age = p.age
SELECT dx.linear(w.weight) FROM pj p JOIN pj_weights w ON w.a = p.a;
SELECT sum(w.weight) FROM pj p JOIN pj_weights w ON w.a = p.a;
-- comma spelling, two public tables, GROUP BY a protected column (every group returned)
SELECT p.r, dx.count(*), dx.sum(w.weight * d.pop)
FROM pj p, pj_regions d, pj_weights w WHERE d.r = p.r AND w.a = p.a AND p.a > 2 GROUP BY p.r ORDER BY p.r;
SELECT p.r, count(*), sum(w.weight * d.pop)
FROM pj p, pj_regions d, pj_weights w WHERE d.r = p.r AND w.a = p.a AND p.a > 2 GROUP BY p.r ORDER BY p.r;
-- several public rows per protected row: a count counts the pairs
SELECT dx.count(*) FROM pj p JOIN pj_multi m ON m.a = p.a;
SELECT count(*) FROM pj p JOIN pj_multi m ON m.a = p.a;
SELECT dx.avg(p.a) FROM pj p JOIN pj_multi m ON m.a = p.a;      -- refused: two rows for a = 1
-- the plan reads the protected table only
EXPLAIN (COSTS OFF) SELECT dx.count(*) FROM pj p JOIN pj_regions d ON d.r = p.r WHERE d.zone = 'warm';

-- dx.explain analyses the join like running it (noiseless here: presence 'Infinity', metric none)
SELECT cell, kind, noise_scale FROM dx.explain('SELECT dx.count(*) FROM pj p JOIN pj_multi m ON m.a = p.a');
-- with noise: a row with a = 1 matches two rows of pj_multi, so a count has sensitivity 2
CREATE TABLE pjn (a int);
INSERT INTO pjn SELECT i % 7 FROM generate_series(1, 50) AS i;
SELECT dx.protect_table('pjn', 1.0);
SELECT dx.set_column('pjn', 'a', '{"min": 0, "max": 6}', '{"type": "none"}');
SELECT cell, kind, noise_scale FROM dx.explain('SELECT dx.count(p.a, 0.5) FROM pjn p JOIN pj_multi m ON m.a = p.a');
SELECT cell, kind, noise_scale FROM dx.explain('SELECT dx.sum(w.weight, 0.5) FROM pjn p JOIN pj_weights w ON w.a = p.a');
-- a wrapper around a joined release is post-processing
SELECT n * 2 FROM (SELECT dx.count(*) AS n FROM pj p JOIN pj_regions d ON d.r = p.r WHERE d.zone = 'warm') s;
WITH w AS (SELECT p.r, dx.sum(d.pop) AS s FROM pj p JOIN pj_regions d USING (r) GROUP BY p.r)
SELECT r, s, s / sum(s) OVER () AS share FROM w ORDER BY r;

-- the public table is read once, at analysis: a change after PREPARE does not change the answer
PREPARE pj_q AS SELECT dx.sum(d.pop) FROM pj p JOIN pj_regions d ON d.r = p.r;
EXECUTE pj_q;
UPDATE pj_regions SET pop = pop * 100;
EXECUTE pj_q;
SELECT dx.sum(d.pop) FROM pj p JOIN pj_regions d ON d.r = p.r;  -- a new statement sees the change
DEALLOCATE pj_q;
UPDATE pj_regions SET pop = pop / 100;

-- refused
SELECT dx.count(*) FROM pj p JOIN pj_secret s ON s.r = p.r;                 -- not public
SELECT dx.count(*) FROM pj p JOIN lk l ON l.a = p.a;                         -- two protected tables
SELECT dx.count(*) FROM pj p LEFT JOIN pj_regions d ON d.r = p.r;           -- outer join
SELECT dx.count(*) FROM pj p RIGHT JOIN pj_regions d ON d.r = p.r;
SELECT dx.count(*) FROM pj p FULL JOIN pj_regions d ON d.r = p.r;
SELECT dx.count(*) FROM pj p, LATERAL (SELECT * FROM pj_regions d WHERE d.r = p.r) d;
SELECT d.zone, dx.count(*) FROM pj p JOIN pj_regions d ON d.r = p.r GROUP BY d.zone;  -- GROUP BY public
SELECT dx.count(*) FROM pj p JOIN pj_regions d ON d.r = p.r AND d.pop = p.v;  -- undeclared column
SELECT dx.count(*) FROM pj p JOIN pj_view d ON d.r = p.r;                     -- a view
SELECT dx.mode(p.a) FROM pj p JOIN pj_regions d ON d.r = p.r;
-- row-level security on a public table would run code while the snapshot is read: refused
CREATE TABLE pj_rls (r text);
SELECT dx.set_public('pj_rls');
ALTER TABLE pj_rls ENABLE ROW LEVEL SECURITY;
SELECT dx.count(*) FROM pj p JOIN pj_rls s ON s.r = p.r;
-- a child of a public table that is protected
CREATE TABLE pj_parent (a int);
SELECT dx.set_public('pj_parent');
CREATE TABLE pj_child () INHERITS (pj_parent);
SELECT dx.protect_table('pj_child');
SELECT dx.count(*) FROM pj p JOIN pj_parent s ON s.a = p.a;
SELECT dx.count(*) FROM pj p JOIN ONLY pj_parent s ON s.a = p.a;
SELECT dx.unprotect_table('pj_child');
-- the owner's own native joins are untouched
SELECT count(*) FROM pj p JOIN pj_secret s ON s.r = p.r;

-- analysts: plain aggregates over the join; the public table is read with their own privileges
CREATE ROLE dx_regress_joiner;
SELECT dx.add_analyst('dx_regress_joiner');
SELECT dx.grant_budget('dx_regress_joiner', 'pj', 100);
SET ROLE dx_regress_joiner;
SELECT count(*) FROM pj p JOIN pj_regions d ON d.r = p.r WHERE d.zone = 'warm';  -- no SELECT: refused
RESET ROLE;
GRANT SELECT ON pj_regions TO dx_regress_joiner;
SET ROLE dx_regress_joiner;
SELECT count(*) FROM pj p JOIN pj_regions d ON d.r = p.r WHERE d.zone = 'warm';
SELECT r, sum(pop) FROM pj JOIN pj_regions USING (r) GROUP BY r ORDER BY r;
SELECT d.zone FROM pj p JOIN pj_regions d ON d.r = p.r;                          -- raw rows: refused
SELECT count(*) FROM pj p JOIN pj_secret s ON s.r = p.r;                         -- not public
SELECT * FROM (SELECT count(*) AS n FROM pj p JOIN pj_regions d ON d.r = p.r) s;  -- wrapped
RESET ROLE;
SELECT r, sum(pop) FROM pj JOIN pj_regions USING (r) GROUP BY r ORDER BY r;
SELECT count(*) FROM dx.ledger WHERE role = 'dx_regress_joiner'::regrole;
SELECT dx.remove_analyst('dx_regress_joiner');
REVOKE ALL ON pj_regions FROM dx_regress_joiner;
SELECT dx.revoke_budget('dx_regress_joiner', 'pj');
DROP ROLE dx_regress_joiner;
