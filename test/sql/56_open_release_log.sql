-- dx.last_release() of releases grouped by an open key (issue 26): the answers of the partitions the
-- selection kept are listed, labelled with their key values, to the session that ran the release;
-- a withheld partition leaves nothing (no value, no row). A repeat by the same role replays the
-- released rows (57_open_cache); another role's is a new release, charged. Noisy values are never
-- printed; the selection runs under the test seed.
CREATE TABLE shops_open (city text, ward text, price int);
-- 'c1'..'c4': 300 rows each; 'lonely': one row; 'twin': two rows; NULL: one row
INSERT INTO shops_open SELECT 'c' || (1 + i % 4), (ARRAY['A','B'])[1 + i % 2], i % 50 FROM generate_series(1, 1200) AS i;
INSERT INTO shops_open VALUES ('lonely', 'A', 7), ('twin', 'A', 3), ('twin', 'B', 4), (NULL, 'B', 5);
SELECT dx.protect_table('shops_open', 1.0);
SELECT dx.set_column('shops_open', 'ward', '{"values": ["A", "B"]}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_column('shops_open', 'price', '{"min": 0, "max": 49}', '{"type": "absolute", "scale": 10}');
SELECT dx.set_column('shops_open', 'city', '{"open": true}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_delta('shops_open', 1e-6);
CREATE ROLE dx_regress_open56;
SELECT dx.add_analyst('dx_regress_open56');
SELECT dx.grant_budget('dx_regress_open56', 'shops_open', 100, delta => 1e-3);
GRANT USAGE ON SCHEMA public TO dx_regress_open56;
SET dxpriv.cache_lifetime = 0;
SET dxpriv.test_seed = 56;
SET dxpriv.epsilon = 2.0;
SET ROLE dx_regress_open56;

-- a release: the four big cities are kept, 'lonely', 'twin' and NULL are not
SELECT city, dx.count(*) > 250 AS big FROM shops_open GROUP BY city ORDER BY city;
-- its log: one row per kept partition, labelled with the key; nothing of the withheld ones
SELECT cell, aggregate, kind, expression, group_key, component, noise, interval_method, reused
FROM dx.last_release() ORDER BY group_key;
SELECT count(*) AS withheld_rows FROM dx.last_release()
WHERE group_key IS NULL OR group_key ~ '(lonely|twin|NULL)';

-- the logged answers are the released ones, key by key (the release in a wrapper: one statement)
SELECT string_agg(city || ':' || n::float8::text, ',' ORDER BY city) AS released
FROM (SELECT city, dx.count(*) AS n FROM shops_open GROUP BY city) AS s \gset
SELECT string_agg(substr(group_key, 6) || ':' || answer::text, ',' ORDER BY group_key) = :'released' AS log_equals_rows,
       count(*) AS logged
FROM dx.last_release();

-- an average: its value, sum and count rows per kept partition
SELECT city, dx.avg(price) BETWEEN 0 AND 49 AS in_range FROM shops_open GROUP BY city ORDER BY city;
SELECT group_key, component, kind, interval_method FROM dx.last_release() ORDER BY group_key, component;

-- declared keys beside the open key: labels hold every GROUP BY value; the released combinations only
SELECT city, ward, n > 0 AS kept FROM (SELECT city, ward, dx.count(*) AS n FROM shops_open GROUP BY city, ward) AS s ORDER BY 1, 2;
SELECT group_key FROM dx.last_release() ORDER BY group_key;

-- ROLLUP and GROUPING SETS (one release per set: the sets without the open key are ordinary cells)
-- and a UNION ALL of two open releases: each kept partition under its own labels and ledger cell
SELECT city, n > 0 AS kept FROM (SELECT city, dx.count(*) AS n FROM shops_open GROUP BY ROLLUP (city)) s ORDER BY city NULLS FIRST;
SELECT group_key, kind, component FROM dx.last_release() ORDER BY group_key NULLS FIRST;
SELECT city, ward, n > 0 AS kept FROM (SELECT city, ward, dx.count(*) AS n FROM shops_open GROUP BY GROUPING SETS ((city, ward), (ward))) s ORDER BY 1 NULLS FIRST, 2;
SELECT group_key, aggregate, cell FROM dx.last_release() ORDER BY group_key NULLS FIRST;
SELECT city, n > 0 FROM (SELECT city, dx.count(*) AS n FROM shops_open WHERE ward = 'A' GROUP BY city UNION ALL SELECT city, dx.count(*) AS n FROM shops_open WHERE ward = 'B' GROUP BY city) u ORDER BY 1;
SELECT group_key, aggregate, cell FROM dx.last_release() ORDER BY group_key NULLS FIRST;

-- WHERE on a declared column, a wrapper's filter, an analyst's HAVING: the log lists the partitions
-- the selection kept (the filters post-process released rows), never a withheld one
SELECT city, total > 0 AS positive FROM (SELECT city, dx.sum(price) AS total FROM shops_open WHERE ward = 'A' GROUP BY city) AS s
WHERE city > 'c2' ORDER BY city;
SELECT group_key FROM dx.last_release() ORDER BY group_key;
SELECT city FROM shops_open GROUP BY city HAVING dx.count(*) > 1e9 ORDER BY city;
SELECT count(*) AS logged, count(*) FILTER (WHERE group_key ~ '(lonely|twin)') AS withheld FROM dx.last_release();

-- a cursor: its partitions are listed once the selection kept them
BEGIN;
DECLARE c56 CURSOR FOR SELECT city, dx.count(*) > 0 AS kept FROM shops_open GROUP BY city;
FETCH 1 FROM c56;
SELECT count(*) AS logged, count(*) FILTER (WHERE group_key ~ '(lonely|twin)') AS withheld FROM dx.last_release();
COMMIT;

-- dx._open_cells written by hand labels nothing (only a partition just kept has answers waiting)
SELECT dx._open_cells(true, ARRAY['city'], ARRAY['lonely']) AS returned;
SELECT err($$SELECT city FROM shops_open GROUP BY city HAVING dx._open_cells(true, ARRAY['city'], ARRAY['lonely'])$$);
SELECT count(*) FILTER (WHERE group_key ~ 'lonely') AS lonely_rows FROM dx.last_release();

-- with a privacy unit: each unit counted once per partition; the log follows the selection
RESET ROLE;
-- one person per row, except 'lonely' and 'twin': one person holds all three of their rows
ALTER TABLE shops_open ADD COLUMN person int GENERATED BY DEFAULT AS IDENTITY;
UPDATE shops_open SET person = 99999 WHERE city IN ('lonely', 'twin');
SELECT dx.set_privacy_unit('shops_open', 'person', 3);
SET ROLE dx_regress_open56;
SELECT city, dx.count(*) > 0 AS kept FROM shops_open GROUP BY city ORDER BY city;
SELECT group_key FROM dx.last_release() ORDER BY group_key;

-- the answer cache: the same statement again by the same role replays its rows (free, no new draw,
-- so dx.last_release() lists no cell, test/sql/57_open_cache.sql); another role gets a new release,
-- charged
RESET ROLE;
SET dxpriv.cache_lifetime = 3600;
CREATE ROLE dx_regress_open56b;
SELECT dx.add_analyst('dx_regress_open56b');
SELECT dx.grant_budget('dx_regress_open56b', 'shops_open', 100, delta => 1e-3);
GRANT USAGE ON SCHEMA public TO dx_regress_open56b;
SELECT count(*) AS ledger_before FROM dx.ledger WHERE relid = 'shops_open'::regclass \gset
SET ROLE dx_regress_open56;
SELECT city, n > 0 AS kept FROM (SELECT city, dx.count(*) AS n FROM shops_open GROUP BY city) AS s ORDER BY city;
SELECT city, n > 0 AS kept FROM (SELECT city, dx.count(*) AS n FROM shops_open GROUP BY city) AS s ORDER BY city;
SELECT DISTINCT reused FROM dx.last_release();
-- another role of the same session (SET ROLE) sees none of the keys the first one received
RESET ROLE;
SET ROLE dx_regress_open56b;
SELECT count(*) AS other_role_rows FROM dx.last_release();
SELECT city, n > 0 AS kept FROM (SELECT city, dx.count(*) AS n FROM shops_open GROUP BY city) AS s ORDER BY city;
SELECT DISTINCT reused, count(*) FILTER (WHERE group_key ~ '(lonely|twin)') AS withheld FROM dx.last_release() GROUP BY reused;
RESET ROLE;
SELECT role::regrole, count(*) AS charges FROM dx.ledger
WHERE relid = 'shops_open'::regclass AND id > (SELECT max(id) FROM dx.ledger) - 3 GROUP BY 1 ORDER BY 1::text;
SELECT count(*) - :ledger_before AS new_charges FROM dx.ledger WHERE relid = 'shops_open'::regclass;
RESET dxpriv.cache_lifetime;
RESET dxpriv.test_seed;
RESET dxpriv.epsilon;
