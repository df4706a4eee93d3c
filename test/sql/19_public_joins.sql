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
-- dx.avg over the joined pairs: sum of the weights / number of pairs (a = 1 joins two rows)
SELECT round(dx.avg(p.a)::numeric, 6) FROM pj p JOIN pj_multi m ON m.a = p.a;
SELECT round(avg(p.a)::numeric, 6) FROM pj p JOIN pj_multi m ON m.a = p.a;

-- GROUP BY public columns: the groups are the key values of the joined (declared value, public
-- row) pairs that pass WHERE, read at analysis; a point may fall in several groups
SELECT d.zone, dx.count(*), dx.sum(p.a) FROM pj p JOIN pj_regions d ON d.r = p.r GROUP BY d.zone ORDER BY d.zone;
SELECT d.zone, count(*), sum(p.a) FROM pj p JOIN pj_regions d ON d.r = p.r GROUP BY d.zone ORDER BY d.zone;
CREATE TABLE pj_tags (a int, tag text);         -- a value in several groups (even/odd and small)
INSERT INTO pj_tags VALUES (0, 'even'), (2, 'even'), (4, 'even'), (6, 'even'), (1, 'odd'), (3, 'odd'),
  (5, 'odd'), (0, 'small'), (1, 'small'), (2, 'small'), (9, 'never');
SELECT dx.set_public('pj_tags');
SELECT t.tag, dx.count(*), dx.sum(p.a), round(dx.avg(p.a)::numeric, 6) AS avg
FROM pj p JOIN pj_tags t ON t.a = p.a GROUP BY t.tag ORDER BY t.tag;
SELECT t.tag, count(*), sum(p.a), round(avg(p.a)::numeric, 6) AS avg
FROM pj p JOIN pj_tags t ON t.a = p.a GROUP BY t.tag ORDER BY t.tag;
-- mixed keys (a declared column and a public one), expressions over public columns, HAVING
SELECT p.r, upper(d.zone) AS z, dx.count(*) FROM pj p JOIN pj_regions d ON d.r = p.r WHERE p.a > 1
GROUP BY p.r, upper(d.zone) HAVING dx.count(*) > 0 ORDER BY 1, 2;
SELECT p.r, upper(d.zone) AS z, count(*) FROM pj p JOIN pj_regions d ON d.r = p.r WHERE p.a > 1
GROUP BY p.r, upper(d.zone) HAVING count(*) > 0 ORDER BY 1, 2;
SELECT t.tag, d.zone, dx.sum(d.pop) FROM pj p JOIN pj_tags t ON t.a = p.a JOIN pj_regions d ON d.r = p.r
GROUP BY t.tag, d.zone ORDER BY 1, 2;
SELECT t.tag, d.zone, sum(d.pop) FROM pj p JOIN pj_tags t ON t.a = p.a JOIN pj_regions d ON d.r = p.r
GROUP BY t.tag, d.zone ORDER BY 1, 2;

-- LEFT JOIN: a protected row no public row joins is one row with NULL public columns
SELECT dx.count(*), dx.count(m.a), dx.sum(p.a) FROM pj p LEFT JOIN pj_multi m ON m.a = p.a;
SELECT count(*), count(m.a), sum(p.a) FROM pj p LEFT JOIN pj_multi m ON m.a = p.a;
SELECT m.a, dx.count(*) FROM pj p LEFT JOIN pj_multi m ON m.a = p.a GROUP BY m.a ORDER BY m.a;
SELECT m.a, count(*) FROM pj p LEFT JOIN pj_multi m ON m.a = p.a GROUP BY m.a ORDER BY m.a;
SELECT dx.count(*) FROM pj p LEFT JOIN pj_regions d ON d.r = p.r AND d.zone = 'warm' WHERE d.r IS NULL;
SELECT count(*) FROM pj p LEFT JOIN pj_regions d ON d.r = p.r AND d.zone = 'warm' WHERE d.r IS NULL;
SELECT p.r, round(dx.avg(coalesce(d.pop, 0))::numeric, 6) FROM pj p LEFT JOIN pj_regions d ON d.r = p.r AND p.a < 3
JOIN pj_weights w ON w.a = p.a GROUP BY p.r ORDER BY p.r;
SELECT p.r, round(avg(coalesce(d.pop, 0))::numeric, 6) FROM pj p LEFT JOIN pj_regions d ON d.r = p.r AND p.a < 3
JOIN pj_weights w ON w.a = p.a GROUP BY p.r ORDER BY p.r;
-- public RIGHT JOIN protected is the same LEFT JOIN
SELECT dx.count(*), dx.count(m.a) FROM pj_multi m RIGHT JOIN pj p ON m.a = p.a;

