-- The partial state of distributed dx aggregates (dx._linear_partial, issue 13): its text form
-- round-trips, malformed or forged states are refused, and the release functions refuse to run
-- outside a statement dxpriv split and charged. (The distributed path itself runs under Citus:
-- make test-citus.)
-- version 1, 1 component, 1 group, charge id 12345, epsilon 0.5, relid 1, aggregate 0; one cell:
-- 7 grid units, 7 rows, grid 1
SELECT '\x01000000010000000100000000000030393fe000000000000000000001000000000000000000000000000000000000000700000000000000073ff0000000000000'::dx._linear_partial::text
     = '\x01000000010000000100000000000030393fe000000000000000000001000000000000000000000000000000000000000700000000000000073ff0000000000000'
  AS round_trip;
-- unknown version
SELECT '\x02000000010000000100000000000030393fe000000000000000000001000000000000000000000000000000000000000700000000000000073ff0000000000000'::dx._linear_partial;
-- two groups announced, one cell present
SELECT '\x01000000010000000200000000000030393fe000000000000000000001000000000000000000000000000000000000000700000000000000073ff0000000000000'::dx._linear_partial;
-- a negative row count
SELECT '\x01000000010000000100000000000030393fe0000000000000000000010000000000000000000000000000000000000007ffffffffffffffff3ff0000000000000'::dx._linear_partial;
-- a zero grid
SELECT '\x01000000010000000100000000000030393fe000000000000000000001000000000000000000000000000000000000000700000000000000070000000000000000'::dx._linear_partial;
-- not hex at all
SELECT 'hello'::dx._linear_partial;
-- the release and partial functions written by hand are refused, even for a superuser
SELECT dx._release_count('\x01000000010000000100000000000030393fe000000000000000000001000000000000000000000000000000000000000700000000000000073ff0000000000000', '{4,1,0.5,1,12345,1,1,1,0,0,0,1,0,0,0,1,7,0.5,0,1,0,0}', 0);
SELECT dx._partial(1.0, 0, '{4,1,0.5,1,12345,1,1,1,0,0,0,1,0,0,0,1,7,0.5,0,1,0,0}') FROM generate_series(1, 3);
-- outside an aggregate the support functions refuse
SELECT dx._partial_transfn(NULL, 1.0, 0, '{4,1,0.5,1,12345,1,1,1,0,0,0,1,0,0,0,1,7,0.5,0,1,0,0}');
-- native partial sums: a weight in grid units, rounded half away from zero as the states add it
SELECT dx._units(2.5, 1) AS up, dx._units(-2.5, 1) AS down, dx._units(0.75, 0.5) AS halves,
       dx._units(1e6, 0.0009765625) AS fine, dx._units(NULL, 1) AS none;
-- beyond bigint, a bad grid
SELECT dx._units(1e19, 1);
SELECT dx._units(1, 0);
SELECT dx._units(1, 'NaN');
-- the coordinator's native states written by hand are refused, even for a superuser
SELECT dx._state_of(7, NULL, '{4,1,0.5,1,12345,1,1,1,0,0,0,1,0,0,0,1,7,0.5,0,1,0,0}', 0);
SELECT dx._collect(0, 7, 7, '{4,1,0.5,1,12345,1,1,1,0,0,0,1,0,0,0,1,7,0.5,0,1,0,0}');
-- and are not pulled into a plain EXPLAIN's analysis either way: nothing runs
EXPLAIN (COSTS OFF) SELECT dx._collect(0, 7, 7, '{4,1,0.5,1,12345,1,1,1,0,0,0,1,0,0,0,1,7,0.5,0,1,0,0}');
-- the grid of the row's group when a release's groups have different grids
SELECT dx._units(0.75, 0, '{0.5,0.25}') AS g0, dx._units(0.75, 1, '{0.5,0.25}') AS g1;
SELECT dx._units(0.75, 2, '{0.5,0.25}');
SELECT dx._units(0.75, 0, '{0,0.25}');
