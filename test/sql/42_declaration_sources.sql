-- Tables named by a declaration (graph/matrix "table", group "points_table", issue 10): read once,
-- at declaration, as the calling role, and copied into the stored declaration; dx's own tables,
-- system catalogs, protected tables (and tables sharing rows with one), views and tables with
-- row-level security are refused; no error quotes a cell of the table.
CREATE TABLE src_t (zip text, city text, level int, x int, y int);
INSERT INTO src_t SELECT 'z' || (1 + i % 3), 'c' || (1 + i % 2), i % 4, i % 5, i % 3 FROM generate_series(0, 59) AS i;
SELECT dx.protect_table('src_t');

-- a graph metric read from a table: the stored declaration holds the rows, not the table's name
CREATE TABLE zip_edges (a text, b text, w float8, note text);
INSERT INTO zip_edges VALUES ('z1', 'z2', 2, 'secret-note-1'), ('z2', 'z3', 0.5, 'secret-note-2');
SELECT dx.set_column('src_t', 'zip', '{"values": ["z1", "z2", "z3"]}', '{"type": "graph", "table": "public.zip_edges"}');
SELECT metric FROM dx.protected_columns WHERE relid = 'src_t'::regclass AND column_name = 'zip';
SELECT noise_scale AS scale_z3 FROM dx.explain('SELECT dx.count(1, 1) FROM src_t WHERE zip = ''z3''');   -- 1/0.5
-- later changes to the source table change nothing, even dropping it
UPDATE zip_edges SET w = 100;
SELECT noise_scale AS scale_z3_after_update FROM dx.explain('SELECT dx.count(1, 1) FROM src_t WHERE zip = ''z3''');
DROP TABLE zip_edges;
SELECT noise_scale AS scale_z3_after_drop FROM dx.explain('SELECT dx.count(1, 1) FROM src_t WHERE zip = ''z3''');

-- a matrix metric from a table (infinite distances as 'Infinity'), labels quoted in the copy
CREATE TABLE city_pairs (a text, b text, d text);
INSERT INTO city_pairs VALUES ('c1', 'c2', '3'), ('c2', 'c"3', 'Infinity');
SELECT dx.set_column('src_t', 'city', '{"values": ["c1", "c2", "c\"3"]}', '{"type": "matrix", "table": "public.city_pairs"}');
SELECT metric FROM dx.protected_columns WHERE relid = 'src_t'::regclass AND column_name = 'city';

-- a points table: copied as "points", in coordinate order
CREATE TABLE grid_pts (px int, py int, label text);
INSERT INTO grid_pts VALUES (4, 2, 'p3'), (0, 0, 'p1'), (2, 1, 'p2');
SELECT dx.set_column_group('src_t', '{x,y}', '{"points_table": "public.grid_pts"}', '{"type": "l1", "scale": 1}');
SELECT domain FROM dx.protected_column_groups WHERE relid = 'src_t'::regclass;
DROP TABLE grid_pts;
SELECT domain FROM dx.protected_column_groups WHERE relid = 'src_t'::regclass;
SELECT noise_scale AS scale_x FROM dx.explain('SELECT dx.count(1, 1) FROM src_t WHERE x < 1');
-- names are not looked up in the caller's search_path
SELECT dx.set_column('src_t', 'city', '{"values": ["c1", "c2"]}', '{"type": "matrix", "table": "city_pairs"}');