-- bound parameters: each execution is analysed (and reads the public tables) with its values
PREPARE pj_p(int, int) AS SELECT d.zone, dx.count(*) FROM pj p JOIN pj_regions d ON d.r = p.r
WHERE p.a >= $1 AND d.pop > $2 GROUP BY d.zone ORDER BY d.zone;
EXECUTE pj_p(3, 10);
SELECT d.zone, count(*) FROM pj p JOIN pj_regions d ON d.r = p.r WHERE p.a >= 3 AND d.pop > 10
GROUP BY d.zone ORDER BY d.zone;
EXECUTE pj_p(0, 0);
SELECT d.zone, count(*) FROM pj p JOIN pj_regions d ON d.r = p.r WHERE p.a >= 0 AND d.pop > 0
GROUP BY d.zone ORDER BY d.zone;
DEALLOCATE pj_p;
PREPARE pj_p2(int) AS SELECT dx.count(*) FROM pj p LEFT JOIN pj_multi m ON m.a = p.a AND m.a < $1;
EXECUTE pj_p2(2);
SELECT count(*) FROM pj p LEFT JOIN pj_multi m ON m.a = p.a AND m.a < 2;
DEALLOCATE pj_p2;
PREPARE pj_p3(int) AS SELECT dx.count(*) FROM pj p JOIN pj_regions d ON d.r = p.r AND d.pop = p.v + $1;
-- GROUPING SETS over a join: one release for all its grouping sets (53_join_rollup)
SELECT d.zone, p.r, dx.count(*) FROM pj p JOIN pj_regions d ON d.r = p.r GROUP BY ROLLUP (d.zone, p.r) ORDER BY 1, 2;
SELECT d.zone, p.r, count(*) FROM pj p JOIN pj_regions d ON d.r = p.r GROUP BY ROLLUP (d.zone, p.r) ORDER BY 1, 2;
PREPARE pj_p4(int) AS SELECT d.zone, p.r, dx.count(*) FROM pj p JOIN pj_regions d ON d.r = p.r WHERE p.a >= $1
GROUP BY ROLLUP (d.zone, p.r) ORDER BY 1, 2;
EXECUTE pj_p4(2);
SELECT d.zone, p.r, count(*) FROM pj p JOIN pj_regions d ON d.r = p.r WHERE p.a >= 2
GROUP BY ROLLUP (d.zone, p.r) ORDER BY 1, 2;
DEALLOCATE pj_p4;

-- the plan reads the protected table only
EXPLAIN (COSTS OFF) SELECT dx.count(*) FROM pj p JOIN pj_regions d ON d.r = p.r WHERE d.zone = 'warm';
EXPLAIN (COSTS OFF) SELECT t.tag, dx.count(*) FROM pj p JOIN pj_tags t ON t.a = p.a GROUP BY t.tag;

