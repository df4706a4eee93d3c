-- Distributed execution (Citus, issue 13). On a distributed table the analyzer's noisy linear
-- aggregates are split in two (src/pg/planner/distributed.cpp): the exact partial aggregate
-- dx._partial runs on the workers, its states travel to the coordinator as text (dx._linear_partial's
-- I/O wraps the same serialisation the parallel executor uses, validated on input) and are combined
-- there; dx._release_{count,sum,avg} then draw the noise once, on the coordinator, for the statement
-- it charged. Citus ships partial aggregates only for a state type with text I/O (never `internal`).
CREATE TYPE dx._linear_partial;
CREATE FUNCTION dx._linear_partial_in(cstring) RETURNS dx._linear_partial
LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_linear_partial_in';
CREATE FUNCTION dx._linear_partial_out(dx._linear_partial) RETURNS cstring
LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_linear_partial_out';
CREATE TYPE dx._linear_partial (INPUT = dx._linear_partial_in, OUTPUT = dx._linear_partial_out,
	INTERNALLENGTH = VARIABLE, ALIGNMENT = double, STORAGE = plain);
COMMENT ON TYPE dx._linear_partial IS 'internal: exact partial sums of every output group of one noisy aggregate, shipped between Citus nodes';

CREATE FUNCTION dx._partial_transfn(dx._linear_partial, float8, int4, float8[]) RETURNS dx._linear_partial
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_partial_transfn';
CREATE FUNCTION dx._partial_combinefn(dx._linear_partial, dx._linear_partial) RETURNS dx._linear_partial
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_partial_combinefn';
CREATE AGGREGATE dx._partial(float8, int4, float8[]) (
	SFUNC = dx._partial_transfn, STYPE = dx._linear_partial,
	COMBINEFUNC = dx._partial_combinefn, PARALLEL = SAFE);
COMMENT ON AGGREGATE dx._partial(float8, int4, float8[]) IS 'internal: placed by the dxpriv analyzer only (distributed tables)';

-- Volatile and parallel restricted: evaluated once per cell, in the backend that charged.
CREATE FUNCTION dx._release_count(dx._linear_partial, float8[], int4) RETURNS int8
LANGUAGE c VOLATILE PARALLEL RESTRICTED AS 'MODULE_PATHNAME', 'dx_release_count';
CREATE FUNCTION dx._release_sum(dx._linear_partial, float8[], int4) RETURNS float8
LANGUAGE c VOLATILE PARALLEL RESTRICTED AS 'MODULE_PATHNAME', 'dx_release_sum';
CREATE FUNCTION dx._release_avg(dx._linear_partial, float8[], int4) RETURNS float8
LANGUAGE c VOLATILE PARALLEL RESTRICTED AS 'MODULE_PATHNAME', 'dx_release_avg';
COMMENT ON FUNCTION dx._release_count(dx._linear_partial, float8[], int4) IS 'internal: placed by the dxpriv analyzer only';
COMMENT ON FUNCTION dx._release_sum(dx._linear_partial, float8[], int4) IS 'internal: placed by the dxpriv analyzer only';
COMMENT ON FUNCTION dx._release_avg(dx._linear_partial, float8[], int4) IS 'internal: placed by the dxpriv analyzer only';
-- A part of stddev, variance, covar, corr or regr_* (dx._noisy_part's float8[]), read by dx._dispersion.
CREATE FUNCTION dx._release_part(dx._linear_partial, float8[], int4) RETURNS float8[]
LANGUAGE c VOLATILE PARALLEL RESTRICTED AS 'MODULE_PATHNAME', 'dx_release_part';
COMMENT ON FUNCTION dx._release_part(dx._linear_partial, float8[], int4) IS 'internal: placed by the dxpriv analyzer only (a part of stddev, variance, covar, corr, regr_* on a distributed table)';

-- Native partial sums (the default): a row's weight in its cell's grid units is a bigint
-- (dx._units), which Citus sums with PostgreSQL's own sum(bigint) on the workers (exact: numeric
-- result, int128 accumulation) and again on the coordinator, with no per-row record and no
-- parameters in the workers' aggregate. dx._state_of (no GROUP BY) and dx._collect (one row per
-- group of the workers' GROUP BY) turn those exact sums into the state the releases read, on the
-- coordinator, from the analyzer's parameters (what was charged).
CREATE FUNCTION dx._units(float8, float8) RETURNS int8
LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_units';
COMMENT ON FUNCTION dx._units(float8, float8) IS 'internal: a weight in grid units (round half away from zero of weight/grid), as the noisy aggregates sum it';
CREATE FUNCTION dx._units(float8, int4, float8[]) RETURNS int8
LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_units_by_group';
COMMENT ON FUNCTION dx._units(float8, int4, float8[]) IS 'internal: a weight in the grid units of its group (grids[group + 1]), when a release''s groups have different grids';
CREATE FUNCTION dx._weigh_units(bytea, text, float8, VARIADIC "any") RETURNS int8
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_weigh_units';
COMMENT ON FUNCTION dx._weigh_units(bytea, text, float8, "any") IS 'internal: dx._units(dx._weigh(table, layout, ...), grid) in one call (the workers'' native sums)';
CREATE FUNCTION dx._weigh_units_cached(bytea, text, float8, VARIADIC "any") RETURNS int8
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_weigh_units_cached';
COMMENT ON FUNCTION dx._weigh_units_cached(bytea, text, float8, "any") IS 'internal: dx._weigh_units with its table read from dx._point_table_cache by its SHA-256 (distributed releases)';
CREATE FUNCTION dx._state_of(numeric, int8, float8[], int4) RETURNS dx._linear_partial
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_state_of';
COMMENT ON FUNCTION dx._state_of(numeric, int8, float8[], int4) IS 'internal: placed by the dxpriv analyzer only (distributed tables)';
CREATE FUNCTION dx._collect_transfn(dx._linear_partial, int4, numeric, int8, float8[]) RETURNS dx._linear_partial
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_collect_transfn';
CREATE AGGREGATE dx._collect(int4, numeric, int8, float8[]) (
	SFUNC = dx._collect_transfn, STYPE = dx._linear_partial, PARALLEL = RESTRICTED);