-- errors: nothing quotes a cell, every error has a hint
CREATE TABLE bad_edges (a text, b text, w text);
INSERT INTO bad_edges VALUES ('z1', 'z2', '1'), ('z1', 'cell-secret-label', '1');
SELECT dx.set_column('src_t', 'zip', '{"values": ["z1", "z2", "z3"]}', '{"type": "graph", "table": "public.bad_edges"}');
UPDATE bad_edges SET b = 'z3', w = 'cell-secret-weight' WHERE b = 'cell-secret-label';
SELECT dx.set_column('src_t', 'zip', '{"values": ["z1", "z2", "z3"]}', '{"type": "graph", "table": "public.bad_edges"}');
UPDATE bad_edges SET w = NULL WHERE w = 'cell-secret-weight';
SELECT dx.set_column('src_t', 'zip', '{"values": ["z1", "z2", "z3"]}', '{"type": "graph", "table": "public.bad_edges"}');
UPDATE bad_edges SET w = 'NaN' WHERE w IS NULL;
SELECT dx.set_column('src_t', 'zip', '{"values": ["z1", "z2", "z3"]}', '{"type": "graph", "table": "public.bad_edges"}');
CREATE TABLE bad_pts (px text, py float8);
INSERT INTO bad_pts VALUES ('1', 1), ('cell-secret-coordinate', 2);
SELECT dx.set_column_group('src_t', '{x,y}', '{"points_table": "public.bad_pts"}', '{"type": "l1", "scale": 1}');
UPDATE bad_pts SET px = 'Infinity' WHERE py = 2;
SELECT dx.set_column_group('src_t', '{x,y}', '{"points_table": "public.bad_pts"}', '{"type": "l1", "scale": 1}');
CREATE TABLE two_cols (a text, b text);
SELECT dx.set_column('src_t', 'zip', '{"values": ["z1", "z2", "z3"]}', '{"type": "graph", "table": "public.two_cols"}');
SELECT dx.set_column('src_t', 'zip', '{"values": ["z1", "z2", "z3"]}', '{"type": "graph", "table": "no_such_schema.t"}');
SELECT dx.set_column('src_t', 'zip', '{"values": ["z1", "z2", "z3"]}',
	'{"type": "graph", "table": "public.bad_edges", "edges": [["z1", "z2", 1]]}');
SELECT dx.set_column_group('src_t', '{x,y}', '{"points_table": "public.bad_pts", "points": [[0, 0]]}', '{"type": "l1", "scale": 1}');

-- refused sources: dx's own tables, system catalogs, protected tables and their relatives, views,
-- row-level security
SELECT dx.set_column('src_t', 'zip', '{"values": ["z1"]}', '{"type": "graph", "table": "dx.budget_grants"}');
SELECT dx.set_column('src_t', 'zip', '{"values": ["z1"]}', '{"type": "graph", "table": "dx.ledger"}');
SELECT dx.set_column('src_t', 'zip', '{"values": ["z1"]}', '{"type": "graph", "table": "pg_catalog.pg_authid"}');
SELECT dx.set_column('src_t', 'zip', '{"values": ["z1"]}', '{"type": "matrix", "table": "information_schema.sql_features"}');
SELECT dx.set_column('src_t', 'zip', '{"values": ["z1"]}', '{"type": "graph", "table": "public.people"}');
SELECT dx.set_column('src_t', 'zip', '{"values": ["z1"]}', '{"type": "graph", "table": "public.src_t"}');
CREATE TABLE part_parent (a text, b text, w float8) PARTITION BY LIST (a);
CREATE TABLE part_z1 PARTITION OF part_parent FOR VALUES IN ('z1');
CREATE TABLE part_z2 PARTITION OF part_parent FOR VALUES IN ('z2');
SELECT dx.protect_table('part_z1');
SELECT dx.set_column('src_t', 'zip', '{"values": ["z1"]}', '{"type": "graph", "table": "public.part_parent"}');
SELECT dx.set_column('src_t', 'zip', '{"values": ["z1"]}', '{"type": "graph", "table": "public.part_z1"}');
SELECT dx.unprotect_table('part_z1');
SELECT dx.protect_table('part_parent');
SELECT dx.set_column('src_t', 'zip', '{"values": ["z1"]}', '{"type": "graph", "table": "public.part_z2"}');
CREATE TABLE inh_parent (a text, b text, w float8);
CREATE TABLE inh_child () INHERITS (inh_parent);
SELECT dx.protect_table('inh_child');
SELECT dx.set_column('src_t', 'zip', '{"values": ["z1"]}', '{"type": "graph", "table": "public.inh_parent"}');
CREATE VIEW edges_view AS SELECT 'z1'::text AS a, 'z2'::text AS b, 1.0::float8 AS w;
SELECT dx.set_column('src_t', 'zip', '{"values": ["z1", "z2"]}', '{"type": "graph", "table": "public.edges_view"}');
CREATE TABLE rls_edges (a text, b text, w float8);
ALTER TABLE rls_edges ENABLE ROW LEVEL SECURITY;
SELECT dx.set_column('src_t', 'zip', '{"values": ["z1"]}', '{"type": "graph", "table": "public.rls_edges"}');

