-- Fixture of test/bench/bi_shapes/run.sh (run as a superuser in database postgres).
CREATE EXTENSION IF NOT EXISTS dxpriv;
CREATE TABLE bw (id int, age int, sex text, city text);
INSERT INTO bw SELECT i, 20 + (i * 7) % 60, (ARRAY['M','F'])[1 + i % 2], (ARRAY['a','b','c','d'])[1 + i % 4] FROM generate_series(1, 500) AS i;
SELECT dx.protect_table('bw', 1);
SELECT dx.set_column('bw', 'age', '{"min": 0, "max": 100, "step": 1}', '{"type": "absolute", "scale": 1}');
SELECT dx.set_column('bw', 'sex', '{"values": ["M", "F"]}', '{"type": "discrete", "weight": 2}');
SELECT dx.set_column('bw', 'city', '{"values": ["a", "b", "c", "d"]}', '{"type": "discrete", "weight": 1}');
CREATE TABLE cz (city text, zone text);
INSERT INTO cz VALUES ('a', 'n'), ('b', 'n'), ('c', 's'), ('d', 's');
SELECT dx.set_public('cz');
CREATE ROLE bw_analyst LOGIN;
GRANT SELECT ON cz TO bw_analyst;
SELECT dx.add_analyst('bw_analyst');
SELECT dx.grant_budget('bw_analyst', 'bw', 100);