-- dx.explain analyses the join like running it (noiseless here: presence 'Infinity', metric none)
SELECT cell, kind, noise_scale FROM dx.explain('SELECT dx.count(*) FROM pj p JOIN pj_multi m ON m.a = p.a');
-- with noise: a row with a = 1 matches two rows of pj_multi, so a count has sensitivity 2
CREATE TABLE pjn (a int);
INSERT INTO pjn SELECT i % 7 FROM generate_series(1, 50) AS i;
SELECT dx.protect_table('pjn', 1.0);
SELECT dx.set_column('pjn', 'a', '{"min": 0, "max": 6}', '{"type": "none"}');
SELECT cell, kind, noise_scale FROM dx.explain('SELECT dx.count(p.a, 0.5) FROM pjn p JOIN pj_multi m ON m.a = p.a');
SELECT cell, kind, noise_scale FROM dx.explain('SELECT dx.sum(w.weight, 0.5) FROM pjn p JOIN pj_weights w ON w.a = p.a');
-- a value in two groups (0, 1 and 2 are "small" too): its row changes two cells, and the
-- allocation sees it (equal_split: each of the three cells gets a third of the epsilon, so that the
-- two cells of such a row together stay within it)
SET dxpriv.allocation = 'equal_split';
SELECT cell, group_key, noise_scale FROM dx.explain('SELECT t.tag, dx.count(*) FROM pjn p JOIN pj_tags t ON t.a = p.a GROUP BY t.tag');
SELECT cell, group_key, noise_scale FROM dx.explain('SELECT d.zone, dx.count(*) FROM pjn p JOIN pj_regions d ON true GROUP BY d.zone');
RESET dxpriv.allocation;
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
SELECT dx.count(*) FROM pj p RIGHT JOIN pj_regions d ON d.r = p.r;          -- protected side nullable
SELECT dx.count(*) FROM pj p FULL JOIN pj_regions d ON d.r = p.r;
SELECT dx.count(*) FROM pj p LEFT JOIN (pj_regions d JOIN pj_multi m ON true) ON d.r = p.r;
SELECT dx.count(*) FROM pj p LEFT JOIN pj_multi m ON m.a = p.a AND p.v > 2;  -- undeclared column in ON
SELECT dx.count(*) FROM pj p, LATERAL (SELECT * FROM pj_regions d WHERE d.r = p.r) d;
SELECT d.zone, dx.count(*) FROM pj p JOIN pj_regions d ON d.r = p.r WHERE false GROUP BY d.zone;  -- no group
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
SELECT zone, count(*) FROM pj LEFT JOIN pj_regions USING (r) GROUP BY zone ORDER BY zone;
PREPARE pj_a(text) AS SELECT zone, count(*) FROM pj JOIN pj_regions USING (r) WHERE zone = $1 GROUP BY zone;
EXECUTE pj_a('warm');
DEALLOCATE pj_a;
PREPARE pj_b(int) AS SELECT count(d.zone), round(avg(p.a)::numeric, 6) AS avg FROM pj p LEFT JOIN pj_regions d
ON d.r = p.r AND d.pop > $1;
EXECUTE pj_b(15);
DEALLOCATE pj_b;
SELECT d.zone FROM pj p JOIN pj_regions d ON d.r = p.r;                          -- raw rows: refused
SELECT count(*) FROM pj p JOIN pj_secret s ON s.r = p.r;                         -- not public
SELECT * FROM (SELECT count(*) AS n FROM pj p JOIN pj_regions d ON d.r = p.r) s;  -- wrapped
RESET ROLE;
SELECT r, sum(pop) FROM pj JOIN pj_regions USING (r) GROUP BY r ORDER BY r;
SELECT zone, count(*) FROM pj LEFT JOIN pj_regions USING (r) GROUP BY zone ORDER BY zone;
SELECT zone, count(*) FROM pj JOIN pj_regions USING (r) WHERE zone = 'warm' GROUP BY zone;
SELECT count(d.zone), round(avg(p.a)::numeric, 6) AS avg FROM pj p LEFT JOIN pj_regions d ON d.r = p.r AND d.pop > 15;
SELECT count(*) FROM dx.ledger WHERE role = 'dx_regress_joiner'::regrole;
SELECT dx.remove_analyst('dx_regress_joiner');
REVOKE ALL ON pj_regions FROM dx_regress_joiner;
SELECT dx.revoke_budget('dx_regress_joiner', 'pj');
DROP ROLE dx_regress_joiner;