-- privileges of the calling role: the owner of src_t declares, and needs SELECT on what it names
CREATE ROLE dx_regress_owner;
CREATE TABLE owned_t (zip text);
ALTER TABLE owned_t OWNER TO dx_regress_owner;
CREATE TABLE priv_edges (a text, b text, w float8, secret text);
INSERT INTO priv_edges VALUES ('z1', 'z2', 1, 'cell-secret');
CREATE SCHEMA hidden;
CREATE TABLE hidden.edges (a text, b text, w float8);
GRANT SELECT ON hidden.edges TO dx_regress_owner;
SET ROLE dx_regress_owner;
SELECT dx.protect_table('owned_t');
SELECT dx.set_column('owned_t', 'zip', '{"values": ["z1", "z2"]}', '{"type": "graph", "table": "public.priv_edges"}');
SELECT dx.set_column('owned_t', 'zip', '{"values": ["z1", "z2"]}', '{"type": "graph", "table": "hidden.edges"}');
-- the helper that reads tables is not callable directly
SELECT dx._validate_column('text', '{"values": ["z1"]}', '{"type": "graph", "table": "public.priv_edges"}');
RESET ROLE;
-- SELECT on the columns read is enough (not on the others)
GRANT SELECT (a, b, w) ON priv_edges TO dx_regress_owner;
SET ROLE dx_regress_owner;
SELECT dx.set_column('owned_t', 'zip', '{"values": ["z1", "z2"]}', '{"type": "graph", "table": "public.priv_edges"}');
RESET ROLE;
SELECT metric FROM dx.protected_columns WHERE relid = 'owned_t'::regclass;

-- user code reached while validating (a domain type's CHECK constraint) runs as the caller, not as
-- the extension owner the DBA functions run as
CREATE FUNCTION public.who_checks(v text) RETURNS boolean LANGUAGE plpgsql AS
$$ BEGIN RAISE NOTICE 'checking % as %, superuser: %', v, current_user, (SELECT rolsuper FROM pg_roles WHERE rolname = current_user); RETURN true; END $$;
CREATE DOMAIN public.checked_text AS text CHECK (public.who_checks(VALUE));
ALTER TABLE owned_t ADD COLUMN label checked_text;
SET ROLE dx_regress_owner;
SELECT dx.set_column('owned_t', 'label', '{"values": ["a", "b"]}', '{"type": "discrete"}');
RESET ROLE;

-- a stored declaration naming a table (written around dx.set_column) is refused, never read
UPDATE dx.protected_columns SET metric = '{"type": "graph", "table": "public.priv_edges"}'
WHERE relid = 'owned_t'::regclass;
SELECT dx.count(1, 1) FROM owned_t;

SELECT dx.unprotect_table('owned_t');
SELECT dx.unprotect_table('src_t');
SELECT dx.unprotect_table('part_parent');
SELECT dx.unprotect_table('inh_child');
DROP VIEW edges_view;
DROP TABLE owned_t, priv_edges, hidden.edges, src_t, city_pairs, bad_edges, bad_pts, two_cols,
	part_parent, inh_child, inh_parent, rls_edges;
DROP SCHEMA hidden;
DROP DOMAIN public.checked_text;
DROP FUNCTION public.who_checks(text);
DROP OWNED BY dx_regress_owner;
DROP ROLE dx_regress_owner;