COMMENT ON AGGREGATE dx._collect(int4, numeric, int8, float8[]) IS 'internal: placed by the dxpriv analyzer only (distributed tables)';
-- The workers' grouped sums of a GROUP BY as one Citus stage (planner/distributed_stage.h): the
-- statement dxpriv built (its text, deparsed with qualified names) run through the sealed path by
-- the coordinator's own statement, which stays local; refused unless that statement paid the charge
-- of `params` (never callable by hand). Ships the digest tables of its task query first.
CREATE FUNCTION dx._grouped_partials(task text, params float8[], shipments bytea[]) RETURNS SETOF record
LANGUAGE c VOLATILE PARALLEL UNSAFE ROWS 100 AS 'MODULE_PATHNAME', 'dx_grouped_partials';
COMMENT ON FUNCTION dx._grouped_partials(text, float8[], bytea[]) IS 'internal: placed by the dxpriv analyzer only (the grouped sums of a distributed table as one Citus stage)';

-- dx.mode, dx.quantile and dx.median: the workers count rows per candidate with PostgreSQL's own
-- count(*) ... GROUP BY; dx._em_collect adds those counts into the exponential mechanism's state on
-- the coordinator, whose final function (dx._em_finalfn, as dx._em_select's) draws the candidate
-- there, once, for the statement it charged.
CREATE FUNCTION dx._em_collect_transfn(internal, int4, int4, float8[], int8) RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_em_collect_transfn';
CREATE AGGREGATE dx._em_collect(int4, int4, float8[], int8) (
	SFUNC = dx._em_collect_transfn, STYPE = internal,
	FINALFUNC = dx._em_finalfn, FINALFUNC_MODIFY = READ_WRITE, PARALLEL = RESTRICTED);
COMMENT ON AGGREGATE dx._em_collect(int4, int4, float8[], int8) IS 'internal: placed by the dxpriv analyzer only (distributed tables)';

-- Per-point tables that are too large to repeat in every shard's task query travel once per worker
-- instead, content-addressed: the coordinator stores them on each worker under their SHA-256
-- (dx._store_point_table, through run_command_on_workers, once per table and session), and the
-- task queries call dx._weigh_cached/dx._weigh_int_cached with the digest, which read the table
-- from this cache once per call site and check its digest again. A table stored under a digest
-- that is not its own is never accepted, so the cache cannot be poisoned.
CREATE UNLOGGED TABLE dx._point_table_cache (
	digest bytea PRIMARY KEY,
	bytes bytea NOT NULL,
	stored_at timestamptz NOT NULL DEFAULT now());
REVOKE ALL ON dx._point_table_cache FROM PUBLIC;
COMMENT ON TABLE dx._point_table_cache IS 'internal: per-point tables of distributed releases, by SHA-256 (workers)';
-- A coordinator session stores a table again an hour after it last did (which refreshes stored_at and
-- rewrites the bytes, verified), so entries not stored for a day are no longer used by any session
-- and are evicted here.
CREATE FUNCTION dx._store_point_table(digest bytea, bytes bytea) RETURNS boolean
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
	DELETE FROM dx._point_table_cache WHERE stored_at < pg_catalog.now() - interval '1 day' AND digest <> $1;
	INSERT INTO dx._point_table_cache (digest, bytes) SELECT $1, $2 WHERE pg_catalog.sha256($2) = $1
	ON CONFLICT (digest) DO UPDATE SET bytes = EXCLUDED.bytes, stored_at = pg_catalog.now();
	SELECT EXISTS (SELECT 1 FROM dx._point_table_cache WHERE digest = $1);
$$;
COMMENT ON FUNCTION dx._store_point_table(bytea, bytea) IS 'internal: stores a per-point table under its SHA-256 (refused when the digest is not its own), evicts tables not stored for a day';
CREATE FUNCTION dx._weigh_cached(bytea, text, VARIADIC "any") RETURNS float8
LANGUAGE c STABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_weigh_cached';
CREATE FUNCTION dx._weigh_int_cached(bytea, text, VARIADIC "any") RETURNS int4
LANGUAGE c STABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_weigh_int_cached';
COMMENT ON FUNCTION dx._weigh_cached(bytea, text, "any") IS 'internal: dx._weigh with the table read from dx._point_table_cache by its SHA-256';
COMMENT ON FUNCTION dx._weigh_int_cached(bytea, text, "any") IS 'internal: dx._weigh_int with the table read from dx._point_table_cache by its SHA-256';

-- Open GROUP BY keys on distributed tables (src/pg/planner/distributed_open.h): the workers count each
-- candidate partition's contributors (rows, or distinct units) with PostgreSQL's own count, and the
-- coordinator keeps a partition when the private partition selection draws it, once, in the backend
-- that charged the statement (src/pg/executor/partition_keep.cpp). Refuses a statement it was not
-- charged for (a worker, or a call written by hand).
CREATE FUNCTION dx._release_selection(int8, float8[], float8[]) RETURNS boolean
LANGUAGE c VOLATILE PARALLEL RESTRICTED AS 'MODULE_PATHNAME', 'dx_release_selection';
COMMENT ON FUNCTION dx._release_selection(int8, float8[], float8[]) IS 'internal: placed by the dxpriv analyzer only (private partition selection of an open GROUP BY key on a distributed table)';
