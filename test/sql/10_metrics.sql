-- The metric catalogue from SQL: explicit matrix (closed, with a notice), graph, l1/l2/linf,
-- Blowfish theta1/theta2, and column groups with a points or grid domain (location).
CREATE TABLE places (zip text, city text, x int, y int, lon float8, lat float8, level int);
INSERT INTO places SELECT (ARRAY['z1','z2','z3','z4'])[1 + i % 4], (ARRAY['c1','c2'])[1 + i % 2], i % 10, (i / 10) % 10,
	(i % 7) * 0.5, (i % 5) * 0.5, i % 6
FROM generate_series(0, 399) AS i;
SELECT dx.protect_table('places', 'Infinity');
SELECT dx.grant_budget(current_user::regrole, 'places', 1000);
CREATE FUNCTION scale_of(q text) RETURNS float8 LANGUAGE sql AS
	$$ SELECT noise_scale FROM dx.explain(q) $$;

-- explicit matrix: z1-z2 at 1, z2-z3 at 1, z1-z3 at 5 (closed to 2), others unconstrained
SELECT dx.set_column('places', 'zip', '{"values": ["z1","z2","z3","z4"]}',
	'{"type": "matrix", "pairs": [["z1","z2",1], ["z2","z3",1], ["z1","z3",5]]}');
SELECT scale_of('SELECT dx.count(1, 1) FROM places WHERE zip = ''z1''') AS matrix_z1;      -- 1/d(z1,z2) = 1
SELECT scale_of('SELECT dx.count(1, 1) FROM places WHERE zip IN (''z1'', ''z2'')') AS matrix_z12; -- 1/d(z2,z3) = 1
SELECT scale_of('SELECT dx.count(1, 1) FROM places WHERE zip = ''z4''') AS matrix_z4;      -- z4 unconstrained: exact
-- graph (hierarchy): z1 - c, z2 - c at 0.5; S(z1 count) = 1/1 over the path z1-c-z2
SELECT dx.set_column('places', 'zip', '{"values": ["z1","z2","z3","z4"]}',
	'{"type": "graph", "edges": [["z1","z2",2], ["z2","z3",0.5], ["z3","z4",0.5]]}');
SELECT scale_of('SELECT dx.count(1, 1) FROM places WHERE zip = ''z4''') AS graph_z4;      -- 1/0.5
SELECT scale_of('SELECT dx.count(1, 1) FROM places WHERE zip = ''z1''') AS graph_z1;      -- 1/2
-- 1-D vector metrics and Blowfish thresholds on a range column
SELECT dx.set_column('places', 'level', '{"min": 0, "max": 5}', '{"type": "l2", "scale": 2}');
SELECT scale_of('SELECT dx.count(1, 1) FROM places WHERE level > 2') AS l2_level;          -- 2 (one step = 0.5)
SELECT dx.set_column('places', 'level', '{"min": 0, "max": 5}', '{"type": "theta1", "tau": 1}');
SELECT scale_of('SELECT dx.count(1, 1) FROM places WHERE level > 2') AS theta1_level;      -- 1
SELECT dx.set_column('places', 'level', '{"min": 0, "max": 5}', '{"type": "theta2", "tau": 2}');
SELECT scale_of('SELECT dx.count(1, 1) FROM places WHERE level > 2') AS theta2_level;      -- 1 (neighbours within tau)
-- a column group on a grid (location): l2 distance between (x, y) points, scale 2
SELECT dx.set_column_group('places', '{x,y}', '{"grid": [{"min": 0, "max": 9}, {"min": 0, "max": 9}]}',
	'{"type": "l2", "scale": 2}');
SELECT columns, metric FROM dx.protected_column_groups;
SELECT scale_of('SELECT dx.count(1, 1) FROM places WHERE x < 5') AS grid_halfplane;        -- 1 / (1/2) = 2
SELECT scale_of('SELECT dx.count(1, 1) FROM places WHERE x + y < 5') AS grid_diagonal;     -- 2 as well
SET dxpriv.test_seed = 3;
SELECT abs(dx.count(1, 1) - 200) < 60 AS close FROM places WHERE x < 5;    -- 200 rows have x < 5
RESET dxpriv.test_seed;
-- noiseless checks on a group: clamping maps every row to the nearest declared point
-- (a tiny scale makes every distance huge: the answer is then exact up to a negligible noise)
SELECT dx.set_column_group('places', '{lon,lat}', '{"points": [[0, 0], [1, 1], [3, 2]]}', '{"type": "linf", "scale": 1e-9}');
SELECT scale_of('SELECT dx.count(1, 1) FROM places WHERE lat > 0.5') < 1e-8 AS negligible_noise;
SELECT round(dx.sum(lon, 1)::numeric, 3) AS lon_sum_clamped FROM places;
SELECT sum((SELECT p.x FROM (VALUES (0, 0.0, 0.0), (1, 1.0, 1.0), (2, 3.0, 2.0)) p(i, x, y)
            ORDER BY (lon - p.x) ^ 2 + (lat - p.y) ^ 2, p.i LIMIT 1)) AS expected_nearest FROM places;
-- errors
SELECT dx.set_column('places', 'zip', '{"values": ["z1","z2"]}', '{"type": "matrix", "pairs": [["z1","z9",1]]}');
SELECT dx.set_column('places', 'zip', '{"values": ["z1","z2"]}', '{"type": "matrix", "pairs": [["z1","z2",-1]]}');
SELECT dx.set_column('places', 'zip', '{"values": ["z1","z2"]}', '{"type": "matrix", "pairs": [["z1","z2"]]}');
SELECT dx.set_column('places', 'zip', '{"values": ["z1","z2"]}', '{"type": "graph", "edges": [["z1","z2",0]]}');
SELECT dx.set_column('places', 'zip', '{"values": ["z1","z2"]}', '{"type": "graph", "table": "no_such_table"}');
SELECT dx.set_column('places', 'level', '{"min": 0, "max": 5}', '{"type": "theta1"}');
SELECT dx.set_column('places', 'level', '{"min": 0, "max": 5}', '{"type": "l2"}');
SELECT dx.set_column_group('places', '{x}', '{"points": [[0]]}', '{"type": "l2", "scale": 1}');
SELECT dx.set_column_group('places', '{x,zip}', '{"points": [[0, 0]]}', '{"type": "l2", "scale": 1}');
SELECT dx.set_column_group('places', '{x,y}', '{"points": [[0, 0, 1]]}', '{"type": "l2", "scale": 1}');
SELECT dx.set_column_group('places', '{x,y}', '{"points": [[0.5, 0]]}', '{"type": "l2", "scale": 1}');
SELECT dx.set_column_group('places', '{x,y}', '{"grid": [{"min": 0, "max": 9}]}', '{"type": "l2", "scale": 1}');
SELECT dx.set_column_group('places', '{x,level}', '{"points": [[0, 0]]}', '{"type": "l2", "scale": 1}');
SELECT dx.set_column_group('places', '{x,y}', '{"points": [[0, 0]]}', '{"type": "absolute", "scale": 1}');
SELECT x, dx.count(*) FROM places GROUP BY x;
-- matrix closure notice
SELECT dx.set_column('places', 'city', '{"values": ["c1","c2","c3"]}',
	'{"type": "matrix", "pairs": [["c1","c2",1], ["c2","c3",1], ["c1","c3",3]]}');
